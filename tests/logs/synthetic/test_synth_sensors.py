"""Synthetic sensors: LiDAR ray casting and z-buffered camera rendering, against analytic answers and an
independent per-pixel / per-ray reference (brute-force slab tests in float64, no pruning, no face windows)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.calibration.rig import CameraSpec, LidarSpec, load_rig
from stridegen.core.box_geometry import box_corners, points_in_boxes
from stridegen.core.projection import project_boxes_2d, project_points
from stridegen.core.transforms import invert_transform, make_transform, transform_points
from stridegen.logs.synthetic.lidar import (
    BOX_REFLECTIVITY,
    GROUND_REFLECTIVITY,
    _box_hits,
    cast_lidar,
    lidar_rays_sensor,
)
from stridegen.logs.synthetic.render import render_camera
from tests.shared_data import REPO

OUTPUT_DIR = REPO / "test-output"

# ---------------------------------------------------------------------------------------------- helpers


def _pose(yaw: float = 0.0, translation: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return make_transform(np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), np.array(translation))


def _lidar(
    beams: int = 1, fov: tuple[float, float] = (0.0, 0.0), res: float = 90.0, max_range: float = 100.0
) -> LidarSpec:
    return LidarSpec(
        channel="LIDAR_TEST",
        translation_ego=(0.0, 0.0, 0.0),
        beams=beams,
        vertical_fov_deg=fov,
        azimuth_resolution_deg=res,
        rotation_hz=20.0,
        max_range_m=max_range,
    )


def _grid_boxes(rng: np.random.Generator, n: int, spacing: float = 9.0) -> tuple[np.ndarray, ...]:
    """n boxes on the ground, one per cell of a grid around the origin (the centre cell empty); they do not
    overlap for spacing >= 9 m (half diagonals <= 3.3 m, centres >= spacing - 2 m apart)."""
    cells = np.array([(i, j) for i in range(-4, 5) for j in range(-4, 5) if (i, j) != (0, 0)], dtype=float)
    cells = cells[rng.permutation(len(cells))[:n]]
    size = np.column_stack([rng.uniform(0.4, 6.0, n), rng.uniform(0.4, 2.8, n), rng.uniform(0.5, 3.5, n)])
    center = np.column_stack([cells * spacing + rng.uniform(-1.0, 1.0, (n, 2)), size[:, 2] / 2])
    return center, size, rng.uniform(-np.pi, np.pi, n)


def _road_shader(x_global: np.ndarray, y_global: np.ndarray) -> np.ndarray:
    """Road along global x (|y| < 7 m) with dashed white lane lines at y = +-3.5 m and a solid edge, grass outside."""
    out = np.empty(np.shape(x_global) + (3,), dtype=np.float32)
    road = np.abs(y_global) < 7.0
    out[...] = (70.0, 125.0, 55.0)
    out[road] = (88.0, 88.0, 92.0)
    dashed = road & (np.abs(np.abs(y_global) - 3.5) < 0.08) & (np.mod(x_global, 9.0) < 3.0)
    edge = np.abs(np.abs(y_global) - 6.8) < 0.1
    out[dashed | edge] = (235.0, 235.0, 235.0)
    return out


def _flat_shader(x_global: np.ndarray, y_global: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.float32([100.0, 100.0, 100.0]), np.shape(x_global) + (3,))


# A small camera at (0, 0, 1.5) m looking along global +x (principal point off the pixel grid: no exact ties).
CAM = CameraSpec(
    channel="CAM_TEST", width=200, height=150, fx=120.0, fy=120.0, cx=100.5, cy=75.5, translation_ego=(0.0, 0.0, 1.5)
)
T_GLOBAL_FROM_CAM = CAM.T_ego_from_sensor


def _reference_slab(
    camera: CameraSpec,
    T_global_from_cam: np.ndarray,
    center: np.ndarray,
    size: np.ndarray,
    yaw: float,
    near: float = 0.1,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-pixel (hit [H, W], z-depth [H, W]) of one box: float64 slab test of every pixel-centre ray."""
    u, v = np.meshgrid(np.arange(camera.width, dtype=float), np.arange(camera.height, dtype=float))
    rays_cam = np.stack([u, v, np.ones_like(u)], axis=-1) @ np.linalg.inv(camera.intrinsic).T
    rays_global = rays_cam @ T_global_from_cam[:3, :3].T
    c, s = np.cos(yaw), np.sin(yaw)
    R_local_from_global = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    d = rays_global @ R_local_from_global.T
    o = R_local_from_global @ (T_global_from_cam[:3, 3] - center)
    half = 0.5 * np.asarray(size, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - o) / d
        t2 = (half - o) / d
    t_near = np.fmin(t1, t2).max(axis=-1)
    t_far = np.fmax(t1, t2).min(axis=-1)
    hit = (t_near <= t_far) & (t_far >= near)
    return hit, np.maximum(t_near, near)


