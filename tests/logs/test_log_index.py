"""The on-disk index of nuScenes-layout tables (stridegen.logs.index, stridegen.logs.nuscenes_indexed_tables).

- the streamed JSON reader gives json.loads's values and the exact byte span of each record;
- a reader through the index gives the same scenes, frames and annotations as the whole-table path
  (``index=False``, the former reader) on a synthetic log, the tiny hand-written log and the real demo log;
- a changed table, a corrupt or truncated index, a read-only log and concurrent first opens are handled;
- the memory of a process that opens a log and reads one scene does not grow with the number of scenes (measured
  in fresh subprocesses; the whole-table path, measured the same way, does grow: the measurement can fail).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.cache_dir import CACHE_ENV
from stridegen.core.errors import LogFormatError
from stridegen.logs import index as log_index
from stridegen.logs.base import Scene
from stridegen.logs.index import INDEX_DIR_NAME, iter_json_records
from stridegen.logs.nuscenes import NuScenesReader
from stridegen.logs.nuscenes_indexed_tables import IndexedTables
from stridegen.logs.nuscenes_json_tables import JsonTables
from stridegen.logs.nuscenes_table_store import has_token, shape_reason
from tests.logs.test_nuscenes_reader import _write_tiny_log

pytestmark = pytest.mark.slow  # the tests index and replicate a generated log

REPO = Path(__file__).resolve().parents[2]
VERSION = "v1.0-synthetic"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexes of read-only logs go to a folder of this test, never to the user's cache."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))


# Fields that hold tokens of per-scene records (renamed per copy by replicate_log); the others (sensor, category,
# attribute, visibility) are shared by every copy.
RENAMED = (
    "token",
    "scene_token",
    "sample_token",
    "ego_pose_token",
    "calibrated_sensor_token",
    "instance_token",
    "log_token",
    "prev",
    "next",
    "first_sample_token",
    "last_sample_token",
    "first_annotation_token",
    "last_annotation_token",
)
SHARED_TABLES = ("sensor", "category", "attribute", "visibility")


def replicate_log(src: Path, dst: Path, copies: int) -> Path:
    """A nuScenes-layout log at ``dst`` with ``copies`` renamed copies of every scene of ``src`` (which it shares
    the sensor files of): the tables grow ``copies`` times, the scenes stay the synthetic ones."""
    dst.mkdir(parents=True)
    for folder in ("samples", "sweeps"):
        if (src / folder).is_dir():
            (dst / folder).symlink_to(src / folder)
    (dst / VERSION).mkdir()
    for table in sorted((src / VERSION).glob("*.json")):
        if table.name == "synthetic_truth.json":
            continue
        records = json.loads(table.read_text())
        if table.stem not in SHARED_TABLES:
            records = [_renamed(r, k) for k in range(copies) for r in records]
        (dst / VERSION / table.name).write_text(json.dumps(records))
    return dst


def _renamed(record: dict[str, Any], k: int) -> dict[str, Any]:
    out = dict(record)
    for key in RENAMED:
        if out.get(key):
            out[key] = f"r{k}-{out[key]}"
    if "log_tokens" in out:
        out["log_tokens"] = [f"r{k}-{t}" for t in out["log_tokens"]]
    if "first_sample_token" in out:  # a scene: names must stay unique
        out["name"] = f"{out['name']}-r{k}"
    return out


def _array(a: Any) -> tuple[str, tuple[int, ...], bytes]:
    a = np.asarray(a)
    if a.dtype == object:
        return ("object", a.shape, repr(a.tolist()).encode())
    return (a.dtype.str, a.shape, a.tobytes())


def _sample(s: Any) -> tuple[Any, ...]:
    c = s.calibration
    calibration = (
        c.channel,
        c.modality,
        _array(c.T_ego_from_sensor),
        None if c.intrinsic is None else _array(c.intrinsic),
    )
    return (
        s.token,
        s.channel,
        s.timestamp_us,
        str(s.path),
        _array(s.T_global_from_ego),
        calibration,
        c.width,
        c.height,
        s.is_key_frame,
    )


def scene_signature(scene: Scene) -> tuple[Any, ...]:
    """Everything a reader gives of a scene, arrays as bytes: frames, sensors, sweeps, annotations (velocities
    included)."""
    frames = []
    for f in scene.frames:
        ann = f.annotations()
        b = ann.boxes
        boxes = [_array(x) for x in (b.center, b.size_lwh, b.yaw, b.velocity, b.label, b.track_id)]
        extras = sorted((k, _array(v)) for k, v in b.extras.items())
        per_box = [
            _array(x)
            for x in (ann.category, ann.token, ann.num_lidar_pts, ann.num_radar_pts, ann.visibility, ann.attribute)
        ]
        frames.append(
            (
                f.token,
                f.scene_token,
                f.index,
                f.timestamp_us,
                _array(f.T_global_from_ego),
                sorted((ch, _sample(s)) for ch, s in f.sensors.items()),
                sorted((ch, [_sample(s) for s in sweeps]) for ch, sweeps in f.sweeps.items()),
                b.frame,
                boxes,
                extras,
                per_box,
            )
        )
    return (scene.token, scene.name, scene.description, scene.log_name, frames)


def log_signature(reader: NuScenesReader) -> list[Any]:
    return [reader.scene_ids(), *(scene_signature(reader.scene(name)) for name, _ in reader.scene_ids())]


def _index_files(root: Path) -> list[Path]:
    return sorted((root / INDEX_DIR_NAME).glob("*")) if (root / INDEX_DIR_NAME).is_dir() else []


# ---------------------------------------------------------------------------------------------- streamed JSON
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
records = st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=4).map(lambda d: {**d, "token": "t"}))


@settings(max_examples=60, deadline=None)
@given(records=records, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans(), bom=st.booleans())
def test_streamed_records_are_json_loads_and_their_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[dict[str, Any]],
    indent: int | None,
    ascii_only: bool,
    bom: bool,
) -> None:
    path = tmp_path_factory.mktemp("stream") / "table.json"
    data = json.dumps(records, indent=indent, ensure_ascii=ascii_only).encode()
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data + b"\n")
    old = log_index.CHUNK_BYTES
    log_index.CHUNK_BYTES = 7  # records cut by the window's end, multi-byte characters split across reads
    try:
        got = list(iter_json_records(path, "table", LogFormatError, has_token, "wrong shape"))
    finally:
        log_index.CHUNK_BYTES = old
    raw = path.read_bytes()
    assert [r.value for r in got] == records
    assert [r.row for r in got] == list(range(len(records)))
    for r in got:
        assert json.loads(raw[r.offset : r.offset + r.length]) == r.value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"token": "a"}, {"token": "b"', "line 1: not valid JSON"),
        ('[{"token": "a"},\n {"token": "b"},]', "line 2: not valid JSON"),
        ('[{"token": "a"}] [', "not valid JSON"),
        ('{"token": "a"}', "wrong shape"),
        ('[{"token": "a"}, {"name": "b"}]', "wrong shape"),
        ("   \n", "is empty"),
    ],
)
def test_streamed_errors_are_those_of_the_whole_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "table.json"
    path.write_text(text)
    with pytest.raises(LogFormatError, match=message) as err:
        list(iter_json_records(path, "table", LogFormatError, has_token, "wrong shape"))
    assert str(path) in str(err.value)
    path.write_bytes(text.encode("utf-16"))
    with pytest.raises(LogFormatError, match="UTF-16"):
        list(iter_json_records(path, "table", LogFormatError, has_token, "wrong shape"))


def test_broken_table_fails_both_paths_alike(tmp_path: Path, synthetic_log: Path) -> None:
    for name, text in [("sample", '[{"token": "a"},'), ("ego_pose", '{"token": "x"}')]:
        root = replicate_log(synthetic_log, tmp_path / name, 1)
        (root / VERSION / f"{name}.json").write_text(text)
        errors = []
        for index in (True, False):
            with pytest.raises(LogFormatError) as err:
                NuScenesReader(root, index=index)
            errors.append(str(err.value))
        assert errors[0] == errors[1] and f"{name}.json" in errors[0]
        assert "not valid JSON" in errors[0] or shape_reason(name) in errors[0]
        assert not list((root / INDEX_DIR_NAME).glob("*")), "a failed build leaves no file"


# ---------------------------------------------------------------------------------------------- same records
def test_synthetic_log_equals_whole_table_path(synthetic_log: Path) -> None:
    indexed = NuScenesReader(synthetic_log)
    assert isinstance(indexed.store, IndexedTables)
    whole = NuScenesReader(synthetic_log, index=False)
    assert isinstance(whole.store, JsonTables)
    expected = log_signature(whole)
    assert len(expected) == 4 and any(sweeps for f in expected[1][4] for _, sweeps in f[6])  # 3 scenes; LiDAR sweeps
    assert log_signature(indexed) == expected
    # Frames asked for in another order than scene by scene (annotations read outside the focused scenes).
    scenes = indexed.scenes()
    later = [scenes[2].frames[1].annotations(), scenes[0].frames[3].annotations()]
    assert [a.token.tolist() for a in later] == [
        whole.scene(scenes[2].name).frames[1].annotations().token.tolist(),
        whole.scene(scenes[0].name).frames[3].annotations().token.tolist(),
    ]
    moving = np.concatenate([f.annotations().boxes.velocity for f in scenes[1].frames])
    assert np.isfinite(moving).any()  # velocities from neighbours were compared, not only NaNs


def test_replicated_log_equals_whole_table_path(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 3)
    indexed, whole = NuScenesReader(root), NuScenesReader(root, index=False)
    assert len(indexed.scene_ids()) == 9
    assert log_signature(indexed) == log_signature(whole)
    assert indexed.scene("scene-0001-r2").name == "scene-0001-r2"
    assert indexed.scene(whole.scene_ids()[4][1]).token == whole.scene_ids()[4][1]
    with pytest.raises(LogFormatError, match="no scene named"):
        indexed.scene("scene-9999")


def test_tiny_log_equals_whole_table_path(tmp_path: Path) -> None:
    _write_tiny_log(tmp_path)
    assert log_signature(NuScenesReader(tmp_path)) == log_signature(NuScenesReader(tmp_path, index=False))


def test_demo_log_equals_whole_table_path(nuscenes_demo: Path) -> None:
    indexed = NuScenesReader(nuscenes_demo)
    assert log_signature(indexed) == log_signature(NuScenesReader(nuscenes_demo, index=False))
    assert len(indexed.scenes()[0].frames[0].annotations()) == 68
    # The shared data folder has no write permission bit: its index is in the cache folder, not beside the log.
    read_only = not nuscenes_demo.stat().st_mode & 0o222
    assert isinstance(indexed.store, IndexedTables) and indexed.store.index_path is not None
    where = log_index.index_cache_dir() if read_only else nuscenes_demo / INDEX_DIR_NAME
    assert indexed.store.index_path.parent == where


def test_bad_records_are_reported_alike(tmp_path: Path, synthetic_log: Path) -> None:
    """A conflicting duplicate token and an invalid ego pose: the same errors through the index."""
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    path = root / VERSION / "ego_pose.json"
    poses = json.loads(path.read_text())
    poses[5]["rotation"] = [1.0, 1.0, 0.0, 0.0]
    poses.append({**poses[-3], "translation": [0.0, 0.0, 0.0]})  # of the last scene
    path.write_text(json.dumps(poses))
    messages = []
    for index in (True, False):
        reader = NuScenesReader(root, index=index)
        errors: list[tuple[str, str] | None] = []
        for name, _ in reader.scene_ids():
            try:
                reader.scene(name)
                errors.append(None)
            except LogFormatError as exc:
                errors.append((type(exc).__name__, str(exc)))
        messages.append(errors)
    assert messages[0] == messages[1]
    assert [e and e[0] for e in messages[0]] == ["InvalidPoseError", None, "DuplicateTokenError"]


# ---------------------------------------------------------------------------------------------- the index file
def test_index_lives_with_the_log_and_is_reused(
    tmp_path: Path, synthetic_log: Path, capsys: pytest.CaptureFixture
) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    NuScenesReader(root).scenes()
    [index_file] = _index_files(root)
    stamp = index_file.stat().st_mtime_ns
    NuScenesReader(root).scenes()
    assert _index_files(root) == [index_file] and index_file.stat().st_mtime_ns == stamp  # not rebuilt
    assert capsys.readouterr().err == ""


def test_changed_table_is_reindexed(tmp_path: Path, synthetic_log: Path, capsys: pytest.CaptureFixture) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    assert NuScenesReader(root).scene("scene-0001-r0").description != "changed"
    path = root / VERSION / "scene.json"
    scenes = json.loads(path.read_text())
    scenes[1]["description"] = "changed"
    path.write_text(json.dumps(scenes))
    reader = NuScenesReader(root)
    assert reader.scene("scene-0001-r0").description == "changed"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not match the log's tables" in err and "rebuilding" in err
    assert len(_index_files(root)) == 1  # replaced, no temporary file left
    assert log_signature(reader) == log_signature(NuScenesReader(root, index=False))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "emptied"])
def test_corrupt_index_is_rebuilt(
    tmp_path: Path, synthetic_log: Path, capsys: pytest.CaptureFixture, damage: str
) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    expected = log_signature(NuScenesReader(root))
    [index_file] = _index_files(root)
    data = index_file.read_bytes()
    index_file.write_bytes(
        {"garbage": b"not an index" * 100, "truncated": data[: len(data) // 2], "emptied": b""}[damage]
    )
    assert log_signature(NuScenesReader(root)) == expected
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is corrupt; rebuilding it" in err
    assert len(_index_files(root)) == 1


def test_index_failing_while_open_is_rebuilt(
    tmp_path: Path, synthetic_log: Path, capsys: pytest.CaptureFixture
) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    reader = NuScenesReader(root)
    expected = scene_signature(reader.scene("scene-0000-r0"))
    assert isinstance(reader.store, IndexedTables)
    reader.store.close()  # the next query reconnects to the damaged file
    [index_file] = _index_files(root)
    index_file.write_bytes(b"\0" * index_file.stat().st_size)
    reader._scene_cache.clear()
    assert scene_signature(reader.scene("scene-0000-r0")) == expected
    assert "is corrupt; rebuilding it" in capsys.readouterr().err


def test_table_rewritten_in_place_while_open_is_an_error(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    reader = NuScenesReader(root)
    [(name, _)] = reader.scene_ids()[:1]
    path = root / VERSION / "sample.json"
    with path.open("r+b") as f:  # same inode, other bytes where the index points
        f.write(b"[" + b" " * 64)
    with pytest.raises(LogFormatError, match="changed since the log was opened") as err:
        reader.scene(name)
    assert "sample.json" in str(err.value)


def test_read_only_log_is_indexed_in_the_cache(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    mode = root.stat().st_mode
    root.chmod(0o555)
    try:
        reader = NuScenesReader(root)
        assert log_signature(reader) == log_signature(NuScenesReader(root, index=False))
    finally:
        root.chmod(mode)
    assert not (root / INDEX_DIR_NAME).exists()
    assert isinstance(reader.store, IndexedTables) and reader.store.index_path is not None
    assert reader.store.index_path.parent == tmp_path / "cache" / "log-index"


def test_indexes_of_deleted_logs_are_pruned(tmp_path: Path, synthetic_log: Path) -> None:
    cache = tmp_path / "cache" / "log-index"
    paths = []
    for name in ("a", "b"):
        root = replicate_log(synthetic_log, tmp_path / name, 1)
        root.chmod(0o555)  # indexed in the cache
        store = NuScenesReader(root).store
        root.chmod(0o755)
        assert isinstance(store, IndexedTables) and store.index_path is not None
        paths.append(store.index_path)
        if name == "a":
            shutil.rmtree(root)
    assert paths[0].parent == paths[1].parent == cache
    assert sorted(cache.iterdir()) == [paths[1]]  # a's index went when b's was built


def test_nowhere_to_write_loads_the_tables_whole(
    tmp_path: Path, synthetic_log: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache").chmod(0o555)
    mode = root.stat().st_mode
    root.chmod(0o555)
    try:
        reader = NuScenesReader(root)
    finally:
        root.chmod(mode)
    assert isinstance(reader.store, JsonTables)
    assert "cannot write a log index" in capsys.readouterr().err
    monkeypatch.setenv("STRIDEGEN_LOG_INDEX", "0")
    assert isinstance(NuScenesReader(root).store, JsonTables)


def test_reader_pickles(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    reader = NuScenesReader(root)
    reader.scenes()
    copy = pickle.loads(pickle.dumps(reader))
    assert log_signature(copy) == log_signature(reader)


_OPEN_AND_READ = """
import hashlib, pickle, sys
from stridegen.logs.nuscenes import NuScenesReader
from tests.logs.test_log_index import log_signature
print(hashlib.sha256(pickle.dumps(log_signature(NuScenesReader(sys.argv[1])))).hexdigest())
"""


def test_concurrent_first_opens(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 2)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", _OPEN_AND_READ, str(root)], stdout=subprocess.PIPE, env=env, cwd=REPO)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=300)[0].decode().strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outputs)) == 1 and len(outputs[0]) == 64
    assert [p.suffix for p in _index_files(root)] == [".sqlite"]  # one index, no temporary file


# ---------------------------------------------------------------------------------------------- memory
_MEASURE = """
import json, sys, tracemalloc
import stridegen.jobs.build  # what a build worker has imported
from stridegen.logs.nuscenes import NuScenesReader

