"""Keyframe sampler: which frames of a clip become QA keyframes, and each keyframe's temporal window.

STRIDE-QA (arXiv 2508.10427, section 4.2) samples keyframes at 1 Hz from the 2-17 s interval of each ~20 s clip and
gives each a window from 2 s before to 3 s after, at 2 Hz. We read the interval as half-open, [2 s, 17 s): a 20 s
clip sampled at 2 Hz ends at 19.5 s, so a keyframe at 17 s could not have its +3 s frame. Times are relative to
the clip's first frame. Irregular timestamps are matched to the nearest frame within a tolerance; targets with no
frame close enough, or with an incomplete window, are skipped and reported with the reason.

Two schedules (``KeyframeConfig.schedule``, docs/attributes.md "Keyframes"):

- ``fixed`` (default): the configured ``start_s`` / ``end_s`` and window, as above, whatever the clip's length.
- ``auto``: start, end and window derived from the clip (``auto_window``): the configured window (-2..+3 s at
  2 Hz) when the clip is long enough, keyframes at ``rate_hz`` from the first time whose window fits to the last;
  a clip shorter than the window gets a shorter one (past trimmed to ``auto_min_before_s`` first, then the
  future, then the rest of the past) down to the keyframe alone. The window's rate is capped at the clip's frame
  rate and the matching tolerance follows the frame spacing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from stridegen.pipeline.tables import KeyframeWindowRows

# Frames up to 10 % further apart than the window step still count as "at the window's rate" (timestamp jitter,
# e.g. nuScenes' 2 Hz samples); a slower clip gets a window step of a whole multiple of the configured one.
AUTO_RATE_SLACK = 0.1
# Two distances closer than this (seconds) are equal: the earlier frame wins the tie. A sum such as t + 1/3 can
# land an ulp either side of an exact midpoint; with this margin the choice does not depend on that rounding.
TIE_EPS_S = 1e-9

# Fields added after the first release: left out of dumps (and so of the config hash) while at their defaults.
_NEW_FIELDS = ("schedule", "auto_min_before_s")


class KeyframeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rate_hz: float = Field(1.0, gt=0)
    start_s: float = Field(2.0, ge=0)  # fixed schedule only
    end_s: float = 17.0  # exclusive; fixed schedule only
    window_before_s: float = Field(2.0, ge=0)
    window_after_s: float = Field(3.0, ge=0)
    window_rate_hz: float = Field(2.0, gt=0)
    tolerance_s: float = Field(0.1, ge=0)  # nearest frame must be this close to the wanted time
    require_full_window: bool = True
    # "fixed": start_s / end_s and the window as configured; "auto": derived from each clip (module docstring).
    schedule: Literal["fixed", "auto"] = "fixed"
    # auto: a window shrunk for a short clip keeps at least this much past before the future is trimmed (1.5 s:
    # the four context frames -1.5 .. 0 s of STRIDE-QA-Bench's spatiotemporal questions).
    auto_min_before_s: float = Field(1.5, ge=0)

    @model_validator(mode="after")
    def _check(self) -> KeyframeConfig:
        if self.end_s <= self.start_s:
            raise ValueError(f"end_s ({self.end_s}) must be greater than start_s ({self.start_s})")
        return self

    @model_serializer(mode="wrap")
    def _omit_new_defaults(self, handler: Any) -> dict[str, Any]:
        # A config that does not use the auto schedule dumps as it did before it existed (same config hash).
        data: dict[str, Any] = handler(self)
        for name in _NEW_FIELDS:
            if name in data and data[name] == type(self).model_fields[name].default:
                del data[name]
        return data

    @property
    def window_offsets_s(self) -> np.ndarray:
        """Window offsets relative to the keyframe, e.g. -2.0, -1.5, ..., 3.0 (always contains 0). With the auto
        schedule this is the largest window; a clip's own may be shorter or coarser (``auto_window``)."""
        step = 1.0 / self.window_rate_hz
        before = int(np.floor(self.window_before_s / step + 1e-9))
        after = int(np.floor(self.window_after_s / step + 1e-9))
        return np.arange(-before, after + 1) * step


@dataclass(frozen=True)
class Keyframe:
    frame_index: int  # index of the keyframe in the scene's frames
    time_s: float  # the keyframe's time relative to the clip start
    offsets_s: tuple[float, ...]
    window: tuple[int | None, ...]  # frame index per offset; None where no frame is close enough

    @property
    def complete(self) -> bool:
        return all(i is not None for i in self.window)


