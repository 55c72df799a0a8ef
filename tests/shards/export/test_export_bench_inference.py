"""The strideqa-bench export as the official STRIDE-QA-Bench inference reads it, through our own reader of its inputs.

The reader below is written from the behaviour of the official inference (turingmotors/STRIDE-QA-Dataset,
``benchmarks/STRIDE-QA-Bench/src/strideqa_bench/inference``: read, not copied), independently of the exporter:

- it reads every ``strideqa_bench*.json`` of the annotation folder (a list of question records) and requires each
  record to have ``rle`` with a ``current`` entry;
- for the i-th path of ``images`` it opens ``<image folder>/<path>`` as RGB and resizes it to the inference frame
  size (width 532, height 336 unless ``--width`` / ``--height`` say otherwise);
- it takes the mask of the i-th time bucket (``prev_3``, ``prev_2``, ``prev_1``, ``current``, by position, not by
  time), decodes the JSON object with pycocotools as it is, resizes it to the frame size by OpenCV nearest
  neighbour, and draws the mask and the region's number; the drawing's box is made from the mask's outlines (OpenCV
  contours of every level, each as a polygon, those of fewer than 3 points dropped) by pycocotools (polygons ->
  RLE, merged, box), which raises IndexError when no outline is left. Nothing catches an error: one bad record
  stops the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pycocotools.mask as coco_mask
import pytest
from PIL import Image

from stridegen.core.errors import ConfigError
from stridegen.formats.rle import encode_rle
from stridegen.jobs.export import run_export
from stridegen.shards.export.strideqa_bench import BENCH_FRAME_SIZE, mark_drawable
from stridegen.shards.reader import open_dataset

OFFICIAL_FRAME_SIZE = (532, 336)  # (width, height): the official inference's defaults
OFFICIAL_BUCKETS = ("prev_3", "prev_2", "prev_1", "current")  # the i-th image's mask is rle[OFFICIAL_BUCKETS[i]]


def official_mark_box(rle: dict[str, Any], frame_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The mask the official inference draws from one ``rle`` entry at ``frame_size`` and the box its mark drawing
    computes ([x0, y0, x1, y1] in pixels of the resized frame); raises as the official code does (IndexError for a
    mask without an outline of 3 or more points)."""
    mask = coco_mask.decode(rle).astype(np.uint8)
    mask = cv2.resize(mask, frame_size, interpolation=cv2.INTER_NEAREST)
    height, width = mask.shape
    outlines, _ = cv2.findContours(mask, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_NONE)
    polygons = [(outline.reshape(-1) + 0.5).tolist() for outline in outlines if outline.size >= 2 * 3]
    merged = coco_mask.merge(coco_mask.frPyObjects(polygons, height, width))  # IndexError on no polygon
    x, y, w, h = coco_mask.toBbox(merged)
    return mask, np.array([x, y, x + w, y + h])


def read_official_inputs(
    annotation_dir: Path, image_folder: Path, frame_size: tuple[int, int] = OFFICIAL_FRAME_SIZE
) -> Iterator[tuple[dict[str, Any], list[np.ndarray]]]:
    """Every question record of ``annotation_dir`` with the masks the official loop would draw on its frames, in
    the official order (files sorted by name, records in file order); asserts what the loop needs of each input."""
    files = sorted(annotation_dir.glob("strideqa_bench*.json"))
    assert files, f"no annotation file in {annotation_dir}"
    frames: dict[str, np.ndarray] = {}  # the loop loads an image for each question; loading it once gives the same
    for path in files:
        for record in json.loads(path.read_text(encoding="utf-8")):
            assert "current" in record["rle"], record["question_id"]
            assert len(record["images"]) <= len(OFFICIAL_BUCKETS), record["question_id"]
            drawn = []
            for position, image_file in enumerate(record["images"]):
                if image_file not in frames:
                    with Image.open(image_folder / image_file) as image:
                        frames[image_file] = np.asarray(image.convert("RGB").resize(frame_size))
                frame = frames[image_file]
                assert frame.shape == (frame_size[1], frame_size[0], 3)
                rle = record["rle"][OFFICIAL_BUCKETS[position]]
                mask, box = official_mark_box(rle, frame_size)
                assert mask.shape == frame.shape[:2] and mask.any(), (record["question_id"], position)
                assert box.shape == (4,) and np.all(np.isfinite(box))  # a thin outline's box may be empty
                drawn.append(mask)
            yield record, drawn


def _official_draws(mask: np.ndarray, frame_size: tuple[int, int]) -> bool:
    """Whether the official mark drawing succeeds for the full-size mask ``mask``."""
    rle = {"size": list(mask.shape), "counts": encode_rle(mask)}
    try:
        drawn, _ = official_mark_box(rle, frame_size)
    except IndexError:
        return False
    return bool(drawn.any())


# --- the reader's own checks: it fails where the official loop fails -------------------------------------------------


def test_the_official_box_fails_on_an_empty_mask_as_the_issue_reports():
    empty = {"size": [180, 320], "counts": encode_rle(np.zeros((180, 320), dtype=bool))}
    with pytest.raises(IndexError):
        official_mark_box(empty, OFFICIAL_FRAME_SIZE)


