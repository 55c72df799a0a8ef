"""Where the privacy pass looks in one image, from the scene's 3D boxes and the camera geometry.

Image frame: pixels, x right, y down. Boxes are in the global frame (``center``, ``size_lwh``, ``yaw``), the camera
pose ``T_global_from_cam`` maps the camera frame (x right, y down, z forward) to the global frame, the ego frame
(x forward, y left, z up, origin on the ground under the rear axle, as nuScenes and Argoverse 2 define it) is what
``T_ego_from_cam`` maps to.

- **Search regions** (``search_rois``): the detectors run only on crops around the projected boxes of the objects
  that can carry what they look for: people (``FACE_CLASSES``: pedestrians and the riders of bicycles and
  motorcycles) for faces, plate-carrying vehicles for the plate cascade. Each projected 2D box is enlarged by
  ``ROI_MARGIN_REL`` of its width and height on every side plus ``ROI_MARGIN_PX`` (box error of a detector, a
  head above a box drawn a little low), clipped to the image.
- **Ego body** (``ego_body_mask``): the pixels whose ray from the camera meets the ego vehicle's own body,
  modelled as the boxes ``EGO_BODY_BOXES_M`` (ego frame); a face there is the ego car's paint or glass.
- **Height** (``face_height_ok``): a face found in a person's region is placed on its ray at the depth of that
  person's box; it is kept when it lies no more than ``FACE_ABOVE_BOX_MAX_M`` above the box's top and not below
  its bottom by more than ``FACE_BELOW_BOX_MAX_M`` (a sign above the street is metres higher).
- **Head** (``head_boxes``): the top ``HEAD_ZONE_M`` of a person's box, at most ``HEAD_WIDTH_M`` across, from
  the box centre forward to its front face (at most ``HEAD_LENGTH_M``), projected: where a face is when the
  detector cannot find it. Its expected face height in pixels is ``FACE_HEIGHT_M`` at the box's depth; ``facing``
  says whether the box's heading points to the camera side (cosine of the heading and the direction to the camera
  above ``FACING_MIN_COS``: a person walking towards it, or across, shows the face; one walking away does not).
  A box heading wrong by 180 degrees (a detector's pedestrian boxes can be) hides that face.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from stridegen.core.box_geometry import box_corners
from stridegen.core.projection import project_boxes_2d
from stridegen.core.transforms import invert_transform, transform_points

# Classes whose boxes hold a face that can be seen: a walking person, a rider (nuScenes detection classes).
FACE_CLASSES = ("pedestrian", "bicycle", "motorcycle")
ROI_MARGIN_REL = 0.20  # of the projected box's width / height, each side
ROI_MARGIN_PX = 8.0
# The ego body seen by roof cameras, ego frame (x0, x1, half width, top z), metres. nuScenes' Renault Zoe: length
# 4.084 m, width 1.730 m (stridegen.core.vocabulary.NUSCENES_EGO_SIZE_LWH), wheelbase 2.588 m; overhangs taken as
# 0.84 m front and 0.66 m rear (the remainder of the length). The body a camera can see is the bonnet (top edge
# taken as 0.85 m, from the front axle forward) and the tailgate and rear roof edge (top taken as 1.25 m, over the
# last 0.76 m): fitted so the nuScenes demo's CAM_BACK (at x = 0.03 m, z = 1.58 m, fy = 809 px) sees the body in
# its bottom ~60 of 900 rows, as its image shows, and CAM_FRONT sees none.
EGO_BODY_BOXES_M: tuple[tuple[float, float, float, float], ...] = (
    (2.588, 3.428, 0.865, 0.85),
    (-0.656, 0.10, 0.865, 1.25),
)
EGO_MASK_STEP_PX = 8  # rays cast on a grid of this pitch, the mask upsampled (nearest) and grown by one step
FACE_ABOVE_BOX_MAX_M = 0.5
FACE_BELOW_BOX_MAX_M = 0.2
HEAD_ZONE_M = 0.30  # an adult's face ends ~0.23-0.25 m below the crown (anthropometric tables), plus box error
HEAD_WIDTH_M = 0.30  # across the heading: a head is ~0.16 m wide, plus box error either side
HEAD_LENGTH_M = 0.5  # along the heading, from the box centre forward: the face is ahead of the body's axis
FACING_MIN_COS = -0.25  # a profile (heading across the line of sight, up to ~105 deg away) still shows a face
FACE_HEIGHT_M = 0.23


@dataclass
class ImageGeometry:
    """What the 3D boxes say about one image: the plate searches (``plates.PlateSearch``), the regions to run the
    plate cascade in (vehicles) and the face detector in (people), per people region the depth (camera z, m) of the
    person's box centre and its bottom and top heights (global z, m), the camera model, and the ego body mask."""

    plate_searches: list = field(default_factory=list)
    vehicle_rois: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    people_rois: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    people_depth_m: np.ndarray = field(default_factory=lambda: np.zeros(0))
    people_z_range_m: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    people_head_xyxy: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))  # NaN where not in the image
    people_face_px: np.ndarray = field(default_factory=lambda: np.zeros(0))
    people_facing: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    T_global_from_cam: np.ndarray = field(default_factory=lambda: np.eye(4))
    intrinsic: np.ndarray = field(default_factory=lambda: np.eye(3))
    ego_mask: np.ndarray | None = None
    ego_mask_maker: Callable[[], np.ndarray] | None = None  # makes ``ego_mask`` on first use (cached per camera)

    def ego_body(self) -> np.ndarray | None:
        """The ego body mask [H, W] bool, made on first use; None where there is none."""
        if self.ego_mask is None and self.ego_mask_maker is not None:
            self.ego_mask = self.ego_mask_maker()
        return self.ego_mask


