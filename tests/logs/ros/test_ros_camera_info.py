"""A CameraInfo that changes during a recording (stridegen/logs/ros/camera_info.py): each scene gets the intrinsics
in force at its first sweep, a scene with a change inside it is a recorded failure naming the change, a republished
calibration within the tolerance is no change, and ``stridegen check`` reports it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rosbags")

from stridegen.logs.ros.camera_info import K_TOLERANCE_PX, CameraInfoChangedError
from stridegen.logs.ros.reader import RosReader
from stridegen.logs.ros.types import make
from stridegen.logs.synthetic.ros_writer import scene_messages, write_recording

INFO = "/CAM_FRONT/camera_info"


def _recording(scene, tmp_path: Path, from_frame: int, dfx: float = 0.0, size=None, container="ros2-mcap") -> Path:
    """The scene's recording with CAM_FRONT's CameraInfo from frame ``from_frame`` on changed: fx + ``dfx`` px,
    or the image size ``size`` (width, height)."""
    change_ns = scene.frames[from_frame].timestamp_us * 1000
    messages = []
    for m in scene_messages(scene, "tf", None, False):
        if m[0] == INFO and m[2] >= change_ns:

            def changed(store, build=m[3]):
                msg = build(store)
                k = np.array(msg.k if hasattr(msg, "k") else msg.K, dtype=np.float64)
                k[0] += dfx
                fields = {"k": k}
                if size is not None:
                    fields.update(width=size[0], height=size[1])
                names = [f[0] for f in store.fielddefs["sensor_msgs/msg/CameraInfo"][1]]
                values = {n: getattr(msg, n) for n in names}
                values.update({next(n for n in names if n.lower() == k_): v for k_, v in fields.items()})
                return make(store, "sensor_msgs/msg/CameraInfo", **values)

            m = (*m[:3], changed)
        messages.append(m)
    root = tmp_path / "log"
    root.mkdir()
    write_recording(root / ("rec.bag" if container == "ros1" else "rec"), container, messages)
    return root


def _check(root: Path, mapping_yaml: str):
    from stridegen.logs.check import check_log
    from stridegen.run.config import load_build_config

    (root / "stridegen-ros.yaml").write_text(mapping_yaml)
    cfg = load_build_config(None, ["segmenter.name=projected_box", "log.format=ros"])
    return check_log(root, cfg.check_settings(), deep=False)


@pytest.mark.parametrize("container", ["ros2-mcap", "ros1"])
def test_recalibration_inside_a_scene_fails_it_and_the_next_scene_uses_the_new_one(
    scene, tmp_path: Path, container: str
) -> None:
    """Scenes of 1 s: rec-000 (frames 0, 1) and rec-001 (frames 2, 3). fx changes by 5 px from frame 1: inside
    rec-000, which fails naming the change; rec-001 starts after it and has the new fx."""
    root = _recording(scene, tmp_path, from_frame=1, dfx=5.0, container=container)
    reader = RosReader(root, {"scene_length_s": 1.0})
    assert [n for n, _ in reader.scene_ids()] == ["rec-000", "rec-001"]
    with pytest.raises(
        CameraInfoChangedError,
        match=r"/CAM_FRONT/camera_info \(camera /CAM_FRONT/image/compressed\) "
        r"changes at \d+ ns, inside the scene .*: fx .* -> .* px",
    ):
        reader.scene("rec-000")
    K = scene.frames[0].sensors["CAM_FRONT"].calibration.intrinsic
    after = reader.scene("rec-001").frames[0].sensors["CAM_FRONT"].calibration.intrinsic
    np.testing.assert_allclose(after, K + np.diag([5.0, 0.0, 0.0]))
    back = reader.scene("rec-001").frames[0].sensors["CAM_BACK"].calibration.intrinsic
    np.testing.assert_array_equal(back, scene.frames[0].sensors["CAM_BACK"].calibration.intrinsic)
    report = _check(root, "scene_length_s: 1.0\n")
    found = [f for f in report.findings if f.code == "ros_camera_info_changed"]
    assert (
        len(found) == 1
        and "changes 1 time(s)" in found[0].message
        and "inside scene rec-000, which fails" in (found[0].message)
    )
    assert report.scene_errors("rec-000") and not report.scene_errors("rec-001")


def test_change_at_a_scene_start_and_resolution_switch(scene, tmp_path: Path) -> None:
    """A resolution switch from frame 2, the first sweep of rec-001: no scene has it inside; rec-000 keeps the old
    size, rec-001 has the new one. In one scene of 2 s it is inside, and named."""
    root = _recording(scene, tmp_path, from_frame=2, size=(24, 14))
    reader = RosReader(root, {"scene_length_s": 1.0})
    cal0 = reader.scene("rec-000").frames[1].sensors["CAM_FRONT"].calibration
    cal1 = reader.scene("rec-001").frames[0].sensors["CAM_FRONT"].calibration
    assert (cal0.width, cal0.height, cal1.width, cal1.height) == (48, 27, 24, 14)
    report = _check(root, "scene_length_s: 1.0\n")
    found = [f for f in report.findings if f.code == "ros_camera_info_changed"]
    assert len(found) == 1 and "image size 48x27 -> 24x14" in found[0].message and "which fails" not in found[0].message
    with pytest.raises(CameraInfoChangedError, match="image size 48x27 -> 24x14"):
        RosReader(root, {}).scene("rec")


def test_republished_calibration_within_tolerance_is_no_change(scene, tmp_path: Path) -> None:
    """fx republished 0.4 of the tolerance away (a float32 round trip does less): the scene builds with the first
    message's K, and the check says nothing."""
    root = _recording(scene, tmp_path, from_frame=1, dfx=0.4 * K_TOLERANCE_PX)
    frames = RosReader(root).scene("rec").frames
    np.testing.assert_array_equal(
        frames[3].sensors["CAM_FRONT"].calibration.intrinsic, scene.frames[0].sensors["CAM_FRONT"].calibration.intrinsic
    )
    assert not [f for f in _check(root, "{}\n").findings if f.code == "ros_camera_info_changed"]
