"""Hostile logs (issue 33): files outside the log, a folder name that is not UTF-8, absurd but finite values,
constant ego poses, damaged sensor data. Each case copies the session's two-scene synthetic log (tests/conftest.py),
damages it, and asserts what ``check`` reports and what the build does with it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.core.errors import LogFormatError
from stridegen.logs.check import CheckReport, check_log
from stridegen.run.config import load_build_config

VERSION = "v1.0-synthetic"
FAST = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"]
ONE = ["log.scenes=[scene-0000]"]


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("instance_ids", "maps", ".stridegen-index"))
    return dst


def _load(root: Path, name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((root / VERSION / f"{name}.json").read_text())
    return records


def _save(root: Path, name: str, records: list[dict[str, Any]]) -> None:
    (root / VERSION / f"{name}.json").write_text(json.dumps(records))


def _edit(root: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> None:
    records = _load(root, name)
    for r in records:
        edit(r)
    _save(root, name, records)


def _check(log: Path, *overrides: str) -> CheckReport:
    return check_log(log, load_build_config(None, [*FAST, *ONE, *overrides]).check_settings())


def _codes(report: CheckReport, severity: str = "error") -> set[str]:
    return {f.code for f in report.findings if f.severity == severity}


def _build(log: Path, out: Path, *overrides: str):  # type: ignore[no-untyped-def]
    from stridegen.jobs.build import run_build

    return run_build(log, out, load_build_config(None, [*FAST, *ONE, *overrides]))


def _scene_files(root: Path, channel: str, scene: str = "scene-0000") -> list[dict[str, Any]]:
    """The key sample_data of one channel of a scene, in time order."""
    [rec] = [s for s in _load(root, "scene") if s["name"] == scene]
    samples = {s["token"]: s for s in _load(root, "sample")}
    order, token = [], rec["first_sample_token"]
    while token:
        order.append(token)
        token = samples[token]["next"]
    data = {
        sd["sample_token"]: sd
        for sd in _load(root, "sample_data")
        if f"/{channel}/" in sd["filename"] and sd["is_key_frame"]
    }
    return [data[t] for t in order]


# ------------------------------------------------------------------------------------------ files outside the log
def _point_outside(log: Path, other: Path) -> str:
    """The third CAM_FRONT image of scene-0000 named as the other log's (``../other/...``)."""
    token = _scene_files(log, "CAM_FRONT")[2]["token"]
    rel = f"../{other.name}/" + _scene_files(log, "CAM_FRONT")[2]["filename"]
    _edit(log, "sample_data", lambda r: r.__setitem__("filename", rel) if r["token"] == token else None)
    return rel


def test_a_file_outside_the_log_is_an_error_of_check_and_a_failed_scene(two_scene_log: Path, tmp_path: Path) -> None:
    log, other = _copy(two_scene_log, tmp_path / "log"), _copy(two_scene_log, tmp_path / "other")
    rel = _point_outside(log, other)
    report = _check(log)
    [finding] = [f for f in report.errors if f.code == "file_outside_log"]
    assert rel in finding.message and finding.file is not None and finding.file.endswith("sample_data.json")
    assert finding.scene == "scene-0000"
    from stridegen.logs import open_log

    with pytest.raises(LogFormatError, match="outside the log folder"):
        open_log(log).scene("scene-0000")
    result = _build(log, tmp_path / "ds")
    [failed] = result.failed
    assert failed.scene == "scene-0000" and "file_outside_log" in failed.reason and rel in failed.reason


