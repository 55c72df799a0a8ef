"""The one rule for names that become file or folder names: scene names (a shard is ``<scene>.h5``, a native log
has ``scenes/<scene>/``) and sensor channels (``<channel>/`` folders); and the one rule that picks a log's scenes by
name or token (``select_scenes``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from stridegen.core.errors import ConfigError

# Letters, digits, '-', '_', '.', not starting with a dot (no hidden files, no '.' or '..', no path separators).
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
SAFE_NAME_RULE = "letters, digits, '-', '_', '.'; not starting with '.'"


def is_safe_name(text: str) -> bool:
    """True when ``text`` may be used as a file or folder name as it is (``SAFE_NAME``)."""
    return SAFE_NAME.fullmatch(text) is not None


def scene_file_stem(scene: str) -> str:
    """A file name stem for ``scene``: the name itself when it is safe, else ``scene-<sha256 of the name, 16 hex>``."""
    return scene if is_safe_name(scene) else "scene-" + hashlib.sha256(scene.encode()).hexdigest()[:16]


def select_scenes(ids: Sequence[tuple[str, str]], wanted: Sequence[str] | None, where: str) -> list[tuple[str, str]]:
    """The (name, token) pairs of ``ids`` (a log's scenes, in its order) that ``wanted`` names by name or token
    (every one for None); a ConfigError ``"<where> [...] not in the log (it has [...])"`` for the unknown ones."""
    if wanted is None:
        return list(ids)
    known = {name for name, _ in ids} | {token for _, token in ids}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ConfigError(f"{where} {unknown} not in the log (it has {[name for name, _ in ids]})")
    return [(name, token) for name, token in ids if name in wanted or token in wanted]
