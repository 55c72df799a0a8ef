"""Start-up of the command line: CPU seconds (user + system of the whole child process) of help pages, and the fixed
cost of `stridegen build` (everything before its first scene; a resumed build that has nothing left to build).

    .venv/bin/python benchmarks/bench_startup.py                          # 10 alternated rounds, bytecode cache
    .venv/bin/python benchmarks/bench_startup.py --rounds 20 --no-bytecode
    .venv/bin/python benchmarks/bench_startup.py --base /tmp/base-tree    # also another checkout, alternated

Each round runs every variant once, in turn (rounds alternated, so a busy machine weighs on all of them alike):

- floors: ``python -c pass`` (the interpreter and ``site``), ``import typer``, and two bare typer apps printing a
  command's help: ``one command`` (typer runs a one-command app as that command: typer, its Rich help, the
  rendering; no help page of a typer command costs less) and ``with a root group`` (an app with a callback, as
  ``stridegen`` is: typer coerces the root group's ``--help`` flag, None there, through a pydantic adapter); and
  ``a build's third-party imports`` (numpy, OpenCV, pydantic, typer, Rich: what a build has imported besides
  stridegen and the standard library when its first scene starts);
- ``stridegen build --help`` and ``stridegen --help``: the console script (``stridegen.cli:main``), which imports only
  the module of the command it runs and runs a plain command as an app of its own (``stridegen.cli.command_app``);
- ``all commands, build --help``: the same help through ``stridegen.cli.app``, the app with every command;
- ``build, to its first scene``: ``stridegen build --out NEW`` of the embedded default log, ended (``os._exit``) when
  the first scene starts: interpreter, imports, config, log reader, the whole-log check, progress display;
- ``build, resumed``: ``stridegen build --out DONE`` of a folder that holds the finished default build: the whole
  command (start-up, check, resume, manifest, report, summary table) with no scene to build.

The children run with Python's bytecode cache, as an installed package does: ``PYTHONDONTWRITEBYTECODE`` is removed
and ``PYTHONPYCACHEPREFIX`` points at a private folder that a warm-up run of every variant fills. ``--no-bytecode``
runs them with no cache at all: ``PYTHONDONTWRITEBYTECODE=1`` and ``PYTHONPYCACHEPREFIX`` at an empty folder, so
every start compiles every module it imports from source, the standard library's and site-packages' too (this
project's sandbox sets ``PYTHONDONTWRITEBYTECODE=1`` alone, which stops writing ``.pyc`` files, not reading those
that exist: a checkout whose ``__pycache__`` was never written compiles stridegen's modules at every start, one
where it was does not). ``--base TREE`` adds the stridegen variants of another checkout (``PYTHONPATH=TREE``, e.g.
a ``git worktree`` of an older commit), alternated with this one's. Prints the exact command, then min / median / max
per variant (seconds), single-threaded children (OMP/MKL/OpenBLAS threads = 1, OpenCV's pool at 1 thread).
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PYTHON = sys.executable
STRIDEGEN = str(Path(PYTHON).with_name("stridegen"))
from single_thread import THREAD_ENV  # noqa: E402  (benchmarks/ is the script's folder)

FLOOR_ONE_COMMAND = """
import typer
app = typer.Typer(add_completion=False)
@app.command()
def build(workers: int = typer.Option(1, help="Worker processes.")) -> None:
    '''Build.'''
app()
"""

FLOOR_ROOT_GROUP = """
import typer
app = typer.Typer(add_completion=False)
@app.callback()
def root() -> None:
    pass
@app.command()
def build(workers: int = typer.Option(1, help="Worker processes.")) -> None:
    '''Build.'''
