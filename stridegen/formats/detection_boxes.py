"""Boxes of many samples as flat arrays: the shape of a nuScenes detection-results file (and of its ground truth),
shared by the results reader and the detection evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from stridegen.core.boxes import Boxes
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import quat_to_yaw, yaw_to_quat
from stridegen.core.vocabulary import ATTRIBUTE_NAMES, DEFAULT_ATTRIBUTE, DETECTION_NAMES


def _str_array(values: Sequence[str] | np.ndarray, n: int, name: str) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == object and values.shape == (n,):
        return values  # already an object array (e.g. a selection of one): keep it
    out = np.empty(n, dtype=object)
    values = list(values)
    if len(values) != n:
        raise GeometryError(f"{name} must have {n} entries, got {len(values)}")
    out[:] = [str(v) for v in values]
    return out


@dataclass(init=False)
class DetectionBoxes:
    """Ground-truth or predicted boxes of many samples as flat arrays (one row per box).

    sample_token     [N] object array of str
    translation      [N, 3] box centre, global frame, metres
    size             [N, 3] (w, l, h) metres, as in nuScenes tables and results files
    rotation         [N, 4] quaternion [w, x, y, z], global frame
    velocity         [N, 2] (vx, vy) global frame, m/s; NaN where unknown
    detection_name   [N] one of DETECTION_NAMES
    detection_score  [N] confidence (-1 for ground truth, as in the devkit)
    attribute_name   [N] one of ATTRIBUTE_NAMES or ""
    num_pts          [N] lidar + radar points inside a ground-truth box; -1 where unknown (predictions)
    ego_translation  [N, 3] translation minus the ego position of the sample (global axes); zeros until set

    The row order matters exactly as the order of boxes in the devkit's ``EvalBoxes`` does: rows are grouped by
    sample in order of first appearance (``canonical_order``), and inside a sample the row order breaks ties.
    """

    sample_token: np.ndarray
    translation: np.ndarray
    size: np.ndarray
    rotation: np.ndarray
    velocity: np.ndarray
    detection_name: np.ndarray
    detection_score: np.ndarray
    attribute_name: np.ndarray
    num_pts: np.ndarray
    ego_translation: np.ndarray

    def __init__(
        self,
        sample_token: Sequence[str] | np.ndarray,
        translation: ArrayLike,
        size: ArrayLike,
        rotation: ArrayLike,
        velocity: ArrayLike,
        detection_name: Sequence[str] | np.ndarray,
        detection_score: ArrayLike | None = None,
        attribute_name: Sequence[str] | np.ndarray | None = None,
        num_pts: ArrayLike | None = None,
        ego_translation: ArrayLike | None = None,
    ) -> None:
        n = len(sample_token)
        self.sample_token = _str_array(sample_token, n, "sample_token")
        self.translation = np.asarray(translation, dtype=np.float64).reshape(n, 3)
        self.size = np.asarray(size, dtype=np.float64).reshape(n, 3)
        self.rotation = np.asarray(rotation, dtype=np.float64).reshape(n, 4)
        self.velocity = np.asarray(velocity, dtype=np.float64).reshape(n, 2)
        self.detection_name = _str_array(detection_name, n, "detection_name")
        self.detection_score = (
            np.full(n, -1.0) if detection_score is None else np.asarray(detection_score, dtype=np.float64).reshape(n)
        )
        self.attribute_name = (
            np.full(n, "", dtype=object) if attribute_name is None else _str_array(attribute_name, n, "attribute_name")
        )
        self.num_pts = (
            np.full(n, -1, dtype=np.int64) if num_pts is None else np.asarray(num_pts, dtype=np.int64).reshape(n)
        )
        self.ego_translation = (
            np.zeros((n, 3)) if ego_translation is None else np.asarray(ego_translation, dtype=np.float64).reshape(n, 3)
        )

    def __len__(self) -> int:
        return len(self.sample_token)

    @classmethod
    def empty(cls) -> DetectionBoxes:
        return cls(
            np.empty(0, dtype=object),
            np.zeros((0, 3)),
            np.zeros((0, 3)),
            np.zeros((0, 4)),
            np.zeros((0, 2)),
            np.empty(0, dtype=object),
        )

    @classmethod
    def concat(cls, parts: Sequence[DetectionBoxes]) -> DetectionBoxes:
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in _FIELDS))

    def select(self, index: np.ndarray) -> DetectionBoxes:
        """Rows by integer index or boolean mask."""
        return DetectionBoxes(*(getattr(self, name)[index] for name in _FIELDS))

    def validate(self, what: str = "boxes") -> None:
        """Raise GeometryError for values the devkit rejects (NaN geometry, sizes <= 0, unknown names)."""
        checks = [
            ("translation", self.translation),
            ("size", self.size),
            ("rotation", self.rotation),
            ("detection_score", self.detection_score),
            ("ego_translation", self.ego_translation),
        ]
        for name, values in checks:
            bad = ~np.isfinite(values if values.ndim == 2 else values[:, None]).all(axis=1)
            if bad.any():
                raise GeometryError(
                    f"{what}: {bad.sum()} rows have non-finite {name} "
                    f"(first in sample {self.sample_token[np.argmax(bad)]})"
                )
        if np.isinf(self.velocity).any():
            raise GeometryError(f"{what}: infinite velocity (NaN marks an unknown velocity)")
        if (self.size <= 0).any():
            raise GeometryError(f"{what}: sizes must be > 0 (the devkit's scale_iou asserts it)")
        if (np.linalg.norm(self.rotation, axis=1) < 1e-12).any():
            raise GeometryError(f"{what}: zero rotation quaternion")
        unknown = sorted(set(self.detection_name) - set(DETECTION_NAMES))
        if unknown:
            raise GeometryError(f"{what}: unknown detection_name {unknown}")
        unknown = sorted(set(self.attribute_name) - set(ATTRIBUTE_NAMES) - {""})
        if unknown:
            raise GeometryError(f"{what}: unknown attribute_name {unknown}")

    def canonical_order(self) -> np.ndarray:
        """Row order grouped by sample in order of first appearance, stable inside a sample (EvalBoxes.all)."""
        return np.argsort(factorize(self.sample_token), kind="stable")

    @property
    def ego_dist(self) -> np.ndarray:
        """BEV distance to the ego vehicle (devkit EvalBox.ego_dist: sqrt(sum(ego_translation[:2] ** 2)))."""
        return np.sqrt(self.ego_translation[:, 0] ** 2 + self.ego_translation[:, 1] ** 2)

    @property
    def yaw(self) -> np.ndarray:
        """Heading of the rotated x axis in the xy plane (devkit quaternion_yaw)."""
        return quat_to_yaw(self.rotation)


def factorize(tokens: Sequence[str] | np.ndarray) -> np.ndarray:
    """Integer code of each token, numbered in order of first appearance."""
    codes: dict[str, int] = {}
    return np.fromiter((codes.setdefault(t, len(codes)) for t in tokens), dtype=np.int64, count=len(tokens))


_FIELDS = (
    "sample_token",
    "translation",
    "size",
    "rotation",
    "velocity",
    "detection_name",
    "detection_score",
    "attribute_name",
    "num_pts",
    "ego_translation",
)


def to_detection_boxes(samples: Sequence[tuple[str, Boxes]]) -> DetectionBoxes:
    """Concatenate per-sample global-frame Boxes into the evaluators' DetectionBoxes (size as w, l, h)."""
    tokens, centers, sizes, quats, vels, names, scores, attrs = [], [], [], [], [], [], [], []
    for token, boxes in samples:
        if boxes.frame != "global":
            raise ValueError(f"sample {token}: detections must be in the global frame, got {boxes.frame!r}")
        n = len(boxes)
        tokens += [token] * n
        centers.append(boxes.center)
        sizes.append(boxes.size_lwh[:, [1, 0, 2]])
        quats.append(boxes.extras["rotation_global"] if "rotation_global" in boxes.extras else yaw_to_quat(boxes.yaw))
        vels.append(boxes.velocity[:, :2])
        names += boxes.label.tolist()
        scores.append(boxes.score)
        given = boxes.extras.get("attribute")
        attrs += [
            str(given[i]) if given is not None and given[i] else DEFAULT_ATTRIBUTE.get(str(c), "")
            for i, c in enumerate(boxes.label.tolist())
        ]
    if not tokens:
        return DetectionBoxes.empty()
    return DetectionBoxes(
        np.array(tokens, dtype=object),
        np.concatenate(centers),
        np.concatenate(sizes),
        np.concatenate(quats),
        np.concatenate(vels),
        np.array(names, dtype=object),
        np.concatenate(scores),
        np.array(attrs, dtype=object),
    )
