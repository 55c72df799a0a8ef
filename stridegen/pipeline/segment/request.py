"""Build a ``SegmentRequest`` from 3D boxes, rasterise projected hulls, and apply the depth-order occlusion rule.

``frame_requests`` makes the requests of one frame's camera images (``CameraView``: the build's stored images, or a
log frame's through ``camera_view``) with the frame's LiDAR sweep (``frame_lidar``): the build's segment stage, the
tests and the benchmarks all make their requests there.

Pixel convention: see ``stridegen.pipeline.segment.raster`` (pixel centres at integer coordinates; a polygon's
raster holds the pixels whose centre lies in the closed polygon). Per-object arrays are crops (``MaskCrop``).

Occlusion rule: objects are z-ordered by ``depth_m`` (camera-frame z of the box centre; ties by request index,
the lower index counting as nearer). With ``occlusion="hull"`` (the default) an object's mask never holds a pixel
of a nearer object's hull or of a nearer object's final mask; with ``"mask"`` only nearer final masks are removed.
Either way masks never overlap. ``"none"`` switches the rule off (masks may overlap).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import overload

import numpy as np

from stridegen.core.box_geometry import points_in_boxes, segments_pass_through_box
from stridegen.core.boxes import Boxes
from stridegen.core.errors import ConfigError, GeometryError
from stridegen.core.polygons import convex_hulls_2d
from stridegen.core.projection import frustum_candidates, project_clipped_edges, project_points
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.logs.base import Frame
from stridegen.pipeline.segment.base import DeferredImageRequest, LazyImage, SegmentRequest, SegmentResult
from stridegen.pipeline.segment.raster import MaskCrop, image_part, polygon_crop, polygon_crops

OCCLUSION_MODES = ("hull", "mask", "none")


# ---------------------------------------------------------------------------------------------- polygons


def image_rect(height: int, width: int) -> tuple[float, float, float, float]:
    """(u0, v0, u1, v1) of the image in continuous pixel coordinates (pixel centres at integers)."""
    return -0.5, -0.5, width - 0.5, height - 0.5


def hull_masks(hulls: Sequence[np.ndarray], height: int, width: int) -> np.ndarray:
    """[N, H, W] bool raster masks of N convex hulls (pixel-centre rule, see the module docstring)."""
    out = np.zeros((len(hulls), height, width), dtype=bool)
    for i, hull in enumerate(hulls):
        crop = polygon_crop(hull, height, width)
        out[i][crop.slices] = crop.pixels
    return out


def projected_hulls(
    corners_cam: np.ndarray,
    intrinsic: np.ndarray,
    near_m: float = 0.1,
    within: tuple[float, float, float, float] | None = None,
) -> list[np.ndarray]:
    """Convex hulls (image pixels) of [N, 8, 3] camera-frame box corners, edges clipped to ``z >= near_m``.

    The 12 box edges are clipped at the near plane and their surviving end points projected; the hull of those
    points is the exact silhouette of the near-clipped box. A box wholly behind the near plane gets a [0, 2] array,
    and so does, given ``within`` = (u0, v0, u1, v1), a box whose projected points all lie more than one pixel
    beyond one side of that rectangle (its hull cannot meet it; the pixel of margin keeps rounding out of the
    decision). The hulls are computed in one batch (``convex_hulls_2d``); ``projected_hulls_batch`` does
    several cameras in one.
    """
    return projected_hulls_batch([(corners_cam, intrinsic, within)], near_m)[0]


def projected_hulls_batch(
    views: Sequence[tuple[np.ndarray, np.ndarray, tuple[float, float, float, float] | None]], near_m: float = 0.1
) -> list[list[np.ndarray]]:
    """``projected_hulls(corners_cam, intrinsic, near_m, within)`` for each of several ``views`` (e.g. the cameras
    of one frame) with one ``convex_hulls_2d`` call for all of them: one numpy sort for every set, and each set's
    hull is the same as alone. The views' edges are
    clipped and projected in one batch too (``project_clipped_edges`` with one intrinsic matrix per box: the same
    arithmetic, box by box, as one view at a time)."""
    if not views:
        return []
    corners = [np.asarray(corners_cam, dtype=np.float64).reshape(-1, 8, 3) for corners_cam, _, _ in views]
    n_boxes = [c.shape[0] for c in corners]
    intrinsics = np.concatenate(
        [
            np.broadcast_to(np.asarray(k, dtype=np.float64), (n, 3, 3))
            for (_, k, _), n in zip(views, n_boxes, strict=True)
        ]
    )
    uv, keep = project_clipped_edges(np.concatenate(corners), intrinsics, near_m)
    wanted = keep.any(axis=1)
    # each box's view's rectangle (u0, v0, u1, v1); a view without one: infinite, which rules nothing out
    unbounded = (-np.inf, -np.inf, np.inf, np.inf)
    rect = np.repeat(np.array([unbounded if within is None else within for _, _, within in views]), n_boxes, 0)
    u, v = uv[..., 0], uv[..., 1]
    beyond = (
        (np.where(keep, u, -np.inf).max(axis=1) < rect[:, 0] - 1.0)
        | (np.where(keep, u, np.inf).min(axis=1) > rect[:, 2] + 1.0)
        | (np.where(keep, v, -np.inf).max(axis=1) < rect[:, 1] - 1.0)
        | (np.where(keep, v, np.inf).min(axis=1) > rect[:, 3] + 1.0)
    )
    chosen = np.flatnonzero(wanted & ~beyond)
    computed = iter(convex_hulls_2d(uv[chosen], keep[chosen]))
    out: list[list[np.ndarray]] = [[np.zeros((0, 2))] * n for n in n_boxes]
    view_of = np.repeat(np.arange(len(views)), n_boxes)[chosen].tolist()
    box_of = (chosen - np.repeat(np.cumsum(n_boxes) - n_boxes, n_boxes)[chosen]).tolist()
    for view, box in zip(view_of, box_of, strict=True):
        out[view][box] = next(computed)
    return out


# ---------------------------------------------------------------------------------------------- request


def make_request(
    image_rgb: np.ndarray | LazyImage,
    intrinsic: np.ndarray,
    T_cam_from_global: np.ndarray,
    boxes: Boxes,
    lidar_points_global: np.ndarray | Callable[[], np.ndarray | None] | None = None,
    near_m: float = 0.1,
    ground_margin_m: float = 0.2,
    lidar_origin_global: np.ndarray | None = None,
    hulls: list[np.ndarray] | None = None,
) -> tuple[SegmentRequest, np.ndarray]:
    """The segment request of one camera image and the indices (into ``boxes``) of the objects it holds.

    ``boxes`` are in the global frame; ``T_cam_from_global`` maps global points into the camera frame (x right,
    y down, z forward, metres); ``intrinsic`` is the 3x3 pinhole matrix of the undistorted ``image_rgb`` [H, W, 3].
    A box is kept when part of it is in front of the near plane and its near-clipped hull overlaps the image with
    positive area. ``box_xyxy`` is the bounding box of (hull ∩ image), ``depth_m`` the camera z of the box centre.

    LiDAR (``lidar_points_global`` [P, >= 3], metres): points in front of the near plane that project into the
    image are kept; ``lidar_object`` names the kept box whose 3D box holds the point (the nearest box centre when
    several do), -1 for none. Points less than ``ground_margin_m`` above a box's bottom face are not given to it:
    boxes stand on the road, and returns from the road surface inside a box's footprint (between the wheels, under
    a bumper, ground noise) would otherwise seed the road as the object.

    Deferred inputs (the build's): ``image_rgb`` may be a ``LazyImage`` (the size now, the pixels when a backend
    first reads them: the request is a ``DeferredImageRequest``), and ``lidar_points_global`` a callable giving
    the points, called only when the image holds an object (an empty request then carries no LiDAR evidence).
    ``hulls``, where given, must be ``projected_hulls`` of the boxes for this image (``near_m``, the image
    rectangle as ``within``): the build computes a frame's cameras at once (``projected_hulls_batch``).
    """
    if boxes.frame != "global":
        raise GeometryError(f"make_request needs boxes in the global frame, got {boxes.frame!r}")
    if not isinstance(image_rgb, LazyImage):
        image_rgb = np.asarray(image_rgb)
    height, width = _image_size(image_rgb)
    T = np.asarray(T_cam_from_global, dtype=np.float64)
    if hulls is None:
        rect = image_rect(height, width)
        hulls = projected_hulls(transform_points(T, boxes.corners()), intrinsic, near_m, rect) if len(boxes) else []
    elif len(hulls) != len(boxes):
        raise GeometryError(f"make_request got {len(hulls)} hulls for {len(boxes)} boxes")
    part = _ImageObjects.of(hulls, height, width)
    return _request(
        image_rgb, intrinsic, T, boxes, part, lidar_points_global, near_m, ground_margin_m, lidar_origin_global
    )


def _image_size(image: np.ndarray | LazyImage) -> tuple[int, int]:
    """(height, width) of an image, without decoding a ``LazyImage``."""
    if isinstance(image, LazyImage):
        return image.height, image.width
    return int(image.shape[0]), int(image.shape[1])


@dataclass(frozen=True)
class _ImageObjects:
    """The objects of one image that ``make_request`` keeps, from their hulls: a hull with positive area inside
    the image (``raster.image_part``), the bounding box of that part (``xyxy``) and its share of the hull."""

    keep: np.ndarray  # [N] int64 indices into the boxes
    hulls: list[np.ndarray]  # N hulls [V, 2], image pixels
    box_xyxy: np.ndarray  # [N, 4] float64
    shares: list[float]  # raster.inside_share of each kept hull, from the clipping done here
    crops: list[MaskCrop] | None = None  # the hulls' rasters where already made (frame_requests), else None

    @classmethod
    def of(cls, hulls: Sequence[np.ndarray], height: int, width: int) -> _ImageObjects:
        kept: list[int] = []
        kept_hulls: list[np.ndarray] = []
        xyxy: list[np.ndarray] = []
        shares: list[float] = []
        for i, hull in enumerate(hulls):
            if len(hull) == 0:  # behind the near plane or beyond the image (projected_hulls): no area
                continue
            inside, inside_area, share = image_part(hull, width, height)
            if inside_area <= 0.0:
                continue
            kept.append(i)
            kept_hulls.append(hull)
            xyxy.append(np.concatenate([inside.min(axis=0), inside.max(axis=0)]))
            shares.append(share)
        box_xyxy = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
        return cls(np.asarray(kept, dtype=np.int64), kept_hulls, box_xyxy, shares)


def _request(
    image_rgb: np.ndarray | LazyImage,
    intrinsic: np.ndarray,
    T: np.ndarray,
    boxes: Boxes,
    part: _ImageObjects,
    lidar_points_global: np.ndarray | Callable[[], np.ndarray | None] | None,
    near_m: float,
    ground_margin_m: float,
    lidar_origin_global: np.ndarray | None,
) -> tuple[SegmentRequest, np.ndarray]:
    """``make_request`` of an image whose objects ``part`` are known (``T`` the float64 camera-from-global)."""
    height, width = _image_size(image_rgb)
    rect = image_rect(height, width)
    keep, kept_hulls = part.keep, part.hulls
    depth = transform_points(T, boxes.center[keep])[:, 2] if keep.size else np.zeros(0)
    depth_m = np.asarray(depth, dtype=np.float64)
    k = np.asarray(intrinsic, dtype=np.float64)
    geometry = {
        "box_xyxy": part.box_xyxy,
        "hull_uv": kept_hulls,
        "depth_m": depth_m,
        "focal_px": 0.5 * (k[0, 0] + k[1, 1]),
    }
    request = (
        DeferredImageRequest(image_rgb, **geometry)
        if isinstance(image_rgb, LazyImage)
        else SegmentRequest(image_rgb=image_rgb, **geometry)
    )
    request.know_inside_shares(part.shares)
    if part.crops is not None:
        request.know_hull_crops(part.crops)
    if callable(lidar_points_global) and keep.size:  # read the sweep only for an image that holds objects
        lidar_points_global = lidar_points_global()
    if lidar_points_global is not None and not callable(lidar_points_global):
        kept_boxes = boxes[keep]
        pts, uv, z, owner = _lidar_evidence(
            lidar_points_global, kept_boxes, T, intrinsic, near_m, rect, ground_margin_m
        )
        request.lidar_uv, request.lidar_depth_m, request.lidar_object = uv, z, owner
        if lidar_origin_global is not None:
            request.lidar_through = LidarThrough(pts, uv, owner, kept_hulls, kept_boxes, lidar_origin_global)
    return request, keep


class LidarThrough(Sequence[np.ndarray]):
    """Per object, the indices of the points [P, 3] (global; ``uv`` [P, 2] their pixels, ``owner`` [P]) that
    project within the object's hull's bounds, are not its own and were measured through its box from
    ``origin_global``. Object i's array is computed on its first read and kept: a backend pays only for the
    objects it asks about."""

    def __init__(
        self,
        points_global: np.ndarray,
        uv: np.ndarray,
        owner: np.ndarray,
        hulls: list[np.ndarray],
        boxes: Boxes,
        origin_global: np.ndarray,
    ) -> None:
        self._points, self._uv, self._owner, self._hulls = points_global, uv, owner, hulls
        self._boxes, self._origin = boxes, origin_global
        self._level = boxes.full_rotation is None  # yaw-only boxes: each box's rotation is its yaw
        self._done: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._hulls)

    @overload
    def __getitem__(self, i: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, i: slice) -> list[np.ndarray]: ...

    def __getitem__(self, i: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(i, slice):
            return [self[k] for k in range(len(self))[i]]
        k = range(len(self))[i]  # IndexError out of range; a negative index counts from the end
        found = self._done.get(k)
        if found is None:
            found = self._done[k] = self._compute(k)
        return found

    def among(self, i: int, points: np.ndarray) -> np.ndarray:
        """[len(points)] bool: whether each of the point indices ``points`` is in object i's array
        (``np.isin(points, self[i])``), tested on those points only while the array is not computed: each point's
        answer depends on that point alone (``segments_pass_through_box`` works point by point)."""
        points = np.asarray(points, dtype=np.int64).reshape(-1)
        found = self._done.get(i)
        if found is not None:
            listed = np.zeros(self._owner.shape[0], dtype=bool)
            listed[found] = True
            return listed[points]
        return self._measured(i, points)

    def _compute(self, i: int) -> np.ndarray:
        idx = np.arange(self._owner.shape[0])
        return idx[self._measured(i, idx)]

    def _measured(self, i: int, idx: np.ndarray) -> np.ndarray:
        """[len(idx)] bool: the points ``idx`` that project within object i's hull's bounds, are not its own and
        were measured through its box."""
        (u_lo, v_lo), (u_hi, v_hi) = self._hulls[i].min(axis=0), self._hulls[i].max(axis=0)
        u, v = self._uv[idx, 0], self._uv[idx, 1]
        near = (self._owner[idx] != i) & (u >= u_lo) & (u <= u_hi) & (v >= v_lo) & (v <= v_hi)
        boxes = self._boxes
        rotation = None if self._level else boxes[i].rotation_matrices()[0]
        near[near] = segments_pass_through_box(
            self._origin, self._points[idx[near]], boxes.center[i], boxes.size_lwh[i], float(boxes.yaw[i]), rotation
        )
        return near


def _lidar_evidence(
    points_global: np.ndarray,
    boxes: Boxes,
    T_cam_from_global: np.ndarray,
    intrinsic: np.ndarray,
    near_m: float,
    rect: tuple[float, float, float, float],
    ground_margin_m: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(global points [P, 3], uv [P, 2], camera z [P], owning box [P] or -1) of the LiDAR points that project
    into the image."""
    pts_global = np.asarray(points_global, dtype=np.float64).reshape(-1, np.shape(points_global)[-1])[:, :3]
    # a camera sees a few of the sweep's points: only those that may project into the image are moved into it
    pts_global = pts_global.take(frustum_candidates(T_cam_from_global, intrinsic, near_m, rect, pts_global), 0)
    uv, z, in_front = project_points(transform_points(T_cam_from_global, pts_global), intrinsic, near_m)
    u0, v0, u1, v1 = rect
    u, v = uv[:, 0], uv[:, 1]
    with np.errstate(invalid="ignore"):
        ok = np.flatnonzero(in_front & (u >= u0) & (u <= u1) & (v >= v0) & (v <= v1))
    pts_global, uv, z = pts_global.take(ok, axis=0), uv.take(ok, axis=0), z.take(ok)
    owner = np.full(pts_global.shape[0], -1, dtype=np.int64)
    if len(boxes) and pts_global.shape[0]:
        # Raise each box's bottom by the ground margin, along the box's own up axis (the global z for yaw-only
        # boxes; tilted with the box where the boxes keep their full rotation).
        margin = np.minimum(max(float(ground_margin_m), 0.0), 0.5 * boxes.size_lwh[:, 2])
        rotation = None if boxes.full_rotation is None else boxes.rotation_matrices()  # yaw-only: None
        up = np.array([0.0, 0.0, 1.0]) if rotation is None else rotation[:, :, 2]
        center, size = boxes.center + 0.5 * margin[:, None] * up, boxes.size_lwh.copy()
        size[:, 2] -= margin
        inside = points_in_boxes(pts_global, center, size, boxes.yaw, rotation)  # [K, P]
        holders = np.count_nonzero(inside, axis=0)
        # a point in one box belongs to it; one in several to the nearest centre (distances only for those)
        one = np.flatnonzero(holders == 1)
        owner[one] = np.argmax(inside[:, one], axis=0)
        several = np.flatnonzero(holders > 1)
        if several.size:
            sub = pts_global[several]
            dist = np.linalg.norm(sub[None, :, :] - boxes.center[:, None, :], axis=-1)  # [K, P']
            dist = np.where(inside[:, several], dist, np.inf)
            owner[several] = np.argmin(dist, axis=0)
    return pts_global, uv, z, owner


