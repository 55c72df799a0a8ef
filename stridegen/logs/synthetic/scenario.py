"""Scene composition: the ego's drive and the agents that produce the six STRIDE-QA relations around it.

Every random draw of a scene comes from ``np.random.default_rng([seed, scene_index])``, in a fixed order, so a
scene is a pure function of (seed, scene_index). Scenes are composed over a horizon of ``max(seconds, 20)``
seconds, so a short scene is a prefix of the 20 s scene with the same seed and index.

The ego drives east on the inner eastbound lane of the main road (see ``world``). Two speed profiles alternate
over scene indices ((seed + index) even: "stop", odd: "flow"): "stop" (cruise, brake to a stop at the
intersection behind the lead car, wait, accelerate, cruise) and "flow" (accelerate, cruise, brake mildly, cruise
through the intersection).

Agents are placed role by role (see ``compose_scene``); each candidate is checked against the ego and every
agent already placed over the whole horizon (boxes inflated by a margin, every 50 ms) and re-drawn up to a fixed
number of times if it would collide; a role that finds no collision-free draw is left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from stridegen.core.box_geometry import bev_corners
from stridegen.core.boxes import Boxes
from stridegen.core.iou import convex_intersection_area
from stridegen.core.transforms import make_transform, yaw_to_quat
from stridegen.logs.synthetic import world as W
from stridegen.logs.synthetic.agents import (
    AGENT_CLASSES,
    Agent,
    Path,
    SpeedProfile,
    Trajectory,
    agent_boxes,
    sample_size,
)

SAMPLE_HZ = 2.0
MIN_HORIZON_S = 20.0
# Ego vehicle box (a Renault Zoe-sized car); the ego origin is on the ground below the rear axle, as in nuScenes,
# and the box centre lies EGO_CENTER_AHEAD_M ahead of it.
EGO_SIZE_LWH = (4.6, 1.9, 1.6)
EGO_CENTER_AHEAD_M = 1.3
EGO_FRONT_AHEAD_M = EGO_CENTER_AHEAD_M + EGO_SIZE_LWH[0] / 2
COLLISION_MARGIN_M = 0.4
COLLISION_DT_S = 0.05
MAX_TRIES = 40
STOP_FRONT_U = -11.5
TIMESTAMP_BASE_US = 1_600_000_000_000_000  # 2020-09-13 UTC; scene i starts 10 minutes after scene i - 1
SCENE_SPACING_US = 600_000_000  # where a front bumper stops before the eastbound stop line (road frame u)


def make_token(*parts: object) -> str:
    """Deterministic 32-hex token (nuScenes token format) from any parts (md5 of their '/'-joined str)."""
    return hashlib.md5("/".join(str(p) for p in parts).encode()).hexdigest()


def scene_name(scene_index: int) -> str:
    return f"scene-{scene_index:04d}"


def n_samples(seconds: float) -> int:
    """Key frames at 2 Hz: t = 0, 0.5, ... strictly below ``seconds`` (40 for 20 s)."""
    return max(1, int(np.ceil(seconds * SAMPLE_HZ - 1e-9)))


def _road_xy(u: float, v: float) -> tuple[float, float]:
    x, y = W.global_from_road(u, v)
    return float(x), float(y)


def lane_path(u_start: float, v_lane: float, heading: float, pieces: tuple = ()) -> Path:
    return Path(_road_xy(u_start, v_lane), heading, pieces)


# ---------------------------------------------------------------------------------------------- scene truth


@dataclass
class SyntheticScene:
    """Analytic ground truth of one synthetic scene (global frame, z up, ground at z = 0)."""

    seed: int
    scene_index: int
    seconds: float
    ego: Trajectory
    ego_profile_kind: str
    agents: list[Agent]
    options: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return scene_name(self.scene_index)

    @property
    def sample_times(self) -> np.ndarray:
        """Key-frame times in seconds from the scene start (k / 2 s)."""
        return np.arange(n_samples(self.seconds)) / SAMPLE_HZ

    @property
    def start_timestamp_us(self) -> int:
        """Timestamp (microseconds) of t = 0 in the written tables."""
        return TIMESTAMP_BASE_US + self.scene_index * SCENE_SPACING_US

    def timestamp_us(self, t: float) -> int:
        return self.start_timestamp_us + round(float(t) * 1e6)

    def time_s(self, timestamp_us: int) -> float:
        """Scene time (seconds) of a table timestamp."""
        return (int(timestamp_us) - self.start_timestamp_us) * 1e-6

    def ego_pose(self, t: float) -> np.ndarray:
        """T_global_from_ego (4x4) at time t: ego origin on the ground, x forward, yaw-only rotation."""
        st = self.ego.state(float(t))
        return make_transform(yaw_to_quat(st["yaw"]), np.array([st["xy"][0], st["xy"][1], 0.0]))

    def ego_velocity_global(self, t: float) -> np.ndarray:
        """Ego velocity [3] (m/s, global frame) at time t (the same at every point of the ego: it drives straight)."""
        st = self.ego.state(float(t))
        return np.array([st["velocity_xy"][0], st["velocity_xy"][1], 0.0])

    def ego_box(self, t: float) -> Boxes:
        st = self.ego.state(float(t))
        yaw = float(st["yaw"])
        center = np.array(
            [
                st["xy"][0] + EGO_CENTER_AHEAD_M * np.cos(yaw),
                st["xy"][1] + EGO_CENTER_AHEAD_M * np.sin(yaw),
                EGO_SIZE_LWH[2] / 2,
            ]
        )
        return Boxes(
            center[None],
            np.array([EGO_SIZE_LWH]),
            np.array([yaw]),
            self.ego_velocity_global(t)[None],
            label=["ego"],
            track_id=["ego"],
        )

    def agent_states(self, t: float) -> Boxes:
        """All agents at time t as global-frame Boxes with exact velocities (label = detection class,
        track_id = instance token, extras: agent_id, speed)."""
        return agent_boxes(self.agents, float(t))

    def agent(self, agent_id: int) -> Agent:
        return self.agents[agent_id - 1]

    def metadata(self) -> dict:
        """What ``load_synthetic_truth`` needs to rebuild this scene, plus a readable agent list."""
        return {
            "name": self.name,
            "scene_index": self.scene_index,
            "seed": self.seed,
            "seconds": self.seconds,
            "ego_profile": self.ego_profile_kind,
            "start_timestamp_us": self.start_timestamp_us,
            "agents": [
                {
                    "agent_id": a.agent_id,
                    "instance_token": a.instance_token,
                    "category": a.category,
                    "detection_class": a.detection_class,
                    "size_lwh": [float(x) for x in a.size_lwh],
                    "scenario": a.scenario,
                }
                for a in self.agents
            ],
            "window_relations": keyframe_window_relations(self),
        }


# ---------------------------------------------------------------------------------------------- collisions


def _bev_overlap_any(
    xy_a: np.ndarray, yaw_a: np.ndarray, size_a: np.ndarray, xy_b: np.ndarray, yaw_b: np.ndarray, size_b: np.ndarray
) -> bool:
    """Whether two boxes (inflated by COLLISION_MARGIN_M) overlap in BEV at any of the sampled times."""
    la = np.asarray(size_a[:2]) + 2 * COLLISION_MARGIN_M
    lb = np.asarray(size_b[:2]) + 2 * COLLISION_MARGIN_M
    reach = 0.5 * (np.hypot(*la) + np.hypot(*lb))
    near = np.linalg.norm(xy_a - xy_b, axis=-1) <= reach
    if not np.any(near):
        return False
    idx = np.nonzero(near)[0]
    ca = bev_corners(xy_a[idx], np.broadcast_to(la, (idx.size, 2)), yaw_a[idx])
    cb = bev_corners(xy_b[idx], np.broadcast_to(lb, (idx.size, 2)), yaw_b[idx])
    return bool(np.any(convex_intersection_area(ca, cb) > 1e-9))


@dataclass
class _Track:
    xy: np.ndarray
    yaw: np.ndarray
    size: np.ndarray


def _center_track(traj: Trajectory, times: np.ndarray, size: np.ndarray, ahead_m: float = 0.0) -> _Track:
    st = traj.state(times)
    xy = st["xy"] + ahead_m * np.stack([np.cos(st["yaw"]), np.sin(st["yaw"])], axis=-1)
    return _Track(xy, st["yaw"], np.asarray(size, dtype=np.float64))


# ---------------------------------------------------------------------------------------------- ego profiles


@dataclass
class _EgoPlan:
    kind: str
    trajectory: Trajectory
    u0: float
    stop_window: tuple[float, float] | None  # (t_stopped, t_go) when the ego waits at the intersection


def _ego_plan(rng: np.random.Generator, seed: int, scene_index: int, lead_length: float, lead_gap: float) -> _EgoPlan:
    kind = "stop" if (seed + scene_index) % 2 == 0 else "flow"  # alternate over consecutive scenes
    path = lane_path(-200.0, W.EAST_INNER_V, 0.0)
    if kind == "stop":
        v0 = float(rng.uniform(7.0, 9.0))
        decel = float(rng.uniform(2.0, 2.8))
        u_stop = STOP_FRONT_U - lead_length - lead_gap - EGO_FRONT_AHEAD_M
        brake_dist = v0**2 / (2 * decel)
        cruise_t = float(rng.uniform(3.5, 6.0))
        u0 = u_stop - brake_dist - v0 * cruise_t
        wait = float(rng.uniform(2.5, 4.0))
        accel = float(rng.uniform(1.5, 2.2))
        v1 = float(rng.uniform(9.0, 11.5))
        phases = [(cruise_t, 0.0), (v0 / decel, -decel), (wait, 0.0), (v1 / accel, accel)]
        t_stop = cruise_t + v0 / decel
        window = (t_stop, t_stop + wait)
    else:
        v0 = float(rng.uniform(5.0, 7.0))
        u0 = float(rng.uniform(-95.0, -70.0))
        a1 = float(rng.uniform(0.8, 1.4))
        v1 = float(rng.uniform(10.0, 12.0))
        cruise = float(rng.uniform(3.0, 5.0))
        d = float(rng.uniform(1.0, 1.6))
        v2 = float(rng.uniform(6.5, 8.0))
        phases = [(1.0, 0.0), ((v1 - v0) / a1, a1), (cruise, 0.0), ((v1 - v2) / d, -d)]
        window = None
    profile = SpeedProfile.from_phases(u0 + 200.0, v0, phases)
    return _EgoPlan(kind, Trajectory(path, profile), u0, window)


def _u_at(traj: Trajectory, t: float) -> float:
    """Road-frame u of a trajectory's point at time t."""
    return float(W.road_from_global(traj.state(t)["xy"][0], 0.0)[0])