def test_the_option_allows_files_outside_the_log(
    two_scene_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, other = _copy(two_scene_log, tmp_path / "log"), _copy(two_scene_log, tmp_path / "other")
    _point_outside(log, other)
    monkeypatch.setenv("STRIDEGEN_LOG_FILES_OUTSIDE", "1")
    assert "file_outside_log" not in _codes(_check(log))


@pytest.mark.parametrize(
    ("name", "outside"),
    [
        ("samples/a.jpg", False),
        ("./samples/../samples/a.jpg", False),
        ("samples/../../x/a.jpg", True),
        ("/etc/passwd", True),
        ("..\\x\\a.jpg", True),
        ("a/b/../../c.jpg", False),
    ],
)
def test_the_resolver_is_lexical(name: str, outside: bool, tmp_path: Path) -> None:
    from stridegen.logs._common import FileOutsideLogError, log_file

    if outside:
        with pytest.raises(FileOutsideLogError, match="sample_data t1"):
            log_file(tmp_path, name, "sample_data.json", "sample_data t1")
    else:
        assert log_file(tmp_path, name, "sample_data.json", "sample_data t1").is_relative_to(tmp_path)


# ------------------------------------------------------------------------------------------ a folder name not UTF-8
def test_a_folder_name_that_is_not_utf8_is_one_error_naming_it(two_scene_log: Path, tmp_path: Path) -> None:
    from stridegen.cli import app

    log = Path(os.fsdecode(os.fsencode(tmp_path) + b"/bad\xffname"))
    _copy(two_scene_log, log)
    report = _check(log)
    [finding] = report.errors
    assert finding.code == "log_unreadable" and "bad\\xffname" in finding.message and "not UTF-8" in finding.message
    result = CliRunner().invoke(app, ["check", str(log)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "bad\\xffname" in result.stderr and "UnicodeEncodeError" not in result.output


def _widen_cars(log: Path) -> None:
    """Every car 4 m wide: possible (as a box), unlikely (no car is)."""
    categories = {c["token"]: c["name"] for c in _load(log, "category")}
    instances = {i["token"]: categories[i["category_token"]] for i in _load(log, "instance")}

    def wide_car(r: dict[str, Any]) -> None:
        if instances[r["instance_token"]] == "vehicle.car":
            r["size"][0] = 4.0  # nuScenes size is [width, length, height]

    _edit(log, "sample_annotation", wide_car)


# ------------------------------------------------------------------------------------------ warnings on stderr
@pytest.mark.slow
def test_build_prints_the_log_checks_warnings_on_stderr(two_scene_log: Path, tmp_path: Path) -> None:
    from stridegen.cli import app

    log = _copy(two_scene_log, tmp_path / "log")
    _widen_cars(log)  # unlikely_value
    result = CliRunner().invoke(app, ["build", str(log), "--out", str(tmp_path / "ds"), *FAST, *ONE])
    assert result.exit_code == 0, result.output
    assert "unlikely_value" in result.stderr and "unlikely_value" not in result.stdout


# ------------------------------------------------------------------------------------------ damaged sensor data
def _garble(path: Path) -> None:
    """40 random bytes in the middle of a JPEG's entropy-coded data: libjpeg warns ("Corrupt JPEG data") and
    "recovers" with other pixels. (JPEG has no checksum: some other garblings keep the decoder in step and go
    unnoticed by any decoder; this one, the issue's case, does not.)"""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 40] = np.random.default_rng(0).integers(0, 255, 40, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    """The last third cut, the end-of-image marker put back (as a careless repair would)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3] + b"\xff\xd9")


@pytest.mark.parametrize("damage", [_garble, _truncate])
def test_check_decodes_every_image_and_the_build_fails_the_scene(
    damage: Callable[[Path], None], two_scene_log: Path, tmp_path: Path
) -> None:
    log = _copy(two_scene_log, tmp_path / "log")
    image = log / _scene_files(log, "CAM_FRONT")[4]["filename"]  # not the camera's first image, in a keyframe window
    damage(image)
    report = _check(log)
    [finding] = [f for f in report.errors if f.code == "corrupt_image"]
    assert finding.file == str(image) and "Corrupt JPEG data" in finding.message
    assert {f.code for f in report.errors} == {"corrupt_image"}
    result = _build(log, tmp_path / "ds")
    [failed] = result.failed
    assert str(image) in failed.reason and "corrupt JPEG data" in failed.reason


def test_the_decoder_treats_libjpeg_warnings_as_errors(two_scene_log: Path, tmp_path: Path) -> None:
    from stridegen.formats.images import decode_image

    path = tmp_path / "a.jpg"
    shutil.copy(two_scene_log / _scene_files(two_scene_log, "CAM_FRONT")[4]["filename"], path)
    assert decode_image(path.read_bytes(), path).shape == (180, 320, 3)
    _garble(path)
    with pytest.raises(LogFormatError, match=r"a\.jpg: corrupt JPEG data"):
        decode_image(path.read_bytes(), path)


def test_non_finite_lidar_points_are_an_error_naming_the_file(two_scene_log: Path, tmp_path: Path) -> None:
    from stridegen.logs import open_log

    log = _copy(two_scene_log, tmp_path / "log")
    lidar = log / _scene_files(log, "LIDAR_TOP")[3]["filename"]
    points = np.fromfile(lidar, dtype="<f4").reshape(-1, 5)
    points[::10, 0] = np.nan  # 10 % of the sweep
    points.tofile(lidar)
    frame = open_log(log).scene("scene-0000").frames[3]
    with pytest.raises(LogFormatError, match="not finite") as info:
        frame.lidar()
    assert info.value.path == str(lidar) and f"{len(points[::10])} of {len(points)} points" in info.value.reason
    result = _build(log, tmp_path / "ds", "segmenter.name=lidar")
    [failed] = result.failed
    assert str(lidar) in failed.reason and "not finite" in failed.reason


def test_check_finds_sweeps_whose_size_is_no_whole_number_of_points(synthetic_log: Path, tmp_path: Path) -> None:
    log = _copy(synthetic_log, tmp_path / "log")
    sweeps = sorted((log / "sweeps" / "LIDAR_TOP").glob("*scene-0000*.pcd.bin"))
    key = _scene_files(log, "LIDAR_TOP")[2]["filename"]
    assert sweeps
    with open(sweeps[3], "ab") as fh:
        fh.write(b"\x00" * 7)
    with open(log / key, "ab") as fh:
        fh.write(b"\x00" * 4)
    report = _check(log)
    by_code = {(f.code, f.severity): f for f in report.findings if f.scene == "scene-0000"}
    assert ("point_cloud_size", "error") in by_code, report.findings
    assert by_code[("point_cloud_size", "warning")].file == str(sweeps[3])
    assert by_code[("point_cloud_size", "error")].file == str(log / key)
    assert "not a multiple of 20" in by_code[("point_cloud_size", "error")].message


# ------------------------------------------------------------------------------------------ plausibility bounds
def _native(two_scene_log: Path, dst: Path) -> Path:
    from stridegen.logs import open_log
    from stridegen.logs.native_writer import write_native_log

    write_native_log(open_log(two_scene_log), dst)
    return dst


def _edit_jsonl(path: Path, line: int, edit: Callable[[dict[str, Any]], None]) -> None:
    lines = path.read_text().splitlines()
    record = json.loads(lines[line - 1])
    edit(record)
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")


def test_an_ego_translation_off_the_earth_is_an_error_naming_file_and_row(two_scene_log: Path, tmp_path: Path) -> None:
    """The issue's case: [1e300, 1e300, 0] in a native log built answers '1414213562373095169...(300 digits) m'."""
    log = _native(two_scene_log, tmp_path / "native")
    frames = log / "scenes" / "scene-0000" / "frames.jsonl"
    _edit_jsonl(frames, 6, lambda r: r["ego_pose"].__setitem__("translation_m", [1e300, 1e300, 0.0]))
    report = _check(log)
    [finding] = report.errors
    assert finding.code == "invalid_pose" and finding.file == str(frames)
    assert "line 6" in finding.message and "1e+300" in finding.message and "beyond 1e+08 m" in finding.message
    result = _build(log, tmp_path / "ds")
    [failed] = result.failed
    assert "line 6" in failed.reason and str(frames) in failed.reason


def test_a_box_of_size_1e30_fails_the_scene(two_scene_log: Path, tmp_path: Path) -> None:
    """The issue's case: one box of size 1e30 removed 97 of its scene's 267 QA without a finding."""
    log = _copy(two_scene_log, tmp_path / "log")
    sample = _scene_files(log, "LIDAR_TOP")[5]["sample_token"]
    done: list[str] = []

    def edit(r: dict[str, Any]) -> None:
        if r["sample_token"] == sample and not done:
            r["size"][1] = 1e30  # nuScenes size is [width, length, height]
            done.append(r["token"])

    _edit(log, "sample_annotation", edit)
    report = _check(log)
    [finding] = [f for f in report.errors if f.code == "out_of_bounds"]
    assert "1e+30" in finding.message and "frame 5" in finding.message
    assert finding.file is not None and finding.file.endswith("sample_annotation.json")
    result = _build(log, tmp_path / "ds")
    [failed] = result.failed
    assert "out_of_bounds" in failed.reason and "1e+30" in failed.reason


def _move_ego(log: Path, index: int, dx: float) -> None:
    """The ego pose of scene-0000's key LiDAR sample ``index`` moved by ``dx`` metres along x."""
    token = _scene_files(log, "LIDAR_TOP")[index]["ego_pose_token"]

    def edit(r: dict[str, Any]) -> None:
        if r["token"] == token:
            r["translation"][0] += dx

    _edit(log, "ego_pose", edit)


@pytest.mark.parametrize(
    ("dx", "code", "text"),
    [(150.0, "out_of_bounds", "ego speed up to"), (4.0, "unlikely_value", "ego acceleration up to")],
)
def test_ego_jumps_are_speed_errors_and_acceleration_warnings(
    dx: float, code: str, text: str, two_scene_log: Path, tmp_path: Path
) -> None:
    log = _copy(two_scene_log, tmp_path / "log")
    _move_ego(log, 6, dx)
    findings = [f for f in _check(log).findings if f.code == code]
    assert findings and text in findings[0].message and findings[0].file.endswith("ego_pose.json")


def test_impossible_intrinsics_and_unlikely_box_sizes(two_scene_log: Path, tmp_path: Path) -> None:
    log = _copy(two_scene_log, tmp_path / "log")

    def camera(r: dict[str, Any]) -> None:
        if r.get("camera_intrinsic"):
            r["camera_intrinsic"][0][0] = r["camera_intrinsic"][1][1] = 1e6  # a field of view of 0.02 degrees

    _edit(log, "calibrated_sensor", camera)
    _widen_cars(log)
    report = _check(log)
    [camera_error] = [f for f in report.errors if f.code == "out_of_bounds"]
    assert "field of view" in camera_error.message and camera_error.file.endswith("calibrated_sensor.json")
    [sizes] = [f for f in report.warnings if f.code == "unlikely_value"]
    assert "unlikely for their class" in sizes.message and "car" in sizes.message


def test_the_clean_logs_have_no_bound_finding(two_scene_log: Path, synthetic_log: Path) -> None:
    for log in (two_scene_log, synthetic_log):
        report = check_log(log, load_build_config(None, FAST).check_settings())
        assert not {f.code for f in report.findings} & {"out_of_bounds", "unlikely_value"}, report.findings


def test_the_shared_real_logs_have_no_bound_finding(nuscenes_demo: Path, av2_logs: Path) -> None:
    for log in (nuscenes_demo, av2_logs):
        report = check_log(log, load_build_config(None, FAST).check_settings())
        assert not {f.code for f in report.findings} & {"out_of_bounds", "unlikely_value"}, report.findings


def test_span_rates_on_an_analytic_track() -> None:
    """p(t) = a t^2 / 2 along x at 10 Hz: the speed over [t, t + 0.5] is a (t + 0.25), its acceleration a."""
    from stridegen.logs.bounds import span_rates

    a, t = 3.0, np.arange(0.0, 5.0, 0.1)
    position = np.stack([0.5 * a * t**2, np.zeros_like(t), np.zeros_like(t)], axis=1)
    speed, accel = span_rates(position, t)
    assert np.allclose(speed, a * (t[: len(speed)] + 0.25))
    assert len(speed) == len(t) - 5 and np.allclose(accel, a)


def test_box_size_limits_per_class() -> None:
    from stridegen.logs.bounds import BOX_SIZES, OTHER_SIZE_MAX, size_limits

    unlikely, impossible = size_limits(np.array(["car", "pedestrian", "x-unknown"], dtype=object))
    assert impossible[0].tolist() == [60.0, 10.0, 10.0] and unlikely[1].tolist() == [2.5, 2.5, 2.3]
    assert impossible[2].tolist() == list(OTHER_SIZE_MAX)
    for bounds in BOX_SIZES.values():  # the class mean is well inside both limits
        assert np.all(np.array(bounds.mean) * 1.2 < bounds.unlikely)
        assert np.all(np.array(bounds.unlikely) <= bounds.impossible)


# ------------------------------------------------------------------------------------------ constant ego poses
def _no_poses(root: Path, keep_boxes_global: bool = False) -> None:
    """Every ego pose the identity and (unless ``keep_boxes_global``) the boxes moved into the ego frame of their
    sample: what a converter without poses writes. With ``keep_boxes_global`` the poses are the first pose of each
    scene... here the identity, and the boxes stay where they are: a car that truly stood still sees the world so."""
    from stridegen.core.transforms import quat_multiply, quat_to_rotmat

    poses = {p["token"]: p for p in _load(root, "ego_pose")}
    lidar = {
        sd["sample_token"]: poses[sd["ego_pose_token"]]
        for sd in _load(root, "sample_data")
        if "LIDAR_TOP" in sd["filename"] and sd["is_key_frame"]
    }

    def to_ego(r: dict[str, Any]) -> None:
        pose = lidar[r["sample_token"]]
        q_inv = np.array(pose["rotation"]) * [1, -1, -1, -1]
        r["translation"] = (quat_to_rotmat(q_inv) @ (np.array(r["translation"]) - pose["translation"])).tolist()
        r["rotation"] = quat_multiply(q_inv, np.array(r["rotation"])).tolist()

    if not keep_boxes_global:
        _edit(root, "sample_annotation", to_ego)
    _edit(root, "ego_pose", lambda r: r.update(rotation=[1.0, 0.0, 0.0, 0.0], translation=[0.0, 0.0, 0.0]))


def test_constant_poses_of_a_moving_ego_are_an_error_naming_calibrate_poses(
    two_scene_log: Path, tmp_path: Path
) -> None:
    log = _copy(two_scene_log, tmp_path / "log")
    _no_poses(log)
    report = _check(log)
    [finding] = [f for f in report.errors if f.code == "constant_ego_pose"]
    assert "static box(es)" in finding.message and "the ego moved" in finding.message
    assert "stridegen calibrate poses" in finding.likely_cause and "log.parked_ego=true" in finding.likely_cause
    result = _build(log, tmp_path / "ds")
    [failed] = result.failed
    assert "constant_ego_pose" in failed.reason and "stridegen calibrate poses" in failed.reason


def test_parked_ego_accepts_constant_poses(two_scene_log: Path, tmp_path: Path) -> None:
    log = _copy(two_scene_log, tmp_path / "log")
    _no_poses(log)
    report = _check(log, "log.parked_ego=true")
    assert "constant_ego_pose" not in {f.code for f in report.findings}
    result = _build(log, tmp_path / "ds", "log.parked_ego=true")
    assert result.ok and not result.failed


def test_a_still_world_with_constant_poses_is_only_a_warning(two_scene_log: Path, tmp_path: Path) -> None:
    """Constant poses with the boxes left in the global frame: cones and barriers stand still and the traffic moves
    each its own way, so nothing says the ego moved: the old warning, pointing at calibrate poses."""
    log = _copy(two_scene_log, tmp_path / "log")
    _no_poses(log, keep_boxes_global=True)
    findings = [f for f in _check(log).findings if f.code == "constant_ego_pose"]
    assert [f.severity for f in findings] == ["warning"]
    assert "stridegen calibrate poses" in findings[0].likely_cause


def test_shared_motion_of_most_boxes_says_the_ego_moved() -> None:
    """Without static classes: most tracks moving with one velocity (the ego's, mirrored) is evidence too."""
    from stridegen.core.boxes import Boxes
    from stridegen.logs.base import Annotations, Frame, Scene
    from stridegen.logs.check.poses import scene_motion

    def frame(i: int, centres: np.ndarray) -> tuple[Frame, Annotations]:
        n = len(centres)
        boxes = Boxes(
            center=centres,
            size_lwh=np.ones((n, 3)),
            yaw=np.zeros(n),
            label=np.array(["car"] * n, dtype=object),
            track_id=np.array([f"t{k}" for k in range(n)], dtype=object),
        )
        empty = np.zeros(n)
        ann = Annotations(boxes, np.array(["vehicle.car"] * n, dtype=object), empty, empty, empty, empty,
                          np.array([""] * n, dtype=object))  # fmt: skip
        return Frame(None, f"f{i}", "s", i, i * 500_000, np.eye(4), {}), ann  # type: ignore[arg-type]

    start = np.array([[10.0, 0, 0], [20, 5, 0], [30, -5, 0], [40, 0, 0], [15, 3, 0]])
    own = np.array([[0.0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [3, 0, 0]])  # the fifth one drives
    rows = [frame(i, start + i * 0.5 * (np.array([-10.0, 0, 0]) + own)) for i in range(6)]
    scene = Scene(None, "s", "s", [f for f, _ in rows])  # type: ignore[arg-type]
    evidence = scene_motion(scene, [a for _, a in rows])
    assert evidence is not None and "4 of 5 boxes move together at 10.00 m/s" in evidence
    still = [frame(i, start + i * 0.5 * own) for i in range(6)]
    assert scene_motion(Scene(None, "s", "s", [f for f, _ in still]), [a for _, a in still]) is None  # type: ignore[arg-type]
