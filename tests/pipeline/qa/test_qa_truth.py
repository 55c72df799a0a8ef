"""End to end: the oracle detector on a synthetic log, every QA row re-derived from the generator's analytic truth.

A small synthetic log is built (oracle detector, center tracker, ``projected_box`` segmenter) and every row of the
shard's ``qa`` table is checked against ``stridegen.logs.synthetic.load_synthetic_truth``: closed-form agent and
ego states, not the pipeline's arrays. The maths here is scalar and written from the documented definitions
(docs/qa-spatial.md, docs/qa-spatiotemporal.md, docs/attributes.md); neither ``stridegen.pipeline.attributes`` nor
the QA generators are used to compute a truth.

Which agent a track is: the build runs the center tracker on the oracle detections, so the shard's track ids are
the tracker's ("1", "2", ...), not instance tokens. A track row is linked to the agent whose analytic box centre
equals the track's centre (to 1e-6 m) in every frame the track is present; the link must be unique and the same
agent in every frame (a tracker id switch would fail here). After that link, positions, sizes and speeds all come
from the truth.

Frames used: keyframe time from ``frames.timestamp_us`` of ``keyframes.frame_index`` (scene time via
``SyntheticScene.time_s``); the ego pose from ``SyntheticScene.ego_pose``; camera extrinsics and intrinsics from
the shard's ``cameras`` table (the log's calibration).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow  # the tests read a dataset built from a generated log

SEED = 0  # seed 0, 10 s: every category and every default predicate occurs (asserted below)
SECONDS = 10.0
WIDTH, HEIGHT = 480, 270
STEP_S = 0.5  # synthetic key frames are at 2 Hz (docs/synthetic.md)

# docs/qa-spatial.md, "Ambiguity: when no question is asked" (SpatialQAConfig defaults).
LATERAL_MIN_M = 0.5
DEPTH_MIN_M = 1.0
SIZE_REL_MIN = 0.10
EGO_LATERAL_MIN_M = 0.5
EGO_SIZE_REL_MIN = 0.10
HEADING_MIN_DISTANCE_M = 1.0
CLOCK_MARGIN_DEG = 1.0
# docs/qa-spatiotemporal.md: context frames, horizons, nearest-frame tolerance, minimum distance, near plane.
CONTEXT_OFFSETS_S = (-1.5, -1.0, -0.5, 0.0)
HORIZONS_S = (0, 1, 2, 3)
TIME_TOLERANCE_S = 0.1
MIN_DISTANCE_M = 0.5
NEAR_PLANE_M = 0.1

MATCH_TOL_M = 1e-6  # track centre versus analytic centre (annotations equal the truth to float64 precision)
THRESHOLD_TOL = 1e-6  # the pipeline's values differ from the truth by ~1e-12; threshold limits get this slack
BOUNDARY_TOL = 1e-6  # a truth this close (in units of the last digit) to a rounding boundary may round either way

# docs/qa-spatial.md, predicate tables (written out here so the test also pins the documented names).
PAIR_YES_NO = {  # predicate -> (compared quantity, relation that makes the answer "yes" for (A, B))
    "left_of": ("x_cam", "<"),
    "right_of": ("x_cam", ">"),
    "in_front_of": ("z_cam", "<"),
    "behind": ("z_cam", ">"),
    "bigger": ("volume", ">"),
    "smaller": ("volume", "<"),
    "taller": ("height", ">"),
    "shorter": ("height", "<"),
    "wider": ("width", ">"),
    "thinner": ("width", "<"),
}
PAIR_NUMBERS = ("direct_distance", "horizontal_distance", "vertical_distance")
OBJECT_SINGLE = ("width", "height")
EGO_NUMBERS = ("ego_distance", "ego_heading_angle", "ego_clock_direction", "region_length")
EGO_COMPARISONS = {  # predicate -> (quantity, relation of the region to the ego vehicle that makes "yes")
    "bigger_than_ego": ("volume", ">"),
    "smaller_than_ego": ("volume", "<"),
    "taller_than_ego": ("height", ">"),
    "shorter_than_ego": ("height", "<"),
    "wider_than_ego": ("width", ">"),
    "thinner_than_ego": ("width", "<"),
}
OBJECT_PREDICATES = (*PAIR_YES_NO, *PAIR_NUMBERS, *OBJECT_SINGLE)
EGO_PREDICATES = (*EGO_NUMBERS, "ego_left_right", *EGO_COMPARISONS)  # region_width / region_height: off by default
TEMPORAL_PREDICATES = (
    "ego_distance_data",
    "target_bearing_angle_data",
    "target_speed_data",
    "ego_speed_data",
    *(f"{q}_4d_t{h}" for h in HORIZONS_S[1:] for q in ("ego_distance_data", "target_speed_data", "ego_speed_data")),
)
REGION_NAME = re.compile(r"Region \[\d+\]")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


# ============================================================================================ scalar maths


def _inverse(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform: [R^T, -R^T t]."""
    R, t = T[:3, :3], T[:3, 3]
    out = np.eye(4)
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ t
    return out