def _accel_to(v_from: float, v_to: float, accel: float) -> tuple[float, float]:
    """A phase (duration, acceleration) that changes speed from v_from to v_to at |accel|."""
    a = abs(accel) if v_to >= v_from else -abs(accel)
    return abs(v_to - v_from) / abs(accel), a


# ---------------------------------------------------------------------------------------------- roles

# A role sampler draws one candidate (class, size, trajectory, extra fields) from the rng.
_Candidate = tuple[str, np.ndarray, Trajectory, dict]
_Sampler = Callable[[np.random.Generator], _Candidate]


class _Composer:
    def __init__(self, seed: int, scene_index: int, horizon: float, rng: np.random.Generator, ego: _EgoPlan) -> None:
        self.seed = seed
        self.scene_index = scene_index
        self.rng = rng
        self.ego = ego
        self.times = np.arange(0.0, horizon + 1e-9, COLLISION_DT_S)
        self.agents: list[Agent] = []
        self.tracks: list[_Track] = [
            _center_track(ego.trajectory, self.times, np.array(EGO_SIZE_LWH), EGO_CENTER_AHEAD_M)
        ]

    def place(self, scenario: str, sampler: _Sampler, parked: bool = False) -> Agent | None:
        for _ in range(MAX_TRIES):
            cls_name, size, traj, notes = sampler(self.rng)
            static = traj.profile.max_speed == 0.0
            times = self.times[:1] if static else self.times
            track = _center_track(traj, times, size)
            if any(self._collides(track, other, static) for other in self.tracks):
                continue
            agent_id = len(self.agents) + 1
            color = AGENT_CLASSES[cls_name].colors_rgb
            r, g, b = color[int(self.rng.integers(len(color)))]
            agent = Agent(
                agent_id,
                make_token("instance", self.seed, self.scene_index, agent_id),
                cls_name,
                np.asarray(size, dtype=np.float64),
                (int(r), int(g), int(b)),
                scenario,
                traj,
                parked,
                notes,
            )
            self.agents.append(agent)
            self.tracks.append(_center_track(traj, self.times, size))
            return agent
        return None

    @staticmethod
    def _collides(a: _Track, b: _Track, a_static: bool) -> bool:
        if a_static:  # compare the static box against every time of the other track
            n = b.xy.shape[0]
            return _bev_overlap_any(
                np.broadcast_to(a.xy[0], (n, 2)), np.broadcast_to(a.yaw[0], (n,)), a.size, b.xy, b.yaw, b.size
            )
        return _bev_overlap_any(a.xy, a.yaw, a.size, b.xy, b.yaw, b.size)

    def size(self, cls_name: str) -> np.ndarray:
        return sample_size(AGENT_CLASSES[cls_name], self.rng)


