"""stridegen's cache folder on this machine: where the embedded synthetic log (``synthetic/``) and the indexes of
logs in read-only folders (``log-index/``) are kept, and what a model checkpoint's default path sits under.

One variable decides it, ``STRIDEGEN_CACHE``; else the XDG base directory rule: ``$XDG_CACHE_HOME/stridegen``,
``~/.cache/stridegen`` when ``XDG_CACHE_HOME`` is unset or empty. The old ``STRIDEGEN_CACHE_DIR`` is still read
when ``STRIDEGEN_CACHE`` is unset, with a deprecation warning on stderr (once per process).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CACHE_ENV = "STRIDEGEN_CACHE"
DEPRECATED_CACHE_ENV = "STRIDEGEN_CACHE_DIR"

_warned = False


def cache_root() -> Path:
    """The cache folder (module docstring); not created here."""
    global _warned
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    old = os.environ.get(DEPRECATED_CACHE_ENV)
    if old:
        if not _warned:
            _warned = True
            sys.stderr.write(
                f"warning: {DEPRECATED_CACHE_ENV} is deprecated and will be removed; set {CACHE_ENV} instead "
                f"(using {old})\n"
            )
        return Path(old)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stridegen"


CACHE_PREFIX = f"${CACHE_ENV}"  # written at the start of a path: the cache folder, whatever decides it on this machine


def expand_cache_path(path: str | Path) -> Path:
    """``path`` with a leading ``$STRIDEGEN_CACHE`` (``CACHE_PREFIX``) replaced by ``cache_root()`` (so the XDG rule
    applies where the variable is unset) and a leading ``~`` by the home folder. Default model checkpoints are
    written this way (``$STRIDEGEN_CACHE/sam2/...``): the same text in every config, a file under the one cache."""
    text = str(path)
    if text == CACHE_PREFIX or text.startswith(CACHE_PREFIX + "/"):
        return cache_root() / text[len(CACHE_PREFIX) :].lstrip("/")
    return Path(text).expanduser()
