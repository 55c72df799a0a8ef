"""stridegen export --format hf: Parquet shards that ``datasets.load_dataset("parquet", data_dir=...)`` loads with
the Image feature, holding every QA row once, the llava export's JPEG bytes, a card whose features match the
shards, and the same bytes on every run."""

from __future__ import annotations

import fnmatch
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.core.errors import ConfigError, MissingExtraError
from stridegen.formats.images import decode_image
from stridegen.jobs.export import run_export
from stridegen.shards.export.base import make_exporter
from stridegen.shards.export.manifest import EXPORT_MANIFEST
from stridegen.shards.reader import open_dataset
from tests.shards.export.trainer_loaders import llava_paths

pytestmark = pytest.mark.slow  # the tests export the session's built dataset

datasets = pytest.importorskip("datasets", reason="the hf round trip needs `datasets` (pip install 'stridegen[hf]')")
pq = pytest.importorskip("pyarrow.parquet", reason="the hf exporter needs pyarrow (pip install 'stridegen[hf]')")


def _export(dataset: Path, out: Path, format_name: str, options: dict | None = None) -> Path:
    result = run_export(dataset, out, format_name, options)
    assert result.ok, [r.reason for r in result.failed]
    return out


@pytest.fixture(scope="module")
def hf(dataset, tmp_path_factory) -> Path:
    return _export(dataset, tmp_path_factory.mktemp("hf") / "out", "hf")


@pytest.fixture(scope="module")
def llava(dataset, tmp_path_factory) -> Path:
    return _export(dataset, tmp_path_factory.mktemp("llava") / "out", "llava")


def _load(out: Path, cache: Path, **kwargs):
    return datasets.load_dataset("parquet", data_dir=str(out), cache_dir=str(cache), **kwargs)


def _shards(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "data").iterdir())


def _front_matter(card: Path) -> dict:
    import yaml

    text = card.read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_every_qa_row_comes_back_once(dataset, hf, llava, tmp_path):
    ds = _load(hf, tmp_path / "cache", split="train")
    assert isinstance(ds.features["images"], datasets.List)
    assert isinstance(ds.features["images"].feature, datasets.Image)
    refs = json.loads((llava / "llava.json").read_text())
    assert len(ds) == len(refs) > 0
    turns: dict[str, tuple[str, str, dict]] = {}
    for row, ref in zip(ds, refs, strict=True):
        # the llava sample, field for field, in the same order; only the image paths became Image values
        assert (row["id"], row["kind"], row["conversations"], row["meta"]) == (
            ref["id"],
            ref["kind"],
            ref["conversations"],
            ref["meta"],
        )
        assert len(row["images"]) == (1 if row["kind"] == "spatial" else 4)
        for n, info in enumerate(row["qa_info"]):
            assert json.loads(info["gt_extra"]) == ref["qa_info"][n]["gt_extra"]
            assert {**info, "gt_extra": ref["qa_info"][n]["gt_extra"]} == ref["qa_info"][n]
            question = row["conversations"][2 * n]["value"].replace("<image>\n", "")
            assert info["question_id"] not in turns
            turns[info["question_id"]] = (question, row["conversations"][2 * n + 1]["value"], info)
    with open_dataset(dataset) as source:
        for name in source.scenes:
            qa = source.scene(name).qa
            for q in range(len(qa)):
                question, answer, info = turns.pop(str(qa.question_id[q]))
                assert (question, answer) == (qa.question[q], qa.answer[q])
                assert (info["category"], info["predicate"], info["unit"], info["gt_label"]) == (
                    qa.category[q],
                    qa.predicate[q],
                    qa.unit[q],
                    qa.gt_label[q],
                )
                value = float(qa.gt_value[q])
                assert info["gt_value"] == (None if math.isnan(value) else value)
                assert json.loads(info["gt_extra"]) == json.loads(str(qa.gt_extra[q]) or "{}")
                assert info["region_ids"] == [int(r) for r in qa.region_ids[q] if r >= 0]
    assert not turns  # nothing extra


def test_images_are_the_llava_jpegs(hf, llava, tmp_path):
    ds = _load(hf, tmp_path / "cache", split="train")
    refs = json.loads((llava / "llava.json").read_text())
    raw = ds.cast_column("images", datasets.List(datasets.Image(decode=False)))
    checked = 0
    for row, ref in zip(raw, refs, strict=True):
        paths = llava_paths(ref)
        assert [im["path"] for im in row["images"]] == paths
        for im, path in zip(row["images"], paths, strict=True):
            assert im["bytes"] == (llava / path).read_bytes()
            checked += 1
    assert checked == sum(len(r["images"]) for r in raw) > 0
    # and datasets decodes them to the pixels of the llava files (one row of each kind)
    for kind in ("spatial", "spatiotemporal"):
        n = next(i for i, r in enumerate(refs) if r["kind"] == kind)
        paths = llava_paths(refs[n])
        for image, path in zip(ds[n]["images"], paths, strict=True):
            expected = decode_image((llava / path).read_bytes(), path)
            assert np.array_equal(np.asarray(image.convert("RGB")), expected)