def _straight(
    u0: float, v: float, heading: float, s0: float, v0: float, phases: list[tuple[float, float]]
) -> Trajectory:
    return Trajectory(lane_path(u0, v, heading), SpeedProfile.from_phases(s0, v0, phases))


def compose_scene(seed: int, scene_index: int, seconds: float = 20.0) -> SyntheticScene:
    """The analytic scene (ego + agents) for (seed, scene_index); deterministic."""
    rng = np.random.default_rng([seed, scene_index])
    horizon = max(float(seconds), MIN_HORIZON_S)
    lead_size = sample_size(AGENT_CLASSES["car"], rng)
    lead_gap = float(rng.uniform(7.0, 11.0))
    ego = _ego_plan(rng, seed, scene_index, float(lead_size[0]), lead_gap)
    c = _Composer(seed, scene_index, horizon, rng, ego)
    e_traj = ego.trajectory
    ego_u0 = ego.u0
    v_ego0 = float(e_traj.profile.v_knots[0])

    # 1. maintain_state: a lead car in the ego lane driving the ego's own speed profile at a constant gap.
    lead_ahead = EGO_FRONT_AHEAD_M + lead_gap + lead_size[0] / 2

    def lead(_: np.random.Generator) -> _Candidate:
        p = e_traj.profile
        prof = SpeedProfile(p.t_knots, p.s_knots + lead_ahead, p.v_knots, p.a_knots)
        return "car", lead_size, Trajectory(e_traj.path, prof), {"gap_m": float(lead_gap)}

    c.place("maintain_state", lead)

    # 2. path_divergence: a truck ahead on the outer eastbound lane that turns right into the cross road.
    def right_turner(cls_name: str, gap_lo: float, gap_hi: float) -> _Sampler:
        def sample(r: np.random.Generator) -> _Candidate:
            size = c.size(cls_name)
            radius = float(r.uniform(6.0, 7.5))
            u_s = ego_u0 + float(r.uniform(gap_lo, gap_hi))
            u_arc = W.SOUTH_U - radius
            dist = u_arc - u_s
            if dist <= 5.0:
                u_s, dist = u_arc - 5.0, 5.0
            v_turn = float(r.uniform(3.5, 5.0))
            decel = 1.5
            v_c = min(float(r.uniform(v_ego0 + 1.0, v_ego0 + 4.0)), np.sqrt(v_turn**2 + 2 * decel * dist))
            brake_d = (v_c**2 - v_turn**2) / (2 * decel)
            phases = []
            if dist - brake_d > 1e-6:
                phases.append(((dist - brake_d) / v_c, 0.0))
            if v_c > v_turn:
                phases.append(_accel_to(v_c, v_turn, decel))
            phases.append((np.pi / 2 * radius / v_turn, 0.0))
            phases.append(_accel_to(v_turn, 9.0, 1.2))
            path = lane_path(u_s, W.EAST_OUTER_V, 0.0, ((dist, 0.0), (np.pi / 2 * radius, -1.0 / radius), (200.0, 0.0)))
            return cls_name, size, Trajectory(path, SpeedProfile.from_phases(0.0, v_c, phases)), {"turn": "right"}

        return sample

    c.place("path_divergence", right_turner("truck", 12.0, 40.0))

    # 3. pulling_away: a car ahead on the outer lane that accelerates away from the ego.
    def puller(r: np.random.Generator) -> _Candidate:
        size = c.size("car")
        u_s = ego_u0 + float(r.uniform(25.0, 55.0))
        v0 = float(r.uniform(v_ego0, v_ego0 + 1.5))
        t_go = float(r.uniform(0.5, 4.0))
        vmax = float(r.uniform(15.0, 18.0))
        phases = [(t_go, 0.0), _accel_to(v0, vmax, float(r.uniform(1.6, 2.6)))]
        return "car", size, _straight(u_s, W.EAST_OUTER_V, 0.0, 0.0, v0, phases), {}

    c.place("pulling_away", puller)

    # 4. oncoming_pass: a bus and cars on the westbound lanes meeting the ego.
    def oncoming(cls_name: str, v_lane: float, speed: tuple[float, float]) -> _Sampler:
        def sample(r: np.random.Generator) -> _Candidate:
            size = c.size(cls_name)
            t_meet = float(r.uniform(3.0, horizon - 4.0))
            w = float(r.uniform(*speed))
            u_meet = _u_at(e_traj, t_meet)
            u_s = u_meet + w * t_meet
            return cls_name, size, _straight(u_s, v_lane, np.pi, 0.0, w, []), {"t_meet": t_meet}

        return sample

    c.place("oncoming_pass", oncoming("bus", W.WEST_OUTER_V, (6.0, 9.0)))
    c.place("oncoming_pass", oncoming("car", W.WEST_INNER_V, (8.0, 12.0)))
    c.place("oncoming_pass", oncoming("car", W.WEST_INNER_V, (8.0, 12.0)))

    # 5. overtake: a motorcycle passing the ego on the outer lane; the ego passing a cyclist on the shoulder.
    def overtaker(r: np.random.Generator) -> _Candidate:
        size = c.size("motorcycle")
        w = float(r.uniform(12.5, 16.0))
        t_pass = float(r.uniform(3.0, horizon - 5.0))
        u_s = _u_at(e_traj, t_pass) - w * t_pass
        return "motorcycle", size, _straight(u_s, W.EAST_OUTER_V, 0.0, 0.0, w, []), {"t_pass": t_pass}

    c.place("overtake", overtaker)

    def slow_cyclist(r: np.random.Generator) -> _Candidate:
        size = c.size("bicycle")
        w = float(r.uniform(3.5, 5.0))
        u_s = ego_u0 + float(r.uniform(15.0, 45.0))
        return "bicycle", size, _straight(u_s, -W.MAIN_SHOULDER_V, 0.0, 0.0, w, []), {}

    c.place("overtake", slow_cyclist)

    # 6. minor_relation: pedestrians crossing on the crosswalks, a cyclist and cross traffic on the cross road.
    def crossing_ped(r: np.random.Generator) -> _Candidate:
        size = c.size("pedestrian")
        arm = int(r.integers(4))
        w = float(r.uniform(1.1, 1.6))
        t_go = float(r.uniform(0.0, horizon - 6.0))
        phases = [(t_go, 0.0), (0.6, w / 0.6)] if t_go > 0 else []
        v0 = 0.0 if t_go > 0 else w
        if arm < 2:  # across the main road on the west (0) or east (1) crosswalk
            u = float(r.uniform(*W.MAIN_CROSSWALK_U)) * (-1 if arm == 0 else 1)
            north = bool(r.integers(2))
            v_s = -11.0 if north else 11.0
            traj = Trajectory(
                lane_path(u, v_s, np.pi / 2 if north else -np.pi / 2), SpeedProfile.from_phases(0.0, v0, phases)
            )
        else:  # across the cross road on the south (2) or north (3) crosswalk
            v = float(r.uniform(*W.CROSS_CROSSWALK_V)) * (-1 if arm == 2 else 1)
            east = bool(r.integers(2))
            u_s = -6.5 if east else 6.5
            traj = Trajectory(lane_path(u_s, v, 0.0 if east else np.pi), SpeedProfile.from_phases(0.0, v0, phases))
        return "pedestrian", size, traj, {"crosswalk": arm}

    for _ in range(3):
        c.place("minor_relation", crossing_ped)

    def cross_cyclist(r: np.random.Generator) -> _Candidate:
        size = c.size("bicycle")
        north = bool(r.integers(2))
        w = float(r.uniform(3.5, 5.5))
        t_cross = float(r.uniform(2.0, horizon - 4.0))
        u = W.CROSS_LANES_HALF + 0.6 if north else -(W.CROSS_LANES_HALF + 0.6)
        v_s = -w * t_cross if north else w * t_cross
        return (
            "bicycle",
            size,
            Trajectory(lane_path(u, v_s, np.pi / 2 if north else -np.pi / 2), SpeedProfile.from_phases(0.0, w, [])),
            {},
        )

    c.place("minor_relation", cross_cyclist)

    if ego.stop_window is not None:
        t0, t1 = ego.stop_window

        def cross_car(r: np.random.Generator) -> _Candidate:
            size = c.size("car")
            north = bool(r.integers(2))
            w = float(r.uniform(7.0, 10.0))
            t_mid = float(r.uniform(t0 + 0.3, max(t1 - 0.3, t0 + 0.4)))
            u = W.NORTH_U if north else W.SOUTH_U
            v_s = -w * t_mid if north else w * t_mid
            return (
                "car",
                size,
                Trajectory(lane_path(u, v_s, np.pi / 2 if north else -np.pi / 2), SpeedProfile.from_phases(0.0, w, [])),
                {},
            )

        c.place("minor_relation", cross_car)

    # Pedestrians walking along the sidewalks (background minor relations).
    def sidewalk_walker(r: np.random.Generator) -> _Candidate:
        size = c.size("pedestrian")
        side = 1.0 if r.integers(2) else -1.0
        v = side * float(r.uniform(10.2, 11.8))
        east = bool(r.integers(2))
        u_s = ego_u0 + float(r.uniform(10.0, 120.0))
        w = float(r.uniform(0.0, 1.5))
        w = 0.0 if w < 0.3 else w
        return "pedestrian", size, _straight(u_s, v, 0.0 if east else np.pi, 0.0, w, []), {}

    for _ in range(int(rng.integers(2, 5))):
        c.place("minor_relation", sidewalk_walker)

    # Background: a work zone (cones, then barriers) on one shoulder, then parked cars on the shoulders.
    side = 1.0  # the westbound shoulder: the eastbound one carries the slow cyclist
    zone_u = ego_u0 + float(rng.uniform(40.0, 110.0))
    if abs(zone_u) < 25.0:
        zone_u += 50.0
    n_cones = int(rng.integers(4, 7))
    for k in range(n_cones):
        u_k = zone_u + 3.0 * k

        def cone(r: np.random.Generator, u_k: float = u_k) -> _Candidate:
            v = side * (W.MAIN_LANES_HALF + float(r.uniform(0.6, 1.0)))
            return "traffic_cone", c.size("traffic_cone"), Trajectory.static(_road_xy(u_k, v), 0.0), {}

        c.place("static_object", cone)
    for k in range(int(rng.integers(2, 4))):
        u_k = zone_u + 3.0 * n_cones + 1.0 + 3.2 * k

        def barrier(r: np.random.Generator, u_k: float = u_k) -> _Candidate:
            # Heading across the road: the barrier's long side (its width) runs along the shoulder.
            v = side * (W.MAIN_LANES_HALF + float(r.uniform(0.8, 1.2)))
            return "barrier", c.size("barrier"), Trajectory.static(_road_xy(u_k, v), np.pi / 2), {}

        c.place("static_object", barrier)

    def parked_car(r: np.random.Generator) -> _Candidate:
        size = c.size(str(r.choice(["car", "car", "car", "truck"])))
        side = 1.0 if r.random() < 0.75 else -1.0
        u = ego_u0 + float(r.uniform(5.0, 200.0))
        if abs(u) < 22.0:
            u += 44.0
        heading = np.pi if side > 0 else 0.0
        cls_name = "car" if size[0] < 5.5 else "truck"
        return cls_name, size, Trajectory.static(_road_xy(u, side * W.MAIN_SHOULDER_V), heading), {}

    for _ in range(int(rng.integers(4, 8))):
        c.place("parked", parked_car, parked=True)

    return SyntheticScene(seed, scene_index, float(seconds), e_traj, ego.kind, c.agents)


