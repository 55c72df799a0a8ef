"""Region assignment and the minimum region size (stridegen.pipeline.segment.stage.assign_regions,
``visibility.min_region_area_frac``; docs/visibility.md): known answers just below, at and above the minimum."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import ValidationError

from stridegen.pipeline.segment.stage import SceneMasks, assign_regions, region_candidates
from stridegen.pipeline.visibility import VisibilityThresholds, min_region_area_px

# Camera 0 is a nuScenes camera (1600 x 900: 144 px at the default 1e-4), camera 1 a synthetic one (320 x 180:
# 5.76 px, so 6 px).
WIDTH = np.array([1600, 320])
HEIGHT = np.array([900, 180])
KEYFRAME_FRAMES = np.array([10, 20])
# Image rows: (frame, camera). Frames 10 and 20 are keyframes, frame 30 is a context frame.
IMAGES = SimpleNamespace(frame_index=np.array([10, 10, 20, 30]), channel_index=np.array([0, 1, 0, 0]))


def _masks(rows: list[tuple[int, int, int, float, bool]]) -> SceneMasks:
    """Masks of (image row, track, area px, mask box left edge, visible) rows; the other columns are filler."""
    n = len(rows)
    image, track, area, left, visible = (np.array(col) for col in zip(*rows, strict=True))
    box = np.stack([left, np.zeros(n), left + 10.0, np.full(n, 10.0)], axis=1)
    ones = np.ones(n)
    return SceneMasks(
        image_index=image.astype(np.int32),
        track_index=track.astype(np.int32),
        rle_counts=np.array([""] * n, dtype=object),
        area_px=area.astype(np.int64),
        mask_box_xyxy=box,
        projected_box_xyxy=box.copy(),
        depth_m=ones * 10.0,
        quality=ones,
        box_iou=ones,
        coverage=ones,
        pass_box_iou=visible.astype(bool),
        pass_coverage=np.ones(n, bool),
        pass_quality=np.ones(n, bool),
        visible=visible.astype(bool),
    )


# mask: (image row, track, area px, left edge, visible)
MASKS = _masks(
    [
        (0, 0, 143, 50.0, True),  # 0: one pixel below 144 -> too small
        (0, 1, 144, 300.0, True),  # 1: exactly the minimum -> region (>=)
        (0, 2, 145, 100.0, True),  # 2: one above -> region
        (0, 3, 90_000, 10.0, False),  # 3: large but not visible -> never a region
        (1, 0, 5, 20.0, True),  # 4: 320 x 180 camera, below 6 -> too small
        (1, 4, 6, 200.0, True),  # 5: at 6 -> region
        (2, 1, 143, 5.0, True),  # 6: second keyframe, below -> too small
        (2, 5, 200, 40.0, True),  # 7: second keyframe -> region
        (3, 6, 5000, 0.0, True),  # 8: context frame, not a keyframe image -> no region whatever its size
    ]
)


def _rows(regions) -> list[tuple[int, ...]]:
    cols = (regions.keyframe_index, regions.channel_index, regions.region_id, regions.track_index, regions.mask_index)
    return [tuple(int(v) for v in row) for row in zip(*cols, strict=True)]


def test_min_region_area_px_known_answers():
    assert min_region_area_px(WIDTH, HEIGHT, 1e-4).tolist() == [144, 6]
    assert min_region_area_px(1600, 900, 1e-4) == 144  # 1e-4 is inexact in binary; must not round up to 145
    assert min_region_area_px(1600, 900, 0.0) == 0
    assert min_region_area_px(1600, 900, 1e-3) == 1440
    assert min_region_area_px(10, 10, 0.055) == 6  # 5.5 px -> at least 6 whole pixels
    assert VisibilityThresholds().min_region_area_frac == 1e-4


def test_regions_below_at_and_above_the_minimum():
    minimum = min_region_area_px(WIDTH, HEIGHT, 1e-4)
    regions = assign_regions(KEYFRAME_FRAMES, IMAGES, MASKS, minimum)
    # (keyframe, camera, region id, track, mask): numbered by the mask box's left edge among the kept masks only.
    assert _rows(regions) == [
        (0, 0, 0, 2, 2),  # 145 px, left edge 100
        (0, 0, 1, 1, 1),  # 144 px, left edge 300
        (0, 1, 0, 4, 5),  # 6 px on the small camera
        (1, 0, 0, 5, 7),
    ]
    expected = [False, True, True, False, False, True, False, True, True]  # mask 8: a region candidate, no keyframe
    assert region_candidates(IMAGES, MASKS, minimum).tolist() == expected


def test_zero_disables_the_minimum():
    for minimum in (0, min_region_area_px(WIDTH, HEIGHT, 0.0)):
        regions = assign_regions(KEYFRAME_FRAMES, IMAGES, MASKS, minimum)
        assert _rows(regions) == [
            (0, 0, 0, 0, 0),  # 143 px comes back, leftmost
            (0, 0, 1, 2, 2),
            (0, 0, 2, 1, 1),
            (0, 1, 0, 0, 4),
            (0, 1, 1, 4, 5),
            (1, 0, 0, 1, 6),
            (1, 0, 1, 5, 7),
        ]
    # The default signature keeps every visible mask (as before the rule existed).
    assert _rows(assign_regions(KEYFRAME_FRAMES, IMAGES, MASKS)) == _rows(
        assign_regions(KEYFRAME_FRAMES, IMAGES, MASKS, 0)
    )


def test_one_minimum_for_all_cameras():
    regions = assign_regions(KEYFRAME_FRAMES, IMAGES, MASKS, 144)
    assert [r[4] for r in _rows(regions)] == [2, 1, 7]  # the 6 px mask of camera 1 is now too small


@pytest.mark.parametrize("value", [-1e-4, 1.5])
def test_min_region_area_frac_is_a_fraction(value):
    with pytest.raises(ValidationError, match="min_region_area_frac"):
        VisibilityThresholds(min_region_area_frac=value)
