"""Scenario relations (``stridegen.pipeline.scenario``): known answers per rule, and accuracy against the synthetic
generator's per-window truth.

Truth: ``stridegen.logs.synthetic.scenario.window_relation`` gives the relation of every agent over any window,
from the generator's analytic motion (exact path headings, positions sampled every 50 ms) and its roles
(background roles are ``Other`` in every window). The labeler sees what a built dataset stores: the target's track
at the window's frames (2 Hz), present only where it was tracked. The confusion matrices printed here are the ones
in docs/scenarios.md; every relation must reach 0.95.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from stridegen.pipeline.scenario import (
    MAINTAIN_STATE,
    ONCOMING_PASS,
    OTHER,
    OVERTAKE,
    PATH_DIVERGENCE,
    PULLING_AWAY,
    RELATIONS,
    classify_relation,
    classify_relations,
)

SEED, SCENES, SECONDS = 0, 6, 20.0
WINDOW_S = np.arange(-2.0, 3.0 + 1e-9, 0.5)  # the default keyframe window
ANNOTATION_RANGE_M = 80.0  # docs/synthetic.md: agents are annotated within 80 m of the ego
FLOOR = 0.95  # issue 32: every relation, on built groups and on truth tracks


# ---------------------------------------------------------------------------------------------- known answers


def _poses(xy: np.ndarray, yaw: np.ndarray | float = 0.0) -> np.ndarray:
    """[N, 4, 4] yaw-only ego poses at ``xy`` [N, 2]."""
    n = len(xy)
    yaw = np.broadcast_to(np.asarray(yaw, dtype=np.float64), (n,))
    t = np.tile(np.eye(4), (n, 1, 1))
    t[:, 0, 0], t[:, 0, 1], t[:, 1, 0], t[:, 1, 1] = np.cos(yaw), -np.sin(yaw), np.sin(yaw), np.cos(yaw)
    t[:, :2, 3] = xy
    return t


def _line(start: tuple[float, float], velocity: tuple[float, float], times: np.ndarray = WINDOW_S) -> np.ndarray:
    return np.asarray(start) + times[:, None] * np.asarray(velocity)


def _classify(target_xy: np.ndarray, ego_xy: np.ndarray, ego_yaw: np.ndarray | float = 0.0) -> str:
    target = np.c_[target_xy, np.zeros(len(target_xy))]
    return classify_relation(WINDOW_S, target, _poses(ego_xy, ego_yaw))


EGO_10 = _line((0.0, 0.0), (10.0, 0.0))  # the ego at 10 m/s along +x


def test_oncoming_vehicle_is_oncoming_pass() -> None:
    assert _classify(_line((40.0, 3.5), (-10.0, 0.0)), EGO_10) == ONCOMING_PASS
    # Before it reaches the ego too (the relation does not need the pass inside the window).
    assert _classify(_line((120.0, 3.5), (-8.0, 0.0)), EGO_10) == ONCOMING_PASS


def test_lead_at_constant_gap_is_maintain_state() -> None:
    assert _classify(_line((15.0, 0.0), (10.0, 0.0)), EGO_10) == MAINTAIN_STATE
    assert _classify(_line((15.0, -3.5), (10.3, 0.0)), EGO_10) == MAINTAIN_STATE  # 0.3 m/s apart: held


def test_queued_behind_a_stopped_lead_is_maintain_state() -> None:
    ego = np.zeros((len(WINDOW_S), 2))
    assert _classify(np.tile([9.0, 0.2], (len(WINDOW_S), 1)), ego) == MAINTAIN_STATE
    # Stopped on the shoulder, not in the ego's lane: a parked car.
    assert _classify(np.tile([9.0, -6.5], (len(WINDOW_S), 1)), ego) == OTHER


def test_passing_is_overtake_both_ways() -> None:
    assert _classify(_line((-20.0, -3.5), (16.0, 0.0)), EGO_10) == OVERTAKE  # it passes the ego
    assert _classify(_line((20.0, -6.0), (4.0, 0.0)), EGO_10) == OVERTAKE  # the ego passes a cyclist
    assert _classify(_line((-60.0, -3.5), (16.0, 0.0)), EGO_10) == OVERTAKE  # closing in from behind


def test_faster_vehicle_ahead_is_pulling_away() -> None:
    assert _classify(_line((30.0, -3.5), (14.0, 0.0)), EGO_10) == PULLING_AWAY


def test_turning_off_is_path_divergence() -> None:
    # A vehicle ahead drives along +x for 2.5 s, then along -y (a right turn) at 6 m/s.
    t = WINDOW_S
    turn_at = 0.5
    x = 25.0 + 6.0 * np.minimum(t, turn_at)
    y = -3.5 - 6.0 * np.maximum(t - turn_at, 0.0)
    assert _classify(np.c_[x, y], _line((0.0, 0.0), (6.0, 0.0))) == PATH_DIVERGENCE
    # The ego turns left while the target keeps straight on: their headings diverge too.
    ego_yaw = np.where(t > 0.5, np.pi / 2, 0.0)
    assert _classify(_line((15.0, -3.5), (6.0, 0.0)), _line((0.0, 0.0), (6.0, 0.0)), ego_yaw) == PATH_DIVERGENCE


def test_crossing_slow_parked_and_short_tracks_are_other() -> None:
    assert _classify(_line((25.0, -30.0), (0.0, 9.0)), EGO_10) == OTHER  # cross traffic
    assert _classify(_line((20.0, -8.0), (0.0, 1.4)), EGO_10) == OTHER  # a pedestrian crossing
    assert _classify(_line((30.0, 10.0), (-1.2, 0.0)), EGO_10) == OTHER  # a pedestrian on the sidewalk
    assert _classify(np.tile([40.0, -6.5], (len(WINDOW_S), 1)), EGO_10) == OTHER  # parked
    target = _line((40.0, 3.5), (-10.0, 0.0))
    target[:-2] = np.nan  # two present frames: no trend
    assert _classify(target, EGO_10) == OTHER


def test_vectorised_equals_one_by_one_and_shapes() -> None:
    targets = np.stack(
        [
            np.c_[_line((40.0, 3.5), (-10.0, 0.0)), np.zeros(len(WINDOW_S))],
            np.c_[_line((15.0, 0.0), (10.0, 0.0)), np.zeros(len(WINDOW_S))],
            np.full((len(WINDOW_S), 3), np.nan),
        ]
    )
    poses = np.broadcast_to(_poses(EGO_10), (3, len(WINDOW_S), 4, 4))
    labels = classify_relations(WINDOW_S, targets, poses)
    assert labels.tolist() == [ONCOMING_PASS, MAINTAIN_STATE, OTHER]
    assert [classify_relation(WINDOW_S, targets[i], poses[i]) for i in range(3)] == labels.tolist()
    assert classify_relations(WINDOW_S, targets[:0], poses[:0]).shape == (0,)
    with pytest.raises(ValueError):
        classify_relations(WINDOW_S, targets, poses[:2])


# ---------------------------------------------------------------------------------------------- per-window truth


def test_truth_known_windows() -> None:
    """The generator's per-window truth on events it placed: the lead car holds its gap in every window, the
    motorcycle passes the ego at its recorded ``t_pass``, the truck turns on its path's arc, oncoming traffic is
    oncoming throughout, background roles are Other."""
    from stridegen.logs.synthetic.scenario import TRUTH_RELATIONS, compose_scene, window_relation

    assert set(TRUTH_RELATIONS) == set(RELATIONS)
    scene = compose_scene(SEED, 1, SECONDS)
    role = {a.scenario: a for a in reversed(scene.agents)}  # the first agent of each role
    lead, moto, truck = role["maintain_state"], role["overtake"], role["path_divergence"]
    assert moto.detection_class == "motorcycle"
    for t0 in np.arange(2.0, 17.0, 0.5):
        assert window_relation(scene, lead, t0 + WINDOW_S) == MAINTAIN_STATE
    t_pass = float(moto.notes["t_pass"])
    assert window_relation(scene, moto, t_pass + WINDOW_S) == OVERTAKE  # the pass is inside the window
    # Well after the pass the faster motorcycle is ahead and getting farther: no longer an overtake.
    assert window_relation(scene, moto, t_pass + 3.0 + WINDOW_S) == PULLING_AWAY
    # The truck's right turn: the arc starts at the path's first piece end; a window centred on the arc's middle.
    straight, arc = truck.trajectory.path.pieces[0][0], truck.trajectory.path.pieces[1][0]
    times = np.arange(0.0, SECONDS, 0.05)
    s = truck.trajectory.state(times)["s"]
    t_mid = float(times[np.argmin(np.abs(s - (straight + arc / 2)))])
    assert window_relation(scene, truck, t_mid + np.array([-2.0, 3.0])) == PATH_DIVERGENCE
    assert window_relation(scene, truck, t_mid + 6.0 + WINDOW_S) == OTHER  # along the cross road, away
    for agent in scene.agents:
        if agent.scenario == "oncoming_pass":
            assert window_relation(scene, agent, 5.0 + WINDOW_S) == ONCOMING_PASS
        if agent.scenario in ("minor_relation", "parked", "static_object"):
            assert window_relation(scene, agent, 5.0 + WINDOW_S) == OTHER


def test_truth_metadata_records_every_keyframe_window() -> None:
    """The truth metadata (written as synthetic_truth.json) holds each agent's relation over the default keyframe
    window at every key frame, clipped to the scene: the same as window_relation over those frames' times."""
    from stridegen.logs.synthetic.scenario import compose_scene, window_relation

    scene = compose_scene(SEED, 1, SECONDS)
    recorded = scene.metadata()["window_relations"]
    assert recorded["window_s"] == [WINDOW_S[0], WINDOW_S[-1]]
    times = np.asarray(recorded["times_s"])
    assert times.tolist() == scene.sample_times.tolist()
    for agent in scene.agents[:8]:
        for k, t0 in enumerate(times.tolist()):
            window = t0 + WINDOW_S
            window = window[(window >= 0) & (window <= times[-1])]
            assert recorded["by_agent"][agent.instance_token][k] == window_relation(scene, agent, window)


