"""Z-buffered rendering of shaded cuboids over a procedural ground and sky for one pinhole camera.

Conventions:

- Pixel ``(row, col)`` is the ray through the image point ``(u, v) = (col, row)`` (pixel centres at integer
  coordinates, as in OpenCV and ``cv2.fillConvexPoly``).
- ``depth_m`` is the **z-depth** along the optical axis (camera frame z, the convention of
  ``projection.project_points``), not the Euclidean range; ``inf`` where the ray sees sky.

Method (per box, yaw-only boxes in the global frame):

- Faces: only the faces whose outward side holds the camera can be seen (a ray from outside a convex box enters
  it through one of them). Each such face is clipped to ``z >= near_m`` and projected; its 2D bounding rectangle
  bounds the pixels tested.
- Footprint and depth, exactly per pixel: the pixel-centre ray meets the face plane at
  ``t = (+-half - o) / d`` in the box frame, which is the pixel's z-depth because the ray ``K^-1 [u, v, 1]`` has
  camera z = 1; the pixel belongs to the face when the hit's two in-plane coordinates lie within the face. So
  the footprint is exactly the set of pixels whose rays hit the box (no rasterisation rounding, no cracks
  between faces), and the depth is the analytic ray-plane distance.
- Near plane: where ``z = near_m`` cuts a box, the pixels whose ray is inside the box at that depth show the
  cut (a flat "cap" at depth ``near_m``, darker shade), so a box crossing the near plane stays solid.
- Z-buffer: per-pixel depth test (strict ``<``: on an exact tie the box drawn first stays) against the ground
  and the boxes drawn before, so the image does not depend on the box order except on exact ties. Boxes are
  tested against the ground pushed back by ``GROUND_CONTACT_TOLERANCE`` (relative) so that a box standing on
  the road is not nibbled along its bottom edge by rounding; ``depth_m`` holds the true ground depth.
- ``unoccluded_pixels``: the union of a box's face and cap pixels inside the image, whatever lies in front;
  ``visible_pixels``: the pixels whose final instance id is the box.
- Shading: ``colour * (AMBIENT + DIFFUSE * max(0, n . SUN_DIR_GLOBAL))`` with the face's outward normal ``n``.
  Ground pixels take ``ground(x_global, y_global)`` at the ray's hit on ``z = ground_z``, blended towards the
  horizon sky colour with distance (exponential haze, optional); the sky is a vertical gradient on the ray's
  elevation, ``sky_rgb`` at the horizon darkening by ``background.SKY_ZENITH_DARKENING`` towards the zenith.

Speed: numpy over pixel windows (float32) plus a few OpenCV calls (masked copies, channel merge) where numpy
is slow (masked or 3-channel writes into strided windows). ``benchmarks/bench_synth.py`` times a whole scene.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.calibration.rig import CameraSpec
from stridegen.core.box_geometry import box_corners
from stridegen.core.projection import clip_segments_near, project_boxes_2d
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.logs.synthetic.background import GroundShader, render_background
from stridegen.logs.synthetic.pixel_rays import centred_grid, pixel_ray_basis, ray_component

# A fixed sun in the global frame, high but low enough that vertical faces facing different ways differ.
SUN_DIR_GLOBAL = np.array([0.5, 0.3, 0.6]) / np.linalg.norm([0.5, 0.3, 0.6])
AMBIENT = 0.45
DIFFUSE = 0.55
CAP_SHADE = 0.35  # shade of the near-plane cut through a box
GROUND_CONTACT_TOLERANCE = 1e-5  # relative push-back of the ground in the boxes' depth test (see above)

_FACE_NORMALS_LOCAL = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)


@dataclass(frozen=True)
class CameraRender:
    """One rendered image: colour, per-pixel instance id (0 = background, i + 1 = box i), z-depth and the
    per-box pixel counts (``visible_pixels``: pixels showing the box; ``unoccluded_pixels``: pixels the box would
    cover in this image with nothing else in front)."""

    rgb: np.ndarray
    instance: np.ndarray
    depth_m: np.ndarray
    visible_pixels: np.ndarray
    unoccluded_pixels: np.ndarray
    # With decals: per decal, the pixel box (x0, y0, x1, y1; exclusive ends) of its visible pixels (NaN if none)
    # and their count. None when no decal was asked for.
    decal_boxes_xyxy: np.ndarray | None = None
    decal_pixels: np.ndarray | None = None

    @property
    def visible_fraction(self) -> np.ndarray:
        """visible / unoccluded per box (0 where the box covers no pixel)."""
        vis = self.visible_pixels.astype(np.float64)
        unocc = self.unoccluded_pixels.astype(np.float64)
        return np.divide(vis, unocc, out=np.zeros_like(vis), where=unocc > 0)


# ---------------------------------------------------------------------------------------------- boxes


def _face_shades(yaw_global: np.ndarray, colors_rgb: np.ndarray) -> np.ndarray:
    """uint8 [N, 7, 3]: each box's colour on faces +x, -x, +y, -y, +z, -z (box frame) and on a near-plane cap."""
    c, s = np.cos(yaw_global)[:, None], np.sin(yaw_global)[:, None]
    n = _FACE_NORMALS_LOCAL[None]
    n_global = np.stack(
        [c * n[..., 0] - s * n[..., 1], s * n[..., 0] + c * n[..., 1], np.broadcast_to(n[..., 2], c.shape[:1] + (6,))],
        axis=-1,
    )  # [N, 6, 3]
    shade = AMBIENT + DIFFUSE * np.clip(n_global @ SUN_DIR_GLOBAL, 0.0, None)
    shade = np.concatenate([shade, np.full((shade.shape[0], 1), CAP_SHADE)], axis=1)
    colour = colors_rgb.astype(np.float64)[:, None, :]
    return np.clip(np.rint(shade[..., None] * colour), 0, 255).astype(np.uint8)


