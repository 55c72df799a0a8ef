"""Scene-level splits (export options ``splits`` / ``split_seed``): every exporter writes each split from its own
scenes only, the draw is the sha256 rule of docs/export.md re-derived here, and it does not depend on the workers."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from stridegen.core import registry
from stridegen.core.errors import ConfigError
from stridegen.jobs.export import run_export
from stridegen.shards.export.manifest import EXPORT_MANIFEST
from stridegen.shards.export.splits import parse_splits
from stridegen.shards.reader import open_dataset
from tests.shards.export.trainer_loaders import load_llamafactory, load_llava


def _expected_split(seed: int, scene: str, ratios: list[tuple[str, float]]) -> str:
    """The documented draw: u = first 8 bytes of sha256(json [seed, scene]) / 2**64, the first cumulative ratio > u."""
    u = int(hashlib.sha256(json.dumps([seed, scene]).encode()).hexdigest()[:16], 16) / 2**64
    total = 0.0
    for name, ratio in ratios:
        total += ratio
        if u < total:
            return name
    return ratios[-1][0]


def _scenes(dataset: Path) -> list[str]:
    with open_dataset(dataset) as source:
        return list(source.scenes)


def _two_way_seed(scenes: list[str]) -> int:
    """A seed that puts the two scenes in different splits of train=0.5,val=0.5."""
    ratios = [("train", 0.5), ("val", 0.5)]
    return next(s for s in range(100) if len({_expected_split(s, name, ratios) for name in scenes}) == 2)


def test_parse_splits_forms_and_errors():
    assert parse_splits(None) is None
    text = parse_splits("train=0.8, val=0.1,test=0.1", 3)
    assert text is not None and text.ratios == (("train", 0.8), ("val", 0.1), ("test", 0.1)) and text.seed == 3
    assert parse_splits({"train": 0.8, "val": 0.1, "test": 0.1}, 3) == text
    for bad, match in (
        ("train=0.8,val=0.1", "sum to 0.9"),
        ("train=1.2,val=-0.2", "positive"),
        ("train=0.5,train=0.5", "twice"),
        ("train", "bad item"),
        ("a-b=1", "split name"),
        ("train=x", "not a number"),
        (7, "expected name=ratio"),
    ):
        with pytest.raises(ConfigError, match=match):
            parse_splits(bad)
    with pytest.raises(ConfigError, match="split_seed"):
        parse_splits("train=1", "0")


def test_the_draw_follows_the_documented_rule():
    splits = parse_splits("train=0.7,val=0.2,test=0.1", 11)
    assert splits is not None
    names = [f"scene-{n:04d}" for n in range(300)]
    ratios = [("train", 0.7), ("val", 0.2), ("test", 0.1)]
    assert [splits.of(n) for n in names] == [_expected_split(11, n, ratios) for n in names]
    by_split = splits.assign(names)
    assert 150 < len(by_split["train"]) < 270 and by_split["test"]  # roughly the ratios
    assert splits.assign(names[::-1])["val"] == by_split["val"][::-1]  # a scene's split ignores the others


def test_split_options_fail_before_any_work(dataset, tmp_path):
    for options, match in (
        ({"split_seed": 1}, "without splits"),
        ({"splits": "train=0.5,val=0.6"}, "sum to"),
        ({"splits": "train=1", "split": "val"}, "both given"),
    ):
        with pytest.raises(ConfigError, match=match):
            run_export(dataset, tmp_path / "x", "strideqa", options)
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
@pytest.mark.parametrize("format_name", sorted(registry.BUILTIN["exporter"]))
def test_every_exporter_writes_each_split_from_its_own_scenes(dataset, tmp_path, format_name):
    if format_name == "hf":
        pytest.importorskip("pyarrow")
    scenes = _scenes(dataset)
    seed = _two_way_seed(scenes)
    options = {"splits": "train=0.5,val=0.5", "split_seed": seed}
    out = tmp_path / "out"
    result = run_export(dataset, out, format_name, options)
    assert result.ok
    summary = json.loads((out / "splits.json").read_text())
    expected = {
        name: [s for s in scenes if _expected_split(seed, s, [("train", 0.5), ("val", 0.5)]) == name]
        for name in ("train", "val")
    }
    assert summary == {"splits": {"train": 0.5, "val": 0.5}, "split_seed": seed, "scenes": expected}
    manifest = json.loads((out / EXPORT_MANIFEST).read_text())
    assert manifest["options"] == options
    files = [f["file"] for f in manifest["files"]]
    assert all((out / f).is_file() for f in files) and "splits.json" in files
    for name in ("train", "val"):  # every split has its own files, under its folder
        assert any(f.startswith(f"{name}/") for f in files), (name, files)
    if format_name == "llava":
        for name, split_scenes in expected.items():
            records = json.loads((out / name / "llava.json").read_text())
            assert records and {r["meta"]["scene"] for r in records} == set(split_scenes)
            assert load_llava(out / name / "llava.json", image_folder=out / name)
        whole = tmp_path / "whole"
        assert run_export(dataset, whole, "llava").ok
        together = [r for name in ("train", "val") for r in json.loads((out / name / "llava.json").read_text())]
        assert sorted(r["id"] for r in together) == sorted(
            r["id"] for r in json.loads((whole / "llava.json").read_text())
        )
    if format_name == "llamafactory":
        for name in ("train", "val"):
            assert load_llamafactory(out / name, "stridegen")
    if format_name == "strideqa":  # the published layout: <split>/annotations, <split>/images, split in records
        for name, split_scenes in expected.items():
            lines = b"".join(
                gzip.decompress((out / f).read_bytes()) for f in files if f.startswith(f"{name}/annotations/")
            ).splitlines()
            records = [json.loads(line) for line in lines]
            assert records and {r["split"] for r in records} == {name}
            assert {r["token_info"]["scene"] for r in records} == set(split_scenes)


@pytest.mark.slow
def test_splits_give_the_same_bytes_with_any_number_of_workers(dataset, tmp_path):
    options = {"splits": {"train": 0.5, "val": 0.5}, "split_seed": _two_way_seed(_scenes(dataset))}
    trees = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert run_export(dataset, out, "messages", options, workers=workers).ok
        trees.append(
            {
                p.relative_to(out).as_posix(): p.read_bytes()
                for p in sorted(out.rglob("*"))
                if p.is_file() and p.name != "journal.jsonl"
            }
        )
    assert trees[0] == trees[1]
