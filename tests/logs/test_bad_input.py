"""Broken logs raise typed errors that name the offending file. Every case mutates a copy in tmp_path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import (
    ConfigError,
    DuplicateTokenError,
    InvalidCalibrationError,
    InvalidPoseError,
    LogFormatError,
    MissingFileError,
    PointCloudSizeError,
    UnknownChannelError,
)
from stridegen.logs import open_log
from tests.shared_data import AV2_LOGS, missing_reason

AV2_LOG = AV2_LOGS / "adcf7d18-0510-35b0-a2fa-b4cea13a6d76"


@pytest.fixture()
def demo_copy(tmp_path: Path, nuscenes_demo: Path) -> Path:  # skips where ../shared/data/nuscenes-demo is absent
    root = tmp_path / "nuscenes"
    shutil.copytree(nuscenes_demo, root)
    return root


def _table(root: Path, name: str) -> Path:
    return root / "v1.0-demo" / f"{name}.json"


def _edit_table(root: Path, name: str, edit) -> str:
    """Apply ``edit`` to the first record of a table; returns that record's token."""
    path = _table(root, name)
    records = json.loads(path.read_text())
    edit(records[0])
    path.write_text(json.dumps(records))  # NaN is written as the JSON extension literal NaN
    return records[0]["token"]


def _frame(root: Path):
    return open_log(root).scenes()[0].frames[0]


def test_missing_table(demo_copy: Path) -> None:
    _table(demo_copy, "ego_pose").unlink()
    with pytest.raises(MissingFileError) as err:
        open_log(demo_copy)
    assert err.value.path.endswith("ego_pose.json") and "ego_pose.json" in str(err.value)


def test_missing_optional_map_is_fine(demo_copy: Path) -> None:
    _table(demo_copy, "map").unlink()
    assert len(_frame(demo_copy).annotations()) == 68


def test_unparsable_json(demo_copy: Path) -> None:
    path = _table(demo_copy, "sample_annotation")
    path.write_text(path.read_text()[:-200])
    with pytest.raises(LogFormatError, match="not valid JSON") as err:
        open_log(demo_copy)
    assert "sample_annotation.json" in str(err.value)


def test_table_of_wrong_shape(demo_copy: Path) -> None:
    _table(demo_copy, "scene").write_text(json.dumps({"token": "x"}))
    with pytest.raises(LogFormatError, match="JSON list") as err:
        open_log(demo_copy)
    assert "scene.json" in str(err.value)


def test_missing_lidar_file(demo_copy: Path) -> None:
    frame = _frame(demo_copy)
    path = frame.sensor("LIDAR_TOP").path
    path.unlink()
    with pytest.raises(MissingFileError) as err:
        frame.lidar()
    assert str(path) in str(err.value)


def test_missing_image_file(demo_copy: Path) -> None:
    frame = _frame(demo_copy)
    path = frame.sensor("CAM_BACK").path
    path.unlink()
    with pytest.raises(MissingFileError) as err:
        frame.image("CAM_BACK")
    assert str(path) in str(err.value)


def test_truncated_point_cloud(demo_copy: Path) -> None:
    frame = _frame(demo_copy)
    path = frame.sensor("LIDAR_TOP").path
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])
    with pytest.raises(PointCloudSizeError) as err:
        frame.lidar()
    assert str(path) in str(err.value) and str(len(data) - 7) in str(err.value)


def _scene_error(root: Path, error: type[Exception]) -> pytest.ExceptionInfo:
    """The reader opens; listing the scenes works; building the (only) scene raises ``error``."""
    reader = open_log(root)
    [(name, _)] = reader.scene_ids()
    with pytest.raises(error) as err:
        reader.scene(name)
    with pytest.raises(error):
        reader.scenes()
    return err


def test_nan_translation_in_ego_pose(demo_copy: Path) -> None:
    token = _edit_table(demo_copy, "ego_pose", lambda r: r["translation"].__setitem__(1, float("nan")))
    err = _scene_error(demo_copy, InvalidPoseError)
    assert "not finite" in str(err.value) and "ego_pose.json" in str(err.value) and token in str(err.value)