def search_rois(
    center: np.ndarray,
    size_lwh: np.ndarray,
    yaw: np.ndarray,
    T_global_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    image_wh: tuple[int, int],
    near_m: float = 0.1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows kept [N] into the boxes, regions [N, 4] xyxy enlarged and clipped, camera-frame depth of each box
    centre [N]) of the boxes (global frame) that the camera sees."""
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    if len(center) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 4)), np.zeros(0)
    T_cam_from_global = invert_transform(np.asarray(T_global_from_cam, dtype=np.float64))
    corners = transform_points(T_cam_from_global, box_corners(center, size_lwh, yaw))
    boxes, valid = project_boxes_2d(corners, intrinsic, image_wh, near=near_m)
    rows = np.flatnonzero(valid)
    b = boxes[rows]
    pad = np.stack([b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1) * ROI_MARGIN_REL + ROI_MARGIN_PX
    width, height = image_wh
    rois = np.concatenate([b[:, :2] - pad, b[:, 2:] + pad], axis=1)
    rois = np.clip(rois, 0, [width, height, width, height])
    depth = transform_points(T_cam_from_global, center[rows])[:, 2]
    return rows, rois, depth


def _ray_hits_boxes(origin: np.ndarray, dirs: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """[N] bool: rays ``origin + t dirs`` (t > 0, ego frame) that meet any axis-aligned box (x0, x1, y0, y1, z0,
    z1) (slab test)."""
    hit = np.zeros(len(dirs), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / dirs
        for box in boxes:
            lo, hi = box[0::2], box[1::2]
            t0, t1 = (lo - origin) * inv, (hi - origin) * inv
            t_near = np.nanmax(np.minimum(t0, t1), axis=1)
            t_far = np.nanmin(np.maximum(t0, t1), axis=1)
            hit |= (t_far >= np.maximum(t_near, 0.0)) & (t_far > 0)
    return hit


def ego_body_mask(
    T_ego_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    image_wh: tuple[int, int],
    body_boxes_m: tuple[tuple[float, float, float, float], ...] = EGO_BODY_BOXES_M,
) -> np.ndarray:
    """[H, W] bool: pixels whose ray meets the ego body (``EGO_BODY_BOXES_M``; module docstring). A body box the
    camera sits inside is left out (its surface is behind the lens)."""
    width, height = image_wh
    T = np.asarray(T_ego_from_cam, dtype=np.float64)
    origin = T[:3, 3]
    boxes = []
    for x0, x1, half_w, top in body_boxes_m:
        box = np.array([x0, x1, -half_w, half_w, 0.0, top])
        inside = bool(np.all(origin >= box[0::2]) and np.all(origin <= box[1::2]))
        if not inside:
            boxes.append(box)
    if not boxes:
        return np.zeros((height, width), dtype=bool)
    step = EGO_MASK_STEP_PX
    us = np.arange(step / 2, width, step)
    vs = np.arange(step / 2, height, step)
    uu, vv = np.meshgrid(us, vs)
    pix = np.stack([uu.ravel(), vv.ravel(), np.ones(uu.size)], axis=0)
    dirs_cam = np.linalg.inv(np.asarray(intrinsic, dtype=np.float64)) @ pix  # [3, N], z = 1
    dirs = (T[:3, :3] @ dirs_cam).T
    small = _ray_hits_boxes(origin, dirs, np.array(boxes)).reshape(len(vs), len(us))
    grown = small.copy()  # one grid step either way: the pixels between rays
    grown[1:] |= small[:-1]
    grown[:-1] |= small[1:]
    grown[:, 1:] |= small[:, :-1]
    grown[:, :-1] |= small[:, 1:]
    full = np.repeat(np.repeat(grown, step, axis=0), step, axis=1)
    return full[:height, :width]


def face_height_ok(face_xyxy: np.ndarray, roi: int, geometry: ImageGeometry) -> bool:
    """Whether a face found in people region ``roi`` lies at a height a person's face can be (module docstring):
    its centre's ray at the depth of that person's box, global z within the box's bottom - 0.2 m .. top + 0.5 m."""
    cx, cy = (face_xyxy[0] + face_xyxy[2]) / 2, (face_xyxy[1] + face_xyxy[3]) / 2
    depth = float(geometry.people_depth_m[roi])
    ray = np.linalg.solve(np.asarray(geometry.intrinsic, dtype=np.float64), np.array([cx, cy, 1.0]))
    point = geometry.T_global_from_cam[:3, :3] @ (ray * depth) + geometry.T_global_from_cam[:3, 3]
    bottom, top = geometry.people_z_range_m[roi]
    return bool(bottom - FACE_BELOW_BOX_MAX_M <= point[2] <= top + FACE_ABOVE_BOX_MAX_M)