def _render(
    center: np.ndarray,
    size: np.ndarray,
    yaw: np.ndarray,
    camera: CameraSpec = CAM,
    T: np.ndarray = T_GLOBAL_FROM_CAM,
    ground=_flat_shader,
    **kwargs,
):
    center = np.asarray(center, dtype=float).reshape(-1, 3)
    colours = np.tile(np.array([[200, 60, 40]], dtype=np.uint8), (center.shape[0], 1))
    return render_camera(
        camera,
        T,
        center,
        np.asarray(size, float).reshape(-1, 3),
        np.asarray(yaw, float).ravel(),
        colours,
        ground,
        **kwargs,
    )


# ---------------------------------------------------------------------------------------------- LiDAR


def test_ray_straight_at_a_box_face_returns_the_analytic_range():
    spec = _lidar()  # one horizontal beam, azimuths 0, 90, 180, 270 deg
    T = _pose(0.3, (5.0, -2.0, 1.0))
    center_sensor = np.array([10.0, 0.0, 0.0])  # box 2 m long straight ahead: front face 9 m away
    center = transform_points(T, center_sensor[None])
    sweep = cast_lidar(
        T,
        spec,
        center,
        np.array([[2.0, 1.0, 1.0]]),
        np.array([0.3]),
        np.random.default_rng(0),
        range_noise_std_m=0.0,
        dropout=0.0,
    )
    assert sweep.points_sensor.dtype == np.float32 and sweep.points_sensor.shape == (1, 5)
    np.testing.assert_allclose(sweep.points_sensor[0, :3], [9.0, 0.0, 0.0], atol=1e-5)
    assert sweep.points_sensor[0, 3] == pytest.approx(255 * BOX_REFLECTIVITY, rel=1e-5)  # normal incidence
    assert sweep.points_sensor[0, 4] == 0.0
    assert sweep.hits_per_box.tolist() == [1] and sweep.hit_box.tolist() == [0]
    # A white box at 45 degrees incidence: 255 * 1.0 * cos(45 deg).
    turned = cast_lidar(
        T,
        spec,
        center,
        np.array([[2.0, 2.0, 1.0]]),
        np.array([0.3 + np.pi / 4]),
        np.random.default_rng(0),
        range_noise_std_m=0.0,
        dropout=0.0,
        reflectivity=np.ones(1),
    )
    np.testing.assert_allclose(turned.points_sensor[0, :3], [10.0 - np.sqrt(2.0), 0.0, 0.0], atol=1e-5)
    assert turned.points_sensor[0, 3] == pytest.approx(255 * np.cos(np.pi / 4), rel=1e-5)


def test_ray_azimuth_offset_and_nearest_box_win():
    spec = _lidar(res=90.0)
    T = _pose()
    centers = np.array([[0.0, 20.0, 0.0], [0.0, 12.0, 0.0]])  # two boxes along +y (azimuth 90 deg)
    sizes = np.array([[2.0, 2.0, 2.0], [1.0, 4.0, 1.0]])
    sweep = cast_lidar(
        T, spec, centers, sizes, np.zeros(2), np.random.default_rng(0), range_noise_std_m=0.0, dropout=0.0
    )
    np.testing.assert_allclose(sweep.points_sensor[:, :3], [[0.0, 10.0, 0.0]], atol=1e-5)
    assert sweep.hits_per_box.tolist() == [0, 1]
    # Rotating the azimuth grid by 45 deg makes the ray miss both boxes.
    missed = cast_lidar(
        T,
        spec,
        centers,
        sizes,
        np.zeros(2),
        np.random.default_rng(0),
        range_noise_std_m=0.0,
        dropout=0.0,
        azimuth_offset_deg=45.0,
    )
    assert missed.num_points == 0 and missed.hits_per_box.tolist() == [0, 0]


