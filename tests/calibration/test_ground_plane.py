"""Ground plane by RANSAC: a known tilted plane; the synthetic rig's LiDAR height and zero pitch / roll."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from typer.testing import CliRunner

from stridegen.calibration.ground import fit_ground_plane


def test_known_tilted_plane_with_clutter():
    """Points on a plane 1.8 m below the sensor, seen by a sensor pitched 2 deg nose down and rolled 1 deg right
    side down, plus 30 % clutter (walls, objects): the fit returns that height, pitch and roll."""
    rng = np.random.default_rng(1)
    ground = np.column_stack([rng.uniform(-30, 30, 5000), rng.uniform(-30, 30, 5000), np.full(5000, -1.8)])
    ground[:, 2] += rng.normal(0.0, 0.02, 5000)
    clutter = np.column_stack([rng.uniform(-30, 30, 2000), rng.uniform(-30, 30, 2000), rng.uniform(-1.5, 3, 2000)])
    # Sensor pitched nose down by 2 deg (+2 deg about its y axis, y left) and rolled right side down by 1 deg
    # (+1 deg about x): world points seen in the sensor frame are rotated by the inverse of its attitude.
    attitude = Rotation.from_euler("yx", [2.0, 1.0], degrees=True)
    pts = attitude.inv().apply(np.vstack([ground, clutter]))
    plane = fit_ground_plane(pts, rng, max_height_m=0.0)
    assert plane.height_m == pytest.approx(1.8, abs=0.01)
    assert plane.pitch_deg == pytest.approx(2.0, abs=0.05)
    assert plane.roll_deg == pytest.approx(1.0, abs=0.05)
    assert plane.inliers[:5000].mean() > 0.95 and plane.inliers[5000:].mean() < 0.1


def test_synthetic_rig_height_and_level(tmp_path):
    """Known answer: the synthetic LiDAR is mounted 1.84 m above a flat ground, level (nuscenes rig)."""
    from stridegen.calibration import load_rig
    from stridegen.cli.calibrate import calibrate_app
    from stridegen.logs.synthetic.generator import generate_dataset

    generate_dataset(tmp_path / "log", scenes=1, seconds=3, seed=2, width=320, height=180, progress=False)
    report_path = tmp_path / "ground.json"
    result = CliRunner().invoke(calibrate_app, ["ground", str(tmp_path / "log"), "--report", str(report_path)])
    assert result.exit_code == 0, result.output
    import json

    (scene,) = json.loads(report_path.read_text())["scenes"].values()
    mount_z = load_rig("nuscenes").lidars[0].translation_ego[2]
    assert len(scene["frames"]) == 6
    for row in scene["frames"]:
        assert row["height_m"] == pytest.approx(mount_z, abs=0.01)
        assert abs(row["pitch_deg"]) < 0.05 and abs(row["roll_deg"]) < 0.05
    assert abs(scene["height_m"]["drift_per_s"]) < 0.005
    # printed for a person: a summary row per scene (height median in m, weak sweeps), the report still written
    assert f"{mount_z:.3f} ±0.000" in result.stdout and "weak sweeps" in result.stdout
    assert len(result.stdout.splitlines()) < 20
    as_json = CliRunner().invoke(calibrate_app, ["ground", str(tmp_path / "log"), "--json"])
    assert json.loads(as_json.stdout) == json.loads(report_path.read_text())