def _apply(T: np.ndarray, p: np.ndarray) -> np.ndarray:
    return T[:3, :3] @ p + T[:3, 3]


def _polar_deg(x: float, y: float) -> float:
    """atan2(y, x) in degrees: 0 ahead, counter-clockwise (left) positive, in (-180, 180]."""
    d = math.degrees(math.atan2(y, x))
    return 180.0 if d <= -180.0 else d


def _circular_diff_deg(a: float, b: float) -> float:
    """a - b wrapped to [-180, 180)."""
    return (a - b + 180.0) % 360.0 - 180.0


def _clock_hour(heading_deg: float) -> tuple[int, float]:
    """The circularly nearest of the twelve hour directions (12 ahead, 3 right: clockwise angle 30 h) and the
    angular distance (degrees) from the heading to the nearest half-hour boundary."""
    clockwise = -heading_deg
    dists = [abs(_circular_diff_deg(clockwise, 30.0 * h)) for h in range(12)]
    h = int(np.argmin(dists))
    return (12 if h == 0 else h), 15.0 - dists[h]


def _assert_rounded(gt: float, truth: float, decimals: int, what: str) -> None:
    """gt is truth rounded to ``decimals`` (Python's round); within BOUNDARY_TOL of a rounding boundary either
    neighbour is accepted, and |gt - truth| <= half a unit (+1e-9) always holds."""
    unit = 10.0**-decimals
    assert round(gt, decimals) == gt, f"{what}: gt_value {gt!r} is not canonical ({decimals} decimals)"
    assert abs(gt - truth) <= unit / 2 + 1e-9, f"{what}: gt_value {gt} but truth {truth!r}"
    scaled = truth / unit
    near_boundary = abs(scaled - math.floor(scaled) - 0.5) < BOUNDARY_TOL
    if not near_boundary:
        assert gt == round(truth, decimals), (
            f"{what}: gt_value {gt} but truth {truth!r} rounds to {round(truth, decimals)}"
        )


def _assert_degrees(gt: float, truth: float, what: str) -> None:
    """Integer degrees in (-180, 180], -180 written as 180; circular comparison with the truth."""
    assert gt == float(int(gt)) and -180.0 < gt <= 180.0, f"{what}: bad degree value {gt}"
    assert abs(_circular_diff_deg(gt, truth)) <= 0.5 + 1e-9, f"{what}: gt_value {gt} deg, truth {truth!r} deg"
    near_boundary = abs(abs(truth) - math.floor(abs(truth)) - 0.5) < BOUNDARY_TOL
    if not near_boundary:
        expected = float(round(truth))
        expected = 180.0 if expected <= -180.0 else expected
        assert gt == expected, f"{what}: gt_value {gt} deg, truth {truth!r} rounds to {expected}"


def _assert_relation(a: float, b: float, relation: str, label: str, what: str) -> None:
    holds = a < b if relation == "<" else a > b
    assert label == ("yes" if holds else "no"), f"{what}: gt_label {label!r} but {a!r} {relation} {b!r} is {holds}"


def _assert_only_number(answer: str, text: str, what: str) -> None:
    """The canonical number string is in the answer and is its only number apart from the region names."""
    assert text in answer, f"{what}: {text!r} not in answer {answer!r}"
    numbers = NUMBER.findall(REGION_NAME.sub("", answer))
    assert numbers == [text.split()[0]], f"{what}: numbers {numbers} in answer {answer!r}, expected {text!r} only"


# ============================================================================================ finite differences


def _fd_window(present: np.ndarray, f: int) -> tuple[int, int] | None:
    """Frames (lo, hi) of the finite difference at frame f (docs/attributes.md): central where both neighbours
    are present, else one-sided beside a gap / at a track end, None for an isolated frame."""
    prev_ok = f - 1 >= 0 and bool(present[f - 1])
    next_ok = f + 1 < present.shape[0] and bool(present[f + 1])
    if prev_ok and next_ok:
        return f - 1, f + 1
    if next_ok:
        return f, f + 1
    if prev_ok:
        return f - 1, f
    return None


def _profile_knots(traj) -> tuple[list[float], list[float]]:
    """Times of the acceleration changes of a speed profile and their jumps (m/s^2): the acceleration is 0 before
    the first knot and after the last (agents.SpeedProfile)."""
    p = traj.profile
    accel = [0.0, *(float(a) for a in p.a_knots)]
    return [float(t) for t in p.t_knots], [accel[i + 1] - accel[i] for i in range(len(p.t_knots))]