# Face f = 2 * axis + (1 if its outward normal points to -axis); its corners in cyclic order as signs of the two
# other axes (the in-plane axes of face f are _FACE_AXES[f // 2]).
_FACE_AXES = ((1, 2), (2, 0), (0, 1))
_CYCLE = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]], dtype=np.float64)


def _face_corner_signs() -> np.ndarray:
    """[6, 4, 3] corner signs of the six faces in the box frame, each face's corners in cyclic order."""
    signs = np.zeros((6, 4, 3))
    for f in range(6):
        axis, side = f // 2, (1.0 if f % 2 == 0 else -1.0)
        j1, j2 = _FACE_AXES[axis]
        signs[f, :, axis] = side
        signs[f, :, j1] = _CYCLE[:, 0]
        signs[f, :, j2] = _CYCLE[:, 1]
    return signs


_FACE_CORNER_SIGNS = _face_corner_signs()


def _face_bboxes_2d(
    T_cam_from_global: np.ndarray,
    center_global: np.ndarray,
    size_lwh: np.ndarray,
    yaw_global: np.ndarray,
    intrinsic: np.ndarray,
    near: float,
) -> np.ndarray:
    """[N, 6, 4] image bounding rectangles (x0, y0, x1, y1) of each face clipped to ``z >= near``; NaN if none."""
    local = 0.5 * size_lwh[:, None, None, :] * _FACE_CORNER_SIGNS[None]  # [N, 6, 4, 3]
    c, s = np.cos(yaw_global)[:, None, None], np.sin(yaw_global)[:, None, None]
    corners_global = (
        np.stack([c * local[..., 0] - s * local[..., 1], s * local[..., 0] + c * local[..., 1], local[..., 2]], axis=-1)
        + center_global[:, None, None, :]
    )
    corners_cam = transform_points(T_cam_from_global, corners_global)
    q0, q1, keep = clip_segments_near(corners_cam, np.roll(corners_cam, -1, axis=2), near)
    pts = np.concatenate([q0, q1], axis=2)  # [N, 6, 8, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        homog = pts @ np.asarray(intrinsic, dtype=np.float64).T
        uv = homog[..., :2] / homog[..., 2:3]
    uv[~np.concatenate([keep, keep], axis=2)] = np.nan
    out = np.full(corners_cam.shape[:2] + (4,), np.nan)
    any_kept = keep.any(axis=2)
    out[any_kept, :2] = np.nanmin(uv[any_kept], axis=1)
    out[any_kept, 2:] = np.nanmax(uv[any_kept], axis=1)
    return out


