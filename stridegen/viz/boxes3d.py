"""3D box wireframes projected onto camera images (OpenCV), one colour per class."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import cv2
import numpy as np

from stridegen.core.box_geometry import BOX_EDGES
from stridegen.core.projection import clip_segments_near, project_points
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.logs.base import Annotations, Frame, SensorSample
from stridegen.logs.box_rotation import corners_global

# RGB colour of each nuScenes detection class (chosen to be distinct on street scenes).
CLASS_COLORS: dict[str, tuple[int, int, int]] = {
    "car": (255, 158, 0),
    "truck": (255, 99, 71),
    "construction_vehicle": (233, 150, 70),
    "bus": (255, 69, 0),
    "trailer": (255, 140, 0),
    "barrier": (112, 128, 144),
    "motorcycle": (255, 61, 99),
    "bicycle": (220, 20, 60),
    "pedestrian": (0, 0, 230),
    "traffic_cone": (47, 79, 79),
}
DEFAULT_COLOR = (200, 200, 200)


def color_for_label(label: str) -> tuple[int, int, int]:
    """RGB colour of a class: the table above, else a stable colour from the name's CRC32, grey for ""."""
    if label in CLASS_COLORS:
        return CLASS_COLORS[label]
    if not label:
        return DEFAULT_COLOR
    h = zlib.crc32(label.encode("utf-8"))
    return (64 + h % 192, 64 + (h >> 8) % 192, 64 + (h >> 16) % 192)


def project_box_edges(
    corners_cam: np.ndarray, intrinsic: np.ndarray, near: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """Pixel end points [N, 12, 2, 2] of the 12 edges of each box, clipped at the near plane, and [N, 12] keep."""
    corners_cam = np.asarray(corners_cam, dtype=np.float64).reshape(-1, 8, 3)
    p0 = corners_cam[:, BOX_EDGES[:, 0]]
    p1 = corners_cam[:, BOX_EDGES[:, 1]]
    q0, q1, keep = clip_segments_near(p0, p1, near)
    uv0, _, _ = project_points(q0.reshape(-1, 3), intrinsic, near=near - 1e-9)
    uv1, _, _ = project_points(q1.reshape(-1, 3), intrinsic, near=near - 1e-9)
    edges = np.stack([uv0, uv1], axis=1).reshape(corners_cam.shape[0], 12, 2, 2)
    return edges, keep


def boxes_in_image(
    corners_cam: np.ndarray, intrinsic: np.ndarray, image_size: tuple[int, int], level: str = "any"
) -> np.ndarray:
    """Which boxes [N] are visible in the image, ignoring occlusion.

    Same test as nuscenes-devkit ``box_in_image`` (python-sdk/nuscenes/utils/geometry_utils.py): every corner
    at least 0.1 m in front of the camera, and ``"any"`` / ``"all"`` corners inside the image (strictly) at a
    depth above 1 m; ``"none"`` accepts every box.
    """
    corners_cam = np.asarray(corners_cam, dtype=np.float64).reshape(-1, 8, 3)
    n = corners_cam.shape[0]
    if level == "none":
        return np.ones(n, dtype=bool)
    depth = corners_cam[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        homog = corners_cam @ np.asarray(intrinsic, dtype=np.float64).T
        uv = homog[..., :2] / homog[..., 2:3]
    width, height = image_size
    inside = (uv[..., 0] > 0) & (uv[..., 0] < width) & (uv[..., 1] > 0) & (uv[..., 1] < height) & (depth > 1)
    in_front = np.all(depth > 0.1, axis=1)
    if level == "any":
        return in_front & inside.any(axis=1)
    if level == "all":
        return in_front & inside.all(axis=1)
    raise ValueError(f"level must be 'any', 'all' or 'none', got {level!r}")


def draw_boxes3d(
    image_rgb: np.ndarray,
    corners_cam: np.ndarray,
    intrinsic: np.ndarray,
    labels: Sequence[str] | None = None,
    thickness: int = 2,
    near: float = 0.1,
    mark_front: bool = True,
    antialias: bool = True,
) -> np.ndarray:
    """A copy of ``image_rgb`` with the wireframes of boxes given by their camera-frame corners [N, 8, 3].

    Edges are clipped at the near plane before projection, so boxes partly behind the camera draw correctly.
    The front face (corners 0-3, the +x end of the box) gets a cross to show the heading. ``antialias=False``
    draws hard 8-connected lines in the exact class colour.
    """
    out = np.ascontiguousarray(image_rgb).copy()
    corners_cam = np.asarray(corners_cam, dtype=np.float64).reshape(-1, 8, 3)
    labels = list(labels) if labels is not None else [""] * corners_cam.shape[0]
    height, width = out.shape[:2]
    edges, keep = project_box_edges(corners_cam, intrinsic, near)
    rect = (-width, -height, 3 * width, 3 * height)  # clip far-away end points before integer conversion
    line_type = cv2.LINE_AA if antialias else cv2.LINE_8
    for i in range(corners_cam.shape[0]):
        color = color_for_label(labels[i])
        segments = [edges[i, e] for e in range(12) if keep[i, e]]
        if mark_front and np.all(corners_cam[i, :4, 2] >= near):
            front, _, _ = project_points(corners_cam[i, :4], intrinsic, near)
            segments += [np.stack([front[0], front[2]]), np.stack([front[1], front[3]])]
        for seg in segments:
            _draw_segment(out, seg, color, thickness, rect, line_type)
    return out


def _draw_segment(
    image: np.ndarray,
    seg: np.ndarray,
    color: tuple[int, int, int],
    thickness: int,
    rect: tuple[int, int, int, int],
    line_type: int,
) -> None:
    if not np.all(np.isfinite(seg)):
        return
    big = 1e7  # keep the float -> int conversion in range; cv2.clipLine then cuts to the drawing rectangle
    p0, p1 = (tuple(np.rint(np.clip(p, -big, big)).astype(np.int64).tolist()) for p in seg)
    ok, q0, q1 = cv2.clipLine(rect, p0, p1)
    if ok:
        cv2.line(image, q0, q1, color, thickness, line_type)


def save_rgb(path: str, image_rgb: np.ndarray) -> None:
    """Write an RGB image (PNG/JPEG by extension)."""
    if not cv2.imwrite(str(path), cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR)):
        raise OSError(f"could not write {path}")


def corners_in_camera(annotations: Annotations, sample: SensorSample) -> np.ndarray:
    """Camera-frame corners [N, 8, 3] of global-frame annotations, through the sample's own ego pose."""
    T_cam_from_global = invert_transform(sample.T_global_from_sensor)
    return transform_points(T_cam_from_global, corners_global(annotations.boxes))


def render_annotations(
    frame: Frame, channel: str, annotations: Annotations | None = None, thickness: int = 2
) -> np.ndarray:
    """The camera image of ``channel`` with the frame's ground-truth boxes (or ``annotations``) drawn on it."""
    sample = frame.sensor(channel)
    if sample.calibration.intrinsic is None:
        raise ValueError(f"channel {channel!r} has no camera intrinsics")
    annotations = annotations if annotations is not None else frame.annotations()
    corners_cam = corners_in_camera(annotations, sample)
    return draw_boxes3d(
        frame.image(channel),
        corners_cam,
        sample.calibration.intrinsic,
        list(annotations.boxes.label),
        thickness=thickness,
    )
