"""Checksums of shard contents (schema v3) and the shard's identity (v4): what the writer stores beside every
dataset and the reader checks.

Each scene group lists the CRC-32 of every dataset under it in two attributes: ``checksum_paths`` (the datasets'
paths under the scene group, e.g. ``qa/answer``, sorted) and ``checksum_crc32`` (uint32, same order). A
variable-length bytes dataset (``images/data``: one camera file per row) also carries one CRC-32 per row in its own
attribute ``row_crc32`` ([N] uint32), because its rows are read one at a time; its entry in the scene's list is the
CRC-32 of that row array. One list per scene, rather than an attribute per dataset, because opening an HDF5
attribute costs tens of microseconds: the list is read once when the scene is opened. The reader recomputes the
CRC of what it read before handing it out, so a damaged byte anywhere in a dataset's values is refused on the read
that would have served it.

What the CRC covers is the values as the reader sees them (the canonical bytes below), not the stored bytes, so
it also covers the strings and image files that HDF5 keeps in its global heap, which HDF5's own checksums (file
metadata) and the ``fletcher32`` filter (chunks of fixed-size numbers only) do not. File metadata (superblock,
object headers with the attributes holding these CRCs, chunk indices, link storage) is checksummed by HDF5 itself
in the v1.10 object format the writer pins, so damage there fails when HDF5 loads it.

Canonical bytes of a dataset (all integers little-endian):

- fixed-size numbers and booleans: the shape as uint64s, then the values in C order, little-endian;
- strings: the shape as uint64s, then the values' UTF-8 bytes in C order with one zero byte between two values
  (unambiguous: an HDF5 variable-length string cannot hold a zero byte, and the writer refuses one);
- one row of variable-length bytes: its bytes.

CRC-32 is zlib's (the IEEE 802.3 polynomial, ``zlib.crc32``): it detects every change confined to 32
consecutive bits (so every single damaged byte) and misses a random change with probability 2**-32; it is an
integrity check against storage and transfer damage, not a defence against someone who rewrites the file (the
manifest's sha256, ``Dataset.verify``, is that). zlib computes it at about 3.5 GB/s on one core here, twice the
speed of SHA-256 with SHA-NI (`benchmarks/bench_shard_read.py`).
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Mapping, Sequence

import numpy as np

PATHS_ATTR = "checksum_paths"  # scene group: [n] str, the datasets' paths under it, sorted
CRC_ATTR = "checksum_crc32"  # scene group: [n] uint32, the CRC-32 of each of those datasets
ROW_CHECKSUM_ATTR = "row_crc32"  # a variable-length bytes dataset: [N] uint32, one per row
DIGEST_ATTR = "content_digest"  # scene group (v4): the shard's identity, ``content_digest`` below
CHECKSUM_ATTRS = (PATHS_ATTR, CRC_ATTR, DIGEST_ATTR)
COUNT_PREFIX = "count_"  # scene group: ``count_<key>`` (int64), the scene's counts whose key has no "/"


def _shape_bytes(shape: tuple[int, ...]) -> bytes:
    return struct.pack(f"<{len(shape)}Q", *shape)


def values_crc32(values: np.ndarray) -> int:
    """CRC-32 of a fixed-size numeric or boolean array (shape, then little-endian values in C order)."""
    arr = np.asarray(values)
    little = arr.dtype.newbyteorder("<")
    if little != arr.dtype:  # big-endian data, or a big-endian machine
        arr = arr.astype(little)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return zlib.crc32(arr.data, zlib.crc32(_shape_bytes(arr.shape)))


def join_strings(encoded: Sequence[bytes]) -> bytes:
    """The values' bytes joined by zero bytes (the string part of the canonical bytes)."""
    return b"\0".join(encoded)


def strings_crc32(joined: bytes, shape: tuple[int, ...]) -> int:
    """CRC-32 of a string array given as ``join_strings`` of its values' UTF-8 bytes in C order."""
    return zlib.crc32(joined, zlib.crc32(_shape_bytes(shape)))


def row_crc32(row: np.ndarray | bytes) -> int:
    """CRC-32 of one row of a variable-length bytes array (a uint8 array or bytes)."""
    if isinstance(row, bytes | bytearray | memoryview):
        return zlib.crc32(row)
    return zlib.crc32(np.ascontiguousarray(row, dtype=np.uint8).data)


def rows_crc32(rows: Sequence[np.ndarray | bytes]) -> np.ndarray:
    """[N] uint32: the CRC-32 of each row of a variable-length bytes array."""
    return np.fromiter((row_crc32(r) for r in rows), np.uint32, len(rows))


def mismatch(stored: int, computed: int) -> str:
    """The reason of a checksum mismatch, for a ShardError."""
    return (
        f"checksum mismatch (stored crc32 {stored:08x}, read {computed:08x}): the shard is damaged; "
        "rebuild the scene or restore the file"
    )


def write_checksums(scene_group, checksums: dict[str, int]) -> None:
    """Store ``{dataset path: CRC-32}`` as the scene group's two checksum attributes (sorted by path)."""
    import h5py

    paths = sorted(checksums)
    scene_group.attrs.create(PATHS_ATTR, np.array(paths, dtype=object), dtype=h5py.string_dtype("utf-8"))
    scene_group.attrs[CRC_ATTR] = np.array([checksums[p] for p in paths], dtype=np.uint32)


def read_checksums(scene_group) -> dict[str, int] | None:
    """``{dataset path: CRC-32}`` from a scene group's attributes, None when it has none (a pre-v3 shard).
    ValueError when the two attributes do not pair up."""
    attrs = scene_group.attrs
    if PATHS_ATTR not in attrs and CRC_ATTR not in attrs:
        return None
    paths = np.asarray(attrs[PATHS_ATTR], dtype=object).ravel().tolist()
    crcs = np.asarray(attrs[CRC_ATTR]).ravel()
    if len(paths) != len(crcs) or crcs.dtype != np.uint32:
        raise ValueError(f"{len(paths)} checksum paths for {len(crcs)} checksums of dtype {crcs.dtype}")
    return {str(p): int(c) for p, c in zip(paths, crcs.tolist(), strict=True)}


# ------------------------------------------------------------------------------------------------ identity (v4)
def identity_counts(counts: Mapping[str, object]) -> dict[str, int]:
    """The counts a shard stores as ``count_<key>`` attributes: those whose key has no "/" (the per-category
    breakdowns live in the manifest only)."""
    return {str(k): int(v) for k, v in sorted(counts.items()) if "/" not in str(k)}  # type: ignore[call-overload]


def content_digest(scene: str, config_hash: str, checksums: Mapping[str, int], counts: Mapping[str, object]) -> str:
    """What binds a shard to its manifest (schema v4): the SHA-256 (hex) of the canonical JSON of the scene's name,
    the config hash of the dataset it was written for, the CRC-32 of every dataset under the scene group (so every
    value it holds, through the checksums the reader checks on each read) and its counts. The writer stores it as
    the scene group's ``content_digest`` and the manifest lists it per shard; the reader recomputes it from the
    attributes when it opens the shard (a few hundred bytes hashed: microseconds) and compares all three."""
    payload = {
        "checksums": [[p, int(checksums[p])] for p in sorted(checksums)],
        "config_hash": config_hash,
        "counts": identity_counts(counts),
        "scene": scene,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()
