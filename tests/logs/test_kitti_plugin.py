"""The out-of-tree log-reader example (examples/kitti_tracking_reader, docs/own-logs.md) against the synthetic log.

A small synthetic log is written in the KITTI tracking layout (tests/logs/kitti_layout.py, its own inverse
formulas), read back through the registry with the example plugin, compared with the nuScenes reader of the source,
and built into a dataset. Tolerances: the oxts round trip goes through latitude / longitude in degrees near
Karlsruhe, where a Mercator coordinate is ~4e6 m, so float64 carries ~1e-9 m; 1e-6 m leaves three orders of margin
(measured: ~2e-10 m). Rotations and box angles pass through sin / cos / atan2 only (1e-12).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from stridegen.core import registry
from stridegen.core.angles import wrap_angle
from stridegen.core.errors import ConfigError, LogFormatError, MissingFileError
from stridegen.core.projection import project_points
from stridegen.core.transforms import invert_transform, make_transform, transform_points
from stridegen.jobs.build import run_build
from stridegen.logs import open_log
from stridegen.logs.base import LogReader
from stridegen.run.config import load_build_config
from stridegen.shards.reader import open_dataset
from tests.logs.kitti_layout import DETECTION_TO_KITTI, WrittenSequence, write_kitti_tracking, write_oxts

pytestmark = pytest.mark.slow  # the tests read a KITTI copy of the session's one-scene log

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kitti_tracking_reader"
TARGET = "stridegen_kitti.reader:open_kitti_tracking"
NAME = "kitti-tracking"
BUILD = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"]


@pytest.fixture(scope="module")
def plugin():
    """The example package on sys.path (as a user's checkout of it would be), registered under its short name."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(EXAMPLE))
        registry.register("log_reader", NAME, TARGET)
        yield NAME
        registry.unregister("log_reader", NAME)
    for module in [m for m in sys.modules if m == "stridegen_kitti" or m.startswith("stridegen_kitti.")]:
        del sys.modules[module]


@pytest.fixture(scope="module")
def source(one_scene_log: Path) -> Path:
    """The session's one-scene synthetic log (tests/conftest.py)."""
    return one_scene_log


@pytest.fixture(scope="module")
def copy(source: Path, tmp_path_factory) -> tuple[Path, list[WrittenSequence]]:
    root = tmp_path_factory.mktemp("kitti-copy")
    written = write_kitti_tracking(open_log(source), root / "training")
    return root, written


@pytest.fixture(scope="module")
def readers(plugin: str, source: Path, copy) -> tuple[LogReader, LogReader, WrittenSequence]:
    root, [written] = copy
    return open_log(source), open_log(root, format=plugin), written


def _wrapped(a: np.ndarray) -> np.ndarray:
    return np.abs(wrap_angle(a))


def test_layout_as_the_devkit_describes_it(copy) -> None:
    root, [written] = copy
    split = root / "training"
    assert sorted(p.name for p in (split / "image_02" / "0000").iterdir())[:2] == ["000000.png", "000001.png"]
    calib = dict(line.split(" ", 1) for line in (split / "calib" / "0000.txt").read_text().splitlines())
    assert sorted(calib) == ["P0:", "P1:", "P2:", "P3:", "R_rect", "Tr_imu_velo", "Tr_velo_cam"]
    assert {len(line.split()) for line in (split / "oxts" / "0000.txt").read_text().splitlines()} == {30}
    labels = (split / "label_02" / "0000.txt").read_text().splitlines()
    assert {len(line.split()) for line in labels} == {17}
    assert len(labels) == sum(len(k) for k in written.labelled) > 0
    assert (split / "velodyne" / "0000" / "000000.bin").stat().st_size % 16 == 0


def test_opened_through_the_registry_by_name_and_by_module_string(plugin: str, copy) -> None:
    root, _ = copy
    by_name = open_log(root, format=plugin)
    by_target = open_log(root / "training", format=TARGET)
    assert by_name.format_name == by_target.format_name == "kitti-tracking"
    assert getattr(by_name, "version", None) == "training"
    assert [s.name for s in by_name.scenes()] == [s.name for s in by_target.scenes()] == ["0000"]


def test_frames_and_timestamps(readers) -> None:
    src, kitti, _ = readers
    (a,), (b,) = src.scenes(), kitti.scenes()
    assert len(b) == len(a) == 16
    assert [f.timestamp_us for f in b] == [f.timestamp_us for f in a]
    frame = b.frames[3]
    assert frame.camera_channels == ["image_02"] and frame.lidar_channels == ["velodyne"]
    assert frame.sensor("image_02").timestamp_us == frame.timestamp_us


def test_without_a_times_file_frames_are_10_hz(plugin: str, copy, tmp_path: Path) -> None:
    root, _ = copy
    shutil.copytree(root / "training", tmp_path / "training", ignore=shutil.ignore_patterns("times"))
    (scene,) = open_log(tmp_path, format=plugin).scenes()
    assert [f.timestamp_us for f in scene][:3] == [0, 100_000, 200_000]


def test_ego_poses_survive_the_oxts_round_trip(readers) -> None:
    src, kitti, written = readers
    a = np.array([f.T_global_from_ego for f in src.scenes()[0]])
    b = np.array([f.T_global_from_ego for f in kitti.scenes()[0]])
    translation_error = np.abs(b[:, :3, 3] - (a[:, :3, 3] - written.origin_global)).max()
    assert translation_error < 1e-6, translation_error
    assert np.abs(b[:, :3, :3] - a[:, :3, :3]).max() < 1e-12
    assert np.allclose(b[0], make_transform(a[0, :3, :3], np.zeros(3)), atol=1e-12)  # first IMU at the origin


def test_oxts_conventions_known_answers(plugin: str) -> None:
    """dataformat.txt of the raw devkit: roll positive = left side up, pitch positive = front down, yaw 0 = east and
    counter-clockwise; one degree of longitude on the equator (Mercator scale 1) is 6378137 * pi / 180 m."""
    from stridegen_kitti.reader import mercator, oxts_poses

    mx, my = mercator(np.array([0.0]), np.array([1.0]), 1.0)
    assert mx[0] == pytest.approx(111319.4907932736, abs=1e-6) and my[0] == pytest.approx(0.0, abs=1e-9)
    rows = np.tile([49.0, 8.4, 100.0, 0.0, 0.0, 0.0], (4, 1))
    rows[1, 4], rows[2, 3], rows[3, 5] = 0.1, 0.1, np.pi / 2  # pitch, roll, yaw
    T = oxts_poses(rows)
    assert np.allclose(T[:, :3, 3], 0.0) and np.allclose(T[0], np.eye(4))
    assert np.allclose(T[1, :3, 0], [np.cos(0.1), 0.0, -np.sin(0.1)])  # forward axis dips: front down
    assert np.allclose(T[2, :3, 1], [0.0, np.cos(0.1), np.sin(0.1)])  # left axis rises: left side up
    assert np.allclose(T[3, :3, 0], [0.0, 1.0, 0.0])  # facing north


def test_oxts_round_trip_with_roll_and_pitch(plugin: str, tmp_path: Path) -> None:
    """The synthetic ego only yaws; here every angle and a climb go through the writer and back."""
    from stridegen_kitti.reader import oxts_poses, read_table

    rng = np.random.default_rng(3)
    angles = rng.uniform([-0.2, -0.2, -np.pi], [0.2, 0.2, np.pi], (20, 3))  # roll, pitch, yaw
    rotation = np.array([_rot(2, y) @ _rot(1, p) @ _rot(0, r) for r, p, y in angles])
    translation = np.cumsum(rng.uniform(-5.0, 5.0, (20, 3)), axis=0) + [300.0, -800.0, 20.0]
    poses = make_transform(rotation, translation)
    write_oxts(tmp_path / "oxts.txt", poses, np.arange(20) * 0.1)
    back = oxts_poses(np.array([r[:6] for r in read_table(tmp_path / "oxts.txt", 30)], dtype=np.float64))
    assert np.abs(back[:, :3, :3] - rotation).max() < 1e-12
    assert np.abs(back[:, :3, 3] - (translation - translation[0])).max() < 1e-6


def _rot(axis: int, angle: float) -> np.ndarray:
    """Rotation about x (0), y (1) or z (2) by ``angle``, right-handed."""
    c, s = np.cos(angle), np.sin(angle)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    r = np.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


def test_camera_projects_a_box_centre_to_the_same_pixel(readers) -> None:
    src, kitti, written = readers
    (a,), (b,) = src.scenes(), kitti.scenes()
    cam_a, cam_b = a.frames[0].sensor("CAM_FRONT"), b.frames[0].sensor("image_02")
    assert np.allclose(cam_b.calibration.intrinsic, cam_a.calibration.intrinsic, atol=1e-9)
    assert np.allclose(cam_b.calibration.T_ego_from_sensor, cam_a.calibration.T_ego_from_sensor, atol=1e-12)
    assert (cam_b.calibration.width, cam_b.calibration.height) == (320, 180)
    projected = 0
    for fa, fb, keep in zip(a.frames, b.frames, written.labelled, strict=True):
        centre = fa.annotations().boxes.center[keep]
        pixels = []
        for sample, centre_global in (
            (fa.sensor("CAM_FRONT"), centre),
            (fb.sensor("image_02"), centre - written.origin_global),
        ):
            centre_cam = transform_points(invert_transform(sample.T_global_from_sensor), centre_global)
            uv, _, in_front = project_points(centre_cam, sample.calibration.intrinsic)
            pixels.append(uv[in_front])
        assert np.abs(pixels[0] - pixels[1]).max(initial=0.0) < 1e-6
        projected += len(pixels[0])
    assert projected > 50


def test_images_and_points_are_the_source_ones(readers) -> None:
    src, kitti, _ = readers
    fa, fb = src.scenes()[0].frames[5], kitti.scenes()[0].frames[5]
    assert np.array_equal(fb.image("image_02"), fa.image("CAM_FRONT"))
    assert fb.image_bytes("image_02")[:8] == b"\x89PNG\r\n\x1a\n"
    sa, sb = fa.sensor("LIDAR_TOP"), fb.sensor("velodyne")
    ego_a = transform_points(sa.calibration.T_ego_from_sensor, fa.lidar("LIDAR_TOP")[:, :3])
    ego_b = transform_points(sb.calibration.T_ego_from_sensor, fb.lidar("velodyne")[:, :3])
    assert fb.lidar().shape[1] == 4 and np.abs(ego_b - ego_a).max() < 1e-4  # float32 after a move of ~1 m
    assert np.allclose(fb.lidar()[:, 3] * 255.0, fa.lidar()[:, 3], atol=1e-3)


def test_boxes_equal_the_source(readers) -> None:
    src, kitti, written = readers
    (a,), (b,) = src.scenes(), kitti.scenes()
    ids: dict[str, str] = {}
    for fa, fb, keep in zip(a.frames, b.frames, written.labelled, strict=True):
        want, got = fa.annotations().select(np.isin(np.arange(len(fa.annotations())), keep)), fb.annotations()
        assert len(got) == len(want)
        assert got.boxes.frame == "global"
        assert np.abs(got.boxes.center - (want.boxes.center - written.origin_global)).max(initial=0) < 1e-6
        assert np.abs(got.boxes.size_lwh - want.boxes.size_lwh).max(initial=0) < 1e-12
        assert _wrapped(got.boxes.yaw - want.boxes.yaw).max(initial=0) < 1e-12
        expected = [lbl if lbl in DETECTION_TO_KITTI else "" for lbl in want.boxes.label]
        assert list(got.boxes.label) == expected
        assert set(got.category) <= {"Car", "Truck", "Pedestrian", "Cyclist", "Misc"}
        for src_id, kitti_id in zip(want.boxes.track_id, got.boxes.track_id, strict=True):
            assert ids.setdefault(kitti_id, src_id) == src_id  # one source instance per KITTI track, every frame
        assert np.array_equal(got.attribute == "cycle.with_rider", got.category == "Cyclist")
    assert len(set(ids.values())) == len(ids) == len(written.track_ids)


def test_velocities_match_where_both_readers_see_the_same_neighbours(readers) -> None:
    src, kitti, written = readers
    (a,), (b,) = src.scenes(), kitti.scenes()
    present = [set(f.annotations().boxes.track_id) for f in b]
    compared = 0
    for i in range(1, len(b) - 1):
        want = a.frames[i].annotations().select(np.isin(np.arange(len(a.frames[i].annotations())), written.labelled[i]))
        got = b.frames[i].annotations()
        both = np.array([t in present[i - 1] and t in present[i + 1] for t in got.boxes.track_id], dtype=bool)
        assert np.allclose(got.boxes.velocity[both], want.boxes.velocity[both], atol=1e-6)
        compared += int(both.sum())
    assert compared > 20


def test_lidar_counts_inside_kitti_boxes(readers) -> None:
    """Synthetic returns lie on the box surfaces, so about half count as inside after float rounding: every box the
    source saw with many returns has some, and a box never has more than the sweep has points."""
    src, kitti, written = readers
    fa, fb = src.scenes()[0].frames[8], kitti.scenes()[0].frames[8]
    want = fa.annotations().num_lidar_pts[written.labelled[8]]
    got = fb.annotations().num_lidar_pts
    assert np.all(got[want >= 50] > 0) and np.all(got <= len(fb.lidar()))


def test_points_in_boxes_known_answer(plugin: str) -> None:
    from stridegen_kitti.reader import Labels, points_in_boxes_rect

    # A 4 x 2 x 1.5 m box (l, w, h) whose bottom centre is 10 m ahead, turned by ry = pi / 2: its length then runs
    # along camera -z (towards the camera), its width along camera x.
    labels = Labels(
        frame=np.array([0]),
        track=np.array([1]),
        kitti_type=np.array(["Car"], dtype=object),
        occluded=np.array([0]),
        center_rect=np.array([[0.0, 1.0 - 0.75, 10.0]]),
        size_lwh=np.array([[4.0, 2.0, 1.5]]),
        rotation_y=np.array([np.pi / 2]),
    )
    points = np.array([[0.0, 0.25, 11.9], [0.9, 0.25, 10.0], [1.1, 0.25, 10.0], [0.0, 0.25, 12.1], [0.0, -0.6, 10.0]])
    assert points_in_boxes_rect(points, labels, np.array([0])).tolist() == [2]


def test_build_from_the_kitti_copy_has_qa(plugin: str, copy, tmp_path: Path) -> None:
    root, _ = copy
    config = load_build_config(None, [f"log.format={plugin}", *BUILD])
    result = run_build(root, tmp_path / "ds", config)
    assert result.ok, [r.reason for r in result.failed]
    with open_dataset(tmp_path / "ds") as ds:
        assert list(ds.scenes) == ["0000"]
        qa = ds.scene("0000").qa
        assert qa is not None and len(qa.question_id) > 0


def test_spawned_workers_find_the_plugin_by_its_module_string(plugin: str, copy, tmp_path: Path) -> None:
    """Worker processes get the parent's sys.path and run-time registrations: the module string resolves there.
    (Two sequences, the second a copy of the first: one scene would be built in-process.)"""
    root, _ = copy
    split = tmp_path / "training"
    shutil.copytree(root / "training", split)
    for folder in ("image_02", "velodyne"):
        shutil.copytree(split / folder / "0000", split / folder / "0001")
    for folder in ("calib", "oxts", "label_02", "times"):
        shutil.copy(split / folder / "0000.txt", split / folder / "0001.txt")
    config = load_build_config(None, [f"log.format={TARGET}", "workers=2", *BUILD])
    result = run_build(split, tmp_path / "ds", config)
    assert result.ok, [r.reason for r in result.failed]
    assert [r.scene for r in result.results] == ["0000", "0001"]


def test_log_format_accepts_a_module_string_and_rejects_unknown_names(plugin: str) -> None:
    assert load_build_config(None, [f"log.format={TARGET}"]).log.format == TARGET
    with pytest.raises(ConfigError) as excinfo:
        load_build_config(None, ["log.format=kitti-trackin"])
    message = str(excinfo.value)
    assert "kitti-trackin" in message
    for known in ("av2", "nuscenes", NAME):
        assert f"'{known}'" in message


def test_entry_point_of_the_example_package_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pyproject's entry point, installed as pip would (a dist-info folder on sys.path), names the reader."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    group = project["entry-points"]["stridegen.log_reader"]
    assert group == {NAME: TARGET}
    info = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text(f"[stridegen.log_reader]\n{NAME} = {TARGET}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.delitem(registry.table("log_reader"), NAME, raising=False)  # the module fixture's registration
    assert NAME not in registry.table("log_reader")  # not a run-time registration: found as an entry point
    assert NAME in registry.names("log_reader")
    assert registry.resolve("log_reader", NAME).__name__ == "open_kitti_tracking"


def test_bad_files_are_named(plugin: str, copy, tmp_path: Path) -> None:
    root, _ = copy
    split = tmp_path / "training"
    shutil.copytree(root / "training", split)
    label = split / "label_02" / "0000.txt"
    lines = [line.split(" ") for line in label.read_text().splitlines()]
    lines[2][2] = "Bus"  # not a KITTI type
    label.write_text("".join(" ".join(fields) + "\n" for fields in lines))
    reader = open_log(split, format=plugin)
    with pytest.raises(LogFormatError, match=r"0000\.txt: line 3: expected 17 values with a KITTI type"):
        reader.scenes()[0].frames[0].annotations()
    (split / "calib" / "0000.txt").unlink()
    with pytest.raises(MissingFileError, match=r"calib/0000\.txt: calibration file is missing"):
        open_log(split, format=plugin)
    with pytest.raises(LogFormatError, match="no KITTI tracking split"):
        open_log(tmp_path / "training" / "oxts", format=plugin)


def test_detect_format_finds_a_registered_plugin_through_its_detect_hook(plugin: str, copy, tmp_path) -> None:
    """A plugin factory with a ``detect`` attribute is asked when no built-in reader knows the folder."""
    from stridegen.core.errors import LogFormatError
    from stridegen.logs import detect_format

    root, _ = copy
    assert detect_format(root) == plugin
    assert detect_format(root / "training") == plugin
    (tmp_path / "empty").mkdir()
    with pytest.raises(LogFormatError, match=f"plugin readers asked: {plugin}"):
        detect_format(tmp_path / "empty")


def test_a_worker_reads_only_its_sequence_and_a_broken_one_fails_alone(plugin: str, copy, tmp_path: Path) -> None:
    """``scene_ids`` lists the sequences from the folder names and ``scene`` builds one sequence: the second
    sequence has no images, so listing still works, the first builds, and the build fails the second alone."""
    root, _ = copy
    split = tmp_path / "training"
    shutil.copytree(root / "training", split)
    (split / "image_02" / "0001").mkdir()
    shutil.copy(split / "calib" / "0000.txt", split / "calib" / "0001.txt")
    reader = open_log(split, format=plugin)
    assert reader.scene_ids() == [("0000", "training_0000"), ("0001", "training_0001")]
    first = reader.scene("0000")
    assert first is reader.scene("training_0000") and len(first.frames) > 0
    with pytest.raises(LogFormatError, match="no PNG images"):
        reader.scene("0001")
    with pytest.raises(LogFormatError, match="no scene named"):
        reader.scene("0002")
    with pytest.raises(LogFormatError, match="no PNG images"):
        reader.scenes()  # every sequence at once: the broken one stops the listing
    result = run_build(split, tmp_path / "ds", load_build_config(None, [f"log.format={plugin}", *BUILD]))
    assert [r.scene for r in result.results if r.ok] == ["0000"]
    assert [r.scene for r in result.failed] == ["0001"] and "no PNG images" in result.failed[0].reason
