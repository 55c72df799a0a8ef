"""The ``precomputed`` detector: boxes from a nuScenes detection-results JSON (global frame).

This is the format every nuScenes detector writes (BEVFusion's test script included), so any detector's output can
feed the build. The file is read and validated once (stridegen/formats/nuscenes_results.py: unknown class names, wrong
array lengths, NaN, duplicates raise PredictionFormatError naming the file, sample and field).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import PredictionFormatError
from stridegen.core.transforms import quat_to_yaw
from stridegen.logs.base import Frame


class PrecomputedDetector:
    name = "precomputed"

    def __init__(self, path: str | Path, min_score: float = 0.0) -> None:
        from stridegen.formats.nuscenes_results import load_results

        self.path = Path(path)
        loaded = load_results(self.path)
        b = loaded.boxes
        rows: dict[str, list[int]] = {}
        for i, token in enumerate(b.sample_token.tolist()):
            rows.setdefault(str(token), []).append(i)
        self._rows = {token: np.asarray(idx, dtype=np.int64) for token, idx in rows.items()}
        self._known = set(loaded.sample_tokens)
        self._boxes = b
        self.min_score = min_score

    @staticmethod
    def check_inputs(path: str | Path, min_score: float = 0.0) -> None:
        """The results file read and validated (its errors name it), the detector not built (``Detector``)."""
        from stridegen.formats.nuscenes_results import load_results

        load_results(Path(path))

    def detect(self, frame: Frame) -> Boxes:
        if frame.token not in self._known:
            raise PredictionFormatError(
                self.path,
                f"no entry for sample {frame.token} (every sample of the log needs one, possibly an empty list)",
            )
        rows = self._rows.get(frame.token, np.zeros(0, dtype=np.int64))
        b = self._boxes
        rows = rows[b.detection_score[rows] >= self.min_score]
        rotation = b.rotation[rows]
        size_wlh = b.size[rows]
        return Boxes(
            b.translation[rows],
            size_wlh[:, [1, 0, 2]],
            quat_to_yaw(rotation),
            np.c_[b.velocity[rows], np.zeros(rows.size)],
            label=b.detection_name[rows],
            score=b.detection_score[rows],
            frame="global",
            extras={"attribute": b.attribute_name[rows], "rotation_global": rotation},
        )
