"""Keyframe sampler: the paper's schedule, short clips, irregular and missing timestamps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.pipeline.keyframes import KeyframeConfig, nearest_within, sample_keyframes


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
