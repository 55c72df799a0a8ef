"""Terminal tables on an 80-column terminal keep their label column and every number whole
(stridegen.cli.terminal_tables; `inspect`, the build summary and `eval detection` use it)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.cli.build import summary_table
from stridegen.cli.terminal_tables import _CLOSING, _PER_COLUMN, column_groups, fitted_tables

WIDTH = 80


def _table_width(label: int, widths: list[int]) -> int:
    return label + _PER_COLUMN + _CLOSING + sum(w + _PER_COLUMN for w in widths)


def _best_split(label: int, widths: list[int], k: int) -> int:
    """Oracle: the smallest possible widest table over every split of the columns into k consecutive groups."""
    best = 10**9
    for cuts in itertools.combinations(range(1, len(widths)), k - 1):
        bounds = [0, *cuts, len(widths)]
        widest = max(_table_width(label, widths[a:b]) for a, b in itertools.pairwise(bounds))
        best = min(best, widest)
    return best


@pytest.mark.parametrize(
    ("label", "widths"),
    [
        (10, [6, 2, 4, 6, 6, 3, 5, 3, 4, 4]),  # inspect's scene table
        (20, [7, 5, 5, 5, 5, 5, 5, 5, 5, 5]),  # eval detection's class table
        (36, [5] * 12),  # an AV2 log id as the label
        (14, [7, 3, 13, 10, 10, 7, 5]),  # QA per category and class
    ],
)
def test_column_groups_are_as_few_and_as_narrow_as_possible(label, widths):
    groups = column_groups(label, widths, WIDTH)
    assert [i for g in groups for i in g] == list(range(len(widths)))  # every column once, in order
    assert all(_table_width(label, [widths[i] for i in g]) <= WIDTH for g in groups)
    fewest = next(k for k in range(1, len(widths) + 1) if _best_split(label, widths, k) <= WIDTH)
    assert len(groups) == fewest
    assert max(_table_width(label, [widths[i] for i in g]) for g in groups) == _best_split(label, widths, fewest)


def test_a_table_that_fits_is_not_split():
    assert column_groups(10, [5, 5, 5], WIDTH) == [[0, 1, 2]]


def _render(renderables, width: int = WIDTH) -> str:
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    for r in renderables:
        console.print(r)
    return console.export_text()


def test_fitted_tables_print_every_label_and_value_whole_on_80_columns():
    labels = [f"0a8a4cfa-4902-3a76-8301-08698d6290a{i}" for i in range(3)]  # 37 characters
    headers = [f"col{i}" for i in range(12)]
    rows = [(name, [f"{1000 * r + i}" for i in range(12)]) for r, name in enumerate(labels)]
    text = _render(fitted_tables("wide", "log", headers, rows, width=WIDTH, caption="a caption"))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    n_tables = sum(1 for line in lines if line.startswith("┏"))
    assert n_tables >= 2
    for name in labels:
        assert text.count(name) == n_tables  # the label column leads every table, never cut
    for _, cells in rows:
        for cell in cells:
            assert re.search(rf"│ +{cell} │", text), cell
    assert "…" not in text and lines[-1].strip() == "a caption"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from stridegen.jobs.build import run_build
    from stridegen.logs.synthetic.generator import generate_dataset
    from stridegen.run.config import load_build_config

    root = tmp_path_factory.mktemp("tables")
    generate_dataset(root / "log", progress=False, overwrite=True, scenes=1, seconds=6.0, seed=2, width=320, height=180)
    cfg = load_build_config(None, ["segmenter.name=projected_box"])
    result = run_build(root / "log", root / "ds", cfg)
    assert result.ok and result.qa > 0
    return root / "log", root / "ds", result


def test_build_summary_keeps_the_scene_column_on_80_columns(built):
    _, _, result = built
    text = _render([summary_table(result)])
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    name = result.results[0].scene
    assert re.search(rf"│ {name} +│ built", text)
    assert re.search(rf"│ +{result.qa} │", text)  # the scene's QA count, whole
    assert "…" not in text


def test_inspect_keeps_the_scene_and_category_columns_on_80_columns(built, monkeypatch):
    _, dataset, result = built
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    out = CliRunner().invoke(app, ["inspect", str(dataset)])
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert max(len(line) for line in text.splitlines()) <= WIDTH, text
    name = result.results[0].scene
    assert len(re.findall(rf"│ {name} +│", text)) >= 2  # the scene table (split in two) and tracks per class
    for category in ("ego_spatial", "object_spatial", "spatiotemporal"):
        assert re.search(rf"│ {category} +│", text), category
    assert "…" not in text


def test_eval_detection_class_table_fits_80_columns(built, tmp_path: Path, monkeypatch):
    log, _, _ = built
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    det = CliRunner().invoke(app, ["detect", str(log), "--detector", "simulated", "--out", str(tmp_path / "d.json")])
    assert det.exit_code == 0, det.output
    ev = CliRunner().invoke(app, ["eval", "detection", "--gt", str(log), "--pred", str(tmp_path / "d.json")])
    assert ev.exit_code == 0, ev.output
    tables = ev.stdout.split("Summary")[0]
    assert max(len(line) for line in tables.splitlines()) <= WIDTH, tables
    assert len(re.findall(r"│ construction_vehicle │", tables)) == 2  # both halves lead with the class
    for header in ("AP@0.5m", "AP@4m", "ATE", "AAE"):
        assert header in tables
