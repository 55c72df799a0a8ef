"""One cache variable: STRIDEGEN_CACHE, else the XDG rule; the old STRIDEGEN_CACHE_DIR read with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from stridegen.core import cache_dir
from stridegen.core.cache_dir import cache_root
from stridegen.logs.index import index_cache_dir
from stridegen.logs.synthetic.default import synthetic_cache_dir


def test_stridegen_cache_decides_every_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STRIDEGEN_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "c"
    assert index_cache_dir() == tmp_path / "c" / "log-index"
    assert synthetic_cache_dir({"scenes": 1}).parent == tmp_path / "c" / "synthetic"


def test_default_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("STRIDEGEN_CACHE", raising=False)
    monkeypatch.delenv("STRIDEGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert index_cache_dir() == tmp_path / "xdg" / "stridegen" / "log-index"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "stridegen"


def test_old_variable_is_read_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("STRIDEGEN_CACHE", raising=False)
    monkeypatch.setenv("STRIDEGEN_CACHE_DIR", str(tmp_path / "old"))
    monkeypatch.setattr(cache_dir, "_warned", False)
    assert cache_root() == tmp_path / "old" and index_cache_dir() == tmp_path / "old" / "log-index"
    err = capsys.readouterr().err
    assert err.count("STRIDEGEN_CACHE_DIR is deprecated") == 1 and "set STRIDEGEN_CACHE instead" in err
    monkeypatch.setenv("STRIDEGEN_CACHE", str(tmp_path / "new"))  # the new name wins, silently
    assert cache_root() == tmp_path / "new" and capsys.readouterr().err == ""


def test_checkpoint_paths_under_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Default checkpoints are written ``$STRIDEGEN_CACHE/...``: under the one cache folder, the XDG rule included
    (the sam2 default file is looked for there); other paths only get ``~`` expanded."""
    from stridegen.core.cache_dir import expand_cache_path
    from stridegen.pipeline.segment.sam2_backend import DEFAULT_CHECKPOINT, MissingCheckpointError, Sam2Segmenter

    monkeypatch.delenv("STRIDEGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("STRIDEGEN_CACHE", str(tmp_path / "c"))
    assert expand_cache_path("$STRIDEGEN_CACHE/sam2/x.pt") == tmp_path / "c" / "sam2" / "x.pt"
    assert expand_cache_path("$STRIDEGEN_CACHE") == tmp_path / "c"
    assert expand_cache_path("$STRIDEGEN_CACHEX/a") == Path("$STRIDEGEN_CACHEX/a")
    monkeypatch.delenv("STRIDEGEN_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert expand_cache_path(DEFAULT_CHECKPOINT) == tmp_path / "xdg" / "stridegen" / "sam2" / "sam2.1_hiera_large.pt"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert expand_cache_path("~/w.pth") == tmp_path / "home" / "w.pth"
    pytest.importorskip("sam2", reason="the sam2 extra builds the model before reading the checkpoint")
    with pytest.raises(MissingCheckpointError, match=str(tmp_path / "xdg" / "stridegen" / "sam2")):
        Sam2Segmenter()
