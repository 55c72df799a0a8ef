"""Scenario relation of a spatiotemporal group: a rule-based label from the target's motion relative to the ego.

STRIDE-QA-Bench breaks LSR down by the relation of each group's target to the ego over the group's window
(``relation`` of its ``annotation_sheet.csv``). A built dataset has no hand-made sheet; these rules label a group
from two arrays over its window (the keyframe window of the keyframes table: context frames before t0, t0, and
the horizons t0 + 1..3 s): the target's centre in the global frame and the ego poses. Absent frames are NaN.

Quantities, all from finite differences of consecutive present frames (``_Motion``):

- **relative heading** of one step: direction of the target's global displacement minus the ego's yaw at the
  step's start (so a target driving the ego's way is 0 deg, an oncoming one 180 deg). The window's heading is the
  length-weighted circular mean of all steps at >= ``HEADING_MIN_SPEED_MPS``; its *early* and *late* headings the
  same mean over the first and last ``TURN_STEPS`` such steps.
- **ego-frame position** (x forward, y left) of the target at every present frame; the longitudinal rate is
  (x_last - x_first) / (t_last - t_first).

Rules, first match wins:

1. fewer than ``MIN_PRESENT_FRAMES`` present frames: ``Other``. A target that never moves at
   ``MOVING_MIN_SPEED_MPS``: ``Maintain_State`` when it stays in the ego's lane (|y| <= ``LANE_HALF_WIDTH_M``)
   ahead within ``QUEUE_MAX_GAP_M`` at a held gap (the ego queues behind it), else ``Other`` (parked, standing,
   a pedestrian at walking pace).
2. early and late headings differ by more than ``TURN_MIN_DEG`` (the target turns, or the ego does):
   ``Path_Divergence_at_Intersection``.
3. heading beyond ``ONCOMING_MIN_DEG`` from the ego's: ``Oncoming_Pass``.
4. heading between ``SAME_DIRECTION_MAX_DEG`` and ``ONCOMING_MIN_DEG`` (crossing the ego's road): ``Other``.
5. same direction: the target's longitudinal position changes sign (one passes the other): ``Overtake``; the
   longitudinal rate below
   ``MAINTAIN_MAX_RATE_MPS``: ``Maintain_State``; ahead of the ego in every frame and getting farther:
   ``Pulling_Away_from_Ego``; else (closing in from behind or ahead, falling behind): ``Overtake``.

The names are the benchmark's relation spellings (``RELATIONS``). docs/scenarios.md lists the rules and the
confusion matrix against the synthetic generator's per-window truth (``stridegen.logs.synthetic.scenario.
window_relation``: the same definitions evaluated on the exact analytic motion, where these rules see a track
sampled at the window's frames, with gaps where the target was not tracked).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The benchmark's relation names (annotation_sheet.csv spelling).
OVERTAKE = "Overtake"
ONCOMING_PASS = "Oncoming_Pass"
MAINTAIN_STATE = "Maintain_State"
PATH_DIVERGENCE = "Path_Divergence_at_Intersection"
PULLING_AWAY = "Pulling_Away_from_Ego"
OTHER = "Other"
RELATIONS: tuple[str, ...] = (ONCOMING_PASS, MAINTAIN_STATE, OVERTAKE, PATH_DIVERGENCE, PULLING_AWAY, OTHER)

# At least this many present frames in the window (two steps): fewer cannot give a heading and a trend.
MIN_PRESENT_FRAMES = 3
# A target whose fastest step stays below this never takes part in traffic (parked cars, pedestrians: people walk
# at 1-1.6 m/s; the slowest cyclists ride at 3.5 m/s): Other.
MOVING_MIN_SPEED_MPS = 2.0
# Steps slower than this carry no heading (a stopped target's displacement is noise in a real track).
HEADING_MIN_SPEED_MPS = 1.0
# Steps averaged for the early and the late heading (0.5 s at 2 Hz): one, so that a turn cut by the window's edge
# is not averaged away (two steps missed 6 of 119 such windows of the generator's trucks, docs/scenarios.md).
TURN_STEPS = 1
# Early and late headings further apart than this: someone turns. The truth calls a window a turn when the heading
# changes by more than 45 deg (half a right-angle turn) between its ends; a step's chord points along the heading at
# the step's middle, so the chords of the first and last steps see up to a quarter step less of the turn at each
# end (about 10 deg for the generator's trucks: 4-5 m/s on a 6-7.5 m radius), hence 35. Lane changes stay under
# 15 deg at urban speeds.
TURN_MIN_DEG = 35.0
# Headings within this of the ego's are "same direction" (lane changes, gentle curves).
SAME_DIRECTION_MAX_DEG = 45.0
# Headings beyond this from the ego's are "opposite direction".
ONCOMING_MIN_DEG = 135.0
# Half a lane: a target within this of the ego's longitudinal axis is in the ego's lane.
LANE_HALF_WIDTH_M = 1.75
# A stationary target in the ego's lane at most this far ahead, at a held gap, is the car the ego queues behind.
QUEUE_MAX_GAP_M = 25.0
# Longitudinal relative speed below which the gap counts as held (0.6 m/s = 3 m over a 5 s window).
MAINTAIN_MAX_RATE_MPS = 0.6


@dataclass(frozen=True)
class _Motion:
    """Per-group motion summary (arrays over groups G)."""

    n_present: np.ndarray  # [G] int
    max_speed: np.ndarray  # [G] m/s, fastest step of the target
    heading: np.ndarray  # [G] rad, mean relative heading (NaN: no step fast enough)
    early: np.ndarray  # [G] rad
    late: np.ndarray  # [G] rad
    x_first: np.ndarray  # [G] m, ego-frame longitudinal position at the first present frame
    x_last: np.ndarray  # [G] m
    x_min: np.ndarray  # [G] m, over the present frames
    x_max: np.ndarray  # [G] m
    abs_y_max: np.ndarray  # [G] m, largest lateral offset
    duration: np.ndarray  # [G] s, first to last present frame


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


def _circular_mean(angle: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted circular mean over the last axis (NaN where every weight is 0)."""
    c = (weight * np.cos(angle)).sum(axis=-1)
    s = (weight * np.sin(angle)).sum(axis=-1)
    out = np.arctan2(s, c)
    return np.where(weight.sum(axis=-1) > 0, out, np.nan)


