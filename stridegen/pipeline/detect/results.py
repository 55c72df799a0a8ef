"""Detector output <-> the evaluators' flat box arrays (nuScenes results format)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stridegen import geometry as geo
from stridegen.boxes import Boxes

# A plausible attribute per class for boxes that carry none (nuScenes attribute names; "" for cones / barriers).
DEFAULT_ATTRIBUTE = {
    "car": "vehicle.moving", "truck": "vehicle.moving", "bus": "vehicle.moving", "trailer": "vehicle.parked",
    "construction_vehicle": "vehicle.parked", "pedestrian": "pedestrian.moving", "motorcycle": "cycle.with_rider",
    "bicycle": "cycle.with_rider", "traffic_cone": "", "barrier": "",
}


def to_detection_boxes(samples: Sequence[tuple[str, Boxes]]):
    """Concatenate per-sample global-frame Boxes into the evaluators' DetectionBoxes (size as w, l, h)."""
    from stridegen.eval.detection import DetectionBoxes

    tokens, centers, sizes, quats, vels, names, scores, attrs = [], [], [], [], [], [], [], []
    for token, boxes in samples:
        if boxes.frame != "global":
            raise ValueError(f"sample {token}: detections must be in the global frame, got {boxes.frame!r}")
        n = len(boxes)
        tokens += [token] * n
        centers.append(boxes.center)
        sizes.append(boxes.size_lwh[:, [1, 0, 2]])
        quats.append(boxes.extras["rotation_global"] if "rotation_global" in boxes.extras
                     else geo.yaw_to_quat(boxes.yaw))
        vels.append(boxes.velocity[:, :2])
        names += boxes.label.tolist()
        scores.append(boxes.score)
        given = boxes.extras.get("attribute")
        attrs += [str(given[i]) if given is not None and given[i] else DEFAULT_ATTRIBUTE.get(str(c), "")
                  for i, c in enumerate(boxes.label.tolist())]
    if not tokens:
        return DetectionBoxes.empty()
    return DetectionBoxes(np.array(tokens, dtype=object), np.concatenate(centers), np.concatenate(sizes),
                          np.concatenate(quats), np.concatenate(vels), np.array(names, dtype=object),
                          np.concatenate(scores), np.array(attrs, dtype=object))