# ---------------------------------------------------------------------------------------------- one frame


@dataclass(frozen=True, eq=False)
class CameraView:
    """One camera image of a frame, as a segment request is built on it."""

    image: np.ndarray | LazyImage  # [H, W, 3] uint8 RGB, or its size now and its pixels when a backend reads them
    intrinsic: np.ndarray  # [3, 3] pinhole matrix of the undistorted image, pixels
    T_cam_from_global: np.ndarray  # [4, 4] global -> camera frame (x right, y down, z forward), metres

    @property
    def size(self) -> tuple[int, int]:
        """(height, width) in pixels, without decoding."""
        if isinstance(self.image, LazyImage):
            return self.image.height, self.image.width
        return int(self.image.shape[0]), int(self.image.shape[1])


def camera_view(frame: Frame, channel: str) -> CameraView:
    """Camera ``channel`` of a log frame (``stridegen.logs.Frame``): its image, decoded now, its calibration and its
    pose."""
    image = frame.image(channel)  # a channel that is no camera is an error here
    sample = frame.sensor(channel)
    if sample.calibration.intrinsic is None:
        raise GeometryError(f"camera {channel!r} of frame {frame.token} has no intrinsics")
    T_cam_from_global = invert_transform(sample.T_global_from_sensor)
    return CameraView(image, sample.calibration.intrinsic, T_cam_from_global)


