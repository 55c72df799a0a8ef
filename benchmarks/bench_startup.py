"""Start-up of the command line: CPU seconds (user + system of the whole child process) of a help page.

    .venv/bin/python benchmarks/bench_startup.py               # 10 alternated rounds
    .venv/bin/python benchmarks/bench_startup.py --rounds 20

Each round runs every variant once, in turn (rounds alternated, so a busy machine weighs on all of them alike):

- ``stridegen build --help`` and ``stridegen --help``: the console script (``stridegen.cli:main``), which imports only
  the module of the command it runs;
- ``all commands, build --help``: the same help through ``stridegen.cli.app``, the app with every command imported
  (what the console script did before);
- ``typer floor``: a bare typer app with one command and one option printing its help; typer imports rich and
  pydantic for any help page, so no stridegen command starts faster than this.

Prints min / median / max per variant (seconds), single-threaded children (OMP/MKL/OpenBLAS threads = 1).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
STRIDEGEN = str(Path(PYTHON).with_name("stridegen"))

FLOOR_APP = """
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

VARIANTS: dict[str, list[str]] = {
    "stridegen build --help": [STRIDEGEN, "build", "--help"],
    "stridegen --help": [STRIDEGEN, "--help"],
    "all commands, build --help": [PYTHON, "-c", "from stridegen.cli import app; app(['build', '--help'])"],
    "typer floor, build --help": [PYTHON, "-c", FLOOR_APP, "build", "--help"],
}


def child_cpu_s(argv: list[str]) -> float:
    """User + system CPU seconds of one run of ``argv`` (its output discarded; a failure stops the benchmark)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    for argv in VARIANTS.values():  # warm the file cache and the bytecode
        child_cpu_s(argv)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, argv in VARIANTS.items():
            times[name].append(child_cpu_s(argv))
    print(f"CPU seconds (user + sys) per run, {args.rounds} alternated rounds: min / median / max")
    for name, values in times.items():
        print(f"  {name:30s} {min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}")


if __name__ == "__main__":
    main()