def _pixel_windows(boxes_xyxy: np.ndarray, width: int, height: int) -> np.ndarray:
    """Integer pixel windows [..., 4] (c0, c1, r0, r1), inclusive, covering continuous 2D boxes [..., 4] with a
    1 px margin. Windows that miss the image (or NaN boxes) get c1 < c0."""
    boxes = np.nan_to_num(np.asarray(boxes_xyxy, dtype=np.float64), nan=-10.0)
    c0 = np.maximum(0, np.floor(boxes[..., 0]) - 1)
    r0 = np.maximum(0, np.floor(boxes[..., 1]) - 1)
    c1 = np.minimum(width - 1, np.ceil(boxes[..., 2]) + 1)
    r1 = np.minimum(height - 1, np.ceil(boxes[..., 3]) + 1)
    empty = ~np.isfinite(np.asarray(boxes_xyxy, dtype=np.float64)).all(axis=-1) | (c1 < c0) | (r1 < r0)
    c1 = np.where(empty, -1, c1)
    c0 = np.where(empty, 0, c0)
    return np.stack([c0, c1, r0, r1], axis=-1).astype(np.int64)


def _masked_copy(src: np.ndarray, mask: np.ndarray, dst: np.ndarray) -> None:
    """dst[mask] = src[mask] in place (dst may be a strided window of a larger image).

    OpenCV's copyTo is an order of magnitude faster than numpy's masked assignment on strided windows.
    """
    import cv2

    out = cv2.copyTo(src, mask.view(np.uint8), dst)
    if out is not dst:  # OpenCV wrote into a temporary: copy it back
        dst[...] = out


@dataclass
class _Buffers:
    """The z-buffer (float32 z-depth, initially the ground's) and the surface code buffer (int32:
    8 * (box + 1) + face, 0 = ground or sky)."""

    depth: np.ndarray
    code: np.ndarray

    def depth_test(self, window: tuple[int, int, int, int], hit: np.ndarray, depth: np.ndarray, code: int) -> None:
        """Write ``depth`` and ``code`` where ``hit`` and nearer than the buffer (ties keep the buffer).

        Against the ground the test allows GROUND_CONTACT_TOLERANCE (relative): a box standing on the road ties
        with the ground along its bottom edge, and rounding must not nibble that edge away.
        """
        c0, c1, r0, r1 = window
        win_depth = self.depth[r0 : r1 + 1, c0 : c1 + 1]
        win_code = self.code[r0 : r1 + 1, c0 : c1 + 1]
        limit = np.where(win_code == 0, win_depth * np.float32(1.0 + GROUND_CONTACT_TOLERANCE), win_depth)
        wins = hit & (depth < limit)
        _masked_copy(depth, wins, win_depth)
        _masked_copy(np.full(wins.shape, code, dtype=np.int32), wins, win_code)


def _face_hits(
    face: int, rays_local: list[np.ndarray], origin_local: np.ndarray, half: np.ndarray, near: float
) -> tuple[np.ndarray, np.ndarray]:
    """(hit, z-depth) of the pixel rays ``rays_local`` (x, y, z component arrays over a pixel window, box frame)
    that meet one face at z-depth >= near.

    The ray hits the face plane ``x_axis = side * half_axis`` at ``t = (side * half - o) / d`` (its z-depth, since
    the ray's camera z component is 1) and the face if both in-plane coordinates of that point lie within the
    half sizes.
    """
    axis, side = face // 2, (1.0 if face % 2 == 0 else -1.0)
    f32 = np.float32
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = f32(side * half[axis] - origin_local[axis]) / rays_local[axis]
        hit = t >= f32(near)
        for j in _FACE_AXES[axis]:
            coord = t * rays_local[j]
            coord += f32(origin_local[j])
            hit &= np.abs(coord, out=coord) <= f32(half[j])
    return hit, t


def _cap_hits(rays_local: list[np.ndarray], origin_local: np.ndarray, half: np.ndarray, near: float) -> np.ndarray:
    """Pixels whose ray is inside the box at z-depth ``near``: the near plane's cut through the box."""
    f32 = np.float32
    hit = np.ones(rays_local[0].shape, dtype=bool)
    for j in range(3):
        hit &= np.abs(f32(origin_local[j]) + f32(near) * rays_local[j]) <= f32(half[j])
    return hit


