"""The spatial-QA contexts of a log's first frame built straight from its ground-truth boxes, for
tests/pipeline/qa/test_spatial.py and benchmarks/bench_qa.py (both on the nuScenes demo log of the shared data).

A fixture, not the pipeline's path: the build makes its contexts from the scene tables' regions and tracks
(``stridegen.pipeline.qa.stage.scene_images``); here every box whose centre projects into a camera image is a region,
with a zero heading.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np

from stridegen.core.projection import project_points
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.pipeline.qa.base import QAContext


def demo_contexts(log: Path) -> list[QAContext]:
    """Ground-truth boxes of the first frame of the first scene of the log at ``log`` whose centres project into each
    camera image, one context per camera (channels in name order); centres in that frame's ego and camera frames."""
    from stridegen.core.vocabulary import stride_class
    from stridegen.logs import open_log

    reader = open_log(log)
    frame = reader.scenes()[0].frames[0]
    ann = reader.load_annotations(frame)
    out = []
    for channel in sorted(frame.camera_channels):
        cam = frame.sensors[channel]
        center_ego = transform_points(invert_transform(cam.T_global_from_ego), ann.boxes.center)
        center_cam = transform_points(invert_transform(cam.calibration.T_ego_from_sensor), center_ego)
        intrinsic = cast(np.ndarray, cam.calibration.intrinsic)  # every camera of the demo log has one
        uv, _, in_front = project_points(center_cam, intrinsic, near=1.0)
        with np.errstate(invalid="ignore"):
            inside = (
                in_front
                & (uv[:, 0] >= 0)
                & (uv[:, 0] < cam.calibration.width)
                & (uv[:, 1] >= 0)
                & (uv[:, 1] < cam.calibration.height)
            )
        idx = np.flatnonzero(inside)
        out.append(
            QAContext(
                "demo",
                0,
                0,
                channel,
                np.arange(idx.size),
                idx,
                np.array([stride_class(c) for c in ann.category[idx]], dtype=object),
                center_ego[idx],
                ann.boxes.size_lwh[idx],
                np.zeros(idx.size),
                center_cam[idx],
            )
        )
    return out
