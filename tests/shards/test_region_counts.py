"""The ``regions_too_small`` count (docs/visibility.md, minimum region size): shard counts, manifest totals and the
manifest's visibility section, on a hand-built scene whose answer is known."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stridegen.shards.manifest import COUNT_KEYS
from stridegen.shards.reader import open_dataset
from stridegen.shards.schema import (
    DetectionsTable,
    RegionsTable,
    SceneMeta,
    SceneRecord,
    TracksTable,
    str_array,
)
from tests import shard_fixtures as hand

H, W = 30, 40
N_FRAMES, N_TRACKS = 4, 4
KEYFRAME = 3  # its window holds frames 0..3; frames 0..2 are context frames


def make_scene(name: str) -> SceneRecord:
    """One camera, four stored images, one keyframe (frame 3). Masks of the keyframe image: track 0 a region,
    track 1 visible but no region (what the size rule leaves out), track 2 not visible, track 3 visible but no
    region; in the context image of frame 2, track 1 visible and no region (not a keyframe image: not counted).
    So ``regions_too_small`` is 2."""
    frames = hand.frames_table([f"{name}-f{i}" for i in range(N_FRAMES)])
    cameras = hand.cameras_table(["CAM_FRONT"], np.array([[30.0, 0, W / 2], [0, 30.0, H / 2], [0, 0, 1]]), W, H)
    images = hand.images_table([(f, 0) for f in range(N_FRAMES)], [b"\xff\xd8"] * N_FRAMES, f"{name}-")
    mask_rows = [(KEYFRAME, t, hand.rect_mask(H, W, 2 + 9 * t, 5, 6 + 9 * t + t, 9 + t)) for t in range(N_TRACKS)]
    mask_rows.append((2, 1, hand.rect_mask(H, W, 0, 0, 2, 2)))
    masks = hand.masks_table(mask_rows, 10.0, quality=0.9, box_iou=0.9, coverage=0.9)
    visible = np.array([True, True, False, True, True])
    masks = replace(masks, pass_quality=visible, visible=visible)
    regions = RegionsTable(*(np.array([v], np.int32) for v in (0, 0, 0, 0, 0)))  # keyframe 0, camera 0, region 0
    dets = DetectionsTable(
        np.zeros(1, np.int32),
        np.zeros((1, 3)),
        np.ones((1, 3)),
        np.zeros(1),
        np.zeros((1, 3)),
        str_array(["car"]),
        np.ones(1),
        str_array(["1"]),
    )
    present = np.ones((N_TRACKS, N_FRAMES), dtype=bool)
    tracks = TracksTable(
        str_array(str(t + 1) for t in range(N_TRACKS)),
        str_array(["car"] * N_TRACKS),
        present,
        np.zeros((N_TRACKS, N_FRAMES, 3)),
        np.full((N_TRACKS, N_FRAMES, 3), 2.0),
        np.zeros((N_TRACKS, N_FRAMES)),
        np.ones((N_TRACKS, N_FRAMES)),
    )
    return SceneRecord(
        SceneMeta(token=f"tok-{name}", name=name),
        frames,
        cameras,
        images,
        hand.keyframes_table(KEYFRAME),
        hand.no_skipped_keyframes(),
        dets,
        tracks,
        hand.still_attributes(N_TRACKS, N_FRAMES),
        masks=masks,
        regions=regions,
    )


def test_scene_count_known_answer():
    record = make_scene("s0")
    counts = record.counts()
    assert (counts["visible_masks"], counts["regions"], counts["regions_too_small"]) == (4, 1, 2)
    # Every visible keyframe mask a region: nothing left out.
    all_regions = RegionsTable(
        np.zeros(3, np.int32),
        np.zeros(3, np.int32),
        np.arange(3, dtype=np.int32),
        np.array([0, 1, 3], np.int32),
        np.array([0, 1, 3], np.int32),
    )
    assert replace(record, regions=all_regions).counts()["regions_too_small"] == 0
    # No regions table (or no masks): 0, as for a build without a segmenter.
    assert replace(record, regions=None).counts()["regions_too_small"] == 3
    assert replace(record, masks=None, regions=None).counts()["regions_too_small"] == 0


def test_manifest_totals_and_visibility_section(tmp_path):
    assert "regions_too_small" in COUNT_KEYS
    root = hand.write_dataset(tmp_path / "ds", [make_scene("s0"), make_scene("s1")])
    ds = open_dataset(root, verify=True)
    m = ds.manifest
    assert [s["counts"]["regions_too_small"] for s in m["shards"]] == [2, 2]
    assert m["totals"]["regions_too_small"] == 4 and m["totals"]["regions"] == 2
    assert m["visibility"]["regions_too_small"] == 4
    assert m["visibility"]["thresholds"]["min_region_area_frac"] == 1e-4
    view = ds.scene("s0")
    assert int(view.meta["count_regions_too_small"]) == 2
    # Counted from the tables: a record read back (as stridegen augment rewrites it) reports the same number.
    assert view.record().counts()["regions_too_small"] == 2
    ds.close()
