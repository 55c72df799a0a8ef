"""Keyframe sampler: the paper's schedule, short clips, irregular and missing timestamps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stridegen.pipeline.keyframes import (
    KeyframeConfig,
    auto_window,
    frame_spacing,
    nearest_within,
    sample_keyframes,
)


def test_paper_schedule_on_a_20s_clip():
    times = 1_532_402_927.6 + 0.5 * np.arange(40)  # 20 s at 2 Hz, absolute timestamps
    sel = sample_keyframes(times)
    assert [k.time_s for k in sel.keyframes] == [float(t) for t in range(2, 17)]
    assert sel.skipped == []
    k = sel.keyframes[0]
    assert k.offsets_s == (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
    assert k.window == tuple(range(0, 11)) and k.frame_index == 4 and k.complete


def test_short_clip_skips_with_reasons():
    sel = sample_keyframes(0.5 * np.arange(16))  # 7.5 s
    assert [k.time_s for k in sel.keyframes] == [2.0, 3.0, 4.0]
    reasons = dict(sel.skipped)
    assert "window incomplete" in reasons[5.0] and "+3 s" in reasons[5.0]
    assert reasons[9.0] == "clip ends before this time"


def test_irregular_and_missing_timestamps():
    times = 0.5 * np.arange(40) + np.random.default_rng(0).uniform(-0.04, 0.04, 40)
    times = np.delete(times, 14)  # the frame at 7.0 s is missing
    sel = sample_keyframes(times)
    kept = [round(k.time_s) for k in sel.keyframes]
    assert 7 not in kept  # no keyframe at the missing frame
    # windows that need the 7.0 s frame are incomplete: keyframes at 5, 6, 8, 9 (offsets +2, +1, -1, -2)
    assert {round(t) for t, _ in sel.skipped} == {4, 5, 6, 7, 8, 9}
    relaxed = sample_keyframes(times, KeyframeConfig(require_full_window=False))
    k5 = next(k for k in relaxed.keyframes if round(k.time_s) == 5)
    assert None in k5.window and not k5.complete


def test_nearest_within_tolerance_and_ties():
    t = np.array([0.0, 1.0, 2.0])
    assert nearest_within(t, [0.5, 0.94, 1.2, 5.0], 0.1).tolist() == [-1, 1, -1, -1]
    assert nearest_within(t, [0.5], 0.5).tolist() == [0]  # tie -> earlier frame
    assert nearest_within(np.array([]), [1.0], 0.1).tolist() == [-1]


def test_config_validation():
    with pytest.raises(ValueError):
        KeyframeConfig(start_s=5, end_s=4)
    with pytest.raises(ValueError, match="increase"):
        sample_keyframes([0.0, 0.0])
    assert sample_keyframes([]).skipped[0][1] == "clip has no frames"


@given(st.integers(4, 60), st.floats(0.0, 0.04))
@settings(max_examples=40)
def test_windows_are_consistent(n, jitter):
    rng = np.random.default_rng(n)
    times = 0.5 * np.arange(n) + rng.uniform(-jitter, jitter, n)
    sel = sample_keyframes(times)
    rel = times - times[0]
    for k in sel.keyframes:
        assert k.window[k.offsets_s.index(0.0)] == k.frame_index
        for off, idx in zip(k.offsets_s, k.window, strict=True):
            assert abs(rel[idx] - (k.time_s + off)) <= 0.1 + 1e-9
    assert len(sel.keyframes) + len(sel.skipped) == 15


# ============================================================================================ auto schedule

AUTO = KeyframeConfig(schedule="auto")


def _windows(sel):
    return [(k.frame_index, k.window) for k in sel.keyframes]


def test_auto_on_a_20s_2hz_clip_equals_the_paper_schedule():
    times = 1_532_402_927.6 + 0.5 * np.arange(40)  # 20 s at 2 Hz: the clip the fixed defaults are made for
    auto, fixed = sample_keyframes(times, AUTO), sample_keyframes(times)
    assert [k.time_s for k in auto.keyframes] == [float(t) for t in range(2, 17)]  # 2 .. 16 s: 16 + 3 = 19 <= 19.5
    assert _windows(auto) == _windows(fixed) and auto.skipped == fixed.skipped == []
    assert auto.window_offsets_s == fixed.window_offsets_s == tuple(np.arange(-4, 7) * 0.5)
    assert auto.tolerance_s == 0.25 and fixed.tolerance_s == 0.1  # half the 0.5 s frame spacing


def test_auto_on_a_3_3s_15hz_clip_shrinks_the_window():
    times = np.arange(50) / 15.0  # 3.27 s: shorter than the 5 s window
    assert sample_keyframes(times).keyframes == []  # the fixed schedule gets nothing
    plan = auto_window(times, AUTO)
    # 0.5 s step (15 Hz is faster than 2 Hz), tolerance 0.1 s (spacing / 2 = 0.033 is below tolerance_s),
    # L = floor(3.267 / 0.5) = 6 steps: past trimmed to 1.5 s first (3 steps), the future gets the other 3
    assert (plan.step_s, plan.tolerance_s, plan.before_steps, plan.after_steps) == (0.5, 0.1, 3, 3)
    sel = sample_keyframes(times, AUTO)
    assert sel.window_offsets_s == (-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5)
    (k,) = sel.keyframes  # targets 1.5 s .. 3.267 - 1.5 = 1.767 s at 1 Hz: one
    # 1.5 s lies half-way between frames 22 (1.467 s) and 23 (1.533 s): the earlier wins; so do the window's
    # other half-way slots (0.967 s -> 14, 1.967 s -> 29, 2.967 s -> 44)
    assert k.frame_index == 22 and k.window == (0, 7, 14, 22, 29, 37, 44) and sel.skipped == []


def test_auto_on_one_frame_keeps_the_keyframe_alone():
    sel = sample_keyframes(np.array([1_532_402_927.6]), AUTO)
    assert sel.window_offsets_s == (0.0,) and [(k.frame_index, k.window) for k in sel.keyframes] == [(0, (0,))]
    assert sample_keyframes(np.array([1_532_402_927.6])).keyframes == []
    assert sample_keyframes(np.array([]), AUTO).skipped == [(0.0, "clip has no frames")]


@pytest.mark.parametrize(
    ("n_frames", "before", "after", "keyframes"),
    [
        (11, 4, 6, [4]),  # 5.0 s: the full window, once
        (10, 3, 6, [3]),  # 4.5 s: the past is trimmed first (to 1.5 s), the +3 s horizon stays
        (8, 3, 4, [3]),  # 3.5 s: past at its minimum, then the future
        (4, 3, 0, [3]),  # 1.5 s: no future left
        (3, 2, 0, [2]),  # 1.0 s: then the past
        (2, 1, 0, [1]),
        (30, 4, 6, list(range(4, 23, 2))),  # 14.5 s: keyframes 2 .. 11 s (11 + 3 <= 14.5)
    ],
)
def test_auto_shrink_order_at_2hz(n_frames, before, after, keyframes):
    sel = sample_keyframes(0.5 * np.arange(n_frames), AUTO)
    assert sel.window_offsets_s == tuple(np.arange(-before, after + 1) * 0.5)
    assert [k.frame_index for k in sel.keyframes] == keyframes and sel.skipped == []


def test_auto_with_irregular_timestamps():
    # 2 Hz with up to 0.12 s of jitter in a regular pattern: its neighbour gaps have a median of 0.6 s (alone, a
    # 1 Hz clip), over 10 frames the spacing is 0.5 s. The fixed 0.1 s tolerance loses every keyframe, auto's
    # 0.25 s (half the spacing) keeps all 15 (a window frame is at most 0.12 + 0.12 s off its slot)
    jitter = np.tile([0.0, 0.1, -0.1, 0.12, -0.12], 8)
    times = 0.5 * np.arange(40) + jitter
    assert np.median(np.diff(times)) == pytest.approx(0.6) and frame_spacing(times) == pytest.approx(0.5)
    fixed, auto = sample_keyframes(times), sample_keyframes(times, AUTO)
    assert fixed.keyframes == [] and len(fixed.skipped) == 15  # every window has a frame 0.12 s off its slot
    assert auto.tolerance_s == 0.25 and auto.window_offsets_s == fixed.window_offsets_s
    assert [k.frame_index for k in auto.keyframes] == list(range(4, 33, 2)) and auto.skipped == []
    # a dropped frame still makes the windows that need it incomplete
    dropped = sample_keyframes(np.delete(times, 14), AUTO)  # the 7.0 s frame is gone
    assert {round(t) for t, _ in dropped.skipped} == {4, 5, 6, 7, 8, 9}  # offsets +3 .. -2 s, and 7 s itself
    assert all("window incomplete" in r or "no frame within 0.25 s" in r for _, r in dropped.skipped)


def test_auto_caps_the_window_rate_at_the_clip_rate():
    plan = auto_window(np.arange(20.0), AUTO)  # 1 Hz: a window step of 1 s (two 0.5 s steps), tolerance 0.5 s
    assert (plan.step_s, plan.tolerance_s, plan.before_steps, plan.after_steps) == (1.0, 0.5, 2, 3)
    sel = sample_keyframes(np.arange(20.0), AUTO)
    assert sel.window_offsets_s == (-2.0, -1.0, 0.0, 1.0, 2.0, 3.0) and len(sel.keyframes) == 15
    # jitter of a few percent is not a slower clip: 0.52 s median spacing keeps the 2 Hz window
    assert auto_window(0.52 * np.arange(40), AUTO).step_s == 0.5


def test_auto_at_high_rate_is_consistent_with_the_qa_context_frames():
    """At 15 Hz half the window's slots fall half-way between two frames; the QA's context lookup must pick the
    window's frame (ties to the earlier frame, times since the clip start, in both)."""
    from stridegen.pipeline.qa.spatiotemporal_inputs import frames_at_times

    us = 1_600_000_000_123_456 + np.round(np.arange(300) * 1e6 / 15).astype(np.int64)
    times = us * 1e-6
    rel = times - times[0]
    ctx = (-1.5, -1.0, -0.5, 0.0)
    for sel in (sample_keyframes(times, AUTO), sample_keyframes(times[:50], AUTO)):
        assert sel.keyframes
        for k in sel.keyframes:
            window = dict(zip(k.offsets_s, k.window, strict=True))
            assert frames_at_times(rel, rel[k.frame_index] + np.array(ctx), 0.1).tolist() == [window[o] for o in ctx]