def fd_speed_bound(traj, t_lo: float, t_hi: float, t: float) -> float:
    """Largest possible |finite-difference speed over [t_lo, t_hi] - analytic speed at t| for a closed-form
    synthetic trajectory (path of straight segments and arcs, piecewise-constant tangential acceleration).

    Derivation (h = half the window for a central difference, the whole window for a one-sided one):
    - speed along the path: the chord over the window divided by its duration is at most the mean speed over
      the window. For a central difference, v is piecewise linear; an acceleration jump Delta a at tau (|tau - t|
      <= h) moves the window mean away from v(t) by exactly Delta a * (h - |tau - t|)^2 / (4 h) (integrate
      v(t') - v(t) over the window), 0 when there is no jump (central differences are exact for constant
      acceleration), at most h / 4 * |Delta a|; jumps add. A one-sided difference errs by the mean of
      v(t') - v(t) over the window: at most h / 2 * max |a| (docs/attributes.md).
    - arcs: a curve of length L whose curvature is at most kappa has a chord of at least
      (2 / kappa) sin(L kappa / 2) (for L kappa <= pi), so the chord speed falls short of the mean speed by at
      most (L - (2 / kappa) sin(L kappa / 2)) / (t_hi - t_lo) (about v^3 h^2 kappa^2 / 6 for a central one).
    """
    prof = traj.profile
    duration = t_hi - t_lo
    if t_lo < t < t_hi:  # central
        h = duration / 2.0
        times, jumps = _profile_knots(traj)
        speed_term = sum(
            abs(d) * (h - abs(tau - t)) ** 2 / (4.0 * h)
            for tau, d in zip(times, jumps, strict=True)
            if abs(tau - t) < h
        )
    else:
        speed_term = duration / 2.0 * prof.max_abs_accel
    kappa = traj.path.max_curvature
    if kappa == 0.0:
        return speed_term
    s = prof.evaluate(np.array([t_lo, t_hi]))[0]
    length = float(s[1] - s[0])
    assert length * kappa <= math.pi, "window longer than half a turn: the chord bound does not apply"
    return speed_term + (length - 2.0 / kappa * math.sin(length * kappa / 2.0)) / duration


# ============================================================================================ the built scene


@dataclass
class SpeedDeviation:
    value: float = 0.0  # |gt - analytic| in m/s
    bound: float = 0.0
    where: str = ""


@dataclass
class Built:
    """The built scene's tables and the analytic truth, with the track -> agent link."""

    qa: object
    tracks: object
    regions: object
    cameras: object
    frames: object
    keyframe_frame: list[int]
    truth: object  # SyntheticScene
    t_rel: list[float]  # [F] scene time of each frame (s)
    T_global_from_ego: list[np.ndarray]  # [F] analytic ego poses
    centres: list[np.ndarray]  # [F] [A, 3] analytic box centres (global), agent_id - 1 order
    agent_of_track: dict[int, int] = field(default_factory=dict)  # track row -> agent id
    region_track: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (k, c, region) -> track row
    ego_size_lwh: tuple[float, float, float] = (0.0, 0.0, 0.0)
    scene_name: str = ""

    def centre_ego(self, agent_id: int, f: int) -> np.ndarray:
        """Box centre of an agent at frame f, in the ego frame of frame f (x forward, y left, z up; m)."""
        return _apply(_inverse(self.T_global_from_ego[f]), self.centres[f][agent_id - 1])

    def size(self, agent_id: int) -> np.ndarray:
        return np.asarray(self.truth.agents[agent_id - 1].size_lwh, dtype=np.float64)

    def agent(self, agent_id: int):
        return self.truth.agents[agent_id - 1]


