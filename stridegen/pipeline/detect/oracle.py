"""The ``oracle`` detector: the log's ground-truth boxes of the detection classes, score 1."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.logs.base import Annotations, Frame


def gt_detections(annotations: Annotations, min_lidar_points: int = 0) -> Boxes:
    """Ground truth as detections: boxes with a detection class (and enough LiDAR points), velocity NaN -> 0."""
    keep = (annotations.boxes.label != "") & (annotations.num_lidar_pts >= min_lidar_points)
    boxes = annotations.boxes[np.flatnonzero(keep)]
    velocity = np.nan_to_num(boxes.velocity)
    velocity[:, 2] = 0.0
    return boxes.replace(
        velocity=velocity,
        score=np.ones(len(boxes)),
        extras={**boxes.extras, "category": annotations.category[keep], "attribute": annotations.attribute[keep]},
    )


class OracleDetector:
    name = "oracle"
    uses_ground_truth = True  # its boxes are the log's annotations
    # What `stridegen validate` gives it before the user's options: the boxes the evaluation keeps of the ground
    # truth (at least one LiDAR point), so that it scores perfectly.
    validation_options: ClassVar[dict[str, Any]] = {"min_lidar_points": 1}

    def __init__(self, min_lidar_points: int = 0) -> None:
        self.min_lidar_points = min_lidar_points

    def detect(self, frame: Frame) -> Boxes:
        return gt_detections(frame.annotations(), self.min_lidar_points)
