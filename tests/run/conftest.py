"""Shared fixtures of the run-layer tests: a small built dataset (synthetic log, projected-box masks)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def dataset(two_scene_dataset: Path) -> Path:
    """The session's two-scene dataset (tests/conftest.py), its log at ``dataset.parent / "log"``."""
    return two_scene_dataset
