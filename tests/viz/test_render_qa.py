"""`render_qa` and `stridegen render` on a hand-built one-scene dataset with masks, regions and QA."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from stridegen.config import BuildConfig, config_hash
from stridegen.errors import StrideGenError
from stridegen.pipeline.segment.rle import encode_rle
from stridegen.pipeline.visibility import mask_boxes
from stridegen.shards.manifest import build_manifest, write_manifest
from stridegen.shards.reader import open_dataset
from stridegen.shards.schema import (
    AttributesTable,
    CamerasTable,
    DetectionsTable,
    FramesTable,
    ImagesTable,
    KeyframesTable,
    MasksTable,
    QATable,
    RegionsTable,
    SceneMeta,
    SceneRecord,
    SkippedKeyframesTable,
    TracksTable,
    bytes_array,
    str_array,
)
from stridegen.shards.writer import write_shard
from stridegen.viz.render_qa import QuestionNotFoundError, render, render_qa, safe_file_stem
from stridegen.viz.som import draw_set_of_marks

H, W = 90, 160
N_FRAMES = 4
KEYFRAME = 3
ST_MISSING_FRAME = 1  # the target has no mask in this frame's image


def _box(track: int, frame: int) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) of a track's square in CAM_FRONT: track 0 moves right, track 1 stays."""
    return (10 + 8 * frame, 20, 40 + 8 * frame, 50) if track == 0 else (100, 30, 140, 70)


def _record() -> SceneRecord:
    rng = np.random.default_rng(0)
    frames = FramesTable(str_array(f"f{i}" for i in range(N_FRAMES)), np.arange(N_FRAMES, dtype=np.int64) * 500_000,
                         np.tile(np.eye(4), (N_FRAMES, 1, 1)))
    cameras = CamerasTable(str_array(["CAM_FRONT", "CAM_BACK"]), np.tile(np.eye(3), (2, 1, 1)),
                           np.tile(np.eye(4), (2, 1, 1)), np.full(2, W, np.int32), np.full(2, H, np.int32))
    rows, data, mask_rows = [], [], []
    for f in range(N_FRAMES):
        for c in range(2):
            image = np.full((H, W, 3), 90 + 20 * c, np.uint8)
            image[:, :, 2] = rng.integers(60, 120, (H, W), dtype=np.uint8)  # some texture
            ok, buf = cv2.imencode(".jpg", image)
            assert ok
            rows.append((f, c))
            data.append(buf.tobytes())
            for t in (0, 1):
                if c == 0 and t == 0 and f == ST_MISSING_FRAME:
                    continue
                x0, y0, x1, y1 = _box(t, f)
                mask = np.zeros((H, W), bool)
                mask[y0:y1, x0:x1] = True
                mask_rows.append((len(rows) - 1, t, mask))
    n_img, n_m = len(rows), len(mask_rows)
    images = ImagesTable(np.array([r[0] for r in rows], np.int32), np.array([r[1] for r in rows], np.int32),
                         str_array(f"sd{i}" for i in range(n_img)), np.arange(n_img, dtype=np.int64),
                         np.tile(np.eye(4), (n_img, 1, 1)), bytes_array(data))
    masks_arr = np.stack([m for _, _, m in mask_rows])
    boxes, area = mask_boxes(masks_arr)
    masks = MasksTable(np.array([r[0] for r in mask_rows], np.int32), np.array([r[1] for r in mask_rows], np.int32),
                       str_array(encode_rle(m) for m in masks_arr), area, boxes, boxes.copy(), np.full(n_m, 10.0),
                       np.full(n_m, 0.9), np.ones(n_m), np.ones(n_m), *(np.ones(n_m, bool) for _ in range(4)))
    key_image = rows.index((KEYFRAME, 0))
    mask_of = {(r[0], r[1]): m for m, r in enumerate(mask_rows)}
    # region ids deliberately differ from track indices: region 0 is track 1, region 1 is track 0
    regions = RegionsTable(np.zeros(2, np.int32), np.zeros(2, np.int32), np.array([0, 1], np.int32),
                           np.array([1, 0], np.int32),
                           np.array([mask_of[(key_image, 1)], mask_of[(key_image, 0)]], np.int32))
    qa = QATable(
        question_id=str_array(["scene-r/kf0/CAM_FRONT/q0", "scene-r/kf0/CAM_FRONT/st0"]),
        category=str_array(["object_spatial", "spatiotemporal"]), predicate=str_array(["left_of", "distance_t1"]),
        keyframe_index=np.zeros(2, np.int32), channel_index=np.zeros(2, np.int32),
        region_ids=np.array([[1, 0], [1, -1]], np.int32), track_index=np.array([[0, 1], [0, -1]], np.int32),
        frame_indices=np.array([[-1] * 4, [0, 1, 2, 3]], np.int32),
        question=str_array(["Is Region [1] to the left of Region [0]?", "How far will Region [1] be in 1 s?"]),
        answer=str_array(["Yes, Region [1] is to the left.", "It will be 7.25 m away."]),
        gt_value=np.array([np.nan, 7.25]), unit=str_array(["", "m"]), gt_label=str_array(["yes", ""]),
        gt_extra=str_array(["{}", "{}"]), group_id=str_array(["", "g0"]), horizon_s=np.array([0, 1], np.int32),
        out_of_view=np.array([-1, 0], np.int8), object_class=str_array(["vehicle", "vehicle"]),
        visual_evidence=np.ones(2, bool))
    return SceneRecord(SceneMeta(token="t", name="scene-r"), frames, cameras, images,
                       KeyframesTable(np.array([KEYFRAME], np.int32), np.array([1.5]),
                                      np.array([[0, 1, 2, 3]], np.int32), np.array([-1.5, -1.0, -0.5, 0.0])),
                       SkippedKeyframesTable(np.zeros(0), str_array([])),
                       DetectionsTable(np.zeros(0, np.int32), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0),
                                       np.zeros((0, 3)), str_array([]), np.zeros(0), str_array([])),
                       TracksTable(str_array(["a", "b"]), str_array(["car", "car"]), np.ones((2, N_FRAMES), bool),
                                   np.zeros((2, N_FRAMES, 3)), np.ones((2, N_FRAMES, 3)), np.zeros((2, N_FRAMES)),
                                   np.ones((2, N_FRAMES))),
                       AttributesTable(np.zeros((2, N_FRAMES, 3)), np.zeros((N_FRAMES, 3))), None, masks, regions, qa)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ds")
    cfg = BuildConfig()
    info = write_shard(_record(), root, config_hash(cfg))
    write_manifest(root, build_manifest(cfg, {"root": "/x", "format": "nuscenes", "version": "v"}, [info]))
    return root


