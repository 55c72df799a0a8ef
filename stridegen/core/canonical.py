"""Canonical JSON: the one text form of plain data that is hashed (config hashes, split hashes, manifests)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(data: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, ASCII only, NaN refused."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def sha256_canonical(data: Any) -> str:
    """SHA-256 hex digest of ``canonical_json(data)``."""
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()
