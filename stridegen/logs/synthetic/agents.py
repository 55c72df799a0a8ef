"""Agents of the synthetic world: classes, sizes, colours, and closed-form trajectories.

A trajectory is a *path* (straight segments and circular arcs, parameterised by arc length s) driven with a
*speed profile* of piecewise-constant acceleration, so that at any time t the arc length, speed and tangential
acceleration are polynomials in t and position, heading (yaw), velocity vector and speed are closed-form: no
numerical integration anywhere. Before the first segment and after the last one a path continues as a straight
line along its end tangents, so every t has a state.

Sizes are rounded from the per-class mean box sizes of nuScenes-trainval as used for the anchor sizes of
mmdetection3d's nuScenes configs (configs/_base_/models/*_nus.py), given here as (length, width, height).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stridegen.core.angles import wrap_angle
from stridegen.core.boxes import Boxes


@dataclass(frozen=True)
class AgentClass:
    """A synthetic object class: its nuScenes category, detection class, size distribution and colours."""

    detection_class: str
    category: str
    size_mean_lwh: tuple[float, float, float]
    size_rel_std: float  # relative standard deviation of each dimension (clipped to +/- 2 std)
    colors_rgb: tuple[tuple[int, int, int], ...]
    kind: str  # "vehicle" | "pedestrian" | "cycle" | "static": picks the nuScenes attribute set


_CAR_COLORS = (
    (200, 30, 35),
    (30, 60, 160),
    (230, 230, 230),
    (25, 25, 28),
    (150, 152, 158),
    (40, 110, 60),
    (215, 180, 40),
)
AGENT_CLASSES: dict[str, AgentClass] = {
    c.detection_class: c
    for c in (
        AgentClass("car", "vehicle.car", (4.61, 1.95, 1.72), 0.06, _CAR_COLORS, "vehicle"),
        AgentClass(
            "truck",
            "vehicle.truck",
            (6.74, 2.46, 2.73),
            0.08,
            ((235, 235, 235), (190, 90, 30), (60, 90, 140)),
            "vehicle",
        ),
        AgentClass(
            "bus",
            "vehicle.bus.rigid",
            (11.19, 2.94, 3.47),
            0.04,
            ((240, 200, 30), (200, 40, 40), (40, 120, 200)),
            "vehicle",
        ),
        AgentClass(
            "pedestrian",
            "human.pedestrian.adult",
            (0.73, 0.66, 1.76),
            0.06,
            ((180, 60, 60), (60, 60, 150), (90, 140, 90), (200, 160, 120), (60, 60, 60)),
            "pedestrian",
        ),
        AgentClass(
            "bicycle",
            "vehicle.bicycle",
            (1.70, 0.60, 1.28),
            0.05,
            ((30, 160, 200), (220, 110, 20), (120, 40, 160)),
            "cycle",
        ),
        AgentClass(
            "motorcycle",
            "vehicle.motorcycle",
            (2.11, 0.77, 1.45),
            0.05,
            ((20, 20, 20), (190, 20, 20), (230, 120, 10)),
            "cycle",
        ),
        AgentClass("traffic_cone", "movable_object.trafficcone", (0.41, 0.41, 1.07), 0.03, ((250, 110, 0),), "static"),
        AgentClass(
            "barrier", "movable_object.barrier", (0.51, 2.49, 0.98), 0.03, ((245, 245, 240), (220, 40, 30)), "static"
        ),
    )
}

# nuScenes attribute names per class kind (nuScenes attribute table).
ATTRIBUTES = (
    "vehicle.moving",
    "vehicle.stopped",
    "vehicle.parked",
    "pedestrian.moving",
    "pedestrian.standing",
    "cycle.with_rider",
)
MOVING_SPEED_MPS = 0.2  # below this speed an agent counts as stopped / standing


def sample_size(cls: AgentClass, rng: np.random.Generator) -> np.ndarray:
    z = np.clip(rng.standard_normal(3), -2.0, 2.0)
    return np.asarray(cls.size_mean_lwh) * (1.0 + cls.size_rel_std * z)


# ---------------------------------------------------------------------------------------------- paths


@dataclass(frozen=True)
class Path:
    """Straight segments and circular arcs chained tangentially from a start pose.

    ``pieces`` are (length_m, curvature_1pm): curvature 0 is a straight segment, +1/R a left (counter-clockwise)
    arc of radius R, -1/R a right arc. Positions and headings are in the frame of ``start_xy`` (global).
    """

    start_xy: tuple[float, float]
    start_heading: float
    pieces: tuple[tuple[float, float], ...] = ()
    # Derived in __post_init__: piece start points [n + 1, 2], headings [n + 1], arc lengths [n + 1].
    _xy: np.ndarray = field(init=False, repr=False, compare=False)
    _heading: np.ndarray = field(init=False, repr=False, compare=False)
    _s_start: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        xy = [np.asarray(self.start_xy, dtype=np.float64)]
        heading = [float(self.start_heading)]
        for length, k in self.pieces:
            if length <= 0:
                raise ValueError(f"path piece length must be positive, got {length}")
            p, h = _piece_end(xy[-1], heading[-1], length, k)
            xy.append(p)
            heading.append(h)
        s_start = np.concatenate([[0.0], np.cumsum([p[0] for p in self.pieces])]) if self.pieces else np.zeros(1)
        object.__setattr__(self, "_xy", np.stack(xy))
        object.__setattr__(self, "_heading", np.asarray(heading))
        object.__setattr__(self, "_s_start", s_start)

    @property
    def length(self) -> float:
        return float(self._s_start[-1])

    @property
    def max_curvature(self) -> float:
        return max([abs(k) for _, k in self.pieces], default=0.0)

    def evaluate(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(xy [..., 2], heading [...], curvature [...]) at arc lengths ``s`` (any real; straight beyond ends)."""
        s = np.asarray(s, dtype=np.float64)
        n = len(self.pieces)
        seg = np.clip(np.searchsorted(self._s_start, s, side="right") - 1, 0, max(n - 1, 0))
        curv = np.array([p[1] for p in self.pieces] + [0.0])
        before = s < 0
        after = s >= self.length
        # Local arc length and the piece it is measured on; the extensions are straight lines.
        sigma = np.where(before, s, np.where(after, s - self.length, s - self._s_start[seg]))
        idx = np.where(after, n, seg)
        k = np.where(before | after, 0.0, curv[idx])
        p0 = self._xy[idx]
        h0 = self._heading[idx]
        heading = h0 + k * sigma
        straight = k == 0
        safe_k = np.where(straight, 1.0, k)
        dx = np.where(straight, sigma * np.cos(h0), (np.sin(heading) - np.sin(h0)) / safe_k)
        dy = np.where(straight, sigma * np.sin(h0), -(np.cos(heading) - np.cos(h0)) / safe_k)
        xy = p0 + np.stack([dx, dy], axis=-1)
        return xy, wrap_angle(heading), k


