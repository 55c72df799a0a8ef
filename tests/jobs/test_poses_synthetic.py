"""`calibrate poses` on 20 s synthetic logs with static scenery and their poses removed (issue 18): the recovered
trajectory is within 1 % of the distance travelled and 0.5 degrees of yaw of the analytic truth, and a dataset
built from the recovered log answers ego speeds within the finite-difference bound plus that error.

Without ``static_scenery`` the same run fails by design (flat ground: x, y and yaw are degenerate; about 90 % of
the distance), which is what the option is for; that case is not run here to keep the test short.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

# ImportError too: open3d installed without Debian's libusb-1.0-0 (the Makefile installs it only as root).
pytest.importorskip("open3d", exc_type=ImportError, reason="open3d does not import (extra open3d; Debian libusb-1.0-0)")
# Odometry over a 20 s log, made once by the module's fixture: one xdist group, so that `pytest -n 2 --dist
# loadgroup` runs both tests on one worker and pays the ~45 s fixture once, not once per worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("poses_synthetic")]

SECONDS = 20.0
STEP_S = 0.5  # synthetic key frames are at 2 Hz
MAX_POSITION_ERROR = 0.01  # of the distance travelled
MAX_YAW_ERROR_DEG = 0.5


def _yaw(T: np.ndarray) -> np.ndarray:
    return np.arctan2(T[..., 1, 0], T[..., 0, 0])


@pytest.fixture(scope="module")
def recovered(tmp_path_factory):
    """(synthetic log, log with recovered poses) for one scene of each ego profile ("stop", "flow")."""
    from stridegen.cli.calibrate import calibrate_app
    from stridegen.logs import open_log
    from stridegen.logs.native_writer import write_native_log
    from stridegen.logs.posed import PosedReader
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("poses_synthetic")
    syn, bare, out = root / "syn", root / "bare", root / "out"
    generate_dataset(syn, scenes=2, seconds=SECONDS, seed=0, width=160, height=90, progress=False, static_scenery=True)
    source = open_log(syn)
    identity = {s.token: (s.timestamps_s, np.repeat(np.eye(4)[None], len(s.frames), axis=0)) for s in source.scenes()}
    write_native_log(PosedReader(source, identity), bare)
    result = CliRunner().invoke(calibrate_app, ["poses", str(bare), "--out", str(out)])  # CLI defaults
    assert result.exit_code == 0, result.output
    return syn, out


def test_recovered_trajectory_within_one_percent_and_half_a_degree(recovered):
    from stridegen.core.transforms import invert_transform
    from stridegen.logs import open_log
    from stridegen.logs.calibrate.poses import REPORT_FILE
    from stridegen.logs.synthetic.generator import read_truth_metadata

    syn, out = recovered
    report = json.loads((out / REPORT_FILE).read_text())
    new_scenes = {s.name: s for s in open_log(out).scenes()}
    profiles = {s["ego_profile"] for s in read_truth_metadata(syn)["scenes"]}
    for scene in open_log(syn).scenes():
        truth = np.stack([f.T_global_from_ego for f in scene.frames])
        new = np.stack([f.T_global_from_ego for f in new_scenes[scene.name].frames])
        assert len(new) == len(truth) == round(SECONDS / STEP_S)
        rel_truth = invert_transform(truth[0]) @ truth  # both trajectories in the frame of their first pose
        rel_new = invert_transform(new[0]) @ new
        distance = np.linalg.norm(np.diff(rel_truth[:, :3, 3], axis=0), axis=1).sum()
        assert distance > 50.0  # the ego drives through the intersection
        position_error = np.linalg.norm(rel_new[:, :3, 3] - rel_truth[:, :3, 3], axis=1).max()
        yaw_error = np.degrees(np.abs(np.angle(np.exp(1j * (_yaw(rel_new) - _yaw(rel_truth))))).max())
        assert position_error <= MAX_POSITION_ERROR * distance, (scene.name, position_error, distance)
        assert yaw_error <= MAX_YAW_ERROR_DEG, (scene.name, yaw_error)
        assert report["scenes"][scene.name]["sweeps"] == len(truth)
    assert profiles == {"stop", "flow"}


def test_rebuilt_ego_speeds_match_analytic_truth(recovered, tmp_path):
    """Ego speeds of a dataset built from the recovered log (projected_box segmenter) against the analytic speed:
    within the finite-difference bound A_max * h / 2 (docs/attributes.md) plus the odometry error, taken as the
    1 % of the distance per distance (so 1 % of the speed) that the recovered trajectory is held to."""
    from stridegen import open_dataset
    from stridegen.jobs.build import run_build
    from stridegen.logs.synthetic import load_synthetic_truth
    from stridegen.run.config import load_build_config

    syn, out = recovered
    config = load_build_config(None, ["segmenter.name=projected_box"])
    result = run_build(out, tmp_path / "ds", config)
    assert result.ok, [r.reason for r in result.failed]
    ds = open_dataset(tmp_path / "ds")
    assert len(ds.scenes) == 2
    for name in ds.scenes:
        view = ds[name]
        truth = load_synthetic_truth(syn, name)
        times_s = np.asarray(view.frames.timestamp_us, dtype=np.float64) * 1e-6  # from the scene start
        np.testing.assert_allclose(times_s, truth.sample_times, atol=1e-6)
        built = np.hypot(*np.asarray(view.attributes.ego_velocity_global)[:, :2].T)
        analytic = np.array([np.hypot(*truth.ego_velocity_global(t)[:2]) for t in times_s])
        bound = truth.ego.max_accel_bound * STEP_S / 2 + MAX_POSITION_ERROR * analytic + 1e-6
        assert np.all(np.abs(built - analytic) <= bound), (name, np.abs(built - analytic) - bound)
