"""One scene of a built dataset read from its shard (``SceneView``): every table and image on first access, each
read checked against the CRC-32 the writer stored beside it (``stridegen.shards.integrity``), every h5py / HDF5
exception of a read turned into a ``ShardError`` naming the file and the dataset. The dataset and its shards are
opened by ``stridegen.shards.reader`` (module docstring there)."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stridegen.shards.integrity import (
    CHECKSUM_ATTRS,
    COUNT_PREFIX,
    ROW_CHECKSUM_ATTR,
    join_strings,
    mismatch,
    read_checksums,
    row_crc32,
    strings_crc32,
    values_crc32,
)
from stridegen.shards.schema import (
    CHECKSUM_SCHEMA_VERSION,
    TABLE_BY_GROUP,
    AttributesTable,
    CamerasTable,
    DetectionsTable,
    FramesTable,
    GroundTruthTable,
    ImagesTable,
    KeyframesTable,
    MasksTable,
    QATable,
    RegionsTable,
    ScenariosTable,
    SceneRecord,
    ShardError,
    SkippedKeyframesTable,
    Table,
    TracksTable,
)

if TYPE_CHECKING:
    from stridegen.shards.reader import Dataset

# What h5py raises for a damaged file: HDF5 errors map to OSError, KeyError, ValueError, RuntimeError or
# TypeError by their error class; damaged lengths can surface as the others.
READ_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError, OverflowError, MemoryError)


def _attribute(ds, name: str, shape: tuple[int, ...] = ()) -> np.ndarray | None:
    """A dataset's uint32 checksum attribute of ``shape``, or None if it has none; ValueError if its size is not
    that of ``shape`` (read through h5py's low-level API, a fifth of the time ``ds.attrs.get`` takes)."""
    import h5py

    key = name.encode()
    if not h5py.h5a.exists(ds.id, key):
        return None
    attr = h5py.h5a.open(ds.id, key)
    out = np.empty(shape, dtype=np.uint32)
    if out.nbytes == 0:  # HDF5 reports no storage size for an empty attribute
        if attr.shape != out.shape:
            raise ValueError(f"checksum attribute {name!r} has shape {attr.shape}, not {out.shape}")
        return out
    if attr.get_storage_size() != out.nbytes:  # H5Aread does not check the buffer's size: never let it overflow
        raise ValueError(f"checksum attribute {name!r} holds {attr.get_storage_size()} bytes, not {out.nbytes}")
    attr.read(out)
    return out


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())  # one line