def _link_tracks(b: Built) -> None:
    """Track row -> agent id by exact centre match in every present frame (unique, same agent throughout)."""
    present = np.asarray(b.tracks.present)
    centre = np.asarray(b.tracks.center_global)
    for row in range(present.shape[0]):
        ids = set()
        for f in np.flatnonzero(present[row]).tolist():
            gap = np.linalg.norm(b.centres[f] - centre[row, f], axis=1)
            hits = np.flatnonzero(gap < MATCH_TOL_M)
            assert hits.size == 1, f"track {row} frame {f}: {hits.size} agents at its centre"
            ids.add(int(hits[0]) + 1)
        assert len(ids) == 1, f"track row {row} ({b.tracks.track_id[row]}) covers agents {sorted(ids)}"
        agent_id = ids.pop()
        agent = b.agent(agent_id)
        assert str(b.tracks.label[row]) == agent.detection_class
        b.agent_of_track[row] = agent_id  # an agent that leaves and re-enters may own several rows


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    from stridegen import open_dataset
    from stridegen.jobs.build import run_build
    from stridegen.logs.synthetic import generate_dataset, load_synthetic_truth
    from stridegen.run.config import load_build_config

    base = tmp_path_factory.mktemp("qa_truth")
    log = base / "log"
    generate_dataset(log, scenes=1, seconds=SECONDS, seed=SEED, width=WIDTH, height=HEIGHT)
    config = load_build_config(None, ["segmenter.name=projected_box"])
    assert config.detector.name == "oracle"
    # The documented default thresholds (module constants above) are the ones in force.
    assert not config.qa.spatial_options and not config.qa.temporal_options
    result = run_build(log, base / "ds", config)
    assert result.ok, [r.reason for r in result.failed]
    ds = open_dataset(base / "ds")
    (name,) = ds.scenes
    view = ds[name]
    truth = load_synthetic_truth(Path(log), name)
    frames = view.frames
    t_rel = [truth.time_s(int(ts)) for ts in np.asarray(frames.timestamp_us).tolist()]
    centres = []
    for t in t_rel:
        states = truth.agent_states(t)
        assert np.asarray(states.extras["agent_id"]).tolist() == list(range(1, len(truth.agents) + 1))
        centres.append(np.asarray(states.center, dtype=np.float64))
    b = Built(
        qa=view.qa,
        tracks=view.tracks,
        regions=view.regions,
        cameras=view.cameras,
        frames=frames,
        keyframe_frame=[int(f) for f in np.asarray(view.keyframes.frame_index).tolist()],
        truth=truth,
        t_rel=t_rel,
        T_global_from_ego=[truth.ego_pose(t) for t in t_rel],
        centres=centres,
        ego_size_lwh=tuple(float(v) for v in config.qa.ego_size_lwh),
        scene_name=name,
    )
    _link_tracks(b)
    reg = b.regions
    for k, c, r, t in zip(
        *(
            np.asarray(getattr(reg, a)).tolist()
            for a in ("keyframe_index", "channel_index", "region_id", "track_index")
        ),
        strict=True,
    ):
        b.region_track[(k, c, r)] = t
    return b


# ============================================================================================ per-row checks


@dataclass
class Row:
    """One QA row as Python values."""

    index: int
    qid: str
    category: str
    predicate: str
    k: int
    c: int
    regions: tuple[int, ...]
    tracks: tuple[int, ...]
    frames: tuple[int, ...]
    answer: str
    gt: float
    unit: str
    label: str
    extra: dict
    group: str
    horizon: int
    oov: int
    object_class: str

    @staticmethod
    def read(qa, i: int) -> Row:
        def unpad(a) -> tuple[int, ...]:
            return tuple(int(v) for v in np.asarray(a).tolist() if v >= 0)

        return Row(
            i,
            str(qa.question_id[i]),
            str(qa.category[i]),
            str(qa.predicate[i]),
            int(qa.keyframe_index[i]),
            int(qa.channel_index[i]),
            unpad(qa.region_ids[i]),
            unpad(qa.track_index[i]),
            unpad(qa.frame_indices[i]),
            str(qa.answer[i]),
            float(qa.gt_value[i]),
            str(qa.unit[i]),
            str(qa.gt_label[i]),
            json.loads(str(qa.gt_extra[i]) or "{}"),
            str(qa.group_id[i]),
            int(qa.horizon_s[i]),
            int(qa.out_of_view[i]),
            str(qa.object_class[i]),
        )


def _size_quantity(size: np.ndarray, name: str) -> float:
    length, width, height = (float(v) for v in size)
    return {"volume": length * width * height, "height": height, "width": width}[name]


def _assert_sizes_unambiguous(a: float, b: float, rel_min: float, what: str) -> None:
    assert abs(a - b) >= rel_min * max(a, b) - THRESHOLD_TOL and a != b, (
        f"{what}: ambiguous size comparison asked ({a!r} vs {b!r})"
    )


def _check_common(b: Built, row: Row) -> list[int]:
    """Region ids <-> track rows as in the regions table; object class of the first region. The agents."""
    from stridegen.core.vocabulary import stride_class

    assert len(row.regions) == len(row.tracks) >= 1, row.qid
    for r, t in zip(row.regions, row.tracks, strict=True):
        assert b.region_track.get((row.k, row.c, r)) == t, f"{row.qid}: region {r} is not track {t} in that image"
    agents = [b.agent_of_track[t] for t in row.tracks]
    expected_class = stride_class(b.agent(agents[0]).detection_class) or b.agent(agents[0]).detection_class
    assert row.object_class == expected_class, f"{row.qid}: object_class {row.object_class!r}"
    return agents


