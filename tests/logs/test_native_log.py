"""The stridegen-log format (stridegen/logs/native.py, native_writer.py, docs/log-format.md): round trip of a
synthetic log, a converter written by hand in a few lines, and one typed, located error per kind of mistake."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from stridegen.core.errors import (
    ConfigError,
    InvalidPoseError,
    LogFormatError,
    MissingFileError,
    PointCloudSizeError,
    UnknownChannelError,
)
from stridegen.logs import open_log
from stridegen.logs.native import is_native_log, open_native
from stridegen.logs.native_json import (
    InvalidValueError,
    TimestampError,
    UnknownModalityError,
    UnsafeNameError,
    UnsupportedVersionError,
)
from stridegen.logs.native_writer import write_native_log

BUILD_OVERRIDES = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"]
# A quaternion -> rotation matrix -> quaternion -> matrix round trip moves entries by at most a few float64 ulps.
POSE_ATOL = 1e-15


# ---------------------------------------------------------------------------------------------- round trip


@pytest.fixture(scope="module")
def synthetic_pair(two_scene_log: Path, tmp_path_factory) -> tuple[Path, Path]:
    """(the session's two-scene synthetic log (tests/conftest.py), its copy in the native format)."""
    root = tmp_path_factory.mktemp("native")
    calls: list[tuple[str, int, int]] = []
    summary = write_native_log(open_log(two_scene_log), root / "native", progress=lambda *a: calls.append(a))
    assert summary.scenes == ["scene-0000", "scene-0001"] and summary.frames == 32
    assert calls[-1] == ("scene-0001", 16, 16) and len(calls) == 32
    return two_scene_log, root / "native"


def _assert_same_annotations(a, b) -> None:
    ba, bb = a.boxes, b.boxes
    for name in ("center", "size_lwh", "yaw", "score"):
        np.testing.assert_array_equal(getattr(ba, name), getattr(bb, name), err_msg=name)
    np.testing.assert_array_equal(ba.velocity, bb.velocity)  # NaN == NaN here
    np.testing.assert_array_equal(ba.extras["rotation_global"], bb.extras["rotation_global"])
    assert ba.frame == bb.frame == "global"
    for name in ("label", "track_id"):
        assert getattr(ba, name).tolist() == getattr(bb, name).tolist(), name
    for name in ("category", "token", "attribute"):
        assert getattr(a, name).tolist() == getattr(b, name).tolist(), name
    for name in ("num_lidar_pts", "num_radar_pts", "visibility"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.slow
def test_round_trip_reads_the_same_log(synthetic_pair) -> None:
    src, dst = synthetic_pair
    assert is_native_log(dst) and is_native_log(dst / "stridegen-log.json") and not is_native_log(src)
    a, b = open_log(src), open_log(dst, format="stridegen-log")
    assert b.format_name == "stridegen-log"
    pose_diff = 0.0
    boxes = 0
    for sa, sb in zip(a.scenes(), b.scenes(), strict=True):
        assert (sa.name, sa.token, sa.description, sa.log_name) == (sb.name, sb.token, sb.description, sb.log_name)
        assert len(sa) == len(sb) == 16
        for fa, fb in zip(sa.frames, sb.frames, strict=True):
            assert (fa.token, fa.scene_token, fa.index, fa.timestamp_us) == (
                fb.token,
                fb.scene_token,
                fb.index,
                fb.timestamp_us,
            )
            assert list(fa.sensors) == list(fb.sensors)  # channel order kept (the build's camera order)
            pose_diff = max(pose_diff, float(np.abs(fa.T_global_from_ego - fb.T_global_from_ego).max()))
            for channel, xa in fa.sensors.items():
                xb = fb.sensors[channel]
                assert (xa.token, xa.timestamp_us, xa.is_key_frame) == (xb.token, xb.timestamp_us, xb.is_key_frame)
                ca, cb = xa.calibration, xb.calibration
                assert (ca.channel, ca.modality, ca.width, ca.height) == (cb.channel, cb.modality, cb.width, cb.height)
                if ca.is_camera:
                    np.testing.assert_array_equal(ca.intrinsic, cb.intrinsic)
                    assert fa.image_bytes(channel) == fb.image_bytes(channel)
                else:
                    pa, pb = fa.lidar(channel), fb.lidar(channel)
                    assert pb.dtype == np.float32 and np.array_equal(pa, pb)
                for ta, tb in (
                    (xa.T_global_from_ego, xb.T_global_from_ego),
                    (ca.T_ego_from_sensor, cb.T_ego_from_sensor),
                ):
                    pose_diff = max(pose_diff, float(np.abs(ta - tb).max()))
            ann_a, ann_b = fa.annotations(), fb.annotations()
            _assert_same_annotations(ann_a, ann_b)
            boxes += len(ann_b)
            assert fb.sweeps == {c: [] for c in fb.sensors}
    assert boxes == 330
    assert pose_diff <= POSE_ATOL, pose_diff


def _qa_rows(dataset: Path) -> list[tuple[str, str, str, str, str]]:
    from stridegen.shards.reader import Dataset

    rows = []
    ds = Dataset(dataset)
    try:
        for view in ds:
            qa = view.qa
            assert qa is not None
            columns = (qa.question_id, qa.question, qa.answer, qa.gt_value)
            rows += [(view.name, str(i), str(q), str(a), repr(float(v))) for i, q, a, v in zip(*columns, strict=True)]
    finally:
        ds.close()
    return rows


@pytest.mark.slow
def test_round_trip_builds_the_same_questions(synthetic_pair, tmp_path: Path) -> None:
    """Both logs give the same QA table, row for row (id, question, answer, value). Poses and calibrations come
    back within 2.2e-16 (quaternion round trip); in the shards that moves only the camera extrinsics and the mask
    statistics computed from them (projected boxes, depth, IoU, coverage: <= 3e-13), never a question."""
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config

    src, dst = synthetic_pair
    built = {}
    for name, log, fmt in (("nuscenes", src, "nuscenes"), ("native", dst, "stridegen-log")):
        cfg = load_build_config(None, [*BUILD_OVERRIDES, f"log.format={fmt}"])
        result = run_build(log, tmp_path / name, cfg)
        assert result.ok, [r.reason for r in result.failed]
        built[name] = _qa_rows(tmp_path / name)
    assert len(built["nuscenes"]) > 50
    assert built["native"] == built["nuscenes"]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["nuscenes", "av2"])
def test_round_trip_of_real_logs(which: str, request, tmp_path: Path) -> None:
    """nuScenes demo (radar channels, sweeps) and AV2 logs (LiDAR in the ego frame, frames without a sweep)."""
    src = request.getfixturevalue("nuscenes_demo" if which == "nuscenes" else "av2_logs")
    a = open_log(src, which)
    summary = write_native_log(a, tmp_path / "copy", sweeps=True)
    b = open_log(tmp_path / "copy", "stridegen-log")
    assert summary.frames == sum(len(s) for s in a.scenes()) == sum(len(s) for s in b.scenes())
    for sa, sb in zip(a.scenes(), b.scenes(), strict=True):
        for fa, fb in zip(sa.frames, sb.frames, strict=True):
            assert (fa.token, fa.timestamp_us, list(fa.sensors)) == (fb.token, fb.timestamp_us, list(fb.sensors))
            for channel, xa in fa.sensors.items():
                xb = fb.sensors[channel]
                assert (xa.token, xa.timestamp_us, xa.calibration.modality) == (
                    xb.token,
                    xb.timestamp_us,
                    xb.calibration.modality,
                )
                np.testing.assert_allclose(xa.T_global_from_ego, xb.T_global_from_ego, rtol=0, atol=1e-12)
                if xa.calibration.is_camera:
                    assert fa.image_bytes(channel) == fb.image_bytes(channel)
                else:
                    assert np.array_equal(a.load_points(xa), b.load_points(xb))
                sweeps_a, sweeps_b = fa.sweeps.get(channel, []), fb.sweeps.get(channel, [])
                assert [(s.token, s.timestamp_us) for s in sweeps_a] == [(s.token, s.timestamp_us) for s in sweeps_b]
            _assert_same_annotations(fa.annotations(), fb.annotations())


@pytest.mark.slow
def test_writer_refuses_a_full_folder_and_picks_scenes(synthetic_pair, tmp_path: Path) -> None:
    from stridegen.logs.synthetic import OutputExistsError

    src, dst = synthetic_pair
    reader = open_log(src)
    with pytest.raises(OutputExistsError):
        write_native_log(reader, dst)
    with pytest.raises(ConfigError, match="holds the source log"):
        write_native_log(reader, src.parent, overwrite=True)
    token = reader.scenes()[1].token
    summary = write_native_log(reader, tmp_path / "one", scenes=[token])
    assert [s.name for s in open_native(tmp_path / "one").scenes()] == ["scene-0001"] == summary.scenes
    with pytest.raises(LogFormatError, match="no scene named 'nope'"):
        write_native_log(reader, tmp_path / "two", scenes=["nope"])
    assert not (tmp_path / "two").exists()


def test_writer_refuses_what_the_format_refuses(tmp_path: Path) -> None:
    reader = open_native(write_tiny_log(tmp_path / "mylog"))
    frames = reader.scenes()[0].frames
    frames[2].timestamp_us = frames[1].timestamp_us  # a source log with two frames at one time
    _expect(TimestampError, lambda: write_native_log(reader, tmp_path / "out"), "mylog", "frame drive-1_", "not after")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp-*"))
    frames[2].timestamp_us = frames[1].timestamp_us + 1
    frames[2].sensors["CAM_FRONT"] = replace(frames[2].sensors["CAM_FRONT"], timestamp_us=frames[0].timestamp_us)
    # Caught by reading the copy back: the camera's own samples go back in time.
    _expect(TimestampError, lambda: write_native_log(reader, tmp_path / "out"), "frames.jsonl", "line 3", "CAM_FRONT")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp-*"))


@pytest.mark.slow
def test_convert_command(synthetic_pair, tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from stridegen.cli.convert import convert

    app = typer.Typer()
    app.command()(convert)
    runner = CliRunner()
    src, _ = synthetic_pair
    res = runner.invoke(app, [str(src), "--out", str(tmp_path / "c"), "--scene", "scene-0000"])
    assert res.exit_code == 0, res.output
    assert "frames" in res.output and "16" in res.output
    assert [s.name for s in open_log(tmp_path / "c", format="stridegen-log").scenes()] == ["scene-0000"]
    res = runner.invoke(app, [str(src), "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and "is not empty" in " ".join(res.output.split())  # bad usage (docs/cli.md)


# ---------------------------------------------------------------------------------------------- a converter


def write_tiny_log(root: Path) -> Path:
    """The converter of docs/log-format.md: one camera, one LiDAR, 3 frames at 2 Hz, a car and a pedestrian."""
    scene = root / "scenes" / "drive-1"
    for folder in ("cam", "lidar", "boxes"):
        (scene / folder).mkdir(parents=True)
    camera = {"K": [[200.0, 0.0, 160.0], [0.0, 200.0, 90.0], [0.0, 0.0, 1.0]], "width": 320, "height": 180}
    manifest = {
        "format": "stridegen-log",
        "version": 1,
        "sensors": [  # camera looking forward: its z axis is the ego x axis
            {"channel": "CAM_FRONT", "modality": "camera", "camera": camera,
             "T_ego_from_sensor": {"rotation_wxyz": [0.5, -0.5, 0.5, -0.5], "translation_m": [1.5, 0.0, 1.6]}},
            {"channel": "LIDAR_TOP", "modality": "lidar",
             "T_ego_from_sensor": {"rotation_wxyz": [1.0, 0.0, 0.0, 0.0], "translation_m": [0.0, 0.0, 1.8]}},
        ],
        "scenes": [{"name": "drive-1", "description": "three frames written by hand"}],
    }  # fmt: skip
    (root / "stridegen-log.json").write_text(json.dumps(manifest))
    with open(scene / "frames.jsonl", "w") as frames:
        for i in range(3):
            cv2.imwrite(str(scene / f"cam/{i}.jpg"), np.full((180, 320, 3), 60 * i, np.uint8))
            np.save(scene / f"lidar/{i}.npy", np.random.default_rng(i).normal(size=(100, 4)).astype(np.float32))
            boxes = [
                {"instance_id": "car-1", "category": "vehicle.car", "center_m": [20.0 + i, 0.0, 0.8],
                 "size_m": {"length": 4.5, "width": 1.9, "height": 1.6}, "rotation_wxyz": [1.0, 0.0, 0.0, 0.0]},
                {"instance_id": "ped-1", "category": "human.pedestrian.adult", "center_m": [12.0, 3.0, 0.9],
                 "size_m": {"length": 0.6, "width": 0.6, "height": 1.8}, "rotation_wxyz": [0.7071, 0.0, 0.0, 0.7071]},
            ]  # fmt: skip
            (scene / f"boxes/{i}.json").write_text(json.dumps(boxes))
            ego_pose = {"rotation_wxyz": [1.0, 0.0, 0.0, 0.0], "translation_m": [2.5 * i, 0.0, 0.0]}  # 5 m/s
            sensors = {"CAM_FRONT": {"file": f"cam/{i}.jpg"}, "LIDAR_TOP": {"file": f"lidar/{i}.npy"}}
            frame = {"timestamp_us": 1_700_000_000_000_000 + 500_000 * i, "ego_pose": ego_pose, "sensors": sensors}
            frames.write(json.dumps({**frame, "boxes": f"boxes/{i}.json"}) + "\n")
    return root


def test_a_converter_in_a_few_lines(tmp_path: Path) -> None:
    root = write_tiny_log(tmp_path / "mylog")
    from stridegen.logs import detect_format

    assert detect_format(root) == "stridegen-log"  # found without --format
    assert type(open_log(root)).__name__ == type(open_native(root)).__name__
    (scene,) = open_native(root).scenes()
    assert (scene.name, scene.token, scene.description, len(scene)) == (
        "drive-1",
        "drive-1",
        "three frames written by hand",
        3,
    )
    frame = scene.frames[1]
    assert frame.token == "drive-1_1700000000500000" and frame.timestamp_us == 1_700_000_000_500_000
    assert frame.camera_channels == ["CAM_FRONT"] and frame.lidar_channels == ["LIDAR_TOP"]
    np.testing.assert_array_equal(frame.T_global_from_ego[:3, 3], [2.5, 0.0, 0.0])
    assert frame.image("CAM_FRONT").shape == (180, 320, 3)
    np.testing.assert_array_equal(frame.lidar(), np.random.default_rng(1).normal(size=(100, 4)).astype(np.float32))
    ann = frame.annotations()
    assert ann.boxes.label.tolist() == ["car", "pedestrian"]  # from the category (nuScenes detection classes)
    assert ann.boxes.track_id.tolist() == ["car-1", "ped-1"]
    assert ann.token.tolist() == ["drive-1_1700000000500000_car-1", "drive-1_1700000000500000_ped-1"]
    np.testing.assert_array_equal(ann.boxes.size_lwh[0], [4.5, 1.9, 1.6])
    np.testing.assert_allclose(ann.boxes.yaw, [0.0, np.pi / 2], atol=1e-12)
    # Left-out velocities follow the nuScenes rule: the car moves 1 m per 0.5 s, the pedestrian stands.
    np.testing.assert_allclose(ann.boxes.velocity, [[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]], atol=1e-12)
    # Conventions: the car centre (18.5 m ahead of the ego at frame 1, 17 m ahead of the camera, 0.8 m below it)
    # projects onto the image's vertical centre line.
    cam = frame.sensor("CAM_FRONT")
    centre_cam = np.linalg.inv(cam.T_global_from_sensor) @ np.append(ann.boxes.center[0], 1.0)
    uv = cam.calibration.intrinsic @ centre_cam[:3] / centre_cam[2]
    np.testing.assert_allclose(uv[:2], [160.0, 90.0 + 200.0 * 0.8 / 17.0], atol=1e-9)


def test_sweeps_inline_boxes_and_explicit_values(tmp_path: Path) -> None:
    root = write_tiny_log(tmp_path / "mylog")
    scene = root / "scenes" / "drive-1"
    np.save(scene / "lidar/sweep.npy", np.ones((5, 3), np.float32))
    pose = {"rotation_wxyz": [1.0, 0.0, 0.0, 0.0], "translation_m": [2.4, 0.0, 0.0]}
    box = {"instance_id": "x", "category": "my.forklift", "center_m": [1.0, 2.0, 0.5], "label": "",
           "size_m": {"length": 3.0, "width": 1.2, "height": 2.0}, "rotation_wxyz": [1.0, 0.0, 0.0, 0.0],
           "velocity_mps": [0.5, None], "num_lidar_pts": 7, "visibility": 3, "attribute": "vehicle.moving",
           "token": "ann-x"}  # fmt: skip

    def edit(frame: dict[str, Any]) -> None:
        frame["sensors"]["LIDAR_TOP"]["sweeps"] = [
            {"file": "lidar/sweep.npy", "timestamp_us": frame["timestamp_us"] - 50_000, "ego_pose": pose}
        ]
        frame["sensors"]["CAM_FRONT"].update(timestamp_us=frame["timestamp_us"] + 20_000, token="cam-1")
        frame["boxes"] = [box]  # fmt: skip

    _edit_frame(root, 2, edit)
    frame = open_native(root).scenes()[0].frames[1]
    (sweep,) = frame.sweeps["LIDAR_TOP"]
    assert sweep.timestamp_us == frame.timestamp_us - 50_000 and not sweep.is_key_frame
    np.testing.assert_array_equal(sweep.T_global_from_ego[:3, 3], [2.4, 0.0, 0.0])
    assert [p.shape for p, _ in frame.lidar_sweeps(2)] == [(100, 4), (5, 3)]
    assert frame.sensor("CAM_FRONT").timestamp_us == frame.timestamp_us + 20_000
    assert frame.sensor("CAM_FRONT").token == "cam-1"
    ann = frame.annotations()
    assert (ann.boxes.label.tolist(), ann.category.tolist(), ann.token.tolist()) == ([""], ["my.forklift"], ["ann-x"])
    np.testing.assert_array_equal(ann.boxes.velocity, [[0.5, np.nan, 0.0]])
    assert (ann.num_lidar_pts.tolist(), ann.visibility.tolist(), ann.attribute.tolist()) == (
        [7],
        [3],
        ["vehicle.moving"],
    )
    assert len(open_native(root).scenes()[0].frames[2].annotations()) == 2
    # The writer copies sweeps on request, and reads back the same values.
    write_native_log(open_native(root), tmp_path / "copy", sweeps=True)
    copy = open_native(tmp_path / "copy").scenes()[0].frames[1]
    assert [s.timestamp_us for s in copy.sweeps["LIDAR_TOP"]] == [sweep.timestamp_us]
    _assert_same_annotations(ann, copy.annotations())
    assert copy.image_bytes("CAM_FRONT") == frame.image_bytes("CAM_FRONT")


def test_checked_and_fast_box_parsing_agree(tiny: Path, monkeypatch) -> None:
    """A key the fast pass does not expect (an x_ key inside size_m) sends a frame through the checked, box-by-box
    pass: the same boxes come out."""
    import stridegen.logs.native_boxes as native

    checked_calls = []
    checked_pass = native._box_columns_checked
    monkeypatch.setattr(native, "_box_columns_checked", lambda *a: checked_calls.append(1) or checked_pass(*a))
    fast = open_native(tiny).scenes()[0].frames[1].annotations()
    assert not checked_calls  # three valid frames: the fast pass alone
    _edit_box(tiny, 1, 0, lambda b: b["size_m"].update(x_source="lidar fit"))
    _edit_box(tiny, 1, 1, lambda b: b.update(velocity_mps=[0.25, None, 0.0], num_lidar_pts=3, x_id=7))
    frame = open_native(tiny).scenes()[0].frames[1]
    checked = frame.reader.load_annotations(frame)  # the reader's own (writable) copy, edited below
    assert len(checked_calls) == 1  # frame 1 only
    np.testing.assert_array_equal(checked.boxes.velocity[1], [0.25, np.nan, 0.0])
    assert checked.num_lidar_pts.tolist() == [0, 3]
    checked.boxes.velocity[1] = fast.boxes.velocity[1]
    checked.num_lidar_pts[1] = 0
    _assert_same_annotations(fast, checked)


# ---------------------------------------------------------------------------------------------- bad input


def _edit_manifest(root: Path, edit) -> None:
    path = root / "stridegen-log.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))  # NaN is written as the JSON extension literal NaN


def _edit_frame(root: Path, line: int, edit) -> None:
    """Apply ``edit`` to the frame on ``line`` (1-based) of drive-1's frames.jsonl."""
    path = root / "scenes" / "drive-1" / "frames.jsonl"
    lines = path.read_text().splitlines()
    frame = json.loads(lines[line - 1])
    edit(frame)
    lines[line - 1] = json.dumps(frame)
    path.write_text("\n".join(lines) + "\n")


def _edit_box(root: Path, index: int, row: int, edit) -> None:
    path = root / "scenes" / "drive-1" / "boxes" / f"{index}.json"
    boxes = json.loads(path.read_text())
    edit(boxes[row])
    path.write_text(json.dumps(boxes))


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    return write_tiny_log(tmp_path / "mylog")


def _expect(cls: type[Exception], fn, file: str, row: str, reason: str) -> LogFormatError:
    with pytest.raises(cls) as info:
        fn()
    err = info.value
    assert isinstance(err, LogFormatError)
    message = str(err)
    assert file in message and row in message and reason in message, message
    return err


def _open(root: Path):
    return lambda: open_native(root)


def _frames(root: Path):
    """Frame errors are raised when the scene is read (one broken scene does not stop the others)."""
    return lambda: open_native(root).scenes()


def _annotations(root: Path, index: int = 1):
    return lambda: open_native(root).scenes()[0].frames[index].annotations()


def test_quaternion_not_unit(tiny: Path) -> None:
    _edit_frame(tiny, 2, lambda f: f["ego_pose"].update(rotation_wxyz=[1.0, 0.0, 0.0, 0.5]))
    _expect(InvalidPoseError, _frames(tiny), "frames.jsonl", "line 2, ego_pose.rotation_wxyz", "norm 1.118034")


def test_box_quaternion_not_unit(tiny: Path) -> None:
    _edit_box(tiny, 1, 1, lambda b: b.update(rotation_wxyz=[0.0, 0.0, 0.0, 0.0]))
    _expect(InvalidPoseError, _annotations(tiny), "boxes/1.json", "box 1, rotation_wxyz", "unit norm")


def test_quaternion_with_w_last_key(tiny: Path) -> None:
    _edit_box(tiny, 1, 0, lambda b: b.update(rotation_xyzw=b.pop("rotation_wxyz")))
    _expect(InvalidValueError, _annotations(tiny), "boxes/1.json", "box 0", "unknown key(s) ['rotation_xyzw']")


def test_nan_focal_length(tiny: Path) -> None:
    _edit_manifest(tiny, lambda m: m["sensors"][0]["camera"]["K"][0].__setitem__(0, float("nan")))
    _expect(InvalidValueError, _open(tiny), "stridegen-log.json", "sensors[0], camera.K[0]", "non-finite")


def test_zero_focal_length(tiny: Path) -> None:
    _edit_manifest(tiny, lambda m: m["sensors"][0]["camera"]["K"][1].__setitem__(1, 0.0))
    _expect(InvalidValueError, _open(tiny), "stridegen-log.json", "sensors[0], camera.K", "fy=0.0 must be positive")


def test_negative_size(tiny: Path) -> None:
    _edit_box(tiny, 1, 0, lambda b: b["size_m"].update(width=-1.9))
    _expect(InvalidValueError, _annotations(tiny), "boxes/1.json", "box 0, size_m.width", "positive")


def test_size_as_a_list_is_refused(tiny: Path) -> None:
    """[w, l, h] vs [l, w, h]: the order mistake cannot happen silently, sizes are named."""
    _edit_box(tiny, 1, 0, lambda b: b.update(size_m=[1.9, 4.5, 1.6]))
    _expect(InvalidValueError, _annotations(tiny), "boxes/1.json", "box 0, size_m", "must be a JSON object")


def test_nan_velocity_is_refused(tiny: Path) -> None:
    _edit_box(tiny, 0, 1, lambda b: b.update(velocity_mps=[float("nan"), 0.0]))
    _expect(InvalidValueError, _annotations(tiny, 0), "boxes/0.json", "box 1, velocity_mps", "write null")


def test_nanosecond_timestamps(tiny: Path) -> None:
    _edit_frame(tiny, 1, lambda f: f.update(timestamp_us=f["timestamp_us"] * 1000))
    _expect(TimestampError, _frames(tiny), "frames.jsonl", "line 1, timestamp_us", "looks like nanoseconds")


def test_decreasing_timestamps(tiny: Path) -> None:
    _edit_frame(tiny, 3, lambda f: f.update(timestamp_us=f["timestamp_us"] - 2_000_000))
    _expect(TimestampError, _frames(tiny), "frames.jsonl", "line 3, timestamp_us", "of line 2: not in time order")


def test_duplicate_timestamps(tiny: Path) -> None:
    _edit_frame(tiny, 3, lambda f: f.update(timestamp_us=f["timestamp_us"] - 500_000))
    _expect(
        TimestampError,
        _frames(tiny),
        "frames.jsonl",
        "line 3, timestamp_us",
        "duplicates the frame timestamp of line 2",
    )


def test_sensor_timestamp_in_seconds(tiny: Path) -> None:
    _edit_frame(tiny, 2, lambda f: f["sensors"]["CAM_FRONT"].update(timestamp_us=1_700_000_000))
    _expect(TimestampError, _frames(tiny), "frames.jsonl", "line 2, sensors.CAM_FRONT.timestamp_us", "unit or offset")


def test_float_timestamp(tiny: Path) -> None:
    _edit_frame(tiny, 2, lambda f: f.update(timestamp_us=1.7e15))
    _expect(InvalidValueError, _frames(tiny), "frames.jsonl", "line 2, timestamp_us", "must be an integer")


def test_unknown_modality(tiny: Path) -> None:
    _edit_manifest(tiny, lambda m: m["sensors"][1].update(modality="thermal"))
    _expect(UnknownModalityError, _open(tiny), "stridegen-log.json", "sensors[1], modality", "'thermal'")


def test_unknown_channel(tiny: Path) -> None:
    _edit_frame(tiny, 2, lambda f: f["sensors"].update(CAM_BACK=f["sensors"]["CAM_FRONT"]))
    _expect(UnknownChannelError, _frames(tiny), "frames.jsonl", "line 2, sensors.CAM_BACK", "not among the sensors")


def test_bad_scene_name(tiny: Path) -> None:
    _edit_manifest(tiny, lambda m: m["scenes"][0].update(name="../drive 1"))
    _expect(UnsafeNameError, _open(tiny), "stridegen-log.json", "scenes[0], name", "not a safe folder name")


def test_missing_file(tiny: Path) -> None:
    (tiny / "scenes" / "drive-1" / "cam" / "1.jpg").unlink()
    err = _expect(MissingFileError, _frames(tiny), "frames.jsonl", "line 2, sensors.CAM_FRONT.file", "missing")
    assert err.path.endswith("cam/1.jpg")


def test_missing_box_file(tiny: Path) -> None:
    (tiny / "scenes" / "drive-1" / "boxes" / "2.json").unlink()
    err = _expect(MissingFileError, _frames(tiny), "frames.jsonl", "line 3, boxes", "missing")
    assert err.path.endswith("boxes/2.json")


def test_path_outside_the_scene(tiny: Path) -> None:
    _edit_frame(tiny, 1, lambda f: f["sensors"]["CAM_FRONT"].update(file="../../../etc/passwd.jpg"))
    _expect(InvalidValueError, _frames(tiny), "frames.jsonl", "line 1, sensors.CAM_FRONT.file", "no '..'")


def test_nuscenes_pcd_bin_is_refused(tiny: Path) -> None:
    (tiny / "scenes" / "drive-1" / "lidar" / "0.pcd.bin").write_bytes(np.zeros(10, np.float32).tobytes())
    _edit_frame(tiny, 1, lambda f: f["sensors"]["LIDAR_TOP"].update(file="lidar/0.pcd.bin"))
    _expect(
        InvalidValueError, _frames(tiny), "frames.jsonl", "line 1, sensors.LIDAR_TOP.file", "write the points as .npy"
    )


def test_bad_point_files(tiny: Path) -> None:
    lidar = tiny / "scenes" / "drive-1" / "lidar"
    (lidar / "0.bin").write_bytes(np.zeros(10, np.float32).tobytes())  # 40 bytes: not whole points of 16 bytes
    _edit_frame(tiny, 1, lambda f: f["sensors"]["LIDAR_TOP"].update(file="lidar/0.bin"))
    frames = open_native(tiny).scenes()[0].frames
    _expect(PointCloudSizeError, frames[0].lidar, "0.bin", "size 40 bytes", "multiple of 16")
    points = np.zeros((4, 4), np.float32)
    points[2, 1] = np.nan
    np.save(lidar / "1.npy", points)
    _expect(InvalidValueError, frames[1].lidar, "1.npy", "point 2", "not finite")
    np.save(lidar / "2.npy", np.zeros((4, 2), np.float32))
    _expect(InvalidValueError, frames[2].lidar, "2.npy", "shape (4, 2)", "[N, C >= 3]")


def test_label_must_be_a_detection_class(tiny: Path) -> None:
    _edit_box(tiny, 1, 0, lambda b: b.update(label="vehicle"))
    _expect(InvalidValueError, _annotations(tiny), "boxes/1.json", "box 0, label", "not '' or a detection class")


def test_duplicate_instance_in_a_frame(tiny: Path) -> None:
    _edit_box(tiny, 1, 1, lambda b: b.update(instance_id="car-1"))
    _expect(InvalidValueError, _annotations(tiny), "boxes/1.json", "box 1, instance_id", "two boxes")


def test_version_2_is_refused(tiny: Path) -> None:
    _edit_manifest(tiny, lambda m: m.update(version=2, new_feature={}))
    _expect(UnsupportedVersionError, _open(tiny), "stridegen-log.json", "version", "version 2 is newer")
    _expect(
        UnsupportedVersionError,
        lambda: open_log(tiny, format="stridegen-log"),
        "stridegen-log.json",
        "version",
        "reads version 1",
    )


def test_wrong_format_and_version_argument(tiny: Path) -> None:
    with pytest.raises(ConfigError, match="version 1"):
        open_native(tiny, version="2")
    assert open_native(tiny, version="1").version == 1
    _edit_manifest(tiny, lambda m: m.update(format="nuscenes"))
    _expect(UnsupportedVersionError, _open(tiny), "stridegen-log.json", "format", "expected 'stridegen-log'")


def test_broken_json_line(tiny: Path) -> None:
    path = tiny / "scenes" / "drive-1" / "frames.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[1][:-5], lines[2]]))
    _expect(InvalidValueError, _frames(tiny), "frames.jsonl", "line 2", "not valid JSON")


def test_a_broken_scene_does_not_stop_the_others(tiny: Path) -> None:
    import shutil

    shutil.copytree(tiny / "scenes" / "drive-1", tiny / "scenes" / "drive-2")
    _edit_manifest(tiny, lambda m: m["scenes"].append({"name": "drive-2"}))
    (tiny / "scenes" / "drive-1" / "lidar" / "2.npy").unlink()
    reader = open_native(tiny)  # the manifest is fine: opening works
    assert reader.scene_ids() == [("drive-1", "drive-1"), ("drive-2", "drive-2")]
    assert len(reader.scene("drive-2")) == 3
    _expect(MissingFileError, lambda: reader.scene("drive-1"), "frames.jsonl", "line 3", "LIDAR_TOP.file")
    _expect(MissingFileError, reader.scenes, "frames.jsonl", "line 3", "LIDAR_TOP.file")


def test_frame_tokens_are_unique_in_the_log(tiny: Path) -> None:
    import shutil

    shutil.copytree(tiny / "scenes" / "drive-1", tiny / "scenes" / "drive-2")
    _edit_manifest(tiny, lambda m: m["scenes"].append({"name": "drive-2"}))
    _edit_frame(tiny, 2, lambda f: f.update(token="t-1"))
    path = tiny / "scenes" / "drive-2" / "frames.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "token": "t-1"})
    path.write_text("\n".join(lines) + "\n")
    _expect(InvalidValueError, _frames(tiny), "drive-2/frames.jsonl", "line 1, token", "also used in")
    _edit_frame(tiny, 3, lambda f: f.update(token="t-1"))
    _expect(InvalidValueError, _frames(tiny), "drive-1/frames.jsonl", "line 3, token", "also used on line 2")


@pytest.mark.slow
def test_readers_keep_the_last_scenes_only(synthetic_pair, av2_logs: Path) -> None:
    """A worker that builds scene after scene holds at most ``SCENE_CACHE`` built scenes (memory flat in the log's
    length); a scene asked for again while kept is the same object. The modality answer the build asks first is
    {} for both formats (native: opening refuses an unknown modality; AV2: a fixed rig)."""
    from stridegen.core.cache import LruCache
    from stridegen.logs._common import SCENE_CACHE

    for root in (synthetic_pair[1], av2_logs):
        reader = open_log(root)
        names = [n for n, _ in reader.scene_ids()]
        assert len(names) >= SCENE_CACHE and reader.unknown_modalities() == {}
        built = [reader.scene(n) for n in names + names[:1]]
        assert len(reader._scene_cache) == min(SCENE_CACHE, len(names))
        assert reader.scene(names[0]) is built[-1]
    made: list[int] = []
    cache: LruCache[int, int] = LruCache(2)
    got = [cache.get(k, lambda k=k: made.append(k) or 10 * k) for k in (1, 2, 1, 3, 2, 1)]
    assert got == [10, 20, 10, 30, 20, 10] and made == [1, 2, 3, 2, 1] and len(cache) == 2


def test_frame_annotations_are_read_once_and_read_only(tmp_path: Path) -> None:
    """``Frame.annotations()`` asks the reader once and hands out read-only arrays (a plugin's lists included)."""
    from stridegen.core.boxes import Boxes
    from stridegen.logs.base import Annotations, Frame, LogReader

    calls: list[str] = []

    class ListReader(LogReader):
        def scenes(self):
            return []

        def load_points(self, sample):
            return np.zeros((0, 4), np.float32)

        def load_annotations(self, frame):
            calls.append(frame.token)
            boxes = Boxes([[1.0, 2.0, 0.5]], [[4.0, 2.0, 1.5]], [0.1], label=["car"], track_id=["a"])
            return Annotations(boxes, ["vehicle.car"], ["t0"], [12], [0], [4], [""])  # type: ignore[arg-type]

    frame = Frame(ListReader(tmp_path), "f0", "s0", 0, 0, np.eye(4), {})
    first, again = frame.annotations(), frame.annotations()
    assert first is again and calls == ["f0"]
    assert isinstance(first.category, np.ndarray) and first.num_lidar_pts.tolist() == [12]
    for array in (first.category, first.num_lidar_pts, first.boxes.center, first.boxes.track_id):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = array[0]