# ---------------------------------------------------------------------------------------------- per-window truth

# The STRIDE-QA-Bench relation names (annotation_sheet.csv spelling); stridegen.pipeline.scenario uses the same.
TRUTH_RELATIONS: tuple[str, ...] = (
    "Oncoming_Pass",
    "Maintain_State",
    "Overtake",
    "Path_Divergence_at_Intersection",
    "Pulling_Away_from_Ego",
    "Other",
)
# Roles whose agent takes part in traffic with the ego; every other role (crossing pedestrians and cycles, cross
# traffic, sidewalk walkers, parked cars, the work zone) is "Other" in every window.
TRAFFIC_ROLES = ("maintain_state", "path_divergence", "pulling_away", "oncoming_pass", "overtake")
# Time step of the dense analytic sampling of a window (s): fine enough that no pass (sign change of the
# longitudinal offset) between two samples goes unseen at the generator's speeds (< 20 m/s relative: 1 m).
TRUTH_DT_S = 0.05
# The window shows a turn when the target's heading relative to the ego's changes by more than half a right-angle
# turn between the window's first and last frame (every turn of the generator is 90 deg; its lane changes: none).
TRUTH_TURN_DEG = 45.0
# Relative headings (circular mean over the window) within 45 deg of the ego's are the same direction, beyond
# 135 deg the opposite; between, crossing (the same split as the labeler's, stridegen.pipeline.scenario).
TRUTH_SAME_DEG = 45.0
TRUTH_ONCOMING_DEG = 135.0
# The gap is held when the longitudinal offset changes by less than 0.6 m/s on average over the window (3 m over
# 5 s: a car length's fraction a driver does not notice as closing or falling back).
TRUTH_HELD_RATE_MPS = 0.6