def _piece_end(p0: np.ndarray, h0: float, length: float, k: float) -> tuple[np.ndarray, float]:
    if k == 0:
        return p0 + length * np.array([np.cos(h0), np.sin(h0)]), h0
    h1 = h0 + k * length
    return p0 + np.array([np.sin(h1) - np.sin(h0), -(np.cos(h1) - np.cos(h0))]) / k, h1


# ---------------------------------------------------------------------------------------------- speed profiles


@dataclass(frozen=True)
class SpeedProfile:
    """Arc length along a path as a function of time, with piecewise-constant acceleration.

    Phases start at ``t_knots[i]`` with arc length ``s_knots[i]``, speed ``v_knots[i]`` and acceleration
    ``a_knots[i]``; after the last knot the acceleration is 0 and before t = t_knots[0] the speed stays
    ``v_knots[0]`` (constant-speed extrapolation in both directions).
    """

    t_knots: np.ndarray
    s_knots: np.ndarray
    v_knots: np.ndarray
    a_knots: np.ndarray

    @classmethod
    def from_phases(
        cls, s0: float, v0: float, phases: Sequence[tuple[float, float]] = (), t0: float = 0.0
    ) -> SpeedProfile:
        """Build from (duration_s, acceleration_mps2) phases starting at time t0 with arc length s0, speed v0.

        Raises ValueError if a phase would drive the speed below zero (design phases that end at v = 0).
        """
        t, s, v = [t0], [s0], [v0]
        a = []
        for duration, accel in phases:
            if duration <= 0:
                raise ValueError(f"phase duration must be positive, got {duration}")
            v_end = v[-1] + accel * duration
            if v_end < -1e-9 or v[-1] < -1e-9:
                raise ValueError(f"speed profile goes negative ({v_end:.3f} m/s)")
            s.append(s[-1] + v[-1] * duration + 0.5 * accel * duration**2)
            v.append(max(v_end, 0.0))
            t.append(t[-1] + duration)
            a.append(accel)
        a.append(0.0)
        return cls(np.asarray(t), np.asarray(s), np.asarray(v), np.asarray(a))

    @property
    def max_abs_accel(self) -> float:
        return float(np.max(np.abs(self.a_knots)))

    @property
    def max_speed(self) -> float:
        return float(np.max(self.v_knots))

    def evaluate(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(s, speed, tangential acceleration) at times ``t``."""
        t = np.asarray(t, dtype=np.float64)
        i = np.clip(np.searchsorted(self.t_knots, t, side="right") - 1, 0, len(self.t_knots) - 1)
        before = t < self.t_knots[0]
        a = np.where(before, 0.0, self.a_knots[i])
        dt = t - self.t_knots[i]
        s = self.s_knots[i] + self.v_knots[i] * dt + 0.5 * a * dt**2
        v = self.v_knots[i] + a * dt
        return s, v, a


@dataclass(frozen=True)
class Trajectory:
    """A path driven with a speed profile: the closed-form state of a point (box centre or ego origin)."""

    path: Path
    profile: SpeedProfile

    @classmethod
    def static(cls, xy: tuple[float, float], heading: float) -> Trajectory:
        return cls(Path(xy, heading), SpeedProfile.from_phases(0.0, 0.0))

    def state(self, t: np.ndarray | float) -> dict[str, np.ndarray]:
        """xy [..., 2], yaw [...], velocity_xy [..., 2], speed [...], accel_xy [..., 2] at times ``t``."""
        s, v, a = self.profile.evaluate(t)
        xy, yaw, k = self.path.evaluate(s)
        tangent = np.stack([np.cos(yaw), np.sin(yaw)], axis=-1)
        normal = np.stack([-np.sin(yaw), np.cos(yaw)], axis=-1)
        accel = a[..., None] * tangent + (k * v * v)[..., None] * normal
        return {"xy": xy, "yaw": yaw, "velocity_xy": v[..., None] * tangent, "speed": v, "accel_xy": accel, "s": s}

    @property
    def max_accel_bound(self) -> float:
        """An upper bound of |acceleration vector| over all t (tangential + centripetal)."""
        return self.profile.max_abs_accel + self.profile.max_speed**2 * self.path.max_curvature


# ---------------------------------------------------------------------------------------------- agents

SCENARIOS = ("oncoming_pass", "maintain_state", "overtake", "path_divergence", "pulling_away", "minor_relation")
BACKGROUND_ROLES = ("parked", "static_object", "background")


@dataclass(frozen=True)
class Agent:
    """One object of a synthetic scene.

    ``agent_id`` is the per-scene integer id (1-based) written in the instance-id PNGs; ``scenario`` is the
    STRIDE-QA relation the agent was placed to produce relative to the ego (one of SCENARIOS) or a background role
    (BACKGROUND_ROLES).
    """

    agent_id: int
    instance_token: str
    detection_class: str
    size_lwh: np.ndarray
    color_rgb: tuple[int, int, int]
    scenario: str
    trajectory: Trajectory
    parked: bool = False
    notes: dict[str, float | str] = field(default_factory=dict)

    @property
    def agent_class(self) -> AgentClass:
        return AGENT_CLASSES[self.detection_class]

    @property
    def category(self) -> str:
        return self.agent_class.category

    def attribute(self, speed: float) -> str:
        """nuScenes attribute name at a given speed ("" for classes without attributes)."""
        kind = self.agent_class.kind
        if kind == "vehicle":
            if self.parked:
                return "vehicle.parked"
            return "vehicle.moving" if speed >= MOVING_SPEED_MPS else "vehicle.stopped"
        if kind == "pedestrian":
            return "pedestrian.moving" if speed >= MOVING_SPEED_MPS else "pedestrian.standing"
        if kind == "cycle":
            return "cycle.with_rider"
        return ""


def agent_boxes(agents: Sequence[Agent], t: float) -> Boxes:
    """Global-frame boxes of ``agents`` at time t: centre z = h / 2, exact velocity, label = detection class,
    track_id = instance token, extras ``agent_id``, ``speed`` and ``accel_xy`` bound data."""
    n = len(agents)
    if n == 0:
        return Boxes.empty("global")
    center = np.zeros((n, 3))
    yaw = np.zeros(n)
    velocity = np.zeros((n, 3))
    speed = np.zeros(n)
    size = np.stack([a.size_lwh for a in agents])
    for i, agent in enumerate(agents):
        st = agent.trajectory.state(t)
        center[i, :2] = st["xy"]
        yaw[i] = st["yaw"]
        velocity[i, :2] = st["velocity_xy"]
        speed[i] = st["speed"]
    center[:, 2] = size[:, 2] / 2.0
    return Boxes(
        center,
        size,
        yaw,
        velocity,
        label=[a.detection_class for a in agents],
        track_id=[a.instance_token for a in agents],
        frame="global",
        extras={"agent_id": np.array([a.agent_id for a in agents], dtype=np.int64), "speed": speed},
    )