class FrameLidar:
    """A log frame's key LiDAR sweep (its first LiDAR channel): ``points_global()`` [P, 3] float64, read on the first
    call and kept, and ``origin_global`` [3], where the sensor's rays start (None when the reader does not know)."""

    def __init__(self, frame: Frame, channel: str) -> None:
        self._frame, self._channel = frame, channel
        self._T_global_from_sensor = frame.sensor(channel).T_global_from_sensor
        self._points: np.ndarray | None = None
        self.origin_global = frame.sensor(channel).ray_origin_global

    def points_global(self) -> np.ndarray:
        if self._points is None:
            points = self._frame.lidar(self._channel)[:, :3].astype(np.float64)
            self._points = transform_points(self._T_global_from_sensor, points)
        return self._points


def frame_lidar(frame: Frame) -> FrameLidar | None:
    """The frame's key LiDAR sweep (``FrameLidar``); None when the frame has no LiDAR."""
    channels = frame.lidar_channels
    return FrameLidar(frame, channels[0]) if channels else None


def frame_requests(
    views: Sequence[CameraView],
    boxes: Boxes,
    lidar: FrameLidar | None = None,
    near_m: float = 0.1,
    ground_margin_m: float = 0.2,
) -> Iterator[tuple[SegmentRequest, np.ndarray]]:
    """``make_request`` of each camera view of one frame, in view order: the build's segment stage and the tests
    make a frame's requests here. ``boxes`` are the frame's boxes (global frame); ``lidar`` its sweep, read only
    when an image holds an object, whose sensor position gives the requests' ``lidar_through``.

    The hulls of every view are computed in one batch (``projected_hulls_batch``) at the first request, and so
    are the hull rasters of the objects each image keeps (``raster.polygon_crops`` over the images of one size:
    each crop is the one of its hull alone); each request is made when it is asked for, so a caller that handles
    them one by one holds one decoded image at a time.
    """
    if boxes.frame != "global":
        raise GeometryError(f"make_request needs boxes in the global frame, got {boxes.frame!r}")
    sizes = [view.size for view in views]
    if len(boxes):
        corners = boxes.corners()
        hulls = projected_hulls_batch(
            [
                (transform_points(view.T_cam_from_global, corners), view.intrinsic, image_rect(*size))
                for view, size in zip(views, sizes, strict=True)
            ],
            near_m,
        )
    else:
        hulls = [[] for _ in views]
    parts = _with_crops([_ImageObjects.of(h, *size) for h, size in zip(hulls, sizes, strict=True)], sizes)
    points = None if lidar is None else lidar.points_global
    origin = None if lidar is None else lidar.origin_global
    for view, part in zip(views, parts, strict=True):
        image = view.image if isinstance(view.image, LazyImage) else np.asarray(view.image)
        T = np.asarray(view.T_cam_from_global, dtype=np.float64)
        yield _request(image, view.intrinsic, T, boxes, part, points, near_m, ground_margin_m, origin)