class SceneView:
    """Lazy access to one scene of a dataset. Tables are read on first access, checked, and cached."""

    def __init__(self, dataset: Dataset, name: str, shard_file: Path) -> None:
        self.dataset = dataset
        self.name = name
        self.shard_file = shard_file
        self._file = None
        self._group = None
        self._checked = False  # whether this shard's datasets carry checksums that are checked
        self._checksums: dict[str, int] = {}  # dataset path -> CRC-32, from the scene group (checked shards)
        self._arrays: dict[str, np.ndarray] = {}  # array()'s cache
        self._addr_size = 8  # bytes of a file address (the superblock's "size of offsets")
        self._version = 0  # the shard's schema version, once opened

    # ------------------------------------------------------------------ guarded raw access
    @contextmanager
    def _reading(self, what: str | None) -> Iterator[None]:
        """Turn any exception h5py raises while reading ``what`` (a dataset path) into a ShardError."""
        try:
            yield
        except READ_ERRORS as exc:
            reason = f"unreadable, the file is damaged or truncated ({type(exc).__name__}: {describe_error(exc)})"
            raise ShardError(self.shard_file, reason, table=what) from None

    @property
    def group(self):
        """The scene's h5py group (opens the shard on first use). Reads through it are not checked."""
        if self._group is None:
            if self._file is None:
                self._file, self._version = self.dataset._open_shard(self.shard_file)
                self._checked = self.dataset.checksums and self._version >= CHECKSUM_SCHEMA_VERSION
                with self._reading(None):
                    self._addr_size = int(self._file.id.get_create_plist().get_sizes()[0])
            with self._reading("scenes"):
                scenes = self._file.get("scenes")
                group = scenes.get(self.name) if scenes is not None else None
            if group is None:
                raise ShardError(self.shard_file, f"shard has no scene group {self.name!r}")
            if self._checked:
                self._checksums = self._load_checksums(group)
            with self._reading(f"identity of scene {self.name!r}"):
                self.dataset._check_identity(self.shard_file, self.name, group, self._version, self._checksums)
            self._group = group
        return self._group

    def _load_checksums(self, group) -> dict[str, int]:
        what = f"checksums of scene {self.name!r}"
        with self._reading(what):
            checksums = read_checksums(group)
        if checksums is None:
            raise ShardError(self.shard_file, "no checksums stored (a v3 shard lists one per dataset)", table=what)
        return checksums

    def _expected(self, path: str) -> int:
        """The stored CRC-32 of the dataset at ``path`` (checked shards only)."""
        try:
            return self._checksums[path]
        except KeyError:
            reason = "no checksum stored (a v3 shard has one per dataset)"
            raise ShardError(self.shard_file, reason, table=path) from None

    def _row_checksums(self, ds, path: str) -> np.ndarray:
        """The per-row CRC-32s of a variable-length bytes dataset, themselves checked against the scene's list."""
        expected = self._expected(path)
        with self._reading(path):
            rows = _attribute(ds, ROW_CHECKSUM_ATTR, ds.shape[:1])
        if rows is None:
            raise ShardError(self.shard_file, "no row checksums stored (a v3 shard has them)", table=path)
        self._check(path, expected, values_crc32(rows))
        return rows

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._group = None
        self._arrays.clear()
        self.__dict__.pop("_image_rows", None)  # holds a dataset handle of the closed file

    @property
    def meta(self) -> dict[str, Any]:
        group = self.group
        with self._reading(f"attributes of scene {self.name!r}"):
            items = [(k, group.attrs[k]) for k in group.attrs if k not in CHECKSUM_ATTRS]
        return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in items}

    @property
    def counts(self) -> dict[str, int]:
        """The scene's counts as its shard stores them (``count_<key>`` attributes: frames, keyframes, qa, ...),
        which the reader checked against the manifest when it opened the shard."""
        group = self.group
        with self._reading(f"attributes of scene {self.name!r}"):
            return {k[len(COUNT_PREFIX) :]: int(group.attrs[k]) for k in group.attrs if k.startswith(COUNT_PREFIX)}

    @property
    def table_names(self) -> list[str]:
        group = self.group
        with self._reading(None):
            return list(group.keys())

    def _dataset(self, path: str):
        """The h5py dataset at ``path`` under the scene group; ShardError if absent or unreadable."""
        group = self.group
        with self._reading(path):
            ds = group.get(path)
            if ds is not None and not hasattr(ds, "dtype"):
                ds = None
        if ds is None:
            raise ShardError(self.shard_file, f"scene {self.name!r} has no dataset {path!r}")
        return ds

    def _read(self, path: str) -> np.ndarray:
        """A whole dataset as numpy, checked against its stored checksum: strings as object arrays of str,
        variable-length bytes as object arrays of uint8 arrays."""
        import h5py

        ds = self._dataset(path)
        with self._reading(path):
            string_info = h5py.check_string_dtype(ds.dtype)
            is_bytes = string_info is None and h5py.check_vlen_dtype(ds.dtype) is not None
            shape = tuple(ds.shape)
            if (string_info is not None and string_info.length is None) or is_bytes:
                self._check_heap_references(ds, path)
            raw = np.asarray(ds[()], dtype=object if string_info or is_bytes else None)
        if is_bytes:
            if self._checked:
                self._check_rows(path, raw.ravel(), self._row_checksums(ds, path))
            return raw
        stored = self._expected(path) if self._checked else None
        if string_info is None:
            if stored is not None:
                self._check(path, stored, values_crc32(raw))
            return raw
        encoded = raw.ravel().tolist()  # bytes: h5py returns variable-length strings undecoded
        with self._reading(path):
            joined = join_strings(encoded)
        if stored is not None:
            self._check(path, stored, strings_crc32(joined, shape))
        salvage = not self.dataset.checksums  # checks switched off: read what is left, damaged bytes replaced
        try:  # one decode of the joined bytes, split at the zero bytes no value holds
            text = joined.decode("utf-8", errors="replace" if salvage else "strict").split("\0") if encoded else []
        except UnicodeDecodeError as exc:
            raise ShardError(self.shard_file, f"a value is not UTF-8 ({describe_error(exc)})", table=path) from None
        if len(text) != len(encoded):  # a shard written by another tool, whose strings hold zero bytes
            text = [b.decode("utf-8", errors="replace") for b in encoded]
        out = np.empty(len(text), dtype=object)
        out[:] = text
        return out.reshape(shape)

    def _check_heap_references(self, ds, path: str) -> None:
        """Refuse a variable-length dataset whose stored lengths cannot be right, before HDF5 reads it.

        HDF5 allocates (and fills) a buffer of the length a value's heap reference declares before it compares it
        with the heap object's own size, so one damaged byte in a reference's 4-byte length makes a read of a small
        string column allocate gigabytes. A reference (HDF5 File Format Specification 3.0, "Disk Format of
        Variable-Length Data": 4-byte length, heap collection address, 4-byte object index) whose length, or whose
        column's total length, exceeds the file's size is refused here; HDF5 checks the rest.
        """
        offset = ds.id.get_offset()
        record = np.dtype([("length", "<u4"), ("address", f"<u{self._addr_size}"), ("index", "<u4")])
        if offset is None or ds.id.get_storage_size() != record.itemsize * ds.size:
            return  # not one contiguous block of references (chunked, compact or empty): left to HDF5
        with open(self.shard_file, "rb") as fh:
            fh.seek(offset)
            data = fh.read(record.itemsize * ds.size)
            file_size = os.fstat(fh.fileno()).st_size
        if len(data) != record.itemsize * ds.size:
            raise ShardError(self.shard_file, "its heap references run past the end of the file", table=path)
        lengths = np.frombuffer(data, dtype=record)["length"].astype(np.int64)
        if lengths.sum() > file_size:
            bad = int(np.argmax(lengths))
            reason = (
                f"row {bad}: its heap reference declares {int(lengths[bad])} bytes (all rows {int(lengths.sum())}), "
                f"more than the file's {file_size}: the file is damaged"
            )
            raise ShardError(self.shard_file, reason, table=path)

    def _check(self, path: str, stored: int, computed: int) -> None:
        if stored != computed:
            raise ShardError(self.shard_file, mismatch(stored, computed), table=path)

    def _check_rows(self, path: str, rows: np.ndarray, stored: np.ndarray) -> None:
        for i, row in enumerate(rows):
            crc = row_crc32(row)
            if crc != int(stored[i]):
                raise ShardError(self.shard_file, f"row {i}: {mismatch(int(stored[i]), crc)}", table=path)

    def array(self, path: str) -> np.ndarray:
        """One dataset by its path under the scene group, e.g. ``"tracks/center_global"``; checked on the first
        read and cached (except variable-length bytes: ``images/data`` is every image of the scene)."""
        if path in self._arrays:
            return self._arrays[path]
        value = self._read(path)
        if value.dtype != object or not (value.size and isinstance(value.flat[0], np.ndarray)):
            self._arrays[path] = value
        return value

    def _table_datasets(self, group: str) -> list[str]:
        g = self.group
        with self._reading(group):
            sub = g.get(group)
            names = None if sub is None or hasattr(sub, "dtype") else list(sub.keys())
        if names is None:
            raise ShardError(self.shard_file, f"scene {self.name!r} has no table {group!r}")
        return names

    def table(self, group: str) -> Table | dict[str, np.ndarray]:
        """A whole table, every dataset checked: the schema's Table class for known groups, a dict of arrays for
        others. The images table's ``data`` is left empty (one image at a time: ``image_bytes``)."""
        cls = TABLE_BY_GROUP.get(group)
        arrays: dict[str, np.ndarray] = {}
        for n in self._table_datasets(group):
            if cls is not None and n in cls.BYTES_FIELDS:  # never load every image at once; see image_bytes
                ds = self._dataset(f"{group}/{n}")
                with self._reading(f"{group}/{n}"):
                    arrays[n] = np.empty(ds.shape[0], dtype=object)
            else:
                arrays[n] = self._read(f"{group}/{n}")
        if cls is None:
            return arrays
        try:
            return cls.from_arrays(arrays)
        except KeyError as exc:
            raise ShardError(self.shard_file, f"scene {self.name!r}: {exc.args[0]}", table=group) from None

    def check(self, images: bool = True) -> None:
        """Read every table of the scene (and every image, unless ``images=False``) and check its checksums;
        ShardError at the first damage. The tables read are not kept."""
        for group in self.table_names:
            self.table(group)
        if images:
            for row in range(len(self._images)):
                self._image_row(row)

    # ------------------------------------------------------------------ tables
    @cached_property
    def frames(self) -> FramesTable:
        return self.table("frames")  # type: ignore[return-value]

    @cached_property
    def cameras(self) -> CamerasTable:
        return self.table("cameras")  # type: ignore[return-value]

    @cached_property
    def _images(self) -> ImagesTable:
        """The images table without the image bytes."""
        return self.table("images")  # type: ignore[return-value]

    @cached_property
    def keyframes(self) -> KeyframesTable:
        return self.table("keyframes")  # type: ignore[return-value]

    @cached_property
    def skipped_keyframes(self) -> SkippedKeyframesTable:
        return self.table("skipped_keyframes")  # type: ignore[return-value]

    @cached_property
    def detections(self) -> DetectionsTable:
        return self.table("detections")  # type: ignore[return-value]

    @cached_property
    def tracks(self) -> TracksTable:
        return self.table("tracks")  # type: ignore[return-value]

    @cached_property
    def attributes(self) -> AttributesTable:
        return self.table("attributes")  # type: ignore[return-value]

    def _optional(self, group: str) -> Table | None:
        g = self.group
        with self._reading(group):
            present = group in g
        return self.table(group) if present else None  # type: ignore[return-value]

    @cached_property
    def ground_truth(self) -> GroundTruthTable | None:
        return self._optional("ground_truth")  # type: ignore[return-value]

    @cached_property
    def masks(self) -> MasksTable | None:
        return self._optional("masks")  # type: ignore[return-value]

    @cached_property
    def regions(self) -> RegionsTable | None:
        return self._optional("regions")  # type: ignore[return-value]

    @cached_property
    def qa(self) -> QATable | None:
        return self._optional("qa")  # type: ignore[return-value]

    @cached_property
    def scenarios(self) -> ScenariosTable | None:
        """The stored scenario relations of the groups (schema v4); None in older shards
        (stridegen.shards.scenarios.scene_relations labels those on read)."""
        return self._optional("scenarios")  # type: ignore[return-value]

    def mask(self, mask_index: int) -> np.ndarray:
        """One mask decoded to [H, W] bool (the size of its image's camera)."""
        from stridegen.formats.rle import decode_rle

        masks = self.masks
        if masks is None:
            raise KeyError(f"scene {self.name!r} stores no masks")
        channel = int(self._images.channel_index[int(masks.image_index[mask_index])])
        h, w = int(self.cameras.height[channel]), int(self.cameras.width[channel])
        return decode_rle(str(masks.rle_counts[mask_index]), h, w)

    # ------------------------------------------------------------------ images
    @cached_property
    def _image_index(self) -> dict[tuple[str, int], int]:
        images = self._images
        channels = self.cameras.channel
        return {
            (str(channels[c]), int(f)): i
            for i, (f, c) in enumerate(zip(images.frame_index.tolist(), images.channel_index.tolist(), strict=True))
        }

    @cached_property
    def _image_rows(self) -> tuple[Any, np.ndarray | None]:
        """The images/data dataset and its row checksums (None when unchecked)."""
        ds = self._dataset("images/data")
        with self._reading("images/data"):
            self._check_heap_references(ds, "images/data")
        return ds, (self._row_checksums(ds, "images/data") if self._checked else None)

    def _image_row(self, row: int) -> bytes:
        ds, stored = self._image_rows
        with self._reading("images/data"):
            data = np.asarray(ds[row], dtype=np.uint8).tobytes()
        if stored is not None:
            crc = zlib.crc32(data)
            if crc != int(stored[row]):
                raise ShardError(self.shard_file, f"row {row}: {mismatch(int(stored[row]), crc)}", table="images/data")
        return data

    def image_keys(self) -> list[tuple[str, int]]:
        """(channel, frame index) of every stored image, in storage order."""
        return list(self._image_index)

    def image_bytes(self, channel: str, frame_index: int) -> bytes:
        """The camera file's bytes exactly as the log had them (JPEG), checked against the row's checksum."""
        try:
            row = self._image_index[(channel, int(frame_index))]
        except KeyError:
            raise KeyError(f"scene {self.name!r} stores no {channel} image for frame {frame_index}") from None
        return self._image_row(row)

    def image(self, channel: str, frame_index: int) -> np.ndarray:
        """Decoded RGB [H, W, 3] uint8."""
        from stridegen.formats.images import decode_image

        return decode_image(self.image_bytes(channel, frame_index), f"{self.shard_file}:{channel}/{frame_index}")

    def image_pose(self, channel: str, frame_index: int) -> np.ndarray:
        """T_global_from_ego at the camera sample's own timestamp."""
        row = self._image_index[(channel, int(frame_index))]
        return self._images.T_global_from_ego[row]

    def record(self) -> SceneRecord:
        """The whole scene as a SceneRecord (with image bytes), e.g. to re-write it."""
        from stridegen.shards.schema import SceneMeta

        meta_fields = SceneMeta.__dataclass_fields__
        meta = SceneMeta(**{k: str(v) for k, v in self.meta.items() if k in meta_fields})
        images = replace(self._images, data=self._read("images/data"))
        known = set(TABLE_BY_GROUP)
        extra = {n: self.table(n) for n in self.table_names if n not in known}
        return SceneRecord(
            meta,
            self.frames,
            self.cameras,
            images,
            self.keyframes,
            self.skipped_keyframes,
            self.detections,
            self.tracks,
            self.attributes,
            self.ground_truth,
            self.masks,
            self.regions,
            self.qa,
            extra=extra,  # type: ignore[arg-type]
            scenarios=self.scenarios,
        )

    def __repr__(self) -> str:
        return f"SceneView({self.name!r}, {self.shard_file.name})"