def _window_motion(scene: SyntheticScene, agent: Agent, times_s: np.ndarray) -> dict[str, np.ndarray]:
    """Exact ego-frame motion of ``agent`` over [min(times_s), max(times_s)] sampled every TRUTH_DT_S (and at both
    ends): relative yaw (agent path heading minus ego yaw, rad), longitudinal and lateral offsets of its centre
    from the ego origin (m, ego frame x forward, y left)."""
    t0, t1 = float(np.min(times_s)), float(np.max(times_s))
    n = max(2, int(np.ceil((t1 - t0) / TRUTH_DT_S)) + 1)
    t = np.linspace(t0, t1, n)
    a = agent.trajectory.state(t)
    e = scene.ego.state(t)
    d = a["xy"] - e["xy"]
    c, s = np.cos(e["yaw"]), np.sin(e["yaw"])
    x = c * d[:, 0] + s * d[:, 1]
    y = -s * d[:, 0] + c * d[:, 1]
    rel = (a["yaw"] - e["yaw"] + np.pi) % (2 * np.pi) - np.pi
    return {"t": t, "rel_yaw": rel, "x": x, "y": y}


def window_relation(scene: SyntheticScene, agent: Agent, times_s: np.ndarray) -> str:
    """The relation of ``agent`` to the ego over the window spanning ``times_s`` (scene seconds), from the analytic
    motion (docs/scenarios.md, "Truth"): ``Other`` for roles outside traffic; a turn of more than TRUTH_TURN_DEG
    within the window: ``Path_Divergence_at_Intersection``; heading opposite: ``Oncoming_Pass``; crossing: ``Other``;
    same direction: ``Overtake`` when the longitudinal offset changes sign (one passes the other) or the gap
    closes or the target falls behind, ``Maintain_State`` when the gap is held, ``Pulling_Away_from_Ego`` when the
    target is ahead throughout and getting farther."""
    times = np.asarray(times_s, dtype=np.float64)
    times = times[np.isfinite(times)]
    if agent.scenario not in TRAFFIC_ROLES or times.size < 2:
        return "Other"
    m = _window_motion(scene, agent, times)
    return _relation_of_motion(m["t"], m["rel_yaw"], m["x"])


