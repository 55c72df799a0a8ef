"""Robustness splits (stridegen.jobs.augment) on a hand-built 2-scene dataset with masks, regions and QA."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import cv2
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from stridegen.augment.split import SplitSpec, resolve_levels
from stridegen.cli.augment import augment
from stridegen.core.errors import ConfigError
from stridegen.formats.rle import decode_rle
from stridegen.jobs import augment as split_mod
from stridegen.jobs.augment import build_robustness_split
from stridegen.pipeline.visibility import mask_boxes
from stridegen.shards.augmented import corrupt_record, dropped_images
from stridegen.shards.reader import open_dataset
from stridegen.shards.schema import (
    DetectionsTable,
    QATable,
    RegionsTable,
    SceneMeta,
    SceneRecord,
    TracksTable,
    str_array,
)
from stridegen.shards.splits import INDEX_NAME
from tests import shard_fixtures as hand  # hand-built scene tables and datasets, shared with other tests

H, W = 64, 96
CHANNELS = ("CAM_FRONT", "CAM_BACK")
N_FRAMES = 4
BRIGHT = 250  # object 0: a bright square on a dark textured background
GREY = 150  # object 1: a grey square


def _squares(frame: int, channel: int) -> list[tuple[int, int, int]]:
    """(x0, y0, side) of track 0 and track 1 in one image: track 0 moves right 4 px per frame."""
    return [(18 + 4 * frame + 10 * channel, 20, 16), (62 - 8 * channel, 34, 12)]


def _image_and_masks(rng: np.random.Generator, frame: int, channel: int) -> tuple[np.ndarray, list[np.ndarray]]:
    image = rng.integers(10, 60, (H, W, 3), dtype=np.uint8)
    masks = []
    for (x0, y0, side), value in zip(_squares(frame, channel), (BRIGHT, GREY), strict=True):
        image[y0 : y0 + side, x0 : x0 + side] = value
        masks.append(hand.rect_mask(H, W, x0, y0, x0 + side, y0 + side))
    return image, masks


def _jpeg(image_rgb: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 98])
    assert ok
    return buf.tobytes()


def make_scene(name: str, seed: int) -> SceneRecord:
    """Two cameras, four frames (all stored), two tracks, a mask per (image, track), regions of the keyframe
    (frame 3) in both cameras, two spatial QA and one spatiotemporal QA."""
    rng = np.random.default_rng(seed)
    n_cams, n_tracks = len(CHANNELS), 2
    frames = hand.frames_table([f"{name}-f{i}" for i in range(N_FRAMES)])
    cameras = hand.cameras_table(CHANNELS, np.array([[50.0, 0, W / 2], [0, 50.0, H / 2], [0, 0, 1]]), W, H)
    rows, data, mask_rows = [], [], []
    for f in range(N_FRAMES):
        for c in range(n_cams):
            image, masks = _image_and_masks(rng, f, c)
            rows.append((f, c))
            data.append(_jpeg(image))
            mask_rows.extend((len(rows) - 1, t, m) for t, m in enumerate(masks))
    images = hand.images_table(rows, data, token_prefix=f"{name}-", timestamp_step_us=10)
    dets = DetectionsTable(
        np.zeros(2, np.int32),
        rng.normal(size=(2, 3)),
        np.ones((2, 3)),
        np.zeros(2),
        np.zeros((2, 3)),
        str_array(["car", "car"]),
        np.ones(2),
        str_array(["1", "2"]),
    )
    present = np.ones((n_tracks, N_FRAMES), dtype=bool)
    tracks = TracksTable(
        str_array(["1", "2"]),
        str_array(["car", "pedestrian"]),
        present,
        rng.normal(size=(n_tracks, N_FRAMES, 3)),
        np.full((n_tracks, N_FRAMES, 3), 2.0),
        np.zeros((n_tracks, N_FRAMES)),
        np.ones((n_tracks, N_FRAMES)),
    )
    masks = hand.masks_table(mask_rows, np.linspace(5, 20, len(mask_rows)), quality=0.95, box_iou=1.0, coverage=0.9)
    key_rows = {(r[0], r[1]): m for m, r in enumerate(mask_rows) if rows[r[0]][0] == 3}
    regions = RegionsTable(
        np.zeros(4, np.int32),
        np.array([0, 0, 1, 1], np.int32),
        np.array([0, 1, 0, 1], np.int32),
        np.array([0, 1, 0, 1], np.int32),
        np.array([key_rows[(rows.index((3, c)), t)] for c in (0, 1) for t in (0, 1)], np.int32),
    )
    qa = QATable(
        question_id=str_array([f"{name}-q0", f"{name}-q1", f"{name}-q2"]),
        category=str_array(["object_spatial", "ego_spatial", "spatiotemporal"]),
        predicate=str_array(["left_of", "ego_distance", "target_distance"]),
        keyframe_index=np.zeros(3, np.int32),
        channel_index=np.array([0, 1, 0], np.int32),
        region_ids=np.array([[0, 1], [0, -1], [0, -1]], np.int32),
        track_index=np.array([[0, 1], [0, -1], [0, -1]], np.int32),
        frame_indices=np.array([[-1] * 4, [-1] * 4, [0, 1, 2, 3]], np.int32),
        question=str_array(
            ["Is Region [0] left of Region [1]?", "How far is Region [0]?", "How far will Region [0] be in 1 s?"]
        ),
        answer=str_array(["Yes.", "12.35 m", "10.00 m"]),
        gt_value=np.array([np.nan, 12.35, 10.0]),
        unit=str_array(["", "m", "m"]),
        gt_label=str_array(["yes", "", ""]),
        gt_extra=str_array(["{}", "{}", '{"bearing_deg": 3.0}']),
        group_id=str_array(["", "", f"{name}-g0"]),
        horizon_s=np.array([0, 0, 1], np.int32),
        out_of_view=np.array([-1, -1, 0], np.int8),
        object_class=str_array(["vehicle", "vehicle", "vehicle"]),
        visual_evidence=np.ones(3, bool),
    )
    meta = SceneMeta(
        token=f"tok-{name}",
        name=name,
        description="hand-built",
        log_name="log",
        source_format="nuscenes",
        source_version="v-test",
    )
    return SceneRecord(
        meta,
        frames,
        cameras,
        images,
        hand.keyframes_table(3),
        hand.no_skipped_keyframes(),
        dets,
        tracks,
        hand.still_attributes(n_tracks, N_FRAMES),
        None,
        masks,
        regions,
        qa,
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return hand.write_dataset(tmp_path_factory.mktemp("src"), [make_scene("scene-a", 1), make_scene("scene-b", 2)])


def _tree_bytes(root: Path) -> dict[str, bytes]:
    """Every deterministic file of a split folder (journals hold times and are left out)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "journal.jsonl"
    }


