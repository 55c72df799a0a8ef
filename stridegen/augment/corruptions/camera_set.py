"""Corruptions of the set of cameras of one frame (nuScenes-C / RoboBEV, DriveBench).

A dropped camera delivers a black image (RoboBEV zeroes it) and its questions have no visual evidence: the caller
uses the returned channel list to mark them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stridegen.augment.corruptions.base import CameraSetCorruption


# Camera crash (RoboBEV `CameraCrash`): a fixed number of cameras fails for the whole clip; on the six-camera
# nuScenes rig severity s drops s cameras. RoboBEV draws them with replacement (np.random.choice), so fewer may
# fail; we draw without replacement, and scale the count to rigs of another size: round(s * n / 6), at least 1.
def _crash(channels: Sequence[str], cameras_of_six: int, rng: np.random.Generator) -> list[str]:
    n = len(channels)
    if n == 0:
        return []
    count = int(np.clip(round(cameras_of_six * n / 6), 1, n))
    return [channels[i] for i in rng.choice(n, size=count, replace=False)]


# Frame lost (RoboBEV `FrameLost`): each camera's frame is lost independently with probability s / 6.
def _frame_lost(channels: Sequence[str], probability: float, rng: np.random.Generator) -> list[str]:
    lost = rng.random(len(channels)) < probability
    return [ch for ch, drop in zip(channels, lost, strict=True) if drop]


CAMERA_CRASH = CameraSetCorruption(
    name="camera_crash",
    params=(1, 2, 3, 4, 5),
    choose=_crash,
    sources=("nuScenes-C (RoboBEV CameraCrash)", "DriveBench camera crash"),
    description="s of 6 cameras deliver no image",
)
FRAME_LOST = CameraSetCorruption(
    name="frame_lost",
    params=(1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6),
    choose=_frame_lost,
    sources=("nuScenes-C (RoboBEV FrameLost)", "DriveBench frame lost"),
    description="each camera's frame lost with probability s/6",
)

CAMERA_SET = (CAMERA_CRASH, FRAME_LOST)