def _read_png(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def _square(track: int, frame: int) -> np.ndarray:
    x0, y0, x1, y1 = _box(track, frame)
    mask = np.zeros((H, W), bool)
    mask[y0:y1, x0:x1] = True
    return mask


def test_spatial_question_draws_its_regions_on_the_keyframe_image(dataset, tmp_path):
    paths = render_qa(dataset, "scene-r/kf0/CAM_FRONT/q0", tmp_path)
    assert [p.name for p in paths] == ["scene-r_kf0_CAM_FRONT_q0.png", "scene-r_kf0_CAM_FRONT_q0.txt"]
    scene = open_dataset(dataset).scene("scene-r")
    # region 1 is track 0's square, region 0 is track 1's (from the regions table), in the question's order
    expected = draw_set_of_marks(scene.image("CAM_FRONT", KEYFRAME),
                                 np.stack([_square(0, KEYFRAME), _square(1, KEYFRAME)]), [1, 0])
    np.testing.assert_array_equal(_read_png(paths[0]), expected)
    text = paths[1].read_text()
    for line in ("question: Is Region [1] to the left of Region [0]?", "answer: Yes, Region [1] is to the left.",
                 "gt_value: nan", "unit: ", "gt_label: yes", "camera: CAM_FRONT", "scene: scene-r"):
        assert line in text


def test_spatiotemporal_question_draws_the_target_in_each_frame(dataset, tmp_path):
    paths = render_qa(dataset, "scene-r/kf0/CAM_FRONT/st0", tmp_path)
    stem = "scene-r_kf0_CAM_FRONT_st0"
    assert [p.name for p in paths] == [f"{stem}_{k}_f{k:04d}.png" for k in range(N_FRAMES)] + [f"{stem}.txt"]
    scene = open_dataset(dataset).scene("scene-r")
    for frame, path in enumerate(paths[:-1]):
        image = scene.image("CAM_FRONT", frame)
        if frame == ST_MISSING_FRAME:
            np.testing.assert_array_equal(_read_png(path), image)  # no mask of the target there: drawn bare
        else:
            expected = draw_set_of_marks(image, _square(0, frame)[None], [1])
            np.testing.assert_array_equal(_read_png(path), expected)
    text = paths[-1].read_text()
    assert "gt_value: 7.25" in text and "unit: m" in text and "answer: It will be 7.25 m away." in text
    assert "no mask in this image for Region [1] (track 0)" in text
    assert "horizon_s: 1" in text


def test_unknown_question_is_a_typed_key_error(dataset, tmp_path):
    with pytest.raises(QuestionNotFoundError) as info:
        render_qa(dataset, "nope", tmp_path)
    assert isinstance(info.value, KeyError) and isinstance(info.value, StrideGenError)
    assert "'nope'" in str(info.value) and "scene-r/kf0/CAM_FRONT/q0" in str(info.value)
    assert not any(tmp_path.iterdir())


def test_file_stems_are_safe():
    assert safe_file_stem("a/b c:d") == "a_b_c_d"
    assert safe_file_stem("..") == "question"


def test_render_command(dataset, tmp_path):
    app = typer.Typer()
    app.command()(render)
    ok = CliRunner().invoke(app, [str(dataset), "--qa", "scene-r/kf0/CAM_FRONT/q0", "--out", str(tmp_path / "o")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "o" / "scene-r_kf0_CAM_FRONT_q0.png").is_file() and ".txt" in ok.output
    bad = CliRunner().invoke(app, [str(dataset), "--qa", "missing", "--out", str(tmp_path / "o")])
    assert bad.exit_code == 2 and "no question with id 'missing'" in bad.output
    nods = CliRunner().invoke(app, [str(tmp_path / "none"), "--qa", "x", "--out", str(tmp_path / "o")])
    assert nods.exit_code == 2 and "manifest not found" in nods.output
