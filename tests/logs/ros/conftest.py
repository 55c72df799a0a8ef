"""Fixtures shared by the ROS reader's tests."""

from __future__ import annotations

import pytest

from stridegen.logs import open_log


@pytest.fixture(scope="session")
def scene(tmp_path_factory: pytest.TempPathFactory):
    """One synthetic nuScenes-format scene of 2 s: 4 frames at 2 Hz (0, 0.5, 1.0, 1.5 s), tiny cameras (48 x 27);
    the ego drives. The source a test writes as a recording of its own making."""
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("ros-source") / "log"
    generate_dataset(root, scenes=1, seconds=2.0, seed=3, width=48, height=27, progress=False)
    return open_log(root).scene("scene-0000")
