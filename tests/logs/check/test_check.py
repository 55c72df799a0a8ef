"""The log doctor and honest builds on a bad-input corpus.

Every case copies the small synthetic log (generated once for the module) and makes one conversion mistake of
issue 13 in it. For each: what ``check_log`` reports (code, severity, likely cause) and what ``run_build`` does
(raises a typed error before any work, records the scene as failed, or builds it with a warning). The tally test
sums the corpus up; no mistake may go through silently.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.core.errors import LogCheckError, StrideGenError
from stridegen.core.transforms import quat_multiply, quat_to_rotmat
from stridegen.jobs.build import BuildResult, run_build
from stridegen.logs.check import CODES, CheckReport, check_log, image_header_size
from stridegen.run.config import load_build_config
from tests.shared_data import REPO

pytestmark = pytest.mark.slow  # the tests check and build copies of the session's two-scene log

VERSION = "v1.0-synthetic"
# Small builds: projected-box masks (no LiDAR read), three keyframes at 2, 3, 4 s.
FAST = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"]
ONE = ["log.scenes=[scene-0000]"]


@pytest.fixture(scope="module")
def base_log(two_scene_log: Path) -> Path:
    """The session's two-scene synthetic log (tests/conftest.py); a case copies it before its mistake."""
    return two_scene_log


