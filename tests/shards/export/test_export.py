"""stridegen export: the strideqa-bench format read back (our reader of the official files), scored, resumed."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.cli.export import parse_balance
from stridegen.core.errors import ConfigError
from stridegen.formats.rle import decode_rle
from stridegen.formats.strideqa_bench import extract_group_id, load_annotation_questions, read_annotation_sheet
from stridegen.jobs.export import run_export
from stridegen.shards.export.manifest import EXPORT_MANIFEST
from stridegen.shards.reader import open_dataset

pytestmark = pytest.mark.slow  # the tests export the session's built dataset


@pytest.fixture(scope="module")
def bench(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "out"
    result = run_export(dataset, out, "strideqa-bench")
    assert result.ok, [r.reason for r in result.failed]
    return out


def _tree(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != "journal.jsonl"
    }


def test_every_spatiotemporal_question_round_trips(dataset, bench):
    records = load_annotation_questions(bench / "annotation_files")
    by_source = {r["token_info"]["stridegen_question_id"]: r for r in records.values()}
    seen = left_out = 0
    with open_dataset(dataset) as ds:
        for name in ds.scenes:
            view = ds.scene(name)
            qa = view.qa
            masks = view.masks
            for q in np.flatnonzero(np.asarray(qa.category, dtype=object) == "spatiotemporal").tolist():
                rec = by_source.pop(str(qa.question_id[q]), None)
                if rec is None:  # a group with a frame the official inference cannot mark (test_export_bench_inference)
                    left_out += 1
                    continue
                seen += 1
                assert rec["question"] == qa.question[q] and rec["gt"] == qa.answer[q]
                assert rec["qa_category"] == qa.predicate[q] and rec["region_id"] == int(qa.region_ids[q][0])
                extra = json.loads(str(qa.gt_extra[q]))
                main = (
                    "direction"
                    if qa.predicate[q] == "target_bearing_angle_data"
                    else "velocity"
                    if "speed" in str(qa.predicate[q])
                    else "distance"
                )
                expected_value = {main: float(qa.gt_value[q])}
                if main == "distance" and "direction" in extra:
                    expected_value["direction"] = float(extra["direction"])
                assert rec["gt_value"] == expected_value
                assert extract_group_id(rec["question_id"]) == rec["group_id"]
                channel = str(view.cameras.channel[int(qa.channel_index[q])])
                frames = [int(f) for f in qa.frame_indices[q] if f >= 0]
                assert [rec["token_info"]["frame_tokens"][i] for i in range(4)] == [
                    str(view.frames.token[f]) for f in frames
                ]
                track = int(qa.track_index[q][0])
                assert rec["token_info"]["track_id"] == view.tracks.track_id[track]
                image_rows = {
                    (int(f), int(c)): i
                    for i, (f, c) in enumerate(
                        zip(view.array("images/frame_index"), view.array("images/channel_index"), strict=True)
                    )
                }
                for bucket, rel, frame in zip(
                    ("prev_3", "prev_2", "prev_1", "current"), rec["images"], frames, strict=True
                ):
                    assert (bench / "images" / rel).read_bytes() == view.image_bytes(channel, frame)
                    row = image_rows[(frame, int(qa.channel_index[q]))]
                    hit = np.flatnonzero((masks.image_index == row) & (masks.track_index == track))
                    h, w = rec["rle"][bucket]["size"]
                    mask = decode_rle(rec["rle"][bucket]["counts"], h, w)
                    assert hit.size  # a frame without the target's mask leaves its group out
                    assert np.array_equal(mask, view.mask(int(hit[0])))
    assert seen > 0 and not by_source  # nothing missing, nothing extra
    totals = json.loads((bench / EXPORT_MANIFEST).read_text())["totals"]
    assert totals.get("undrawable_group_questions_left_out", 0) == left_out
    sheet = read_annotation_sheet(bench / "annotation_files" / "annotation_sheet.csv")
    assert set(sheet) == {r["group_id"] for r in records.values()}


def test_scoring_the_datasets_own_answers_gives_one_everywhere(bench, tmp_path):
    records = load_annotation_questions(bench / "annotation_files")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"question_id": q, "pred": r["gt"]}) + "\n" for q, r in records.items()))
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "lsr",
            "--bench-dir",
            str(bench / "annotation_files"),
            "--pred",
            str(preds),
            "--out",
            str(tmp_path / "lsr"),
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "lsr" / "metrics.json").read_text())
    for dim in ("target_distance", "target_direction", "target_velocity", "ego_velocity", "lsr"):
        assert {row["success_rate"] for row in metrics[dim]} == {1.0}, dim
    # every group has a scenario relation in the sheet, so the toolkit's TLC / MLSR are computed, and perfect
    tlc = metrics["temporal_consistency"]
    assert tlc and tlc[0]["relation"] == "Overall"
    assert {row[k] for row in tlc for k in ("TLC@1", "TLC@2", "TLC@3", "TLC", "MLSR")} == {1.0}
    # one wrong distance answer fails exactly that one item
    first = next(q for q, r in records.items() if r["qa_category"] == "ego_distance_data")
    wrong = {**records[first], "gt": "It is 999 meters away."}
    preds.write_text(
        "".join(
            json.dumps({"question_id": q, "pred": (wrong if q == first else r)["gt"]}) + "\n"
            for q, r in records.items()
        )
    )
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "lsr",
            "--bench-dir",
            str(bench / "annotation_files"),
            "--pred",
            str(preds),
            "--out",
            str(tmp_path / "lsr2"),
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = json.loads((tmp_path / "lsr2" / "metrics.json").read_text())["target_distance"]
    t0 = next(r for r in rows if r["time"] == 0)
    assert t0["success_rate"] == pytest.approx(1 - 1 / t0["sample_size"])


def test_rerun_resumes_and_two_workers_give_the_same_bytes(dataset, bench, tmp_path):
    again = run_export(dataset, bench, "strideqa-bench")
    assert [r.status for r in again.results] == ["resumed", "resumed"]
    two = run_export(dataset, tmp_path / "two", "strideqa-bench", workers=2)
    assert two.ok and _tree(tmp_path / "two") == _tree(bench)
    manifest = json.loads((bench / EXPORT_MANIFEST).read_text())
    assert manifest["exporter"] == "strideqa-bench" and manifest["totals"]["questions"] > 0
    # the source relative to the export (export.json travels with it): no absolute path
    assert (bench / manifest["source"]["path"]).resolve() == Path(dataset).resolve()
    assert not Path(manifest["source"]["path"]).is_absolute()


def test_unknown_format_and_output_inside_the_source_are_errors(dataset, tmp_path):
    with pytest.raises(ConfigError, match="unknown exporter 'nope'"):
        run_export(dataset, tmp_path / "x", "nope")
    with pytest.raises(ConfigError, match="outside the source"):
        run_export(dataset, dataset / "export", "strideqa-bench")
    res = CliRunner().invoke(app, ["export", str(dataset), "--format", "nope", "--out", str(tmp_path / "y")])
    assert res.exit_code == 2 and "unknown exporter 'nope'" in res.output


def test_answers_export_scores_one_with_eval_lsr_dataset(dataset, tmp_path):
    assert run_export(dataset, tmp_path / "answers", "answers").ok
    lines = (tmp_path / "answers" / "answers.jsonl").read_text().splitlines()
    with open_dataset(dataset) as ds:
        n_qa = sum(len(ds.scene(name).qa) for name in ds.scenes)
    assert len(lines) == n_qa
    spatiotemporal = tmp_path / "answers" / "answers_spatiotemporal.jsonl"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "lsr",
            "--dataset",
            str(dataset),
            "--pred",
            str(spatiotemporal),
            "--out",
            str(tmp_path / "lsr"),
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "lsr" / "metrics.json").read_text())
    assert {row["success_rate"] for row in metrics["lsr"]} == {1.0}


# --- bench split: --balance / balance, balance_seed, exclude_out_of_view ------------------------------------------


def _groups(out: Path) -> dict[str, dict[str, Any]]:
    """group_id -> sheet row plus the group's stridegen question ids and its question numbers, from an export."""
    sheet = read_annotation_sheet(out / "annotation_files" / "annotation_sheet.csv")
    groups = {g: {**row, "questions": set(), "numbers": []} for g, row in sheet.items()}
    for qid, rec in load_annotation_questions(out / "annotation_files").items():
        group = groups[rec["group_id"]]
        group["questions"].add(rec["token_info"]["stridegen_question_id"])
        group["numbers"].append(int(qid[1:9]))
        group["scene"] = rec["token_info"]["scene"]
    return groups


