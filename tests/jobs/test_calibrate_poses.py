"""`calibrate poses` end to end on a short synthetic log with its poses removed: the written log has new poses,
boxes keep their place relative to the ego, a report per scene."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

# ImportError too: open3d installed without Debian's libusb-1.0-0 (the Makefile installs it only as root).
pytest.importorskip("open3d", exc_type=ImportError, reason="open3d does not import (extra open3d; Debian libusb-1.0-0)")
pytestmark = pytest.mark.slow  # odometry over whole logs


def test_poses_cli_writes_a_native_log_with_new_poses(tmp_path):
    from stridegen.cli.calibrate import calibrate_app
    from stridegen.core.transforms import invert_transform
    from stridegen.logs import open_log
    from stridegen.logs.calibrate.poses import REPORT_FILE
    from stridegen.logs.native_writer import write_native_log
    from stridegen.logs.posed import PosedReader
    from stridegen.logs.synthetic.generator import generate_dataset

    generate_dataset(tmp_path / "syn", scenes=1, seconds=3, seed=1, width=320, height=180, progress=False)
    source = open_log(tmp_path / "syn")
    (scene,) = source.scenes()
    identity = np.repeat(np.eye(4)[None], len(scene.frames), axis=0)
    write_native_log(PosedReader(source, {scene.token: (scene.timestamps_s, identity)}), tmp_path / "bare")

    result = CliRunner().invoke(calibrate_app, ["poses", str(tmp_path / "bare"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / REPORT_FILE).read_text())
    row = report["scenes"][scene.name]
    assert row["sweeps"] == 6 and row["drift_vs_log"] is None  # the bare log has no poses to compare with
    out_scene = open_log(tmp_path / "out").scenes()[0]
    bare_scene = open_log(tmp_path / "bare").scenes()[0]
    new = np.stack([f.T_global_from_ego for f in out_scene.frames])
    assert np.abs(new - new[:1]).max() > 0.1  # the poses moved
    for f_new, f_bare in zip(out_scene.frames, bare_scene.frames, strict=True):
        a, b = f_new.annotations(), f_bare.annotations()
        rel_new = (invert_transform(f_new.T_global_from_ego)[:3, :3] @ a.boxes.center.T).T + invert_transform(
            f_new.T_global_from_ego
        )[:3, 3]
        np.testing.assert_allclose(rel_new, b.boxes.center, atol=1e-9)  # bare poses are identity: ego == global
        for channel, sample in f_new.sensors.items():
            np.testing.assert_allclose(sample.T_global_from_ego, f_new.T_global_from_ego, atol=1e-12, err_msg=channel)


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_rerun_reuses_the_scene_parts_and_writes_the_same_bytes(tmp_path):
    from stridegen.core.errors import ConfigError
    from stridegen.jobs.calibrate import PosesOptions, calibrate_poses, run_calibrate_poses
    from stridegen.logs.calibrate.poses import BoxRemoval
    from stridegen.logs.synthetic import OutputExistsError
    from stridegen.logs.synthetic.generator import generate_dataset

    log, out = tmp_path / "syn", tmp_path / "out"
    generate_dataset(log, scenes=1, seconds=2, seed=2, width=160, height=90, progress=False)
    calibrate_poses(log, out)
    first = _tree(out)
    assert [p.name for p in (tmp_path / "out.parts" / "parts").iterdir()] == ["scene-0000.jsonl"]
    with pytest.raises(OutputExistsError):  # a non-empty output is refused without overwrite, as before
        calibrate_poses(log, out)

    # the odometry (parts in out.parts/) is not run again: the log and the report come from the parts
    shutil.rmtree(out)
    again = run_calibrate_poses(log, out)
    assert [r.status for r in again.results] == ["resumed"] and _tree(out) == first
    with pytest.raises(ConfigError, match="--overwrite"):  # parts of other options are never mixed in
        run_calibrate_poses(log, out, PosesOptions(removal=BoxRemoval("none")))
