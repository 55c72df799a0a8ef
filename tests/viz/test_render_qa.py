"""`render_qa` and `stridegen render` on a hand-built one-scene dataset with masks, regions and QA."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from stridegen.cli.render import render
from stridegen.core.errors import StrideGenError
from stridegen.pipeline.som import draw_set_of_marks
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
from stridegen.viz.render_qa import QuestionNotFoundError, render_qa, safe_file_stem
from tests import shard_fixtures as hand  # hand-built scene tables and datasets, shared with other tests

H, W = 90, 160
N_FRAMES = 4
KEYFRAME = 3
ST_MISSING_FRAME = 1  # the target has no mask in this frame's image


def _box(track: int, frame: int) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) of a track's square in CAM_FRONT: track 0 moves right, track 1 stays."""
    return (10 + 8 * frame, 20, 40 + 8 * frame, 50) if track == 0 else (100, 30, 140, 70)


def _record() -> SceneRecord:
    rng = np.random.default_rng(0)
    frames = hand.frames_table([f"f{i}" for i in range(N_FRAMES)])
    cameras = hand.cameras_table(["CAM_FRONT", "CAM_BACK"], np.eye(3), W, H)
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
                mask_rows.append((len(rows) - 1, t, _square(t, f)))
    images = hand.images_table(rows, data)
    masks = hand.masks_table(mask_rows, depth_m=10.0, quality=0.9, box_iou=1.0, coverage=1.0)
    key_image = rows.index((KEYFRAME, 0))
    mask_of = {(r[0], r[1]): m for m, r in enumerate(mask_rows)}
    # region ids deliberately differ from track indices: region 0 is track 1, region 1 is track 0
    regions = RegionsTable(
        np.zeros(2, np.int32),
        np.zeros(2, np.int32),
        np.array([0, 1], np.int32),
        np.array([1, 0], np.int32),
        np.array([mask_of[(key_image, 1)], mask_of[(key_image, 0)]], np.int32),
    )
    qa = QATable(
        question_id=str_array(["scene-r/kf0/CAM_FRONT/q0", "scene-r/kf0/CAM_FRONT/st0"]),
        category=str_array(["object_spatial", "spatiotemporal"]),
        predicate=str_array(["left_of", "distance_t1"]),
        keyframe_index=np.zeros(2, np.int32),
        channel_index=np.zeros(2, np.int32),
        region_ids=np.array([[1, 0], [1, -1]], np.int32),
        track_index=np.array([[0, 1], [0, -1]], np.int32),
        frame_indices=np.array([[-1] * 4, [0, 1, 2, 3]], np.int32),
        question=str_array(["Is Region [1] to the left of Region [0]?", "How far will Region [1] be in 1 s?"]),
        answer=str_array(["Yes, Region [1] is to the left.", "It will be 7.25 m away."]),
        gt_value=np.array([np.nan, 7.25]),
        unit=str_array(["", "m"]),
        gt_label=str_array(["yes", ""]),
        gt_extra=str_array(["{}", "{}"]),
        group_id=str_array(["", "g0"]),
        horizon_s=np.array([0, 1], np.int32),
        out_of_view=np.array([-1, 0], np.int8),
        object_class=str_array(["vehicle", "vehicle"]),
        visual_evidence=np.ones(2, bool),
    )
    return SceneRecord(
        SceneMeta(token="t", name="scene-r"),
        frames,
        cameras,
        images,
        hand.keyframes_table(KEYFRAME),
        hand.no_skipped_keyframes(),
        DetectionsTable(
            np.zeros(0, np.int32),
            np.zeros((0, 3)),
            np.zeros((0, 3)),
            np.zeros(0),
            np.zeros((0, 3)),
            str_array([]),
            np.zeros(0),
            str_array([]),
        ),
        TracksTable(
            str_array(["a", "b"]),
            str_array(["car", "car"]),
            np.ones((2, N_FRAMES), bool),
            np.zeros((2, N_FRAMES, 3)),
            np.ones((2, N_FRAMES, 3)),
            np.zeros((2, N_FRAMES)),
            np.ones((2, N_FRAMES)),
        ),
        hand.still_attributes(2, N_FRAMES),
        None,
        masks,
        regions,
        qa,
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return hand.write_dataset(tmp_path_factory.mktemp("ds"), [_record()])


def _read_png(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def _square(track: int, frame: int) -> np.ndarray:
    return hand.rect_mask(H, W, *_box(track, frame))


def test_spatial_question_draws_its_regions_on_the_keyframe_image(dataset, tmp_path):
    paths = render_qa(dataset, "scene-r/kf0/CAM_FRONT/q0", tmp_path)
    assert [p.name for p in paths] == ["scene-r_kf0_CAM_FRONT_q0.png", "scene-r_kf0_CAM_FRONT_q0.txt"]
    scene = open_dataset(dataset).scene("scene-r")
    # region 1 is track 0's square, region 0 is track 1's (from the regions table), in the question's order
    expected = draw_set_of_marks(
        scene.image("CAM_FRONT", KEYFRAME), np.stack([_square(0, KEYFRAME), _square(1, KEYFRAME)]), [1, 0]
    )
    np.testing.assert_array_equal(_read_png(paths[0]), expected)
    text = paths[1].read_text()
    for line in (
        "question: Is Region [1] to the left of Region [0]?",
        "answer: Yes, Region [1] is to the left.",
        "gt_value: nan",
        "unit: ",
        "gt_label: yes",
        "camera: CAM_FRONT",
        "scene: scene-r",
    ):
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
