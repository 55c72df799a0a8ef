"""A ROS recording without any pose topic: the reader refuses it and points at `stridegen calibrate poses`; read
with ``poses: none`` (identity poses), `calibrate poses` recovers the generator's trajectory by LiDAR odometry."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("rosbags")
pytest.importorskip("open3d", exc_type=ImportError, reason="open3d does not import (extra open3d; Debian libusb-1.0-0)")
pytestmark = pytest.mark.slow  # odometry over a whole scene


def test_calibrate_poses_recovers_the_removed_poses(tmp_path) -> None:
    from stridegen.calibration.poses import trajectory_error
    from stridegen.cli.calibrate import calibrate_app
    from stridegen.core.errors import InvalidPoseError
    from stridegen.logs import open_log
    from stridegen.logs.ros.mapping import MAPPING_FILE
    from stridegen.logs.ros.reader import RosReader
    from stridegen.logs.synthetic.generator import generate_dataset
    from stridegen.logs.synthetic.ros_writer import write_ros_log

    generate_dataset(
        tmp_path / "syn", scenes=1, seconds=4, seed=1, width=64, height=36, static_scenery=True, progress=False
    )
    source = open_log(tmp_path / "syn")
    (scene,) = source.scenes()
    write_ros_log(source, tmp_path / "rec", "ros2-mcap", poses="none")
    with pytest.raises(InvalidPoseError, match="stridegen calibrate poses"):
        RosReader(tmp_path / "rec").scene(scene.name)
    (tmp_path / "rec" / MAPPING_FILE).write_text("poses: none\n")

    result = CliRunner().invoke(calibrate_app, ["poses", str(tmp_path / "rec"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    estimate = np.stack([f.T_global_from_ego for f in open_log(tmp_path / "out").scene(scene.name).frames])
    truth = np.stack([f.T_global_from_ego for f in scene.frames])
    err = trajectory_error(estimate, truth)
    assert err.distance_m > 10.0
    assert err.max_translation_ratio < 0.02, err.translation_m
    assert err.rotation_deg.max() < 1.0
    still = trajectory_error(np.repeat(np.eye(4)[None], len(truth), axis=0), truth)
    assert still.max_translation_ratio > 0.5  # what the recording alone gives
