"""The anonymize stage in the build and ``stridegen anonymize`` on a synthetic log with plates and faces drawn."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from stridegen.jobs.build import run_build
from stridegen.run.config import load_build_config

pytestmark = pytest.mark.slow  # every test reads a built 640 x 360 log (its fixture takes seconds)
SYNTH = {"scenes": 1, "seconds": 6.0, "seed": 3, "width": 640, "height": 360}
BASE = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=4"]
# Plates only with the geometric bands: the Haar plate cascade and the face detector are tested on their own.
ON = ["anonymize.faces=false", "anonymize.plates=true", "anonymize.plate_detector=none"]


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in ("build_report.json", "journal.jsonl")
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("anonymize")
    generate_dataset(root / "log", progress=False, overwrite=True, privacy_patches=True, **SYNTH)
    out = {"log": root / "log"}
    for name, extra in (("off", []), ("on", ON), ("on2", ON)):
        result = run_build(root / "log", root / name, load_build_config(None, BASE + extra))
        assert result.ok, [r.reason for r in result.failed]
        out[name] = root / name
    return out


def test_synthetic_default_is_off_and_a_build_with_it_on_is_reproducible(built) -> None:
    off = json.loads((built["off"] / "manifest.json").read_text())
    assert "anonymize" not in off["config"] and not (built["off"] / "anonymization.json").exists()
    on = json.loads((built["on"] / "manifest.json").read_text())
    assert on["config"]["anonymize"]["plates"] is True
    a, b = _digests(built["on"]), _digests(built["on2"])
    assert a == b and "anonymization.json" in a


def test_masks_boxes_and_qa_unchanged_images_and_times_changed(built) -> None:
    from stridegen.shards.reader import open_dataset

    with open_dataset(built["off"]) as off, open_dataset(built["on"]) as on:
        for name in off.scenes:
            a, b = off.scene(name).record(), on.scene(name).record()
            for table in ("detections", "tracks", "masks", "regions", "qa", "keyframes", "ground_truth"):
                for key, value in getattr(a, table).arrays().items():
                    np.testing.assert_array_equal(value, getattr(b, table).arrays()[key], err_msg=f"{table}/{key}")
            ts = np.asarray(a.frames.timestamp_us)
            np.testing.assert_array_equal(b.frames.timestamp_us, ts - ts[0])  # relative, same order and steps
            np.testing.assert_array_equal(b.images.timestamp_us, np.asarray(a.images.timestamp_us) - ts[0])
            assert a.meta.log_name == b.meta.log_name  # no date-time in synthetic log names
            changed = [i for i in range(len(a.images)) if not np.array_equal(a.images.data[i], b.images.data[i])]
            assert changed and set(changed) == set(np.flatnonzero(b.extra["anonymization_images"]["regions"] > 0))


class _Patches:
    """The synthetic truth of one scene, its privacy decals and the rig at the log's resolution, read once: the
    truth's scene composition and the rig YAML cost far more than one render, and every image asks."""

    def __init__(self, log: Path, scene_name: str) -> None:
        from stridegen.calibration.rig import load_rig
        from stridegen.logs.synthetic import load_synthetic_truth
        from stridegen.logs.synthetic.patches import privacy_decals

        self.scene = load_synthetic_truth(log, scene_name)
        self.rig = load_rig("nuscenes").with_camera_resolution(SYNTH["width"], SYNTH["height"])
        self.colors = np.array([a.color_rgb for a in self.scene.agents], dtype=np.uint8)
        self.decals = privacy_decals(self.scene)

    def visible(self, frame: int, channel: str) -> list[tuple[str, np.ndarray, int]]:
        """(kind, visible pixel box, pixels) of every plate / face patch the camera shows: the synthetic truth."""
        from stridegen.logs.synthetic.generator import default_ground_shader
        from stridegen.logs.synthetic.render import render_camera

        scene, decals = self.scene, self.decals
        cam = next(c for c in self.rig.cameras if c.channel == channel)
        t = scene.sample_times[frame]
        boxes = scene.agent_states(t)
        out = render_camera(
            cam, scene.ego_pose(t) @ cam.T_ego_from_sensor, boxes.center, boxes.size_lwh, boxes.yaw, self.colors,
            default_ground_shader(), decals=decals,
        )  # fmt: skip
        assert out.decal_boxes_xyxy is not None and out.decal_pixels is not None
        return [(d.kind, out.decal_boxes_xyxy[k], int(out.decal_pixels[k])) for k, d in enumerate(decals)]


def test_plate_recall_of_the_geometric_bands_on_the_drawn_plates(built) -> None:
    """Every plate drawn with at least 6 visible pixels lies inside the union of the image's blurred plates."""
    from stridegen.shards.reader import open_dataset

    seen = covered = 0
    with open_dataset(built["on"]) as ds:
        for name in ds.scenes:
            patches = _Patches(built["log"], name)
            record = ds.scene(name).record()
            regions = record.extra["anonymization"]
            for i in range(len(record.images)):
                channel = str(record.cameras.channel[int(record.images.channel_index[i])])
                mine = np.flatnonzero(np.asarray(regions["image_index"]) == i)
                for kind, box, pixels in patches.visible(int(record.images.frame_index[i]), channel):
                    if kind != "plate" or pixels < 6:
                        continue
                    seen += 1
                    r = regions["box_xyxy"][mine]
                    inside = (r[:, :2] <= box[:2] + 0.5).all(axis=1) & (r[:, 2:] >= box[2:] - 0.5).all(axis=1)
                    covered += bool(inside.any())
    assert seen >= 10, seen
    assert covered == seen, f"plate recall {covered}/{seen}"


def test_blurred_area_is_reported(built) -> None:
    sidecar = json.loads((built["on"] / "anonymization.json").read_text())
    totals = sidecar["totals"]
    assert totals["plates"] > 0 and totals["faces"] == 0
    assert 0 < totals["blurred_px"] < totals["image_px"]
    assert totals["blurred_fraction"] == pytest.approx(totals["blurred_px"] / totals["image_px"], abs=1e-8)
    first = sidecar["images"][0]
    sources = {r["source"]: r["score"] for image in sidecar["images"] for r in image["regions"]}
    assert set(sources) <= {"localized", "geometry"} and "localized" in sources
    assert sources.get("geometry", None) is None  # no score for a fallback band
    assert first["blurred_px"] > 0
    assert totals["qa_regions"] > 0 and 0 <= totals["qa_region_blurred_share_mean"] <= 0.05


def test_the_command_on_the_plain_build_equals_the_build_with_it_on(built, tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from stridegen.cli.anonymize import anonymize

    app = typer.Typer()
    app.command()(anonymize)
    app.command("noop")(lambda: None)  # two commands: typer keeps the command name
    result = CliRunner().invoke(
        app, ["anonymize", str(built["off"]), "--out", str(tmp_path / "anon"), "--no-faces", "--plate-detector", "none"]
    )
    assert result.exit_code == 0, result.output
    assert _digests(tmp_path / "anon") == _digests(built["on"])
    again = CliRunner().invoke(app, ["anonymize", str(tmp_path / "anon"), "--out", str(tmp_path / "twice")])
    assert again.exit_code != 0 and "anonymized already" in again.output
