"""A lock file that something else wrote (issue 33, bounded reading): whatever it holds, taking the lock neither
crashes nor reads more than 64 KiB of it. Before, a lock file of 100,000 ``[`` raised RecursionError from
``json.loads`` (exit 4 under the CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stridegen.run.lock import LOCK_NAME, folder_lock


@pytest.mark.parametrize(
    "content",
    [b"[" * 100_000, b'{"pid": ' * 5_000, b"\xff\xfe garbage", b"x" * (1 << 20), b'[{"pid": 1}]', b""],
    ids=["deep", "deep-object", "not-utf8", "1MiB", "not-an-object", "empty"],
)
def test_any_lock_file_content_is_taken_over_quietly(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / LOCK_NAME).write_bytes(content)
    with folder_lock(folder):
        assert b'"pid"' in (folder / LOCK_NAME).read_bytes()  # this run's record replaced it
    assert not (folder / LOCK_NAME).exists()