def _as_full(out: Path, full: dict[str, dict[str, Any]]) -> list[str]:
    """The groups of the export ``out`` as group ids of the unbalanced export ``full``, in ``out``'s order; each
    must hold exactly the questions of that full group (whole groups only)."""
    by_question = {q: g for g, row in full.items() for q in row["questions"]}
    mapped = []
    for row in _groups(out).values():
        [gid] = {by_question[q] for q in row["questions"]}
        assert row["questions"] == full[gid]["questions"], gid  # the whole group, nothing of another
        assert row["relation"] == full[gid]["relation"] and row["out_of_view"] == full[gid]["out_of_view"]
        mapped.append(gid)
    return mapped


def _assert_contiguous(out: Path) -> None:
    groups = _groups(out)
    assert list(groups) == [f"g{i:05d}" for i in range(1, len(groups) + 1)]  # sheet rows in group order
    numbers = sorted(n for row in groups.values() for n in row["numbers"])
    assert numbers == list(range(1, len(numbers) + 1))
    # numbered in scene order: group k's questions all come before group k+1's
    spans = [(min(row["numbers"]), max(row["numbers"])) for row in groups.values()]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


def _local_group(dataset: Path) -> dict[str, str]:
    """stridegen question id -> the group id stored in the dataset (the exporter's local group)."""
    out: dict[str, str] = {}
    with open_dataset(dataset) as ds:
        for name in ds.scenes:
            qa = ds.scene(name).qa
            out.update(zip(np.asarray(qa.question_id).astype(str), np.asarray(qa.group_id).astype(str), strict=True))
    return out