# ------------------------------------------------------------------------------------------------------ tables
def _load(root: Path, name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((root / VERSION / f"{name}.json").read_text())
    return records


def _save(root: Path, name: str, records: list[dict[str, Any]]) -> None:
    (root / VERSION / f"{name}.json").write_text(json.dumps(records))  # NaN as the JSON extension literal


def _edit(root: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> None:
    records = _load(root, name)
    for r in records:
        edit(r)
    _save(root, name, records)


def _scene_samples(root: Path, scene: str = "scene-0000") -> list[dict[str, Any]]:
    """The samples of a scene in time order."""
    [rec] = [s for s in _load(root, "scene") if s["name"] == scene]
    by_token = {s["token"]: s for s in _load(root, "sample")}
    out, token = [], rec["first_sample_token"]
    while token:
        out.append(by_token[token])
        token = by_token[token]["next"]
    return out


def _lidar_data(root: Path, scene: str = "scene-0000") -> list[dict[str, Any]]:
    """The LIDAR_TOP sample_data of a scene's samples, in time order."""
    samples = [s["token"] for s in _scene_samples(root, scene)]
    lidar = {sd["sample_token"]: sd for sd in _load(root, "sample_data") if "LIDAR_TOP" in sd["filename"]}
    return [lidar[t] for t in samples]


# ------------------------------------------------------------------------------------------------------ mistakes
def quaternions_xyzw(root: Path) -> None:
    """Every rotation written as [x, y, z, w] (scipy's order)."""
    for table in ("ego_pose", "sample_annotation", "calibrated_sensor"):
        _edit(root, table, lambda r: r.__setitem__("rotation", r["rotation"][1:] + r["rotation"][:1]))


def timestamps_ns(root: Path) -> None:
    for table in ("sample", "sample_data", "ego_pose"):
        _edit(root, table, lambda r: r.__setitem__("timestamp", r["timestamp"] * 1000))


def modality_cam(root: Path) -> None:
    _edit(root, "sensor", lambda r: r.__setitem__("modality", "cam" if r["modality"] == "camera" else r["modality"]))


def no_lidar(root: Path) -> None:
    """The LiDAR sensor, its calibration and samples removed (a camera-only log)."""
    sensors = _load(root, "sensor")
    lidar = {s["token"] for s in sensors if s["modality"] == "lidar"}
    _save(root, "sensor", [s for s in sensors if s["token"] not in lidar])
    calibs = _load(root, "calibrated_sensor")
    gone = {c["token"] for c in calibs if c["sensor_token"] in lidar}
    _save(root, "calibrated_sensor", [c for c in calibs if c["token"] not in gone])
    _save(root, "sample_data", [sd for sd in _load(root, "sample_data") if sd["calibrated_sensor_token"] not in gone])


def sizes_lwh(root: Path) -> None:
    _edit(root, "sample_annotation", lambda r: r.__setitem__("size", [r["size"][1], r["size"][0], r["size"][2]]))


def _focal(value: float) -> Callable[[Path], None]:
    def mistake(root: Path) -> None:
        def edit(r: dict[str, Any]) -> None:
            if r.get("camera_intrinsic"):
                r["camera_intrinsic"][0][0] = r["camera_intrinsic"][1][1] = value

        _edit(root, "calibrated_sensor", edit)

    return mistake


def duplicate_ego_pose_token(root: Path) -> None:
    """Two different ego poses under one token (e.g. tokens made from a rounded timestamp), both referenced."""
    first, second = _lidar_data(root)[3:5]
    keep, merged = first["ego_pose_token"], second["ego_pose_token"]
    _edit(root, "ego_pose", lambda r: r.__setitem__("token", keep) if r["token"] == merged else None)
    _edit(
        root, "sample_data", lambda r: r.__setitem__("ego_pose_token", keep) if r["ego_pose_token"] == merged else None
    )


def lidar_zero_bytes(root: Path) -> None:
    (root / _lidar_data(root)[4]["filename"]).write_bytes(b"")


def empty_annotations(root: Path) -> None:
    _save(root, "sample_annotation", [])


def short_clip(root: Path) -> None:
    """scene-0000 cut after 6 frames (2.5 s at 2 Hz): shorter than the schedule's 2 s + 3 s window."""
    last = _scene_samples(root)[5]["token"]
    _edit(root, "sample", lambda r: r.__setitem__("next", "") if r["token"] == last else None)

    def cut(r: dict[str, Any]) -> None:
        if r["name"] == "scene-0000":
            r["last_sample_token"], r["nbr_samples"] = last, 6

    _edit(root, "scene", cut)


def constant_ego(root: Path) -> None:
    """No ego poses: every pose the identity, boxes in the ego frame (what a converter without poses writes)."""
    poses = {p["token"]: p for p in _load(root, "ego_pose")}
    lidar = {
        sd["sample_token"]: poses[sd["ego_pose_token"]]
        for sd in _load(root, "sample_data")
        if "LIDAR_TOP" in sd["filename"]
    }

    def to_ego(r: dict[str, Any]) -> None:
        pose = lidar[r["sample_token"]]
        q_inv = np.array(pose["rotation"]) * [1, -1, -1, -1]
        rot = quat_to_rotmat(q_inv)
        r["translation"] = (rot @ (np.array(r["translation"]) - pose["translation"])).tolist()
        r["rotation"] = quat_multiply(q_inv, np.array(r["rotation"])).tolist()

    _edit(root, "sample_annotation", to_ego)
    _edit(root, "ego_pose", lambda r: r.update(rotation=[1.0, 0.0, 0.0, 0.0], translation=[0.0, 0.0, 0.0]))


def bad_ego_quaternion(root: Path) -> None:
    token = _lidar_data(root)[2]["ego_pose_token"]
    _edit(root, "ego_pose", lambda r: r.__setitem__("rotation", [1.0, 0.5, 0.0, 0.0]) if r["token"] == token else None)


def bad_annotation_quaternion(root: Path) -> None:
    sample = _scene_samples(root)[2]["token"]
    done: list[str] = []

    def edit(r: dict[str, Any]) -> None:
        if r["sample_token"] == sample and not done:
            r["rotation"] = [1.0, 0.5, 0.0, 0.0]
            done.append(r["token"])

    _edit(root, "sample_annotation", edit)


def scene_name_slash(root: Path) -> None:
    _edit(root, "scene", lambda r: r.__setitem__("name", "drive/0000") if r["name"] == "scene-0000" else None)


@dataclass(frozen=True)
class Case:
    mistake: Callable[[Path], None]
    code: str  # the check's finding
    severity: str
    cause: str  # in the finding's likely cause
    build: str  # "error" (raised before any work) | "failure" (the scene recorded as failed) | "warning"
    scene: str | None = "scene-0000"  # the finding's scene (None: the whole log)
    overrides: tuple[str, ...] = (*FAST, *ONE)


CORPUS: dict[str, Case] = {
    "quaternions_xyzw": Case(quaternions_xyzw, "quaternion_order", "error", "[x, y, z, w]", "failure"),
    "timestamps_ns": Case(timestamps_ns, "timestamp_unit", "error", "look like ns", "failure"),
    "modality_cam": Case(modality_cam, "unknown_modality", "error", "'cam' for 'camera'", "error", None),
    "no_lidar_default_segmenter": Case(
        no_lidar,
        "no_lidar",
        "error",
        "projected_box",
        "failure",
        overrides=("keyframes.start_s=2", "keyframes.end_s=5", *ONE),
    ),
    "sizes_lwh": Case(sizes_lwh, "box_size_order", "error", "[width, length, height]", "failure"),
    "focal_nan": Case(_focal(float("nan")), "invalid_intrinsics", "error", "placeholder camera matrix", "failure"),
    "focal_zero": Case(_focal(0.0), "invalid_intrinsics", "error", "placeholder camera matrix", "failure"),
    "duplicate_ego_pose_token": Case(
        duplicate_ego_pose_token, "duplicate_token", "error", "rounded timestamp", "failure"
    ),
    "lidar_zero_bytes": Case(lidar_zero_bytes, "empty_sensor_file", "error", "wrote nothing", "failure"),
    "empty_annotations": Case(empty_annotations, "no_annotations", "warning", "empty annotation table", "warning"),
    "short_clip": Case(short_clip, "no_keyframes", "warning", "clip shorter than the schedule", "warning"),
    # Static boxes move in the "global" frame (the ego's): the ego moved (issue 33).
    "constant_ego": Case(constant_ego, "constant_ego_pose", "error", "stridegen calibrate poses", "failure"),
    "bad_ego_quaternion": Case(
        bad_ego_quaternion, "invalid_pose", "error", "not a unit [w, x, y, z]", "failure", overrides=tuple(FAST)
    ),
    "bad_annotation_quaternion": Case(
        bad_annotation_quaternion, "invalid_pose", "error", "not a unit [w, x, y, z]", "failure", overrides=tuple(FAST)
    ),
    "scene_name_slash": Case(
        scene_name_slash, "unsafe_scene_name", "error", "rename the scene", "failure", "drive/0000", tuple(FAST)
    ),
}


@dataclass
class Outcome:
    log: Path
    report: CheckReport
    kind: str  # "error" | "failure" | "warning" | "nothing"
    error: StrideGenError | None = None
    result: BuildResult | None = None


class Corpus:
    """Each case made, checked and built once, when a test first asks for it."""

    def __init__(self, base: Path, tmp: Path) -> None:
        self.base, self.tmp = base, tmp
        self.done: dict[str, Outcome] = {}

    def __getitem__(self, name: str) -> Outcome:
        if name not in self.done:
            self.done[name] = self._run(name, CORPUS[name])
        return self.done[name]

    def _run(self, name: str, case: Case) -> Outcome:
        log = self.tmp / name / "log"
        shutil.copytree(self.base, log, ignore=shutil.ignore_patterns("instance_ids", "maps"))
        case.mistake(log)
        config = load_build_config(None, list(case.overrides))
        report = check_log(log, config.check_settings())
        try:
            result = run_build(log, self.tmp / name / "ds", config)
        except StrideGenError as exc:
            return Outcome(log, report, "error", error=exc)
        kind = "failure" if result.failed else "warning" if result.warnings else "nothing"
        return Outcome(log, report, kind, result=result)


@pytest.fixture(scope="module")
def corpus(base_log: Path, tmp_path_factory) -> Corpus:
    return Corpus(base_log, tmp_path_factory.mktemp("check-corpus"))


# ------------------------------------------------------------------------------------------------------ the cases
def test_the_clean_log_has_no_finding(base_log: Path) -> None:
    report = check_log(base_log, load_build_config(None).check_settings())
    assert report.findings == [] and report.ok
    scene = report.scenes[0]
    assert (scene.name, scene.frames, scene.duration_s, scene.frame_rate_hz) == ("scene-0000", 16, 7.5, 2.0)
    # The default schedule (2-17 s, window -2..+3 s) on a 7.5 s clip: keyframes at 2, 3 and 4 s.
    assert scene.keyframes == 3 and scene.keyframes_skipped["clip ends before this time"] == 9
    assert len(scene.cameras) == 6 and scene.lidar == ["LIDAR_TOP"] and scene.annotations == 167
    assert scene.ego_speed_mps is not None and 5.0 < scene.ego_speed_mps < 10.0


@pytest.mark.parametrize("name", list(CORPUS))
def test_mistake_is_reported_by_check(corpus: Corpus, name: str) -> None:
    case, outcome = CORPUS[name], corpus[name]
    found = [f for f in outcome.report.findings if f.code == case.code]
    assert found, f"{name}: no {case.code} in {[f.text() for f in outcome.report.findings]}"
    assert {f.severity for f in found} == {case.severity}
    assert any(f.scene == case.scene for f in found)
    assert any(case.cause in f.likely_cause for f in found), [f.likely_cause for f in found]
    assert outcome.report.ok == (case.severity == "warning")


@pytest.mark.parametrize("name", list(CORPUS))
def test_mistake_is_not_silent_in_build(corpus: Corpus, name: str) -> None:
    case, outcome = CORPUS[name], corpus[name]
    assert outcome.kind == case.build, (outcome.kind, outcome.error, outcome.result)
    if case.build == "error":
        assert isinstance(outcome.error, LogCheckError) and case.code in str(outcome.error)
        assert not (outcome.log.parent / "ds").exists()  # nothing written
    elif case.build == "failure":
        assert outcome.result is not None
        [failed] = outcome.result.failed
        assert failed.scene == case.scene and failed.error_type == "LogCheckError"
        assert case.code in failed.reason and "likely cause" in failed.reason
        assert failed.timings_s == {}  # stopped before any stage ran
    else:
        assert outcome.result is not None and outcome.result.ok
        assert [w.code for w in outcome.result.warnings] == [case.code]


@pytest.mark.parametrize("name", [n for n, c in CORPUS.items() if c.build != "error"])
def test_scene_checks_in_the_workers_equal_the_check_before_the_build(
    corpus: Corpus, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nuScenes reader lists its sensors' modalities, so its scenes are checked in their workers; a reader that
    cannot (``unknown_modalities`` None) has every scene checked first. Both give the same results and warnings."""
    from stridegen.logs.nuscenes import NuScenesReader

    in_workers = corpus[name].result
    assert in_workers is not None
    monkeypatch.setattr(NuScenesReader, "unknown_modalities", lambda self: None)
    case = CORPUS[name]
    first = run_build(
        corpus[name].log, corpus.tmp / name / "ds-checked-first", load_build_config(None, list(case.overrides))
    )
    assert [(r.scene, r.status, r.reason, r.error_type) for r in first.results] == [
        (r.scene, r.status, r.reason, r.error_type) for r in in_workers.results
    ]
    assert first.warnings == in_workers.warnings and bool(first.warnings) == (case.build == "warning")
    assert first.check is not None and in_workers.check is not None
    assert [s.name for s in first.check.scenes] == [r.scene for r in first.results]  # walked in this process
    assert in_workers.check.scenes == []  # only the whole-log part here


def test_each_scene_is_checked_just_before_its_stages(base_log: Path, tmp_path: Path, monkeypatch) -> None:
    """In its worker: the check and the stages share the scene's metadata (built once per scene), and no serial
    walk over every scene comes first. A reader that cannot list its modalities gets the walk first."""
    import stridegen.jobs.build as build_module
    from stridegen.logs.nuscenes import NuScenesReader

    events: list[tuple[str, str]] = []
    check_scene, process_scene, make_scene = (
        build_module.check_scene,
        build_module.process_scene,
        NuScenesReader._make_scene,
    )
    monkeypatch.setattr(
        build_module, "check_scene", lambda r, c, n: events.append(("check", n)) or check_scene(r, c, n)
    )
    monkeypatch.setattr(
        build_module,
        "process_scene",
        lambda root, c, n, *a: events.append(("build", n)) or process_scene(root, c, n, *a),
    )
    monkeypatch.setattr(
        NuScenesReader, "_make_scene", lambda self, rec: events.append(("read", rec["name"])) or make_scene(self, rec)
    )
    result = run_build(base_log, tmp_path / "ds", load_build_config(None, FAST))
    assert result.ok and all("check" in r.timings_s for r in result.results)
    s0, s1 = "scene-0000", "scene-0001"
    assert events == [("check", s0), ("read", s0), ("build", s0), ("check", s1), ("read", s1), ("build", s1)]

    events.clear()
    monkeypatch.setattr(NuScenesReader, "unknown_modalities", lambda self: None)
    run_build(base_log, tmp_path / "ds2", load_build_config(None, FAST))
    assert events == [("read", s0), ("read", s1), ("build", s0), ("build", s1)]


def test_a_resumed_build_reports_the_same_warnings(corpus: Corpus) -> None:
    """A resumed scene runs in no worker: the driver checks it for its warnings, as the check before the build
    did."""
    outcome = corpus["short_clip"]
    assert outcome.result is not None and outcome.result.warnings
    config = load_build_config(None, list(CORPUS["short_clip"].overrides))
    again = run_build(outcome.log, outcome.result.out_dir, config)
    assert [r.status for r in again.results] == ["resumed"]
    assert again.warnings == outcome.result.warnings


def test_a_reader_whose_sensor_list_breaks_gets_the_full_check_first(
    base_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``unknown_modalities`` raising (a broken sensor table) is no crash: the build checks every scene first."""
    from stridegen.core.errors import LogFormatError
    from stridegen.logs.nuscenes import NuScenesReader

    def broken(self: NuScenesReader) -> dict[str, list[str]]:
        raise LogFormatError(self.root, "sensor.json: broken")

    monkeypatch.setattr(NuScenesReader, "unknown_modalities", broken)
    result = run_build(base_log, tmp_path / "ds", load_build_config(None, FAST))
    assert result.ok and result.check is not None
    assert [s.name for s in result.check.scenes] == ["scene-0000", "scene-0001"]


def test_a_bad_pose_fails_its_scene_alone_wherever_it_sits(corpus: Corpus) -> None:
    """Ego pose or annotation: the same class of bad input fails the same way, and the other scene is built."""
    reasons = []
    for name, table in (
        ("bad_ego_quaternion", "ego_pose.json"),
        ("bad_annotation_quaternion", "sample_annotation.json"),
    ):
        result = corpus[name].result
        assert result is not None
        assert [(r.scene, r.status) for r in result.results] == [("scene-0000", "failed"), ("scene-0001", "built")]
        reason = result.failed[0].reason
        assert "[invalid_pose]" in reason and "unit norm" in reason and table in reason
        reasons.append(reason.split("]")[0])
    assert reasons[0] == reasons[1]


def test_an_unsafe_scene_name_is_refused_before_any_stage(corpus: Corpus) -> None:
    result = corpus["scene_name_slash"].result
    assert result is not None
    assert [(r.scene, r.status) for r in result.results] == [("drive/0000", "failed"), ("scene-0001", "built")]
    assert "'drive/0000' is not a safe file name" in result.failed[0].reason
    manifest = json.loads(result.manifest_path.read_text())
    assert manifest["failed_scenes"][0]["scene"] == "drive/0000"
    assert sorted(p.name for p in (result.out_dir / "shards").iterdir()) == ["scene-0001.h5"]


def test_quaternion_order_names_each_table(corpus: Corpus) -> None:
    files = {
        Path(f.file or "").name for f in corpus["quaternions_xyzw"].report.findings if f.code == "quaternion_order"
    }
    assert files == {"ego_pose.json", "sample_annotation.json", "calibrated_sensor.json"}
    ego = next(f for f in corpus["quaternions_xyzw"].report.findings if f.file and f.file.endswith("ego_pose.json"))
    assert "drives backwards" in ego.message  # the synthetic ego heads along +x: level either way, but reversed


def test_warnings_are_in_the_build_report(corpus: Corpus) -> None:
    result = corpus["short_clip"].result
    assert result is not None and result.qa == 0
    report = json.loads((result.out_dir / "build_report.json").read_text())
    [warning] = report["warnings"]
    assert warning["code"] == "no_keyframes" and "2.50 s" in warning["likely_cause"]
    assert result.results[0].shard is not None and result.results[0].shard.counts["keyframes"] == 0
    constant = corpus["constant_ego"].result
    # Ego-frame boxes with identity poses: a failed scene pointing at calibrate poses (issue 33), not a build
    assert constant is not None and constant.qa == 0 and "stridegen calibrate poses" in constant.failed[0].reason


def test_corpus_tally(corpus: Corpus, capsys) -> None:
    tally = Counter(corpus[name].kind for name in CORPUS)
    counts = {kind: tally.get(kind, 0) for kind in ("error", "failure", "warning", "nothing")}
    with capsys.disabled():
        print(f"\nbad-input corpus ({len(CORPUS)} mistakes): {counts}")
    assert counts["nothing"] == 0
    assert counts == {"error": 1, "failure": 12, "warning": 2, "nothing": 0}  # constant_ego fails (issue 33)


# ------------------------------------------------------------------------------------------------------ the CLI
def _app():
    import typer

    from stridegen.cli.build import build
    from stridegen.cli.check import check

    app = typer.Typer(add_completion=False)
    app.callback()(lambda: None)
    app.command("check")(check)
    app.command("build")(build)
    return app


def test_check_command(corpus: Corpus, base_log: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(_app(), ["check", str(base_log), *FAST])
    assert res.exit_code == 0, res.output
    assert "scene-0000" in res.output and "0 warning(s)" in res.output
    log = corpus["timestamps_ns"].log
    res = runner.invoke(_app(), ["check", str(log), "--format", "nuscenes", "--version", VERSION])
    assert res.exit_code == 1
    assert "timestamp_unit" in res.output and "likely cause: timestamps look like ns" in " ".join(res.output.split())
    res = runner.invoke(_app(), ["check", str(log), "--json"])
    assert res.exit_code == 1
    data = json.loads(res.stdout)  # the report; the error line is on stderr
    assert data["errors"] == 2 and {f["code"] for f in data["findings"]} == {"timestamp_unit"}
    assert [s["keyframes"] for s in data["scenes"]] == [0, 0]
    res = runner.invoke(_app(), ["check", str(corpus["short_clip"].log), *FAST])
    assert res.exit_code == 0 and "no_keyframes" in res.output  # warnings print, exit 0
    res = runner.invoke(_app(), ["check", str(base_log), "nope.key=1"])
    assert res.exit_code == 2 and "unknown config key" in res.output


def test_build_command_refuses_an_empty_dataset(corpus: Corpus, tmp_path: Path) -> None:
    log = corpus["empty_annotations"].log
    runner = CliRunner()
    args = ["build", str(log), "--out", str(tmp_path / "ds"), *FAST, *ONE]
    res = runner.invoke(_app(), args)
    text = " ".join(res.output.split())
    assert res.exit_code == 3, res.output
    assert "no_annotations" in text and "likely cause: an empty annotation table" in text
    assert "the dataset has 0 QA" in text and "--allow-empty" in text
    res = runner.invoke(_app(), [*args, "--allow-empty"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(_app(), ["build", str(corpus["modality_cam"].log), "--out", str(tmp_path / "m"), *FAST])
    assert res.exit_code == 2 and "[unknown_modality]" in res.output  # the message is not eaten as markup


# ------------------------------------------------------------------------------------------------------ details
def test_timestamp_unit_names_milliseconds(base_log: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    shutil.copytree(base_log, log, ignore=shutil.ignore_patterns("instance_ids", "maps"))
    for table in ("sample", "sample_data", "ego_pose"):
        _edit(log, table, lambda r: r.__setitem__("timestamp", r["timestamp"] // 1000))
    [finding] = [
        f
        for f in check_log(log, load_build_config(None).check_settings(), deep=False).findings
        if f.scene == "scene-0000"
    ]
    assert finding.code == "timestamp_unit" and "look like ms" in finding.likely_cause


def test_image_header_size_and_mismatch(base_log: Path, tmp_path: Path) -> None:
    import cv2

    jpeg = next((base_log / "samples" / "CAM_FRONT").glob("*.jpg"))
    assert image_header_size(jpeg) == (320, 180)
    _, png = cv2.imencode(".png", np.zeros((7, 5, 3), np.uint8))
    (tmp_path / "x.png").write_bytes(png.tobytes())
    (tmp_path / "x.txt").write_bytes(b"not an image")
    assert image_header_size(tmp_path / "x.png") == (5, 7) and image_header_size(tmp_path / "x.txt") is None
    log = tmp_path / "log"
    shutil.copytree(base_log, log, ignore=shutil.ignore_patterns("instance_ids", "maps"))
    _edit(log, "sample_data", lambda r: r.update(width=1600, height=900) if r["width"] else None)
    config = load_build_config(None, ONE)
    codes = {f.code for f in check_log(log, config.check_settings()).findings}
    # The intrinsics of 320 x 180 for a "1600 x 900" image: a field of view of 146 degrees (issue 33's bounds).
    assert codes == {"image_size_mismatch", "unlikely_value"}
    shallow = check_log(log, config.check_settings(), deep=False).findings  # header reads are the deep part
    assert [f.code for f in shallow] == ["unlikely_value"]


def test_check_is_fast(base_log: Path, nuscenes_demo: Path) -> None:
    """Metadata and file sizes only: well under a second per scene on both logs (measured: tens of ms)."""
    for root in (base_log, nuscenes_demo):
        report = check_log(root, load_build_config(None).check_settings())
        assert report.scenes and max(s.check_s for s in report.scenes) < 1.0


def test_docs_list_every_code() -> None:
    text = (REPO / "docs" / "check.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in text.splitlines() if line.startswith("| `")}
    assert rows == set(CODES)


def test_a_reader_that_raises_gives_a_finding(base_log: Path) -> None:
    """A plugin reader's own exception in one scene is that scene's error, not a crash of the check."""
    from stridegen.logs import open_log
    from stridegen.logs.base import Scene

    class Broken(type(open_log(base_log))):  # type: ignore[misc]
        def scene(self, name_or_token: str) -> Scene:
            if name_or_token == "scene-0001":
                raise KeyError("ego_pose")
            return super().scene(name_or_token)

    report = check_log(Broken(base_log), load_build_config(None).check_settings())
    [finding] = report.errors
    assert (finding.code, finding.scene) == ("log_format", "scene-0001") and "KeyError" in finding.message
    assert [s.frames for s in report.scenes] == [16, 0]
