"""``keep_freed_memory``: a process that applies one corruption to image after image stops page-faulting the
temporaries of every call (page faults count fresh memory the kernel maps in: independent of the machine's load)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stridegen.augment.corruptions.base import keep_freed_memory

# The worker's imports first (stridegen.jobs.augment, as a scene worker of `stridegen augment` has them): how many
# fresh pages a call maps depends on the heap's layout, and a process that imports only the corruptions lays it out
# otherwise (measured: 208 page faults a motion_blur call with keep_freed_memory when importlib.metadata is not
# loaded, 0.2 when it is; pydantic, which every command imports, loads it).
SCRIPT = """
import resource, sys
import numpy as np
import stridegen.jobs.augment
from stridegen.augment.corruptions import CORRUPTIONS
from stridegen.augment.corruptions.base import keep_freed_memory
if sys.argv[2] == "keep":
    assert keep_freed_memory()
image = np.random.default_rng(0).integers(0, 256, (900, 1600, 3), dtype=np.uint8)
corruption = CORRUPTIONS[sys.argv[1]]
corruption.apply(image, 3, np.random.default_rng(0))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for seed in range(1, 6):
    corruption.apply(image, 3, np.random.default_rng(seed))
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
"""


def _faults_per_call(name: str, mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", SCRIPT, name, mode], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc thresholds: Linux only")
@pytest.mark.parametrize("name", ["gaussian_noise", "motion_blur"])
def test_a_worker_reuses_the_pages_of_its_temporaries(name: str) -> None:
    if not keep_freed_memory():
        pytest.skip("the C library is not glibc")
    default = _faults_per_call(name, "default")
    if default < 100:
        pytest.skip(f"this C library returns no memory between calls here ({default:.0f} page faults a call)")
    kept = _faults_per_call(name, "keep")
    assert kept < default / 20, (kept, default)  # measured: 1568 -> 0.2 (motion_blur), 1730 -> 0 (gaussian)
