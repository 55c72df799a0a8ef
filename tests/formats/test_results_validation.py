"""Detection and tracking results files get one validation (stridegen/formats/results_json.py).

The same bad box, sample or meta block is rejected alike by both readers: the same error class, a message that
starts with the file and names the sample and the box index, the same reason. Where the devkit's own loader
(nuscenes/eval/common/loaders.py ``load_prediction``) also rejects the input, the test checks that it does; where
it accepts it (size 0, a non-unit rotation, a score outside [0, 1], ...) the test checks that too, so that every
rule stricter than the devkit is listed here. A huge extra ``meta`` key never reaches an evaluation summary.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import PredictionFormatError
from stridegen.formats.nuscenes_results import load_results
from stridegen.formats.results_json import (
    LIDAR_ONLY_META,
    MAX_DROPPED_META_KEYS,
    MAX_META_KEY_CHARS,
    QUATERNION_NORM_TOL,
    DroppedMeta,
    summary_meta,
)
from stridegen.formats.tracking_results import load_tracking_results
from tests.shared_data import NUSCENES_DEMO as DEMO
from tests.shared_data import needs_nuscenes_demo

KINDS = ("detection", "tracking")
NAME = {"detection": "detection_name", "tracking": "tracking_name"}
SCORE = {"detection": "detection_score", "tracking": "tracking_score"}


def make_box(kind: str, token: str, k: int) -> dict:
    box: dict[str, object] = {
        "sample_token": token,
        "translation": [10.0 + k, -4.0, 1.0],
        "size": [1.9, 4.5, 1.6],
        "rotation": [math.cos(0.2), 0.0, 0.0, math.sin(0.2)],
        "velocity": [1.5, -0.5],
    }
    if kind == "detection":
        box.update(detection_name="car", detection_score=0.8 - 0.1 * k, attribute_name="vehicle.moving")
    else:
        box.update(tracking_id=f"trk-{k}", tracking_name="car", tracking_score=0.8 - 0.1 * k)
    return box


def make_doc(kind: str) -> dict:
    return {
        "meta": dict(LIDAR_ONLY_META),
        "results": {"tok-a": [make_box(kind, "tok-a", 0), make_box(kind, "tok-a", 1)], "tok-b": []},
    }


def load(kind: str, path: Path):
    return load_results(path) if kind == "detection" else load_tracking_results(path)


def devkit_load(kind: str, path: Path):
    from nuscenes.eval.common.config import config_factory
    from nuscenes.eval.common.loaders import load_prediction
    from nuscenes.eval.detection.data_classes import DetectionBox
    from nuscenes.eval.tracking.data_classes import TrackingBox

    if kind == "tracking":
        config_factory("tracking_nips_2019")  # the devkit's TrackingBox checks names against what this config sets
    return load_prediction(str(path), 500, DetectionBox if kind == "detection" else TrackingBox)


def write(tmp_path: Path, doc: dict | str, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


Mutation = Callable[[dict, str], object]


def _set(field: str, value: object) -> Mutation:
    return lambda box, kind: box.__setitem__(field, value)


def _set_name(value: object) -> Mutation:
    return lambda box, kind: box.__setitem__(NAME[kind], value)


def _set_score(value: object) -> Mutation:
    return lambda box, kind: box.__setitem__(SCORE[kind], value)


# (mutation of box 1 of sample 'tok-a', reason the message gives, whether the devkit's loader rejects it too)
BAD_BOXES: dict[str, tuple[Mutation, str, bool]] = {
    "missing translation": (lambda b, k: b.pop("translation"), r"missing field\(s\) \['translation'\]", True),
    "missing score": (lambda b, k: b.pop(SCORE[k]), r"missing field\(s\) \['(detection|tracking)_score'\]", False),
    "translation 2 values": (_set("translation", [1.0, 2.0]), "'translation' must be a list of 3 numbers", True),
    "translation NaN": (_set("translation", [1.0, math.nan, 0.0]), "'translation' has a non-finite value", True),
    "translation inf": (_set("translation", [1.0, math.inf, 0.0]), "'translation' has a non-finite value", False),
    "translation text": (_set("translation", [1.0, "2", 0.0]), "'translation' .*non-number", True),
    "size 0": (_set("size", [1.9, 0.0, 1.6]), r"'size' must be > 0", False),
    "size negative": (_set("size", [1.9, 4.5, -1.6]), r"'size' must be > 0", False),
    "size NaN": (_set("size", [1.9, math.nan, 1.6]), "'size' has a non-finite value", True),
    "rotation 3 values": (_set("rotation", [1.0, 0.0, 0.0]), "'rotation' must be a list of 4 numbers", True),
    "rotation norm 2": (_set("rotation", [2.0, 0.0, 0.0, 0.0]), "'rotation' is not a unit quaternion", False),
    "rotation zeros": (_set("rotation", [0.0, 0.0, 0.0, 0.0]), "'rotation' is not a unit quaternion", False),
    "rotation norm 1.02": (_set("rotation", [1.0, 0.0, 0.0, 0.2]), "'rotation' is not a unit quaternion", False),
    "rotation Euler angles": (_set("rotation", [0.0, 0.0, 1.3, 0.0]), "'rotation' is not a unit quaternion", False),
    "velocity 1 value": (_set("velocity", [0.0]), "'velocity' must be a list of 2 numbers", True),
    "velocity inf": (_set("velocity", [math.inf, 0.0]), "'velocity' has a non-finite value", False),
    "velocity text": (_set("velocity", "fast"), "'velocity' must be a list of 2 numbers, got str", True),
    "unknown class": (_set_name("spaceship"), r"_name' 'spaceship' is not one of", True),
    "class not a string": (_set_name(7), r"_name' 7 is not one of", True),
    "score NaN": (_set_score(math.nan), r"_score' must be a number in \[0, 1\]", True),
    "score above 1": (_set_score(1.5), r"_score' must be a number in \[0, 1\]", False),
    "score below 0": (_set_score(-0.1), r"_score' must be a number in \[0, 1\]", False),
    "score as text": (_set_score("0.5"), r"_score' must be a number in \[0, 1\]", False),
    "score boolean": (_set_score(True), r"_score' must be a number in \[0, 1\]", False),
    "sample_token differs": (_set("sample_token", "tok-b"), "is 'tok-b', but the box is listed under 'tok-a'", False),
    "num_pts fraction": (_set("num_pts", 1.5), "optional field 'num_pts' must be an integer", False),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(BAD_BOXES))
def test_a_bad_box_is_rejected_alike_by_both_readers(tmp_path: Path, kind: str, case: str) -> None:
    mutate, reason, _ = BAD_BOXES[case]
    doc = make_doc(kind)
    mutate(doc["results"]["tok-a"][1], kind)
    path = write(tmp_path, doc)
    with pytest.raises(PredictionFormatError) as info:
        load(kind, path)
    assert type(info.value) is PredictionFormatError
    assert info.value.path == str(path)
    message = str(info.value)
    assert message.startswith(f"{path}: sample 'tok-a', box 1: "), message
    assert re.search(reason, message), message


def test_both_readers_give_the_same_message_for_the_shared_fields(tmp_path: Path) -> None:
    """Identical wording, not just the same reason: the same code checks both (field names differ only in the
    detection_/tracking_ prefix)."""
    for case in ("size 0", "rotation norm 2", "translation NaN", "velocity inf", "sample_token differs"):
        messages = []
        for kind in KINDS:
            doc = make_doc(kind)
            BAD_BOXES[case][0](doc["results"]["tok-a"][1], kind)
            with pytest.raises(PredictionFormatError) as info:
                load(kind, write(tmp_path, doc))
            messages.append(str(info.value))
        assert messages[0] == messages[1], case


@pytest.mark.devkit
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(BAD_BOXES))
def test_devkit_loader_on_the_same_bad_box(tmp_path: Path, kind: str, case: str) -> None:
    """Where the devkit rejects the box too, it raises; where it accepts it, the rule is ours (documented)."""
    mutate, _, devkit_rejects = BAD_BOXES[case]
    doc = make_doc(kind)
    mutate(doc["results"]["tok-a"][1], kind)
    path = write(tmp_path, doc)
    if devkit_rejects:
        with pytest.raises((AssertionError, KeyError, TypeError, ValueError)):
            devkit_load(kind, path)
    else:
        devkit_load(kind, path)


def _not_an_object(doc: dict) -> None:
    doc["results"]["tok-a"][1] = 5


def _too_many(doc: dict) -> None:
    box = doc["results"]["tok-a"][0]
    many = []
    for k in range(501):
        b = copy.deepcopy(box)
        b["translation"] = [float(k), 0.0, 0.0]
        b.update({"tracking_id": f"id{k}"} if "tracking_id" in b else {})
        many.append(b)
    doc["results"]["tok-a"] = many


# Document-level problems: (mutation, reason, whether the devkit rejects it too).
BAD_DOCUMENTS: dict[str, tuple[Callable[[dict], object], str, bool]] = {
    "box not an object": (_not_an_object, r"sample 'tok-a', box 1: a box must be an object, got int", True),
    "501 boxes in a sample": (_too_many, r"sample 'tok-a': 501 boxes; at most 500 per sample", True),
    "sample value not a list": (
        lambda d: d["results"].__setitem__("tok-b", {}),
        "'tok-b': value must be a list",
        False,
    ),
    "no meta": (lambda d: d.pop("meta"), "missing top-level field 'meta'", True),
    "no results": (lambda d: d.pop("results"), "missing top-level field 'results'", True),
    "meta a list": (lambda d: d.__setitem__("meta", []), "field 'meta' must be an object, got list", False),
    "meta lacks a flag": (lambda d: d["meta"].pop("use_map"), r"field 'meta' lacks \['use_map'\]", False),
    "meta empty": (lambda d: d.__setitem__("meta", {}), r"field 'meta' lacks \['use_camera', 'use_lidar'", False),
    "meta flag not boolean": (
        lambda d: d["meta"].__setitem__("use_lidar", 1),
        r"field 'meta': \['use_lidar'\] must be true or false",
        False,
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_a_bad_document_is_rejected_alike_by_both_readers(tmp_path: Path, kind: str, case: str) -> None:
    mutate, reason, _ = BAD_DOCUMENTS[case]
    doc = make_doc(kind)
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(PredictionFormatError) as info:
        load(kind, path)
    assert type(info.value) is PredictionFormatError
    assert str(info.value).startswith(f"{path}: ")
    assert re.search(reason, str(info.value)), str(info.value)


@pytest.mark.devkit
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_devkit_loader_on_the_same_bad_document(tmp_path: Path, kind: str, case: str) -> None:
    mutate, _, devkit_rejects = BAD_DOCUMENTS[case]
    doc = make_doc(kind)
    mutate(doc)
    path = write(tmp_path, doc)
    if devkit_rejects:
        with pytest.raises((AssertionError, KeyError, TypeError)):
            devkit_load(kind, path)
    else:
        devkit_load(kind, path)


def _edge_cases(kind: str) -> dict:
    """A valid document at the edges of the rules: NaN velocity, rotation norm just inside the tolerance, scores
    0 and 1 (an integer), num_pts 0, extra meta keys."""
    doc = make_doc(kind)
    a, b = doc["results"]["tok-a"]
    a["velocity"] = [math.nan, math.nan]
    a["rotation"] = [1.0 + 0.9 * QUATERNION_NORM_TOL, 0.0, 0.0, 0.0]
    a[SCORE[kind]] = 0.0
    b[SCORE[kind]] = 1
    b["num_pts"] = 0
    doc["meta"]["comment"] = "trained on train split"
    return doc


@pytest.mark.parametrize("kind", KINDS)
def test_edge_cases_are_accepted_by_both_readers(tmp_path: Path, kind: str) -> None:
    loaded = load(kind, write(tmp_path, _edge_cases(kind), "edge.json"))
    assert loaded.nan_velocity == 1
    assert loaded.meta == LIDAR_ONLY_META
    assert loaded.meta_dropped == DroppedMeta(1, ("comment",))
    num_pts = loaded.boxes.num_pts if kind == "detection" else loaded.num_pts
    assert num_pts.tolist() == [-1, 0]  # the devkit drops boxes whose num_pts is 0; both readers keep the value
    scores = loaded.boxes.detection_score if kind == "detection" else loaded.tracking_score
    assert scores.tolist() == [0.0, 1.0]


@pytest.mark.devkit
@pytest.mark.parametrize("kind", KINDS)
def test_devkit_reads_a_valid_file_as_we_do(tmp_path: Path, kind: str) -> None:
    path = write(tmp_path, _edge_cases(kind), "edge.json")
    theirs, meta = devkit_load(kind, path)
    ours = load(kind, path)
    assert meta["use_lidar"] is ours.meta["use_lidar"] is True
    boxes = theirs.all
    translation = ours.boxes.translation if kind == "detection" else ours.translation
    rotation = ours.boxes.rotation if kind == "detection" else ours.rotation
    velocity = ours.boxes.velocity if kind == "detection" else ours.velocity
    num_pts = ours.boxes.num_pts if kind == "detection" else ours.num_pts
    np.testing.assert_array_equal([b.translation for b in boxes], translation)
    np.testing.assert_array_equal([b.rotation for b in boxes], rotation)
    np.testing.assert_array_equal([b.velocity for b in boxes], velocity)  # NaN where NaN
    assert [b.num_pts for b in boxes] == num_pts.tolist()
    if kind == "detection":
        assert [b.detection_score for b in boxes] == ours.boxes.detection_score.tolist()
        assert [b.attribute_name for b in boxes] == ours.boxes.attribute_name.tolist()
    else:
        assert [b.tracking_score for b in boxes] == ours.tracking_score.tolist()
        assert [b.tracking_id for b in boxes] == ours.tracking_id.tolist()


# ---------------------------------------------------------------------------------------------- meta in summaries
def test_dropped_meta_keys_are_counted_and_named_with_caps(tmp_path: Path) -> None:
    long_name = "k" * 500
    doc = make_doc("tracking")
    doc["meta"].update({long_name: 1, **{f"extra{i}": i for i in range(30)}, "blob": "x" * 1_000_000})
    loaded = load_tracking_results(write(tmp_path, doc))
    assert loaded.meta == LIDAR_ONLY_META
    assert loaded.meta_dropped.count == 32
    assert len(loaded.meta_dropped.keys) == MAX_DROPPED_META_KEYS
    assert loaded.meta_dropped.keys[0] == "k" * MAX_META_KEY_CHARS + "..."
    assert loaded.meta_dropped.keys[1:3] == ("extra0", "extra1")


def test_summary_meta_copies_only_the_flags() -> None:
    meta = {**LIDAR_ONLY_META, "use_map": "yes", "blob": "x" * 10_000}
    out = summary_meta(meta, DroppedMeta(2, ("a", "b")))
    assert out["meta"] == {k: v for k, v in LIDAR_ONLY_META.items() if k != "use_map"}
    assert out["meta_dropped"] == {"count": 4, "keys": ["a", "b", "use_map", "blob"]}
    assert len(json.dumps(out)) < 400


HUGE = 100 * 1024 * 1024  # the 100 MB meta field


@pytest.fixture(scope="module")
def huge_meta_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Empty results for every sample of the nuScenes demo log (valid for detection and tracking alike) whose meta
    holds a 100 MB extra key."""
    from stridegen.eval.detection.gt import load_detection_gt

    _, context = load_detection_gt(DEMO)
    path = tmp_path_factory.mktemp("huge") / "huge_meta.json"
    blob = "x" * HUGE
    path.write_text(
        json.dumps({"meta": {**LIDAR_ONLY_META, "blob": blob}, "results": {t: [] for t in context.sample_tokens}})
    )
    assert path.stat().st_size > HUGE
    return path


@needs_nuscenes_demo
@pytest.mark.parametrize("kind", KINDS)
def test_a_100_mb_meta_key_stays_out_of_the_summary(tmp_path: Path, huge_meta_results: Path, kind: str) -> None:
    import typer
    from typer.testing import CliRunner

    from stridegen.cli.eval_detection import eval_detection
    from stridegen.cli.eval_tracking import eval_tracking

    app = typer.Typer()
    app.command(kind)(eval_detection if kind == "detection" else eval_tracking)
    app.command("other")(lambda: None)  # keep the command a named sub-command
    out = tmp_path / "summary.json"
    run = CliRunner().invoke(app, [kind, "--gt", str(DEMO), "--pred", str(huge_meta_results), "--out", str(out)])
    assert run.exit_code == 0, run.output
    assert out.stat().st_size < 1_000_000  # the metrics themselves; the 100 MB field is gone
    summary = json.loads(out.read_text())
    assert summary["meta"] == LIDAR_ONLY_META
    assert summary["meta_dropped"] == {"count": 1, "keys": ["blob"]}
    assert "xxxxxxxx" not in out.read_text()
