"""Scenario labels in the shards (schema v4, ``scenarios`` table) and in every export; shards of schema v3 still read,
their groups labelled on read with the same rules (issue 32)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from stridegen.pipeline.scenario import RELATIONS
from stridegen.shards.reader import open_dataset
from stridegen.shards.scenarios import scenarios_table, scene_relations
from stridegen.shards.schema import SCHEMA_VERSION


def _labels(root: Path) -> dict[str, dict[str, str]]:
    with open_dataset(root) as ds:
        return {scene.name: scene_relations(scene) for scene in ds}


@pytest.fixture(scope="module")
def v3_copy(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session dataset rewritten as schema v3 shards (no scenarios table, version attribute 3), as the code
    before the table wrote them; the manifest's shard entries updated to the new files."""
    import stridegen.shards.writer as writer

    out = tmp_path_factory.mktemp("v3") / "ds"
    shutil.copytree(dataset, out)
    manifest = json.loads((out / "manifest.json").read_text())
    with open_dataset(dataset) as ds, pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer, "SCHEMA_VERSION", 3)
        for entry in manifest["shards"]:
            (name,) = entry["scenes"]
            record = ds.scene(name).record()
            record.scenarios = None
            info = writer.write_shard(record, out, manifest["config_hash"])
            entry.update(sha256=info.sha256, bytes=info.bytes, counts=info.counts)
    totals: dict[str, int] = {}  # what a build of these shards would total (stridegen.shards.manifest)
    for entry in manifest["shards"]:
        for key, value in entry["counts"].items():
            totals[key] = totals.get(key, 0) + int(value)
    totals.update(scenes=len(manifest["shards"]), shards=len(manifest["shards"]))
    totals["bytes"] = sum(int(entry["bytes"]) for entry in manifest["shards"])
    manifest["totals"] = totals
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out


def test_build_stores_one_label_per_group(dataset: Path) -> None:
    assert SCHEMA_VERSION >= 4
    with open_dataset(dataset) as ds:
        manifest_counts: dict[str, int] = {}
        for scene in ds:
            stored, qa = scene.scenarios, scene.qa
            assert stored is not None and qa is not None
            groups = sorted({str(g) for g in qa.group_id.tolist() if g})
            assert stored.group_id.tolist() == groups and len(groups) > 0
            assert set(stored.relation.tolist()) <= set(RELATIONS)
            # The stored labels are the labeler's on the stored tables, and name the group's keyframe and target.
            again = scenarios_table(scene)
            assert again is not None and again.relation.tolist() == stored.relation.tolist()
            for gid, kf, track in zip(stored.group_id, stored.keyframe_index, stored.track_index, strict=True):
                rows = np.flatnonzero(qa.group_id == gid)
                assert (qa.keyframe_index[rows] == kf).all() and (qa.track_index[rows, 0] == track).all()
            for relation in stored.relation.tolist():
                manifest_counts[relation] = manifest_counts.get(relation, 0) + 1
        totals = ds.manifest["totals"]
        assert {k.split("/", 1)[1]: v for k, v in totals.items() if k.startswith("scenario/")} == manifest_counts


def test_v3_shards_read_with_labels_recomputed(dataset: Path, v3_copy: Path) -> None:
    with open_dataset(v3_copy) as ds:
        for scene in ds:
            with h5py.File(ds.root / ds._shard_of[scene.name]["file"], "r") as f:
                assert int(f.attrs["schema_version"]) == 3
                assert "scenarios" not in f["scenes"][scene.name]
            assert scene.scenarios is None
        ds.verify()
    assert _labels(v3_copy) == _labels(dataset)


def _sheet(out: Path) -> list[list[str]]:
    with open(out / "annotation_files" / "annotation_sheet.csv", newline="") as fh:
        return list(csv.reader(fh))


