"""Tests of the synthetic log generator: world, trajectories, scenarios, nuScenes output, truth API."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.angles import wrap_angle
from stridegen.core.box_geometry import box_corners
from stridegen.core.iou import bev_iou
from stridegen.core.projection import project_boxes_2d
from stridegen.core.transforms import (
    invert_transform,
    make_transform,
    quat_to_rotmat,
    quat_to_yaw,
    transform_points,
    yaw_to_quat,
)
from stridegen.logs.index import INDEX_DIR_NAME
from stridegen.logs.synthetic import (
    OutputExistsError,
    compose_scene,
    generate_dataset,
    load_synthetic_truth,
)
from stridegen.logs.synthetic import world as W
from stridegen.logs.synthetic.agents import AGENT_CLASSES, SCENARIOS, SpeedProfile, Trajectory
from stridegen.logs.synthetic.agents import Path as RoadPath
from stridegen.logs.synthetic.writer import VERSION, visibility_token
from tests.shared_data import REPO

pytestmark = pytest.mark.slow  # most tests generate a synthetic log

CHANNELS = ("CAM_FRONT_LEFT", "CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_BACK_LEFT", "CAM_BACK", "CAM_BACK_RIGHT")


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def full_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One full 20 s scene (40 key frames) at a small resolution, with LiDAR sweeps."""
    root = tmp_path_factory.mktemp("synth_full") / "ds"
    generate_dataset(root, scenes=1, seconds=20.0, seed=0, width=240, height=135, sweeps=False, progress=False)
    return root