@dataclass
class KeyframeSelection:
    keyframes: list[Keyframe] = field(default_factory=list)
    skipped: list[tuple[float, str]] = field(default_factory=list)  # (target time, reason)
    # The window offsets every keyframe of this clip uses (the shard's keyframes/offsets_s) and the tolerance the
    # frames were matched with: the configured ones with the fixed schedule, the clip's own with auto.
    window_offsets_s: tuple[float, ...] = ()
    tolerance_s: float = 0.0


@dataclass(frozen=True)
class AutoWindow:
    """What the auto schedule derived for one clip (times relative to its first frame).

    ``step_s``: spacing of the window's offsets; ``tolerance_s``: nearest-frame tolerance; ``before_steps`` /
    ``after_steps``: offsets kept before / after the keyframe; keyframe targets run from ``first_s`` to ``last_s``
    (inclusive) at ``rate_hz``; ``frame_spacing_s``: the clip's frame spacing (``frame_spacing``; None for one
    frame).
    """

    step_s: float
    tolerance_s: float
    before_steps: int
    after_steps: int
    first_s: float
    last_s: float
    frame_spacing_s: float | None

    @property
    def offsets_s(self) -> np.ndarray:
        return np.arange(-self.before_steps, self.after_steps + 1) * self.step_s


def nearest_within(times_s: np.ndarray, targets_s: np.ndarray, tolerance_s: float) -> np.ndarray:
    """Index of the nearest time for each target, -1 where the nearest is farther than the tolerance.

    ``times_s`` must be sorted. Ties (distances within ``TIE_EPS_S``) go to the earlier frame.
    """
    times_s = np.asarray(times_s, dtype=np.float64)
    targets_s = np.asarray(targets_s, dtype=np.float64)
    if times_s.size == 0:
        return np.full(targets_s.shape, -1, dtype=np.int64)
    right = np.clip(np.searchsorted(times_s, targets_s), 0, times_s.size - 1)
    left = np.clip(right - 1, 0, times_s.size - 1)
    pick = np.where(np.abs(times_s[left] - targets_s) <= np.abs(times_s[right] - targets_s) + TIE_EPS_S, left, right)
    return np.where(np.abs(times_s[pick] - targets_s) <= tolerance_s + 1e-9, pick, -1).astype(np.int64)


def frame_spacing(rel_times_s: np.ndarray, lag: int = 10) -> float | None:
    """A clip's typical frame spacing (s), None for fewer than two frames: the smaller of the median gap between
    neighbours and the median of (t[i + m] - t[i]) / m, m = min(lag, frames - 1). The first is not moved by a few
    dropped frames, the second by jitter (a regular pattern of early and late frames can shift the first by the
    jitter's size; over m frames it is divided by m)."""
    rel = np.asarray(rel_times_s, dtype=np.float64)
    if rel.size < 2:
        return None
    m = min(lag, rel.size - 1)
    return float(min(np.median(np.diff(rel)), np.median((rel[m:] - rel[:-m]) / m)))


def _shrunk_steps(available: int, before: int, after: int, min_before: int) -> tuple[int, int]:
    """(past, future) window steps that fit ``available`` steps: the full window if it fits; else the past is
    trimmed down to ``min_before``, then the future down to 0, then the past down to 0 (the keyframe alone)."""
    if available >= before + after:
        return before, after
    if available >= min_before + after:
        return available - after, after
    if available >= min_before:
        return min_before, available - min_before
    return available, 0


