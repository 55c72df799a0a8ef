"""Shared fixtures of the segmenter tests: a small synthetic log and a scorer against its instance-id images."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import pytest

MIN_TRUTH_AREA_PX = 100  # objects smaller than this in the truth image are not scored (too few pixels for IoU)


@dataclass
class ScoredMask:
    iou: float
    quality: float
    label: str
    truth_area_px: int


def score_against_instance_ids(
    root: Path, segmenter, min_area_px: int = MIN_TRUTH_AREA_PX, check_disjoint: bool = True
) -> list[ScoredMask]:
    """Run ``segmenter`` on every camera image of a synthetic log (ground-truth boxes, key LiDAR sweep) and score
    each mask against the generator's instance-id PNG (docs/synthetic.md: OUT/instance_ids/<CHANNEL>/<stem>.png)."""
    from stridegen.logs import open_log
    from stridegen.pipeline.segment.request import camera_view, frame_lidar, frame_requests, mask_iou

    root = Path(root)
    instances = json.loads((root / "instance_ids" / "instances.json").read_text())["scenes"]
    out: list[ScoredMask] = []
    for scene in open_log(root).scenes():
        id_of = {v["instance_token"]: int(k) for k, v in instances[scene.name].items() if v["instance_token"]}
        for frame in scene.frames:
            boxes = frame.annotations().boxes
            views = [camera_view(frame, channel) for channel in frame.camera_channels]
            requests = frame_requests(views, boxes, frame_lidar(frame))
            for channel, (request, keep) in zip(frame.camera_channels, requests, strict=True):
                if len(request) == 0:
                    continue
                stem = Path(frame.sensor(channel).path).stem
                ids = cv2.imread(str(root / "instance_ids" / channel / f"{stem}.png"), cv2.IMREAD_UNCHANGED)
                result = segmenter.segment(request)
                if check_disjoint:
                    assert not (result.masks.sum(axis=0) > 1).any(), "masks of one image overlap"
                for j, k in enumerate(keep.tolist()):
                    truth = ids == id_of[str(boxes.track_id[k])]
                    area = int(truth.sum())
                    if area >= min_area_px:
                        out.append(
                            ScoredMask(
                                mask_iou(result.masks[j], truth), float(result.quality[j]), str(boxes.label[k]), area
                            )
                        )
    return out


@pytest.fixture(scope="session")
def segment_synth_log(tmp_path_factory) -> Path:
    """One 4 s synthetic scene (8 key frames, 6 cameras at 320 x 180) with instance-id images."""
    from stridegen.logs.synthetic import generate_dataset

    root = tmp_path_factory.mktemp("segment_synth") / "log"
    generate_dataset(root, scenes=1, seconds=4.0, seed=0, width=320, height=180, progress=False)
    return root


@pytest.fixture(scope="session")
def score_segmenter(segment_synth_log) -> Callable[..., list[ScoredMask]]:
    """``score_segmenter(segmenter)`` -> scored masks on ``segment_synth_log``."""
    return lambda segmenter, **kw: score_against_instance_ids(segment_synth_log, segmenter, **kw)
