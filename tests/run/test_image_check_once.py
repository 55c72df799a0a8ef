"""Each stored JPEG's compressed data decoded once per build (issue 35, docs/scale.md#decoded-scale): the images the
segmenter decodes strictly skip the separate integrity check, the others still get it, and a corrupt image the
segmenter reads fails the scene naming its file as the check does."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from stridegen.formats import images as image_codecs
from stridegen.pipeline.segment import stage as segment_stage
from stridegen.run.config import load_build_config
from stridegen.shards import adapters

# The default segmenter (lidar_watershed decodes the images that hold a candidate mask), a short stretch of one scene.
SHORT = ["log.scenes=[scene-0000]", "keyframes.start_s=2", "keyframes.end_s=5", "workers=1"]


def _build(log: Path, out: Path):  # type: ignore[no-untyped-def]
    from stridegen.jobs.build import run_build

    return run_build(log, out, load_build_config(None, SHORT))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_every_stored_image_is_decoded_strictly_once(
    one_scene_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    decoded: list[str] = []

    def check(data: bytes, path: str | Path) -> None:
        checked.append(_digest(data))
        image_codecs.check_image_bytes(data, path)

    def decode(data: bytes, path: str | Path, factor: int = 1) -> np.ndarray:
        image = image_codecs.decode_image(data, path, factor)
        decoded.append(_digest(data))
        return image

    tables = []

    def images_table(*args, **kwargs):  # type: ignore[no-untyped-def]
        tables.append(adapters_images_table(*args, **kwargs))
        return tables[-1]

    adapters_images_table = adapters.images_table
    monkeypatch.setattr(adapters, "check_image_bytes", check)
    monkeypatch.setattr(adapters, "images_table", images_table)
    monkeypatch.setattr(segment_stage, "decode_image", decode)
    result = _build(one_scene_log, tmp_path / "ds")
    assert not result.failed
    [table] = tables
    stored = [_digest(np.asarray(d, dtype=np.uint8).tobytes()) for d in table.data]
    assert decoded and checked  # both paths are taken on this log
    assert len(set(decoded)) == len(decoded) and len(set(checked)) == len(checked)  # none twice
    assert set(decoded).isdisjoint(checked)
    assert sorted(decoded + checked) == sorted(stored)  # every stored image exactly once


def _garble(path: Path) -> None:
    """40 random bytes in the middle of the entropy-coded data: libjpeg warns ("Corrupt JPEG data")."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 40] = np.random.default_rng(0).integers(0, 255, 40, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))


def test_a_corrupt_image_the_segmenter_reads_fails_the_scene_naming_its_file(
    one_scene_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log"
    shutil.copytree(one_scene_log, log, ignore=shutil.ignore_patterns("instance_ids", "maps", ".stridegen-index"))
    front = sorted((log / "samples" / "CAM_FRONT").glob("*.jpg"))
    for path in front:
        _garble(path)
    refused: list[str] = []

    def decode(data: bytes, path: str | Path, factor: int = 1) -> np.ndarray:
        try:
            return image_codecs.decode_image(data, path, factor)
        except Exception:
            refused.append(str(path))
            raise

    monkeypatch.setattr(segment_stage, "decode_image", decode)
    result = _build(log, tmp_path / "ds")
    [failed] = result.failed
    assert refused  # the segmenter met a corrupt image first, before any separate check
    # The reason names the file (the first CAM_FRONT image stored, as the images stage's check named it), not the
    # segmenter's "scene:channel/frame" label.
    assert "corrupt JPEG data" in failed.reason
    assert any(str(p) in failed.reason for p in front)
    assert "CAM_FRONT/frame" not in failed.reason