@pytest.mark.parametrize("elevation_deg", [-5.0, -12.5, -30.0])
def test_ground_hits_at_the_analytic_distance(elevation_deg):
    h = 1.84
    spec = _lidar(beams=1, fov=(elevation_deg, elevation_deg), res=1.0)
    sweep = cast_lidar(
        _pose(0.7, (3.0, 4.0, h)),
        spec,
        np.zeros((0, 3)),
        np.zeros((0, 3)),
        np.zeros(0),
        np.random.default_rng(0),
        range_noise_std_m=0.0,
        dropout=0.0,
    )
    assert sweep.num_points == 360 and np.all(sweep.hit_box == -1) and sweep.hits_per_box.shape == (0,)
    xy = np.hypot(sweep.points_sensor[:, 0], sweep.points_sensor[:, 1])
    np.testing.assert_allclose(xy, h / np.tan(np.radians(-elevation_deg)), rtol=1e-5)
    np.testing.assert_allclose(sweep.points_sensor[:, 2], -h, atol=1e-5)
    expected_intensity = 255 * GROUND_REFLECTIVITY * np.sin(np.radians(-elevation_deg))
    np.testing.assert_allclose(sweep.points_sensor[:, 3], expected_intensity, rtol=1e-5)


def test_ground_beyond_max_range_and_upward_beams_give_no_points():
    spec = _lidar(beams=3, fov=(-1.0, 1.0), res=10.0, max_range=50.0)  # -1 deg beam meets the ground at 105 m
    sweep = cast_lidar(
        _pose(0.0, (0.0, 0.0, 1.84)),
        spec,
        np.zeros((0, 3)),
        np.zeros((0, 3)),
        np.zeros(0),
        np.random.default_rng(0),
        range_noise_std_m=0.0,
        dropout=0.0,
    )
    assert sweep.num_points == 0


