"""A full disk while writing a dataset (issue 33): the shard writer turns ENOSPC into a recorded scene failure naming
the file, keeps nothing half-written, and a rerun after freeing space resumes, byte-identical to a clean build.

Two ways to fill the disk: an ENOSPC injected at the writer's one file write (runs everywhere), and a real tmpfs
too small for the second scene (needs root to mount; skipped with the reason otherwise). Before the fix the tmpfs
build died with a segmentation fault inside HDF5 (exit 139) and the injected error named no file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stridegen.shards import writer
from tests.conftest import SMALL_BUILD
from tests.shards.test_shards import make_record

REPO = Path(__file__).resolve().parents[2]


def _digests(folder: Path) -> dict[str, str]:
    """sha256 of the dataset's shards and manifest, by path relative to ``folder``."""
    files = [*sorted((folder / "shards").glob("*.h5")), folder / "manifest.json"]
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if writer.TMP_MARKER in p.name)


def _enospc_after_half(path: Path, data: bytes) -> None:
    """What a full disk does to the write: part of the bytes land, then ENOSPC."""
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_enospc_at_the_write_names_the_shard_and_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "_write_synced", _enospc_after_half)
    with pytest.raises(writer.ShardWriteError) as info:
        writer.write_shard(make_record(), tmp_path, "h")
    err = info.value
    assert err.errno == errno.ENOSPC and isinstance(err, OSError)
    assert str(tmp_path / "shards" / "scene-x.h5") in str(err)
    assert "No space left on device" in str(err) and "rerun" in str(err)
    assert list((tmp_path / "shards").iterdir()) == []  # neither the shard nor its temporary


def test_too_little_free_space_is_refused_before_writing(tmp_path, monkeypatch):
    """The free space is checked against the shard's exact size first (nothing is written at all)."""
    import shutil

    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=1000))
    written: list[Path] = []
    monkeypatch.setattr(writer, "_write_synced", lambda path, data: written.append(path))
    with pytest.raises(writer.ShardWriteError, match=r"scene-x\.h5: cannot be written: No space left on device \("):
        writer.write_shard(make_record(), tmp_path, "h")
    assert written == [] and list((tmp_path / "shards").iterdir()) == []


def test_the_shard_is_made_in_memory_and_closed_like_a_file(tmp_path, monkeypatch):
    """HDF5 writes nothing to disk itself (the one write is ``_write_synced``'s), and the bytes are those of a closed
    file: h5py reads them, and the superblock's file-consistency flags are clear (not left open for writing)."""
    import h5py

    writes: list[tuple[Path, bytes]] = []
    monkeypatch.setattr(
        writer, "_write_synced", lambda path, data: writes.append((path, data)) or path.write_bytes(data)
    )
    info = writer.write_shard(make_record(), tmp_path, "h")
    [(path, data)] = writes
    assert writer.TMP_MARKER in path.name and len(data) == info.bytes
    assert hashlib.sha256(data).hexdigest() == info.sha256 == writer.sha256_file(tmp_path / info.file)
    assert data[:8] == b"\x89HDF\r\n\x1a\n" and data[8] == 3 and data[11] == 0  # superblock v3, flags 0
    with h5py.File(tmp_path / info.file, "r") as f:
        assert list(f["scenes"]) == ["scene-x"]


def test_build_records_the_full_disk_and_a_rerun_is_byte_identical(two_scene_log, tmp_path, monkeypatch):
    """The second scene's write hits ENOSPC: it is a failed scene naming its shard, the first is built, nothing is
    half-written; a rerun with space builds the second scene alone, and the dataset equals a clean build's."""
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config

    real = writer._write_synced

    def full_for_second_scene(path: Path, data: bytes) -> None:
        if "scene-0001" in path.name:
            _enospc_after_half(path, data)
        real(path, data)

    out = tmp_path / "ds"
    config = load_build_config(None, SMALL_BUILD)
    monkeypatch.setattr(writer, "_write_synced", full_for_second_scene)
    first = run_build(two_scene_log, out, config)
    [failed] = first.failed
    assert failed.scene == "scene-0001" and failed.error_type == "ShardWriteError"
    assert str(out / "shards" / "scene-0001.h5") in failed.reason and "No space left on device" in failed.reason
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["scene-0000.h5"]
    monkeypatch.setattr(writer, "_write_synced", real)
    second = run_build(two_scene_log, out, config)
    assert second.ok and [r.status for r in second.results] == ["resumed", "built"]
    clean = run_build(two_scene_log, tmp_path / "clean", config)  # the same depth: the same relative log root
    assert clean.ok and _digests(out) == _digests(tmp_path / "clean")
    assert _leftovers(out / "shards") == [] and _leftovers(out) == []


def _mount_tmpfs(folder: Path, size_kib: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(folder)], capture_output=True, text=True
        )
    except OSError as exc:
        pytest.skip(f"cannot run mount ({exc}): the injected-ENOSPC tests cover the writer")
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here ({done.stderr.strip()}): the injected tests cover it")


def _build_cli(log: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "stridegen.cli.build", "build", str(log), *SMALL_BUILD, *extra, "--out", str(out)]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_build_on_a_full_tmpfs_fails_the_scene_and_resumes(two_scene_log, two_scene_dataset, tmp_path):
    """A real full disk: a tmpfs with room for the first shard and less than half of the second. Before the fix
    HDF5 crashed the process (exit 139, no error line)."""
    sizes = [p.stat().st_size for p in sorted((two_scene_dataset / "shards").glob("*.h5"))]
    mnt = tmp_path / "mnt"
    _mount_tmpfs(mnt, (sizes[0] + sizes[1] // 3) // 1024 + 64)
    try:
        out = mnt / "ds"
        done = _build_cli(two_scene_log, out)
        assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
        assert "error: scene-0001: " in done.stderr and "scene-0001.h5: cannot be written: No space left" in done.stderr
        assert sorted(p.name for p in (out / "shards").iterdir()) == ["scene-0000.h5"]
        assert _leftovers(out) == []
        # with two worker processes (before: exit 2, "error: OSError: [Errno 28] No space left on device", no file)
        again = _build_cli(two_scene_log, out, "workers=2")
        assert again.returncode == 1 and "scene-0001.h5: cannot be written: No space left" in again.stderr, again.stderr
        assert sorted(p.name for p in (out / "shards").iterdir()) == ["scene-0000.h5"]

        # the disk itself refusing the write (the free-space check passed over): the same failure, nothing kept
        filler = mnt / "filler"
        filler.write_bytes(b"\0" * (sizes[1] // 4))
        target = out / "shards" / "scene-0001.h5"
        check = writer.check_free_space
        try:
            writer.check_free_space = lambda path, size: None  # type: ignore[assignment]
            with pytest.raises(writer.ShardWriteError, match="No space left on device") as info:
                writer.atomic_write_bytes(target, b"\1" * sizes[1])
        finally:
            writer.check_free_space = check  # type: ignore[assignment]
        assert info.value.errno == errno.ENOSPC and not target.exists() and _leftovers(out / "shards") == []
        filler.unlink()

        subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
        again = _build_cli(two_scene_log, out)
        assert again.returncode == 0, again.stderr[-2000:]
        clean = tmp_path / "clean"
        assert _build_cli(two_scene_log, clean / "ds").returncode == 0  # the same depth: the same relative log root
        assert _digests(out) == _digests(clean / "ds")
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
