"""The console script imports only the command it runs (issue 35): `stridegen build --help` loads neither numpy
nor the engine, nor pydantic (a plain command runs as an app of its own, without the root group's options that typer
coerces through pydantic), and the full app (``stridegen.cli.app``) still holds every command, with the same help,
errors and exit codes as each command's own app."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
sys.argv = ["stridegen", *sys.argv[1:]]
from stridegen.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*args: str) -> tuple[str, set[str]]:
    """stdout + stderr of `stridegen ARGS` run in a fresh interpreter, and the modules it had imported."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    *err, modules = done.stderr.strip().splitlines()
    return done.stdout + "\n".join(err), set(json.loads(modules))


def test_build_help_imports_only_the_build_command():
    out, modules = _modules_after("build", "--help")
    assert "Build a sharded dataset" in out
    assert "stridegen.cli.build" in modules
    heavy = ("numpy", "stridegen.run.config", "stridegen.logs", "stridegen.cli.judge", "stridegen.cli.export")
    # pydantic: typer builds a pydantic adapter for the root group's --help flag (None there); the root is skipped
    heavy += ("pydantic", "cv2", "h5py", "scipy", "pandas", "torch", "ray", "yaml")
    for name in heavy:
        assert name not in modules, name


def test_root_help_imports_no_library():
    """`stridegen --help` imports every command module: none imports numpy, pydantic or the engine at module level
    (before issue 35's change, validate, render, anonymize and eval detection/tracking did: 0.7 CPU-s of help)."""
    out, modules = _modules_after("--help")
    assert "anonymize" in out and "validate" in out
    assert {"stridegen.cli.anonymize", "stridegen.cli.validate", "stridegen.cli.render"} <= modules
    for name in ("numpy", "pydantic", "stridegen.run.config", "stridegen.eval.validate.scoring", "stridegen.viz"):
        assert name not in modules, name


def test_anonymize_defaults_are_the_config_sections():
    """`stridegen anonymize` writes out the build config's anonymize defaults (no config import at start-up): they
    must stay the section's."""
    import inspect

    from stridegen.cli.anonymize import SECTION_DEFAULTS, anonymize
    from stridegen.run.config import AnonymizeSection

    section = AnonymizeSection()
    parameters = inspect.signature(anonymize).parameters
    for name, value in SECTION_DEFAULTS.items():
        assert getattr(section, name) == value, name
        assert parameters[name].default.default == value, name


def test_each_command_app_answers_as_the_full_app():
    """Help, a usage error and a command's own error: the same output and exit code through ``command_app`` (what
    the console script runs) as through the root group."""
    from typer.testing import CliRunner

    from stridegen.cli import _COMMANDS, app, command_app

    runner = CliRunner()
    for _, _, name in _COMMANDS:
        single = command_app(name)
        assert single is not None, name
        errors = [["--no-such-option"], ["/no/such/folder"]] if name == "inspect" else []
        for args in [["--help"], *errors]:
            alone = runner.invoke(single, args, prog_name=f"stridegen {name}")
            full = runner.invoke(app, [name, *args], prog_name="stridegen")
            assert (alone.exit_code, alone.output) == (full.exit_code, full.output), (name, args)
    assert command_app("eval") is None and command_app("judge") is None and command_app("nosuch") is None


def test_group_and_root_help():
    out, modules = _modules_after("eval", "lsr", "--help")
    assert "stridegen.cli.eval_lsr" in modules and "stridegen.cli.build" not in modules
    out, modules = _modules_after("--help")
    for name in ("synth", "build", "eval", "judge", "calibrate", "predict"):
        assert name in out
    out, modules = _modules_after("nosuch")  # not a command: the full app answers (click names the mistake)
    assert "No such command" in out and "stridegen.cli.judge" in modules


def test_full_app_has_every_command():
    from stridegen.cli import _COMMANDS, _GROUPS, app, command_names

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert names == command_names() == {n for *_, n in _COMMANDS} | {n for *_, n in _GROUPS} | {"eval"}


FIRST_SCENE_PROBE = """
import json, os, sys
import stridegen.jobs.build as jobs_build
def first_scene(*args, **kwargs):
    sys.stderr.write(json.dumps(sorted(sys.modules)))
    sys.stderr.flush()
    os._exit(0)
jobs_build.BuildTask.run_scene = first_scene
sys.argv = ["stridegen", *sys.argv[1:]]
from stridegen.cli import main
main()
"""


def test_build_imports_only_what_a_build_uses_before_its_first_scene(one_scene_log, tmp_path):
    """`stridegen build LOG --out DIR` with no override and no config file, ended when its first scene starts: no
    YAML parser (it reads only overrides and config files), no generator of the synthetic log, and none of the
    heavy libraries only other commands or backends use (issue 35: the command's fixed cost)."""
    argv = [sys.executable, "-c", FIRST_SCENE_PROBE, "build", str(one_scene_log), "--out", str(tmp_path / "ds")]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert {"stridegen.run.config", "stridegen.logs.nuscenes", "numpy", "pydantic"} <= modules  # it did start
    unused = ("yaml", "stridegen.logs.synthetic.scenario", "stridegen.logs.synthetic.generator", "stridegen.eval")
    unused += ("stridegen.viz", "stridegen.augment", "stridegen.calibration", "scipy", "torch", "matplotlib", "ray")
    unused += ("pandas", "open3d", "sklearn", "h5py", "pycocotools", "simplejpeg")  # the last three: in its stages
    for name in unused:
        assert name not in modules, name


def test_the_default_logs_cache_key_needs_no_generator():
    """The embedded default log is found in its cache from the generator's version alone (logs.synthetic.version):
    the generator's scenario, world and agent modules are imported only to generate a log."""
    code = (
        "import json, sys; from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC, synthetic_cache_dir; "
        "synthetic_cache_dir(DEFAULT_SYNTHETIC); print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(json.loads(done.stdout))
    assert "stridegen.logs.synthetic.version" in modules
    for name in ("scenario", "world", "agents"):
        assert f"stridegen.logs.synthetic.{name}" not in modules, name


def test_detect_format_scans_no_entry_points_for_a_built_in_layout(one_scene_log, monkeypatch):
    """A log of a built-in layout is recognised without listing the plugin readers (an entry-point scan of every
    installed distribution, ~20 ms of each build's start); a folder no built-in knows still asks the plugins."""
    from stridegen.core import registry
    from stridegen.core.errors import LogFormatError
    from stridegen.logs import detect_format

    scans: list[str] = []

    def entry_points(kind: str) -> dict[str, str]:
        scans.append(kind)
        return {}

    monkeypatch.setattr(registry, "_entry_points", entry_points)
    assert detect_format(one_scene_log) == "nuscenes"
    assert scans == []
    with pytest.raises(LogFormatError, match="unknown log format"):
        detect_format(one_scene_log.parent)  # the session folder: no log of any layout
    assert scans == ["log_reader"]