def test_nuscenes_sweep_exact_geometry_and_box_counts():
    spec = load_rig("nuscenes").lidars[0]
    rng = np.random.default_rng(7)
    center, size, yaw = _grid_boxes(rng, 40)
    T = _pose(0.4, (0.3, -0.2, 1.84)) @ _pose(-np.pi / 2)
    sweep = cast_lidar(T, spec, center, size, yaw, np.random.default_rng(1), range_noise_std_m=0.0, dropout=0.0)
    dirs, _ = lidar_rays_sensor(spec)
    assert dirs.shape[0] == 1080 * 32 and sweep.num_points > 20000
    assert (sweep.hits_per_box > 0).sum() >= 25  # some boxes hide behind others
    assert sweep.num_points == sweep.hit_box.size and sweep.hits_per_box.sum() == np.count_nonzero(sweep.hit_box >= 0)
    pts_global = transform_points(T, sweep.points_sensor[:, :3].astype(np.float64))
    ranges = np.linalg.norm(sweep.points_sensor[:, :3], axis=1)
    assert ranges.max() <= spec.max_range_m + 1e-3
    # Ground returns lie on z = 0; box returns lie on a face of their box.
    ground = sweep.hit_box == -1
    np.testing.assert_allclose(pts_global[ground, 2], 0.0, atol=1e-4)
    on_box = ~ground
    b = sweep.hit_box[on_box]
    rel = pts_global[on_box] - center[b]
    c, s = np.cos(yaw[b]), np.sin(yaw[b])
    local = np.column_stack([c * rel[:, 0] + s * rel[:, 1], -s * rel[:, 0] + c * rel[:, 1], rel[:, 2]])
    gap = np.abs(np.abs(local) - 0.5 * size[b])  # distance to each slab's faces
    assert np.all(np.abs(local) <= 0.5 * size[b] + 1e-4)
    assert np.all(gap.min(axis=1) < 1e-4)
    # hits_per_box equals the points inside each (slightly enlarged) box.
    inside = points_in_boxes(pts_global, center, size + 2e-4, yaw)
    np.testing.assert_array_equal(inside.sum(axis=1), sweep.hits_per_box)
    np.testing.assert_array_equal(np.where(inside.any(axis=0), inside.argmax(axis=0), -1), sweep.hit_box)
    # Ring index: the elevation of each point is its beam's elevation.
    elevation = np.degrees(np.arcsin(sweep.points_sensor[:, 2] / ranges))
    np.testing.assert_allclose(elevation, spec.beam_elevations_deg[sweep.points_sensor[:, 4].astype(int)], atol=1e-3)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    yaw=st.floats(-np.pi, np.pi),
    offset=st.floats(0.0, 360.0),
    n=st.integers(1, 30),
    tilt_deg=st.sampled_from([0.0, 0.0, 3.0, -20.0]),
)
def test_pruned_casting_equals_brute_force(seed, yaw, offset, n, tilt_deg):
    """The sector / range pruning never drops a ray-box pair that intersects (level and tilted sensors, boxes
    next to or around the sensor)."""
    spec = _lidar(beams=8, fov=(-25.0, 5.0), res=1.5, max_range=40.0)
    rng = np.random.default_rng(seed)
    center, size, box_yaw = _grid_boxes(rng, n, spacing=rng.uniform(2.0, 9.0))
    tilt = np.radians(tilt_deg)
    roll = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(tilt), -np.sin(tilt)], [0.0, np.sin(tilt), np.cos(tilt)]])
    T = _pose(yaw, (rng.uniform(-1, 1), rng.uniform(-1, 1), 1.84)) @ make_transform(roll, np.zeros(3))
    sweep = cast_lidar(
        T, spec, center, size, box_yaw, rng, range_noise_std_m=0.0, dropout=0.0, azimuth_offset_deg=offset
    )
    dirs, _ = lidar_rays_sensor(spec, offset)
    dirs_global = dirs @ T[:3, :3].T
    all_box = np.repeat(np.arange(n), dirs.shape[0])
    all_ray = np.tile(np.arange(dirs.shape[0]), n)
    ray, box, t, _ = _box_hits(T[:3, 3], dirs_global, center, size, box_yaw, all_box, all_ray, spec.max_range_m)
    with np.errstate(divide="ignore"):
        t_ground = -T[2, 3] / dirs_global[ray, 2]
    visible = (t_ground <= 0) | (t < t_ground)  # the box is nearer than the ground on that ray
    np.testing.assert_array_equal(np.bincount(box[visible], minlength=n), sweep.hits_per_box)


