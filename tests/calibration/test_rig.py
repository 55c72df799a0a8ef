"""Sensor rigs load, and their extrinsics follow the camera/ego conventions."""

from __future__ import annotations

import numpy as np
import pytest

from stridegen.calibration import load_rig, rig_names
from stridegen.calibration.rig import calibration_dirs
from stridegen.core.angles import polar_angle_deg, wrap_angle_deg
from stridegen.core.errors import ConfigError, MissingFileError
from stridegen.core.projection import project_points
from stridegen.core.resources import resource_path
from stridegen.core.transforms import invert_transform, rotate_vectors, transform_points


def test_known_rigs():
    assert {"nuscenes", "stride-qa"} <= set(rig_names())


def test_stride_qa_rig_matches_paper():
    rig = load_rig("stride-qa")
    assert len(rig.cameras) == 6 and len(rig.lidars) == 1 and rig.lidars[0].beams == 64
    for cam in rig.cameras:
        assert cam.horizontal_fov_deg == pytest.approx(60.0, abs=0.01)
        expected = (2880, 1860) if cam.channel in ("CAM_FRONT", "CAM_BACK") else (1920, 1240)
        assert (cam.width, cam.height) == expected
    # six 60-degree cameras tile the full circle
    yaws = sorted(c.yaw_deg % 360 for c in rig.cameras)
    assert np.allclose(np.diff(yaws), 60.0)


def test_camera_extrinsics_look_where_they_say():
    rig = load_rig("nuscenes")
    for cam in rig.cameras:
        T = cam.T_ego_from_sensor
        forward_ego = rotate_vectors(T, [0, 0, 1])  # optical axis
        assert float(polar_angle_deg(forward_ego[0], forward_ego[1])) == pytest.approx(
            float(wrap_angle_deg(cam.yaw_deg)), abs=1e-9
        )
        assert rotate_vectors(T, [0, 1, 0])[2] == pytest.approx(-1.0)  # image y points down
        # a point 10 m along the optical axis projects to the principal point
        p_ego = transform_points(T, [0, 0, 10])
        p_cam = transform_points(invert_transform(T), p_ego)
        uv, _, _ = project_points(p_cam, cam.intrinsic)
        np.testing.assert_allclose(uv[0], [cam.cx, cam.cy], atol=1e-9)
    half = rig.camera("CAM_FRONT").scaled(800, 450)
    assert half.fx == pytest.approx(633.0) and half.horizontal_fov_deg == pytest.approx(
        rig.camera("CAM_FRONT").horizontal_fov_deg
    )


def test_bad_rig(tmp_path):
    with pytest.raises(MissingFileError):
        load_rig("no-such-rig")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncameras: [{channel: C, width: -1}]\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml"):
        load_rig(bad)


def test_builtin_rigs_ship_in_the_package(tmp_path, monkeypatch):
    # Found from any working directory, without a checkout's folders: they are package resources.
    monkeypatch.delenv("STRIDEGEN_CALIBRATION_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert {"nuscenes", "stride-qa"} <= set(rig_names())
    assert load_rig("nuscenes").name == "nuscenes"
    assert calibration_dirs()[-1] == resource_path("rigs")


def test_user_rig_dirs_come_first(tmp_path, monkeypatch):
    user = tmp_path / "user"
    user.mkdir()
    (user / "nuscenes.yaml").write_text("name: user-nuscenes\ncameras: []\n")
    (user / "my-rig.yaml").write_text("name: mine\ncameras: []\n")
    monkeypatch.setenv("STRIDEGEN_CALIBRATION_DIR", str(user))
    monkeypatch.chdir(tmp_path)
    assert load_rig("nuscenes").name == "user-nuscenes"
    assert load_rig("my-rig").name == "mine"
    assert {"my-rig", "nuscenes", "stride-qa"} <= set(rig_names())
    monkeypatch.delenv("STRIDEGEN_CALIBRATION_DIR")
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "stride-qa.yaml").write_text("name: local\ncameras: []\n")
    assert load_rig("stride-qa").name == "local"