def test_card_matches_the_shards(hf):
    from huggingface_hub import DatasetCard

    front = _front_matter(hf / "README.md")
    assert front["license"] == "other"
    assert "visual-question-answering" in front["task_categories"]
    [config] = front["configs"]
    [files] = config["data_files"]
    assert files["split"] == "train"
    shards = [f"data/{name}" for name in _shards(hf)]
    assert shards == ["data/train-00000-of-00001.parquet"]
    assert all(fnmatch.fnmatch(s, files["path"]) for s in shards)
    infos = datasets.info.DatasetInfosDict.from_dataset_card_data(DatasetCard.load(hf / "README.md").data)
    features = infos["default"].features
    schema = pq.read_schema(hf / shards[0])
    assert features == datasets.Features.from_arrow_schema(schema)  # the shards' huggingface metadata
    assert features.arrow_schema.remove_metadata().equals(schema.remove_metadata())
    rows = pq.read_metadata(hf / shards[0]).num_rows
    assert infos["default"].splits["train"].num_examples == rows
    assert front["dataset_info"]["download_size"] == (hf / shards[0]).stat().st_size
    text = (hf / "README.md").read_text()
    source = json.loads((hf / EXPORT_MANIFEST).read_text())["source"]
    assert f"source dataset config hash: `{source['config_hash']}`" in text
    for column in ("id", "kind", "images", "conversations", "qa_info", "meta"):
        assert f"| `{column}` |" in text
    assert 'load_dataset("parquet", data_dir=' in text
    # the citation block: one BibTeX entry of the STRIDE-QA paper, braces balanced
    bibtex = text.split("## Citation")[1].split("```bibtex\n")[1].split("\n```")[0]
    assert bibtex.startswith("@misc{") and bibtex.count("{") == bibtex.count("}")
    assert "eprint = {2508.10427}" in bibtex and "STRIDE-QA" in bibtex


def test_two_exports_are_byte_identical(dataset, hf, tmp_path):
    again = _export(dataset, tmp_path / "again", "hf")
    names = _shards(hf)
    assert _shards(again) == names
    for name in names:
        assert (again / "data" / name).read_bytes() == (hf / "data" / name).read_bytes()
    assert (again / "README.md").read_bytes() == (hf / "README.md").read_bytes()
    files = [json.loads((out / EXPORT_MANIFEST).read_text())["files"] for out in (hf, again)]
    assert files[0] == files[1] and {f["file"] for f in files[0]} == {"README.md", *(f"data/{n}" for n in names)}


def test_cli_writes_several_shards_and_overwrite_drops_stale_ones(dataset, hf, tmp_path):
    out = tmp_path / "cli"
    res = CliRunner().invoke(
        app, ["export", str(dataset), "--format", "hf", "--out", str(out), "-O", "rows_per_shard=7"]
    )
    assert res.exit_code == 0, res.output
    total = pq.read_metadata(hf / "data" / "train-00000-of-00001.parquet").num_rows
    n_shards = -(-total // 7)
    assert n_shards > 1
    names = _shards(out)
    assert names == [f"train-{i:05d}-of-{n_shards:05d}.parquet" for i in range(n_shards)]
    counts = [pq.read_metadata(out / "data" / n).num_rows for n in names]
    assert counts[:-1] == [7] * (n_shards - 1) and 0 < counts[-1] <= 7
    ids = _load(out, tmp_path / "cache", split="train")["id"]
    assert ids == _load(hf, tmp_path / "cache", split="train")["id"]  # same rows, same order
    # another split and shard size into the same folder: the old shards go, the new split is all there is
    assert run_export(dataset, out, "hf", {"split": "validation"}, overwrite=True).ok
    assert _shards(out) == ["validation-00000-of-00001.parquet"]
    loaded = _load(out, tmp_path / "cache2")
    assert list(loaded) == ["validation"] and loaded["validation"]["id"] == ids


def test_options_are_checked(monkeypatch):
    with pytest.raises(ConfigError, match="split"):
        make_exporter("hf", {"split": "train-1"})
    with pytest.raises(ConfigError, match="rows_per_shard"):
        make_exporter("hf", {"rows_per_shard": 0})
    with pytest.raises(ConfigError, match="unknown option"):
        make_exporter("hf", {"shards": 3})
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if pyarrow were not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingExtraError, match=r"stridegen\[hf\]"):
        make_exporter("hf")


def test_row_groups_split_a_shard_without_changing_the_rows(dataset, hf, tmp_path, monkeypatch):
    from stridegen.shards.export import hf as hf_module

    monkeypatch.setattr(hf_module, "ROW_GROUP_ROWS", 5)
    small = _export(dataset, tmp_path / "small-groups", "hf")
    name = "data/train-00000-of-00001.parquet"
    rows = pq.read_metadata(hf / name).num_rows
    assert pq.read_metadata(hf / name).num_row_groups == 1
    assert pq.read_metadata(small / name).num_row_groups == -(-rows // 5) > 1
    assert pq.read_table(small / name).equals(pq.read_table(hf / name))