def check_spatial_row(b: Built, row: Row) -> None:
    agents = _check_common(b, row)
    f = b.keyframe_frame[row.k]
    T_cam_from_ego = _inverse(np.asarray(b.cameras.T_ego_from_sensor[row.c], dtype=np.float64))
    p_ego = [b.centre_ego(a, f) for a in agents]  # keyframe ego frame
    p_cam = [_apply(T_cam_from_ego, p) for p in p_ego]
    sizes = [b.size(a) for a in agents]
    pred, what = row.predicate, f"{row.qid} {row.predicate}"
    assert row.group == "" and row.horizon == 0 and row.frames == () and row.oov == -1, what
    expected_category = "object_spatial" if pred in OBJECT_PREDICATES else "ego_spatial"
    assert row.category == expected_category, what
    assert len(row.regions) == (2 if pred in PAIR_YES_NO or pred in PAIR_NUMBERS else 1), what
    qualitative = pred in PAIR_YES_NO or pred in EGO_COMPARISONS or pred == "ego_left_right"
    if qualitative:
        assert math.isnan(row.gt) and row.unit == "" and row.label, what
        assert not NUMBER.findall(REGION_NAME.sub("", row.answer)), f"{what}: a number in {row.answer!r}"
    else:
        assert row.label == "", what

    if pred in PAIR_YES_NO:
        quantity, relation = PAIR_YES_NO[pred]
        if quantity in ("x_cam", "z_cam"):
            axis = 0 if quantity == "x_cam" else 2
            qa_, qb = float(p_cam[0][axis]), float(p_cam[1][axis])
            limit = LATERAL_MIN_M if axis == 0 else DEPTH_MIN_M
            assert abs(qa_ - qb) >= limit - THRESHOLD_TOL, f"{what}: ambiguous ({qa_!r} vs {qb!r})"
        else:
            qa_, qb = _size_quantity(sizes[0], quantity), _size_quantity(sizes[1], quantity)
            _assert_sizes_unambiguous(qa_, qb, SIZE_REL_MIN, what)
        _assert_relation(qa_, qb, relation, row.label, what)
        return
    if pred in EGO_COMPARISONS:
        quantity, relation = EGO_COMPARISONS[pred]
        q = _size_quantity(sizes[0], quantity)
        q_ego = _size_quantity(np.asarray(b.ego_size_lwh), quantity)
        _assert_sizes_unambiguous(q, q_ego, EGO_SIZE_REL_MIN, what)
        _assert_relation(q, q_ego, relation, row.label, what)
        return
    x, y = float(p_ego[0][0]), float(p_ego[0][1])
    if pred == "ego_left_right":
        assert abs(y) >= EGO_LATERAL_MIN_M - THRESHOLD_TOL, f"{what}: ambiguous, y = {y!r}"
        assert row.label == ("left" if y > 0.0 else "right"), f"{what}: {row.label!r} but y = {y!r}"
        return

    # Quantitative rows.
    if pred in PAIR_NUMBERS:
        d = p_ego[0] - p_ego[1]
        value = {
            "direct_distance": math.sqrt(float(d @ d)),
            "horizontal_distance": math.hypot(d[0], d[1]),
            "vertical_distance": abs(float(d[2])),
        }[pred]
    elif pred in ("width", "region_width"):
        value = float(sizes[0][1])
    elif pred in ("height", "region_height"):
        value = float(sizes[0][2])
    elif pred == "region_length":
        value = float(sizes[0][0])
    elif pred == "ego_distance":
        value = math.hypot(x, y)
    elif pred in ("ego_heading_angle", "ego_clock_direction"):
        assert math.hypot(x, y) >= HEADING_MIN_DISTANCE_M - THRESHOLD_TOL, f"{what}: too close for a direction"
        heading = _polar_deg(x, y)
        if pred == "ego_heading_angle":
            assert row.unit == "deg", what
            _assert_degrees(row.gt, heading, what)
            _assert_only_number(row.answer, f"{row.gt:.0f} degrees", what)
            return
        hour, margin = _clock_hour(heading)
        assert margin >= CLOCK_MARGIN_DEG - THRESHOLD_TOL, f"{what}: heading {heading!r} too near a boundary"
        assert row.unit == "o'clock" and row.gt == float(hour), f"{what}: hour {row.gt} but heading {heading!r}"
        _assert_only_number(row.answer, f"{hour} o'clock", what)
        return
    else:
        raise AssertionError(f"{what}: predicate not in the documented default set")
    assert row.unit == "m", what
    _assert_rounded(row.gt, value, 2, what)
    _assert_only_number(row.answer, f"{row.gt:.2f} m", what)