def _confusion_table(confusion: dict[str, Counter]) -> str:
    cols = [r for r in RELATIONS if any(c[r] for c in confusion.values())]
    lines = [f"{'truth / labeler':<34}" + "".join(f"{c[:14]:>16}" for c in cols) + f"{'n':>6}{'acc':>7}"]
    for truth in RELATIONS:
        if truth not in confusion:
            continue
        row = confusion[truth]
        n = sum(row.values())
        lines.append(f"{truth:<34}" + "".join(f"{row[c]:>16}" for c in cols) + f"{n:>6}{row[truth] / n:>7.3f}")
    return "\n".join(lines)


def _check(confusion: dict[str, Counter], title: str) -> None:
    print(f"\n{title}\n{_confusion_table(confusion)}")
    for relation in RELATIONS:
        row = confusion[relation]
        n = sum(row.values())
        assert n > 0, f"{title}: no {relation} sample"
        assert row[relation] / n >= FLOOR, f"{title}: {relation} accuracy {row[relation] / n:.3f} < {FLOOR}"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from stridegen.jobs.build import run_build
    from stridegen.logs.synthetic.generator import generate_dataset
    from stridegen.run.config import load_build_config

    base = tmp_path_factory.mktemp("scenario")
    generate_dataset(
        base / "log", progress=False, overwrite=True, scenes=SCENES, seconds=SECONDS, seed=SEED, width=320, height=180
    )
    config = load_build_config(None, ["segmenter.name=projected_box"])
    assert config.detector.name == "oracle"
    result = run_build(base / "log", base / "ds", config)
    assert result.ok, [r.reason for r in result.failed]
    return base


