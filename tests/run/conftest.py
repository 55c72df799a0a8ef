"""Shared fixtures of the run-layer tests: a small built dataset (synthetic log, projected-box masks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stridegen.run.build import run_build
from stridegen.run.config import load_build_config

SYNTH = {"scenes": 2, "seconds": 8.0, "seed": 5, "width": 320, "height": 180}


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> Path:
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("export-source")
    generate_dataset(root / "log", progress=False, overwrite=True, **SYNTH)
    cfg = load_build_config(None, ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"])
    result = run_build(root / "log", root / "ds", cfg)
    assert result.ok, [r.reason for r in result.failed]
    return root / "ds"