def test_non_unit_quaternion_in_calibrated_sensor(demo_copy: Path) -> None:
    token = _edit_table(demo_copy, "calibrated_sensor", lambda r: r.__setitem__("rotation", [1.0, 0.1, 0.0, 0.0]))
    err = _scene_error(demo_copy, InvalidPoseError)
    assert "unit norm" in str(err.value) and "calibrated_sensor.json" in str(err.value) and token in str(err.value)


def test_non_numeric_rotation(demo_copy: Path) -> None:
    token = _edit_table(demo_copy, "ego_pose", lambda r: r.__setitem__("rotation", [1.0, None, 0.0, 0.0]))
    err = _scene_error(demo_copy, InvalidPoseError)
    assert "ego_pose.json" in str(err.value) and token in str(err.value)
    _edit_table(demo_copy, "ego_pose", lambda r: r.pop("rotation"))
    err = _scene_error(demo_copy, InvalidPoseError)
    assert "4 values" in str(err.value) and token in str(err.value)


def test_bad_annotation_rotation_fails_like_a_bad_ego_pose(demo_copy: Path) -> None:
    token = _edit_table(demo_copy, "sample_annotation", lambda r: r.__setitem__("rotation", [2.0, 0.0, 0.0, 0.0]))
    frame = _frame(demo_copy)  # the scene builds; its annotations are the bad input
    with pytest.raises(InvalidPoseError, match="unit norm") as err:
        frame.annotations()
    assert "sample_annotation.json" in str(err.value) and token in str(err.value)


def _camera_calibration(root: Path) -> tuple[Path, list[dict], int]:
    path = _table(root, "calibrated_sensor")
    records = json.loads(path.read_text())
    return path, records, next(i for i, r in enumerate(records) if r.get("camera_intrinsic"))


@pytest.mark.parametrize(
    ("value", "message"),
    [(0.0, "must be positive"), (float("nan"), "not finite"), (None, "without camera_intrinsic")],
)
def test_bad_focal_length_is_a_scene_error(demo_copy: Path, value: float | None, message: str) -> None:
    path, records, i = _camera_calibration(demo_copy)
    if value is None:
        records[i]["camera_intrinsic"] = []
    else:
        records[i]["camera_intrinsic"][0][0] = value
    path.write_text(json.dumps(records))
    err = _scene_error(demo_copy, InvalidCalibrationError)
    assert (
        message in str(err.value)
        and records[i]["token"] in str(err.value)
        and "calibrated_sensor.json" in str(err.value)
    )


def test_conflicting_duplicate_tokens(demo_copy: Path) -> None:
    path = _table(demo_copy, "ego_pose")
    records = json.loads(path.read_text())
    used = json.loads(_table(demo_copy, "sample_data").read_text())[0]["ego_pose_token"]
    k = next(i for i, r in enumerate(records) if r["token"] == used)
    twin = {**records[k], "translation": [0.0, 0.0, 0.0]}
    path.write_text(json.dumps([*records, dict(records[k]), twin]))  # an identical copy is harmless; a twin is not
    err = _scene_error(demo_copy, DuplicateTokenError)
    assert (
        used in str(err.value)
        and "ego_pose.json" in str(err.value)
        and f"rows [{k}, {len(records) + 1}]" in str(err.value)
    )
    path.write_text(json.dumps([*records, dict(records[k])]))
    assert open_log(demo_copy).scenes()[0].frames


def test_empty_lidar_file_is_a_size_error(demo_copy: Path) -> None:
    frame = _frame(demo_copy)
    path = frame.sensor("LIDAR_TOP").path
    path.write_bytes(b"")
    with pytest.raises(PointCloudSizeError, match="0 bytes") as err:
        frame.lidar()
    assert str(path) in str(err.value)