@pytest.mark.slow
def test_group_relations_match_the_per_window_truth(built: Path) -> None:
    """Every spatiotemporal group of the built dataset (oracle detector), labelled as the exporters and
    ``stridegen eval lsr --dataset`` label it (the shard's scenarios table), against the generator's truth over
    the group's keyframe window (the times of the window's frames)."""
    from stridegen.eval.lsr.dataset import scenarios_from_dataset
    from stridegen.logs.synthetic.generator import load_synthetic_truth
    from stridegen.logs.synthetic.scenario import window_relation
    from stridegen.shards.reader import open_dataset

    labels = scenarios_from_dataset(built / "ds")
    confusion: dict[str, Counter] = defaultdict(Counter)
    with open_dataset(built / "ds") as ds:
        for scene in ds:
            truth = load_synthetic_truth(built / "log", scene.name)
            agent_of = {a.instance_token: a for a in truth.agents}
            qa, tracks, gt, stored = scene.qa, scene.tracks, scene.ground_truth, scene.scenarios
            assert qa is not None and gt is not None and stored is not None
            gt_frame, gt_centre = np.asarray(gt.frame_index), np.asarray(gt.center_global)
            stamps = np.asarray(scene.frames.timestamp_us)
            for gid, kf, track in zip(stored.group_id, stored.keyframe_index, stored.track_index, strict=True):
                # The oracle's track centres are the annotations' centres: link the track by its first frame.
                f = int(np.flatnonzero(tracks.present[track])[0])
                rows = np.flatnonzero(gt_frame == f)
                gap = np.linalg.norm(gt_centre[rows] - tracks.center_global[track, f], axis=1)
                assert gap.min() < 1e-6
                agent = agent_of[str(gt.instance_token[rows[int(gap.argmin())]])]
                window = np.asarray(scene.keyframes.window[kf])
                times = np.array([truth.time_s(stamps[i]) for i in window[window >= 0]])
                confusion[window_relation(truth, agent, times)][labels[str(gid)]] += 1
    assert sum(sum(c.values()) for c in confusion.values()) == len(labels) > 0
    _check(confusion, f"spatiotemporal groups of the built dataset ({SCENES} scenes, seed {SEED})")