def _relation_of_motion(t: np.ndarray, rel: np.ndarray, x: np.ndarray) -> str:
    """``window_relation``'s rules on a traffic agent's dense motion: times ``t`` [n] s, relative yaw ``rel`` [n]
    rad, ego-frame longitudinal offset ``x`` [n] m."""
    turn = abs((rel[-1] - rel[0] + np.pi) % (2 * np.pi) - np.pi)
    if np.degrees(turn) > TRUTH_TURN_DEG:
        return "Path_Divergence_at_Intersection"
    heading = np.degrees(abs(np.arctan2(np.sin(rel).mean(), np.cos(rel).mean())))
    if heading > TRUTH_ONCOMING_DEG:
        return "Oncoming_Pass"
    if heading > TRUTH_SAME_DEG:
        return "Other"
    if x.min() < 0 < x.max():
        return "Overtake"
    rate = (x[-1] - x[0]) / (t[-1] - t[0])
    if abs(rate) < TRUTH_HELD_RATE_MPS:
        return "Maintain_State"
    if x.min() > 0 and rate > 0:
        return "Pulling_Away_from_Ego"
    return "Overtake"


def window_relations(scene: SyntheticScene, times_s: np.ndarray) -> dict[str, str]:
    """instance token -> ``window_relation`` of every agent over the window spanning ``times_s``."""
    return {a.instance_token: window_relation(scene, a, times_s) for a in scene.agents}