def test_lidar_noise_dropout_and_determinism():
    spec = load_rig("nuscenes").lidars[0]
    center, size, yaw = _grid_boxes(np.random.default_rng(3), 30)
    T = _pose(0.0, (0.0, 0.0, 1.84))

    def cast(seed: int, noise: float, dropout: float):
        return cast_lidar(
            T, spec, center, size, yaw, np.random.default_rng(seed), range_noise_std_m=noise, dropout=dropout
        )

    exact, a, b, c = cast(0, 0.0, 0.0), cast(5, 0.05, 0.1), cast(5, 0.05, 0.1), cast(6, 0.05, 0.1)
    for field in ("points_sensor", "hits_per_box", "hit_box"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert a.num_points != c.num_points or not np.array_equal(a.points_sensor, c.points_sensor)
    # Dropout: about 10 % of the returns are lost (binomial, 5 sigma).
    n = exact.num_points
    assert abs((n - a.num_points) - 0.1 * n) < 5 * np.sqrt(n * 0.1 * 0.9)
    # Noise: the noisy range minus the exact range of the same ray has the asked standard deviation.
    noisy = cast(5, 0.05, 0.0)
    assert noisy.num_points == n
    r_exact = np.linalg.norm(exact.points_sensor[:, :3].astype(float), axis=1)
    r_noisy = np.linalg.norm(noisy.points_sensor[:, :3].astype(float), axis=1)
    assert np.std(r_noisy - r_exact) == pytest.approx(0.05, rel=0.05)
    assert abs(np.mean(r_noisy - r_exact)) < 0.002
    np.testing.assert_array_equal(noisy.hit_box, exact.hit_box)


# ---------------------------------------------------------------------------------------------- camera


def test_box_straight_ahead_covers_its_projected_rectangle():
    center, size = np.array([10.0, 0.0, 1.5]), np.array([2.0, 2.0, 2.0])
    out = _render(center, size, [0.0])
    mask = out.instance == 1
    assert out.rgb.shape == (150, 200, 3) and out.rgb.dtype == np.uint8 and out.instance.dtype == np.uint16
    # The front face (9 m away, 2 m square) projects to u, v = c +- 120 / 9: pixel centres 88..113, 63..88.
    rows, cols = np.nonzero(mask)
    assert (cols.min(), cols.max(), rows.min(), rows.max()) == (88, 113, 63, 88)
    assert mask.sum() == 26 * 26 == out.visible_pixels[0] == out.unoccluded_pixels[0]
    corners_cam = transform_points(
        invert_transform(T_GLOBAL_FROM_CAM), box_corners(center[None], size[None], np.zeros(1))
    )
    box_2d, valid = project_boxes_2d(corners_cam, CAM.intrinsic, (CAM.width, CAM.height))
    assert valid[0]
    np.testing.assert_allclose([cols.min(), rows.min(), cols.max(), rows.max()], box_2d[0], atol=1.0)
    # Depth of the face: exactly 9 m everywhere on it; the front face faces the camera, so one shade.
    np.testing.assert_allclose(out.depth_m[mask], 9.0, rtol=1e-6)
    # One face seen, facing away from the sun (global -x): ambient shade only, 0.45 * (200, 60, 40).
    np.testing.assert_array_equal(np.unique(out.rgb[mask], axis=0), [[90, 27, 18]])


@settings(max_examples=30, deadline=None)
@given(
    x=st.floats(3.0, 30.0),
    y=st.floats(-8.0, 8.0),
    lift=st.floats(0.0, 2.0),
    yaw=st.floats(-np.pi, np.pi),
    l=st.floats(0.3, 8.0),
    w=st.floats(0.3, 3.0),
    h=st.floats(0.3, 4.0),
)
def test_box_covers_exactly_the_pixels_whose_rays_hit_it(x, y, lift, yaw, l, w, h):
    # Boxes stand on or float above the ground (a box sunk into it would be partly hidden by the ground).
    center, size = np.array([x, y, lift + h / 2]), np.array([l, w, h])
    out = _render(center, size, [yaw])
    mask = out.instance == 1
    # Reference: float64 slab test of every pixel ray against slightly shrunk / grown boxes.
    inner, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, center, size - 2e-4, yaw)
    outer, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, center, size + 2e-4, yaw)
    _, depth_ref = _reference_slab(CAM, T_GLOBAL_FROM_CAM, center, size, yaw)
    assert np.all(mask[inner]) and not np.any(mask[~outer])
    assert out.unoccluded_pixels[0] == out.visible_pixels[0] == mask.sum()
    # Depth of every face pixel: the ray-plane z-depth of its entry face, to 1e-4 m.
    np.testing.assert_allclose(out.depth_m[inner], depth_ref[inner], atol=1e-4, rtol=1e-6)
    corners_cam = transform_points(
        invert_transform(T_GLOBAL_FROM_CAM), box_corners(center[None], size[None], np.array([yaw]))
    )
    box_2d, valid = project_boxes_2d(corners_cam, CAM.intrinsic)
    if mask.any():
        assert valid[0]
    # The clipped 2D box of a box cut by the image border is not tight: compare only boxes wholly inside.
    if valid[0] and np.all(box_2d[0] >= 0) and box_2d[0, 2] <= CAM.width - 1 and box_2d[0, 3] <= CAM.height - 1:
        rows, cols = np.nonzero(mask)
        extent = np.array([cols.min(), rows.min(), cols.max(), rows.max()], dtype=float)
        # Every covered pixel centre lies in the projected 2D box, and the 2D box is at most 2 px larger on each
        # side (a pixel row or column; a sharp silhouette corner can fall between pixel centres).
        assert np.all(extent[:2] >= box_2d[0, :2] - 1e-6) and np.all(extent[2:] <= box_2d[0, 2:] + 1e-6)
        np.testing.assert_allclose(extent, box_2d[0], atol=2.0)