def _with_crops(parts: list[_ImageObjects], sizes: list[tuple[int, int]]) -> list[_ImageObjects]:
    """``parts`` with their hulls' rasters, made in one ``polygon_crops`` batch per image size."""
    crops: list[list[MaskCrop]] = [[] for _ in parts]
    for size in dict.fromkeys(sizes):
        views = [v for v, s in enumerate(sizes) if s == size and parts[v].hulls]
        made = iter(polygon_crops([hull for v in views for hull in parts[v].hulls], *size))
        for v in views:
            crops[v] = [next(made) for _ in parts[v].hulls]
    return [replace(part, crops=crop) for part, crop in zip(parts, crops, strict=True)]


# ---------------------------------------------------------------------------------------------- occlusion


def check_occlusion_mode(mode: str) -> str:
    if mode not in OCCLUSION_MODES:
        raise ConfigError(f"unknown occlusion mode {mode!r}; expected one of {OCCLUSION_MODES}")
    return mode


def nearest_first(depth_m: np.ndarray) -> np.ndarray:
    """Request indices sorted nearest first (stable: equal depths keep request order)."""
    return np.argsort(np.asarray(depth_m, dtype=np.float64), kind="stable")


ObjectSegmenter = Callable[[int, MaskCrop, np.ndarray], tuple[MaskCrop, float]]


