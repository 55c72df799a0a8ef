"""Shard writer: one SceneRecord -> one HDF5 file, byte-deterministic and atomic.

Determinism: HDF5 stores access/modification times in object headers unless told not to. Datasets get
``track_times=False``; groups (and the root group, through the file-creation property list) get
``H5Pset_obj_track_times(0)`` via h5py's low-level API, since ``create_group`` has no such option. The library
version bounds are fixed (v1.10 format objects) so the on-disk encoding does not depend on the library's default,
groups track creation order, and tables, datasets and attributes are always written in one fixed order. Writing
the same record twice gives the same bytes (tested, with a check that no object of the file keeps a time).

Integrity: the scene group lists the CRC-32 of every dataset's values (``checksum_paths``, ``checksum_crc32``), and a
variable-length bytes dataset carries one per row (``row_crc32``); the reader checks them on every read
(stridegen.shards.integrity).

Atomicity: the file is written under a temporary name in the destination folder, fsynced, then renamed with
``os.replace``; a reader never sees a half-written shard.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen import __version__
from stridegen.shards.integrity import (
    ROW_CHECKSUM_ATTR,
    join_strings,
    rows_crc32,
    strings_crc32,
    values_crc32,
    write_checksums,
)
from stridegen.shards.schema import SCHEMA_VERSION, SHARD_FORMAT, SceneRecord, Table

TMP_MARKER = ".tmp-"


@dataclass
class ShardInfo:
    """What the manifest and the journal record about one written shard."""

    file: str  # path relative to the dataset root, e.g. "shards/scene-0000.h5"
    scenes: list[str]
    counts: dict[str, int]
    sha256: str
    bytes: int
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "scenes": list(self.scenes),
            "counts": dict(self.counts),
            "sha256": self.sha256,
            "bytes": self.bytes,
        }


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _h5():
    import h5py

    return h5py


def _group_plist():
    h5py = _h5()
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    order = h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED
    gcpl.set_link_creation_order(order)
    gcpl.set_attr_creation_order(order)
    return gcpl


def make_group(parent, name: str):
    """A child group with no timestamps in its object header and creation-ordered links and attributes."""
    h5py = _h5()
    gid = h5py.h5g.create(parent.id, name.encode(), gcpl=_group_plist())
    return h5py.Group(gid)


def create_file(path: str | Path):
    """A new HDF5 file (truncating) whose root group stores no times; fixed v1.10 format bounds."""
    h5py = _h5()
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_V110)
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    order = h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED
    fcpl.set_link_creation_order(order)
    fcpl.set_attr_creation_order(order)
    fid = h5py.h5f.create(os.fsencode(str(path)), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    return h5py.File(fid)


def write_array(
    group, name: str, value: np.ndarray, is_bytes: bool = False, compression: str = "none", level: int = 4
) -> int:
    """One dataset. Object arrays become UTF-8 strings, or variable-length uint8 when ``is_bytes`` (which also get
    their per-row CRC-32s as the attribute ``row_crc32``). Returns the dataset's CRC-32
    (stridegen.shards.integrity)."""
    h5py = _h5()
    arr = np.asarray(value)
    if is_bytes:
        vlen = h5py.vlen_dtype(np.uint8)
        ds = group.create_dataset(name, shape=arr.shape, dtype=vlen, track_times=False)
        rows = [np.asarray(item, dtype=np.uint8) for item in arr.ravel()]
        packed = np.empty(len(rows), dtype=vlen)
        for i, row in enumerate(rows):  # item by item: ``packed[:] = rows`` would broadcast equal-length rows
            packed[i] = row
        if rows:  # one low-level write (the high-level one would also broadcast); same file bytes as row by row
            ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, packed.reshape(arr.shape))
        row_crcs = rows_crc32(rows)
        ds.attrs[ROW_CHECKSUM_ATTR] = row_crcs
        return values_crc32(row_crcs)
    if arr.dtype == object or arr.dtype.kind == "U":
        # Encoded once, for the file and for the checksum: h5py stores bytes given for a UTF-8 string dataset as
        # they are (the file's bytes equal those of writing the str values).
        encoded = [str(v).encode("utf-8") for v in arr.ravel().tolist()]
        data: np.ndarray = np.empty(arr.size, dtype=object)
        data[:] = encoded
        group.create_dataset(name, data=data.reshape(arr.shape), dtype=h5py.string_dtype("utf-8"), track_times=False)
        return strings_crc32(join_strings(encoded), arr.shape)
    options: dict[str, object] = {}
    if compression == "gzip" and arr.size and arr.ndim:
        options = {"compression": "gzip", "compression_opts": int(level), "chunks": True}
    group.create_dataset(name, data=arr, track_times=False, **options)
    return values_crc32(arr)


def _write_table(parent, table: Table, compression: str, level: int) -> dict[str, int]:
    group = make_group(parent, table.GROUP)
    return {
        f"{table.GROUP}/{name}": write_array(group, name, value, name in table.BYTES_FIELDS, compression, level)
        for name, value in table.arrays().items()
    }


def write_record(
    group, record: SceneRecord, compression: str = "gzip", level: int = 4, counts: dict[str, int] | None = None
) -> None:
    """Write a scene's tables into an open (empty) scene group, then their checksums as its attributes
    (``counts``: ``record.counts()`` where the caller has it already)."""
    for key, value in record.meta.attrs().items():
        group.attrs[key] = value
    for key, count in (record.counts() if counts is None else counts).items():
        if "/" not in key:  # the per-category QA breakdown lives in the manifest only
            group.attrs[f"count_{key}"] = np.int64(count)
    checksums: dict[str, int] = {}
    for table in record.tables():
        checksums.update(_write_table(group, table, compression, level))
    for name in sorted(record.extra):
        sub = make_group(group, name)
        for key in sorted(record.extra[name]):
            checksums[f"{name}/{key}"] = write_array(
                sub, key, record.extra[name][key], compression=compression, level=level
            )
    write_checksums(group, checksums)


def write_shard(
    record: SceneRecord, out_dir: str | Path, config_hash: str, compression: str = "gzip", level: int = 4
) -> ShardInfo:
    """Write ``record`` to ``<out_dir>/shards/<scene name>.h5`` atomically. Returns its manifest entry."""
    record.validate()
    counts = record.counts()  # for the scene group's attributes and the manifest entry
    shard_dir = Path(out_dir) / "shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    final = shard_dir / f"{record.meta.name}.h5"
    tmp = shard_dir / f".{final.name}{TMP_MARKER}{os.getpid()}"
    try:
        with create_file(tmp) as f:
            f.attrs["format"] = SHARD_FORMAT
            f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
            f.attrs["stridegen_version"] = __version__
            f.attrs["config_hash"] = config_hash
            scenes = make_group(f, "scenes")
            write_record(make_group(scenes, record.meta.name), record, compression, level, counts)
        _fsync_path(tmp)
        digest = sha256_file(tmp)
        size = tmp.stat().st_size
        os.replace(tmp, final)
        _fsync_dir(shard_dir)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ShardInfo(f"shards/{final.name}", [record.meta.name], counts, digest, size)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write a small file atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}{TMP_MARKER}{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def remove_stale_temporaries(folder: str | Path) -> list[Path]:
    """Delete temporary files a killed writer left behind in ``folder``. Returns what was removed."""
    folder = Path(folder)
    removed = []
    if folder.is_dir():
        for p in sorted(folder.iterdir()):
            if p.name.startswith(".") and TMP_MARKER in p.name and p.is_file():
                p.unlink(missing_ok=True)
                removed.append(p)
    return removed