@pytest.fixture(scope="module")
def small_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short scenes at 320x180 with LiDAR sweeps."""
    root = tmp_path_factory.mktemp("synth_small") / "ds"
    generate_dataset(root, scenes=2, seconds=3.0, seed=0, width=320, height=180, sweeps=True, progress=False)
    return root


@pytest.fixture(scope="module")
def nusc_full(full_ds: Path):
    from nuscenes.nuscenes import NuScenes

    return NuScenes(version=VERSION, dataroot=str(full_ds), verbose=False)


# ---------------------------------------------------------------------------------------------- world


def test_material_known_points() -> None:
    u = np.array([-50.0, -50.0, -50.0, -50.0, -50.0, 0.0, 8.0, 8.0, -50.0, 0.0, -50.0])
    v = np.array([-1.75, 0.175, -7.0, 11.0, 40.0, 0.0, 0.9, 0.3, 8.25, 40.0, -3.5])
    # Dashes: |u| mod 9 < 3 is paint; u = -50 -> 50 mod 9 = 5: a gap. Crosswalk stripes: (v + 100) mod 1.2 < 0.6.
    expect = [W.ROAD, W.YELLOW, W.WHITE, W.SIDEWALK, W.GRASS, W.ROAD, W.WHITE, W.ROAD, W.SHOULDER, W.YELLOW, W.ROAD]
    np.testing.assert_array_equal(W.material_road(u, v), expect)
    assert W.material_road(np.array([-46.0]), np.array([-3.5]))[0] == W.WHITE  # 46 mod 9 = 1: a dash
    assert W.material_road(np.array([-10.75]), np.array([-3.0]))[0] == W.WHITE  # eastbound stop line
    assert W.material_road(np.array([-10.75]), np.array([3.0]))[0] == W.ROAD  # no stop line for the exit side


@given(st.floats(-300, 300), st.floats(-80, 80))
@settings(max_examples=60, deadline=None)
def test_material_broadcast_equals_pointwise(u: float, v: float) -> None:
    us = np.array([u, u + 0.37, u - 5.1])
    vs = np.array([v, v - 0.2])
    grid = W.material_road(us[None, :], vs[:, None])
    uu, vv = np.meshgrid(us, vs)
    np.testing.assert_array_equal(grid, W.material_road(uu, vv))


def test_raster_shader_matches_analytic_at_cell_centres() -> None:
    shader = W.RasterRoadShader(resolution_m=0.1, extent_road=(-20.0, 20.0, -16.0, 16.0))
    rng = np.random.default_rng(3)
    iu = rng.integers(0, 400, 500)
    iv = rng.integers(0, 320, 500)
    u = -20.0 + (iu + 0.5) * 0.1
    v = -16.0 + (iv + 0.5) * 0.1
    x, y = W.global_from_road(u, v)
    got = shader(x, y)
    expect = np.floor(W.shade_road(u, v) + 0.5)
    np.testing.assert_allclose(got, expect, atol=0)
    assert got.dtype == np.float32 and got.shape == (500, 3)
    # Beyond the raster the edge cell along the road repeats: the main road continues.
    far = shader(np.array([W.ORIGIN_GLOBAL[0] + 500.0]), np.array([W.ORIGIN_GLOBAL[1] - 1.75]))
    assert abs(float(far[0].mean()) - float(W.MATERIAL_RGB[W.ROAD].mean())) < 25


def test_map_mask_orientation() -> None:
    mask = W.map_mask_image(resolution_m=1.0)
    h = mask.shape[0]

    # Global (x, y) -> pixel (col = x / res, row = H - y / res), as nuScenes MapMask.transform_matrix.
    def at(x: float, y: float) -> int:
        return int(mask[int(h - y - 1e-9), int(x)])

    assert at(W.ORIGIN_GLOBAL[0] - 100, W.ORIGIN_GLOBAL[1] - 5) == 255  # main road
    assert at(W.ORIGIN_GLOBAL[0] - 100, W.ORIGIN_GLOBAL[1] + 30) == 0  # grass
    assert at(W.ORIGIN_GLOBAL[0] + 2, W.ORIGIN_GLOBAL[1] + 100) == 255  # cross road


# ---------------------------------------------------------------------------------------------- trajectories


def test_path_quarter_arc_known_answer() -> None:
    r = 5.0
    path = RoadPath((0.0, 0.0), 0.0, ((10.0, 0.0), (np.pi / 2 * r, 1.0 / r), (10.0, 0.0)))
    xy, heading, _ = path.evaluate(np.array([10.0, 10.0 + np.pi / 2 * r, 20.0 + np.pi / 2 * r, -3.0, 40.0]))
    np.testing.assert_allclose(xy[0], [10.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(xy[1], [15.0, 5.0], atol=1e-12)
    np.testing.assert_allclose(xy[2], [15.0, 15.0], atol=1e-12)
    np.testing.assert_allclose(xy[3], [-3.0, 0.0], atol=1e-12)  # straight extension before the start
    np.testing.assert_allclose(heading[1:3], [np.pi / 2, np.pi / 2], atol=1e-12)
    assert path.length == pytest.approx(20.0 + np.pi / 2 * r)
    np.testing.assert_allclose(xy[4], [15.0, 15.0 + 40.0 - path.length], atol=1e-9)  # straight after the end


def test_speed_profile_known_answer() -> None:
    prof = SpeedProfile.from_phases(2.0, 4.0, [(2.0, 1.0), (3.0, -2.0), (1.0, 0.0)])
    s, v, a = prof.evaluate(np.array([-1.0, 0.0, 2.0, 3.0, 5.0, 7.0]))
    np.testing.assert_allclose(v, [4.0, 4.0, 6.0, 4.0, 0.0, 0.0])
    np.testing.assert_allclose(a, [0.0, 1.0, -2.0, -2.0, 0.0, 0.0])
    np.testing.assert_allclose(s, [-2.0, 2.0, 12.0, 17.0, 21.0, 21.0])
    with pytest.raises(ValueError, match="negative"):
        SpeedProfile.from_phases(0.0, 1.0, [(2.0, -1.0)])


@given(st.floats(0.0, 25.0), st.floats(2.0, 20.0), st.floats(-3.0, 3.0), st.floats(-0.2, 0.2))
@settings(max_examples=50, deadline=None)
def test_trajectory_velocity_is_derivative_of_position(t: float, v0: float, accel: float, curv: float) -> None:
    duration = 4.0 if accel >= 0 else min(4.0, 0.99 * v0 / -accel)
    curv = 0.0 if abs(curv) < 1e-3 else curv
    traj = Trajectory(
        RoadPath((1.0, 2.0), 0.3, ((30.0, 0.0), (25.0, curv), (30.0, 0.0))),
        SpeedProfile.from_phases(0.0, v0, [(1.5, 0.0), (duration, accel)]),
    )
    h = 1e-5
    st_ = traj.state(np.array([t - h, t, t + h]))
    fd = (st_["xy"][2] - st_["xy"][0]) / (2 * h)
    np.testing.assert_allclose(st_["velocity_xy"][1], fd, atol=2e-4)
    yaw_fd = np.arctan2(fd[1], fd[0])
    if st_["speed"][1] > 0.1:
        assert abs(wrap_angle(yaw_fd - st_["yaw"][1])) < 1e-4
    # The acceleration bound holds for the finite-difference acceleration too.
    acc_fd = (st_["xy"][2] - 2 * st_["xy"][1] + st_["xy"][0]) / h**2
    assert np.linalg.norm(acc_fd) <= traj.max_accel_bound + 0.5


def test_visibility_bins() -> None:
    assert [visibility_token(f) for f in (0.0, 0.4, 0.41, 0.6, 0.7, 0.8, 0.81, 1.0)] == [
        "1",
        "1",
        "2",
        "2",
        "3",
        "3",
        "4",
        "4",
    ]


# ---------------------------------------------------------------------------------------------- scenarios


def _ego_frame_track(scene, agent, times: np.ndarray) -> dict[str, np.ndarray]:
    st_ = agent.trajectory.state(times)
    ego = scene.ego.state(times)
    d = st_["xy"] - ego["xy"]
    c, s = np.cos(ego["yaw"]), np.sin(ego["yaw"])
    x = c * d[:, 0] + s * d[:, 1]
    y = -s * d[:, 0] + c * d[:, 1]
    rel_yaw = wrap_angle(st_["yaw"] - ego["yaw"])
    return {"x": x, "y": y, "dist": np.hypot(x, y), "rel_yaw": rel_yaw, "speed": st_["speed"]}


def _relation_holds(scenario: str, cls: str, tr: dict[str, np.ndarray]) -> bool:
    """An independent geometric check of each STRIDE-QA relation, on the ego-frame track of an agent."""
    near = tr["dist"] < 80.0
    x, rel = tr["x"][near], np.abs(tr["rel_yaw"][near])
    if x.size < 4:
        return False
    if scenario == "oncoming_pass":
        return bool(np.all(rel > np.radians(150)) and x.max() > 5 and x.min() < -5)
    if scenario == "maintain_state":
        return bool(np.all(tr["x"] > 0) and np.ptp(tr["dist"]) < 1e-6 and np.all(np.abs(tr["rel_yaw"]) < 1e-9))
    if scenario == "overtake":
        return bool(np.all(rel < np.radians(20)) and x.max() > 0 and x.min() < 0)
    if scenario == "path_divergence":
        return bool(rel[0] < np.radians(5) and rel.max() > np.radians(80) and x[0] > 0)
    if scenario == "pulling_away":
        return bool(np.all(x > 0) and tr["dist"][-1] > tr["dist"][0] + 20 and np.all(rel < np.radians(5)))
    if scenario == "minor_relation":
        crossing = np.any(np.abs(rel - np.pi / 2) < np.radians(10))
        return bool(cls in ("pedestrian", "bicycle") or crossing)
    raise AssertionError(scenario)


@pytest.mark.parametrize("scene_index", [0, 1])
def test_default_scenes_relations_hold(scene_index: int) -> None:
    scene = compose_scene(0, scene_index, 20.0)
    times = np.arange(0.0, 20.0, 0.1)
    for agent in scene.agents:
        if agent.scenario in SCENARIOS:
            tr = _ego_frame_track(scene, agent, times)
            assert _relation_holds(agent.scenario, agent.detection_class, tr), (agent.agent_id, agent.scenario)


def test_default_scenes_cover_all_scenarios_and_classes() -> None:
    scenes = [compose_scene(0, i, 20.0) for i in range(2)]
    assert {a.scenario for s in scenes for a in s.agents} >= set(SCENARIOS)
    for s in scenes:  # every default scene holds every class
        assert {a.detection_class for a in s.agents} == set(AGENT_CLASSES)
    assert {s.ego_profile_kind for s in scenes} == {"stop", "flow"}


def test_scene_composition_is_deterministic_and_prefix_stable() -> None:
    a, b, short = compose_scene(5, 1, 20.0), compose_scene(5, 1, 20.0), compose_scene(5, 1, 4.0)
    other = compose_scene(6, 1, 20.0)
    ts = np.array([0.0, 1.3, 3.9])
    for x, y in ((a, b), (a, short)):
        assert [g.instance_token for g in x.agents] == [g.instance_token for g in y.agents]
        for t in ts:
            np.testing.assert_array_equal(x.agent_states(t).center, y.agent_states(t).center)
    assert not np.allclose(a.ego_pose(0.0), other.ego_pose(0.0))


def test_agents_never_overlap_the_ego_or_each_other() -> None:
    scene = compose_scene(0, 0, 20.0)
    for t in np.arange(0.0, 20.0, 0.25):
        boxes = scene.agent_states(t)
        ego = scene.ego_box(t)
        everything = [
            *zip(boxes.center[:, :2], boxes.size_lwh[:, :2], boxes.yaw, strict=True),
            (ego.center[0, :2], ego.size_lwh[0, :2], ego.yaw[0]),
        ]
        c = np.array([e[0] for e in everything])
        s = np.array([e[1] for e in everything])
        y = np.array([e[2] for e in everything])
        iou = bev_iou(c, s, y, c, s, y)
        np.fill_diagonal(iou, 0.0)
        assert iou.max() == 0.0, t


def test_ego_pose_and_velocity() -> None:
    scene = compose_scene(0, 0, 20.0)
    for t in (0.0, 7.3, 15.0):
        T = scene.ego_pose(t)
        np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-12)
        assert T[2, 3] == 0.0
        h = 1e-5
        fd = (scene.ego_pose(t + h)[:3, 3] - scene.ego_pose(t - h)[:3, 3]) / (2 * h)
        np.testing.assert_allclose(scene.ego_velocity_global(t), fd, atol=1e-4)
    kind = scene.ego_profile_kind
    speeds = scene.ego.state(np.arange(0, 20, 0.1))["speed"]
    assert np.ptp(speeds) > 3.0  # a varying speed profile
    assert (kind == "stop") == bool(np.any(speeds == 0.0))


# ---------------------------------------------------------------------------------------------- dataset output


def _tables(root: Path) -> dict[str, list[dict]]:
    return {p.stem: json.loads(p.read_text()) for p in (root / VERSION).glob("*.json")}


def test_devkit_loads_and_velocity_matches_truth(full_ds: Path, nusc_full) -> None:
    nusc = nusc_full
    assert len(nusc.scene) == 1 and len(nusc.sample) == 40
    sample = nusc.sample[0]
    assert set(sample["data"]) == {*CHANNELS, "LIDAR_TOP"}
    truth = load_synthetic_truth(full_ds, "scene-0000")
    by_token = {a.instance_token: a for a in truth.agents}
    checked = 0
    for ann in nusc.sample_annotation:
        v_fd = nusc.box_velocity(ann["token"])
        if np.any(np.isnan(v_fd)):
            continue
        t = (nusc.get("sample", ann["sample_token"])["timestamp"] - nusc.sample[0]["timestamp"]) * 1e-6
        agent = by_token[ann["instance_token"]]
        v_true = np.append(agent.trajectory.state(t)["velocity_xy"], 0.0)
        # The devkit's (central or one-sided) difference over prev/next equals the mean velocity over
        # [t - h1, t + h2]; with |acceleration| <= A it differs from v(t) by at most A * max(h1, h2) / 2.
        h = max(_neighbour_dt(nusc, ann, "prev"), _neighbour_dt(nusc, ann, "next"))
        bound = agent.trajectory.max_accel_bound * h / 2 + 1e-6
        assert np.linalg.norm(v_fd - v_true) <= bound, (ann["token"], v_fd, v_true, bound)
        checked += 1
    assert checked > 200


def _neighbour_dt(nusc, ann: dict, key: str) -> float:
    if not ann[key]:
        return 0.0
    other = nusc.get("sample_annotation", ann[key])
    ts = [nusc.get("sample", a["sample_token"])["timestamp"] for a in (ann, other)]
    return abs(ts[0] - ts[1]) * 1e-6


def test_all_classes_and_scenarios_annotated(full_ds: Path) -> None:
    tables = _tables(full_ds)
    cats = {c["token"]: c["name"] for c in tables["category"]}
    inst_cat = {i["token"]: cats[i["category_token"]] for i in tables["instance"]}
    annotated = {inst_cat[a["instance_token"]] for a in tables["sample_annotation"]}
    assert annotated == {c.category for c in AGENT_CLASSES.values()}
    ids = json.loads((full_ds / "instance_ids" / "instances.json").read_text())["scenes"]["scene-0000"]
    seen = {e["scenario"] for e in ids.values() if e["instance_token"]}
    assert seen >= set(SCENARIOS)
    attrs = {a["token"]: a["name"] for a in tables["attribute"]}
    names = {attrs[t] for a in tables["sample_annotation"] for t in a["attribute_tokens"]}
    assert {"vehicle.moving", "vehicle.parked", "pedestrian.moving", "cycle.with_rider"} <= names
    vis = {a["visibility_token"] for a in tables["sample_annotation"]}
    assert vis <= {"1", "2", "3", "4"} and "4" in vis and "1" in vis


def test_tables_equal_analytic_truth(full_ds: Path) -> None:
    tables = _tables(full_ds)
    truth = load_synthetic_truth(full_ds, "scene-0000")
    samples = {s["token"]: s for s in tables["sample"]}
    t0 = truth.start_timestamp_us
    assert min(s["timestamp"] for s in samples.values()) == t0
    assert sorted(truth.time_s(s["timestamp"]) for s in samples.values()) == list(truth.sample_times)
    states: dict[int, object] = {}
    index = {a.instance_token: a.agent_id - 1 for a in truth.agents}
    for ann in tables["sample_annotation"]:
        ts = samples[ann["sample_token"]]["timestamp"]
        if ts not in states:
            states[ts] = truth.agent_states((ts - t0) * 1e-6)
        boxes = states[ts]
        i = index[ann["instance_token"]]
        np.testing.assert_allclose(ann["translation"], boxes.center[i], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ann["size"], boxes.size_lwh[i][[1, 0, 2]], rtol=1e-6)
        q = np.array(ann["rotation"])
        assert abs(abs(float(np.dot(q, yaw_to_quat(boxes.yaw[i])))) - 1.0) < 1e-9
    # Ego poses of key frames equal the analytic pose.
    poses = {p["token"]: p for p in tables["ego_pose"]}
    for sd in tables["sample_data"]:
        if sd["is_key_frame"] and sd["filename"].startswith("samples/CAM_FRONT/"):
            pose = poses[sd["ego_pose_token"]]
            T = truth.ego_pose((sd["timestamp"] - t0) * 1e-6)
            np.testing.assert_allclose(pose["translation"], T[:3, 3], rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(quat_to_rotmat(np.array(pose["rotation"])), T[:3, :3], atol=1e-9)


def test_instance_png_ids_lie_in_projected_boxes(full_ds: Path, nusc_full) -> None:
    nusc = nusc_full
    ids = json.loads((full_ds / "instance_ids" / "instances.json").read_text())["scenes"]["scene-0000"]
    token_of = {int(k): v["instance_token"] for k, v in ids.items()}
    checked = 0
    for sample in nusc.sample[::6]:
        anns = {
            nusc.get("sample_annotation", a)["instance_token"]: nusc.get("sample_annotation", a) for a in sample["anns"]
        }
        for ch in CHANNELS:
            sd = nusc.get("sample_data", sample["data"][ch])
            png = cv2.imread(
                str(full_ds / "instance_ids" / ch / (Path(sd["filename"]).stem + ".png")), cv2.IMREAD_UNCHANGED
            )
            assert png.dtype == np.uint16 and png.shape == (sd["height"], sd["width"])
            cs = nusc.get("calibrated_sensor", sd["calibrated_sensor_token"])
            pose = nusc.get("ego_pose", sd["ego_pose_token"])
            T_cam_from_global = invert_transform(
                make_transform(np.array(pose["rotation"]), np.array(pose["translation"]))
                @ make_transform(np.array(cs["rotation"]), np.array(cs["translation"]))
            )
            for value in np.unique(png[png > 0]):
                ann = anns.get(token_of[int(value)])
                if ann is None:  # rendered but not annotated (beyond 80 m)
                    continue
                w, l, h = ann["size"]
                corners = box_corners(
                    np.array(ann["translation"]), np.array([l, w, h]), quat_to_yaw(np.array(ann["rotation"]))
                )
                box2d, valid = project_boxes_2d(
                    transform_points(T_cam_from_global, corners[0]),
                    np.array(cs["camera_intrinsic"]),
                    (sd["width"], sd["height"]),
                )
                assert valid[0]
                rows, cols = np.nonzero(png == value)
                x0, y0, x1, y1 = box2d[0]
                assert cols.min() >= x0 - 1 and cols.max() <= x1 + 1 and rows.min() >= y0 - 1 and rows.max() <= y1 + 1
                checked += 1
    assert checked > 30


def test_num_lidar_pts_for_near_visible_agents(full_ds: Path, nusc_full) -> None:
    nusc = nusc_full
    n = 0
    for ann in nusc.sample_annotation:
        sample = nusc.get("sample", ann["sample_token"])
        lidar = nusc.get("sample_data", sample["data"]["LIDAR_TOP"])
        pose = nusc.get("ego_pose", lidar["ego_pose_token"])
        dist = np.hypot(*(np.array(ann["translation"][:2]) - np.array(pose["translation"][:2])))
        if dist < 25.0 and ann["visibility_token"] == "4" and ann["size"][2] > 0.9:
            assert ann["num_lidar_pts"] > 0, ann["token"]
            n += 1
        assert ann["num_radar_pts"] == 0
    assert n > 50
    pts = np.fromfile(
        full_ds / nusc.get("sample_data", nusc.sample[0]["data"]["LIDAR_TOP"])["filename"], dtype=np.float32
    ).reshape(-1, 5)
    assert pts.shape[0] > 10000 and pts[:, 4].max() <= 31


def test_sweeps_and_links(small_ds: Path) -> None:
    from nuscenes.nuscenes import NuScenes

    nusc = NuScenes(version=VERSION, dataroot=str(small_ds), verbose=False)
    assert len(nusc.scene) == 2 and len(nusc.sample) == 12
    for scene in nusc.scene:
        sample = nusc.get("sample", scene["first_sample_token"])
        sd = nusc.get("sample_data", sample["data"]["LIDAR_TOP"])
        chain = [sd]
        while chain[-1]["next"]:
            chain.append(nusc.get("sample_data", chain[-1]["next"]))
        assert len(chain) == 6 + 5 * 9  # 6 key sweeps and 9 sweeps between consecutive key frames
        ts = [c["timestamp"] for c in chain]
        assert np.all(np.diff(ts) == 50_000)
        assert sum(c["is_key_frame"] for c in chain) == 6
        for c in chain:
            assert (small_ds / c["filename"]).is_file()
    # Instance annotation chains are consistent.
    for inst in nusc.instance:
        ann = nusc.get("sample_annotation", inst["first_annotation_token"])
        count = 1
        while ann["next"]:
            ann = nusc.get("sample_annotation", ann["next"])
            count += 1
        assert count == inst["nbr_annotations"] and ann["token"] == inst["last_annotation_token"]


def _tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file the generator wrote (not the log index a reader may have added: stridegen/logs/index.py)."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and INDEX_DIR_NAME not in p.relative_to(root).parts)
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_determinism_byte_identical(tmp_path: Path, small_ds: Path) -> None:
    again = tmp_path / "again"
    generate_dataset(again, scenes=2, seconds=3.0, seed=0, width=320, height=180, sweeps=True, progress=False)
    a, b = _tree_bytes(small_ds), _tree_bytes(again)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == b[key], key
    other = tmp_path / "other"
    generate_dataset(other, scenes=1, seconds=1.0, seed=1, width=64, height=36, progress=False)
    assert (other / VERSION / "sample_annotation.json").read_bytes() != a[f"{VERSION}/sample_annotation.json"]


def test_refuses_non_empty_output_unless_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(OutputExistsError):
        generate_dataset(out, scenes=1, seconds=0.5, width=64, height=36, progress=False)
    assert (out / "keep.txt").is_file()
    generate_dataset(out, scenes=1, seconds=0.5, width=64, height=36, progress=False, overwrite=True)
    assert not (out / "keep.txt").exists() and (out / VERSION / "scene.json").is_file()
    assert not list(tmp_path.glob(".ds.tmp-*"))


def test_load_synthetic_truth_errors(small_ds: Path, tmp_path: Path) -> None:
    from stridegen.core.errors import LogFormatError, MissingFileError

    with pytest.raises(LogFormatError, match="no scene named"):
        load_synthetic_truth(small_ds, "scene-9999")
    with pytest.raises(MissingFileError):
        load_synthetic_truth(tmp_path, "scene-0000")
    assert load_synthetic_truth(small_ds, "scene-0001").scene_index == 1


def test_open_log_round_trip(small_ds: Path) -> None:
    from stridegen.logs import open_log

    reader = open_log(small_ds)
    scenes = reader.scenes()
    assert [s.name for s in scenes] == ["scene-0000", "scene-0001"]
    for scene in scenes:
        truth = load_synthetic_truth(small_ds, scene.name)
        assert len(scene.frames) == 6
        t0 = scene.frames[0].timestamp_us
        for frame in scene.frames:
            t = (frame.timestamp_us - t0) * 1e-6
            np.testing.assert_allclose(frame.T_global_from_ego, truth.ego_pose(t), atol=1e-9)
            ann = frame.annotations()
            states = truth.agent_states(t)
            index = {tok: i for i, tok in enumerate(states.track_id)}
            idx = np.array([index[tok] for tok in ann.boxes.track_id])
            np.testing.assert_allclose(ann.boxes.center, states.center[idx], rtol=1e-6)
            np.testing.assert_allclose(ann.boxes.size_lwh, states.size_lwh[idx], rtol=1e-6)
            assert np.all(np.abs(wrap_angle(ann.boxes.yaw - states.yaw[idx])) < 1e-9)
            assert list(ann.boxes.label) == list(states.label[idx])
        frame = scene.frames[2]
        assert frame.image("CAM_FRONT").shape == (180, 320, 3)
        assert frame.lidar().shape[1] >= 4
        assert len(frame.lidar_sweeps(10)) == 10


def test_contact_sheet_looks_like_a_road(full_ds: Path) -> None:
    """Writes a 6-camera contact sheet (test-output/synth_contact_sheet.png) and checks basic image statistics:
    sky above, road (grey) below, and some coloured vehicles in the front camera."""
    rows = []
    for k in (0, 20):
        imgs = []
        for ch in CHANNELS:
            files = sorted((full_ds / "samples" / ch).glob("*.jpg"))
            imgs.append(cv2.imread(str(files[k])))
        rows.append(np.hstack(imgs[:3]))
        rows.append(np.hstack(imgs[3:]))
    sheet = np.vstack(rows)
    out = REPO / "test-output"
    out.mkdir(exist_ok=True)
    cv2.imwrite(str(out / "synth_contact_sheet.png"), sheet)
    front = cv2.cvtColor(
        cv2.imread(str(sorted((full_ds / "samples" / "CAM_FRONT").glob("*.jpg"))[0])), cv2.COLOR_BGR2RGB
    ).astype(float)
    h = front.shape[0]
    sky = front[: h // 4].reshape(-1, 3).mean(axis=0)
    road = front[int(0.9 * h) :, front.shape[1] // 3 : 2 * front.shape[1] // 3].reshape(-1, 3).mean(axis=0)
    assert sky[2] > sky[0] + 20  # blue sky
    assert np.ptp(road) < 30 and road.mean() < 130  # grey asphalt
    png = cv2.imread(
        str(
            full_ds
            / "instance_ids"
            / "CAM_FRONT"
            / (sorted((full_ds / "samples" / "CAM_FRONT").glob("*.jpg"))[0].stem + ".png")
        ),
        cv2.IMREAD_UNCHANGED,
    )
    assert np.count_nonzero(png) > 100  # the lead car at least


def test_cli_synth(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from stridegen.cli.synth import synth

    app = typer.Typer()
    app.command("synth")(synth)

    @app.callback()
    def _root() -> None:
        pass

    runner = CliRunner()
    out = tmp_path / "cli"
    res = runner.invoke(app, ["synth", str(out), "--scenes", "1", "--seconds", "1", "--width", "64", "--height", "36"])
    assert res.exit_code == 0, res.output
    assert "samples (key frames)" in res.output and (out / VERSION / "sample.json").is_file()
    res = runner.invoke(app, ["synth", str(out), "--scenes", "1", "--seconds", "1"])
    assert res.exit_code == 2 and "--overwrite" in res.output  # bad usage (docs/cli.md)


def test_objects_leave_a_camera_field_of_view(full_ds: Path) -> None:
    """Some agent seen by CAM_FRONT at one key frame is, at a later one, out of CAM_FRONT but seen by another
    camera (it passed the ego), read from the instance-id PNGs."""

    def ids(channel: str) -> list[set[int]]:
        files = sorted((full_ds / "instance_ids" / channel).glob("*.png"))
        return [set(np.unique(cv2.imread(str(f), cv2.IMREAD_UNCHANGED)).tolist()) - {0} for f in files]

    front = ids("CAM_FRONT")
    others = [ids(ch) for ch in CHANNELS if ch != "CAM_FRONT"]
    left = set()
    for k in range(len(front)):
        for j in range(k + 1, len(front)):
            elsewhere = set().union(*(o[j] for o in others))
            left |= (front[k] - front[j]) & elsewhere
    assert len(left) >= 2


# ---------------------------------------------------------------------------------------------- static scenery


@pytest.mark.parametrize("seed", [0, 7])
def test_static_scenery_stays_off_the_roads_and_sidewalks(seed: int) -> None:
    """Every scenery footprint (axis-aligned in the road frame) lies outside the main road's and the cross road's
    sidewalks, where all agents move; the layout is a pure function of (seed, scene_index)."""
    from stridegen.logs.synthetic.scenery import compose_scenery

    s = compose_scenery(seed, 1)
    assert {"building", "pole", "wall"} <= set(s.kind)
    np.testing.assert_array_equal(s.yaw, 0.0)
    u, v = W.road_from_global(s.center[:, 0], s.center[:, 1])
    half = 0.5 * s.size_lwh
    beyond_main = np.abs(v) - half[:, 1] > W.MAIN_SIDEWALK_HALF
    beyond_cross = np.abs(u) - half[:, 0] > W.CROSS_SIDEWALK_HALF
    assert np.all(beyond_main & beyond_cross)
    np.testing.assert_allclose(s.center[:, 2], half[:, 2])  # standing on the ground
    again = compose_scenery(seed, 1)
    np.testing.assert_array_equal(again.center, s.center)
    assert not np.array_equal(compose_scenery(seed, 2).center[:5], s.center[:5])


def test_static_scenery_option(tmp_path: Path) -> None:
    """With static scenery the ego, the agents and their boxes are unchanged; the LiDAR sees the scenery (every
    above-ground return off the agents lies on a scenery box), no scenery is annotated or given an instance id,
    and the option is recorded in the truth metadata."""
    from stridegen.logs.synthetic.scenery import compose_scenery

    kw = {"scenes": 1, "seconds": 2.0, "seed": 0, "width": 160, "height": 90, "progress": False}
    off, on = tmp_path / "off", tmp_path / "on"
    generate_dataset(off, **kw)
    generate_dataset(on, static_scenery=True, **kw)
    for table in ("ego_pose", "sample", "calibrated_sensor", "scene"):
        assert (off / VERSION / f"{table}.json").read_bytes() == (on / VERSION / f"{table}.json").read_bytes()
    truth_off, truth_on = (json.loads((d / VERSION / "synthetic_truth.json").read_text()) for d in (off, on))
    assert "static_scenery" not in truth_off["options"] and truth_on["options"]["static_scenery"] is True
    assert truth_on["scenes"] == truth_off["scenes"]  # the agents are the same

    def boxes(root: Path) -> dict[tuple[str, str], tuple]:
        rows = json.loads((root / VERSION / "sample_annotation.json").read_text())
        return {(r["sample_token"], r["instance_token"]): (r["translation"], r["size"], r["rotation"]) for r in rows}

    b_off, b_on = boxes(off), boxes(on)
    assert set(b_on) <= set(b_off) and len(b_on) >= 0.8 * len(b_off)  # scenery may hide an agent, never adds one
    assert all(b_on[key] == b_off[key] for key in b_on)
    n_agents = len(truth_on["scenes"][0]["agents"])
    for png in (on / "instance_ids").rglob("*.png"):
        assert int(cv2.imread(str(png), cv2.IMREAD_UNCHANGED).max()) <= n_agents, png

    scene = compose_scene(0, 0, 2.0)
    scenery = compose_scenery(0, 0)
    pose_rows = {r["token"]: r for r in json.loads((on / VERSION / "ego_pose.json").read_text())}
    lidar_rows = [
        r for r in json.loads((on / VERSION / "sample_data.json").read_text()) if "LIDAR_TOP" in r["filename"]
    ]
    calib = {r["token"]: r for r in json.loads((on / VERSION / "calibrated_sensor.json").read_text())}
    for row in lidar_rows:
        pose, cs = pose_rows[row["ego_pose_token"]], calib[row["calibrated_sensor_token"]]
        T = make_transform(np.asarray(pose["rotation"]), np.asarray(pose["translation"])) @ make_transform(
            np.asarray(cs["rotation"]), np.asarray(cs["translation"])
        )
        pts = np.fromfile(on / row["filename"], dtype=np.float32).reshape(-1, 5)[:, :3].astype(np.float64)
        pts_off = np.fromfile(off / row["filename"], dtype=np.float32).reshape(-1, 5)
        xyz = transform_points(T, pts)
        above = xyz[xyz[:, 2] > 0.3]
        assert above.shape[0] > 5 * max(int((pts_off[:, 2] > -1.5).sum()), 200)  # far more structure than before
        t = scene.time_s(int(row["timestamp"]))
        agents = scene.agent_states(t)
        on_agent = _inside_boxes(above, agents.center, agents.size_lwh + 0.3, agents.yaw)
        on_scenery = _inside_boxes(above, scenery.center, scenery.size_lwh + 0.3, scenery.yaw)
        assert np.all(on_agent | on_scenery) and on_scenery.mean() > 0.5


def _inside_boxes(points: np.ndarray, center: np.ndarray, size_lwh: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """[P] bool: the point lies inside any of the yaw-only boxes (global frame)."""
    rel = points[:, None, :] - center[None]
    c, s = np.cos(yaw)[None], np.sin(yaw)[None]
    local = np.stack([c * rel[..., 0] + s * rel[..., 1], -s * rel[..., 0] + c * rel[..., 1], rel[..., 2]], -1)
    return np.all(np.abs(local) <= 0.5 * size_lwh[None], axis=-1).any(axis=1)