def _expected_draw(dataset: Path, full: dict[str, dict[str, Any]], targets: dict[str, int], seed: int) -> set[str]:
    """The spec of the draw written out independently: per relation, the ``target`` groups of lowest sha256 of
    the canonical JSON ``[seed, scene, local group id]``."""
    local = _local_group(dataset)
    chosen: set[str] = set()
    for rel, target in targets.items():
        ranked = sorted(
            (
                hashlib.sha256(
                    json.dumps(
                        [seed, row["scene"], local[next(iter(row["questions"]))]], separators=(",", ":")
                    ).encode()
                ).hexdigest(),
                gid,
            )
            for gid, row in full.items()
            if row["relation"] == rel
        )
        chosen.update(gid for _, gid in ranked[:target])
    return chosen


@pytest.fixture(scope="module")
def full_groups(bench) -> dict[str, dict[str, Any]]:
    return _groups(bench)


def test_balance_per_relation_draws_min_of_target_and_available(dataset, bench, full_groups, tmp_path):
    available = Counter(row["relation"] for row in full_groups.values())
    default = json.loads((bench / "annotation_files" / "balance.json").read_text())  # no split: every group drawn
    assert default["balance"] is None and default["groups"]["drawn"] == default["groups"]["total"] == len(full_groups)
    # a target that cuts the largest relation and leaves a shortfall in the smallest (derived, not hard-coded)
    n = max(1, max(available.values()) // 2)
    assert min(available.values()) < n < max(available.values()), available  # the fixture exercises both sides
    out = tmp_path / "bal"
    assert run_export(dataset, out, "strideqa-bench", {"balance": n}).ok
    drawn = _as_full(out, full_groups)
    counts = Counter(full_groups[g]["relation"] for g in drawn)
    assert counts == {rel: min(n, a) for rel, a in available.items()}
    assert drawn == sorted(drawn)  # kept groups keep the scene order of the full export
    assert set(drawn) == _expected_draw(dataset, full_groups, dict.fromkeys(available, n), seed=0)
    assert all(len(full_groups[g]["questions"]) == 13 for g in drawn)
    _assert_contiguous(out)
    report = json.loads((out / "annotation_files" / "balance.json").read_text())
    assert report["seed"] == 0 and report["balance"] == n and report["groups"]["drawn"] == len(drawn)
    assert report["questions_drawn"] == sum(len(full_groups[g]["questions"]) for g in drawn)
    for rel, a in available.items():
        entry = report["relations"][rel]
        assert (entry["target"], entry["available"], entry["drawn"]) == (n, a, min(n, a))
        assert entry["shortfall"] == max(0, n - a)
    files = {f["file"] for f in json.loads((out / EXPORT_MANIFEST).read_text())["files"]}
    assert "annotation_files/balance.json" in files


def test_balance_mapping_draws_only_the_named_relations(dataset, full_groups, tmp_path):
    available = Counter(row["relation"] for row in full_groups.values())
    big, small = max(available, key=available.get), min(available, key=available.get)
    assert big != small
    targets = {big: 1, small: available[small] + 2}  # small falls short by 2: drawn whole, not an error
    out = tmp_path / "map"
    assert run_export(dataset, out, "strideqa-bench", {"balance": targets, "balance_seed": 7}).ok
    drawn = _as_full(out, full_groups)
    assert Counter(full_groups[g]["relation"] for g in drawn) == {big: 1, small: available[small]}
    assert set(drawn) == _expected_draw(dataset, full_groups, targets, seed=7)
    _assert_contiguous(out)
    report = json.loads((out / "annotation_files" / "balance.json").read_text())
    assert set(report["relations"]) == {big, small}
    assert report["relations"][small]["shortfall"] == 2 and report["relations"][big]["drawn"] == 1
    assert report["groups"]["left_out"] == len(full_groups) - available[big] - available[small]


def test_balance_is_deterministic_over_workers_and_depends_on_the_seed(dataset, full_groups, tmp_path):
    options = {"balance": 2, "balance_seed": 3}
    one = run_export(dataset, tmp_path / "one", "strideqa-bench", options)
    two = run_export(dataset, tmp_path / "two", "strideqa-bench", options, workers=2)
    assert one.ok and two.ok and _tree(tmp_path / "one") == _tree(tmp_path / "two")
    other = run_export(dataset, tmp_path / "other", "strideqa-bench", {**options, "balance_seed": 4})
    assert other.ok
    assert set(_as_full(tmp_path / "one", full_groups)) != set(_as_full(tmp_path / "other", full_groups))
    # the seed and the balance are part of the export's config hash: another split needs --overwrite
    hashes = {json.loads((tmp_path / d / EXPORT_MANIFEST).read_text())["config_hash"] for d in ("one", "other")}
    assert len(hashes) == 2


def test_exclude_out_of_view_drops_exactly_the_out_of_view_groups(dataset, full_groups, tmp_path):
    out_of_view = {g for g, row in full_groups.items() if row["out_of_view"] == 1}
    assert out_of_view and len(out_of_view) < len(full_groups)  # the fixture has both kinds
    out = tmp_path / "in-view"
    assert run_export(dataset, out, "strideqa-bench", {"exclude_out_of_view": True}).ok
    assert _as_full(out, full_groups) == [g for g in full_groups if g not in out_of_view]
    _assert_contiguous(out)
    report = json.loads((out / "annotation_files" / "balance.json").read_text())
    assert report["balance"] is None and report["groups"]["out_of_view_dropped"] == len(out_of_view)
    assert {e["target"] for e in report["relations"].values()} == {None}
    # the whole export again over it (--overwrite): the report describes the new files, not the split
    assert run_export(dataset, out, "strideqa-bench", overwrite=True).ok
    report = json.loads((out / "annotation_files" / "balance.json").read_text())
    assert not report["exclude_out_of_view"] and report["groups"]["drawn"] == len(full_groups)
    assert _as_full(out, full_groups) == list(full_groups)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"balance": {"Overtake": 1, "U_Turn": 2}}, "unknown relation"),
        ({"balance": -1}, ">= 0"),
        ({"balance": {"Overtake": -3}}, ">= 0"),
        ({"balance": True}, "expected a count"),
        ({"balance": {}}, "names no relation"),
        ({"exclude_out_of_view": "yes"}, "true or false"),
    ],
)
def test_bad_balance_options_fail_before_any_work(dataset, tmp_path, options, message):
    with pytest.raises(ConfigError, match=message):
        run_export(dataset, tmp_path / "x", "strideqa-bench", options)
    assert not (tmp_path / "x").exists()


