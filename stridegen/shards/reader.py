"""Dataset reader shared by users and evaluators: ``open_dataset(path) -> Dataset``.

Everything is lazy: opening reads manifest.json only; a scene's shard is opened on first access, and each table
is read when first asked for (images one at a time). ``Dataset.verify()`` checks every shard's sha256 against the
manifest (on demand: hashing a large dataset takes a while). Missing, corrupt or mismatching files raise
``ShardError`` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.shards.manifest import read_manifest
from stridegen.shards.schema import (
    SCHEMA_VERSION,
    SHARD_FORMAT,
    TABLE_BY_GROUP,
    AttributesTable,
    CamerasTable,
    DetectionsTable,
    FramesTable,
    GroundTruthTable,
    KeyframesTable,
    MasksTable,
    QATable,
    RegionsTable,
    SceneRecord,
    ShardError,
    SkippedKeyframesTable,
    Table,
    TracksTable,
)
from stridegen.shards.writer import sha256_file


def _read_dataset(ds) -> np.ndarray:
    """A dataset as numpy: strings as object arrays of str, variable-length bytes as object arrays of uint8."""
    import h5py

    string_info = h5py.check_string_dtype(ds.dtype)
    if string_info is not None:
        return np.asarray(ds.asstr()[()], dtype=object).reshape(ds.shape)
    return ds[()]


class SceneView:
    """Lazy access to one scene of a dataset. Tables are read on first access and cached."""

    def __init__(self, dataset: Dataset, name: str, shard_file: Path) -> None:
        self.dataset = dataset
        self.name = name
        self.shard_file = shard_file
        self._file = None

    # ------------------------------------------------------------------ raw access
    @property
    def group(self):
        """The scene's h5py group (opens the shard on first use)."""
        if self._file is None:
            self._file = self.dataset._open_shard(self.shard_file)
        try:
            return self._file["scenes"][self.name]
        except KeyError:
            raise ShardError(self.shard_file, f"shard has no scene group {self.name!r}") from None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def meta(self) -> dict[str, Any]:
        return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in self.group.attrs.items()}

    @property
    def table_names(self) -> list[str]:
        return list(self.group.keys())

    def array(self, path: str) -> np.ndarray:
        """One dataset by its path under the scene group, e.g. ``"tracks/center_global"``."""
        try:
            ds = self.group[path]
        except KeyError:
            raise ShardError(self.shard_file, f"scene {self.name!r} has no dataset {path!r}") from None
        return _read_dataset(ds)

    def table(self, group: str) -> Table | dict[str, np.ndarray]:
        """A whole table: the schema's Table class for known groups, a dict of arrays for others."""
        if group not in self.group:
            raise ShardError(self.shard_file, f"scene {self.name!r} has no table {group!r}")
        g = self.group[group]
        cls = TABLE_BY_GROUP.get(group)
        names = [n for n in g.keys() if not (cls and n in cls.BYTES_FIELDS)]
        arrays = {n: _read_dataset(g[n]) for n in names}
        if cls is None:
            return arrays
        for n in cls.BYTES_FIELDS:  # never load every image at once; see image_bytes
            arrays[n] = np.empty(g[n].shape[0], dtype=object)
        try:
            return cls.from_arrays(arrays)
        except KeyError as exc:
            raise ShardError(self.shard_file, f"scene {self.name!r}: {exc.args[0]}") from None

    # ------------------------------------------------------------------ tables
    @cached_property
    def frames(self) -> FramesTable:
        return self.table("frames")  # type: ignore[return-value]

    @cached_property
    def cameras(self) -> CamerasTable:
        return self.table("cameras")  # type: ignore[return-value]

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

    @cached_property
    def ground_truth(self) -> GroundTruthTable | None:
        return self.table("ground_truth") if "ground_truth" in self.group else None  # type: ignore[return-value]

    @cached_property
    def masks(self) -> MasksTable | None:
        return self.table("masks") if "masks" in self.group else None  # type: ignore[return-value]

    @cached_property
    def regions(self) -> RegionsTable | None:
        return self.table("regions") if "regions" in self.group else None  # type: ignore[return-value]

    @cached_property
    def qa(self) -> QATable | None:
        return self.table("qa") if "qa" in self.group else None  # type: ignore[return-value]

    def mask(self, mask_index: int) -> np.ndarray:
        """One mask decoded to [H, W] bool (the size of its image's camera)."""
        from stridegen.formats.rle import decode_rle

        masks = self.masks
        if masks is None:
            raise KeyError(f"scene {self.name!r} stores no masks")
        channel = int(self.group["images"]["channel_index"][int(masks.image_index[mask_index])])
        h, w = int(self.cameras.height[channel]), int(self.cameras.width[channel])
        return decode_rle(str(masks.rle_counts[mask_index]), h, w)

    # ------------------------------------------------------------------ images
    @cached_property
    def _image_index(self) -> dict[tuple[str, int], int]:
        g = self.group["images"]
        channels = self.cameras.channel
        frame_index = g["frame_index"][()]
        channel_index = g["channel_index"][()]
        return {(str(channels[c]), int(f)): i for i, (f, c) in enumerate(zip(frame_index, channel_index, strict=True))}

    def image_keys(self) -> list[tuple[str, int]]:
        """(channel, frame index) of every stored image, in storage order."""
        return list(self._image_index)

    def image_bytes(self, channel: str, frame_index: int) -> bytes:
        """The camera file's bytes exactly as the log had them (JPEG)."""
        try:
            row = self._image_index[(channel, int(frame_index))]
        except KeyError:
            raise KeyError(f"scene {self.name!r} stores no {channel} image for frame {frame_index}") from None
        return self.group["images"]["data"][row].tobytes()

    def image(self, channel: str, frame_index: int) -> np.ndarray:
        """Decoded RGB [H, W, 3] uint8."""
        from stridegen.formats.images import decode_image

        return decode_image(self.image_bytes(channel, frame_index), f"{self.shard_file}:{channel}/{frame_index}")

    def image_pose(self, channel: str, frame_index: int) -> np.ndarray:
        """T_global_from_ego at the camera sample's own timestamp."""
        row = self._image_index[(channel, int(frame_index))]
        return self.group["images"]["T_global_from_ego"][row]

    def record(self) -> SceneRecord:
        """The whole scene as a SceneRecord (with image bytes), e.g. to re-write it."""
        from stridegen.shards.schema import ImagesTable, SceneMeta

        meta_fields = SceneMeta.__dataclass_fields__
        meta = SceneMeta(**{k: str(v) for k, v in self.meta.items() if k in meta_fields})
        g = self.group["images"]
        arrays = {n: _read_dataset(g[n]) for n in g.keys()}
        images = ImagesTable.from_arrays(arrays)
        known = set(TABLE_BY_GROUP)
        extra = {n: self.table(n) for n in self.table_names if n not in known}
        return SceneRecord(
            meta,
            self.frames,
            self.cameras,
            images,  # type: ignore[arg-type]
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
        )

    def __repr__(self) -> str:
        return f"SceneView({self.name!r}, {self.shard_file.name})"


