"""Tracking-results JSON loader: every malformed input is a PredictionFormatError naming file, token and field."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import PredictionFormatError
from stridegen.formats.results_json import LIDAR_ONLY_META
from stridegen.formats.tracking_results import (
    load_tracking_results,
    parse_tracking_results,
    write_tracking_results,
)


def _box(token: str, track: str | int = "t1", name: str = "car", score: float = 0.7, **changes) -> dict:
    box = {
        "sample_token": token,
        "translation": [1.0, 2.0, 0.5],
        "size": [1.9, 4.5, 1.6],
        "rotation": [1.0, 0.0, 0.0, 0.0],
        "velocity": [0.5, 0.0],
        "tracking_id": track,
        "tracking_name": name,
        "tracking_score": score,
    }
    box.update(changes)
    return box


def _doc() -> dict:
    return {
        "meta": {**LIDAR_ONLY_META, "use_radar": True},
        "results": {"s1": [_box("s1"), _box("s1", "t2", "pedestrian", 0.4)], "s2": [], "s3": [_box("s3")]},
    }


def test_roundtrip_through_a_file(tmp_path: Path):
    doc = _doc()
    path = tmp_path / "results.json"
    write_tracking_results(path, doc["results"], doc["meta"])
    res = load_tracking_results(path, known_sample_tokens=["s1", "s2", "s3", "s4"])
    assert res.sample_tokens == ["s1", "s2", "s3"]
    assert len(res) == 3
    assert res.sample_token.tolist() == ["s1", "s1", "s3"]
    assert res.tracking_id.tolist() == ["t1", "t2", "t1"]
    assert res.tracking_name.tolist() == ["car", "pedestrian", "car"]
    np.testing.assert_allclose(res.tracking_score, [0.7, 0.4, 0.7])
    np.testing.assert_allclose(res.translation[0], [1.0, 2.0, 0.5])
    assert res.meta == {**LIDAR_ONLY_META, "use_radar": True}
    assert res.nan_velocity == 0


def test_integer_tracking_ids_become_strings_and_nan_velocity_is_counted():
    doc = _doc()
    doc["results"]["s1"][0]["tracking_id"] = 17
    doc["results"]["s3"][0]["velocity"] = [math.nan, math.nan]
    doc["results"]["s3"][0]["num_pts"] = 0
    res = parse_tracking_results(doc)
    assert res.tracking_id[0] == "17"
    assert res.nan_velocity == 1
    assert res.num_pts.tolist() == [-1, -1, 0]  # optional; the devkit drops boxes with num_pts == 0


# The checks shared with detection results (numbers, size, rotation, score, class, meta, box count) are tested
# for both readers in tests/formats/test_results_validation.py; these are tracking's own, and the class list.
@pytest.mark.parametrize(
    "mutate,match",
    [
        (
            lambda d: d["results"]["s1"][0].pop("tracking_id"),
            r"sample 's1', box 0: missing field\(s\) \['tracking_id'\]",
        ),
        (
            lambda d: d["results"]["s1"][1].update(tracking_id="t1"),
            r"sample 's1', box 1: tracking_id 't1' already used by box 0",
        ),
        (lambda d: d["results"]["s1"][0].update(tracking_id=""), "'tracking_id' must be a non-empty string"),
        (lambda d: d["results"]["s1"][0].update(tracking_id=True), "'tracking_id' must be a non-empty string"),
        (lambda d: d["results"]["s1"][0].update(tracking_id=[1]), "'tracking_id' must be a non-empty string"),
        (
            lambda d: d["results"]["s1"][0].update(tracking_name="construction_vehicle"),
            "'tracking_name' 'construction_vehicle' is not one of",
        ),
        (lambda d: d["results"]["s1"][0].update(tracking_name=["car"]), r"'tracking_name' \['car'\] is not one of"),
        (lambda d: d["results"]["s1"][0].update(tracking_score=1.01), r"'tracking_score' must be a number in \[0, 1\]"),
    ],
)
def test_malformed_boxes_name_token_index_and_field(mutate, match):
    doc = copy.deepcopy(_doc())
    mutate(doc)
    with pytest.raises(PredictionFormatError, match=match) as info:
        parse_tracking_results(doc, path="pred.json")
    assert info.value.path == "pred.json"
    assert str(info.value).startswith("pred.json: sample 's1', box ")


def test_unknown_sample_tokens_are_an_error():
    with pytest.raises(PredictionFormatError, match=r"1 sample token\(s\) are not in the ground truth.*s3"):
        parse_tracking_results(_doc(), known_sample_tokens=["s1", "s2"])


def test_too_many_boxes_per_sample():
    doc = {"meta": LIDAR_ONLY_META, "results": {"s1": [_box("s1", f"t{k}") for k in range(4)]}}
    with pytest.raises(PredictionFormatError, match="4 boxes; at most 3"):
        parse_tracking_results(doc, max_boxes_per_sample=3)
    assert len(parse_tracking_results(doc, max_boxes_per_sample=4)) == 4


def test_file_level_errors(tmp_path: Path):
    with pytest.raises(PredictionFormatError, match="does not exist"):
        load_tracking_results(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PredictionFormatError, match="not valid JSON"):
        load_tracking_results(bad)
    dup = tmp_path / "dup.json"
    dup.write_text('{"meta": {}, "results": {"s1": [], "s1": []}}')
    with pytest.raises(PredictionFormatError, match="duplicate key 's1'"):
        load_tracking_results(dup)
    top = tmp_path / "top.json"
    top.write_text(json.dumps([1, 2]))
    with pytest.raises(PredictionFormatError, match="top level"):
        load_tracking_results(top)


def test_empty_results_are_valid():
    res = parse_tracking_results({"meta": LIDAR_ONLY_META, "results": {"s1": []}})
    assert len(res) == 0 and res.sample_tokens == ["s1"]
    assert res.translation.shape == (0, 3)


def test_writer_refuses_a_meta_block_the_reader_would_reject(tmp_path: Path):
    with pytest.raises(PredictionFormatError, match=r"field 'meta': \['use_map'\] must be true or false"):
        write_tracking_results(tmp_path / "r.json", {}, {**LIDAR_ONLY_META, "use_map": "no"})
    assert not (tmp_path / "r.json").exists()
    write_tracking_results(tmp_path / "r.json", {"s1": []})
    assert load_tracking_results(tmp_path / "r.json").meta == LIDAR_ONLY_META
