"""Oracle detector -> tracker -> attributes on synthetic logs, against the generator's analytic truth."""

from __future__ import annotations

import numpy as np
import pytest

from stridegen.core.angles import polar_angle_deg, wrap_angle_deg
from stridegen.core.transforms import invert_transform, transform_points, yaw_to_quat
from stridegen.formats.results_json import LIDAR_ONLY_META
from stridegen.logs import open_log
from stridegen.logs.synthetic import generate_dataset, load_synthetic_truth
from stridegen.pipeline.attributes import dense_tracks, extract_attributes
from stridegen.pipeline.detect import make_detector
from stridegen.pipeline.track import track_scene

pytestmark = pytest.mark.slow  # the tests run the pipeline on a generated log

STEP_S = 0.5  # synthetic key frames are at 2 Hz


@pytest.fixture(scope="module")
def synthetic_log(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth") / "log"
    generate_dataset(root, scenes=2, seconds=10.0, seed=11, width=160, height=90)
    return root


def _oracle_scene(root, scene_index):
    scene = open_log(root).scenes()[scene_index]
    oracle = make_detector("oracle")
    dets = [oracle.detect(f) for f in scene.frames]
    times = scene.timestamps_s
    poses = np.stack([f.T_global_from_ego for f in scene.frames])
    return scene, dets, times, poses


@pytest.mark.parametrize("scene_index", [0, 1])
def test_oracle_attributes_equal_analytic_truth(synthetic_log, scene_index):
    scene, dets, times, poses = _oracle_scene(synthetic_log, scene_index)
    truth = load_synthetic_truth(synthetic_log, scene.name)
    tracks = dense_tracks(dets, times, poses)  # ground-truth instance tokens as track ids
    attrs = extract_attributes(tracks)
    t_rel = np.array([truth.time_s(f.timestamp_us) for f in scene.frames])
    kf = len(scene.frames) // 2
    kf_attrs = attrs.in_keyframe(kf)
    T_kf_from_global = invert_transform(truth.ego_pose(t_rel[kf]))
    token_row = {str(tok): i for i, tok in enumerate(tracks.track_id)}
    checked = 0
    for f, t in enumerate(t_rel):
        state = truth.agent_states(t)
        speeds_ok = []
        for j, token in enumerate(state.track_id):
            row = token_row.get(str(token))
            if row is None or not tracks.present[row, f]:
                continue  # not annotated in this frame (too far / unseen)
            agent = truth.agents[int(state.extras["agent_id"][j]) - 1]
            p_true = transform_points(T_kf_from_global, state.center[j])
            np.testing.assert_allclose(kf_attrs.position_ego[row, f], p_true, rtol=1e-6, atol=1e-6)
            d_true = np.hypot(p_true[0], p_true[1])
            assert kf_attrs.distance_m[row, f] == pytest.approx(d_true, rel=1e-6, abs=1e-6)
            heading_err = wrap_angle_deg(kf_attrs.heading_deg[row, f] - polar_angle_deg(*p_true[:2]))
            assert abs(float(heading_err)) < 1e-4 * max(1.0, 10.0 / max(d_true, 1e-3))
            # velocity: finite differences of centres; error bound A_max * h / 2 (docs/attributes.md)
            v_fd = attrs.velocity_global[row, f, :2]
            if np.all(np.isfinite(v_fd)):
                bound = agent.trajectory.max_accel_bound * STEP_S / 2 + 1e-6 * (1 + np.linalg.norm(state.velocity[j]))
                speeds_ok.append(np.linalg.norm(v_fd - state.velocity[j, :2]) <= bound + 1e-9)
            checked += 1
        assert all(speeds_ok)
        ego_v = attrs.ego_velocity_global[f, :2]
        ego_bound = truth.ego.max_accel_bound * STEP_S / 2 + 1e-6
        assert np.linalg.norm(ego_v - truth.ego_velocity_global(t)[:2]) <= ego_bound
    assert checked > 50


def _switches(tracked):
    """(instance, frame, gap in frames) for each change of track id of a ground-truth instance."""
    last: dict[str, tuple[str, int]] = {}
    out = []
    for f, boxes in enumerate(tracked):
        for inst, tid in zip(boxes.extras["instance"].tolist(), boxes.track_id.tolist(), strict=True):
            if inst in last and last[inst][0] != tid:
                out.append((inst, f, f - last[inst][1] - 1))
            last[inst] = (tid, f)
    return out, last


@pytest.mark.parametrize("scene_index", [0, 1])
def test_tracker_on_noise_free_ground_truth_has_no_id_switches(synthetic_log, scene_index):
    # Every agent's exact box in every frame: no occlusion gaps, so no switch and one track per instance.
    scene = open_log(synthetic_log).scenes()[scene_index]
    truth = load_synthetic_truth(synthetic_log, scene.name)
    frames = [truth.agent_states(truth.time_s(f.timestamp_us)) for f in scene.frames]
    tagged = [b.replace(extras={"instance": b.track_id.copy()}, score=np.ones(len(b))) for b in frames]
    switches, last = _switches(track_scene(tagged, scene.timestamps_s))
    assert switches == []
    tracked_agents = sum(
        a.detection_class in ("car", "truck", "bus", "pedestrian", "bicycle", "motorcycle") for a in truth.agents
    )
    assert len(last) == tracked_agents == len({tid for tid, _ in last.values()})


@pytest.mark.parametrize("scene_index", [0, 1])
def test_tracker_switches_on_annotated_boxes_come_only_from_long_occlusions(synthetic_log, scene_index):
    # Annotations drop agents that are fully occluded (no LiDAR point, no visible pixel). A gap longer than
    # max_age - 1 = 2 frames ends a track by design (CenterPoint semantics); nothing else may switch an id.
    _, dets, times, _ = _oracle_scene(synthetic_log, scene_index)
    tagged = [d.replace(extras={**d.extras, "instance": d.track_id.copy()}) for d in dets]
    switches, _ = _switches(track_scene(tagged, times))
    assert all(gap >= 3 for _, _, gap in switches), switches


def test_detector_validation_perfect_and_bevfusion_profiles(synthetic_log):
    from stridegen.eval.validate.scoring import validate_detector

    reader = open_log(synthetic_log)
    _, perfect = validate_detector(reader, make_detector("simulated", profile="perfect"))
    assert perfect["mAP"] > 0.98
    assert perfect["mATE"] < 1e-9 and perfect["mASE"] < 1e-9 and perfect["mAOE"] < 1e-9 and perfect["mAVE"] < 1e-9
    _, oracle = validate_detector(reader, make_detector("oracle"))
    assert oracle == perfect
    _, bev = validate_detector(reader, make_detector("simulated", profile="bevfusion", seed=0))
    # the profile's noise levels show up as TP errors of the calibrated size (see benchmarks/calibrate_simulated.py)
    assert 0.09 < bev["mATE"] < 0.2 and 0.1 < bev["mASE"] < 0.25 and 0.05 < bev["mAOE"] < 0.3
    assert 0.8 < bev["mAVE"] < 1.8 and 0.4 < bev["mAP"] < 0.9


def test_precomputed_tracker_feeds_the_build(synthetic_log, tmp_path):
    import json

    from stridegen import open_dataset
    from stridegen.core.errors import ConfigError
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config

    # A tracking-results file whose ids are the ground-truth instance tokens.
    reader = open_log(synthetic_log)
    oracle = make_detector("oracle")
    results = {}
    for scene in reader.scenes():
        for frame in scene.frames:
            boxes = oracle.detect(frame)
            keep = np.isin(boxes.label, ["car", "truck", "bus", "pedestrian", "bicycle", "motorcycle", "trailer"])
            results[frame.token] = [
                {
                    "sample_token": frame.token,
                    "translation": boxes.center[i].tolist(),
                    "size": boxes.size_lwh[i, [1, 0, 2]].tolist(),
                    "rotation": yaw_to_quat(boxes.yaw[i]).tolist(),
                    "velocity": boxes.velocity[i, :2].tolist(),
                    "tracking_id": str(boxes.track_id[i]),
                    "tracking_name": str(boxes.label[i]),
                    "tracking_score": 0.9,
                }
                for i in np.flatnonzero(keep)
            ]
    path = tmp_path / "tracks.json"
    path.write_text(json.dumps({"meta": LIDAR_ONLY_META, "results": results}))
    config = load_build_config(
        None, ["tracker.name=precomputed", f"tracker.path={path}", "keyframes.start_s=2", "keyframes.end_s=5"]
    )
    result = run_build(synthetic_log, tmp_path / "ds", config)
    assert not result.failed
    ds = open_dataset(tmp_path / "ds")
    scene = ds.scene(ds.scenes[0])
    track_ids = set(np.asarray(scene.tracks.track_id).astype(str).tolist())
    expected = {
        r["tracking_id"]
        for s in results.values()
        for r in s
        if r["sample_token"] in {f.token for f in reader.scenes()[0].frames}
    }
    assert track_ids == expected
    with pytest.raises(ConfigError, match=r"tracker\.path"):
        load_build_config(None, ["tracker.name=precomputed"])


def test_validate_reports_perfect_detection_for_the_oracle(synthetic_log):
    from stridegen.eval.validate.scoring import validate_log

    reader = open_log(synthetic_log)
    report = validate_log(reader, make_detector("oracle", min_lidar_points=1))
    assert report.detection["mAP"] == pytest.approx(1.0)
    assert all(report.detection[k] == pytest.approx(0.0, abs=1e-12) for k in ("mATE", "mASE", "mAOE", "mAVE"))
    # Tracking on perfect detections: only occlusions longer than max_age cost anything.
    assert report.tracking["AMOTA"] > 0.95 and report.tracking["recall"] > 0.97
    noisy = validate_log(reader, make_detector("simulated", profile="bevfusion", seed=0))
    assert noisy.tracking["AMOTA"] < report.tracking["AMOTA"] and noisy.detection["mAP"] < 0.95


def test_validate_cli_options_reach_the_detector(synthetic_log):
    """`validate --option` overrides the detector's defaults: the perfect profile scores mAP 1 with zero errors, and
    an option the backend does not take is a one-line configuration error (exit code 2)."""
    from typer.testing import CliRunner

    from stridegen.cli import app

    runner = CliRunner()
    args = ["validate", "--log-root", str(synthetic_log), "--detector", "simulated"]
    perfect = runner.invoke(app, [*args, "--option", "profile=perfect"])
    assert perfect.exit_code == 0, perfect.output
    assert "simulated (perfect)" in perfect.output
    # footnote: how absent classes count, and that eval detection counts them otherwise
    assert "left out of mAP; `stridegen eval detection` counts them as AP 0" in " ".join(perfect.output.split())
    header, row = _table_row(perfect.output)
    cells = dict(zip(header, row, strict=True))
    assert float(cells["mAP"]) > 0.98 and float(cells["mATE"]) == 0.0
    bad = runner.invoke(app, [*args, "--option", "profle=perfect"])
    assert bad.exit_code == 2
    assert "profle" in bad.output and "Traceback" not in bad.output


def _table_row(output: str) -> tuple[list[str], list[str]]:
    """The header cells and the one data row of a rich table printed with box characters."""
    rows = [[c.strip() for c in line.strip("│┃ ").split("│" if "│" in line else "┃")] for line in output.splitlines()]
    rows = [r for r in rows if len(r) > 3]
    return rows[0], rows[-1]