class Dataset:
    """A built dataset folder: manifest plus shards."""

    def __init__(self, path: str | Path) -> None:
        self.root = Path(path)
        self.manifest = read_manifest(self.root)
        self._shard_of: dict[str, dict[str, Any]] = {}
        for shard in self.manifest["shards"]:
            for scene in shard["scenes"]:
                self._shard_of[scene] = shard
        self._views: dict[str, SceneView] = {}

    @property
    def scenes(self) -> list[str]:
        return list(self._shard_of)

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest.get("config", {})

    @property
    def failed_scenes(self) -> list[dict[str, str]]:
        return list(self.manifest.get("failed_scenes", []))

    def __len__(self) -> int:
        return len(self._shard_of)

    def __iter__(self) -> Iterator[SceneView]:
        return (self.scene(name) for name in self.scenes)

    def __getitem__(self, name: str) -> SceneView:
        return self.scene(name)

    def scene(self, name: str) -> SceneView:
        if name not in self._shard_of:
            raise KeyError(f"dataset {self.root} has no scene {name!r}; it has {self.scenes}")
        if name not in self._views:
            self._views[name] = SceneView(self, name, self.root / self._shard_of[name]["file"])
        return self._views[name]

    def _open_shard(self, path: Path):
        import h5py

        if not path.is_file():
            raise ShardError(path, "shard file listed in the manifest is missing")
        try:
            f = h5py.File(path, "r")
        except OSError as exc:
            raise ShardError(path, f"not a readable HDF5 file (corrupt or truncated): {exc}") from None
        fmt = f.attrs.get("format")
        version = f.attrs.get("schema_version")
        if fmt != SHARD_FORMAT or version is None or int(version) > SCHEMA_VERSION:
            f.close()
            raise ShardError(path, f"not a stridegen shard this version reads (format {fmt!r}, schema {version!r})")
        return f

    def verify(self, scenes: list[str] | None = None) -> None:
        """Check that each shard exists with the size and sha256 the manifest recorded (ShardError otherwise)."""
        wanted = set(scenes) if scenes is not None else None
        for shard in self.manifest["shards"]:
            if wanted is not None and not wanted & set(shard["scenes"]):
                continue
            path = self.root / shard["file"]
            if not path.is_file():
                raise ShardError(path, "shard file listed in the manifest is missing")
            size = path.stat().st_size
            if size != shard["bytes"]:
                raise ShardError(path, f"size {size} differs from the manifest's {shard['bytes']} bytes")
            digest = sha256_file(path)
            if digest != shard["sha256"]:
                raise ShardError(path, f"sha256 {digest[:12]}... differs from the manifest's {shard['sha256'][:12]}...")

    def close(self) -> None:
        for view in self._views.values():
            view.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Dataset({str(self.root)!r}, scenes={len(self)})"


def open_dataset(path: str | Path, verify: bool = False) -> Dataset:
    """Open a built dataset folder (its manifest.json). ``verify=True`` also checks every shard's sha256."""
    dataset = Dataset(path)
    if verify:
        dataset.verify()
    return dataset