def _first_last(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value at the first and the last valid index of each row (NaN for rows without one)."""
    n = valid.shape[-1]
    idx = np.arange(n)
    first = np.where(valid, idx, n).min(axis=-1)
    last = np.where(valid, idx, -1).max(axis=-1)
    rows = np.arange(values.shape[0])
    ok = last >= 0
    a = np.where(ok, values[rows, np.minimum(first, n - 1)], np.nan)
    b = np.where(ok, values[rows, np.maximum(last, 0)], np.nan)
    return a, b


def _edge_weights(weight: np.ndarray, k: int, from_end: bool) -> np.ndarray:
    """``weight`` kept only on the first (or last) k steps of each row that have a non-zero weight."""
    has = weight > 0
    rank = np.cumsum(has[:, ::-1], axis=-1)[:, ::-1] if from_end else np.cumsum(has, axis=-1)
    return np.where(has & (rank <= k), weight, 0.0)


def _motion(times_s: np.ndarray, target_global: np.ndarray, T_global_from_ego: np.ndarray) -> _Motion:
    g, n = target_global.shape[:2]
    present = np.isfinite(target_global[..., :2]).all(axis=-1) & np.isfinite(T_global_from_ego).all(axis=(-2, -1))
    present &= np.isfinite(times_s)
    p = np.where(present[..., None], target_global[..., :2], 0.0)
    e = np.where(present[..., None], T_global_from_ego[..., :2, 3], 0.0)
    yaw = np.arctan2(T_global_from_ego[..., 1, 0], T_global_from_ego[..., 0, 0])
    yaw = np.where(present, yaw, 0.0)
    # Ego-frame position (x forward, y left) of the target at every frame.
    d = p - e
    c, s = np.cos(yaw), np.sin(yaw)
    x = c * d[..., 0] + s * d[..., 1]
    y = -s * d[..., 0] + c * d[..., 1]
    # Steps between consecutive present frames.
    step_ok = present[:, 1:] & present[:, :-1]
    t = np.where(present, times_s, 0.0)
    dt = t[:, 1:] - t[:, :-1]
    step_ok &= dt > 0
    dp = p[:, 1:] - p[:, :-1]
    length = np.hypot(dp[..., 0], dp[..., 1])
    speed = np.where(step_ok, length / np.where(step_ok, dt, 1.0), 0.0)
    rel = _wrap(np.arctan2(dp[..., 1], dp[..., 0]) - yaw[:, :-1])
    weight = np.where(step_ok & (speed >= HEADING_MIN_SPEED_MPS), length, 0.0)
    x_first, x_last = _first_last(x, present)
    t_first, t_last = _first_last(np.broadcast_to(times_s, (g, n)), present)
    return _Motion(
        n_present=present.sum(axis=-1),
        max_speed=speed.max(axis=-1, initial=0.0),
        heading=_circular_mean(rel, weight),
        early=_circular_mean(rel, _edge_weights(weight, TURN_STEPS, from_end=False)),
        late=_circular_mean(rel, _edge_weights(weight, TURN_STEPS, from_end=True)),
        x_first=x_first,
        x_last=x_last,
        x_min=np.where(present, x, np.inf).min(axis=-1),
        x_max=np.where(present, x, -np.inf).max(axis=-1),
        abs_y_max=np.where(present, np.abs(y), -np.inf).max(axis=-1),
        duration=t_last - t_first,
    )


def classify_relations(times_s: np.ndarray, target_global: np.ndarray, T_global_from_ego: np.ndarray) -> np.ndarray:
    """Relations of G groups over windows of N frames (module docstring rules).

    ``times_s`` [N] or [G, N] seconds; ``target_global`` [G, N, 3] (or [G, N, 2]) target centres in the global
    frame, NaN where absent; ``T_global_from_ego`` [G, N, 4, 4] ego poses (NaN where unknown). Returns [G] str.
    """
    target = np.asarray(target_global, dtype=np.float64)
    poses = np.asarray(T_global_from_ego, dtype=np.float64)
    if target.ndim != 3 or target.shape[-1] not in (2, 3):
        raise ValueError(f"target_global must be [G, N, 2|3], got {target.shape}")
    g, n = target.shape[:2]
    if poses.shape != (g, n, 4, 4):
        raise ValueError(f"T_global_from_ego must be [{g}, {n}, 4, 4], got {poses.shape}")
    times = np.broadcast_to(np.asarray(times_s, dtype=np.float64), (g, n))
    out = np.full(g, OTHER, dtype=object)
    if g == 0:
        return out.astype(str)
    m = _motion(times, target, poses)
    with np.errstate(invalid="ignore"):
        enough = m.n_present >= MIN_PRESENT_FRAMES
        moving = enough & (m.max_speed >= MOVING_MIN_SPEED_MPS) & np.isfinite(m.heading)
        turn = np.degrees(np.abs(_wrap(m.late - m.early)))
        head = np.degrees(np.abs(m.heading))
        rate = (m.x_last - m.x_first) / np.where(m.duration > 0, m.duration, np.nan)
        held = np.abs(rate) < MAINTAIN_MAX_RATE_MPS
        queued = enough & ~moving & held & (m.x_min > 0) & (m.x_max <= QUEUE_MAX_GAP_M)
        queued &= m.abs_y_max <= LANE_HALF_WIDTH_M
        turning = moving & (turn > TURN_MIN_DEG)
        oncoming = moving & ~turning & (head > ONCOMING_MIN_DEG)
        same = moving & ~turning & (head <= SAME_DIRECTION_MAX_DEG)
        passes = (m.x_min < 0) & (m.x_max > 0)
        pulling = (m.x_min > 0) & (rate > 0)
    out[queued] = MAINTAIN_STATE
    out[turning] = PATH_DIVERGENCE
    out[oncoming] = ONCOMING_PASS
    out[same & passes] = OVERTAKE
    out[same & ~passes & held] = MAINTAIN_STATE
    out[same & ~passes & ~held & pulling] = PULLING_AWAY
    out[same & ~passes & ~held & ~pulling] = OVERTAKE
    return out.astype(str)


def classify_relation(times_s: np.ndarray, target_global: np.ndarray, T_global_from_ego: np.ndarray) -> str:
    """The relation of one group: ``times_s`` [N] s, ``target_global`` [N, 3] global centres (NaN where absent),
    ``T_global_from_ego`` [N, 4, 4] ego poses over the group's window (module docstring rules)."""
    target = np.asarray(target_global, dtype=np.float64)
    poses = np.asarray(T_global_from_ego, dtype=np.float64)
    return str(classify_relations(np.asarray(times_s, dtype=np.float64), target[None], poses[None])[0])


__all__ = [
    "MAINTAIN_STATE",
    "ONCOMING_PASS",
    "OTHER",
    "OVERTAKE",
    "PATH_DIVERGENCE",
    "PULLING_AWAY",
    "RELATIONS",
    "classify_relation",
    "classify_relations",
]