def _nearest_frame(b: Built, t: float) -> int:
    """Nearest frame within the tolerance (ties: the earlier one); -1 if none."""
    gaps = [abs(tf - t) for tf in b.t_rel]
    f = int(np.argmin(gaps))
    return f if gaps[f] <= TIME_TOLERANCE_S + 1e-9 else -1


def _expected_out_of_view(b: Built, p_ego: np.ndarray, c: int) -> set[int]:
    """{0}, {1}, or {0, 1} when the projection lies within 1e-6 px (or m) of an image edge or the near plane."""
    p = _apply(_inverse(np.asarray(b.cameras.T_ego_from_sensor[c], dtype=np.float64)), p_ego)
    depth = float(p[2])
    if abs(depth - NEAR_PLANE_M) < 1e-9:
        return {0, 1}
    if depth < NEAR_PLANE_M:
        return {1}
    uvw = np.asarray(b.cameras.intrinsic[c], dtype=np.float64) @ p  # pinhole: (u, v) = (K p)[:2] / depth
    u, v = float(uvw[0] / uvw[2]), float(uvw[1] / uvw[2])
    w, h = int(b.cameras.width[c]), int(b.cameras.height[c])
    edges = (abs(u), abs(u - w), abs(v), abs(v - h))
    if min(edges) < 1e-6:
        return {0, 1}
    return {0} if 0.0 <= u < w and 0.0 <= v < h else {1}


def _fd_speed(positions: dict[int, np.ndarray], window: tuple[int, int], b: Built) -> float:
    lo, hi = window
    d = positions[hi] - positions[lo]
    return math.hypot(float(d[0]), float(d[1])) / (b.t_rel[hi] - b.t_rel[lo])


def _temporal_predicate(horizon: int, quantity: str) -> str:
    if horizon == 0:
        return quantity
    return f"{quantity}_4d_t{horizon}"


def check_temporal_row(b: Built, row: Row, deviations: dict[str, SpeedDeviation]) -> None:
    agents = _check_common(b, row)
    what = f"{row.qid} {row.predicate}"
    assert row.category == "spatiotemporal" and len(row.regions) == 1, what
    channel = str(b.cameras.channel[row.c])
    assert row.group == f"{b.scene_name}/k{row.k:03d}/{channel}/r{row.regions[0]}", what
    f_k = b.keyframe_frame[row.k]
    t_k = b.t_rel[f_k]
    context = tuple(_nearest_frame(b, t_k + o) for o in CONTEXT_OFFSETS_S)
    assert row.frames == context, f"{what}: context frames {row.frames}, expected {context}"
    f_h = _nearest_frame(b, t_k + row.horizon)
    assert f_h >= 0 and row.horizon in HORIZONS_S, what
    track, agent_id = row.tracks[0], agents[0]
    present = np.asarray(b.tracks.present[track], dtype=bool)
    assert present[f_h], f"{what}: target track absent at the horizon"
    p_ego = b.centre_ego(agent_id, f_h)  # ego frame of the horizon's own time
    assert row.oov in _expected_out_of_view(b, p_ego, row.c), f"{what}: out_of_view {row.oov}"

    pred = row.predicate
    if pred in (_temporal_predicate(row.horizon, "ego_distance_data"), "target_bearing_angle_data"):
        x, y = float(p_ego[0]), float(p_ego[1])
        distance, bearing = math.hypot(x, y), _polar_deg(x, y)
        assert distance >= MIN_DISTANCE_M - THRESHOLD_TOL, what
        if pred == "target_bearing_angle_data":
            assert row.horizon == 0 and row.unit == "deg", what
            _assert_degrees(row.gt, bearing, what)
            assert f"{row.gt:.0f} degrees" in row.answer, what
            return
        assert row.unit == "m", what
        _assert_rounded(row.gt, distance, 2, what)
        assert f"{row.gt:.2f} m" in row.answer, f"{what}: {row.answer!r}"
        if row.horizon:
            direction = float(row.extra["direction"])
            _assert_degrees(direction, bearing, what + " direction")
            assert f"{direction:.0f} degrees" in row.answer, f"{what}: {row.answer!r}"
        else:
            assert row.extra == {}, what
        return

    assert row.unit == "m/s" and row.extra == {}, what
    if pred == _temporal_predicate(row.horizon, "target_speed_data"):
        window = _fd_window(present, f_h)
        assert window is not None, f"{what}: speed of a one-frame track"
        for f in window:  # the neighbours are the same agent (no id switch inside the difference)
            assert np.linalg.norm(b.centres[f][agent_id - 1] - b.tracks.center_global[track, f]) < MATCH_TOL_M
        positions = {f: b.centres[f][agent_id - 1] for f in window}
        traj = b.agent(agent_id).trajectory
        analytic = float(traj.state(b.t_rel[f_h])["speed"])
        source = f"{b.agent(agent_id).detection_class} ({b.agent(agent_id).scenario})"
    elif pred == _temporal_predicate(row.horizon, "ego_speed_data"):
        window = _fd_window(np.ones(len(b.t_rel), dtype=bool), f_h)
        positions = {f: b.T_global_from_ego[f][:3, 3] for f in window}
        traj = b.truth.ego
        analytic = float(np.hypot(*b.truth.ego_velocity_global(b.t_rel[f_h])[:2]))
        source = f"ego ({b.truth.ego_profile_kind} profile)"
    else:
        raise AssertionError(f"{what}: predicate does not match horizon {row.horizon}")
    # (b) exactly the documented finite difference of the truth positions at the frame times, to the rounding
    fd = _fd_speed(positions, window, b)
    _assert_rounded(row.gt, fd, 2, what + " (finite difference)")
    assert f"{row.gt:.2f} m/s" in row.answer, f"{what}: {row.answer!r}"
    # (a) the analytic speed within the derived finite-difference bound (+ half a rounding unit)
    t_lo, t_hi, t = b.t_rel[window[0]], b.t_rel[window[1]], b.t_rel[f_h]
    bound = fd_speed_bound(traj, t_lo, t_hi, t)
    deviation = abs(row.gt - analytic)
    assert deviation <= bound + 0.005 + 1e-9, (
        f"{what}: {row.gt} m/s, analytic {analytic:.4f} m/s, bound {bound:.4f} ({source}, t = {t} s)"
    )
    key = "target" if "target" in pred else "ego"
    if deviation > deviations[key].value:
        kind = "central" if t_lo < t < t_hi else "one-sided"
        deviations[key] = SpeedDeviation(
            deviation,
            bound,
            f"{row.qid} {pred}: {source} at t = {t:.1f} s, "
            f"{kind} difference over [{t_lo:.1f}, {t_hi:.1f}] s, "
            f"gt {row.gt} vs analytic {analytic:.4f} m/s",
        )