def test_dangling_token(demo_copy: Path) -> None:
    _edit_table(demo_copy, "sample_data", lambda r: r.__setitem__("calibrated_sensor_token", "nope"))
    with pytest.raises(LogFormatError, match="nope") as err:
        open_log(demo_copy).scenes()
    assert "calibrated_sensor.json" in str(err.value)


def test_unknown_channel(demo_copy: Path) -> None:
    frame = _frame(demo_copy)
    with pytest.raises(UnknownChannelError, match="CAM_NOPE") as err:
        frame.sensor("CAM_NOPE")
    assert str(demo_copy) in str(err.value)
    with pytest.raises(UnknownChannelError):
        frame.image("LIDAR_TOP")  # not a camera


def test_truncated_jpeg(demo_copy: Path) -> None:
    frame = _frame(demo_copy)
    path = frame.sensor("CAM_FRONT").path
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(LogFormatError) as err:
        frame.image("CAM_FRONT")
    assert str(path) in str(err.value)


def test_unknown_layout_and_ambiguous_version(tmp_path: Path, demo_copy: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(LogFormatError, match=r"scene\.json.*annotations\.feather") as err:
        open_log(tmp_path / "empty")
    assert "empty" in str(err.value)
    with pytest.raises(MissingFileError):
        open_log(tmp_path / "does-not-exist")
    shutil.copytree(demo_copy / "v1.0-demo", demo_copy / "v1.0-other")
    with pytest.raises(LogFormatError, match=r"v1\.0-demo.*v1\.0-other"):
        open_log(demo_copy)
    assert open_log(demo_copy, version="v1.0-other").version == "v1.0-other"
    with pytest.raises(MissingFileError, match=r"v1\.0-nope"):
        open_log(demo_copy, version="v1.0-nope")
    with pytest.raises(ConfigError):
        open_log(demo_copy, format="kitti")


# ---------------------------------------------------------------------------------------------- AV2


@pytest.fixture()
def av2_copy(tmp_path: Path) -> Path:
    if not AV2_LOG.is_dir():
        pytest.skip(missing_reason(AV2_LOG))
    root = tmp_path / AV2_LOG.name
    shutil.copytree(AV2_LOG, root, ignore=shutil.ignore_patterns("map"))
    return root


def test_av2_missing_pose_file(av2_copy: Path) -> None:
    (av2_copy / "city_SE3_egovehicle.feather").unlink()
    with pytest.raises(MissingFileError) as err:
        open_log(av2_copy).scenes()
    assert "city_SE3_egovehicle.feather" in str(err.value)


def test_av2_corrupt_annotations(av2_copy: Path) -> None:
    path = av2_copy / "annotations.feather"
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(LogFormatError, match="not a readable feather file") as err:
        open_log(av2_copy).scenes()
    assert str(path) in str(err.value)


def test_av2_missing_column_and_bad_quaternion(av2_copy: Path) -> None:
    pd = pytest.importorskip("pandas")
    path = av2_copy / "annotations.feather"
    df = pd.read_feather(path)
    df.drop(columns=["num_interior_pts"]).to_feather(path)
    with pytest.raises(LogFormatError, match="num_interior_pts") as err:
        open_log(av2_copy).scenes()
    assert "annotations.feather" in str(err.value)
    df.loc[3, "qw"] = 2.0
    df.to_feather(path)
    with pytest.raises(InvalidPoseError, match="unit norm") as err:
        open_log(av2_copy).scenes()
    assert "annotations.feather" in str(err.value) and str(df.loc[3, "track_uuid"]) in str(err.value)


def test_av2_truncated_lidar(av2_copy: Path) -> None:
    frame = next(f for f in open_log(av2_copy).scenes()[0].frames if f.lidar_channels)
    path = frame.sensor("LIDAR").path
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(LogFormatError) as err:
        frame.lidar()
    assert str(path) in str(err.value)
    assert np.isfinite(frame.T_global_from_ego).all()
