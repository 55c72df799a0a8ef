"""The suite's `xdist_group` marks take effect under the installed pytest and pytest-xdist: `make test` runs
`pytest -n 2 --dist loadgroup`, and a group (the Ray tests, the 45 s odometry fixture of test_poses_synthetic) must
run on one worker. pytest 9.2 silently broke this (xdist 3.8 renames item._nodeid, which 9.2 no longer reads),
hence the pin in pyproject's `dev` extra; this test fails if a version bump breaks it again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist", reason="needs pytest-xdist (the dev extra)")

GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("together")


def test_first():
    pass


def test_second():
    pass


def test_third():
    pass
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path / "test_grouped.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    placed = {test: worker for worker, test in re.findall(r"\[(gw\d+)\].*PASSED .*::(test_\w+)", run.stdout)}
    assert len(placed) == 3, run.stdout
    assert len(set(placed.values())) == 1, f"the group was split across workers: {placed}"
