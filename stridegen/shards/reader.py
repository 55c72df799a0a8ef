"""Dataset reader shared by users and evaluators: ``open_dataset(path) -> Dataset``.

Everything is lazy: opening reads manifest.json only; a scene's shard is opened on first access, and each table
is read when first asked for (images one at a time). Every read is checked: a dataset's values against the CRC-32
the writer stored beside them (schema v3, stridegen.shards.integrity), an image against its row's CRC-32, and
HDF5 checks its own metadata. ``Dataset.verify()`` also checks every shard's sha256 against the manifest (on
demand: hashing a large dataset takes a while). Missing, damaged, truncated or foreign files raise ``ShardError``
naming the file and, where the damage is in one, the table's dataset; every h5py / HDF5 exception of a read is
turned into one here, so no raw ``OSError`` or ``KeyError`` from a bad file reaches the caller.

Shards older than v3 carry no checksums: they are read unchecked, with one ``UncheckedShardWarning`` per dataset.

Identity (issue 33): every shard is checked, when it is opened, to be the one the manifest lists, so a shard copied
from another build, or a manifest edited by hand, is refused by every command that reads the dataset: the file's
size against the manifest's ``bytes`` (any version), its ``config_hash`` attribute against the manifest's, its
scene group's ``count_*`` attributes against the manifest entry's counts, and, from schema v4 on, the scene group's
``content_digest`` (stridegen.shards.integrity.content_digest: scene, config hash, every dataset's CRC-32, counts),
recomputed from those attributes and compared with the stored one and the manifest's. When the manifest is read,
its totals (and its QA and visibility summaries) must be the sums of its shards' counts. A mismatch is one
``ShardError`` naming the shard (or the manifest) and what differs. The cost is a ``stat`` and a few attribute reads
per shard (docs/format.md, benchmarks/bench_shard_identity.py).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stridegen.shards.integrity import COUNT_PREFIX, DIGEST_ATTR, content_digest, identity_counts
from stridegen.shards.manifest import check_totals, read_manifest
from stridegen.shards.scene_view import READ_ERRORS, SceneView, describe_error
from stridegen.shards.schema import (
    CHECKSUM_SCHEMA_VERSION,
    IDENTITY_SCHEMA_VERSION,
    SCHEMA_VERSION,
    SHARD_FORMAT,
    ShardError,
)
from stridegen.shards.writer import sha256_file

# Set to "0" to read shards without checking their checksums (salvaging what is left of a damaged shard; the
# integrity benchmark's baseline). Anything else, or unset, checks.
CHECKSUMS_ENV = "STRIDEGEN_SHARD_CHECKSUMS"


class UncheckedShardWarning(UserWarning):
    """A shard older than schema v3 carries no checksums: damage inside its tables cannot be detected on read."""


def _checksums_default() -> bool:
    return os.environ.get(CHECKSUMS_ENV, "1").strip() != "0"


class Dataset:
    """A built dataset folder: manifest plus shards."""

    def __init__(self, path: str | Path, checksums: bool | None = None) -> None:
        self.root = Path(path)
        self.manifest = read_manifest(self.root)
        self.checksums = _checksums_default() if checksums is None else bool(checksums)
        self._shard_of: dict[str, dict[str, Any]] = {}
        shards = self.manifest["shards"]
        if not isinstance(shards, list):
            raise ShardError(self._manifest_path, "'shards' is not a list")
        self._entry_of: dict[Path, dict[str, Any]] = {}  # shard path -> its manifest entry
        for i, shard in enumerate(shards):
            _check_shard_entry(self._manifest_path, i, shard)
            for scene in shard["scenes"]:
                self._shard_of[scene] = shard
            self._entry_of[self.root / shard["file"]] = shard
        check_totals(self._manifest_path, self.manifest)
        self._views: dict[str, SceneView] = {}
        self._warned_unchecked = False

    @property
    def _manifest_path(self) -> Path:
        return self.root / "manifest.json" if self.root.is_dir() else self.root

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

    def _open_shard(self, path: Path) -> tuple[Any, int]:
        """The open h5py file and its schema version; ShardError for a missing, damaged or foreign file."""
        import h5py

        if not path.is_file():
            raise ShardError(path, "shard file listed in the manifest is missing")
        try:
            f = h5py.File(path, "r")
        except READ_ERRORS as exc:
            raise ShardError(path, f"not a readable HDF5 file (damaged or truncated): {describe_error(exc)}") from None
        try:
            fmt = f.attrs.get("format")
            version = f.attrs.get("schema_version")
            version = int(version) if version is not None else None
            written_for = f.attrs.get("config_hash")
        except READ_ERRORS as exc:
            f.close()
            raise ShardError(path, f"file attributes unreadable, the file is damaged ({describe_error(exc)})") from None
        if fmt != SHARD_FORMAT or version is None or version > SCHEMA_VERSION:
            f.close()
            raise ShardError(path, f"not a stridegen shard this version reads (format {fmt!r}, schema {version!r})")
        try:
            self._check_file_identity(path, written_for)
        except ShardError:
            f.close()
            raise
        if version < CHECKSUM_SCHEMA_VERSION and self.checksums and not self._warned_unchecked:
            self._warned_unchecked = True
            warnings.warn(
                f"{self.root}: {path.name} is a schema v{version} shard, written without checksums: damage inside "
                "its tables cannot be detected on read (`stridegen inspect --verify` checks the files against the "
                "manifest's sha256; a rebuild adds checksums)",
                UncheckedShardWarning,
                stacklevel=2,
            )
        return f, version

    def _check_file_identity(self, path: Path, written_for: object) -> None:
        """The shard file ``path`` against its manifest entry: its size, and the config hash it was written for
        (``written_for``: its ``config_hash`` attribute, None when it has none)."""
        entry = self._entry_of.get(path, {})
        size = path.stat().st_size
        if "bytes" in entry and size != entry["bytes"]:
            raise ShardError(path, f"{_NOT_LISTED}: its size {size} bytes differs from the manifest's {entry['bytes']}")
        expected = self.manifest.get("config_hash")
        if written_for is not None and expected is not None and str(written_for) != str(expected):
            reason = f"config hash {str(written_for)[:12]}... differs from the manifest's {str(expected)[:12]}..."
            raise ShardError(path, f"{_NOT_LISTED}: {reason}")

    def _check_identity(self, path: Path, scene: str, group: Any, version: int, checksums: dict[str, int]) -> None:
        """The scene group of the open shard ``path`` against the manifest (module docstring): its counts, and from
        schema v4 on its content digest (``checksums``: the group's, as loaded; empty when not checked)."""
        entry = self._entry_of.get(path)
        if entry is None:
            return
        attrs = group.attrs
        stored = {k[len(COUNT_PREFIX) :]: int(attrs[k]) for k in attrs if k.startswith(COUNT_PREFIX)}
        digest = None
        if version >= IDENTITY_SCHEMA_VERSION:
            digest = attrs.get(DIGEST_ATTR)
            if digest is None:
                raise ShardError(path, f"no content digest stored (a v{IDENTITY_SCHEMA_VERSION} shard has one)")
            digest = str(digest.decode() if isinstance(digest, bytes) else digest)
            if digest != entry.get("content_digest"):
                listed_digest = str(entry.get("content_digest", "none"))[:12]
                reason = f"content digest {digest[:12]}... differs from the manifest's {listed_digest}..."
                raise ShardError(path, f"{_NOT_LISTED}: {reason}")
        listed = identity_counts(entry.get("counts", {}))
        for key in sorted(set(stored) & set(listed)):
            if stored[key] != listed[key]:
                reason = (
                    f"the manifest's count {key!r} of scene {scene!r} is {listed[key]}, the shard holds {stored[key]}"
                )
                raise ShardError(path, f"{_NOT_LISTED}: {reason}")
        if digest is not None and checksums:
            again = content_digest(scene, str(self.manifest.get("config_hash")), checksums, stored)
            if again != digest:
                reason = "its checksums, counts or config hash do not give the content digest it stores"
                raise ShardError(path, f"{_NOT_LISTED}: {reason} (the file was altered)")

    def verify(self, scenes: list[str] | None = None) -> None:
        """Check that each shard exists with the size and sha256 the manifest recorded (ShardError otherwise).

        On a sha256 mismatch the shard's tables are read and checked to name the damaged one, when they can."""
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
                reason = f"sha256 {digest[:12]}... differs from the manifest's {shard['sha256'][:12]}..."
                self._locate_damage(path, shard["scenes"], reason)

    def _locate_damage(self, path: Path, scenes: list[str], reason: str) -> None:
        """Raise the ShardError of a shard whose sha256 differs: naming the damaged table if a table check finds
        it, else saying that every table checks out (the change is outside the tables' values)."""
        checked = False
        for name in scenes:
            view = SceneView(self, name, path)  # a fresh view: nothing cached from before the damage
            try:
                view.check(images=True)
                checked = checked or view._checked
            except ShardError as exc:
                raise ShardError(path, f"{reason}; {exc.reason}", table=exc.table) from None
            finally:
                view.close()
        if checked:
            reason += " (every table's values still match their checksums: the change is outside them)"
        raise ShardError(path, reason)

    def close(self) -> None:
        for view in self._views.values():
            view.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Dataset({str(self.root)!r}, scenes={len(self)})"


_NOT_LISTED = "not the shard the manifest lists (copied from another build, or either file edited)"


def _check_shard_entry(manifest: Path, index: int, shard: object) -> None:
    """A manifest's shard entry has the fields the reader uses, with their types (ShardError otherwise)."""
    want = {"file": str, "scenes": list, "sha256": str, "bytes": int}
    if not isinstance(shard, dict):
        raise ShardError(manifest, f"shards[{index}] is not an object")
    for key, kind in want.items():
        if not isinstance(shard.get(key), kind):
            raise ShardError(manifest, f"shards[{index}] lacks {key!r} or it is not a {kind.__name__}")
    if not all(isinstance(s, str) for s in shard["scenes"]):
        raise ShardError(manifest, f"shards[{index}].scenes holds a value that is not a scene name")


def open_dataset(path: str | Path, verify: bool = False, checksums: bool | None = None) -> Dataset:
    """Open a built dataset folder (its manifest.json). ``verify=True`` also checks every shard's sha256.

    ``checksums`` (default: on, unless the environment sets ``STRIDEGEN_SHARD_CHECKSUMS=0``) checks every table and
    image read against the CRC-32 stored beside it; turn it off only to salvage what is left of a damaged shard."""
    dataset = Dataset(path, checksums=checksums)
    if verify:
        dataset.verify()
    return dataset