def _assert_table_equal(a, b, skip: tuple[str, ...] = ()) -> None:
    for f in fields(a):
        if f.name in skip or f.name in type(a).BYTES_FIELDS:
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if np.asarray(x).dtype == object:
            assert list(np.asarray(x).ravel()) == list(np.asarray(y).ravel()), f.name
        else:
            np.testing.assert_array_equal(x, y, err_msg=f.name)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max(1, (a | b).sum()))


# ------------------------------------------------------------------------------------------------------ outputs
def test_split_is_readable_keeps_qa_and_truth_and_changes_images(source, tmp_path):
    result = build_robustness_split(source, tmp_path, "gaussian_noise,fog", "1,3", seed=7)
    assert result.ok and len(result.splits) == 4
    index = json.loads((tmp_path / INDEX_NAME).read_text())
    assert [(e["corruption"], e["severity"]) for e in index["splits"]] == [
        ("gaussian_noise", 1),
        ("gaussian_noise", 3),
        ("fog", 1),
        ("fog", 3),
    ]
    # no absolute path in files that travel (issue 31): each records the source relative to its own folder
    assert not Path(index["source"]["path"]).is_absolute()
    assert (tmp_path / index["source"]["path"]).resolve() == source.resolve()
    src = open_dataset(source)
    for entry in index["splits"]:
        ds = open_dataset(tmp_path / entry["path"], verify=True)
        aug = ds.manifest["augmentation"]
        assert (tmp_path / entry["path"] / aug["source_dataset"]["path"]).resolve() == source.resolve()
        assert (aug["corruption"], aug["severity"]) == (entry["corruption"], entry["severity"])
        assert aug["source_dataset"]["config_hash"] == src.manifest["config_hash"]
        assert ds.manifest["config"] == src.manifest["config"]
        assert ds.manifest["config_hash"] == entry["config_hash"] != src.manifest["config_hash"]
        assert ds.scenes == src.scenes
        for name in src.scenes:
            a, b = src.scene(name), ds.scene(name)
            for table in (
                "frames",
                "cameras",
                "keyframes",
                "detections",
                "tracks",
                "attributes",
                "masks",
                "regions",
                "qa",
            ):
                _assert_table_equal(getattr(a, table), getattr(b, table))
            assert a.ground_truth is None and b.ground_truth is None
            assert b.image_keys() == a.image_keys()
            for key in a.image_keys():
                assert b.image_bytes(*key)[:2] == b"\xff\xd8"
                assert b.image_bytes(*key) != a.image_bytes(*key)
                diff = np.abs(b.image(*key).astype(int) - a.image(*key).astype(int)).mean()
                assert diff > 2.0, (entry["path"], key)
    # the parameters recorded are those of the level
    fog3 = open_dataset(tmp_path / "fog" / "s3").manifest["augmentation"]
    assert fog3["params"] == [2.5, 1.7] and fog3["seed"] == 7 and fog3["jpeg_quality"] == 95


