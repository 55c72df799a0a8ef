"""The notebooks in notebooks/ execute top to bottom (code cells run in one namespace, no Jupyter needed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    nb = json.loads(path.read_text())
    namespace: dict = {"__name__": "__main__"}
    ran = 0
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if "torch" in source and importlib.util.find_spec("torch") is None:
            pytest.skip(
                f"{path.name}[cell {i}] needs PyTorch (pip install 'stridegen[torch]'); the cells before it ran"
            )
        exec(compile(source, f"{path.name}[cell {i}]", "exec"), namespace)
        ran += 1
    assert ran > 0
    if "image" in namespace:  # notebooks that end on a picture must produce one
        assert namespace["image"].ndim == 3 and namespace["image"].dtype.name == "uint8"


def test_there_is_a_notebook():
    assert NOTEBOOKS
