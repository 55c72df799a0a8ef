"""The resume journal: an append-only JSON-lines file, one fsynced line per event.

Events: ``build`` (a run began: config hash, schema version, scenes), ``started`` / ``done`` / ``failed`` per
scene (``done`` records the shard's manifest entry with its sha256 and, where the job keeps any, its ``notes``: JSON
handed back with the scene on resume, e.g. the build's log-check warnings; ``failed`` the reason). A kill -9 can
leave at most a torn last line, which the reader skips. A ``done`` event without ``notes`` (a journal written
before they existed, or a job that keeps none) reads as no notes: the job redoes what they would have saved.

Resume rules (``Journal.completed``): a scene is skipped on a rerun when its latest event is ``done`` and its
shard file exists with exactly the sha256 that event recorded (and, for an HDF5 shard, this version's schema);
every other scene (never started, started but not
done, failed, shard missing or changed) is built again. An output folder built with another config hash is
refused unless the build is asked to overwrite it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stridegen.core.errors import ConfigError
from stridegen.shards.schema import SCHEMA_VERSION, SHARD_SUFFIX
from stridegen.shards.writer import ShardInfo, ShardWriteError, sha256_file

JOURNAL_NAME = "journal.jsonl"


@dataclass
class SceneState:
    scene: str
    event: str  # the latest event: "started" | "done" | "failed"
    record: dict[str, Any]


class Journal:
    """Append-only event log of one output folder."""

    def __init__(self, out_dir: str | Path) -> None:
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / JOURNAL_NAME

    # ------------------------------------------------------------------ writing
    def append(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": round(time.time(), 3), **fields}
        line = (json.dumps(record, sort_keys=True, ensure_ascii=True) + "\n").encode()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:  # a full disk: name the journal (a torn last line is skipped when read)
            reason = f"{exc.strerror or type(exc).__name__} (errno {exc.errno}); free some space and rerun to resume"
            raise ShardWriteError(self.path, reason, exc.errno) from exc

    def build_started(self, config_hash: str, schema_version: int, scenes: list[str]) -> None:
        self.append("build", config_hash=config_hash, schema_version=schema_version, scenes=scenes)

    def scene_started(self, scene: str) -> None:
        self.append("started", scene=scene)

    def scene_done(self, scene: str, info: ShardInfo, notes: dict[str, Any] | None = None) -> None:
        """``notes``: JSON the job keeps with the scene (``done_notes``); left out of the event when empty."""
        if notes:
            self.append("done", scene=scene, shard=info.to_json(), notes=notes)
        else:
            self.append("done", scene=scene, shard=info.to_json())

    def scene_failed(self, scene: str, reason: str, error_type: str) -> None:
        self.append("failed", scene=scene, reason=reason, error_type=error_type)

    # ------------------------------------------------------------------ reading
    def events(self) -> list[dict[str, Any]]:
        """Every complete event in order; a torn or garbled line (a killed writer) is skipped."""
        if not self.path.is_file():
            return []
        out = []
        for line in self.path.read_bytes().splitlines():
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
                continue
            if isinstance(record, dict) and "event" in record:
                out.append(record)
        return out

    def config_hashes(self) -> set[str]:
        return {e["config_hash"] for e in self.events() if e["event"] == "build" and "config_hash" in e}

    def states(self) -> dict[str, SceneState]:
        """The latest event of each scene."""
        states: dict[str, SceneState] = {}
        for e in self.events():
            if e["event"] in ("started", "done", "failed") and "scene" in e:
                states[e["scene"]] = SceneState(e["scene"], e["event"], e)
        return states

    def done_notes(self) -> dict[str, dict[str, Any]]:
        """The ``notes`` of each scene whose latest event is ``done`` and has them (an object); other scenes are
        left out."""
        notes: dict[str, dict[str, Any]] = {}
        for scene, state in self.states().items():
            value = state.record.get("notes")
            if state.event == "done" and isinstance(value, dict):
                notes[scene] = value
        return notes

    def completed(self) -> dict[str, ShardInfo]:
        """Scenes whose shard is done and intact on disk (sha256 as recorded): these a rerun skips."""
        done: dict[str, ShardInfo] = {}
        for scene, state in self.states().items():
            if state.event != "done":
                continue
            shard = state.record.get("shard") or {}
            try:
                info = ShardInfo(
                    str(shard["file"]),
                    list(shard["scenes"]),
                    dict(shard["counts"]),
                    str(shard["sha256"]),
                    int(shard["bytes"]),
                    str(shard.get("content_digest", "")),
                )
            except (KeyError, TypeError, ValueError):
                continue
            path = self.out_dir / info.file
            if not path.is_file() or path.stat().st_size != info.bytes or sha256_file(path) != info.sha256:
                continue
            if path.suffix == SHARD_SUFFIX and _schema_version(path) != SCHEMA_VERSION:
                continue  # written by an older stridegen: rebuilt, so that a resumed build equals a fresh one
            done[scene] = info
        return done


def _schema_version(path: Path) -> int | None:
    """The schema version a shard file declares, None if it cannot be read."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            version = f.attrs.get("schema_version")
            return int(version) if version is not None else None
    except (OSError, KeyError, ValueError, TypeError, RuntimeError):
        return None


def check_output_folder(out_dir: str | Path, config_hash: str, overwrite: bool) -> None:
    """Refuse to mix builds: an existing output built with another config is an error unless ``overwrite``.

    With ``overwrite`` the previous shards, journal, manifest and report are removed (nothing else is touched).
    """
    from stridegen.shards.manifest import MANIFEST_NAME

    out = Path(out_dir)
    journal = Journal(out)
    previous = set(journal.config_hashes())
    manifest_path = out / MANIFEST_NAME
    if manifest_path.is_file():
        try:
            previous.add(json.loads(manifest_path.read_text()).get("config_hash", "?"))
        except (OSError, ValueError, AttributeError, RecursionError):  # ValueError: not JSON, not UTF-8
            previous.add("?")
    foreign = previous - {config_hash}
    if not foreign:
        return
    if not overwrite:
        raise ConfigError(
            f"{out} holds a build with another config (hash {sorted(foreign)[0][:12]}..., this "
            f"config {config_hash[:12]}...); pass --overwrite to replace it or choose another --out"
        )
    clear_build_outputs(out)


def check_outside_source(src_dir: str | Path, out_dir: str | Path) -> None:
    """ConfigError when the output folder of a job over the dataset ``src_dir`` is that dataset or lies in it."""
    src, out = Path(src_dir).resolve(), Path(out_dir).resolve()
    if out == src or src in out.parents:
        raise ConfigError(f"--out {Path(out_dir)} must lie outside the source dataset {Path(src_dir)}")


def clear_build_outputs(out_dir: str | Path) -> None:
    """Remove what a build writes into ``out_dir`` (shards/*.h5, journal, manifest, report)."""
    import shutil

    from stridegen.shards.manifest import MANIFEST_NAME

    out = Path(out_dir)
    shutil.rmtree(out / "shards", ignore_errors=True)
    for name in (JOURNAL_NAME, MANIFEST_NAME, "build_report.json"):
        (out / name).unlink(missing_ok=True)