def test_manifest_counts_and_totals(source, tmp_path):
    build_robustness_split(source, tmp_path, ["brightness"], [2])
    m = open_dataset(tmp_path / "brightness" / "s2").manifest
    assert m["totals"]["scenes"] == 2 and m["totals"]["qa"] == 6 and m["totals"]["masks"] == 32
    assert m["augmentation"]["totals"] == {"images_dropped": 0, "qa_without_visual_evidence": 0}
    assert m["augmentation"]["kind"] == "image" and m["failed_scenes"] == []


@pytest.mark.parametrize(("name", "severity"), [("lens_distortion", 5), ("elastic", 5)])
def test_warping_corruption_moves_masks_with_the_image(source, tmp_path, name, severity):
    build_robustness_split(source, tmp_path, name, severity)
    src, ds = open_dataset(source), open_dataset(tmp_path / name / f"s{severity}")
    moved, gain = [], []
    for scene in src.scenes:
        a, b = src.scene(scene), ds.scene(scene)
        masks = b.masks
        for m in range(len(masks)):
            if int(masks.track_index[m]) != 0:
                continue
            key = b.image_keys()[int(masks.image_index[m])]
            warped_mask = b.mask(m)
            bright = (b.image(*key) > 200).all(axis=2)  # the bright square after warping
            assert _iou(warped_mask, bright) > 0.85, (scene, key, _iou(warped_mask, bright))
            moved.append(_iou(warped_mask, a.mask(m)))
            gain.append(_iou(warped_mask, bright) - _iou(a.mask(m), bright))  # vs leaving the mask where it was
            assert int(masks.area_px[m]) == int(warped_mask.sum())
            box, _ = mask_boxes(warped_mask[None])
            np.testing.assert_array_equal(masks.mask_box_xyxy[m], box[0])
        _assert_table_equal(a.masks, b.masks, skip=("rle_counts", "area_px", "mask_box_xyxy"))
        _assert_table_equal(a.qa, b.qa)
    assert min(moved) < 0.9  # the masks really moved
    assert min(gain) > -0.02 and np.mean(gain) > 0.03  # and they moved with the image


def test_corrupt_record_warps_masks_with_the_same_map_as_the_image(source):
    """Directly, without files: the record's masks equal the corruption's own warp of the source masks."""
    record = open_dataset(source).scene("scene-a").record()
    spec = SplitSpec("lens_distortion", 4)
    out = corrupt_record(record, spec)
    from stridegen.augment.corruptions import get_corruption

    pixel_map = get_corruption("lens_distortion").warp((H, W), 4, np.random.default_rng(0))  # draws nothing
    for m in range(len(record.masks)):
        expected = pixel_map.apply_mask(decode_rle(str(record.masks.rle_counts[m]), H, W))
        np.testing.assert_array_equal(decode_rle(str(out.masks.rle_counts[m]), H, W), expected)
    assert out.extra["augmentation"]["image_dropped"].tolist() == [False] * len(record.images)


