"""Shard integrity: a damaged byte in any table's values is refused, by every reader path, with a ShardError naming
the shard and the dataset; damaged, truncated or foreign files never surface as raw h5py / OSError exceptions.

The byte positions come from the file itself: h5py gives each dataset's chunks (``get_chunk_info``) or contiguous
block (``get_offset``); the values of variable-length datasets (strings, image files) live in HDF5 global heap
collections, located through the heap IDs stored in the dataset's block (HDF5 File Format Specification 3.0,
section III.E "Global Heap": a collection is ``GCOL``, version, 3 reserved bytes, its 8-byte size, then objects of
2-byte index, 2-byte reference count, 4 reserved bytes, 8-byte size and the data padded to 8 bytes; a heap ID in a
dataset is the 4-byte sequence length, the 8-byte collection address and the 4-byte object index).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click
import h5py
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.shards.integrity import CHECKSUM_ATTRS, PATHS_ATTR, ROW_CHECKSUM_ATTR
from stridegen.shards.reader import UncheckedShardWarning, open_dataset
from stridegen.shards.schema import ShardError
from tests.shards.test_shard_identity import _match_files

pytestmark = pytest.mark.slow  # the tests read (and damage copies of) the session's built dataset

SCENE = "scene-0000"
Span = tuple[int, int]  # (file offset, length)


# ---------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def built(two_scene_dataset: Path) -> Path:
    """A small built dataset (2 synthetic scenes, projected-box masks, QA), never modified: the session's
    (tests/conftest.py)."""
    return two_scene_dataset


@pytest.fixture(scope="module")
def work(built, tmp_path_factory) -> Path:
    """A copy of the dataset that tests damage in place and restore (``damaged``)."""
    out = tmp_path_factory.mktemp("integrity-work") / "ds"
    shutil.copytree(built, out)
    return out


@pytest.fixture(scope="module")
def shard(work) -> Path:
    return work / "shards" / f"{SCENE}.h5"


@pytest.fixture(scope="module")
def spans(shard) -> dict[str, list[Span]]:
    return value_spans(shard)


@pytest.fixture(scope="module")
def clean_digest(work) -> str:
    return read_scene(work)


# ---------------------------------------------------------------------------------------------------- helpers
def _heap_objects(raw: bytes, collection: int) -> dict[int, Span]:
    """{object index: offset and size of its data} of the global heap collection at ``collection``, read once
    (a collection holds every string of a dataset: looking each one up from the start was quadratic)."""
    assert raw[collection : collection + 4] == b"GCOL", collection
    (size,) = struct.unpack_from("<Q", raw, collection + 8)
    pos, end = collection + 16, collection + size
    out: dict[int, Span] = {}
    while pos < end:
        obj_index, _refs, _reserved, obj_size = struct.unpack_from("<HHIQ", raw, pos)
        if obj_index == 0:  # the free space: the end of the collection's objects
            break
        out.setdefault(obj_index, (pos + 16, obj_size))
        pos += 16 + (obj_size + 7) // 8 * 8
    return out


def _heap_object(raw: bytes, collection: int, index: int, cache: dict[int, dict[int, Span]]) -> Span:
    """Offset and size of object ``index``'s data in the global heap collection at ``collection`` (``cache``: the
    collections already read)."""
    if collection not in cache:
        cache[collection] = _heap_objects(raw, collection)
    if index not in cache[collection]:
        raise KeyError(f"no object {index} in the collection at {collection}")
    return cache[collection][index]


@dataclass
class Storage:
    """Where one dataset's bytes are: its chunks, or its contiguous block; ``vlen``: the block holds heap IDs."""

    vlen: bool
    chunks: list[Span]
    block: Span | None


def _storage(path: Path) -> dict[str, Storage]:
    """{dataset path under the scene group: its storage}, from h5py's low-level dataset API."""
    out: dict[str, Storage] = {}

    def visit(name: str, obj) -> None:
        if not isinstance(obj, h5py.Dataset):
            return
        chunks = [obj.id.get_chunk_info(i) for i in range(obj.id.get_num_chunks())] if obj.chunks else []
        offset = None if obj.chunks else obj.id.get_offset()
        block = (offset, obj.id.get_storage_size()) if offset is not None else None
        out[name] = Storage(
            h5py.check_vlen_dtype(obj.dtype) is not None, [(c.byte_offset, c.size) for c in chunks], block
        )

    with h5py.File(path, "r") as f:
        f["scenes"][SCENE].visititems(visit)
    return out


