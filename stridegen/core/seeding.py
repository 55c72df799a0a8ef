"""Deterministic random streams: every random choice draws from a generator seeded by (global seed, keys...).

Keys are strings (scene token, stage name, frame token) hashed with SHA-256, so streams do not depend on Python's
per-process hash randomisation, on the executor, or on the order in which scenes are processed.
"""

from __future__ import annotations

import hashlib

import numpy as np


def stable_int(*keys: object) -> int:
    """A 64-bit integer from the SHA-256 of the keys' string forms."""
    digest = hashlib.sha256("\x1f".join(str(k) for k in keys).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def rng_for(seed: int, *keys: object) -> np.random.Generator:
    """The generator for one (seed, keys) stream, e.g. ``rng_for(seed, scene_token, "detect", frame_token)``."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, stable_int(*keys)])
