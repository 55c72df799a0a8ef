"""The one rule for names that become file or folder names: scene names (a shard is ``<scene>.h5``, a native log
has ``scenes/<scene>/``) and sensor channels (``<channel>/`` folders)."""

from __future__ import annotations

import re

# Letters, digits, '-', '_', '.', not starting with a dot (no hidden files, no '.' or '..', no path separators).
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
SAFE_NAME_RULE = "letters, digits, '-', '_', '.'; not starting with '.'"


def is_safe_name(text: str) -> bool:
    """True when ``text`` may be used as a file or folder name as it is (``SAFE_NAME``)."""
    return SAFE_NAME.fullmatch(text) is not None