def vm_hwm_kib():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))

start = vm_hwm_kib()
tracemalloc.start()
reader = NuScenesReader(sys.argv[1], index=sys.argv[2] == "index")
scene = reader.scene(reader.scene_ids()[0][0])
boxes = sum(len(frame.annotations()) for frame in scene.frames)
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"traced_peak": peak, "hwm_kib": vm_hwm_kib(), "start_kib": start, "boxes": boxes}))
"""


def _measure(root: Path, mode: str) -> dict[str, int]:
    """Peak memory of a fresh process that opens the log and reads its first scene with every annotation."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(root), mode],
        capture_output=True,
        env=env,
        cwd=REPO,
        check=True,
        timeout=300,
    )
    return json.loads(out.stdout)


@pytest.mark.slow
def test_worker_memory_does_not_grow_with_the_log(tmp_path: Path, synthetic_log: Path) -> None:
    small = replicate_log(synthetic_log, tmp_path / "small", 1)  # 3 scenes
    large = replicate_log(synthetic_log, tmp_path / "large", 10)  # 30 scenes
    for root in (small, large):
        NuScenesReader(root)  # the index is built once, before the workers open the log
    MiB = 1 << 20
    indexed = {root: _measure(root, "index") for root in (small, large)}
    whole = {root: _measure(root, "whole") for root in (small, large)}
    assert indexed[small]["boxes"] == indexed[large]["boxes"] == whole[small]["boxes"] > 0
    # The whole-table path grows with the tables (~10x here): the measurement sees growth where there is some.
    assert whole[large]["traced_peak"] - whole[small]["traced_peak"] > 8 * MiB
    # Through the index: Python allocations within 0.5 MiB, the process's peak resident memory within 4 MiB.
    assert abs(indexed[large]["traced_peak"] - indexed[small]["traced_peak"]) < MiB // 2
    assert abs(indexed[large]["hwm_kib"] - indexed[small]["hwm_kib"]) < 4 * 1024
    assert indexed[large]["traced_peak"] < whole[small]["traced_peak"]


def test_unknown_modalities_come_from_the_sensor_table_on_both_paths(tmp_path: Path, synthetic_log: Path) -> None:
    """What the build asks before it starts (``LogReader.unknown_modalities``), from the sensor table alone."""
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    assert NuScenesReader(root).unknown_modalities() == {}
    path = root / VERSION / "sensor.json"
    sensors = json.loads(path.read_text())
    for rec in sensors:
        if rec["channel"] in ("CAM_FRONT", "CAM_BACK"):
            rec["modality"] = "cam"
    del sensors[-1]["modality"]  # left to the scenes that use it
    path.write_text(json.dumps(sensors))
    assert sum(r.get("modality") == "cam" for r in sensors) == 2
    for index in (True, False):
        reader = NuScenesReader(root, index=index)
        assert reader.unknown_modalities() == {"cam": [r["channel"] for r in sensors if r.get("modality") == "cam"]}
        assert [r["token"] for r in reader.store.small_table("sensor")] == [r["token"] for r in sensors]
