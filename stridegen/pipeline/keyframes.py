"""Keyframe sampler: which frames of a clip become QA keyframes, and each keyframe's temporal window.

STRIDE-QA (arXiv 2508.10427, section 4.2) samples keyframes at 1 Hz from the 2-17 s interval of each ~20 s clip and
gives each a window from 2 s before to 3 s after, at 2 Hz. We read the interval as half-open, [2 s, 17 s): a 20 s
clip sampled at 2 Hz ends at 19.5 s, so a keyframe at 17 s could not have its +3 s frame. Times are relative to
the clip's first frame. Irregular timestamps are matched to the nearest frame within a tolerance; targets with no
frame close enough, or with an incomplete window, are skipped and reported with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class KeyframeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rate_hz: float = Field(1.0, gt=0)
    start_s: float = Field(2.0, ge=0)
    end_s: float = 17.0  # exclusive
    window_before_s: float = Field(2.0, ge=0)
    window_after_s: float = Field(3.0, ge=0)
    window_rate_hz: float = Field(2.0, gt=0)
    tolerance_s: float = Field(0.1, ge=0)  # nearest frame must be this close to the wanted time
    require_full_window: bool = True

    @model_validator(mode="after")
    def _check(self) -> KeyframeConfig:
        if self.end_s <= self.start_s:
            raise ValueError(f"end_s ({self.end_s}) must be greater than start_s ({self.start_s})")
        return self

    @property
    def window_offsets_s(self) -> np.ndarray:
        """Window offsets relative to the keyframe, e.g. -2.0, -1.5, ..., 3.0 (always contains 0)."""
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


def nearest_within(times_s: np.ndarray, targets_s: np.ndarray, tolerance_s: float) -> np.ndarray:
    """Index of the nearest time for each target, -1 where the nearest is farther than the tolerance.

    ``times_s`` must be sorted. Ties go to the earlier frame.
    """
    times_s = np.asarray(times_s, dtype=np.float64)
    targets_s = np.asarray(targets_s, dtype=np.float64)
    if times_s.size == 0:
        return np.full(targets_s.shape, -1, dtype=np.int64)
    right = np.clip(np.searchsorted(times_s, targets_s), 0, times_s.size - 1)
    left = np.clip(right - 1, 0, times_s.size - 1)
    pick = np.where(np.abs(times_s[left] - targets_s) <= np.abs(times_s[right] - targets_s), left, right)
    return np.where(np.abs(times_s[pick] - targets_s) <= tolerance_s + 1e-9, pick, -1).astype(np.int64)


def sample_keyframes(timestamps_s: np.ndarray, config: KeyframeConfig | None = None) -> KeyframeSelection:
    """Choose keyframes and their windows for one clip from its frame timestamps (seconds, any origin)."""
    config = config or KeyframeConfig()
    times = np.asarray(timestamps_s, dtype=np.float64)
    selection = KeyframeSelection()
    if times.size == 0:
        selection.skipped.append((config.start_s, "clip has no frames"))
        return selection
    if np.any(np.diff(times) <= 0):
        raise ValueError("frame timestamps must increase strictly")
    rel = times - times[0]
    step = 1.0 / config.rate_hz
    targets = config.start_s + step * np.arange(int(np.ceil((config.end_s - config.start_s) / step - 1e-9)))
    key_idx = nearest_within(rel, targets, config.tolerance_s)
    offsets = config.window_offsets_s
    for target, k in zip(targets.tolist(), key_idx.tolist(), strict=True):
        if k < 0:
            reason = (
                "clip ends before this time"
                if target > rel[-1] + config.tolerance_s
                else f"no frame within {config.tolerance_s:g} s"
            )
            selection.skipped.append((target, reason))
            continue
        wanted = rel[k] + offsets
        window = nearest_within(rel, wanted, config.tolerance_s)
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