# ------------------------------------------------------------------------------------------------------ camera sets
def test_camera_crash_blacks_out_a_camera_and_marks_its_questions(source, tmp_path):
    build_robustness_split(source, tmp_path, "camera_crash", 1, seed=3)
    src, ds = open_dataset(source), open_dataset(tmp_path / "camera_crash" / "s1")
    total_dropped = 0
    for scene in src.scenes:
        a, b = src.scene(scene), ds.scene(scene)
        dropped = b.table("augmentation")["image_dropped"].astype(bool)
        channels = {b.image_keys()[i][0] for i in np.flatnonzero(dropped)}
        assert len(channels) == 1  # round(1 * 2 / 6) -> at least one camera of two, for the whole clip
        (gone,) = channels
        assert dropped.sum() == N_FRAMES
        for i, key in enumerate(b.image_keys()):
            if dropped[i]:
                assert b.image(*key).max() == 0  # black frame
            else:
                assert b.image_bytes(*key) == a.image_bytes(*key)  # kept camera: bytes unchanged
        qa = b.qa
        expected = np.array([str(b.cameras.channel[c]) != gone for c in qa.channel_index])
        np.testing.assert_array_equal(qa.visual_evidence, expected)
        _assert_table_equal(a.qa, qa, skip=("visual_evidence",))
        _assert_table_equal(a.masks, b.masks)
        total_dropped += int(dropped.sum())
    aug = ds.manifest["augmentation"]
    assert aug["kind"] == "camera_set" and aug["draw_scope"] == "scene"
    assert aug["totals"]["images_dropped"] == total_dropped
    assert aug["totals"]["qa_without_visual_evidence"] == sum(
        int((~ds.scene(s).qa.visual_evidence).sum()) for s in ds.scenes
    )


def test_camera_crash_at_severity_five_leaves_no_evidence(source, tmp_path):
    build_robustness_split(source, tmp_path, "camera_crash", 5)
    ds = open_dataset(tmp_path / "camera_crash" / "s5")
    for scene in ds:
        assert not scene.qa.visual_evidence.any()
        assert all(scene.image(*k).max() == 0 for k in scene.image_keys())


def test_frame_lost_marks_exactly_the_questions_that_show_a_lost_image(source):
    record = open_dataset(source).scene("scene-b").record()
    for seed in range(6):
        spec = SplitSpec("frame_lost", 3, seed=seed)
        dropped = dropped_images(record, spec)
        out = corrupt_record(record, spec)
        np.testing.assert_array_equal(out.extra["augmentation"]["image_dropped"], dropped)
        lost = {
            (int(record.images.frame_index[i]), int(record.images.channel_index[i])) for i in np.flatnonzero(dropped)
        }
        shows = [[(3, 0)], [(3, 1)], [(f, 0) for f in range(4)]]  # q0, q1 (keyframe 3), q2 (frames 0..3)
        expected = [not any(p in lost for p in s) for s in shows]
        assert out.qa.visual_evidence.tolist() == expected, seed
        np.testing.assert_array_equal(dropped, dropped_images(record, spec))  # reproducible draw


# ------------------------------------------------------------------------------------------------------ resume, bytes
def test_rerun_skips_finished_scenes_and_keeps_the_bytes(source, tmp_path):
    first = build_robustness_split(source, tmp_path, "snow", 2)
    before = _tree_bytes(tmp_path)
    assert [r.status for r in first.splits[0].results] == ["built", "built"]
    again = build_robustness_split(source, tmp_path, "snow", 2)
    assert [r.status for r in again.splits[0].results] == ["resumed", "resumed"]
    assert _tree_bytes(tmp_path) == before


@pytest.mark.slow
def test_same_arguments_give_identical_bytes(source, tmp_path):
    args = dict(corruptions="lens_distortion,gaussian_noise,frame_lost", severities=[2, 4], seed=11)
    build_robustness_split(source, tmp_path / "a", **args)
    build_robustness_split(source, tmp_path / "b", **args)
    a, b = _tree_bytes(tmp_path / "a"), _tree_bytes(tmp_path / "b")
    assert a.keys() == b.keys() and len(a) == 1 + 6 * 3  # index + 6 splits x (manifest + 2 shards)
    assert a == b
    build_robustness_split(source, tmp_path / "c", **{**args, "seed": 12})
    c = _tree_bytes(tmp_path / "c")
    assert c["gaussian_noise/s2/shards/scene-a.h5"] != a["gaussian_noise/s2/shards/scene-a.h5"]
    # deterministic corruptions do not draw: the seed changes only the hash, not the images
    pa, pc = (
        open_dataset(tmp_path / "a" / "lens_distortion" / "s2"),
        open_dataset(tmp_path / "c" / "lens_distortion" / "s2"),
    )
    key = pa.scene("scene-a").image_keys()[0]
    assert pa.scene("scene-a").image_bytes(*key) == pc.scene("scene-a").image_bytes(*key)


