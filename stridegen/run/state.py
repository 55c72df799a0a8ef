"""What the stages of one scene read and write (``SceneState``), filled in stage order (``stridegen.run.stages``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import StrideGenError
from stridegen.logs.base import Scene
from stridegen.pipeline.attributes import SceneAttributes, SceneTracks
from stridegen.pipeline.qa.stage import QARow
from stridegen.pipeline.segment.stage import SceneMasks, SceneRegions
from stridegen.pipeline.track_base import Tracker
from stridegen.run.config import BuildConfig
from stridegen.shards import adapters
from stridegen.shards.schema import (
    CamerasTable,
    DetectionsTable,
    FramesTable,
    GroundTruthTable,
    ImagesTable,
    KeyframesTable,
    SkippedKeyframesTable,
)


@dataclass
class SceneState:
    """What the stages of one scene read and write, filled in stage order."""

    scene: Scene
    config: BuildConfig
    source_format: str = ""
    source_version: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    frames: FramesTable | None = None
    cameras: CamerasTable | None = None
    ground_truth: GroundTruthTable | None = None
    times_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    keyframes: KeyframesTable | None = None
    skipped: SkippedKeyframesTable | None = None
    tracker: Tracker | None = None  # the scene's tracker backend (made by the detect stage)
    detections: list[Boxes] = field(default_factory=list)
    tracked: list[Boxes] = field(default_factory=list)  # the tracker's active tracks of each frame
    track_ids: list[np.ndarray] = field(default_factory=list)  # per frame, the track id of each detection
    scene_tracks: SceneTracks | None = None
    attributes: SceneAttributes | None = None
    images: ImagesTable | None = None
    masks: SceneMasks | None = None
    regions: SceneRegions | None = None
    qa_rows: list[QARow] | None = None
    qa_skipped: dict[str, int] = field(default_factory=dict)
    extra_tables: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # e.g. the anonymization's
    _detections_table: DetectionsTable | None = field(default=None, repr=False)

    def need(self, name: str) -> Any:
        value = getattr(self, name)
        if value is None:
            raise StrideGenError(f"{self.scene.name}: stage order broken, {name!r} is not computed yet")
        return value

    def detections_table(self) -> DetectionsTable:
        """The detections as stored (``adapters.detections_table``), built once: the anonymize stage reads it
        (plate geometry) and the record holds it."""
        if self._detections_table is None:
            self._detections_table = adapters.detections_table(self.detections, self.track_ids)
        return self._detections_table
