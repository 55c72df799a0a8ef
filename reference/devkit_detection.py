"""stridegen detection boxes as nuscenes-devkit ``EvalBoxes``: the input of the devkit's own detection evaluation,
which the detection parity tests and benchmarks/bench_detection.py compare stridegen.eval against.

The devkit is imported when called, so that importing this module does not need it.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from stridegen.formats.detection_boxes import DetectionBoxes


def to_eval_boxes(boxes: DetectionBoxes) -> Any:
    """One devkit ``DetectionBox`` per box, keyed by sample token, in the order of ``boxes``."""
    from nuscenes.eval.common.data_classes import EvalBoxes
    from nuscenes.eval.detection.data_classes import DetectionBox

    ego_translation = cast(np.ndarray, boxes.ego_translation)  # arrays after DetectionBoxes.__post_init__
    num_pts = cast(np.ndarray, boxes.num_pts)
    score = cast(np.ndarray, boxes.detection_score)
    attribute = cast(np.ndarray, boxes.attribute_name)
    eb = EvalBoxes()
    for i in range(len(boxes)):
        eb.add_boxes(
            boxes.sample_token[i],
            [
                DetectionBox(
                    sample_token=boxes.sample_token[i],
                    translation=tuple(boxes.translation[i].tolist()),
                    size=tuple(boxes.size[i].tolist()),
                    rotation=tuple(boxes.rotation[i].tolist()),
                    velocity=tuple(boxes.velocity[i].tolist()),
                    ego_translation=tuple(ego_translation[i].tolist()),
                    num_pts=int(num_pts[i]),
                    detection_name=str(boxes.detection_name[i]),
                    detection_score=float(score[i]),
                    attribute_name=str(attribute[i]),
                )
            ],
        )
    return eb