def test_killed_run_resumes_to_the_same_bytes(source, tmp_path, monkeypatch):
    args = dict(corruptions="fog,camera_crash", severities=[3], seed=5)
    build_robustness_split(source, tmp_path / "clean", **args)
    real = split_mod.process_split_scene
    calls = {"n": 0}

    def dies_on_the_third_scene(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # what a Ctrl-C / kill in the middle of a run looks like in-process
        return real(*a, **k)

    monkeypatch.setattr(split_mod, "process_split_scene", dies_on_the_third_scene)
    with pytest.raises(KeyboardInterrupt):
        build_robustness_split(source, tmp_path / "killed", **args)
    assert not (tmp_path / "killed" / INDEX_NAME).exists()
    monkeypatch.setattr(split_mod, "process_split_scene", real)
    resumed = build_robustness_split(source, tmp_path / "killed", **args)
    statuses = [r.status for s in resumed.splits for r in s.results]
    assert statuses == ["resumed", "resumed", "built", "built"]
    assert _tree_bytes(tmp_path / "killed") == _tree_bytes(tmp_path / "clean")


@pytest.mark.slow
def test_workers_do_not_change_the_bytes(source, tmp_path):
    args = dict(corruptions="motion_blur", severities="1-2", seed=2)
    build_robustness_split(source, tmp_path / "one", **args, workers=1)
    build_robustness_split(source, tmp_path / "two", **args, workers=2)
    assert _tree_bytes(tmp_path / "one") == _tree_bytes(tmp_path / "two")


# ------------------------------------------------------------------------------------------------------ errors
def test_bad_arguments_raise_config_errors(source, tmp_path):
    with pytest.raises(ConfigError, match="unknown corruption 'hail'"):
        build_robustness_split(source, tmp_path, "fog,hail", 1)
    with pytest.raises(ConfigError, match="severity"):
        build_robustness_split(source, tmp_path, "fog", 6)
    with pytest.raises(ConfigError, match="jpeg_quality"):
        build_robustness_split(source, tmp_path, "fog", 1, jpeg_quality=0)
    with pytest.raises(ConfigError, match="outside the source"):
        build_robustness_split(source, source / "splits", "fog", 1)
    assert not any(tmp_path.iterdir())  # nothing written before the arguments are checked
    assert resolve_levels("all") == [1, 2, 3, 4, 5] and resolve_levels(3) == [3]


def test_other_arguments_in_the_same_folder_need_overwrite(source, tmp_path):
    build_robustness_split(source, tmp_path, "contrast", 1, seed=0)
    with pytest.raises(ConfigError, match="overwrite"):
        build_robustness_split(source, tmp_path, "contrast", 1, seed=1)
    result = build_robustness_split(source, tmp_path, "contrast", 1, seed=1, overwrite=True)
    assert [r.status for r in result.splits[0].results] == ["built", "built"]
    # a second run with another corruption adds to the index
    build_robustness_split(source, tmp_path, "grayscale", 2, seed=1)
    index = json.loads((tmp_path / INDEX_NAME).read_text())
    assert [(e["corruption"], e["severity"], e["seed"]) for e in index["splits"]] == [
        ("contrast", 1, 1),
        ("grayscale", 2, 1),
    ]


def test_missing_source_is_a_clear_error(tmp_path):
    from stridegen.shards.schema import ShardError

    with pytest.raises(ShardError, match="manifest not found"):
        build_robustness_split(tmp_path / "nothing", tmp_path / "out", "fog", 1)


# ------------------------------------------------------------------------------------------------------ CLI
def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(augment)
    return app


def test_cli_builds_splits_and_reports_bad_names(source, tmp_path):
    out = tmp_path / "splits"
    result = CliRunner().invoke(
        _app(), [str(source), "--out", str(out), "--corruptions", "pixelate", "--severity", "2", "--seed", "4"]
    )
    assert result.exit_code == 0, result.output
    assert (out / INDEX_NAME).is_file() and open_dataset(out / "pixelate" / "s2").scenes == ["scene-a", "scene-b"]
    bad = CliRunner().invoke(_app(), [str(source), "--out", str(out), "--corruptions", "hail", "--severity", "2"])
    assert bad.exit_code == 2 and "unknown corruption" in bad.output
    both = CliRunner().invoke(_app(), [str(source), "--preview", str(source), "--out", str(out)])
    assert both.exit_code == 2 and "either" in both.output
    neither = CliRunner().invoke(_app(), ["--out", str(out)])
    assert neither.exit_code == 2