def test_nearer_box_occludes_farther_box():
    centers = np.array([[20.0, 0.0, 1.5], [8.0, 0.0, 1.5]])  # box 0 far and big, box 1 near and small
    sizes = np.array([[2.0, 6.0, 3.0], [1.0, 1.0, 1.0]])
    out = _render(centers, sizes, np.zeros(2))
    far_alone, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, centers[0], sizes[0], 0.0)
    near_alone, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, centers[1], sizes[1], 0.0)
    assert np.all(near_alone <= far_alone)  # the near box is entirely in front of the far one
    np.testing.assert_array_equal(out.instance[near_alone], 2)
    np.testing.assert_array_equal(out.instance[far_alone & ~near_alone], 1)
    np.testing.assert_allclose(out.depth_m[near_alone], 7.5, rtol=1e-6)
    np.testing.assert_allclose(out.depth_m[far_alone & ~near_alone], 19.0, rtol=1e-6)
    assert out.unoccluded_pixels.tolist() == [far_alone.sum(), near_alone.sum()]
    assert out.visible_pixels.tolist() == [(far_alone & ~near_alone).sum(), near_alone.sum()]
    # Order of the boxes does not matter (per-pixel depth test, not painter's order).
    swapped = _render(centers[::-1], sizes[::-1], np.zeros(2))
    np.testing.assert_array_equal(swapped.instance, np.where(out.instance > 0, 3 - out.instance, 0))
    np.testing.assert_array_equal(swapped.depth_m, out.depth_m)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 10))
def test_z_buffer_shows_the_nearest_box_per_pixel(seed, n):
    """Random, possibly overlapping boxes: each pixel shows the box with the smallest reference ray depth."""
    rng = np.random.default_rng(seed)
    center = np.column_stack([rng.uniform(-3, 25, n), rng.uniform(-8, 8, n), np.zeros(n)])
    size = rng.uniform(0.3, 5.0, (n, 3))
    center[:, 2] = size[:, 2] / 2 + rng.uniform(0, 1, n)
    yaw = rng.uniform(-np.pi, np.pi, n)
    out = _render(center, size, yaw)
    refs = [_reference_slab(CAM, T_GLOBAL_FROM_CAM, center[i], size[i], yaw[i]) for i in range(n)]
    depth_ref = np.stack([np.where(hit, d, np.inf) for hit, d in refs])  # [n, H, W]
    inner = np.stack([_reference_slab(CAM, T_GLOBAL_FROM_CAM, center[i], size[i] - 2e-4, yaw[i])[0] for i in range(n)])
    nearest = np.argmin(depth_ref, axis=0)
    ranked = np.sort(depth_ref, axis=0)
    with np.errstate(invalid="ignore"):
        clear = ranked[1] - ranked[0] > 1e-3  # no near-tie between the two nearest boxes
    sel = clear & np.take_along_axis(inner, nearest[None], axis=0)[0]
    np.testing.assert_array_equal(out.instance[sel], nearest[sel] + 1)
    np.testing.assert_allclose(out.depth_m[sel], ranked[0][sel], atol=1e-4, rtol=1e-6)
    assert not np.any(out.instance[~np.isfinite(ranked[0])])
    assert np.all(out.visible_pixels <= out.unoccluded_pixels)
    np.testing.assert_array_equal(out.visible_pixels, np.bincount(out.instance.ravel(), minlength=n + 1)[1:])


def test_half_occluded_box_visible_fraction():
    centers = np.array([[20.0, 0.0, 1.5], [10.0, 1.0, 1.5]])  # the near box covers rays with y > 0 (left half)
    sizes = np.array([[2.0, 4.0, 2.0], [1.0, 2.0, 2.0]])
    out = _render(centers, sizes, np.zeros(2))
    fraction = out.visible_fraction
    assert fraction[0] == pytest.approx(0.5, abs=0.04)
    assert fraction[1] == 1.0
    assert out.visible_pixels[0] < out.unoccluded_pixels[0]
    empty = _render(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
    assert empty.visible_fraction.shape == (0,)


def test_box_partly_outside_the_image_counts_only_pixels_inside():
    center, size = np.array([6.0, 5.5, 1.5]), np.array([2.0, 2.0, 2.0])
    out = _render(center, size, [0.2])
    ref, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, center, size, 0.2)
    assert ref[:, 0].any() and 0 < out.unoccluded_pixels[0]
    assert abs(int(out.unoccluded_pixels[0]) - int(ref.sum())) <= 2 and out.visible_pixels[0] == ref.sum()


