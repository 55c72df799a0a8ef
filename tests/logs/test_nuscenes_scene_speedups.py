"""The fast paths of scene construction give what the plain ones give, bit for bit, errors included.

- ``IndexedTables._read_many`` (records read in runs with one ``pread`` and parsed in place) against
  ``IndexedTables._read`` row by row: every record of a log, rows in any order, non-ASCII records, and tables
  changed, truncated or removed while the log is open (the same error, of the same first bad row).
- ``transforms.pose_transform`` (the reader's single-pose path) against ``transforms.make_transform``: every pose of
  the logs and random quaternions, and the inputs it hands to ``make_transform``.
- The bounded calibration cache and the lookups ``load_annotations`` makes once per frame.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stridegen.core.cache_dir import CACHE_ENV
from stridegen.core.errors import LogFormatError, MissingFileError
from stridegen.core.transforms import make_transform, pose_transform
from stridegen.logs import nuscenes as nuscenes_module
from stridegen.logs import nuscenes_indexed_tables
from stridegen.logs.nuscenes import NuScenesReader
from stridegen.logs.nuscenes_indexed_tables import _CODE, IndexedTables, _runs
from tests.logs.test_log_index import VERSION, replicate_log, scene_signature
from tests.shared_data import NUSCENES_DEMO

pytestmark = pytest.mark.slow  # the tests read a generated log


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexes of read-only logs go to a folder of this test, never to the user's cache."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))


def _store(reader: NuScenesReader) -> IndexedTables:
    assert isinstance(reader.store, IndexedTables)
    return reader.store


def _all_rows(store: IndexedTables) -> list[tuple[Any, ...]]:
    return store._rows("tbl >= ?", (0,))


def _outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """("ok", value) or (error type, message, path) of a call: what a caller of it would see."""
    try:
        return ("ok", call())
    except LogFormatError as exc:
        return (type(exc).__name__, str(exc), str(exc.path))


def _single(store: IndexedTables, rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return [store._read(row) for row in rows]


# ---------------------------------------------------------------------------------------------- bulk reads
def test_runs_group_close_spans_within_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    gap = nuscenes_indexed_tables.BULK_GAP_BYTES
    spans = [(0, 10), (12, 5), (17 + gap, 4), (22 + 2 * gap, 1)]
    # 12 - 10 = 2 apart: joined; 17 + gap starts exactly gap bytes after 17: joined; the last one gap + 1 after
    assert list(_runs(spans)) == [((0, 21 + gap), [0, 1, 2]), ((22 + 2 * gap, 23 + 2 * gap), [3])]
    monkeypatch.setattr(nuscenes_indexed_tables, "BULK_SPAN_BYTES", 16)
    # (0, 10) + (12, 5) would span 17 > 16 bytes; a span longer than the limit stays a run of its own
    assert list(_runs([(0, 10), (12, 5), (30, 40)])) == [((0, 10), [0]), ((12, 17), [1]), ((30, 70), [2])]
    assert list(_runs([])) == []


def test_bulk_reads_equal_single_reads_for_every_record(synthetic_log: Path) -> None:
    store = _store(NuScenesReader(synthetic_log))
    rows = _all_rows(store)
    expected = _single(store, rows)
    assert len(store._read_bulk(rows)) == len(rows)  # every record of an unchanged ASCII log in bulk
    assert store._read_many(rows) == expected
    order = np.random.default_rng(0).permutation(len(rows))
    assert store._read_many([rows[i] for i in order]) == [expected[i] for i in order]


def test_focused_scene_equals_rows_read_one_by_one(synthetic_log: Path) -> None:
    reader = NuScenesReader(synthetic_log)
    store = _store(reader)
    for _, token in reader.scene_ids():
        store.focus(token)
        scene = store._focus[token]
        for (table, record_token), record in scene.records.items():
            [row] = store._rows("tbl = ? AND token = ?", (_CODE[table], record_token))
            assert record == store._read(row)


def test_non_ascii_records_are_read_one_by_one(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    path = root / VERSION / "sample_annotation.json"
    records = json.loads(path.read_text())
    records[3]["note"] = "Straße, 東京"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    reader = NuScenesReader(root)
    store = _store(reader)
    rows = _all_rows(store)
    bulk = store._read_bulk(rows)
    assert len(bulk) < len(rows)  # the run holding the non-ASCII record is left to _read
    assert store._read_many(rows) == _single(store, rows)
    assert records[3] in store._read_many(rows)
    plain = NuScenesReader(root, index=False)
    assert [scene_signature(reader.scene(n)) for n, _ in reader.scene_ids()] == [
        scene_signature(plain.scene(n)) for n, _ in plain.scene_ids()
    ]


def _rows_of(store: IndexedTables, table: str) -> list[tuple[Any, ...]]:
    return store._rows("tbl = ?", (_CODE[table],))


def _overwrite(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as f:  # same inode, other bytes where the index points
        f.seek(offset)
        f.write(data)


def test_records_changed_in_place_give_the_error_of_the_first_bad_row(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    reader = NuScenesReader(root)
    store = _store(reader)
    path = root / VERSION / "sample_annotation.json"
    rows = _rows_of(store, "sample_annotation")
    early, late = rows[5], rows[40]
    _overwrite(path, early[5] + 1, b" " * 8)  # no longer JSON
    token_at = path.read_bytes().index(late[2].encode(), late[5])  # valid JSON, another token
    _overwrite(path, token_at, b"x" * len(late[2]))
    for order in (rows, rows[::-1]):
        single = _outcome(partial(_single, store, order))
        assert single[0] == "LogFormatError"
        assert _outcome(partial(store._read_many, order)) == single
    assert repr(early[2]) in _outcome(lambda: store._read_many(rows))[1]
    assert repr(late[2]) in _outcome(lambda: store._read_many(rows[::-1]))[1]
    scene_of_early = next(
        name
        for name, token in reader.scene_ids()
        if early[3] in {row[2] for row in store._rows("tbl = ? AND parent = ?", (_CODE["sample"], token))}
    )
    with pytest.raises(LogFormatError, match="changed since the log was opened") as err:
        reader.scene(scene_of_early)
    assert "sample_annotation.json" in str(err.value) and repr(early[2]) in str(err.value)


def test_truncated_table_gives_the_error_of_single_reads(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    store = _store(NuScenesReader(root))
    rows = _rows_of(store, "sample_data")
    path = root / VERSION / "sample_data.json"
    os.truncate(path, rows[len(rows) // 2][5] + 10)  # the pread of the run comes back short
    single = _outcome(lambda: _single(store, rows))
    assert single[0] == "LogFormatError" and repr(rows[len(rows) // 2][2]) in single[1]
    assert _outcome(lambda: store._read_many(rows)) == single


def test_removed_table_gives_the_error_of_single_reads(tmp_path: Path, synthetic_log: Path) -> None:
    root = replicate_log(synthetic_log, tmp_path / "log", 1)
    reader = NuScenesReader(root)  # no table file opened yet
    (root / VERSION / "sample_data.json").unlink()
    rows = _rows_of(_store(reader), "sample") + _rows_of(_store(reader), "sample_data")
    bulk = _outcome(lambda: _store(reader)._read_many(rows))
    assert bulk[0] == MissingFileError.__name__ and "sample_data.json" in bulk[2]
    assert bulk == _outcome(lambda: _single(_store(reader), rows))
    with pytest.raises(MissingFileError, match="removed after the log was opened"):
        reader.scene(reader.scene_ids()[0][0])


# ---------------------------------------------------------------------------------------------- poses
def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape, layout and bits (NaN payloads and signed zeros included)."""
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and a.flags.c_contiguous == b.flags.c_contiguous
        and a.tobytes() == b.tobytes()
    )


