"""``PosedReader`` (what ``stridegen calibrate poses`` writes out) gives boxes their velocities in the new global
frame (issue 33): a log without poses keeps its boxes in the ego's frame, so their velocities were relative to the
ego (-1.5 to -6.5 m/s on a highway clip where the traffic drove 24-34 m/s). Checked against the synthetic
generator's analytic truth."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from stridegen.logs import open_log
from stridegen.logs.posed import PosedReader
from stridegen.logs.synthetic import load_synthetic_truth
from tests.logs.check.test_check_hostile import _no_poses


def test_recovered_poses_give_ground_velocities(two_scene_log: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    shutil.copytree(two_scene_log, log, ignore=shutil.ignore_patterns("instance_ids", "maps", ".stridegen-index"))
    _no_poses(log)  # identity poses, boxes in the ego frame: a log without poses
    truth_log = open_log(two_scene_log)
    scene = truth_log.scene("scene-0000")
    times = np.array([f.timestamp_s for f in scene.frames])
    poses = np.stack([f.T_global_from_ego for f in scene.frames])
    posed = PosedReader(open_log(log), {scene.token: (times, poses)})  # the poses calibrate poses would recover
    truth = load_synthetic_truth(two_scene_log, "scene-0000")
    agents = {a.instance_token: a for a in truth.agents}
    bare_scene = open_log(log).scene("scene-0000")  # its velocities: relative to the ego
    errors, relative_errors = [], []
    for frame, original in zip(posed.scene("scene-0000").frames, scene.frames, strict=True):
        ann, expected = frame.annotations(), original.annotations()
        assert np.array_equal(ann.boxes.track_id, expected.boxes.track_id)
        # The same rule as the nuScenes reader on the log with its poses: equal velocities, NaN where it has NaN.
        assert np.allclose(ann.boxes.velocity, expected.boxes.velocity, atol=1e-6, equal_nan=True)
        bare = bare_scene.frames[frame.index].annotations()
        t = truth.time_s(frame.timestamp_us)
        for k, token in enumerate(ann.boxes.track_id):
            if token in agents and np.all(np.isfinite(ann.boxes.velocity[k])):
                v = agents[token].trajectory.state(t)["velocity_xy"]
                errors.append(np.linalg.norm(ann.boxes.velocity[k, :2] - v))
                relative_errors.append(np.linalg.norm(bare.boxes.velocity[k, :2] - v))
    errors_ = np.array(errors)
    # Finite differences over +-0.5 s against the analytic derivative: centred ones within cm/s, one-sided ones at
    # a track's ends within a * dt / 2 (accelerations of a few m/s^2).
    assert errors_.size > 100 and np.median(errors_) < 0.05 and errors_.max() < 1.5
    assert np.median(relative_errors) > 3.0  # what the input's velocities are: off by the ego's speed