def test_boxes_behind_the_camera_render_nothing():
    background = _render(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), ground=_road_shader)
    behind = _render(
        np.array([[-10.0, 0.0, 1.5], [-3.0, 2.0, 1.0]]),
        np.array([[4.0, 2.0, 2.0]] * 2),
        np.array([0.0, 1.0]),
        ground=_road_shader,
    )
    assert not behind.instance.any()
    assert behind.visible_pixels.tolist() == behind.unoccluded_pixels.tolist() == [0, 0]
    np.testing.assert_array_equal(behind.rgb, background.rgb)
    np.testing.assert_array_equal(behind.depth_m, background.depth_m)


def test_box_crossing_the_near_plane_renders_solid():
    # A long box beside the camera, from 3 m behind it to 5 m ahead: it crosses the camera plane.
    center, size = np.array([1.0, 1.2, 1.5]), np.array([8.0, 1.0, 3.0])
    out = _render(center, size, [0.0], near_m=0.1)
    inner, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, center, size - 2e-4, 0.0)
    outer, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, center, size + 2e-4, 0.0)
    _, depth_ref = _reference_slab(CAM, T_GLOBAL_FROM_CAM, center, size, 0.0)
    mask = out.instance == 1
    assert inner.sum() > 1000 and np.all(mask[inner]) and not np.any(mask[~outer])
    assert np.all(np.isfinite(out.depth_m[mask])) and out.depth_m[mask].min() >= 0.1 - 1e-6
    np.testing.assert_allclose(out.depth_m[inner], depth_ref[inner], atol=1e-4)
    # A box that the near plane cuts through right in front of the lens: the cut is drawn (the cap).
    cut = _render(np.array([0.0, 0.0, 1.5]), np.array([1.0, 0.5, 0.5]), [0.0], near_m=0.1)
    inner, _ = _reference_slab(CAM, T_GLOBAL_FROM_CAM, np.array([0.0, 0.0, 1.5]), np.array([1.0, 0.5, 0.5]) - 2e-4, 0.0)
    assert np.all(cut.instance[inner] == 1) and np.all(cut.depth_m[inner] == np.float32(0.1))
    # The camera inside a box sees nothing but the box's cut at the near plane.
    inside = _render(np.array([0.0, 0.0, 1.5]), np.array([4.0, 4.0, 4.0]), [0.3], near_m=0.1)
    assert np.all(inside.instance == 1) and np.all(inside.depth_m == np.float32(0.1))


def test_ground_and_sky_follow_the_ray_geometry():
    out = _render(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), ground=_road_shader, haze_distance_m=None)
    rows = np.arange(CAM.height, dtype=float)
    below = rows > CAM.cy  # level camera: rows under the principal point see the ground
    assert np.all(np.isinf(out.depth_m[~below])) and np.all(np.isfinite(out.depth_m[below]))
    # z-depth of a ground hit from height 1.5 m: 1.5 * fy / (v - cy)
    expected = 1.5 * CAM.fy / (rows[below] - CAM.cy)
    np.testing.assert_allclose(
        out.depth_m[below], np.broadcast_to(expected[:, None], (below.sum(), CAM.width)), rtol=1e-5
    )
    # Colours are the shader's at the hit point.
    v, u = 140, 37
    t = 1.5 * CAM.fy / (v - CAM.cy)
    x_global, y_global = t, -t * (u - CAM.cx) / CAM.fx
    np.testing.assert_allclose(out.rgb[v, u], _road_shader(np.array(x_global), np.array(y_global)), atol=1)
    # Sky: a vertical gradient, brighter at the horizon than at the top row.
    assert out.rgb[0].astype(int).sum() < out.rgb[int(CAM.cy)].astype(int).sum()