app()
"""

# The third-party packages a build of the default log has imported when its first scene starts (stdlib left out;
# h5py, pycocotools and simplejpeg come with the first scene's stages, PyYAML only with an override or a config file;
# tests/cli/test_startup.py checks the set).
BUILD_IMPORTS = "import numpy, cv2, pydantic, typer, rich.progress, rich.table"

# The console script's main, ended when the build's first scene starts (workers=1 runs scenes in this process).
FIRST_SCENE = """
import os, sys
import stridegen.jobs.build as jobs_build
def first_scene(*args, **kwargs):
    sys.stdout.flush()
    os._exit(0)
jobs_build.BuildTask.run_scene = first_scene
sys.argv = ["stridegen", *sys.argv[1:]]
from stridegen.cli import main
main()
"""


def child_cpu_s(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """User + system CPU seconds of one run of ``argv`` in ``cwd`` (its output discarded; a failure stops the
    benchmark). ``cwd`` is not the repository: ``python -c`` puts the working folder first on ``sys.path``, where
    it would shadow the checkout that ``PYTHONPATH`` names."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, env=env, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def variants(tmp: Path, label: str) -> dict[str, list[str]]:
    """The stridegen variants (``label`` names the checkout); each build writes into its own folder under ``tmp``."""
    new = tmp / f"{label}-new"
    full_app = "from stridegen.cli import app; app(['build', '--help'])"
    return {
        f"{label} stridegen build --help": [STRIDEGEN, "build", "--help"],
        f"{label} stridegen --help": [STRIDEGEN, "--help"],
        f"{label} all commands, build --help": [PYTHON, "-c", full_app],
        f"{label} build, to its first scene": [PYTHON, "-c", FIRST_SCENE, "build", "--out", str(new), "--overwrite"],
        f"{label} build, resumed": [STRIDEGEN, "build", "--out", str(tmp / f"{label}-done")],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--no-bytecode", action="store_true", help="children compile every module at every start")
    parser.add_argument("--base", type=Path, help="another stridegen checkout to alternate with (PYTHONPATH)")
    args = parser.parse_args()
    print("command:", shlex.join([Path(PYTHON).name, *sys.argv]))
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp_name:
        tmp = Path(tmp_name)
        env = {**os.environ, **THREAD_ENV}
        if args.no_bytecode:  # an empty cache folder that nothing writes: every module compiled at every start
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "no-pycache")
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        env.pop("PYTHONPATH", None)
        runs: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor: python -c pass": ([PYTHON, "-c", "pass"], env),
            "floor: import typer": ([PYTHON, "-c", "import typer"], env),
            "floor: typer, one command, --help": ([PYTHON, "-c", FLOOR_ONE_COMMAND, "--help"], env),
            "floor: typer, with a root group, build --help": ([PYTHON, "-c", FLOOR_ROOT_GROUP, "build", "--help"], env),
            "floor: a build's third-party imports": ([PYTHON, "-c", BUILD_IMPORTS], env),
        }
        checkouts = [("this", env)]
        if args.base is not None:
            checkouts.append(("base", {**env, "PYTHONPATH": str(args.base.resolve())}))
        for label, checkout_env in checkouts:
            where = subprocess.run(
                [PYTHON, "-c", "import stridegen; print(stridegen.__file__)"],
                cwd=tmp,
                env=checkout_env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            print(f"{label}: {Path(where).parent.parent}")
            # the finished build that "resumed" finds (not timed)
            child_cpu_s([STRIDEGEN, "build", "--out", str(tmp / f"{label}-done")], checkout_env, tmp)
            runs.update({name: (argv, checkout_env) for name, argv in variants(tmp, label).items()})
        for argv, run_env in runs.values():  # warm-up: the bytecode cache, the file cache
            child_cpu_s(argv, run_env, tmp)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, (argv, run_env) in runs.items():
                times[name].append(child_cpu_s(argv, run_env, tmp))
    cache = "without the bytecode cache" if args.no_bytecode else "with the bytecode cache"
    print(f"CPU seconds (user + sys) per run, {cache}, {args.rounds} alternated rounds: min / median / max")
    for name, values in times.items():
        print(f"  {name:48s} {min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}")


if __name__ == "__main__":
    main()