# The default keyframe window (keyframes.window_before_s / window_after_s of the build config): 2 s before to 3 s
# after the keyframe. The truth metadata records every agent's relation over it at every key frame.
DEFAULT_WINDOW_S = (-2.0, 3.0)


def keyframe_window_relations(scene: SyntheticScene, window_s: tuple[float, float] = DEFAULT_WINDOW_S) -> dict:
    """Per-window truth at every key frame (k / 2 s) over ``window_s`` around it, clipped to the scene's key frames
    (the frames a built keyframe window holds): ``{"window_s", "times_s", "by_agent": {instance token: [relation
    per key frame]}}``, written into the truth metadata (``metadata``)."""
    times = scene.sample_times
    # One dense grid over the scene (TRUTH_DT_S divides the 0.5 s key-frame spacing), sliced per window: the same
    # samples window_relation takes for a window from one key frame to another.
    per_key = round(1.0 / SAMPLE_HZ / TRUTH_DT_S)
    grid = np.arange((len(times) - 1) * per_key + 1) * TRUTH_DT_S
    spans = [
        (round(max(t0 + window_s[0], 0.0) / TRUTH_DT_S), round(min(t0 + window_s[1], float(times[-1])) / TRUTH_DT_S))
        for t0 in times.tolist()
    ]
    by_agent: dict[str, list[str]] = {}
    for agent in scene.agents:
        if agent.scenario not in TRAFFIC_ROLES or len(times) < 2:
            by_agent[agent.instance_token] = ["Other"] * len(times)
            continue
        m = _window_motion(scene, agent, grid)
        by_agent[agent.instance_token] = [
            _relation_of_motion(m["t"][i : j + 1], m["rel_yaw"][i : j + 1], m["x"][i : j + 1]) if j > i else "Other"
            for i, j in spans
        ]
    return {"window_s": list(window_s), "times_s": [float(t) for t in times], "by_agent": by_agent}
