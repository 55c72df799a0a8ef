"""nuScenes detection-results files: round trip, devkit compatibility, and every kind of bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import PredictionFormatError
from stridegen.core.transforms import yaw_to_quat
from stridegen.formats.detection_boxes import DetectionBoxes
from stridegen.formats.nuscenes_results import CLASS_ATTRIBUTES, load_results, results_dict, write_results
from stridegen.formats.results_json import LIDAR_ONLY_META

TOKENS = ["tok-a", "tok-b", "tok-c"]


def make_boxes(n: int = 7, seed: int = 0) -> DetectionBoxes:
    rng = np.random.default_rng(seed)
    velocity = rng.normal(0, 2, (n, 2))
    velocity[1] = np.nan
    names = rng.choice(["car", "pedestrian"], n)
    attributes = [rng.choice(["", CLASS_ATTRIBUTES[name][0]]) for name in names]  # "" or one of the class's own
    return DetectionBoxes(
        rng.choice(TOKENS[:2], n),
        rng.uniform(-50, 50, (n, 3)),
        rng.uniform(0.5, 4, (n, 3)),
        yaw_to_quat(rng.uniform(-3, 3, n)),
        velocity,
        names,
        rng.random(n),
        attributes,
    )


def good_file(tmp_path: Path) -> tuple[Path, dict]:
    path = write_results(tmp_path / "results.json", make_boxes(), sample_tokens=TOKENS)
    return path, json.loads(path.read_text())


def write_json(tmp_path: Path, data: dict | str, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_round_trip(tmp_path: Path) -> None:
    boxes = make_boxes()
    meta = {**LIDAR_ONLY_META, "use_camera": True}
    path = write_results(tmp_path / "r.json", boxes, meta=meta, sample_tokens=TOKENS)
    loaded = load_results(path, known_sample_tokens=TOKENS)
    assert loaded.sample_tokens == TOKENS
    assert loaded.meta == meta
    assert loaded.nan_velocity == 1
    order = np.argsort([TOKENS.index(t) for t in boxes.sample_token], kind="stable")  # grouped by TOKENS
    for name in ("translation", "size", "rotation", "detection_score"):
        np.testing.assert_array_equal(getattr(loaded.boxes, name), getattr(boxes, name)[order])
    np.testing.assert_array_equal(loaded.boxes.velocity, boxes.velocity[order])  # NaN stays NaN
    assert list(loaded.boxes.sample_token) == list(boxes.sample_token[order])
    assert results_dict(boxes, TOKENS)["tok-c"] == []


def test_devkit_reads_our_file_identically(tmp_path: Path) -> None:
    pytest.importorskip("nuscenes")
    from nuscenes.eval.common.loaders import load_prediction
    from nuscenes.eval.detection.data_classes import DetectionBox

    path, _ = good_file(tmp_path)
    theirs, _ = load_prediction(str(path), 500, DetectionBox)
    ours = load_results(path)
    assert theirs.sample_tokens == ours.sample_tokens
    theirs_all = theirs.all
    assert len(theirs_all) == len(ours.boxes)
    np.testing.assert_array_equal([b.translation for b in theirs_all], ours.boxes.translation)
    np.testing.assert_array_equal([b.detection_score for b in theirs_all], ours.boxes.detection_score)
    assert [b.attribute_name for b in theirs_all] == list(ours.boxes.attribute_name)


def _set_box(**fields):
    return lambda d: d["results"]["tok-a"][0].update(fields)


# The checks shared with tracking results (numbers, size, rotation, score, class, meta, box count) are tested
# for both readers in tests/formats/test_results_validation.py; these are detection's own.
@pytest.mark.parametrize(
    "mutate, message",
    [
        (_set_box(attribute_name="cycle.flying"), r"sample 'tok-a', box 0: field 'attribute_name' 'cycle.flying'"),
        (_set_box(attribute_name=None), r"field 'attribute_name' None is not '' or one of"),
        (
            _set_box(detection_name="pedestrian", attribute_name="vehicle.moving"),
            r"box 0: field 'attribute_name' 'vehicle.moving' is not '' or an attribute of 'pedestrian'",
        ),
        (
            _set_box(detection_name="car", attribute_name="cycle.with_rider"),
            r"'cycle.with_rider' is not '' or an attribute of 'car': \['vehicle.moving'",
        ),
        (lambda d: d["results"]["tok-a"][0].pop("attribute_name"), r"missing field\(s\) \['attribute_name'\]"),
        (lambda d: d["results"]["tok-a"].append(copy.deepcopy(d["results"]["tok-a"][0])), "duplicates box 0"),
        (_set_box(detection_score=-0.5), r"'detection_score' must be a number in \[0, 1\]"),
        (lambda d: d.__setitem__("results", []), "'results' must be an object"),
    ],
)
def test_bad_boxes_raise_naming_file_sample_and_field(tmp_path: Path, mutate, message: str) -> None:
    _, data = good_file(tmp_path)
    mutate(data)
    path = write_json(tmp_path, data)
    with pytest.raises(PredictionFormatError, match=message) as info:
        load_results(path, known_sample_tokens=TOKENS)
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}: ")


def test_attributes_of_each_class(tmp_path: Path) -> None:
    """ "" is valid for every class; a class's own attributes are valid for it; barrier and traffic_cone have none,
    so any attribute there is ignored (the devkit README), as CenterPoint-style writers emit for them."""
    _, data = good_file(tmp_path)
    box = data["results"]["tok-a"][0]
    rows = []
    for k, (name, attributes) in enumerate(CLASS_ATTRIBUTES.items()):
        for j, attribute in enumerate(("", *attributes) if attributes else ("", "cycle.with_rider")):
            rows.append(
                {**box, "translation": [float(k), float(j), 0.0], "detection_name": name, "attribute_name": attribute}
            )
    data["results"] = {"tok-a": rows}
    loaded = load_results(write_json(tmp_path, data, "attributes.json"))
    assert list(loaded.boxes.attribute_name) == [r["attribute_name"] for r in rows]
    assert set(CLASS_ATTRIBUTES) == set(loaded.boxes.detection_name)


def test_writer_refuses_a_meta_block_the_reader_would_reject(tmp_path: Path) -> None:
    with pytest.raises(PredictionFormatError, match=r"field 'meta' lacks \['use_camera'"):
        write_results(tmp_path / "r.json", make_boxes(), meta={"use_lidar": True}, sample_tokens=TOKENS)
    assert not (tmp_path / "r.json").exists()


def test_error_names_sample_and_box_index(tmp_path: Path) -> None:
    _, data = good_file(tmp_path)
    data["results"]["tok-b"][1]["velocity"] = [0.0]
    with pytest.raises(PredictionFormatError, match=r"sample 'tok-b', box 1: field 'velocity'"):
        load_results(write_json(tmp_path, data))


def test_unknown_and_missing_sample_tokens(tmp_path: Path) -> None:
    path, _ = good_file(tmp_path)
    with pytest.raises(PredictionFormatError, match="not in the ground truth"):
        load_results(path, known_sample_tokens=TOKENS[:2])
    with pytest.raises(PredictionFormatError, match="have no entry"):
        load_results(path, known_sample_tokens=[*TOKENS, "tok-d"])
    loaded = load_results(path, known_sample_tokens=[*TOKENS, "tok-d"], allow_missing_samples=True)
    assert len(loaded.boxes) == 7


def test_duplicate_sample_keys_rejected(tmp_path: Path) -> None:
    text = '{"meta": {}, "results": {"tok-a": [], "tok-a": []}}'  # rejected while parsing, before any check
    with pytest.raises(PredictionFormatError, match="duplicate key 'tok-a'"):
        load_results(write_json(tmp_path, text))


def test_too_many_boxes_per_sample(tmp_path: Path) -> None:
    _, data = good_file(tmp_path)
    box = data["results"]["tok-a"][0]
    many = []
    for i in range(501):
        b = copy.deepcopy(box)
        b["translation"] = [float(i), 0.0, 0.0]
        many.append(b)
    data["results"]["tok-a"] = many
    path = write_json(tmp_path, data)
    with pytest.raises(PredictionFormatError, match="501 boxes; at most 500"):
        load_results(path)
    assert len(load_results(path, max_boxes_per_sample=600).boxes) > 501


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(PredictionFormatError, match="does not exist"):
        load_results(tmp_path / "missing.json")
    with pytest.raises(PredictionFormatError, match="not valid JSON"):
        load_results(write_json(tmp_path, '{"meta": {}, "results": {'))
    with pytest.raises(PredictionFormatError, match="top level"):
        load_results(write_json(tmp_path, "[1, 2]"))


def test_writer_refuses_boxes_outside_token_list() -> None:
    with pytest.raises(PredictionFormatError, match="not among"):
        results_dict(make_boxes(), ["tok-a"])