def _plain(rotation: Any, translation: Any) -> np.ndarray:
    """The transform the reader made before ``pose_transform``, from the table's values as they are."""
    return make_transform(rotation, translation)


def _table_poses(root: Path) -> list[tuple[Any, Any]]:
    [table_dir] = [p for p in root.iterdir() if (p / "scene.json").is_file()]
    out = []
    for table in ("ego_pose", "calibrated_sensor"):
        out += [(r["rotation"], r["translation"]) for r in json.loads((table_dir / f"{table}.json").read_text())]
    return out


def test_pose_transform_equals_make_transform_on_every_pose_of_the_logs(synthetic_log: Path) -> None:
    poses = _table_poses(synthetic_log)
    if NUSCENES_DEMO.is_dir():  # real poses: rotations about every axis
        poses += _table_poses(NUSCENES_DEMO)
    assert len(poses) > 100
    for rotation, translation in poses:
        assert _same(pose_transform(rotation, translation), _plain(rotation, translation))


def _random_poses(n: int) -> list[tuple[list[Any], list[Any]]]:
    rng = np.random.default_rng(11)
    q = rng.normal(size=(n, 4))
    q[: n // 2] /= np.linalg.norm(q[: n // 2], axis=1, keepdims=True)  # unit, as in the tables
    q[n // 2 :] *= 10.0 ** rng.integers(-150, 150, size=(n - n // 2, 1))  # any scale
    t = rng.normal(size=(n, 3)) * 1e3
    poses: list[tuple[list[Any], list[Any]]] = [(a.tolist(), b.tolist()) for a, b in zip(q, t, strict=True)]
    ints = rng.integers(-3, 4, size=(200, 4))
    poses += [(a.tolist(), [1, -2, 3]) for a in ints if a.any()]  # JSON integers
    poses += [([1, 0.0, 0, 0.0], [0, 0.5, 2**60]), ([0.0, -0.0, 1.0, -0.0], [-0.0, 0.0, 1e308])]
    return poses


def test_pose_transform_equals_make_transform_on_random_quaternions() -> None:
    poses = _random_poses(20_000)
    for rotation, translation in poses:
        assert _same(pose_transform(rotation, translation), _plain(rotation, translation))
    # The comparison can fail: adding the squares in another order gives other bits for some of these.
    other = 0
    for rotation, _ in poses[:2000]:
        w, x, y, z = rotation
        reordered = np.sqrt(w * w + ((x * x + y * y) + z * z))
        other += reordered != np.linalg.norm(np.asarray(rotation, dtype=np.float64), axis=-1)
    assert other > 0


@pytest.mark.parametrize(
    ("rotation", "translation"),
    [
        ([0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0]),  # zero norm: NaN rotation, as make_transform gives
        ([float("nan"), 0.0, 0.0, 1.0], [1.0, 2.0, 3.0]),
        ([1e200, 1e200, 0.0, 0.0], [1.0, 2.0, 3.0]),  # the squares overflow
        ([True, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0]),  # not numbers of JSON
        (np.array([0.5, 0.5, 0.5, 0.5]), np.array([1.0, 2.0, 3.0])),
        ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [1.0, 2.0, 3.0]),  # a rotation matrix
        ([0.5, 0.5, 0.5, 0.5], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),  # batched translations
    ],
)
def test_pose_transform_hands_other_inputs_to_make_transform(rotation: Any, translation: Any) -> None:
    with np.errstate(all="ignore"):
        assert _same(pose_transform(rotation, translation), _plain(rotation, translation))


def test_int_too_large_for_a_float_fails_alike() -> None:
    for call in (pose_transform, _plain):
        with pytest.raises(OverflowError):
            call([10**400, 0, 0, 0], [0.0, 0.0, 0.0])


# ---------------------------------------------------------------------------------------------- reader caches
def test_calibration_cache_is_bounded_and_recomputes_the_same(
    synthetic_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nuscenes_module, "CALIBRATION_CACHE", 3)
    reader = NuScenesReader(synthetic_log)
    frame = reader.scene(reader.scene_ids()[0][0]).frames[0]
    samples = list(frame.sensors.values())
    assert len(samples) > 3  # more calibrations than the cache holds
    reader._calib_cache.clear()
    sd = [reader.get("sample_data", s.token) for s in samples]
    first = [reader.calibration(r) for r in sd]
    assert len(reader._calib_cache) == 3
    again = [reader.calibration(r) for r in sd]
    assert len(reader._calib_cache) == 3
    for a, b, s in zip(first, again, samples, strict=True):
        assert a is not b  # read in a cycle through 3 places: each was dropped and made again
        for c in (b, s.calibration):
            assert (a.channel, a.modality, a.width, a.height) == (c.channel, c.modality, c.width, c.height)
            assert _same(a.T_ego_from_sensor, c.T_ego_from_sensor)
            if a.intrinsic is None:
                assert c.intrinsic is None
            else:
                assert c.intrinsic is not None and _same(a.intrinsic, c.intrinsic)


def _with_annotations_changed(root: Path, change: Callable[[list[dict[str, Any]]], None]) -> tuple[Path, str]:
    """The log at ``root`` with ``change`` applied to the annotations of its first sample that has several; the
    token of that sample."""
    path = root / VERSION / "sample_annotation.json"
    records = json.loads(path.read_text())
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_sample.setdefault(r["sample_token"], []).append(r)
    sample = next(t for t, anns in by_sample.items() if len(anns) >= 3)
    change(by_sample[sample])
    path.write_text(json.dumps(records))
    return root, sample


def _frame_of(reader: NuScenesReader, sample: str) -> Any:
    for name, _ in reader.scene_ids():
        for frame in reader.scene(name).frames:
            if frame.token == sample:
                return frame
    raise AssertionError(sample)


def test_annotation_lookups_once_per_frame_give_the_same_errors(tmp_path: Path, synthetic_log: Path) -> None:
    def missing_instance(anns: list[dict[str, Any]]) -> None:
        anns[2]["instance_token"] = "no-such-instance"  # after two good ones (their category looked up once)

    def missing_attribute(anns: list[dict[str, Any]]) -> None:
        for a in anns[1:]:
            a["attribute_tokens"] = ["no-such-attribute"]

    for change, table, token in (
        (missing_instance, "instance", "no-such-instance"),
        (missing_attribute, "attribute", "no-such-attribute"),
    ):
        root, sample = _with_annotations_changed(replicate_log(synthetic_log, tmp_path / table, 1), change)
        for index in (True, False):
            frame = _frame_of(NuScenesReader(root, index=index), sample)
            with pytest.raises(LogFormatError) as err:
                frame.annotations()
            assert str(err.value.path).endswith(f"{table}.json")
            assert f"no {table} record with token {token!r}" in str(err.value)


def test_annotations_of_a_frame_equal_the_whole_table_reader(synthetic_log: Path) -> None:
    indexed, whole = NuScenesReader(synthetic_log), NuScenesReader(synthetic_log, index=False)
    for name, _ in indexed.scene_ids():
        assert scene_signature(indexed.scene(name)) == scene_signature(whole.scene(name))