def on_ego_body(face_xyxy: np.ndarray, geometry: ImageGeometry) -> bool:
    """Whether the face's centre pixel lies on the ego body mask."""
    mask = geometry.ego_body()
    if mask is None:
        return False
    h, w = mask.shape
    c = min(w - 1, max(0, int((face_xyxy[0] + face_xyxy[2]) / 2)))
    r = min(h - 1, max(0, int((face_xyxy[1] + face_xyxy[3]) / 2)))
    return bool(mask[r, c])


def head_boxes(
    center: np.ndarray,
    size_lwh: np.ndarray,
    yaw: np.ndarray,
    T_global_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    image_wh: tuple[int, int],
    near_m: float = 0.1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(head boxes [N, 4] xyxy clipped to the image, NaN where not in it; expected face height [N] px; facing
    [N] bool) of people boxes (global frame; module docstring)."""
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw = np.asarray(yaw, dtype=np.float64).reshape(-1)
    if len(center) == 0:
        return np.zeros((0, 4)), np.zeros(0), np.zeros(0, dtype=bool)
    zone = np.minimum(HEAD_ZONE_M, size_lwh[:, 2])
    length = np.minimum(size_lwh[:, 0] / 2, HEAD_LENGTH_M)
    head_c = center.copy()
    head_c[:, 0] += np.cos(yaw) * length / 2
    head_c[:, 1] += np.sin(yaw) * length / 2
    head_c[:, 2] += size_lwh[:, 2] / 2 - zone / 2
    head_s = np.stack([length, np.minimum(size_lwh[:, 1], HEAD_WIDTH_M), zone], 1)
    T = np.asarray(T_global_from_cam, dtype=np.float64)
    T_cam_from_global = invert_transform(T)
    corners = transform_points(T_cam_from_global, box_corners(head_c, head_s, yaw))
    boxes, _ = project_boxes_2d(corners, intrinsic, image_wh, near=near_m)
    depth = transform_points(T_cam_from_global, head_c)[:, 2]
    fy = float(np.asarray(intrinsic)[1, 1])
    face_px = np.where(depth > near_m, fy * FACE_HEIGHT_M / np.maximum(depth, near_m), 0.0)
    heading = np.stack([np.cos(yaw), np.sin(yaw)], axis=1)
    to_cam = T[None, :2, 3] - center[:, :2]
    cos = np.einsum("ij,ij->i", to_cam, heading) / np.maximum(np.linalg.norm(to_cam, axis=1), 1e-9)
    facing = cos > FACING_MIN_COS
    return boxes, face_px, facing
