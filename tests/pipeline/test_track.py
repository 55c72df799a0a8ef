"""Center tracker: PubTracker semantics, the three fixed faults, and agreement with a plain reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.plain_tracker import PlainTracker
from stridegen.core.boxes import Boxes
from stridegen.formats.results_json import LIDAR_ONLY_META
from stridegen.pipeline.track import CenterTracker, TrackerConfig, greedy_match, track_scene
from tests.shared_data import AV2_LOGS as AV2
from tests.shared_data import needs_av2


def dets(rows, frame="global"):
    """rows: (x, y, vx, vy, label, score)."""
    if not rows:
        return Boxes.empty(frame)
    a = np.array([r[:4] for r in rows], dtype=float)
    return Boxes(
        np.c_[a[:, :2], np.zeros(len(rows))],
        np.tile([4.0, 2.0, 1.5], (len(rows), 1)),
        np.zeros(len(rows)),
        a[:, 2:4],
        label=[r[4] for r in rows],
        score=[r[5] for r in rows],
        frame=frame,
    )


def test_velocity_compensation_matches_fast_objects():
    # A car moving 20 m/s: 10 m per 0.5 s, beyond the 4 m gate unless back-projected.
    frames = [dets([(0 + 10 * k, 0, 20, 0, "car", 0.9)]) for k in range(4)]
    out = track_scene(frames, [0.0, 0.5, 1.0, 1.5])
    assert [o.track_id.tolist() for o in out] == [["1"]] * 4
    no_velocity = [dets([(0 + 10 * k, 0, 0, 0, "car", 0.9)]) for k in range(3)]
    out = track_scene(no_velocity, [0.0, 0.5, 1.0])
    assert [o.track_id.tolist() for o in out] == [["1"], ["2"], ["3"]]


def test_class_gate_and_distance_gate():
    out = track_scene([dets([(0, 0, 0, 0, "car", 0.9)]), dets([(0.2, 0, 0, 0, "pedestrian", 0.9)])], [0, 0.5])
    assert out[1].track_id.tolist() == ["2"]  # a pedestrian never continues a car track
    out = track_scene(
        [
            dets([(0, 0, 0, 0, "pedestrian", 0.9)]),
            dets([(1.0, 0, 0, 0, "pedestrian", 0.9)]),
            dets([(2.01, 0, 0, 0, "pedestrian", 0.9)]),
        ],
        [0, 0.5, 1.0],
    )
    assert [o.track_id.tolist() for o in out] == [["1"], ["1"], ["2"]]  # gate 1 m is inclusive


def test_greedy_in_descending_score_order():
    # Two detections compete for one track; the higher score wins even if farther.
    tracker = CenterTracker()
    tracker.step(dets([(0, 0, 0, 0, "car", 0.9)]), 0.0)
    out = tracker.step(dets([(0.5, 0, 0, 0, "car", 0.3), (2.0, 0, 0, 0, "car", 0.8)]), 0.5)
    ids = dict(zip(out.center[:, 0].tolist(), out.track_id.tolist(), strict=True))
    assert ids[2.0] == "1" and ids[0.5] == "2"


def test_greedy_match_known():
    dist = np.array([[1.0, 0.5], [0.2, 3.0]])
    valid = np.ones_like(dist, dtype=bool)
    assert greedy_match(dist, valid).tolist() == [[0, 1], [1, 0]]
    assert greedy_match(dist, np.array([[False, False], [True, False]])).tolist() == [[1, 0]]


def test_empty_frame_does_not_wipe_tracks_and_coasting_is_not_emitted():
    frames = [dets([(0, 0, 10, 0, "car", 0.9)]), dets([]), dets([(10, 0, 10, 0, "car", 0.9)])]
    out = track_scene(frames, [0.0, 0.5, 1.0])
    assert len(out[1]) == 0  # coasting tracks are not emitted
    assert out[2].track_id.tolist() == ["1"]  # same id after the gap (coasted 5 m, then back-projected)


def test_max_age_drops_old_tracks():
    # A track that missed two frames can still be matched; after three misses it is gone.
    car = dets([(0, 0, 0, 0, "car", 0.9)])
    out = track_scene([car, dets([]), dets([]), car], [0.0, 0.5, 1.0, 1.5], TrackerConfig(max_age=3))
    assert out[3].track_id.tolist() == ["1"]
    out = track_scene([car, dets([]), dets([]), dets([]), car], [0.0, 0.5, 1.0, 1.5, 2.0], TrackerConfig(max_age=3))
    assert out[4].track_id.tolist() == ["2"]


def test_only_untracked_classes_do_not_crash():
    frames = [dets([(0, 0, 0, 0, "car", 0.9)]), dets([(5, 5, 0, 0, "barrier", 0.9)]), dets([(0, 0, 0, 0, "car", 0.9)])]
    out = track_scene(frames, [0.0, 0.5, 1.0])
    assert len(out[1]) == 0 and out[2].track_id.tolist() == ["1"]


def test_hungarian_keeps_distance_rejected_tracks():
    # Frame 2: one detection far from track 1 (rejected by the gate), near nothing. Track 1 must survive.
    cfg = TrackerConfig(matching="hungarian")
    frames = [
        dets([(0, 0, 0, 0, "car", 0.9)]),
        dets([(50, 0, 0, 0, "car", 0.9)]),
        dets([(0, 0, 0, 0, "car", 0.9), (50, 0, 0, 0, "car", 0.8)]),
    ]
    out = track_scene(frames, [0.0, 0.5, 1.0], cfg)
    ids = dict(zip(out[2].center[:, 0].tolist(), out[2].track_id.tolist(), strict=True))
    assert ids == {0.0: "1", 50.0: "2"}


def test_rejects_wrong_frame_and_bad_timestamps():
    with pytest.raises(ValueError, match="global"):
        CenterTracker().step(dets([(0, 0, 0, 0, "car", 1)], frame="ego"), 0.0)
    with pytest.raises(ValueError, match="increase"):
        track_scene([dets([]), dets([])], [0.0, 0.0])


def random_scene(seed: int, n_frames: int = 12, n_objects: int = 12, empty_prob: float = 0.1):
    rng = np.random.default_rng(seed)
    classes = ["car", "pedestrian", "bicycle", "truck", "barrier"]
    pos = rng.uniform(-40, 40, (n_objects, 2))
    vel = rng.normal(0, 5, (n_objects, 2))
    labels = rng.choice(classes, n_objects)
    frames = []
    for k in range(n_frames):
        rows = []
        if rng.random() > empty_prob:
            for i in range(n_objects):
                if rng.random() < 0.85:
                    p = pos[i] + vel[i] * 0.5 * k + rng.normal(0, 0.3, 2)
                    rows.append(
                        (
                            p[0],
                            p[1],
                            vel[i, 0] + rng.normal(0, 0.5),
                            vel[i, 1] + rng.normal(0, 0.5),
                            str(labels[i]),
                            float(rng.uniform(0.1, 1.0)),
                        )
                    )
        frames.append(rows)
    return frames


@given(st.integers(0, 10_000))
@settings(max_examples=30, deadline=None)
def test_agrees_with_plain_reference(seed):
    frames = random_scene(seed)
    times = [0.5 * k for k in range(len(frames))]
    ours = track_scene([dets(f) for f in frames], times)
    plain = PlainTracker()
    for rows, t, o in zip(frames, times, ours, strict=True):
        ref = plain.step([dict(x=r[0], y=r[1], vx=r[2], vy=r[3], label=r[4], score=r[5]) for r in rows], t)
        got = sorted(zip(o.center[:, 0].round(9).tolist(), o.track_id.tolist(), strict=True))
        want = sorted((round(d["x"], 9), d["id"]) for d in ref)
        assert got == want


@needs_av2
def test_tracker_on_real_av2_tracks(tmp_path):
    import json

    from stridegen.eval.tracking.evaluate import evaluate_log
    from stridegen.logs import open_log
    from tests.tracking_on_truth import tracking_results

    log_dir = AV2 / "adcf7d18-0510-35b0-a2fa-b4cea13a6d76"
    path = tmp_path / "tracks.json"
    path.write_text(json.dumps({"meta": LIDAR_ONLY_META, "results": tracking_results(open_log(log_dir), max_age=3)}))
    result = evaluate_log(log_dir, path).result
    assert result.summary("gt") > 0  # AV2 categories reach the tracking classes
    assert result.summary("recall") > 0.99
    assert result.summary("ids") <= 5 and result.summary("frag") <= 5


def test_loading_the_config_does_not_import_scipy_optimize() -> None:
    """Every command loads the build config, which imports this module for ``TrackerConfig``; scipy.optimize (about
    0.3 s to import) is imported by the assignment itself, on first use."""
    import subprocess
    import sys

    code = (
        "import sys; from stridegen.run.config import load_build_config; load_build_config(None, []); "
        "assert 'scipy.optimize' not in sys.modules; import numpy as np; "
        "from stridegen.pipeline.track import hungarian_match; "
        "m = hungarian_match(np.array([[1.0, 0.1], [0.2, 5.0]]), np.ones((2, 2), bool)); "
        "assert m.tolist() == [[0, 1], [1, 0]], m; assert 'scipy.optimize' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