def _draw_box(
    box: int,
    basis_local: np.ndarray,
    origin_local: np.ndarray,
    half: np.ndarray,
    box_window: tuple[int, int, int, int],
    face_windows: list[tuple[int, int, int, int] | None],
    crosses_near: bool,
    intrinsic: np.ndarray,
    near: float,
    buffers: _Buffers,
) -> int:
    """Depth-test one box into the buffers (in place); return its unoccluded pixel count.

    Only faces whose outward side holds the camera are drawn (a convex box is entered through one of those);
    ``face_windows[f]`` (inside ``box_window``) is None for the others. Where the near plane cuts the box, the cut
    is drawn at ``near``. The pixel rays are evaluated once over the box window and sliced per face.
    """
    bc0, bc1, br0, br1 = box_window
    u, v = centred_grid(*box_window, intrinsic)
    b = basis_local.astype(np.float32)
    rays_local = list(b[:, 0, None, None] * u[None, None, :] + (b[:, 1, None] * v[None, :] + b[:, 2, None])[:, :, None])
    footprint = np.zeros((br1 - br0 + 1, bc1 - bc0 + 1), dtype=bool)
    for face, window in enumerate(face_windows):
        if window is None:
            continue
        c0, c1, r0, r1 = window
        rows, cols = slice(r0 - br0, r1 - br0 + 1), slice(c0 - bc0, c1 - bc0 + 1)
        hit, depth = _face_hits(face, [r[rows, cols] for r in rays_local], origin_local, half, near)
        buffers.depth_test(window, hit, depth, 8 * (box + 1) + face)
        footprint[rows, cols] |= hit
    if crosses_near:
        hit = _cap_hits(rays_local, origin_local, half, near)
        buffers.depth_test(box_window, hit, np.full(hit.shape, near, dtype=np.float32), 8 * (box + 1) + 6)
        footprint |= hit
    return int(np.count_nonzero(footprint))


