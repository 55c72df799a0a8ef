"""Fixtures shared by the log reader tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def synthetic_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3-scene synthetic log with LiDAR sweeps (tables only matter here: tiny images)."""
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("synthetic") / "log"
    generate_dataset(root, scenes=3, seconds=4.0, seed=3, width=32, height=18, sweeps=True, progress=False)
    return root