def test_parse_balance():
    assert parse_balance("4") == 4
    assert parse_balance(" Overtake=2, Other=0 ") == {"Overtake": 2, "Other": 0}
    for bad in ("", "-1", "2.5", "Overtake", "Overtake=", "Overtake=-1", "=3", "Overtake=1,Overtake=2", "3,Other=1"):
        with pytest.raises(ConfigError, match="--balance"):
            parse_balance(bad)


def test_cli_balance_flag(dataset, full_groups, tmp_path):
    available = Counter(row["relation"] for row in full_groups.values())
    rel = max(available, key=available.get)
    args = ["export", str(dataset), "--format", "strideqa-bench"]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "cli"), "--balance", f"{rel}=2"])
    assert res.exit_code == 0, res.output
    api = tmp_path / "api"
    assert run_export(dataset, api, "strideqa-bench", {"balance": {rel: 2}}).ok
    assert _tree(tmp_path / "cli") == _tree(api)  # the flag is the exporter option
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "n"), "--balance", "1", "-O", "balance_seed=2"])
    assert res.exit_code == 0, res.output
    assert Counter(full_groups[g]["relation"] for g in _as_full(tmp_path / "n", full_groups)) == dict.fromkeys(
        available, 1
    )
    for extra, message in (
        (["--balance", "Overtake:2"], "--balance 'Overtake:2': bad item"),
        (["--balance", "2", "-O", "balance=3"], "--balance and -O balance"),
        (["--balance", "Sideswipe=1"], "unknown relation"),
    ):
        res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "bad"), *extra])
        assert res.exit_code == 2 and message in res.output, res.output
    assert not (tmp_path / "bad").exists()