@pytest.mark.slow
def test_truth_track_relations_match_the_per_window_truth() -> None:
    """Every agent at every keyframe window (t0 = 2 .. 16.5 s every 0.5 s) in which it stays within the
    annotation range, from the analytic positions at the window's frames and ego poses."""
    from stridegen.logs.synthetic.scenario import compose_scene, window_relation

    confusion: dict[str, Counter] = defaultdict(Counter)
    for index in range(SCENES):
        scene = compose_scene(SEED, index, SECONDS)
        for t0 in np.arange(2.0, SECONDS - 3.0, 0.5):
            times = t0 + WINDOW_S
            poses = np.stack([scene.ego_pose(t) for t in times])
            centre = np.stack([scene.agent_states(t).center for t in times], axis=1)  # [A, N, 3]
            near = np.linalg.norm(centre[..., :2] - poses[None, :, :2, 3], axis=-1) <= ANNOTATION_RANGE_M
            keep = np.flatnonzero(near.all(axis=1))
            labels = classify_relations(times, centre[keep], np.broadcast_to(poses, (keep.size, *poses.shape)))
            for agent, label in zip(keep.tolist(), labels.tolist(), strict=True):
                confusion[window_relation(scene, scene.agents[agent], times)][label] += 1
    _check(confusion, f"generator truth tracks, every keyframe window ({SCENES} scenes, seed {SEED})")