# ============================================================================================ tests


def test_fd_speed_bound_is_tight_for_one_acceleration_jump():
    """The bound's speed term is the exact window-mean error for one jump, and 0 for constant acceleration."""
    from stridegen.logs.synthetic.agents import Path as AgentPath
    from stridegen.logs.synthetic.agents import SpeedProfile, Trajectory

    traj = Trajectory(AgentPath((0.0, 0.0), 0.3), SpeedProfile.from_phases(0.0, 5.0, [(2.0, 0.0), (1.0, -3.0)]))

    def fd(t: float, h: float) -> float:
        xy = traj.state(np.array([t - h, t + h]))["xy"]
        return float(np.linalg.norm(xy[1] - xy[0]) / (2 * h))

    for t in (1.5, 1.8, 2.0, 2.2, 2.5):  # jump of -3 m/s^2 at t = 2
        err = abs(fd(t, STEP_S) - float(traj.state(t)["speed"]))
        assert err == pytest.approx(fd_speed_bound(traj, t - STEP_S, t + STEP_S, t), abs=1e-9)
    assert fd_speed_bound(traj, 2.0, 3.0, 2.5) == 0.0  # inside the braking phase: central is exact
    assert abs(fd(2.5, STEP_S) - float(traj.state(2.5)["speed"])) < 1e-9
    assert fd_speed_bound(traj, 2.0, 2.5, 2.0) == pytest.approx(STEP_S / 2 * 3.0)  # one-sided: h/2 max|a|
    # A quarter circle of radius 6 m at 4 m/s: the chord term is about v^3 h^2 kappa^2 / 6.
    arc = Trajectory(AgentPath((0.0, 0.0), 0.0, ((40.0, -1.0 / 6.0),)), SpeedProfile.from_phases(0.0, 4.0))
    err = abs(float(np.linalg.norm(np.diff(arc.state(np.array([1.0, 2.0]))["xy"], axis=0))) - 4.0)
    assert err == pytest.approx(fd_speed_bound(arc, 1.0, 2.0, 1.5), rel=1e-9)
    assert err == pytest.approx(4.0**3 * STEP_S**2 / 36.0 / 6.0, rel=0.02)