@pytest.mark.slow  # 300 full-size masks
def test_mark_drawable_agrees_with_the_official_drawing_on_small_masks():
    """Tiny blobs in a 900 x 1600 image (a nuScenes frame, shrunk about 3x by the inference): the exporter's rule
    and the reader's official drawing give the same verdict on each, and both verdicts occur."""
    rng = np.random.default_rng(0)
    verdicts = []
    for _ in range(300):
        mask = np.zeros((900, 1600), dtype=bool)
        r, c = int(rng.integers(0, 890)), int(rng.integers(0, 1590))
        n = int(rng.integers(1, 12))
        mask[r + rng.integers(0, 8, n), c + rng.integers(0, 8, n)] = True
        expected = _official_draws(mask, OFFICIAL_FRAME_SIZE)
        assert mark_drawable(mask, OFFICIAL_FRAME_SIZE) == expected
        verdicts.append(expected)
    assert any(verdicts) and not all(verdicts)
    assert not mark_drawable(np.zeros((900, 1600), dtype=bool))
    assert BENCH_FRAME_SIZE == OFFICIAL_FRAME_SIZE


# --- every question of a bench export passes the reader ---------------------------------------------------------------


@pytest.fixture(scope="module")
def bench(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench-inference") / "out"
    result = run_export(dataset, out, "strideqa-bench")
    assert result.ok and result.manifest_path is not None, [r.reason for r in result.failed]
    return out


def _totals(out: Path) -> dict[str, int]:
    """The totals of the export manifest (``export.json``) of the export ``out``."""
    totals: dict[str, int] = json.loads((out / "export.json").read_text())["totals"]
    return totals


def _left_out_questions(dataset: Path, exported: set[str], frame_size: tuple[int, int]) -> tuple[int, int]:
    """(questions, of which undrawable) among the dataset's spatiotemporal questions that are not in ``exported``
    (stridegen question ids); each left-out question must have a context frame the official drawing rejects."""
    left, undrawable = 0, 0
    with open_dataset(dataset) as ds:
        for name in ds.scenes:
            view = ds.scene(name)
            qa, masks = view.qa, view.masks
            rows = {
                (int(f), int(c)): i
                for i, (f, c) in enumerate(
                    zip(view.array("images/frame_index"), view.array("images/channel_index"), strict=True)
                )
            }
            for q in np.flatnonzero(np.asarray(qa.category, dtype=object) == "spatiotemporal").tolist():
                if str(qa.question_id[q]) in exported:
                    continue
                left += 1
                track, channel = int(qa.track_index[q][0]), int(qa.channel_index[q])
                for frame in (int(f) for f in qa.frame_indices[q] if f >= 0):
                    hit = np.flatnonzero((masks.image_index == rows[(frame, channel)]) & (masks.track_index == track))
                    if hit.size == 0 or not _official_draws(view.mask(int(hit[0])), frame_size):
                        undrawable += 1
                        break
    return left, undrawable


@pytest.mark.slow  # exports the session's built dataset
def test_every_exported_question_passes_the_official_inference_reader(dataset, bench):
    seen = set()
    for record, masks in read_official_inputs(bench / "annotation_files", bench / "images"):
        assert len(masks) == 4, record["question_id"]  # four context frames, each drawn
        seen.add(record["token_info"]["stridegen_question_id"])
    totals = _totals(bench)
    assert len(seen) == totals["questions"] > 0
    # the questions left out are exactly those with a frame the official loop cannot draw, all counted
    left, undrawable = _left_out_questions(dataset, seen, OFFICIAL_FRAME_SIZE)
    assert left == undrawable > 0
    assert totals["undrawable_group_questions_left_out"] == left
    report = json.loads((bench / "annotation_files" / "balance.json").read_text())
    assert report["frame_size"] == list(OFFICIAL_FRAME_SIZE)
    assert report["not_exportable"]["undrawable_group"]["questions"] == left
    assert report["not_exportable"]["partial_group"] == {"groups": 0, "questions": 0}
    groups = {r["group_id"] for r, _ in read_official_inputs(bench / "annotation_files", bench / "images")}
    assert report["groups"]["drawn"] == len(groups)
    assert report["questions_drawn"] == len(seen)


@pytest.mark.slow  # exports the session's built dataset
def test_another_frame_size_is_checked_at_that_size(dataset, tmp_path):
    size = (160, 90)  # half the session dataset's 320 x 180 frames: more masks shrink away
    out = tmp_path / "small"
    assert run_export(dataset, out, "strideqa-bench", {"frame_size": list(size)}).ok
    seen = {
        record["token_info"]["stridegen_question_id"]
        for record, _ in read_official_inputs(out / "annotation_files", out / "images", size)
    }
    left, undrawable = _left_out_questions(dataset, seen, size)
    assert left == undrawable
    assert _totals(out).get("undrawable_group_questions_left_out", 0) == left
    assert json.loads((out / "annotation_files" / "balance.json").read_text())["frame_size"] == list(size)


@pytest.mark.parametrize("frame_size", [[532], [532, 0], [532.0, 336], "532x336", [True, 336]])
def test_bad_frame_size_fails_before_any_work(tmp_path, frame_size):
    with pytest.raises(ConfigError, match="frame_size"):
        run_export(tmp_path / "missing", tmp_path / "x", "strideqa-bench", {"frame_size": frame_size})
