"""The ``precomputed`` tracker: tracks from a nuScenes tracking-results JSON (global frame).

Any tracker that writes the nuScenes tracking format ({"results": {sample_token: [{translation, size, rotation,
velocity, tracking_id, tracking_name, tracking_score}]}}) can feed the build; the boxes serve as both the frame's
detections and its active tracks. The file is validated once (stridegen/formats/tracking_results.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import PredictionFormatError
from stridegen.core.transforms import quat_to_yaw
from stridegen.logs.base import Frame


class PrecomputedTracks:
    """The ``precomputed`` tracker backend. It provides the detections too: the file's boxes of a frame are its
    detections and its active tracks, so the build's detect stage reads them here and ``track`` keeps them."""

    provides_detections = True
    needs_path = "a nuScenes tracking-results JSON"  # what the tracker section's ``path`` names (required)

    def __init__(self, path: str | Path) -> None:
        from stridegen.formats.tracking_results import load_tracking_results

        self.path = Path(path)
        self.results = load_tracking_results(self.path)
        rows: dict[str, list[int]] = {}
        for i, token in enumerate(self.results.sample_token.tolist()):
            rows.setdefault(str(token), []).append(i)
        self._rows = {token: np.asarray(idx, dtype=np.int64) for token, idx in rows.items()}
        self._known = set(self.results.sample_tokens)

    @staticmethod
    def check_inputs(path: str | Path) -> None:
        """The tracking-results file read and validated (its errors name it), the tracker not built (``Tracker``)."""
        from stridegen.formats.tracking_results import load_tracking_results

        load_tracking_results(Path(path))

    def track(self, detections_per_frame: Sequence[Boxes], timestamps_s: Sequence[float]) -> list[Boxes]:
        return list(detections_per_frame)

    def detect(self, frame: Frame) -> Boxes:
        return self.tracks(frame)

    def tracks(self, frame: Frame) -> Boxes:
        """The active tracks of a frame, ``track_id`` = the file's tracking_id."""
        if frame.token not in self._known:
            raise PredictionFormatError(
                self.path,
                f"no entry for sample {frame.token} (every sample of the log needs one, possibly an empty list)",
            )
        r = self.results
        rows = self._rows.get(frame.token, np.zeros(0, dtype=np.int64))
        return Boxes(
            r.translation[rows],
            r.size_wlh[rows][:, [1, 0, 2]],
            quat_to_yaw(r.rotation[rows]),
            np.c_[r.velocity[rows], np.zeros(rows.size)],
            label=r.tracking_name[rows],
            score=r.tracking_score[rows],
            track_id=r.tracking_id[rows].astype(str),
            frame="global",
            extras={"rotation_global": r.rotation[rows]},
        )