@settings(max_examples=200, deadline=None)
@given(
    v0=st.floats(0.0, 15.0),
    phases=st.lists(st.tuples(st.floats(0.1, 3.0), st.floats(-3.0, 3.0)), max_size=4),
    radius=st.one_of(st.just(0.0), st.floats(5.0, 50.0)),
    t=st.floats(0.0, 8.0),
    kind=st.sampled_from("cfb"),
)
def test_fd_speed_bound_holds_for_random_trajectories(v0, phases, radius, t, kind):
    """Property: the finite-difference speed of any straight or arc trajectory with piecewise-constant
    acceleration stays within fd_speed_bound of the analytic speed (central, forward and backward windows)."""
    from stridegen.logs.synthetic.agents import Path as AgentPath
    from stridegen.logs.synthetic.agents import SpeedProfile, Trajectory

    kept, v = [], v0
    for duration, accel in phases:  # keep the speed non-negative (profiles are designed to end at v >= 0)
        accel = max(accel, -v / duration)
        kept.append((duration, accel))
        v += accel * duration
    pieces = ((200.0, 1.0 / radius),) if radius else ()
    traj = Trajectory(AgentPath((0.0, 0.0), 0.7, pieces), SpeedProfile.from_phases(0.0, v0, kept))
    lo, hi = {"c": (t - STEP_S, t + STEP_S), "f": (t, t + STEP_S), "b": (t - STEP_S, t)}[kind]
    state = traj.state(np.array([lo, hi]))
    if radius:  # the chord bound needs at most half a turn inside the window
        assume(float(state["s"][1] - state["s"][0]) / radius <= math.pi)
    xy = state["xy"]
    fd = float(np.linalg.norm(xy[1] - xy[0])) / (hi - lo)
    assert abs(fd - float(traj.state(t)["speed"])) <= fd_speed_bound(traj, lo, hi, t) + 1e-9


def test_every_qa_row_equals_the_analytic_truth(built: Built):
    qa = built.qa
    n = len(np.asarray(qa.question_id))
    assert n > 0
    assert len(set(np.asarray(qa.question_id).tolist())) == n
    checked: Counter = Counter()
    predicates: Counter = Counter()
    deviations = {"target": SpeedDeviation(), "ego": SpeedDeviation()}
    groups: dict[str, list[str]] = {}
    for i in range(n):
        row = Row.read(qa, i)
        if row.category == "spatiotemporal":
            check_temporal_row(built, row, deviations)
            groups.setdefault(row.group, []).append(row.predicate)
        else:
            check_spatial_row(built, row)
        checked[row.category] += 1
        predicates[row.predicate] += 1
    # No silent skips: every row went through a checker.
    assert sum(checked.values()) == n
    assert checked == Counter(np.asarray(qa.category).tolist())
    assert set(checked) == {"object_spatial", "ego_spatial", "spatiotemporal"}, checked
    # Every default predicate occurs (seed and length chosen so they do), and nothing else.
    expected = set(OBJECT_PREDICATES) | set(EGO_PREDICATES) | set(TEMPORAL_PREDICATES)
    assert set(predicates) == expected, (expected - set(predicates), set(predicates) - expected)
    # Each spatiotemporal group holds its 13 predicates once.
    for gid, preds in groups.items():
        assert sorted(preds) == sorted(TEMPORAL_PREDICATES), gid
    print(f"\nQA rows checked: {dict(checked)}; groups {len(groups)}")
    for key, dev in deviations.items():
        print(
            f"largest {key} speed deviation from the analytic truth: {dev.value:.4f} m/s "
            f"(bound {dev.bound:.4f} + 0.005): {dev.where}"
        )


def test_groups_exist_exactly_for_the_eligible_targets(built: Built):
    """A group per region whose track is present at every horizon, has a speed there, and stays >= 0.5 m away
    (docs/qa-spatiotemporal.md, "When no group is made"; skip_out_of_view is off, min speed 0)."""
    made = {str(g) for g in np.asarray(built.qa.group_id).tolist() if g}
    expected = set()
    for (k, c, r), track in built.region_track.items():
        f_k = built.keyframe_frame[k]
        t_k = built.t_rel[f_k]
        frames = [_nearest_frame(built, t_k + o) for o in (*CONTEXT_OFFSETS_S, *HORIZONS_S)]
        if min(frames) < 0:
            continue
        present = np.asarray(built.tracks.present[track], dtype=bool)
        horizons = frames[len(CONTEXT_OFFSETS_S) :]
        if not all(present[f] and _fd_window(present, f) is not None for f in horizons):
            continue
        agent_id = built.agent_of_track[track]
        if min(math.hypot(*built.centre_ego(agent_id, f)[:2]) for f in horizons) < MIN_DISTANCE_M:
            continue
        expected.add(f"{built.scene_name}/k{k:03d}/{built.cameras.channel[c]}/r{r}")
    assert made == expected, (sorted(expected - made)[:5], sorted(made - expected)[:5])