@given(st.integers(1, 80), st.sampled_from([2.0, 10.0, 15.0, 1.0]), st.floats(0.0, 0.2))
@settings(max_examples=60, deadline=None)
def test_auto_windows_fit_the_clip(n, hz, jitter_frac):
    rng = np.random.default_rng(n)
    times = np.arange(n) / hz + rng.uniform(-jitter_frac, jitter_frac, n) / hz
    times = np.sort(times)
    assume(n == 1 or np.all(np.diff(times) > 0))
    sel = sample_keyframes(times, AUTO)
    rel = times - times[0]
    assert 0.0 in sel.window_offsets_s and sel.keyframes  # every non-empty clip gets a keyframe
    for k in sel.keyframes:
        assert k.offsets_s == sel.window_offsets_s
        for off, idx in zip(k.offsets_s, k.window, strict=True):
            assert idx is not None and abs(rel[idx] - (k.time_s + off)) <= sel.tolerance_s + 1e-9


# ============================================================================================ config


def test_schedule_is_left_out_of_the_default_dump_and_hash():
    from stridegen.run.config import config_hash, load_build_config

    default = load_build_config()
    assert "schedule" not in default.hashed_dict()["keyframes"]
    assert config_hash(load_build_config(None, ["keyframes.schedule=fixed"])) == config_hash(default)
    auto = load_build_config(None, ["keyframes.schedule=auto"])
    assert auto.hashed_dict()["keyframes"]["schedule"] == "auto" and config_hash(auto) != config_hash(default)
    # overrides are applied to the resolved config: the auto schedule's options survive a second override
    again = load_build_config(None, ["keyframes.schedule=auto", "keyframes.auto_min_before_s=2", "seed=1"])
    assert again.keyframes.auto_min_before_s == 2.0 and again.keyframes.schedule == "auto"


def test_auto_min_before_must_hold_the_context_frames():
    from stridegen.core.errors import ConfigError
    from stridegen.run.config import load_build_config

    with pytest.raises(ConfigError, match=r"auto_min_before_s \(1 s\) is shorter.*at least 1.5"):
        load_build_config(None, ["keyframes.schedule=auto", "keyframes.auto_min_before_s=1"])
    load_build_config(None, ["keyframes.schedule=auto", "keyframes.auto_min_before_s=1", "qa.spatiotemporal=false"])
    load_build_config(None, ["keyframes.auto_min_before_s=1"])  # the fixed schedule does not trim
    with pytest.raises(ConfigError, match="schedule"):
        load_build_config(None, ["keyframes.schedule=sometimes"])