def render_camera(
    camera: CameraSpec,
    T_global_from_cam: np.ndarray,
    center_global: np.ndarray,
    size_lwh: np.ndarray,
    yaw_global: np.ndarray,
    colors_rgb: np.ndarray,
    ground: GroundShader,
    near_m: float = 0.1,
    sky_rgb: tuple[float, float, float] = (170.0, 200.0, 235.0),
    ground_z: float = 0.0,
    haze_distance_m: float | None = 400.0,
    decals: Sequence[Decal] = (),
) -> CameraRender:
    """Render N yaw-only boxes (global frame) over ground and sky as seen by ``camera`` at ``T_global_from_cam``.

    ``colors_rgb`` is uint8 [N, 3]. ``haze_distance_m`` (None: off) is the e-folding distance of the ground's
    blend into the horizon sky colour. ``decals`` (``Decal``) are textures drawn on box end faces where those
    faces are visible (licence plates, faces); without them nothing else changes.
    """
    T = np.asarray(T_global_from_cam, dtype=np.float64)
    center_global = np.asarray(center_global, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw_global = np.asarray(yaw_global, dtype=np.float64).reshape(-1)
    colors_rgb = np.asarray(colors_rgb, dtype=np.uint8).reshape(-1, 3)
    n_boxes = center_global.shape[0]
    if n_boxes >= np.iinfo(np.uint16).max:
        raise ValueError(f"render_camera: {n_boxes} boxes do not fit the uint16 instance image (max 65534)")
    w, h = camera.width, camera.height
    k = camera.intrinsic
    basis_global = pixel_ray_basis(k, T[:3, :3])
    origin = T[:3, 3]

    rgb, depth = render_background(
        camera, basis_global, origin, ground, ground_z, np.asarray(sky_rgb, dtype=np.float64), haze_distance_m
    )
    buffers = _Buffers(depth=depth, code=np.zeros((h, w), dtype=np.int32))
    unoccluded = np.zeros(n_boxes, dtype=np.int64)
    drawn: list[list[int]] = []
    if n_boxes:
        T_cam_from_global = invert_transform(T)
        corners_cam = transform_points(T_cam_from_global, box_corners(center_global, size_lwh, yaw_global))
        boxes_2d, valid = project_boxes_2d(corners_cam, k, (w, h), near=near_m)
        face_2d = _face_bboxes_2d(T_cam_from_global, center_global, size_lwh, yaw_global, k, near_m)
        crosses_near = np.asarray((corners_cam[..., 2] < near_m).any(axis=1))
        c, s = np.cos(yaw_global), np.sin(yaw_global)
        zeros, ones = np.zeros(n_boxes), np.ones(n_boxes)
        R_local_from_global = np.stack(
            [np.stack([c, s, zeros], -1), np.stack([-s, c, zeros], -1), np.stack([zeros, zeros, ones], -1)], axis=1
        )  # [N, 3, 3]
        origin_local = np.einsum("nij,nj->ni", R_local_from_global, origin[None] - center_global)
        half = 0.5 * size_lwh
        # Faces whose outward side holds the camera: +axis if o > half, -axis if o < -half.
        front = np.stack([origin_local > half, origin_local < -half], axis=-1).reshape(n_boxes, 6)
        box_windows = _pixel_windows(boxes_2d, w, h)
        face_windows = _pixel_windows(face_2d, w, h)
        # Faces lie inside their box: clamp their windows to the box's (guards against rounding at the margin).
        face_windows[..., 0::2] = np.maximum(face_windows[..., 0::2], box_windows[:, None, 0::2])
        face_windows[..., 1::2] = np.minimum(face_windows[..., 1::2], box_windows[:, None, 1::2])
        face_windows[~front, 1] = -1
        for i in np.nonzero(valid & (box_windows[:, 1] >= box_windows[:, 0]))[0].tolist():
            box_window = box_windows[i].tolist()
            drawn.append(box_window)
            windows = [
                tuple(win) if win[1] >= win[0] and win[3] >= win[2] else None for win in face_windows[i].tolist()
            ]
            unoccluded[i] = _draw_box(
                i,
                R_local_from_global[i] @ basis_global,
                origin_local[i],
                half[i],
                tuple(box_window),
                windows,
                bool(crosses_near[i]),
                k,
                near_m,
                buffers,
            )
    instance = np.zeros((h, w), dtype=np.uint16)
    visible = np.zeros(n_boxes, dtype=np.int64)
    if n_boxes and drawn:
        # Only the union of the drawn windows can hold box pixels.
        c0, c1 = min(x[0] for x in drawn), max(x[1] for x in drawn)
        r0, r1 = min(x[2] for x in drawn), max(x[3] for x in drawn)
        code = buffers.code[r0 : r1 + 1, c0 : c1 + 1]
        instance[r0 : r1 + 1, c0 : c1 + 1] = code >> 3
        _paint_boxes(rgb[r0 : r1 + 1, c0 : c1 + 1], code, _face_shades(yaw_global, colors_rgb))
        visible = np.bincount(instance[r0 : r1 + 1, c0 : c1 + 1].ravel(), minlength=n_boxes + 1)[1:].astype(np.int64)
    if decals:
        T_cam_from_global = invert_transform(T)
        painted = [
            _paint_decal(rgb, buffers.code, d, T_cam_from_global, basis_global, origin, center_global[d.box],
                         size_lwh[d.box], float(yaw_global[d.box]), k, near_m)
            for d in decals
        ]  # fmt: skip
        boxes = np.array([p[0] for p in painted], dtype=np.float64).reshape(-1, 4)
        return CameraRender(rgb, instance, depth, visible, unoccluded, boxes, np.array([p[1] for p in painted]))
    return CameraRender(rgb=rgb, instance=instance, depth_m=depth, visible_pixels=visible, unoccluded_pixels=unoccluded)


@dataclass(frozen=True)
class Decal:
    """A flat texture on an end face of box ``box``: ``face`` 0 the front (+x, the heading), 1 the back (-x).
    ``right_m`` is the texture centre's offset from the face's centre line along the right of a viewer facing the
    face, ``z_m`` its height above the box bottom; ``width_m`` x ``height_m`` its size; ``texture`` uint8
    [rows, cols, 3] RGB, row 0 at the top, lit like the face (ambient + diffuse of the face's normal)."""

    box: int
    face: int
    right_m: float
    z_m: float
    width_m: float
    height_m: float
    texture: np.ndarray
    kind: str = ""


def _paint_decal(
    rgb: np.ndarray,
    code: np.ndarray,
    decal: Decal,
    T_cam_from_global: np.ndarray,
    basis_global: np.ndarray,
    origin_global: np.ndarray,
    center: np.ndarray,
    size_lwh: np.ndarray,
    yaw: float,
    intrinsic: np.ndarray,
    near: float,
) -> tuple[list[float], int]:
    """Draw one decal (in place) on the pixels where its face is the visible surface; returns the pixel box of
    the drawn pixels (NaN if none) and their count.

    Pixel rays meet the face plane x_local = side * l / 2 at z-depth t (as in ``_face_hits``); the hit's
    lateral and vertical coordinates pick the texel (nearest)."""
    side = 1.0 if decal.face == 0 else -1.0
    half = 0.5 * np.asarray(size_lwh, dtype=np.float64)
    c, s = np.cos(yaw), np.sin(yaw)
    R_local_from_global = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    o = R_local_from_global @ (origin_global - center)
    nothing: tuple[list[float], int] = ([np.nan] * 4, 0)
    if side * o[0] <= half[0]:  # the camera is not on the face's outward side
        return nothing
    lat0, lat1 = decal.right_m - decal.width_m / 2, decal.right_m + decal.width_m / 2
    z1 = decal.z_m + decal.height_m / 2 - half[2]  # top, box frame
    z0 = z1 - decal.height_m
    corners_local = np.array([[side * half[0], side * a, b] for a in (lat0, lat1) for b in (z0, z1)])
    corners_cam = transform_points(T_cam_from_global, corners_local @ R_local_from_global + center)
    height, width = code.shape
    if (corners_cam[:, 2] < near).any():
        window = (0, width - 1, 0, height - 1)
    else:
        uv = corners_cam[:, :2] / corners_cam[:, 2:3] * np.diag(intrinsic)[:2] + intrinsic[:2, 2]
        window = tuple(_pixel_windows(np.r_[uv.min(axis=0), uv.max(axis=0)], width, height).tolist())
    c0, c1, r0, r1 = window
    if c1 < c0 or r1 < r0:
        return nothing
    u, v = centred_grid(c0, c1, r0, r1, intrinsic)
    basis = R_local_from_global @ basis_global
    rays = [ray_component(basis[j], u.astype(np.float64), v.astype(np.float64)) for j in range(3)]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (side * half[0] - o[0]) / rays[0]
        lateral = side * (o[1] + t * rays[1])
        z = o[2] + t * rays[2]
    fs = (lateral - lat0) / decal.width_m
    ft = (z1 - z) / decal.height_m
    inside = (t >= near) & (fs >= 0) & (fs < 1) & (ft >= 0) & (ft < 1)
    inside &= code[r0 : r1 + 1, c0 : c1 + 1] == 8 * (decal.box + 1) + decal.face
    if not inside.any():
        return nothing
    tex = np.asarray(decal.texture, dtype=np.float64)
    rows = np.minimum((ft[inside] * tex.shape[0]).astype(np.int64), tex.shape[0] - 1)
    cols = np.minimum((fs[inside] * tex.shape[1]).astype(np.int64), tex.shape[1] - 1)
    normal = np.array([side * c, side * s, 0.0])
    shade = AMBIENT + DIFFUSE * max(0.0, float(normal @ SUN_DIR_GLOBAL))
    rgb[r0 : r1 + 1, c0 : c1 + 1][inside] = np.clip(np.rint(tex[rows, cols] * shade), 0, 255).astype(np.uint8)
    rr, cc = np.nonzero(inside)
    box = [float(c0 + cc.min()), float(r0 + rr.min()), float(c0 + cc.max() + 1), float(r0 + rr.max() + 1)]
    return box, int(inside.sum())


def _paint_boxes(rgb: np.ndarray, code: np.ndarray, shades: np.ndarray) -> None:
    """Colour every box pixel of a window (in place) from its surface code and the face shades [N, 7, 3].

    The colour table is packed as RGBA in uint32 so one ``np.take`` looks up all channels; OpenCV drops the
    alpha and copies under the mask (numpy's masked scatter over three channels is several times slower).
    """
    import cv2

    table = np.zeros((shades.shape[0] + 1, 8, 4), dtype=np.uint8)
    table[1:, :7, :3] = shades
    packed = table.reshape(-1, 4).view(np.uint32).ravel()
    h, w = code.shape
    colours = cv2.cvtColor(
        np.ascontiguousarray(np.take(packed, code)).view(np.uint8).reshape(h, w, 4), cv2.COLOR_RGBA2RGB
    )
    _masked_copy(colours, code > 0, rgb)
