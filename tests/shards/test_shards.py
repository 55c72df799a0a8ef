"""Shard schema, writer determinism, manifest, journal, reader, and the build config."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stridegen
from stridegen.core.canonical import canonical_json
from stridegen.core.errors import ConfigError
from stridegen.run.config import (
    BuildConfig,
    apply_overrides,
    config_hash,
    load_build_config,
    parse_override,
)
from stridegen.shards import journal as jr
from stridegen.shards.manifest import build_manifest, manifest_bytes, read_manifest, write_manifest
from stridegen.shards.reader import open_dataset
from stridegen.shards.schema import (
    AttributesTable,
    CamerasTable,
    DetectionsTable,
    FramesTable,
    GroundTruthTable,
    ImagesTable,
    KeyframesTable,
    SceneMeta,
    SceneRecord,
    ShardError,
    SkippedKeyframesTable,
    TracksTable,
    bytes_array,
    str_array,
)
from stridegen.shards.writer import remove_stale_temporaries, sha256_file, write_shard

REPO = Path(__file__).resolve().parents[2]


def _jpeg(rng: np.random.Generator, h: int = 24, w: int = 32) -> bytes:
    ok, buf = cv2.imencode(".jpg", rng.integers(0, 255, (h, w, 3), dtype=np.uint8))
    assert ok
    return buf.tobytes()


def make_record(
    seed: int = 0,
    n_frames: int = 6,
    n_dets: int = 9,
    n_tracks: int = 3,
    n_gt: int = 5,
    n_images: int = 4,
    name: str = "scene-x",
    with_gt: bool = True,
) -> SceneRecord:
    """A hand-built record with random (seeded) contents and every table filled."""
    rng = np.random.default_rng(seed)
    n_cams = 2
    poses = np.tile(np.eye(4), (n_frames, 1, 1))
    poses[:, :3, 3] = rng.normal(size=(n_frames, 3))
    frames = FramesTable(
        str_array(f"tok{i}" for i in range(n_frames)),
        np.arange(n_frames, dtype=np.int64) * 500_000 + 1_532_402_927_647_951,
        poses,
    )
    cams = CamerasTable(
        str_array(["CAM_FRONT", "CAM_BACK"][:n_cams]),
        np.tile(np.eye(3), (n_cams, 1, 1)) * 800,
        np.tile(np.eye(4), (n_cams, 1, 1)),
        np.full(n_cams, 32, np.int32),
        np.full(n_cams, 24, np.int32),
    )
    images = ImagesTable(
        rng.integers(0, n_frames, n_images).astype(np.int32),
        rng.integers(0, n_cams, n_images).astype(np.int32),
        str_array(f"sd{i}" for i in range(n_images)),
        np.arange(n_images, dtype=np.int64),
        np.tile(np.eye(4), (n_images, 1, 1)),
        bytes_array(_jpeg(rng) for _ in range(n_images)),
    )
    offsets = np.arange(-2, 3) * 0.5
    window = np.where(np.array([[0, 1, 2, 3, -1]]) < n_frames, np.array([[0, 1, 2, 3, -1]]), -1)
    keyframes = KeyframesTable(
        np.array([min(2, n_frames - 1)], np.int32), np.array([1.0]), window.astype(np.int32), offsets
    )
    skipped = SkippedKeyframesTable(np.array([0.0, 5.0]), str_array(["window incomplete", "clip ends"]))
    dets = DetectionsTable(
        np.sort(rng.integers(0, n_frames, n_dets)).astype(np.int32),
        rng.normal(size=(n_dets, 3)),
        rng.uniform(1, 5, (n_dets, 3)),
        rng.uniform(-3, 3, n_dets),
        rng.normal(size=(n_dets, 3)),
        str_array(rng.choice(["car", "pedestrian"], n_dets)),
        rng.uniform(size=n_dets),
        str_array(rng.choice(["", "1", "2"], n_dets)),
    )
    present = rng.uniform(size=(n_tracks, n_frames)) > 0.3
    center = np.where(present[..., None], rng.normal(size=(n_tracks, n_frames, 3)), np.nan)
    tracks = TracksTable(
        str_array(str(i + 1) for i in range(n_tracks)),
        str_array(["car"] * n_tracks),
        present,
        center,
        np.where(present[..., None], np.full(3, 2.0), np.nan),
        np.where(present, 0.1, np.nan),
        np.where(present, 0.9, np.nan),
    )
    attrs = AttributesTable(np.where(present[..., None], np.full(3, 1.5), np.nan), rng.normal(size=(n_frames, 3)))
    gt = GroundTruthTable(
        np.zeros(n_gt, np.int32),
        str_array(f"inst{i}" for i in range(n_gt)),
        str_array(f"ann{i}" for i in range(n_gt)),
        str_array(["vehicle.car"] * n_gt),
        str_array(["car"] * n_gt),
        rng.normal(size=(n_gt, 3)),
        np.ones((n_gt, 3)),
        np.zeros(n_gt),
        np.full((n_gt, 3), np.nan),
        np.arange(n_gt, dtype=np.int32),
        np.full(n_gt, 4, np.int8),
        str_array(["vehicle.moving"] * n_gt),
    )
    meta = SceneMeta(
        token="scenetok",
        name=name,
        description="a test scene \u00e9",
        log_name="log-1",
        source_format="nuscenes",
        source_version="v1.0-test",
    )
    return SceneRecord(meta, frames, cams, images, keyframes, skipped, dets, tracks, attrs, gt if with_gt else None)


def _assert_tables_equal(a, b) -> None:
    for name, value in a.arrays().items():
        got = getattr(b, name)
        if name in type(a).BYTES_FIELDS:
            continue
        if np.asarray(value).dtype == object:
            assert list(np.asarray(got).ravel()) == list(np.asarray(value).ravel()), name
        else:
            np.testing.assert_array_equal(got, value, err_msg=name)
            assert np.asarray(got).dtype == np.asarray(value).dtype, name


def _dataset_from(tmp_path: Path, records: list[SceneRecord], cfg: BuildConfig | None = None) -> Path:
    cfg = cfg or BuildConfig()
    infos = [write_shard(r, tmp_path, config_hash(cfg)) for r in records]
    write_manifest(tmp_path, build_manifest(cfg, {"root": "/x", "format": "nuscenes", "version": "v"}, infos))
    return tmp_path


# ------------------------------------------------------------------------------------------------------ writer
def _stored_times(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """The access, modification, change and birth times (whole seconds) that each object of an HDF5 file keeps in
    its header, by path ("/": the root group); (0, 0, 0, 0) for an object that keeps none."""
    import h5py

    times: dict[str, tuple[int, int, int, int]] = {}

    def visit(name: str, obj: h5py.HLObject) -> None:
        info = h5py.h5o.get_info(obj.id)
        times[name] = (info.atime, info.mtime, info.ctime, info.btime)

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(visit)
    return times


def test_same_record_written_twice_gives_identical_bytes_at_any_time(tmp_path):
    """No object of the shard keeps a time (HDF5 object times, of one-second resolution, would make a later write
    differ; the control test below shows that the check sees them), and two writes give the same bytes."""
    record = make_record(seed=3)
    a = write_shard(record, tmp_path / "a", "h")
    assert set(_stored_times(tmp_path / "a" / a.file).values()) == {(0, 0, 0, 0)}
    b = write_shard(record, tmp_path / "b", "h")
    bytes_a = (tmp_path / "a" / a.file).read_bytes()
    assert bytes_a == (tmp_path / "b" / b.file).read_bytes()
    assert a.sha256 == b.sha256 == hashlib.sha256(bytes_a).hexdigest()
    assert a.bytes == len(bytes_a)
    assert a.file == "shards/scene-x.h5"


def test_control_group_times_would_break_determinism(tmp_path, monkeypatch):
    """The time check above can see timestamps: with object times left on, a group keeps the second it was written
    in, so that the same group written in another second differs."""
    import h5py

    from stridegen.shards import writer

    real = writer._group_plist

    def with_times():
        gcpl = real()
        gcpl.set_obj_track_times(True)
        return gcpl

    def write(path: Path) -> bytes:
        with writer.create_file(path) as f:
            writer.make_group(f, "g")
        return path.read_bytes()

    first = write(tmp_path / "p1.h5")
    assert write(tmp_path / "p2.h5") == first  # as shipped: no times
    assert _stored_times(tmp_path / "p2.h5")["g"] == (0, 0, 0, 0)
    monkeypatch.setattr(writer, "_group_plist", with_times)
    start = int(time.time())
    assert write(tmp_path / "p3.h5") != first  # the times are in the file
    assert start <= _stored_times(tmp_path / "p3.h5")["g"][1] <= time.time()  # the second of the write
    with h5py.File(tmp_path / "p3.h5") as f:
        assert "g" in f


def test_write_is_atomic_and_leaves_no_temporary(tmp_path):
    info = write_shard(make_record(), tmp_path, "h")
    names = sorted(p.name for p in (tmp_path / "shards").iterdir())
    assert names == ["scene-x.h5"]
    assert sha256_file(tmp_path / info.file) == info.sha256


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    record = make_record()
    record.detections.score = record.detections.score[:-1]  # wrong length: refused before any file is made
    with pytest.raises(ValueError, match="detections/score"):
        write_shard(record, tmp_path, "h")
    assert not (tmp_path / "shards").exists()

    from stridegen.shards import writer

    real, calls = writer.write_array, []

    def failing(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 5:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(writer, "write_array", failing)
    with pytest.raises(OSError, match="disk full"):
        write_shard(make_record(), tmp_path, "h")
    assert list((tmp_path / "shards").iterdir()) == []


def test_stale_temporaries_are_removed(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / ".scene-0.h5.tmp-123").write_bytes(b"partial")
    (shards / "scene-1.h5").write_bytes(b"keep")
    removed = remove_stale_temporaries(shards)
    assert [p.name for p in removed] == [".scene-0.h5.tmp-123"]
    assert sorted(p.name for p in shards.iterdir()) == ["scene-1.h5"]


def test_validate_rejects_cross_table_mismatch():
    record = make_record()
    record.attributes.velocity_global = record.attributes.velocity_global[:, :-1]
    with pytest.raises(ValueError, match="attributes/velocity_global"):
        record.validate()
    record = make_record()
    record.images.frame_index[0] = 99
    with pytest.raises(ValueError, match="images/frame_index"):
        record.validate()


# ------------------------------------------------------------------------------------------------------ reader
def test_round_trip_every_table(tmp_path):
    record = make_record(seed=1)
    root = _dataset_from(tmp_path, [record])
    with open_dataset(root, verify=True) as ds:
        assert ds.scenes == ["scene-x"]
        view = ds["scene-x"]
        for table in record.tables():
            _assert_tables_equal(table, view.table(table.GROUP))
        assert view.meta["description"] == "a test scene \u00e9"
        assert view.meta["count_detections"] == 9
        for i, (f, c) in enumerate(zip(record.images.frame_index, record.images.channel_index, strict=True)):
            channel = str(record.cameras.channel[c])
            if view.image_keys().index((channel, int(f))) == i:  # duplicates keep the last row
                assert view.image_bytes(channel, int(f)) == record.images.data[i].tobytes()
        channel, frame = view.image_keys()[0]
        rgb = view.image(channel, frame)
        expected = cv2.cvtColor(
            cv2.imdecode(np.frombuffer(view.image_bytes(channel, frame), np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB
        )
        np.testing.assert_array_equal(rgb, expected)
        with pytest.raises(KeyError, match="stores no"):
            view.image_bytes("CAM_NOPE", 0)
        back = view.record()
        assert back.counts() == record.counts()
        np.testing.assert_array_equal(back.images.data[0], record.images.data[0])


def test_record_without_ground_truth(tmp_path):
    root = _dataset_from(tmp_path, [make_record(with_gt=False)])
    view = open_dataset(root)["scene-x"]
    assert view.ground_truth is None
    assert "ground_truth" not in view.table_names


def test_rewriting_a_read_record_gives_the_same_bytes(tmp_path):
    record = make_record(seed=5)
    info = write_shard(record, tmp_path / "a", "h")
    back = open_dataset(_dataset_from(tmp_path / "r", [record]))["scene-x"].record()
    info2 = write_shard(back, tmp_path / "b", "h")
    assert info.sha256 == info2.sha256


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_frames=st.integers(1, 7),
    n_dets=st.integers(0, 12),
    n_tracks=st.integers(0, 4),
    n_gt=st.integers(0, 5),
    n_images=st.integers(0, 4),
    seed=st.integers(0, 2**16),
)
def test_round_trip_property(tmp_path_factory, n_frames, n_dets, n_tracks, n_gt, n_images, seed):
    record = make_record(seed, n_frames, n_dets, n_tracks, n_gt, n_images)
    root = tmp_path_factory.mktemp("rt")
    info = write_shard(record, root, config_hash(BuildConfig()))  # the manifest's: the reader checks it
    info2 = write_shard(record, root / "again", config_hash(BuildConfig()))
    assert info.sha256 == info2.sha256
    write_manifest(root, build_manifest(BuildConfig(), {}, [info]))
    view = open_dataset(root)["scene-x"]
    for table in record.tables():
        _assert_tables_equal(table, view.table(table.GROUP))
    view.close()


def test_missing_corrupt_and_mismatching_shards(tmp_path):
    root = _dataset_from(tmp_path, [make_record(name="a"), make_record(name="b", seed=2)])
    ds = open_dataset(root)
    ds.verify()
    (root / "shards" / "a.h5").unlink()
    with pytest.raises(ShardError, match="missing"):
        _ = ds["a"].frames
    (root / "shards" / "b.h5").write_bytes(b"not hdf5 at all")
    with pytest.raises(ShardError, match="corrupt"):
        _ = ds["b"].frames
    with pytest.raises(ShardError):
        ds.verify()
    with pytest.raises(KeyError, match="no scene"):
        ds.scene("c")


def test_verify_detects_a_changed_byte(tmp_path):
    root = _dataset_from(tmp_path, [make_record()])
    path = root / "shards" / "scene-x.h5"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ShardError, match="sha256"):
        open_dataset(root, verify=True)


def test_open_dataset_is_exported_lazily(tmp_path):
    root = _dataset_from(tmp_path, [make_record()])
    assert stridegen.open_dataset(root).scenes == ["scene-x"]
    with pytest.raises(AttributeError):
        _ = stridegen.no_such_thing


# ------------------------------------------------------------------------------------------------------ manifest
def test_manifest_totals_and_deterministic_bytes(tmp_path):
    cfg = BuildConfig()
    infos = [write_shard(make_record(name=n, seed=i), tmp_path, "h") for i, n in enumerate(["s0", "s1"])]
    m = build_manifest(cfg, {"root": "/r"}, infos, failed=[("s2", "boom")])
    assert m["totals"]["detections"] == 18
    assert m["totals"]["scenes"] == 2
    assert m["totals"]["bytes"] == sum(i.bytes for i in infos)
    assert [s["scenes"] for s in m["shards"]] == [["s0"], ["s1"]]
    assert m["failed_scenes"] == [{"scene": "s2", "reason": "boom"}]
    assert m["config_hash"] == config_hash(cfg)
    assert manifest_bytes(m) == manifest_bytes(json.loads(manifest_bytes(m)))
    assert b"time" not in manifest_bytes(m)


def test_read_manifest_errors(tmp_path):
    with pytest.raises(ShardError, match="not found"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text("{trunc")
    with pytest.raises(ShardError, match="corrupt"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "stridegen-dataset", "schema_version": 99}))
    with pytest.raises(ShardError, match="newer"):
        read_manifest(tmp_path)


# ------------------------------------------------------------------------------------------------------ journal
def test_journal_completed_requires_the_recorded_sha(tmp_path):
    journal = jr.Journal(tmp_path)
    journal.build_started("h", 1, ["a", "b", "c"])
    for name in ("a", "b", "c"):
        journal.scene_started(name)
    info_a = write_shard(make_record(name="a"), tmp_path, "h")
    info_b = write_shard(make_record(name="b"), tmp_path, "h")
    journal.scene_done("a", info_a)
    journal.scene_done("b", info_b)
    journal.scene_failed("c", "bad file", "LogFormatError")
    assert sorted(journal.completed()) == ["a", "b"]
    (tmp_path / info_b.file).write_bytes(b"x" * info_b.bytes)  # same size, other content
    assert sorted(journal.completed()) == ["a"]
    (tmp_path / info_a.file).unlink()
    assert journal.completed() == {}
    states = journal.states()
    assert states["c"].event == "failed" and states["c"].record["reason"] == "bad file"


def test_journal_skips_a_torn_last_line(tmp_path):
    journal = jr.Journal(tmp_path)
    info = write_shard(make_record(name="a"), tmp_path, "h")
    journal.scene_done("a", info)
    with open(journal.path, "ab") as fh:
        fh.write(b'{"event": "done", "scene": "b", "sha')
    assert list(journal.completed()) == ["a"]
    assert [e["event"] for e in journal.events()] == ["done"]


def test_config_hash_mismatch_is_refused_unless_overwrite(tmp_path):
    journal = jr.Journal(tmp_path)
    journal.build_started("old", 1, ["a"])
    write_shard(make_record(name="a"), tmp_path, "old")
    jr.check_output_folder(tmp_path, "old", overwrite=False)  # same config: fine
    with pytest.raises(ConfigError, match="another config"):
        jr.check_output_folder(tmp_path, "new", overwrite=False)
    jr.check_output_folder(tmp_path, "new", overwrite=True)
    assert not (tmp_path / "shards").exists() and not journal.path.exists()


# ------------------------------------------------------------------------------------------------------ config
def test_defaults_file_matches_the_model():
    assert load_build_config(REPO / "configs" / "build.yaml") == BuildConfig()


def test_overrides_are_coerced():
    cfg = load_build_config(
        None,
        [
            "workers=2",
            "keyframes.require_full_window=false",
            "keyframes.start_s=0",
            "detector.name=simulated",
            "detector.options.profile=bevfusion",
            "log.scenes=[scene-0000, scene-0002]",
            "tracker.distance_gates_m.car=2.5",
            "output.images=none",
            "segmenter.name=none",
        ],
    )
    assert cfg.workers == 2 and isinstance(cfg.workers, int)
    assert cfg.keyframes.require_full_window is False
    assert cfg.keyframes.start_s == 0.0
    assert cfg.detector.options == {"profile": "bevfusion"}
    assert cfg.log.scenes == ["scene-0000", "scene-0002"]
    assert cfg.tracker.distance_gates_m["car"] == 2.5 and cfg.tracker.distance_gates_m["bus"] == 5.5
    assert cfg.output.images == "none"
    with pytest.raises(ConfigError, match="segmenter needs the camera images"):
        load_build_config(None, ["output.images=none"])


def test_overrides_on_top_of_a_file(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("seed: 7\nkeyframes: {start_s: 1.0}\n")
    cfg = load_build_config(path, ["keyframes.end_s=9"])
    assert (cfg.seed, cfg.keyframes.start_s, cfg.keyframes.end_s) == (7, 1.0, 9.0)


@pytest.mark.parametrize(
    "override, message",
    [
        ("nope=1", "unknown config key 'nope'"),
        ("keyframes.nope=1", "'nope' is not a field of keyframes"),
        ("seed.x=1", "not a section"),
        ("workers=zero", "workers"),
        ("workers=0", "workers"),
        ("output.images=some", "output.images"),
        ("keyframes.end_s=1", "end_s"),
        ("novalue", "key=value"),
    ],
)
def test_bad_overrides_raise_config_error(override, message):
    with pytest.raises(ConfigError, match=message):
        load_build_config(None, [override])


def test_bad_files_raise_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"missing\.yaml: build config does not exist"):
        load_build_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("keyframes:\n  wrong_key: 1\n")
    with pytest.raises(ConfigError, match="wrong_key"):
        load_build_config(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_build_config(tmp_path / "list.yaml")


def test_config_hash_is_sha256_of_canonical_json_and_ignores_workers():
    cfg = BuildConfig()
    # workers and log.parked_ego (it only lets a parked ego's scene build) never change the output bytes
    unhashed = {"workers": True, "log": {"parked_ego": True}}
    expected = hashlib.sha256(
        json.dumps(cfg.model_dump(mode="json", exclude=unhashed), sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert config_hash(cfg) == expected
    assert config_hash(load_build_config(None, ["workers=4"])) == expected
    assert config_hash(load_build_config(None, ["log.parked_ego=true"])) == expected
    assert config_hash(load_build_config(None, ["seed=1"])) != expected
    assert canonical_json({"b": 1, "a": [1.5]}) == '{"a":[1.5],"b":1}'


def test_parse_override_and_apply_do_not_mutate():
    assert parse_override("a.b= 3") == ("a.b", 3)
    assert parse_override("log.version=") == ("log.version", None)
    data = {"keyframes": {"start_s": 1.0}}
    out = apply_overrides(data, ["keyframes.start_s=2"])
    assert data == {"keyframes": {"start_s": 1.0}} and out == {"keyframes": {"start_s": 2}}