def test_rendered_lidar_returns_land_on_their_box():
    """Cross-check of the two sensors: LiDAR returns on a box project onto pixels showing that box."""
    rig = load_rig("nuscenes")
    cam = rig.camera("CAM_FRONT").scaled(800, 450)
    rng = np.random.default_rng(11)
    n = 12
    center = np.column_stack([rng.uniform(8, 40, n), rng.integers(-2, 3, n) * 3.5, np.zeros(n)])
    size = np.column_stack([rng.uniform(2, 5, n), rng.uniform(1.5, 2.5, n), rng.uniform(1.4, 3.0, n)])
    center[:, 2] = size[:, 2] / 2
    center[:, 0] += np.arange(n) * 6.0  # spread along the road
    yaw = rng.uniform(-0.2, 0.2, n)
    T_global_from_ego = _pose(0.05, (2.0, 0.5, 0.0))
    T_global_from_cam = T_global_from_ego @ cam.T_ego_from_sensor
    T_global_from_lidar = T_global_from_ego @ rig.lidars[0].T_ego_from_sensor
    render = render_camera(cam, T_global_from_cam, center, size, yaw, np.full((n, 3), 150, np.uint8), _flat_shader)
    sweep = cast_lidar(
        T_global_from_lidar,
        rig.lidars[0],
        center,
        size,
        yaw,
        np.random.default_rng(0),
        range_noise_std_m=0.0,
        dropout=0.0,
    )
    pts_cam = transform_points(
        invert_transform(T_global_from_cam) @ T_global_from_lidar, sweep.points_sensor[:, :3].astype(float)
    )
    uv, depth, in_front = project_points(pts_cam, cam.intrinsic, near=1.0)
    col, row = np.rint(uv[:, 0]), np.rint(uv[:, 1])
    inside = in_front & (col >= 0) & (col < cam.width) & (row >= 0) & (row < cam.height) & (sweep.hit_box >= 0)
    col, row = col[inside].astype(int), row[inside].astype(int)
    seen = render.depth_m[row, col] >= depth[inside] - 0.05  # the camera sees this return's surface
    assert inside.sum() > 500 and seen.mean() > 0.8
    agree = render.instance[row, col][seen] == sweep.hit_box[inside][seen] + 1
    assert agree.mean() > 0.97


def test_render_is_deterministic_and_saves_a_picture():
    import cv2

    rig = load_rig("nuscenes")
    cam = rig.camera("CAM_FRONT").scaled(800, 450)
    rng = np.random.default_rng(2026)
    n = 14
    lanes = np.array([-5.25, -1.75, 1.75, 5.25])
    center = np.column_stack([rng.uniform(7, 70, n), lanes[rng.integers(0, 4, n)], np.zeros(n)])
    size = np.column_stack([rng.uniform(3.8, 11, n), rng.uniform(1.8, 2.6, n), rng.uniform(1.5, 3.4, n)])
    center[:, 2] = size[:, 2] / 2
    yaw = np.where(center[:, 1] > 0, np.pi, 0.0) + rng.uniform(-0.1, 0.1, n)
    cones = np.column_stack([np.linspace(6, 30, 6), np.full(6, -6.5), np.full(6, 0.35)])
    center = np.vstack([center, cones])
    size = np.vstack([size, np.tile([0.4, 0.4, 0.7], (6, 1))])
    yaw = np.concatenate([yaw, np.zeros(6)])
    colours = np.vstack([rng.integers(30, 230, (n, 3)), np.tile([240, 120, 20], (6, 1))]).astype(np.uint8)
    T = _pose(0.0, (0.0, -1.75, 0.0)) @ cam.T_ego_from_sensor
    a = render_camera(cam, T, center, size, yaw, colours, _road_shader)
    b = render_camera(cam, T, center, size, yaw, colours, _road_shader)
    for field in ("rgb", "instance", "depth_m", "visible_pixels", "unoccluded_pixels"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert np.all(a.visible_pixels <= a.unoccluded_pixels)
    assert set(np.unique(a.instance)) <= set(range(n + 7))
    palette = np.random.default_rng(0).integers(40, 255, (n + 7, 3)).astype(np.uint8)
    palette[0] = 0
    OUTPUT_DIR.mkdir(exist_ok=True)
    picture = np.vstack([a.rgb, palette[a.instance]])
    assert cv2.imwrite(str(OUTPUT_DIR / "synth_sensors_render.png"), picture[..., ::-1])
