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

Atomicity: the file is made in memory (a ``BytesIO`` behind h5py's file-object driver, closed by HDF5 as a file on
disk would be), then its bytes are written under a temporary name in the destination folder with a plain ``write``,
fsynced and renamed with ``os.replace``; a reader never sees a half-written shard. Making it in memory is what
makes a full disk safe: HDF5 2.0 crashes the process (segmentation fault) when one of its own writes fails in the
middle of a file (ENOSPC while storing strings), whereas Python's ``write`` raises ``OSError`` cleanly. The free
space is checked against the shard's exact size before the write; either way a failed write removes the temporary
and raises ``ShardWriteError`` naming the shard (the runner records the scene as failed; a rerun after freeing
space builds it, byte-identical). The memory this takes is the shard's size about twice (the buffer and its bytes)
on top of the scene's record. The file-object driver does not pool small allocations as the default (sec2)
driver does, so its files are a few hundred bytes smaller than sec2's for the same content (schema v4 on).
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen import __version__
from stridegen.core.errors import StrideGenError
from stridegen.shards.integrity import (
    COUNT_PREFIX,
    DIGEST_ATTR,
    ROW_CHECKSUM_ATTR,
    content_digest,
    identity_counts,
    join_strings,
    rows_crc32,
    strings_crc32,
    values_crc32,
    write_checksums,
)
from stridegen.shards.schema import SCHEMA_VERSION, SHARD_FORMAT, SceneRecord, Table

TMP_MARKER = ".tmp-"


class ShardWriteError(StrideGenError, OSError):
    """A file of the dataset could not be written (a full disk, a quota, an I/O error). Nothing half-written is
    kept under the file's name; ``path`` names it, ``errno`` is the cause's."""

    def __init__(self, path: str | Path, reason: str, err: int | None = None) -> None:
        super().__init__(f"{path}: cannot be written: {reason}")
        self.errno = err
        self.path = str(path)
        self.reason = reason


@dataclass
class ShardInfo:
    """What the manifest and the journal record about one written shard."""

    file: str  # path relative to the dataset root, e.g. "shards/scene-0000.h5"
    scenes: list[str]
    counts: dict[str, int]
    sha256: str
    bytes: int
    content_digest: str = ""  # an HDF5 shard of schema v4 on: its identity (stridegen.shards.integrity)
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file,
            "scenes": list(self.scenes),
            "counts": dict(self.counts),
            "sha256": self.sha256,
            "bytes": self.bytes,
        }
        if self.content_digest:
            out["content_digest"] = self.content_digest
        return out


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


def create_file(path: str | Path, buffer: io.BytesIO | None = None):
    """A new HDF5 file (truncating) whose root group stores no times; fixed v1.10 format bounds. With ``buffer``
    the file is made in it (h5py's file-object driver; ``path`` is then only its name): once closed, the buffer
    holds the file's bytes."""
    h5py = _h5()
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_V110)
    if buffer is not None:
        fapl.set_fileobj_driver(h5py.h5fd.fileobj_driver, buffer)
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
    group,
    record: SceneRecord,
    compression: str = "gzip",
    level: int = 4,
    counts: dict[str, int] | None = None,
    config_hash: str | None = None,
) -> str:
    """Write a scene's tables into an open (empty) scene group, then their checksums as its attributes, and with
    ``config_hash`` (the dataset's) the scene's identity, ``content_digest``, which it returns ("" without)
    (``counts``: ``record.counts()`` where the caller has it already)."""
    for key, value in record.meta.attrs().items():
        group.attrs[key] = value
    counts = record.counts() if counts is None else counts
    for key, count in identity_counts(counts).items():  # the per-category QA breakdown lives in the manifest only
        group.attrs[f"{COUNT_PREFIX}{key}"] = np.int64(count)
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
    if config_hash is None:
        return ""
    digest = content_digest(record.meta.name, config_hash, checksums, counts)
    group.attrs[DIGEST_ATTR] = digest
    return digest


def write_shard(
    record: SceneRecord, out_dir: str | Path, config_hash: str, compression: str = "gzip", level: int = 4
) -> ShardInfo:
    """Write ``record`` to ``<out_dir>/shards/<scene name>.h5`` atomically. Returns its manifest entry."""
    record.validate()
    counts = record.counts()  # for the scene group's attributes and the manifest entry
    shard_dir = Path(out_dir) / "shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    final = shard_dir / f"{record.meta.name}.h5"
    buffer = io.BytesIO()
    with create_file(final, buffer) as f:
        f.attrs["format"] = SHARD_FORMAT
        f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
        f.attrs["stridegen_version"] = __version__
        f.attrs["config_hash"] = config_hash
        scenes = make_group(f, "scenes")
        digest = write_record(make_group(scenes, record.meta.name), record, compression, level, counts, config_hash)
    image = buffer.getvalue()
    del buffer
    atomic_write_bytes(final, image)
    sha = hashlib.sha256(image).hexdigest()
    return ShardInfo(f"shards/{final.name}", [record.meta.name], counts, sha, len(image), digest)


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
    """Write a file atomically (temp file in the same folder, fsync, rename). ``ShardWriteError`` naming ``path``
    when the folder has less free space than ``data`` needs, or a write fails (the temporary is removed; whatever
    ``path`` held before stays)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}{TMP_MARKER}{os.getpid()}"
    check_free_space(path, len(data))
    try:
        _write_synced(tmp, data)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ShardWriteError(path, _write_reason(exc, len(data)), exc.errno) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file ``path`` and fsync it (an ``OSError`` of the write or the fsync, ENOSPC
    included, propagates)."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def check_free_space(path: Path, size: int) -> None:
    """``ShardWriteError`` (ENOSPC) when the file system of ``path``'s folder has fewer than ``size`` bytes free
    (a file system that cannot say is let through: the write itself then says)."""
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        return
    if free < size:
        reason = f"{os.strerror(errno.ENOSPC)} ({_mb(size)} needed, {_mb(free)} free); {_RERUN}"
        raise ShardWriteError(path, reason, errno.ENOSPC)


_RERUN = "nothing half-written was kept; free some space and rerun to resume"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _write_reason(exc: OSError, size: int) -> str:
    what = exc.strerror or type(exc).__name__
    return f"{what} (errno {exc.errno}, writing {_mb(size)}); {_RERUN}"


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
