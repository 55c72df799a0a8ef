"""`stridegen calibrate ...` prints tables for a person and the report with --json (issue 31): known answers on
hand-made reports, and the align command on a synthetic log against itself (the identity, zero residuals)."""

from __future__ import annotations

import json

import numpy as np
from rich.console import Console
from typer.testing import CliRunner


def _row(text: str, label: str) -> str:
    """Every printed line of the row ``label`` (a wide table is split into several, each led by the label)."""
    return " ".join(line for line in text.splitlines() if label in line)


def _text(tables) -> str:
    console = Console(record=True, width=200)
    for table in tables:
        console.print(table)
    return console.export_text()


def test_poses_summary_in_percent_and_centimetres():
    from stridegen.cli.calibrate_tables import poses_summary

    report = {
        "out": "posed",
        "scenes": {
            "scene-a": {
                "sweeps": 40,
                "distance_m": 123.456,
                "fitness_mean": 0.9512,
                "fitness_min": 0.801,
                "rmse_mean_m": 0.0345,
                "degenerate_sweeps": 2,
                "drift_vs_log": {
                    "max_translation_m": 0.5,
                    "final_translation_m": 0.25,
                    "translation_per_distance": 0.004,
                    "max_yaw_deg": -0.001,
                    "max_rotation_deg": 0.3,
                },
            },
            "scene-b": {
                "sweeps": 3,
                "distance_m": 0.0,
                "fitness_mean": None,
                "fitness_min": None,
                "rmse_mean_m": None,
                "degenerate_sweeps": 0,
                "drift_vs_log": None,
            },
        },
    }
    text = _text(poses_summary(report))
    line_a = _row(text, "scene-a")
    for cell in ("123.5", "95.1 / 80.1", "3.5", "0.50 / 0.25", "0.40", "0.00"):
        assert cell in line_a, (cell, line_a)
    assert "-0.00" not in line_a
    line_b = _row(text, "scene-b")
    assert "- / -" in line_b
    assert "Log written to posed" in " ".join(text.split())


def test_align_summary_angle_and_failed_scene():
    from stridegen.cli.calibrate_tables import align_summary

    c, s = np.cos(np.radians(30.0)), np.sin(np.radians(30.0))
    report = {
        "with_scale": False,
        "scenes": {
            "s1": {
                "pairs": 10,
                "rotation": [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]],
                "translation_m": [3.0, 4.0, 0.0],
                "scale": 1.0,
                "rmse_m": 0.0123,
                "max_residual_m": 0.05,
                "max_heading_residual_deg": 0.5,
            },
            "s2": {"error": "too few poses"},
        },
    }
    text = _text(align_summary(report))
    line = _row(text, "s1")
    assert "5.000" in line and "30.000" in line and "0.012" in line
    assert "too few poses" in text and "SE(3)" in " ".join(text.split())


def test_lidar_camera_summary():
    from stridegen.cli.calibrate_tables import lidar_camera_summary

    report = {
        "scene": "scene-0",
        "frames": 4,
        "lidar": "LIDAR_TOP",
        "cameras": {
            "CAM_FRONT": {
                "misalignment_before_px": 3.21,
                "misalignment_after_px": 1.05,
                "edge_points": 900,
                "rotation_from_log_deg": 0.0123,
                "translation_from_log_m": 0.0234,
            }
        },
    }
    line = _row(_text(lidar_camera_summary(report)), "CAM_FRONT")
    assert "3.21 / 1.05" in line and "900" in line and "0.012" in line and "2.3" in line


def test_align_command_table_and_json(tmp_path):
    """Log B is log A's curved trajectory moved by a known rigid transform (30 deg about z, 5 m): the table shows it,
    --json prints the report that --report writes."""
    from stridegen.cli.calibrate import calibrate_app
    from stridegen.logs import open_log
    from stridegen.logs.native_writer import write_native_log
    from stridegen.logs.posed import PosedReader
    from stridegen.logs.synthetic.generator import generate_dataset

    generate_dataset(tmp_path / "syn", scenes=1, seconds=2, seed=0, width=160, height=90, progress=False)
    source = open_log(tmp_path / "syn")
    (scene,) = source.scenes()
    t = scene.timestamps_s - scene.timestamps_s[0]
    arc = np.repeat(np.eye(4)[None], len(t), axis=0)  # a 20 m radius circle at 5 m/s
    heading = 5.0 * t / 20.0
    arc[:, 0, 3], arc[:, 1, 3] = 20.0 * np.sin(heading), 20.0 * (1.0 - np.cos(heading))
    arc[:, 0, 0] = arc[:, 1, 1] = np.cos(heading)
    arc[:, 0, 1], arc[:, 1, 0] = -np.sin(heading), np.sin(heading)
    c, s = np.cos(np.radians(30.0)), np.sin(np.radians(30.0))
    moved = np.eye(4)
    moved[:2, :2], moved[:3, 3] = [[c, -s], [s, c]], [3.0, 4.0, 0.0]
    write_native_log(PosedReader(source, {scene.token: (scene.timestamps_s, arc)}), tmp_path / "a")
    write_native_log(PosedReader(source, {scene.token: (scene.timestamps_s, moved[None] @ arc)}), tmp_path / "b")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")

    table = CliRunner().invoke(calibrate_app, ["align", a, b, "--report", str(tmp_path / "a.json")])
    assert table.exit_code == 0, table.output
    assert "Trajectory alignment" in table.stdout and not table.stdout.lstrip().startswith("{")
    line = _row(table.stdout, scene.name)
    assert "5.000" in line and "30.000" in line, line
    as_json = CliRunner().invoke(calibrate_app, ["align", a, b, "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.stdout)
    assert report == json.loads((tmp_path / "a.json").read_text())
    row = report["scenes"][scene.name]
    assert row["rmse_m"] < 1e-6
    np.testing.assert_allclose(row["translation_m"], [3.0, 4.0, 0.0], atol=1e-6)
