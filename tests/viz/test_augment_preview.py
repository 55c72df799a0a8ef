"""Contact sheet, synthetic scene and the `augment` command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from stridegen.augment.corruptions import CORRUPTIONS, get_corruption
from stridegen.cli.augment import augment
from stridegen.core.errors import ConfigError
from stridegen.formats.images import read_rgb, write_rgb
from stridegen.viz.contact_sheet import contact_sheet, synthetic_road_scene, tile_rng
from tests.shared_data import NUSCENES_DEMO, needs

REPO = Path(__file__).resolve().parents[2]
NUSCENES_CAM_FRONT = NUSCENES_DEMO / "samples" / "CAM_FRONT"
TEST_OUTPUT = REPO / "test-output"


@pytest.fixture(scope="module")
def small_scene() -> np.ndarray:
    return synthetic_road_scene(320, 180)


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(augment)
    return app


def test_synthetic_scene_is_deterministic_and_busy():
    a, b = synthetic_road_scene(640, 360), synthetic_road_scene(640, 360)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (360, 640, 3) and a.dtype == np.uint8
    assert len(np.unique(a.reshape(-1, 3), axis=0)) > 50  # sky gradient, road, cars, text
    assert (a[..., 0] > 150).sum() > 0 and (a[..., 2] > 150).sum() > 0


def test_contact_sheet_layout(small_scene):
    names = ["fog", "camera_crash", "lens_distortion"]
    sheet = contact_sheet(small_scene, names, severities=[1, 5], seed=3, tile_width=160, gap=4)
    tile_h = 90
    label_w, header_h = int(200 * 0.5), int(44 * 0.5)
    assert sheet.shape == (header_h + 2 * (tile_h + 4) + 4, label_w + 3 * (160 + 4) + 4, 3)  # camera_crash skipped
    # first tile column is the clean image, shrunk
    clean = sheet[header_h : header_h + tile_h, label_w + 4 : label_w + 4 + 160]
    assert np.abs(clean.astype(int) - small_scene[::2, ::2].astype(int)).mean() < 12
    # tiles are the corruptions of the full image with the per-tile generator
    x = label_w + 4 + 2 * (160 + 4)
    tile = sheet[header_h : header_h + tile_h, x : x + 160]
    expected = get_corruption("fog").apply(small_scene, 5, tile_rng(3, "fog", 5))
    assert np.abs(tile.astype(int) - expected[::2, ::2].astype(int)).mean() < 12
    # labels are drawn in the left column
    assert (sheet[header_h : header_h + tile_h, :label_w] < 128).any()


def test_contact_sheet_is_reproducible(small_scene):
    a = contact_sheet(small_scene, ["snow", "rain"], [2], seed=9, tile_width=96)
    b = contact_sheet(small_scene, ["snow", "rain"], [2], seed=9, tile_width=96)
    np.testing.assert_array_equal(a, b)


def test_contact_sheet_rejects_only_camera_corruptions(small_scene):
    with pytest.raises(ConfigError):
        contact_sheet(small_scene, ["frame_lost"], [1])
    with pytest.raises(ConfigError):
        contact_sheet(small_scene, ["fog"], [0])


def test_read_write_round_trip(tmp_path, small_scene):
    path = write_rgb(tmp_path / "a" / "scene.png", small_scene)
    np.testing.assert_array_equal(read_rgb(path), small_scene)
    with pytest.raises(ConfigError):
        read_rgb(tmp_path / "missing.png")


def test_cli_preview_writes_a_sheet(tmp_path, small_scene):
    image = write_rgb(tmp_path / "scene.png", small_scene)
    out = tmp_path / "sheet.png"
    result = CliRunner().invoke(
        _app(),
        [
            "--preview",
            str(image),
            "--out",
            str(out),
            "--corruptions",
            "fog,camera_crash",
            "--severity",
            "1,5",
            "--tile-width",
            "64",
        ],
    )
    assert result.exit_code == 0, result.output
    assert out.exists() and "1 corruptions x 2 severities" in result.output
    assert "camera_crash" in result.output
    assert read_rgb(out).shape[1] > 3 * 64


def test_cli_without_preview_needs_a_dataset_folder(tmp_path):
    result = CliRunner().invoke(_app(), [str(tmp_path), "--out", str(tmp_path / "split")])
    assert result.exit_code == 2
    assert "manifest not found" in result.output


def test_cli_reports_bad_names_and_severities(tmp_path, small_scene):
    image = write_rgb(tmp_path / "scene.png", small_scene)
    for extra in (["--corruptions", "hail"], ["--severity", "9"]):
        result = CliRunner().invoke(_app(), ["--preview", str(image), "--out", str(tmp_path / "s.png"), *extra])
        assert result.exit_code == 2 and "error:" in result.output


@pytest.mark.slow
@needs(NUSCENES_CAM_FRONT)
def test_nuscenes_demo_contact_sheet_for_a_person_to_look_at():
    """Writes test-output/augment_contact_sheet_nuscenes_demo.jpg (every image corruption x 5 levels, applied at
    1600x900). The fixture's licence forbids committing it; the sheet stays in the git-ignored test-output/."""
    image = read_rgb(sorted(NUSCENES_CAM_FRONT.glob("*.jpg"))[0])
    assert image.shape == (900, 1600, 3)
    sheet = contact_sheet(image, list(CORRUPTIONS), seed=0, tile_width=240)
    path = write_rgb(TEST_OUTPUT / "augment_contact_sheet_nuscenes_demo.jpg", sheet)
    assert read_rgb(path).shape == sheet.shape
    assert sheet.shape[0] > len(CORRUPTIONS) * 135
