"""Where the real-data fixtures shared by the team live, and skip markers for the tests that read them.

The data sits next to the repository, in ``../shared/data`` (nuScenes ``v1.0-demo`` and a few Argoverse 2 logs);
``STRIDEGEN_SHARED_DATA`` points elsewhere (set it to a missing folder to see which tests need the data). A test
that reads it carries one of the markers below or asks for the ``shared_data`` / ``nuscenes_demo`` / ``av2_logs``
fixture of tests/conftest.py, so that it skips, saying what is missing, where the data is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("STRIDEGEN_SHARED_DATA") or REPO.parent / "shared" / "data")
NUSCENES_DEMO = SHARED_DATA / "nuscenes-demo"
AV2_LOGS = SHARED_DATA / "av2" / "logs"


def missing_reason(path: Path) -> str:
    """The skip reason for a test that needs the folder ``path`` of the shared data."""
    return f"{path} not present (shared real-data fixtures: ../shared/data, or $STRIDEGEN_SHARED_DATA)"


def needs(path: Path) -> pytest.MarkDecorator:
    """A skip marker for tests (or, as ``pytestmark``, modules) that read the folder ``path``."""
    return pytest.mark.skipif(not path.is_dir(), reason=missing_reason(path))


needs_shared_data = needs(SHARED_DATA)
needs_nuscenes_demo = needs(NUSCENES_DEMO)
needs_av2 = needs(AV2_LOGS)