def test_exports_carry_the_stored_labels(dataset: Path, v3_copy: Path, tmp_path: Path) -> None:
    """bench annotation sheet, llava / messages qa_info and meta, hf column: the stored label of each group; the
    same from a v3 copy (labelled on read)."""
    import pyarrow.parquet as pq

    from stridegen.jobs.export import run_export

    labels = {gid: rel for per in _labels(dataset).values() for gid, rel in per.items()}
    for fmt in ("llava", "messages"):
        out = tmp_path / fmt
        assert run_export(dataset, out, fmt).ok
        text = (out / ("llava.json" if fmt == "llava" else "messages.jsonl")).read_text()
        rows = json.loads(text) if fmt == "llava" else [json.loads(x) for x in text.splitlines()]
        seen = 0
        for row in rows:
            group = row["meta"].get("scenario")
            spatiotemporal = row["qa_info"][0]["category"] == "spatiotemporal"
            want = labels[row["id"]] if spatiotemporal else ""
            assert group == want and all(info["scenario"] == want for info in row["qa_info"])
            seen += spatiotemporal
        assert seen == len(labels)
    out = tmp_path / "hf"
    assert run_export(dataset, out, "hf").ok
    table = pq.read_table(sorted(out.rglob("*.parquet"))[0], columns=["id", "kind", "scenario"]).to_pylist()
    assert all(r["scenario"] == (labels[r["id"]] if r["kind"] == "spatiotemporal" else "") for r in table)
    assert run_export(dataset, tmp_path / "bench", "strideqa-bench").ok
    assert run_export(v3_copy, tmp_path / "bench-v3", "strideqa-bench").ok
    sheet = _sheet(tmp_path / "bench")
    assert sheet == _sheet(tmp_path / "bench-v3") and len(sheet) > 1
    assert {row[2] for row in sheet[1:]} <= set(labels.values())


def test_balanced_bench_writes_only_the_drawn_groups_images(dataset: Path, tmp_path: Path) -> None:
    from stridegen.jobs.export import run_export

    full, drawn = tmp_path / "full", tmp_path / "drawn"
    assert run_export(dataset, full, "strideqa-bench").ok
    assert run_export(dataset, drawn, "strideqa-bench", {"balance": 1}).ok
    for out in (full, drawn):
        named = set()
        for t in range(4):
            for rec in json.loads((out / "annotation_files" / f"strideqa_bench_t{t}.json").read_text()):
                named.update(rec["images"])
        files = {p.relative_to(out / "images").as_posix() for p in (out / "images").rglob("*") if p.is_file()}
        assert files == named, out.name
        report = json.loads((out / "annotation_files" / "balance.json").read_text())
        assert report["images_written"] == len(files)
    assert len(list((drawn / "images").rglob("*.jpg"))) < len(list((full / "images").rglob("*.jpg")))


def test_report_counts_groups_per_relation_for_v4_and_v3(dataset: Path, v3_copy: Path) -> None:
    from stridegen.viz.report.dataset_sections import scenario_table
    from stridegen.viz.report.stats import collect_stats

    with open_dataset(dataset) as ds:
        stats = collect_stats(ds)
    with open_dataset(v3_copy) as ds:
        old = collect_stats(ds)
    labels = [rel for per in _labels(dataset).values() for rel in per.values()]
    assert dict(stats.groups_by_scenario) == {r: labels.count(r) for r in set(labels)}
    assert old.groups_by_scenario == stats.groups_by_scenario and old.qa_by_scenario == stats.qa_by_scenario
    assert stats.scenes_labelled_on_read == 0 and old.scenes_labelled_on_read == len(old.scenes)
    html = scenario_table(old)
    assert 'id="table-scenarios"' in html and "older than schema v4" in html


def test_augmented_records_keep_or_add_the_labels(dataset: Path, v3_copy: Path) -> None:
    """A robustness split (corrupt_record) keeps the stored labels, and labels a v3 source's groups."""
    from stridegen.augment.scene import SceneCorruption
    from stridegen.shards.augmented import corrupt_record

    spec = SceneCorruption("fog", 1)
    for root in (dataset, v3_copy):
        with open_dataset(root) as ds:
            scene = ds.scene(ds.scenes[0])
            out = corrupt_record(scene.record(), spec)
            assert out.scenarios is not None
            labels = dict(zip(out.scenarios.group_id.tolist(), out.scenarios.relation.tolist(), strict=True))
            assert labels == _labels(dataset)[scene.name]


def test_a_scene_without_questions_gets_an_empty_table() -> None:
    """A scene whose QA table is empty (a clip too short for any keyframe) stores an empty scenarios table; the
    build failed on it once (its empty track_index column has no second axis)."""
    from types import SimpleNamespace

    qa = SimpleNamespace(
        group_id=np.empty(0, dtype=object), keyframe_index=np.empty(0, np.int32), track_index=np.empty(0, np.int32)
    )
    table = scenarios_table(SimpleNamespace(qa=qa, keyframes=None, frames=None, tracks=None))  # type: ignore[arg-type]
    assert table is not None and len(table) == 0
    table.validate()
    assert scenarios_table(SimpleNamespace(qa=None)) is None  # type: ignore[arg-type]