def auto_window(rel_times_s: np.ndarray, config: KeyframeConfig) -> AutoWindow:
    """The auto schedule's window, tolerance and keyframe span for a clip with these frame times (seconds since
    its first frame, increasing). Rules (docs/attributes.md, "Keyframes"):

    1. spacing = ``frame_spacing`` (median gap); window step = the configured one (1 / window_rate_hz) times the
       smallest whole m >= spacing / step - AUTO_RATE_SLACK (m = 1 unless the clip is slower than the window);
    2. tolerance = the frame spacing's half, at least ``tolerance_s``, at most half the window step;
    3. the clip spans L = floor(duration / step) window steps; the window keeps the configured past and future
       steps if L allows, else ``_shrunk_steps``;
    4. keyframe targets: from ``past steps * step`` (the first time whose past fits) to
       ``duration - future steps * step`` (the last time whose future fits). A keyframe's frame may lie up to the
       tolerance from its target, and its window's ends then up to the tolerance outside the clip: the first and
       last frames are still close enough.
    """
    rel = np.asarray(rel_times_s, dtype=np.float64)
    duration = float(rel[-1]) if rel.size else 0.0
    base = 1.0 / config.window_rate_hz
    spacing = frame_spacing(rel)
    multiple = 1 if spacing is None else max(1, math.ceil(spacing / base - AUTO_RATE_SLACK))
    step = multiple * base
    tol = min(max(config.tolerance_s, 0.0 if spacing is None else spacing / 2.0), step / 2.0)
    before = int(np.floor(config.window_before_s / step + 1e-9))
    after = int(np.floor(config.window_after_s / step + 1e-9))
    min_before = min(before, math.ceil(config.auto_min_before_s / step - 1e-9))
    available = int(np.floor(duration / step + 1e-9))
    b, a = _shrunk_steps(available, before, after, min_before)
    return AutoWindow(
        step_s=step,
        tolerance_s=tol,
        before_steps=b,
        after_steps=a,
        first_s=b * step,
        last_s=duration - a * step,
        frame_spacing_s=spacing,
    )


def _targets(rel: np.ndarray, config: KeyframeConfig) -> tuple[np.ndarray, np.ndarray, float]:
    """(keyframe target times, window offsets, tolerance) of the configured schedule for this clip."""
    step = 1.0 / config.rate_hz
    if config.schedule == "auto":
        plan = auto_window(rel, config)
        count = int(np.floor((plan.last_s - plan.first_s) / step + 1e-9)) + 1 if plan.last_s >= plan.first_s else 0
        return plan.first_s + step * np.arange(count), plan.offsets_s, plan.tolerance_s
    count = int(np.ceil((config.end_s - config.start_s) / step - 1e-9))
    return config.start_s + step * np.arange(count), config.window_offsets_s, config.tolerance_s


def sample_keyframes(timestamps_s: np.ndarray, config: KeyframeConfig | None = None) -> KeyframeSelection:
    """Choose keyframes and their windows for one clip from its frame timestamps (seconds, any origin)."""
    config = config or KeyframeConfig()
    times = np.asarray(timestamps_s, dtype=np.float64)
    selection = KeyframeSelection(
        window_offsets_s=tuple(config.window_offsets_s.tolist()), tolerance_s=config.tolerance_s
    )
    if times.size == 0:
        selection.skipped.append((config.start_s if config.schedule == "fixed" else 0.0, "clip has no frames"))
        return selection
    if np.any(np.diff(times) <= 0):
        raise ValueError("frame timestamps must increase strictly")
    rel = times - times[0]
    targets, offsets, tol = _targets(rel, config)
    selection.window_offsets_s, selection.tolerance_s = tuple(offsets.tolist()), tol
    key_idx = nearest_within(rel, targets, tol)
    for target, k in zip(targets.tolist(), key_idx.tolist(), strict=True):
        if k < 0:
            reason = "clip ends before this time" if target > rel[-1] + tol else f"no frame within {tol:g} s"
            selection.skipped.append((target, reason))
            continue
        wanted = rel[k] + offsets
        window = nearest_within(rel, wanted, tol)
        missing = offsets[window < 0]
        if missing.size and config.require_full_window:
            selection.skipped.append(
                (target, "window incomplete: no frame at offsets " + ", ".join(f"{o:+g} s" for o in missing))
            )
            continue
        selection.keyframes.append(
            Keyframe(
                frame_index=int(k),
                time_s=float(rel[k]),
                offsets_s=tuple(offsets.tolist()),
                window=tuple(int(i) if i >= 0 else None for i in window.tolist()),
            )
        )
    return selection


def image_frame_indices(keyframes: KeyframeWindowRows, n_frames: int, mode: str) -> list[int]:
    """Which frames' images to store: "windows" (union of the keyframes' windows), "keyframes", "all", "none"."""
    if mode == "all":
        return list(range(n_frames))
    if mode == "none":
        return []
    if mode == "keyframes":
        return sorted({int(i) for i in keyframes.frame_index})
    window = np.asarray(keyframes.window)
    return sorted({int(i) for i in window[window >= 0]} | {int(i) for i in keyframes.frame_index})
