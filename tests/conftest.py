"""Fixtures and markers shared by every test folder.

- ``@pytest.mark.devkit``: the test needs nuscenes-devkit (the reference of the parity tests); it is skipped, and
  only it, where the devkit is not installed. Modules import the devkit in a ``try`` block, so that their other
  tests still run. ``@pytest.mark.openai`` likewise for the openai SDK (extra ``judges``) of the judge client.
- ``shared_data`` / ``nuscenes_demo`` / ``av2_logs``: the folders of the team's shared real-data fixtures
  (tests/shared_data.py); a test asking for one is skipped, saying which folder is missing, where it is absent.
- ``$STRIDEGEN_CACHE`` points at a folder of this test session (created here, removed at exit), so that the log
  indexes of read-only copies (stridegen/logs/index.py) never land in the user's ~/.cache.
- ``two_scene_log`` / ``one_scene_log`` / ``two_scene_dataset``: the small synthetic logs that several modules read,
  generated once per test session (per xdist worker) instead of once per module, and the two-scene log built. No
  test writes into them: one that damages or extends a log copies it first (``shutil.copytree``).
- ``dataset``: ``two_scene_dataset`` under the name the run, export and data tests use (a module may define its
  own ``dataset``, which takes precedence there).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.shared_data import AV2_LOGS, NUSCENES_DEMO, SHARED_DATA, missing_reason

# marker -> (the optional module it needs, the skip reason where that module is not installed)
OPTIONAL_DEPENDENCIES = {
    "devkit": (
        "nuscenes",
        "nuscenes-devkit not installed (pip install 'stridegen[devkit]', then "
        "pip install --no-deps nuscenes-devkit==1.2.0; see Makefile)",
    ),
    "openai": ("openai", "openai SDK not installed (pip install 'stridegen[judges]')"),
}
if "STRIDEGEN_CACHE" not in os.environ:  # inherited by xdist workers and the subprocesses tests start
    _cache = tempfile.mkdtemp(prefix="stridegen-test-cache-")
    os.environ["STRIDEGEN_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, True)
MISSING = {
    marker: reason
    for marker, (module, reason) in OPTIONAL_DEPENDENCIES.items()
    if importlib.util.find_spec(module) is None
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, reason in MISSING.items():
        if item.get_closest_marker(marker) is not None:
            pytest.skip(reason)


def _existing(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(missing_reason(path))
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$STRIDEGEN_SHARED_DATA``); skips the test where it is absent."""
    return _existing(SHARED_DATA)


@pytest.fixture(scope="session")
def nuscenes_demo() -> Path:
    """The nuScenes ``v1.0-demo`` log of the shared data; skips the test where it is absent."""
    return _existing(NUSCENES_DEMO)


@pytest.fixture(scope="session")
def av2_logs() -> Path:
    """The folder of Argoverse 2 logs of the shared data; skips the test where it is absent."""
    return _existing(AV2_LOGS)


# The synthetic logs shared by several modules (stridegen.logs.synthetic.generate_dataset arguments).
TWO_SCENES = {"scenes": 2, "seconds": 8.0, "seed": 5, "width": 320, "height": 180}
ONE_SCENE = {"scenes": 1, "seconds": 8.0, "seed": 5, "width": 320, "height": 180}
# The small build of the two-scene log: projected-box masks (no LiDAR read), keyframes at 2, 3 and 4 s.
SMALL_BUILD = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"]


def _synthetic_log(tmp_path_factory: pytest.TempPathFactory, name: str, arguments: dict[str, Any]) -> Path:
    """A synthetic nuScenes-format log generated into ``<a new session folder named name>/log``."""
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp(name) / "log"
    generate_dataset(root, progress=False, overwrite=True, **arguments)
    return root


@pytest.fixture(scope="session")
def two_scene_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic scenes of 8 s (seed 5, 320 x 180 cameras), 16 frames each; never written into."""
    return _synthetic_log(tmp_path_factory, "two-scene", TWO_SCENES)


@pytest.fixture(scope="session")
def one_scene_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One synthetic scene of 8 s (seed 5, 320 x 180 cameras), 16 frames; never written into."""
    return _synthetic_log(tmp_path_factory, "one-scene", ONE_SCENE)


@pytest.fixture(scope="session")
def two_scene_dataset(two_scene_log: Path) -> Path:
    """``two_scene_log`` built with ``SMALL_BUILD``, into the folder beside the log (``two_scene_log.parent / "ds"``);
    never written into."""
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config

    out = two_scene_log.parent / "ds"
    result = run_build(two_scene_log, out, load_build_config(None, SMALL_BUILD))
    assert result.ok and result.qa > 0, [r.reason for r in result.failed]
    return out


@pytest.fixture(scope="session")
def dataset(two_scene_dataset: Path) -> Path:
    """The session's two-scene dataset, its log at ``dataset.parent / "log"``."""
    return two_scene_dataset
