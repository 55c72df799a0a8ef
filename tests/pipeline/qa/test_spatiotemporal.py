"""Spatiotemporal QA generator: analytic scenes, independent re-derivation, skips, LSR round trip, phrasing."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stridegen.core.angles import clock_direction
from stridegen.core.errors import ConfigError
from stridegen.core.transforms import invert_transform, make_transform, transform_points, yaw_to_quat
from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.eval.lsr.answer_parser import parse_answer
from stridegen.eval.lsr.answer_values import Parsed
from stridegen.eval.lsr.evaluate import evaluate
from stridegen.eval.lsr.items import items_from_records
from stridegen.eval.lsr.tolerance import PAPER, STRIDEQA_BENCH
from stridegen.pipeline.attributes import SceneTracks, extract_attributes
from stridegen.pipeline.qa.base import CATEGORY_SPATIOTEMPORAL, Phrasebook
from stridegen.pipeline.qa.spatiotemporal import generate_spatiotemporal_qa, spatiotemporal_scene_generator
from stridegen.pipeline.qa.spatiotemporal_inputs import TemporalQAConfig, TemporalTargets, frames_at_times
from stridegen.pipeline.qa.spatiotemporal_records import lsr_records, question_id_of
from stridegen.pipeline.qa.templates_temporal import ANSWER_SET, ANSWERS, QUESTIONS, seconds_word

DT = 0.5  # 2 Hz frames
# Front camera 1.5 m ahead of the ego origin, 1.5 m up, looking along ego +x; 1600 x 900 image, fx = 800 px,
# so the horizontal field of view is +/- 45 degrees.
T_EGO_FROM_CAM = np.eye(4)
T_EGO_FROM_CAM[:3, :3] = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
T_EGO_FROM_CAM[:3, 3] = [1.5, 0.0, 1.5]
K = np.array([[800.0, 0.0, 800.0], [0.0, 800.0, 450.0], [0.0, 0.0, 1.0]])
WIDTH, HEIGHT = 1600, 900


def _tracks(center_global, present, ego_xy, ego_yaw, times=None):
    center_global = np.asarray(center_global, dtype=np.float64)
    n_tracks, n_frames = center_global.shape[:2]
    times = DT * np.arange(n_frames) if times is None else np.asarray(times, dtype=np.float64)
    ego_pos = np.column_stack([np.asarray(ego_xy, dtype=np.float64), np.zeros(n_frames)])
    poses = make_transform(yaw_to_quat(np.asarray(ego_yaw, dtype=np.float64)), ego_pos)
    present = np.asarray(present, dtype=bool)
    center = np.where(present[..., None], center_global, np.nan)
    return SceneTracks(
        track_id=np.array([f"t{i}" for i in range(n_tracks)], dtype=object),
        label=np.array(["car"] * n_tracks, dtype=object),
        times_s=times,
        present=present,
        center_global=center,
        size_lwh=np.where(present[..., None], np.array([4.0, 2.0, 1.6]), np.nan),
        yaw_global=np.where(present, 0.0, np.nan),
        score=np.where(present, 1.0, np.nan),
        T_global_from_ego=poses,
    )


def _targets(track_index, region_id=None, scene="scene-a", keyframe_index=7, classes=None):
    track_index = np.asarray(track_index, dtype=np.int64)
    region_id = np.arange(track_index.size) if region_id is None else np.asarray(region_id)
    classes = ["vehicle"] * track_index.size if classes is None else classes
    return TemporalTargets(
        scene=scene,
        keyframe_index=keyframe_index,
        channel="CAM_FRONT",
        region_id=region_id,
        track_index=track_index,
        object_class=np.array(classes, dtype=object),
        T_ego_from_cam=T_EGO_FROM_CAM,
        intrinsic=K,
        width=WIDTH,
        height=HEIGHT,
    )


def _by_predicate(items, group_id):
    return {it.predicate: it for it in items if it.group_id == group_id}


# ============================================================================================ analytic scenes


def _straight_scene(world_yaw=0.0, n_frames=20):
    """Ego drives at 10 m/s along its heading; the target drives at (6, -2) m/s (ego-aligned axes).

    Relative to the ego at time s: (50 - 4 s, 10 - 2 s). The keyframe is s = 5 (frame 10), so at horizon h the
    target is at (30 - 4 h, -2 h) in the ego frame of that time. The whole world is rotated by ``world_yaw``
    about the global origin, which must not change any answer.
    """
    s = DT * np.arange(n_frames)
    c, w = math.cos(world_yaw), math.sin(world_yaw)
    rot = np.array([[c, -w], [w, c]])
    ego_xy = (np.column_stack([10.0 * s, np.zeros_like(s)]) + [100.0, 200.0]) @ rot.T
    tgt_xy = (np.column_stack([50.0 + 6.0 * s, 10.0 - 2.0 * s]) + [100.0, 200.0]) @ rot.T
    center = np.concatenate([tgt_xy, np.full((n_frames, 1), 0.8)], axis=1)[None]
    return _tracks(center, np.ones((1, n_frames), bool), ego_xy, np.full(n_frames, world_yaw))


@pytest.mark.parametrize("world_yaw", [0.0, math.pi / 2, -2.5])
def test_straight_line_known_answers(world_yaw):
    tracks = _straight_scene(world_yaw)
    attrs = extract_attributes(tracks)
    items, skips = generate_spatiotemporal_qa(attrs, tracks.times_s, 10, _targets([0], [4]), np.random.default_rng(0))
    assert skips == {}
    assert len(items) == 13
    got = _by_predicate(items, "scene-a/k007/CAM_FRONT/r4")
    # distances hypot(30 - 4h, 2h): 30, sqrt(680), sqrt(500), sqrt(360); bearings atan2(-2h, 30 - 4h)
    assert got["ego_distance_data"].gt_value == 30.0
    assert got["target_bearing_angle_data"].gt_value == 0.0
    expected = {1: (26.08, -4.0), 2: (22.36, -10.0), 3: (18.97, -18.0)}
    for h, (dist, deg) in expected.items():
        item = got[f"ego_distance_data_4d_t{h}"]
        assert (item.gt_value, item.gt_extra) == (dist, {"direction": deg})
        assert (item.unit, item.horizon_s) == ("m", h)
    for name in ("target_speed_data", *(f"target_speed_data_4d_t{h}" for h in (1, 2, 3))):
        assert got[name].gt_value == 6.32 and got[name].unit == "m/s"  # |(6, -2)| = 6.3246
    for name in ("ego_speed_data", *(f"ego_speed_data_4d_t{h}" for h in (1, 2, 3))):
        assert got[name].gt_value == 10.0 and "10.00 m/s" in got[name].answer
    assert "30.00 m" in got["ego_distance_data"].answer
    assert "-18 degrees" in got["ego_distance_data_4d_t3"].answer
    assert all(it.out_of_view == 0 for it in items)  # within +/- 18 degrees, 19-30 m ahead


def test_partial_group_keeps_the_horizons_the_clip_covers():
    """The clip ends at 7 s (frame 14): from the keyframe at 5 s the +3 s frame is missing. The t = 0, 1, 2 s
    questions are asked with the full clip's answers and marked; with keep_partial_groups off the group is
    skipped as before."""
    short = _straight_scene(n_frames=15)
    attrs = extract_attributes(short)
    items, skips = generate_spatiotemporal_qa(attrs, short.times_s, 10, _targets([0], [4]), np.random.default_rng(0))
    assert skips == {} and len(items) == 10
    got = _by_predicate(items, "scene-a/k007/CAM_FRONT/r4")
    assert sorted({it.horizon_s for it in items}) == [0, 1, 2] and not any(p.endswith("_t3") for p in got)
    assert all(it.gt_extra.get("missing_horizons") == [3] for it in items)
    assert got["ego_distance_data"].gt_value == 30.0 and got["ego_distance_data"].gt_extra == {"missing_horizons": [3]}
    for h, (dist, deg) in {1: (26.08, -4.0), 2: (22.36, -10.0)}.items():  # as on the 20-frame clip
        item = got[f"ego_distance_data_4d_t{h}"]
        assert (item.gt_value, item.gt_extra) == (dist, {"direction": deg, "missing_horizons": [3]})
        assert got[f"target_speed_data_4d_t{h}"].gt_value == 6.32 and got[f"ego_speed_data_4d_t{h}"].gt_value == 10.0
    full, _ = generate_spatiotemporal_qa(
        extract_attributes(_straight_scene()), DT * np.arange(20), 10, _targets([0], [4]), np.random.default_rng(0)
    )
    full_by = _by_predicate(full, "scene-a/k007/CAM_FRONT/r4")
    assert {p: it.gt_value for p, it in got.items()} == {p: full_by[p].gt_value for p in got}
    whole = TemporalQAConfig(keep_partial_groups=False)
    items, skips = generate_spatiotemporal_qa(
        attrs, short.times_s, 10, _targets([0], [4]), np.random.default_rng(0), whole
    )
    assert items == [] and skips == {"frame_missing": 1}


def test_partial_groups_are_scored_per_horizon_and_left_out_of_tlc_and_mlsr():
    """The toolkit fills a missing horizon with a failure (``fillna(False)`` in ``compute_tlc_mlsr``): a partial
    group would be inconsistent whatever the answers. Ours leaves it out of TLC / MLSR and scores its slots."""
    full, _ = generate_spatiotemporal_qa(
        extract_attributes(_straight_scene()), DT * np.arange(20), 10, _targets([0], [4]), np.random.default_rng(0)
    )
    short = _straight_scene(n_frames=13)  # ends at 6 s: from 5 s only t = 0 and 1
    part, _ = generate_spatiotemporal_qa(
        extract_attributes(short), short.times_s, 10, _targets([0], [4], keyframe_index=8), np.random.default_rng(0)
    )
    assert {it.horizon_s for it in part} == {0, 1} and part[0].gt_extra["missing_horizons"] == [2, 3]
    records = lsr_records(full + part, scenario_of=lambda gid: "following")
    assert {r.group_id for r in records if r.partial_group} == {"scene-a/k008/CAM_FRONT/r4"}
    assert not any(r.partial_group for r in records if r.group_id.startswith("scene-a/k007"))
    exact = {question_id_of(it): it.answer for it in full + part}
    wrong_partial = {**exact, **{question_id_of(it): "0 m at 90 degrees, 0 m/s" for it in part}}
    for profile in (PAPER, STRIDEQA_BENCH):
        for preds, lsr_t0 in ((exact, 1.0), (wrong_partial, 0.5)):
            result = evaluate(items_from_records(records, preds, profile)[0], profile)
            overall = result.temporal_consistency[0]
            assert (overall["TLC"], overall["MLSR"]) == (1.0, 1.0)  # the complete group alone
            assert result.counts["consistency_groups"] == 1 and result.counts["partial_groups"] == 1
            lsr = {row["time"]: (row["success_rate"], row["sample_size"]) for row in result.success_rates["lsr"]}
            assert lsr[0] == (lsr_t0, 2) and lsr[1] == (lsr_t0, 2) and lsr[3] == (1.0, 1)
    # without the flag (an official file, or records of other origin) the toolkit's rule holds: a failure
    plain = [dataclasses.replace(r, partial_group=False) for r in records]
    result = evaluate(items_from_records(plain, exact, PAPER)[0], PAPER)
    assert result.temporal_consistency[0]["TLC"] == 0.5 and "partial_groups" not in result.counts


def test_partial_group_flag_in_records_jsonl(tmp_path):
    from stridegen.core.errors import PredictionFormatError
    from stridegen.eval.lsr.data import read_records_jsonl

    path = tmp_path / "records.jsonl"
    base = '{"question_id": "q", "group_id": "g", "horizon_s": 0, "dimension": "target_distance", "gt_value": 5'
    path.write_text(base + ', "partial_group": true}\n' + base.replace('"q"', '"r"') + "}\n")
    assert [r.partial_group for r in read_records_jsonl(str(path))] == [True, False]
    path.write_text(base + ', "partial_group": "yes"}\n')
    with pytest.raises(PredictionFormatError, match="line 1: partial_group must be true or false"):
        read_records_jsonl(str(path))


def _turning_scene(n_frames=20, yaw_rate_deg=10.0):
    """Ego parked at the origin turning left at ``yaw_rate_deg`` per second; a static target at (20, 0) global."""
    s = DT * np.arange(n_frames)
    center = np.tile([20.0, 0.0, 0.8], (1, n_frames, 1))
    return _tracks(center, np.ones((1, n_frames), bool), np.zeros((n_frames, 2)), np.radians(yaw_rate_deg * s))


def test_direction_uses_the_ego_pose_at_each_horizon_and_target_leaves_the_camera():
    tracks = _turning_scene()
    attrs = extract_attributes(tracks)
    # keyframe s = 3 (frame 6): ego yaw 30, 40, 50, 60 degrees at t = 0..3 -> the target is at -30 .. -60 degrees
    items, skips = generate_spatiotemporal_qa(attrs, tracks.times_s, 6, _targets([0]), np.random.default_rng(1))
    assert skips == {}
    got = _by_predicate(items, "scene-a/k007/CAM_FRONT/r0")
    assert got["target_bearing_angle_data"].gt_value == -30.0
    assert [got[f"ego_distance_data_4d_t{h}"].gt_extra["direction"] for h in (1, 2, 3)] == [-40.0, -50.0, -60.0]
    assert got["ego_distance_data"].gt_value == 20.0
    assert all(got[f"ego_distance_data_4d_t{h}"].gt_value == 20.0 for h in (1, 2, 3))
    assert got["target_speed_data_4d_t2"].gt_value == 0.0 and got["ego_speed_data_4d_t3"].gt_value == 0.0
    # camera half field of view 45 degrees (seen from the camera 1.5 m ahead the angle is a bit larger):
    # in view at t = 0, 1; out of view at t = 2, 3. Every item of a horizon carries that horizon's flag.
    flags = {h: {it.out_of_view for it in items if it.horizon_s == h} for h in (0, 1, 2, 3)}
    assert flags == {0: {0}, 1: {0}, 2: {1}, 3: {1}}


@pytest.mark.parametrize(("x_global", "flags"), [(77.0, [0, 0, 0, 1]), (72.0, [0, 0, 1, 1])])
def test_target_passed_by_the_ego_leaves_the_view(x_global, flags):
    n = 20
    s = DT * np.arange(n)
    # ego drives at 10 m/s past a parked target (centre 0.8 m up, camera 1.5 m up). x = 77: 27, 17, 7 m ahead,
    # then 3 m behind. x = 72: at t = 2 it is 2 m ahead, 0.5 m in front of the camera, and projects below the
    # image (v = 450 + 800 * 0.7 / 0.5 = 1570 px > 900); at t = 3 it is behind.
    center = np.tile([x_global, 0.5, 0.8], (1, n, 1))
    tracks = _tracks(center, np.ones((1, n), bool), np.column_stack([10.0 * s, np.zeros(n)]), np.zeros(n))
    items, _ = generate_spatiotemporal_qa(
        extract_attributes(tracks), tracks.times_s, 10, _targets([0]), np.random.default_rng(2)
    )
    got = _by_predicate(items, "scene-a/k007/CAM_FRONT/r0")
    assert [got["ego_distance_data"].out_of_view] + [
        got[f"ego_distance_data_4d_t{h}"].out_of_view for h in (1, 2, 3)
    ] == flags
    if x_global == 77.0:
        assert got["ego_distance_data_4d_t3"].gt_extra["direction"] == 171.0  # atan2(0.5, -3) = 170.54 degrees
        assert got["ego_distance_data_4d_t3"].gt_value == 3.04  # hypot(-3, 0.5)


# ============================================================================================ skips


def test_target_disappearing_at_plus_two_seconds_is_skipped_and_counted():
    tracks = _straight_scene()
    two = _tracks(
        np.concatenate([tracks.center_global, tracks.center_global + [0.0, 3.0, 0.0]]),
        np.ones((2, 20), bool),
        tracks.T_global_from_ego[:, :2, 3],
        np.zeros(20),
    )
    two.present[1, 14] = False  # keyframe frame 10 + 2 s
    two.center_global[1, 14] = np.nan
    items, skips = generate_spatiotemporal_qa(
        extract_attributes(two), two.times_s, 10, _targets([0, 1]), np.random.default_rng(0)
    )
    assert skips == {"target_absent": 1}
    assert {it.group_id for it in items} == {"scene-a/k007/CAM_FRONT/r0"}
    assert len(items) == 13


def test_velocity_unknown_and_missing_frames_are_counted():
    tracks = _straight_scene()
    present = np.ones((1, 20), bool)
    present[0, [15, 17]] = False  # frame 16 (t = +3 s) seen alone: present but no velocity
    lone = _tracks(tracks.center_global, present, tracks.T_global_from_ego[:, :2, 3], np.zeros(20))
    items, skips = generate_spatiotemporal_qa(
        extract_attributes(lone), lone.times_s, 10, _targets([0]), np.random.default_rng(0)
    )
    assert items == [] and skips == {"target_velocity_unknown": 1}
    # keyframe too late for its +1..+3 s frames (whole group skipped only with keep_partial_groups off), and too
    # early for its -1.5 s context frame (always skipped)
    attrs = extract_attributes(tracks)
    whole = TemporalQAConfig(keep_partial_groups=False)
    for kf in (18, 2):
        items, skips = generate_spatiotemporal_qa(
            attrs, tracks.times_s, kf, _targets([0]), np.random.default_rng(0), whole
        )
        assert items == [] and skips == {"frame_missing": 1}
    items, skips = generate_spatiotemporal_qa(attrs, tracks.times_s, 2, _targets([0]), np.random.default_rng(0))
    assert items == [] and skips == {"frame_missing": 1}
    items, skips = generate_spatiotemporal_qa(attrs, tracks.times_s, 18, _targets([0]), np.random.default_rng(0))
    assert skips == {} and [it.horizon_s for it in items] == [0, 0, 0, 0]
    assert all(it.gt_extra == {"missing_horizons": [1, 2, 3]} for it in items)


def test_frames_are_matched_within_the_tolerance():
    times = np.array([0.0, 0.49, 1.04, 1.5, 2.15])
    got = frames_at_times(times, np.array([0.5, 1.0, 2.0, 0.25, 1.5]), 0.1)
    # 0.5 -> 0.49; 1.0 -> 1.04; 2.0 has nothing within 0.1 s (2.15); 0.25 is 0.24-0.25 away; 1.5 exact
    assert got.tolist() == [1, 2, -1, -1, 3]
    assert frames_at_times(np.array([0.0, 0.2]), np.array([0.1]), 0.1).tolist() == [0]  # tie: the earlier frame


def test_thresholds_and_out_of_view_policy():
    tracks = _turning_scene()
    attrs = extract_attributes(tracks)
    _, skips = generate_spatiotemporal_qa(
        attrs, tracks.times_s, 6, _targets([0]), np.random.default_rng(0), TemporalQAConfig(skip_out_of_view=True)
    )
    assert skips == {"target_out_of_view": 1}
    _, skips = generate_spatiotemporal_qa(
        attrs, tracks.times_s, 6, _targets([0]), np.random.default_rng(0), TemporalQAConfig(min_target_speed_mps=0.5)
    )
    assert skips == {"target_too_slow": 1}
    _, skips = generate_spatiotemporal_qa(
        attrs, tracks.times_s, 6, _targets([0]), np.random.default_rng(0), TemporalQAConfig(min_distance_m=25.0)
    )
    assert skips == {"target_too_close": 1}
    straight = _straight_scene()  # 30.0 m at t = 0, 18.97 m at t = 3: too close only at the last horizon
    _, skips = generate_spatiotemporal_qa(
        extract_attributes(straight),
        straight.times_s,
        10,
        _targets([0]),
        np.random.default_rng(0),
        TemporalQAConfig(min_distance_m=20.0),
    )
    assert skips == {"target_too_close": 1}


def test_out_of_view_at_the_image_edges():
    from stridegen.pipeline.qa.spatiotemporal_inputs import out_of_view_flags

    def ego_point(u, v, depth):  # pixel (u, v) at a depth in front of the test camera, in the ego frame
        x_cam, y_cam = (u - 800.0) * depth / 800.0, (v - 450.0) * depth / 800.0
        return [depth + 1.5, -x_cam, 1.5 - y_cam]

    pts = np.array(
        [
            ego_point(0.0, 450.0, 10.0),
            ego_point(-0.5, 450.0, 10.0),
            ego_point(1599.5, 450.0, 10.0),
            ego_point(1600.5, 450.0, 10.0),
            ego_point(800.0, 0.0, 10.0),
            ego_point(800.0, -0.5, 10.0),
            ego_point(800.0, 899.5, 10.0),
            ego_point(800.0, 900.5, 10.0),
            ego_point(800.0, 450.0, 0.05),
            ego_point(800.0, 450.0, -3.0),
        ]
    )
    flags = out_of_view_flags(pts, T_EGO_FROM_CAM, K, WIDTH, HEIGHT)
    assert flags.tolist() == [False, True, False, True, False, True, False, True, True, True]


@pytest.mark.parametrize(
    "bad",
    [
        {"horizons_s": (4,)},
        {"horizons_s": (0, 1)},
        {"horizons_s": (1, 1)},
        {"time_tolerance_s": 0.0},
        {"min_distance_m": -1.0},
        {"context_offsets_s": ()},
        {"horizons_s": (1.5,)},
    ],
)
def test_bad_config_is_rejected(bad):
    with pytest.raises(ConfigError):
        TemporalQAConfig(**bad)


def test_config_accepts_lists_from_yaml():
    cfg = TemporalQAConfig(context_offsets_s=[-1.0, 0.0], horizons_s=[1, 2])
    assert cfg.context_offsets_s == (-1.0, 0.0) and cfg.horizons_s == (1, 2)
    assert len(cfg.predicates) == 4 + 3 * 2


def test_bad_targets_are_rejected():
    tracks = _straight_scene()
    with pytest.raises(ValueError, match="track_index"):
        generate_spatiotemporal_qa(
            extract_attributes(tracks), tracks.times_s, 10, _targets([3]), np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="repeated region"):
        _targets([0, 0], region_id=[1, 1])


# ============================================================================================ structure


def _random_scene_items(seed=0, n_tracks=6):
    rng = np.random.default_rng(seed)
    n = 24
    s = DT * np.arange(n)
    p0 = rng.uniform([10.0, -15.0, 0.5], [40.0, 15.0, 1.0], (n_tracks, 3))
    v = np.concatenate([rng.uniform(-4.0, 4.0, (n_tracks, 2)), np.zeros((n_tracks, 1))], axis=1)
    center = p0[:, None] + v[:, None] * s[None, :, None] + np.array([4.0 * s, np.zeros(n), np.zeros(n)]).T
    tracks = _tracks(center, np.ones((n_tracks, n), bool), np.column_stack([4.0 * s, 0.3 * s]), np.full(n, 0.05))
    targets = _targets(
        np.arange(n_tracks), region_id=rng.permutation(n_tracks), classes=["vehicle", "pedestrian"] * (n_tracks // 2)
    )
    return tracks, targets


def test_groups_have_13_items_with_the_official_categories():
    tracks, targets = _random_scene_items()
    items, skips = generate_spatiotemporal_qa(
        extract_attributes(tracks), tracks.times_s, 12, targets, np.random.default_rng(5)
    )
    assert skips == {}
    groups = {it.group_id for it in items}
    assert len(groups) == len(targets) and len(items) == 13 * len(targets)
    for gid in groups:
        group = [it for it in items if it.group_id == gid]
        assert sorted(it.predicate for it in group) == sorted(QA_CATEGORIES)
        assert all(it.horizon_s == QA_CATEGORIES[it.predicate][0] for it in group)
        assert all(it.category == CATEGORY_SPATIOTEMPORAL for it in group)
        assert all(it.frame_indices == (9, 10, 11, 12) for it in group)  # t = -1.5 .. 0 s at 2 Hz
        assert len({(it.region_ids, it.track_indices, it.object_class) for it in group}) == 1
        region = group[0].region_ids[0]
        assert gid == f"scene-a/k007/CAM_FRONT/r{region}"
        assert group[0].track_indices == (int(targets.track_index[targets.region_id == region][0]),)
        assert all(f"Region [{region}]" in it.question for it in group if not it.predicate.startswith("ego_speed"))
    assert len({question_id_of(it) for it in items}) == len(items)


def test_same_seed_same_items_other_seed_other_phrasing():
    tracks, targets = _random_scene_items()
    attrs = extract_attributes(tracks)
    a, _ = generate_spatiotemporal_qa(attrs, tracks.times_s, 12, targets, np.random.default_rng(7))
    b, _ = generate_spatiotemporal_qa(attrs, tracks.times_s, 12, targets, np.random.default_rng(7))
    c, _ = generate_spatiotemporal_qa(attrs, tracks.times_s, 12, targets, np.random.default_rng(8))
    assert a == b
    assert [(it.gt_value, it.gt_extra) for it in a] == [(it.gt_value, it.gt_extra) for it in c]
    assert [(it.question, it.answer) for it in a] != [(it.question, it.answer) for it in c]


@pytest.mark.parametrize(
    ("deg", "clock", "side"),
    [
        (0.0, "12 o'clock", "dead ahead"),
        (-35.0, "1 o'clock", "35 degrees to the right"),
        (-45.0, "2 o'clock", "45 degrees to the right"),
        (90.0, "9 o'clock", "90 degrees to the left"),
        (-90.0, "3 o'clock", "90 degrees to the right"),
        (180.0, "6 o'clock", "directly behind"),
        (164.0, "7 o'clock", "164 degrees to the left"),
        (14.0, "12 o'clock", "14 degrees to the left"),
    ],
)
def test_direction_words(deg, clock, side):
    from stridegen.pipeline.qa.spatiotemporal import _direction_slots

    assert _direction_slots(deg) == (f"{deg:.0f} degrees", clock, side)
    # the same convention as angles.clock_direction (x = cos, y = sin of the angle)
    rad = math.radians(deg)
    assert f"{int(clock_direction(math.cos(rad), math.sin(rad)))} o'clock" == clock


def test_phrasebook_sizes():
    assert set(QUESTIONS) == set(QA_CATEGORIES) == set(ANSWER_SET)
    assert all(len(q) >= Phrasebook.MIN_QUESTIONS for q in QUESTIONS.values())
    assert all(len(a) >= Phrasebook.MIN_ANSWERS for a in ANSWERS.values())
    assert all(len(set(q)) == len(q) for q in QUESTIONS.values())


# ============================================================================================ answers parse back


def _kind_values(item):
    if item.predicate.startswith("ego_distance_data"):
        out = [("distance", item.gt_value)]
        if "direction" in item.gt_extra:
            out.append(("direction", item.gt_extra["direction"]))
        return out
    if item.predicate == "target_bearing_angle_data":
        return [("direction", item.gt_value)]
    return [("velocity", item.gt_value)]


@settings(max_examples=40, deadline=None)
@given(
    dist=st.floats(0.5, 150.0),
    deg=st.integers(-179, 180),
    speed=st.floats(0.0, 40.0),
    ego=st.floats(0.0, 40.0),
    region=st.integers(0, 30),
)
def test_every_phrasing_reads_back_to_its_truth_with_both_grammars(dist, deg, speed, ego, region):
    """Each question / answer template, filled, parses to the gt with the robust and the official grammar."""
    from stridegen.pipeline.qa.spatiotemporal import _direction_slots

    dist, speed, ego = round(dist, 2), round(speed, 2), round(ego, 2)
    deg_text, clock, side = _direction_slots(float(deg))
    for predicate, answer_set in ANSWER_SET.items():
        h = QA_CATEGORIES[predicate][0]
        is_ego = predicate.startswith("ego_speed")
        slots = {
            "region": f"Region [{region}]",
            "n": h,
            "secs": seconds_word(h),
            "dist": f"{dist:.2f} m",
            "deg": deg_text,
            "clock": clock,
            "side": side,
            "speed": f"{ego if is_ego else speed:.2f} m/s",
        }
        for q in QUESTIONS[predicate]:
            assert "{" not in q.format_map(slots)
        for template in ANSWERS[answer_set]:
            text = template.format_map(slots)
            wanted = {"distance": dist, "direction": float(deg), "velocity": ego if is_ego else speed}
            kinds = (
                ["velocity"]
                if "speed" in predicate
                else (
                    ["direction"]
                    if predicate == "target_bearing_angle_data"
                    else (["distance"] if h == 0 else ["distance", "direction"])
                )
            )
            for kind in kinds:
                for mode in ("robust", "official"):
                    got = parse_answer(text, kind, mode)
                    assert isinstance(got, Parsed), (mode, kind, text, got)
                    assert got.value == pytest.approx(wanted[kind], abs=1e-9), (mode, kind, text)


def test_exact_answers_score_lsr_one():
    tracks, targets = _random_scene_items(seed=3, n_tracks=8)
    items, _ = generate_spatiotemporal_qa(
        extract_attributes(tracks), tracks.times_s, 12, targets, np.random.default_rng(11)
    )
    scenario = {gid: "following" for gid in {it.group_id for it in items}}
    records = lsr_records(items, scenario_of=scenario)
    assert len(records) == 16 * 8  # 13 questions, 3 of which ask two dimensions
    preds = {question_id_of(it): it.answer for it in items}
    for profile in (PAPER, STRIDEQA_BENCH):
        lsr_items, report = items_from_records(records, preds, profile)
        result = evaluate(lsr_items, profile)
        assert report["missing_predictions"] == 0 and result.counts["unparsed"] == {}
        assert result.item_success.all()
        assert [row["success_rate"] for row in result.success_rates["lsr"]] == [1.0] * 5  # t = 0..3 and avg
        overall = result.temporal_consistency[0]
        assert overall["relation"] == "Overall" and overall["TLC"] == 1.0 and overall["MLSR"] == 1.0
        assert set(result.breakdowns["object_class"]) == {"vehicle", "pedestrian"}


def test_lsr_records_fields():
    tracks = _turning_scene()
    items, _ = generate_spatiotemporal_qa(
        extract_attributes(tracks), tracks.times_s, 6, _targets([0]), np.random.default_rng(0)
    )
    records = lsr_records(items, scenario_of=lambda gid: "turning" if gid.endswith("r0") else None)
    by_key = {(r.horizon_s, r.dimension): r for r in records}
    assert len(by_key) == len(records) == 16
    assert by_key[(2, "target_direction")].gt_value == -50.0 and by_key[(2, "target_direction")].unit == "deg"
    assert by_key[(2, "target_distance")].question_id == by_key[(2, "target_direction")].question_id
    assert by_key[(0, "ego_velocity")].unit == "m/s" and by_key[(0, "target_distance")].unit == "m"
    assert by_key[(3, "target_velocity")].out_of_view is True and by_key[(1, "ego_velocity")].out_of_view is False
    assert {r.scenario for r in records} == {"turning"} and {r.object_class for r in records} == {"vehicle"}


# ============================================================================================ re-derivation


def _fd_velocity(pos, times, present, f):
    """Scalar finite difference at frame f (central where both neighbours exist, else one-sided, else None)."""
    if not present[f]:
        return None
    prev_ok = f > 0 and present[f - 1]
    next_ok = f + 1 < len(times) and present[f + 1]
    if not (prev_ok or next_ok):
        return None
    a = f - 1 if prev_ok else f
    b = f + 1 if next_ok else f
    dt = times[b] - times[a]
    return [(pos[b][k] - pos[a][k]) / dt for k in range(3)]


def _nearest_frame(times, want, tol):
    best, best_gap = -1, math.inf
    for f, t in enumerate(times):
        gap = abs(t - want)
        if gap < best_gap:
            best, best_gap = f, gap
    return best if best_gap <= tol + 1e-9 else -1


def _to_ego(pose, p):
    """Global point -> ego frame of a 4x4 pose (x forward, y left), scalar arithmetic."""
    dx, dy, dz = (p[k] - pose[k][3] for k in range(3))
    return [pose[0][k] * dx + pose[1][k] * dy + pose[2][k] * dz for k in range(3)]  # R^T (p - t)


def _scalar_out_of_view(p_ego):
    cam = T_EGO_FROM_CAM.tolist()
    p_cam = _to_ego(cam, p_ego)  # the same inverse rigid transform: ego -> camera
    if p_cam[2] < 0.1:
        return 1
    u = K[0][0] * p_cam[0] / p_cam[2] + K[0][2]
    v = K[1][1] * p_cam[1] / p_cam[2] + K[1][2]
    return int(not (0.0 <= u < WIDTH and 0.0 <= v < HEIGHT))


def _assert_rounded(gt, x, step):
    assert abs(gt - x) <= step / 2 + 1e-7, (gt, x)
    assert abs(gt / step - round(gt / step)) < 1e-6


@st.composite
def _random_scenes(draw):
    n_frames = draw(st.integers(12, 18))
    n_tracks = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    times = DT * np.arange(n_frames) + rng.uniform(-0.04, 0.04, n_frames)
    ego_xy = rng.uniform(-30, 30, (n_frames, 2))
    ego_yaw = rng.uniform(-math.pi, math.pi, n_frames)
    # targets drawn in each frame's ego frame, mostly around the front camera's frustum (in and out of view,
    # above, below, behind), then placed in the global frame
    local = rng.uniform([-10.0, -25.0, -3.0], [45.0, 25.0, 8.0], (n_tracks, n_frames, 3))
    c, w = np.cos(ego_yaw), np.sin(ego_yaw)
    center = np.stack(
        [
            ego_xy[:, 0] + c * local[..., 0] - w * local[..., 1],
            ego_xy[:, 1] + w * local[..., 0] + c * local[..., 1],
            local[..., 2],
        ],
        axis=-1,
    )
    present = rng.random((n_tracks, n_frames)) < draw(st.sampled_from([0.8, 0.95, 1.0]))
    kf = draw(st.one_of(st.integers(3, n_frames - 7), st.integers(0, n_frames - 1)))
    return _tracks(center, present, ego_xy, ego_yaw, times), kf, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_random_scenes())
def test_every_item_rederived_from_raw_tracks(scene):
    tracks, kf, seed = scene
    n_tracks = tracks.num_tracks
    targets = _targets(np.arange(n_tracks), region_id=np.arange(n_tracks)[::-1])
    items, skips = generate_spatiotemporal_qa(
        extract_attributes(tracks), tracks.times_s, kf, targets, np.random.default_rng(seed)
    )
    times = tracks.times_s.tolist()
    poses = tracks.T_global_from_ego.tolist()
    centers = tracks.center_global.tolist()
    present = tracks.present.tolist()
    ego_pos = [[p[0][3], p[1][3], p[2][3]] for p in poses]
    cfg = TemporalQAConfig()
    t0 = times[kf]
    ctx = [_nearest_frame(times, t0 + o, cfg.time_tolerance_s) for o in cfg.context_offsets_s]
    # a horizon without a frame is left out of the group (keep_partial_groups), the others are asked
    by_h = {h: _nearest_frame(times, t0 + h, cfg.time_tolerance_s) for h in (0, 1, 2, 3)}
    horizons = [h for h, f in by_h.items() if f >= 0]
    missing = [h for h, f in by_h.items() if f < 0]
    hf = [by_h[h] for h in horizons]
    expected_skips: dict[str, int] = {}
    expected_groups = set()
    for track in range(n_tracks):
        region = n_tracks - 1 - track
        if min(ctx) < 0 or 0 in missing:
            reason = "frame_missing"
        elif not all(present[track][f] for f in hf):
            reason = "target_absent"
        elif any(_fd_velocity(centers[track], times, present[track], f) is None for f in hf):
            reason = "target_velocity_unknown"
        elif any(math.hypot(*_to_ego(poses[f], centers[track][f])[:2]) < cfg.min_distance_m for f in hf):
            reason = "target_too_close"
        else:
            reason = None
        if reason is not None:
            expected_skips[reason] = expected_skips.get(reason, 0) + 1
            continue
        gid = f"scene-a/k007/CAM_FRONT/r{region}"
        expected_groups.add(gid)
        got = _by_predicate(items, gid)
        assert len(got) == 4 + 3 * (len(horizons) - 1)
        assert all(it.gt_extra.get("missing_horizons") == (missing or None) for it in got.values())
        for h, f in zip(horizons, hf, strict=True):
            p = _to_ego(poses[f], centers[track][f])
            dist = math.hypot(p[0], p[1])
            bearing = math.degrees(math.atan2(p[1], p[0]))
            v = _fd_velocity(centers[track], times, present[track], f)
            ve = _fd_velocity(ego_pos, times, [True] * len(times), f)
            if h == 0:
                d_item, b_item = got["ego_distance_data"], got["target_bearing_angle_data"]
                b_gt = b_item.gt_value
                names = ("target_speed_data", "ego_speed_data")
            else:
                d_item = got[f"ego_distance_data_4d_t{h}"]
                b_gt = d_item.gt_extra["direction"]
                names = (f"target_speed_data_4d_t{h}", f"ego_speed_data_4d_t{h}")
            _assert_rounded(d_item.gt_value, dist, 0.01)
            assert -180.0 < b_gt <= 180.0
            diff = (b_gt - bearing + 180.0) % 360.0 - 180.0
            assert abs(diff) <= 0.5 + 1e-7 and b_gt == round(b_gt)
            _assert_rounded(got[names[0]].gt_value, math.hypot(v[0], v[1]), 0.01)
            _assert_rounded(got[names[1]].gt_value, math.hypot(ve[0], ve[1]), 0.01)
            flag = _scalar_out_of_view(p)
            assert {it.out_of_view for it in got.values() if it.horizon_s == h} == {flag}
        assert all(it.frame_indices == tuple(ctx) for it in got.values())
    assert skips == expected_skips
    assert {it.group_id for it in items} == expected_groups
    assert len(items) == (4 + 3 * (len(horizons) - 1)) * len(expected_groups)


# ============================================================================================ synthetic logs


@pytest.fixture(scope="module")
def synthetic_scene(tmp_path_factory):
    from stridegen.logs import open_log
    from stridegen.logs.synthetic import generate_dataset, load_synthetic_truth
    from stridegen.pipeline.attributes import dense_tracks
    from stridegen.pipeline.detect import make_detector

    root = tmp_path_factory.mktemp("synth_st") / "log"
    generate_dataset(root, scenes=1, seconds=10.0, seed=11, width=160, height=90, progress=False)
    scene = open_log(root).scenes()[0]
    oracle = make_detector("oracle")
    tracks = dense_tracks(
        [oracle.detect(f) for f in scene.frames],
        scene.timestamps_s,
        np.stack([f.T_global_from_ego for f in scene.frames]),
    )
    return scene, tracks, load_synthetic_truth(root, scene.name)


def test_oracle_groups_on_a_synthetic_log_match_the_analytic_truth(synthetic_scene):
    """Distances and bearings equal the generator's analytic truth to the stated rounding; speeds agree within
    the finite-difference bound of docs/attributes.md; the exact answers score LSR = 1."""
    scene, tracks, truth = synthetic_scene
    attrs = extract_attributes(tracks)
    t_rel = [truth.time_s(f.timestamp_us) for f in scene.frames]
    items = []
    for channel in scene.frames[0].camera_channels:
        cal = scene.frames[0].sensors[channel].calibration
        for kf in range(3, len(t_rel) - 6):
            targets = TemporalTargets(
                scene=scene.name,
                keyframe_index=kf,
                channel=channel,
                region_id=np.arange(tracks.num_tracks),
                track_index=np.arange(tracks.num_tracks),
                object_class=tracks.label,
                T_ego_from_cam=cal.T_ego_from_sensor,
                intrinsic=cal.intrinsic,
                width=cal.width,
                height=cal.height,
            )
            items += generate_spatiotemporal_qa(attrs, tracks.times_s, kf, targets, np.random.default_rng(kf))[0]
    assert len({it.group_id for it in items}) > 50
    states = {f: truth.agent_states(t) for f, t in enumerate(t_rel)}
    rows = {f: {str(tok): j for j, tok in enumerate(s.track_id)} for f, s in states.items()}
    bearing0 = {it.group_id: it.gt_value for it in items if it.predicate == "target_bearing_angle_data"}
    checked = 0
    for it in items:
        if it.predicate == "target_bearing_angle_data":
            continue  # checked with its t = 0 distance item
        f = it.frame_indices[-1] + 2 * it.horizon_s  # 2 Hz key frames
        t, state = t_rel[f], states[f]
        j = rows[f][str(tracks.track_id[it.track_indices[0]])]
        if it.predicate.startswith("ego_distance_data"):
            p = transform_points(invert_transform(truth.ego_pose(t)), state.center[j])
            _assert_rounded(it.gt_value, math.hypot(p[0], p[1]), 0.01)
            bearing = math.degrees(math.atan2(p[1], p[0]))
            by_item = it.gt_extra.get("direction", bearing0[it.group_id] if it.horizon_s == 0 else None)
            assert abs((by_item - bearing + 180.0) % 360.0 - 180.0) <= 0.5 + 1e-6
        elif it.predicate.startswith("target_speed_data"):
            agent = truth.agents[int(state.extras["agent_id"][j]) - 1]
            bound = agent.trajectory.max_accel_bound * DT / 2 + 0.005 + 1e-6
            assert abs(it.gt_value - float(np.hypot(*state.velocity[j, :2]))) <= bound
        else:
            true_ego = float(np.hypot(*truth.ego_velocity_global(t)[:2]))
            assert abs(it.gt_value - true_ego) <= truth.ego.max_accel_bound * DT / 2 + 0.005 + 1e-6
        checked += 1
    assert checked > 500
    records = lsr_records(items)
    lsr_items, _ = items_from_records(records, {question_id_of(it): it.answer for it in items}, PAPER)
    assert evaluate(lsr_items, PAPER).item_success.all()


def test_scene_generator_equals_one_image_at_a_time():
    """``spatiotemporal_scene_generator`` (frames and checks once per keyframe, over the targets of all its images)
    gives every image exactly what ``generate_spatiotemporal_qa`` gives it alone, with the same draws: images
    sharing a keyframe, an image without targets, a target absent at a horizon, a keyframe near the clip's end
    (partial groups) and one without its context frames (skipped)."""
    n_frames = 20
    rng = np.random.default_rng(3)
    s = DT * np.arange(n_frames)
    center = np.stack([np.c_[20 + 5 * i + 4 * s, 3 * i - 6 + 0.5 * s, np.zeros(n_frames)] for i in range(4)])
    present = np.ones((4, n_frames), bool)
    present[2, 14:] = False  # track 2 leaves: absent at late horizons
    tracks = _tracks(center, present, np.c_[10 * s, np.zeros(n_frames)], rng.uniform(-0.1, 0.1, n_frames))
    attrs = extract_attributes(tracks)
    images = [
        (10, _targets([0, 2], keyframe_index=1)),
        (10, _targets([1, 3, 2], keyframe_index=1, region_id=[4, 5, 6])),
        (8, _targets([], keyframe_index=0)),
        (8, _targets([3, 0], keyframe_index=0)),
        (17, _targets([1, 2], keyframe_index=2)),  # horizons past the clip's end: partial groups
        (1, _targets([0], keyframe_index=3)),  # no context frame 1.5 s earlier: frame_missing
    ]
    alone_rng, scene_rng = np.random.default_rng(9), np.random.default_rng(9)
    alone = [generate_spatiotemporal_qa(attrs, tracks.times_s, kf, t, alone_rng) for kf, t in images]
    generate = spatiotemporal_scene_generator(attrs, tracks.times_s, images)
    together = [generate(i, scene_rng) for i in range(len(images))]
    assert together == alone
    assert [len(items) for items, _ in alone] == [13, 26, 0, 26, 7, 0]  # 7: t = 0 and +1 s only
    assert alone[0][1] == alone[4][1] == {"target_absent": 1} and alone[5][1] == {"frame_missing": 1}
    assert scene_rng.random() == alone_rng.random()  # the same number of draws