def value_spans(path: Path) -> dict[str, list[Span]]:
    """{dataset path under the scene group: the byte spans holding its values}: its chunks, its contiguous block,
    or (variable-length datasets) each value's heap object, in row order. Datasets without values are left out."""
    raw = path.read_bytes()
    out: dict[str, list[Span]] = {}
    collections: dict[int, dict[int, Span]] = {}
    for name, info in _storage(path).items():
        found = list(info.chunks)
        if info.block is not None and info.vlen:
            offset, size = info.block
            ids = [struct.unpack_from("<IQI", raw, offset + 16 * k) for k in range(size // 16)]
            found = [_heap_object(raw, addr, index, collections) for _, addr, index in ids]
        elif info.block is not None:
            found = [info.block]
        found = [s for s in found if s[1] > 0]
        if found:
            out[name] = found
    return out


def heap_id_blocks(path: Path) -> dict[str, Span]:
    """{variable-length dataset: its contiguous block of heap IDs (16 bytes per value)}."""
    return {name: info.block for name, info in _storage(path).items() if info.vlen and info.block is not None}


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` as a new file at ``path`` (a new inode, as the shard writer does: HDF5 shares an open file's
    caches with a later open of the same inode, so rewriting in place could serve a handle's stale cache)."""
    tmp = path.with_name(path.name + ".tmp-test")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@contextmanager
def damaged(path: Path, positions, xor: int = 0xFF, replace: bytes | None = None) -> Iterator[None]:
    """The file with the bytes at ``positions`` XORed with ``xor`` (or the whole file replaced), restored after."""
    clean = path.read_bytes()
    if replace is not None:
        _replace(path, replace)
    else:
        data = bytearray(clean)
        for p in set(positions):
            data[p] ^= xor
        _replace(path, bytes(data))
    try:
        yield
    finally:
        _replace(path, clean)


def _update(h, value) -> None:
    arr = np.asarray(value)
    if arr.dtype == object:
        h.update(repr([v.tobytes() if isinstance(v, np.ndarray) else v for v in arr.ravel().tolist()]).encode())
    else:
        h.update(f"{arr.dtype.str}{arr.shape}".encode() + np.ascontiguousarray(arr).tobytes())


def read_scene(root: Path, scene: str = SCENE) -> str:
    """Everything a reader can get from one scene (attributes, every table, every image), as a digest."""
    h = hashlib.sha256()
    with open_dataset(root) as ds:
        view = ds.scene(scene)
        h.update(repr(sorted(view.meta.items())).encode())
        for name in view.table_names:
            table = view.table(name)
            arrays = table if isinstance(table, dict) else table.arrays()
            for key in sorted(arrays):
                h.update(key.encode())
                _update(h, arrays[key])
        for channel, frame in view.image_keys():
            h.update(view.image_bytes(channel, frame))
    return h.hexdigest()


def _outcome(root: Path, clean: str) -> tuple[str, ShardError | None]:
    """("refused", error) or ("same", None); anything else (another exception, other values) fails the test."""
    try:
        digest = read_scene(root)
    except ShardError as exc:
        return "refused", exc
    assert digest == clean, "a damaged shard was read without error and gave other values"
    return "same", None


def _read_one(root: Path, path: str, row: int) -> None:
    """Read one dataset through the public API (one image for images/data)."""
    with open_dataset(root) as ds:
        view = ds.scene(SCENE)
        if path == "images/data":
            view.image_bytes(*view.image_keys()[row])
        else:
            view.array(path)


def _positions(span: Span) -> list[int]:
    offset, size = span
    return sorted({offset, offset + size // 2, offset + size - 1})


# ---------------------------------------------------------------------------------------------------- the clean file
def test_every_dataset_is_listed_with_a_checksum(shard, work, spans):
    with h5py.File(shard, "r") as f:
        group = f["scenes"][SCENE]
        listed = [str(p) for p in group.attrs[PATHS_ATTR]]
        names: list[str] = []
        group.visititems(lambda name, obj: names.append(name) if hasattr(obj, "dtype") else None)
        assert listed == sorted(names)
        assert len(group["images/data"].attrs[ROW_CHECKSUM_ATTR]) == group["images/data"].shape[0]
    with open_dataset(work, verify=True) as ds:
        for view in ds:
            view.check(images=True)
            assert not set(CHECKSUM_ATTRS) & set(view.meta)
    tables = {name.split("/")[0] for name in spans}
    assert {"frames", "cameras", "images", "detections", "tracks", "attributes", "qa", "masks", "regions"} <= tables


# ---------------------------------------------------------------------------------------------------- data blocks
TABLES = [
    "frames",
    "cameras",
    "images",
    "keyframes",
    "detections",
    "tracks",
    "attributes",
    "ground_truth",
    "masks",
    "regions",
    "qa",
]


@pytest.mark.parametrize("table", TABLES)
def test_a_flipped_byte_in_any_value_block_is_refused_naming_shard_and_dataset(table, work, shard, spans):
    """First, middle and last byte of the first, middle and last chunk / value of every dataset of the table."""
    datasets = sorted(name for name in spans if name.split("/")[0] == table)
    assert datasets, f"the test dataset has no values in {table}"
    flips = 0
    for name in datasets:
        found = spans[name]
        for k in sorted({0, len(found) // 2, len(found) - 1}):
            for pos in _positions(found[k]):
                with damaged(shard, [pos]), pytest.raises(ShardError) as info:
                    _read_one(work, name, k)
                assert (info.value.path, info.value.table) == (str(shard), name), (pos, str(info.value))
                assert str(shard) in str(info.value) and name in str(info.value)
                flips += 1
    # The table as a whole (what the tables' properties read) refuses too.
    pos = _positions(spans[datasets[-1]][0])[1]
    with damaged(shard, [pos]), open_dataset(work) as ds, pytest.raises(ShardError, match=re.escape(datasets[-1])):
        if table == "images":
            ds.scene(SCENE).check(images=True)
        else:
            ds.scene(SCENE).table(table)
    assert flips >= 3 * len(datasets)


def test_flipped_heap_references_are_refused_or_point_at_equal_values(work, shard, clean_digest):
    """A heap ID of a string or image (length, collection address, object index) damaged: refused, or the new ID
    names another heap object with the same bytes (a repeated string such as "{}"), which is no damage at all."""
    outcomes: Counter = Counter()
    for offset, size in sorted(heap_id_blocks(shard).values()):
        for element in sorted({0, size // 32}):
            for byte in (0, 3, 4, 6, 11, 12, 15):
                with damaged(shard, [offset + 16 * element + byte]):
                    kind, _ = _outcome(work, clean_digest)
                outcomes[kind] += 1
    assert outcomes["refused"] > 0.9 * sum(outcomes.values()), outcomes
    print(f"heap references: {dict(outcomes)}")


# ---------------------------------------------------------------------------------------------------- whole file
def test_a_flipped_byte_anywhere_is_refused_or_changes_nothing(work, shard, spans, clean_digest):
    """A byte every ~1/300 of the file, headers and free space included: refused with a ShardError naming the
    shard, or the scene reads exactly as before; never another exception. Reads that change nothing must lie
    outside every dataset's values (padding, free space, unused header bytes, heap bookkeeping)."""
    size = shard.stat().st_size
    values = [(o, o + n) for found in spans.values() for o, n in found]
    outcomes: Counter = Counter()
    for pos in range(7, size, max(1, size // 300)):
        with damaged(shard, [pos]):
            kind, error = _outcome(work, clean_digest)
        outcomes[kind] += 1
        if error is not None:
            assert error.path == str(shard)
        else:
            assert not any(lo <= pos < hi for lo, hi in values), f"byte {pos} is in a dataset's values"
    assert outcomes["refused"] > 0.8 * sum(outcomes.values()), outcomes
    print(f"whole-file sweep: {dict(outcomes)}")


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.9, 1.0])
def test_64_flipped_bytes_are_refused(work, shard, clean_digest, fraction):
    """The issue's damage: 64 bytes flipped at 25 / 50 / 90 % of the shard and at its very end."""
    size = shard.stat().st_size
    start = min(int(size * fraction), size - 64)
    with damaged(shard, range(start, start + 64)):
        kind, error = _outcome(work, clean_digest)
    assert kind == "refused" and error is not None and error.path == str(shard)


def test_header_flips_are_refused_or_change_nothing(work, shard, clean_digest):
    """Every byte of the superblock (HDF5 checksums it: all refused), and bytes of every metadata block the file
    has (object headers, chunk indices, B-trees, fractal heaps, heap collections' headers)."""
    for pos in range(48):  # superblock version 3: 48 bytes, the last 4 its checksum
        with damaged(shard, [pos]):
            kind, error = _outcome(work, clean_digest)
        assert kind == "refused" and error is not None and error.table is None, pos
    raw = shard.read_bytes()
    outcomes: Counter = Counter()
    for signature in (b"OHDR", b"FAHD", b"FADB", b"BTHD", b"BTLF", b"FRHP", b"FHDB", b"GCOL"):
        starts = [m.start() for m in re.finditer(re.escape(signature), raw)][:12]
        for start in starts:
            for delta in (0, 5, 9, 17):
                with damaged(shard, [start + delta]):
                    kind, _ = _outcome(work, clean_digest)
                outcomes[(signature.decode(), kind)] += 1
    print(f"metadata flips: {dict(sorted(outcomes.items()))}")
    assert all(kind in ("refused", "same") for _, kind in outcomes)


# ---------------------------------------------------------------------------------------------------- whole files
def _file_cases(size: int, clean: bytes) -> dict[str, bytes | None]:
    return {
        "truncated to half": clean[: size // 2],
        "one byte short": clean[:-1],
        "empty": b"",
        "zero-filled": bytes(size),
        "a text file": b"scene,frames\nscene-0000,16\n" * 8,
        "missing": None,
    }


@pytest.mark.parametrize(
    "case", ["truncated to half", "one byte short", "empty", "zero-filled", "a text file", "missing"]
)
def test_broken_files_raise_shard_error_naming_the_file(work, shard, case):
    clean = shard.read_bytes()
    content = _file_cases(len(clean), clean)[case]
    with damaged(shard, [], replace=content if content is not None else b""):
        if content is None:
            shard.unlink()
        with open_dataset(work) as ds, pytest.raises(ShardError) as info:
            ds.scene(SCENE).qa  # noqa: B018
        assert info.value.path == str(shard)
        with pytest.raises(ShardError, match=re.escape(str(shard))):
            open_dataset(work, verify=True)


# ---------------------------------------------------------------------------------------------------- old shards
def test_a_v2_shard_is_read_unchecked_with_one_warning(work, tmp_path):
    """A shard of schema v2 (no checksums: as an older stridegen wrote it) is still read, with one warning."""
    old = tmp_path / "old"
    shutil.copytree(work, old)
    for path in (old / "shards").glob("*.h5"):
        with h5py.File(path, "r+") as f:
            f.attrs["schema_version"] = np.int64(2)
            group = f["scenes"][path.stem]
            for key in CHECKSUM_ATTRS:
                del group.attrs[key]
            del group["images/data"].attrs[ROW_CHECKSUM_ATTR]
    _match_files(old)  # the manifest of such a dataset lists these files (their size is checked on open)
    with pytest.warns(UncheckedShardWarning, match="schema v2") as caught, open_dataset(old) as ds:
        for view in ds:
            view.check(images=True)
    assert len([w for w in caught if w.category is UncheckedShardWarning]) == 1
    with pytest.warns(UncheckedShardWarning):
        assert read_scene(old) == read_scene(work)


# ---------------------------------------------------------------------------------------------------- reader paths
def _answers(work: Path, tmp: Path) -> Path:
    from stridegen.jobs.export import run_export

    out = tmp / "answers"
    if not out.is_dir():
        assert run_export(work, out, "answers").ok
    return out


def _question(work: Path) -> str:
    with open_dataset(work) as ds:
        return str(ds.scene(SCENE).qa.question_id[0])  # type: ignore[union-attr]


def _image_rows_of_question(work: Path, qid: str) -> list[int]:
    """Rows of images/data that `stridegen render` draws for ``qid`` (its keyframe image, its context frames)."""
    from stridegen.viz.render_qa import find_question, question_frames

    with open_dataset(work) as ds:
        loc = find_question(ds, qid)
        _, frames = question_frames(loc.scene, loc.row)
        channel = str(loc.scene.cameras.channel[int(loc.scene.qa.channel_index[loc.row])])  # type: ignore[union-attr]
        keys = loc.scene.image_keys()
        return [keys.index((channel, int(f))) for f in frames]


def _image_rows_of_first_sample(work: Path) -> list[int]:
    """Rows of images/data that the PyTorch dataset's first spatial sample shows."""
    from stridegen.shards.samples import SceneIndex, scene_samples

    with open_dataset(work) as ds:
        view = ds.scene(SCENE)
        sample = next(s for s in scene_samples(SceneIndex(view)) if s["kind"] == "spatial")
        channel = str(view.cameras.channel[sample["channel_index"]])
        return [view.image_keys().index((channel, int(f))) for f in sample["frames"]]


# Each damage: what it does to scene-0000's shard.
DAMAGES = ["qa value", "tracks chunk", "images", "superblock", "truncated", "text file"]
# Which reader paths surely read the damaged bytes and so must refuse: every path refuses a broken file, and export
# and augment check each shard's sha256 against the manifest before reading it, so they refuse every damage. The
# other commands either finish normally (they do not read those bytes) or refuse in the same way.
READS = {
    "qa value": {"api", "inspect", "inspect --verify", "lsr", "render", "judge", "export", "data", "augment"},
    # lsr reads the groups' stored scenario labels (schema v4), not the tracks they were labelled from
    "tracks chunk": {"api", "inspect", "inspect --verify", "export", "data", "augment"},
    "images": {"api", "inspect --verify", "render", "export", "data", "augment"},
}
PATHS = ["api", "inspect", "inspect --verify", "lsr", "render", "judge", "export", "data", "augment"]


def _damage_positions(damage: str, spans: dict[str, list[Span]], rows: list[int]) -> list[int]:
    if damage == "qa value":
        return [_positions(spans["qa/answer"][3])[1]]
    if damage == "tracks chunk":
        return [_positions(spans["tracks/center_global"][0])[1]]
    if damage == "images":  # one byte in each image render and the data path read
        return [_positions(spans["images/data"][row])[1] for row in rows]
    return [20] if damage == "superblock" else []


def _cli(args: list[str]):
    return CliRunner().invoke(app, args)


def _run_path(path: str, work: Path, tmp: Path, answers: Path, qid: str):
    """Run one reader path; a CLI result, or the exception a library path raised (None if it succeeded)."""
    if path == "api":
        try:
            read_scene(work)
        except ShardError as exc:
            return exc
        return None
    if path == "data":
        pytest.importorskip("torch")
        from stridegen.data import QASampleDataset

        try:
            ds = QASampleDataset(work, kind="spatial", images="som")
            ds[0]
        except ShardError as exc:
            return exc
        return None
    commands = {
        "inspect": ["inspect", str(work)],
        "inspect --verify": ["inspect", str(work), "--verify"],
        # --no-plots: the plots are drawn from the scores, after the dataset is read (they read no shard bytes)
        "lsr": ["eval", "lsr", "--dataset", str(work), "--pred", str(answers / "answers_spatiotemporal.jsonl")]
        + ["--out", str(tmp / "lsr"), "--no-plots"],
        "render": ["render", str(work), "--qa", qid, "--out", str(tmp / "render")],
        "judge": ["judge", "run", "--method", "general", "--dataset", str(work), "--dry-run"]
        + ["--pred", str(answers / "answers_object_spatial.jsonl"), "--out", str(tmp / "judge")],
        "export": ["export", str(work), "--format", "answers", "--out", str(tmp / "export"), "--overwrite"],
        "augment": ["augment", str(work), "--out", str(tmp / "augment"), "--corruptions", "fog", "--severity", "1"]
        + ["--overwrite"],
    }
    return _cli(commands[path])


@pytest.mark.parametrize("damage", DAMAGES)
def test_every_reader_path_refuses_what_it_reads(damage, work, shard, spans, tmp_path_factory):
    """For each damage, each reader path (the Python API, the CLI commands, the PyTorch dataset): those that read
    the damaged bytes stop with a non-zero exit and one error line naming the shard (and the dataset, for damage in
    a table); the others finish normally. No path shows a traceback."""
    tmp = tmp_path_factory.mktemp(f"paths-{damage.replace(' ', '-')}")
    answers = _answers(work, tmp_path_factory.getbasetemp())
    qid = _question(work)
    rows = _image_rows_of_question(work, qid) + _image_rows_of_first_sample(work)
    dataset_name = {"qa value": "qa/answer", "tracks chunk": "tracks/center_global", "images": "images/data"}
    clean = shard.read_bytes()
    replace = {"truncated": clean[: len(clean) // 2], "text file": b"not,an,hdf5,file\n" * 40}.get(damage)
    with damaged(shard, _damage_positions(damage, spans, rows), replace=replace):
        for path in PATHS:
            result = _run_path(path, work, tmp / path.replace(" ", "-"), answers, qid)
            must_refuse = path in READS.get(damage, set(PATHS))
            _check_path(path, damage, result, must_refuse, shard, dataset_name.get(damage))


def _check_path(path: str, damage: str, result, must_refuse: bool, shard: Path, dataset: str | None) -> None:
    where = f"{path} on {damage}"
    if result is None or isinstance(result, ShardError):  # a library path
        assert (result is not None) == must_refuse, f"{where}: {result}"
        if result is not None:
            assert result.path == str(shard), where
            assert dataset is None or result.table == dataset, f"{where}: {result}"
        return
    output = result.stdout + result.stderr
    assert "Traceback" not in output, f"{where}:\n{output}"
    exits = (SystemExit, click.exceptions.Exit, typer.Exit)  # a command's own exit (CliRunner records it)
    assert result.exception is None or isinstance(result.exception, exits), f"{where}: {result.exception!r}"
    if result.exit_code == 0:  # done without reading the damage (a path that reads it must not get here)
        assert not must_refuse, f"{where}: exit 0\n{output}"
        return
    # augment lists its failed scenes in its summary on stdout; every other command writes one error line on stderr
    stream = output if path == "augment" else result.stderr
    flat = " ".join(stream.split())
    assert str(shard) in flat and (dataset is None or dataset in flat), f"{where}:\n{output}"
    if path != "augment":
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and str(shard) in errors[0], f"{where}:\n{result.stderr}"


@pytest.mark.parametrize("damage", ["answer", "truncated"])
def test_a_damaged_shard_fails_a_real_process_with_one_line(damage, work, shard, spans, tmp_path):
    """In a real process (the issue saw a raw OSError traceback): `render` on a damaged answer text, `inspect` on
    a shard cut short: exit code 2, one line on stderr naming the shard, no traceback."""
    exe = str(Path(sys.executable).parent / "stridegen")
    qid = _question(work)
    args = [exe, "render", str(work), "--qa", qid, "--out", str(tmp_path)] if damage == "answer" else [exe, "inspect"]
    args += [str(work)] if damage == "truncated" else []
    clean = shard.read_bytes()
    positions = [_positions(spans["qa/answer"][0])[1]] if damage == "answer" else []
    with damaged(shard, positions, replace=clean[: int(len(clean) * 0.9)] if damage == "truncated" else None):
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and str(shard) in proc.stderr


def test_verify_names_the_damaged_dataset(work, shard, spans):
    """sha256 differs from the manifest: verify() says so and, reading the tables, which dataset is damaged; a
    flip outside every dataset's values is still a sha256 mismatch."""
    pos = _positions(spans["qa/question"][5])[1]
    with damaged(shard, [pos]), pytest.raises(ShardError, match="sha256") as info:
        open_dataset(work).verify()
    assert info.value.table == "qa/question" and "checksum mismatch" in info.value.reason
    with damaged(shard, [shard.stat().st_size - 1]), pytest.raises(ShardError, match="sha256"):
        open_dataset(work).verify()


def test_checks_can_be_switched_off_to_salvage(work, shard, spans, monkeypatch):
    """checksums=False (or STRIDEGEN_SHARD_CHECKSUMS=0) reads a damaged value as it is: for salvage only."""
    name = "qa/answer"
    with damaged(shard, [_positions(spans[name][0])[1]]):
        with pytest.raises(ShardError):
            _read_one(work, name, 0)
        with open_dataset(work, checksums=False) as ds:
            assert len(ds.scene(SCENE).array(name))
        monkeypatch.setenv("STRIDEGEN_SHARD_CHECKSUMS", "0")
        _read_one(work, name, 0)


def test_manifest_damage_is_a_shard_error(work, tmp_path):
    """A manifest whose shard entries lost a field or changed type: ShardError naming the manifest."""
    bad = tmp_path / "bad"
    shutil.copytree(work, bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["shards"][0]["fime"] = manifest["shards"][0].pop("file")
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match=r"shards\[0\] lacks 'file'"):
        open_dataset(bad)


def test_empty_tables_are_checked_too(tmp_path):
    """A scene with no images, detections or ground truth (empty datasets, an empty row-checksum array) reads
    back checked, and a changed checksum of an empty dataset is still refused."""
    from stridegen.run.config import BuildConfig, config_hash
    from stridegen.shards.integrity import DIGEST_ATTR, content_digest, read_checksums
    from stridegen.shards.manifest import build_manifest, write_manifest
    from stridegen.shards.writer import write_shard
    from tests.shards.test_shards import make_record

    record = make_record(n_images=0, n_dets=0, n_gt=0, name="empty")
    info = write_shard(record, tmp_path, config_hash(BuildConfig()))
    write_manifest(tmp_path, build_manifest(BuildConfig(), {"root": "-", "format": "nuscenes"}, [info]))
    with open_dataset(tmp_path) as ds:
        view = ds.scene("empty")
        view.check(images=True)
        assert len(view.detections) == 0 and view.image_keys() == []
    with h5py.File(tmp_path / info.file, "r+") as f:
        group = f["scenes"]["empty"]
        crcs = group.attrs["checksum_crc32"]
        at = [str(p) for p in group.attrs[PATHS_ATTR]].index("detections/label")
        crcs[at] ^= 1
        group.attrs["checksum_crc32"] = crcs
        # the identity made to match (else the shard is refused on open, before the table is read)
        digest = content_digest("empty", config_hash(BuildConfig()), read_checksums(group) or {}, record.counts())
        group.attrs[DIGEST_ATTR] = digest
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["shards"][0]["content_digest"] = digest
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    _match_files(tmp_path)
    with open_dataset(tmp_path) as ds, pytest.raises(ShardError, match="detections/label: checksum mismatch"):
        ds.scene("empty").detections  # noqa: B018


def test_a_resumed_build_rebuilds_shards_of_an_older_schema(tmp_path):
    """A scene done by an older stridegen (its shard intact, as the journal recorded it, but schema v2, or v3
    without the scenarios table of v4) is not kept on a rerun: kept, it would leave a shard without checksums (or
    stored scenario labels) in a current dataset."""
    from stridegen.shards.journal import Journal
    from stridegen.shards.schema import SCHEMA_VERSION
    from stridegen.shards.writer import sha256_file, write_shard
    from tests.shards.test_shards import make_record

    journal = Journal(tmp_path)
    for name, version in (("new", SCHEMA_VERSION), ("old", 2), ("v3", 3)):
        info = write_shard(make_record(name=name), tmp_path, "h")
        with h5py.File(tmp_path / info.file, "r+") as f:
            f.attrs["schema_version"] = np.int64(version)
        info.sha256, info.bytes = sha256_file(tmp_path / info.file), (tmp_path / info.file).stat().st_size
        journal.scene_done(name, info)
    assert list(journal.completed()) == ["new"]