def segment_in_depth_order(
    request: SegmentRequest, segment_one: ObjectSegmenter, occlusion: str = "hull"
) -> SegmentResult:
    """Run ``segment_one(i, hull_i, occluder_i) -> (mask_i, quality_i)`` for every object, nearest first.

    ``hull_i`` is object i's raster hull (``request.hull_crop(i)``, a crop); ``occluder_i`` [H, W] bool (read only;
    it changes after the call) the union of the nearer objects' hulls and final masks (``"hull"``), final masks
    only (``"mask"``) or nothing (``"none"``). The returned mask (a crop) is reduced by ``occluder_i`` here, so
    masks never overlap; an empty final mask gets quality 0. Qualities are clipped to [0, 1]. The result holds
    the masks as crops.
    """
    check_occlusion_mode(occlusion)
    n, height, width = len(request), request.height, request.width
    masks = [MaskCrop.empty()] * n
    quality = np.zeros(n, dtype=np.float64)
    occluder = np.zeros((height, width), dtype=bool)
    for i in nearest_first(request.depth_m).tolist():
        hull = request.hull_crop(i)
        mask, q = segment_one(i, hull, occluder)
        mask = mask.minus(occluder)
        masks[i] = mask
        quality[i] = _clip01(float(q)) if mask.any() and np.isfinite(q) else 0.0
        if occlusion == "hull":
            hull.paint(occluder)  # a mask may reach beyond its hull (grabcut): it still claims its pixels
            mask.paint(occluder)
        elif occlusion == "mask":
            mask.paint(occluder)
    return SegmentResult.of_crops(masks, quality, height, width)


def _clip01(q: float) -> float:
    """``float(np.clip(q, 0.0, 1.0))`` of a finite float without numpy's call overhead (as numpy's clip, a value
    not below 0 or above 1 is kept as it is: -0.0 stays -0.0)."""
    if q < 0.0:
        return 0.0
    return 1.0 if q > 1.0 else q


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    """IoU of two [H, W] bool masks (0 when both are empty)."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    union = int(np.count_nonzero(a | b))
    return int(np.count_nonzero(a & b)) / union if union else 0.0
