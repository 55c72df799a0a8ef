"""The integrity check of stored camera JPEGs (``stridegen.formats.images.image_problem``): its CPU time per image
beside the floors it could be traded for, and which corruptions each of them catches (issue 35).

    .venv/bin/python benchmarks/bench_image_check.py                        # 1600x900 and 800x450, 5 rounds
    .venv/bin/python benchmarks/bench_image_check.py --sizes 1600x900 --rounds 7 --images 150

Methods (each on the same bytes, one thread):

- ``check``: ``image_problem`` as the build runs it on a stored image the segmenter did not decode: the end-of-image
  marker, then libjpeg-turbo (simplejpeg) decoding at 1/8 scale into grey with its warnings as errors.
- ``decode 1/8 grey, warnings ignored``: the same decode without ``strict`` (what the check costs less its verdict).
- ``OpenCV IMREAD_REDUCED_GRAYSCALE_8``: OpenCV's own libjpeg-turbo, the same scale; it has no strict mode (a
  corrupt file gives made-up pixels), so it catches only what makes libjpeg give up.
- ``markers only``: the end-of-image marker and the frame header (``jpeg_frame``), no entropy decoding.

The images are those of a synthetic log at each size (``ensure_default_log``: the 12-scene logs of
``bench_build.py``, generated once and cached). Timing: rounds alternate the methods; per method the CPU time of this
process (``time.process_time``) per image over all images, min / median / max over the rounds. Detection: per kind of
damage, one damaged copy of each image (seeded), and the share each method calls bad:

- ``cut``: the file cut at a random point (no end-of-image marker);
- ``zero tail``: the file keeps its size, the data from a random point on is zeros (an interrupted download into a
  preallocated file);
- ``cut, EOI put back``: cut at a random point and the end-of-image marker appended;
- ``zero block``: 4 KiB of zeros over the entropy-coded data at a random place;
- ``one bit``: one bit flipped at a random place of the entropy-coded data.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from single_thread import THREAD_ENV  # noqa: E402

os.environ.update(THREAD_ENV)  # before numpy and OpenCV load

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import simplejpeg  # noqa: E402

from stridegen.formats.images import image_problem, jpeg_frame  # noqa: E402
from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC, ensure_default_log  # noqa: E402


def _markers_only(data: bytes) -> bool:
    """Bad by the markers alone: no end-of-image marker, or no readable frame header."""
    return not data.rstrip(b"\x00").endswith(b"\xff\xd9") or jpeg_frame(data) is None


def _opencv(data: bytes) -> bool:
    return cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_REDUCED_GRAYSCALE_8) is None


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 at /dev/null: OpenCV's libjpeg prints each warning about a damaged file there."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _lenient(data: bytes) -> bool:
    try:
        simplejpeg.decode_jpeg(data, colorspace="GRAY", min_height=1, min_width=1, strict=False)
    except ValueError:
        return True
    return False


METHODS: dict[str, Callable[[bytes], bool]] = {
    "check (image_problem)": lambda data: image_problem(data) is not None,
    "decode 1/8 grey, warnings ignored": _lenient,
    "OpenCV IMREAD_REDUCED_GRAYSCALE_8": _opencv,
    "markers only": _markers_only,
}


def _scan_start(data: bytes) -> int:
    """Offset of the first byte after the (first) start-of-scan header: where the entropy-coded data begins."""
    sos = data.index(b"\xff\xda")
    return sos + 2 + int.from_bytes(data[sos + 2 : sos + 4], "big")


def _damage(data: bytes, kind: str, rng: np.random.Generator) -> bytes:
    start, end = _scan_start(data), len(data) - 2  # entropy-coded data: [start, end)
    at = int(rng.integers(start, end))
    if kind == "cut":
        return data[:at]
    if kind == "zero tail":
        return data[:at] + bytes(len(data) - at)
    if kind == "cut, EOI put back":
        return data[:at] + b"\xff\xd9"
    if kind == "zero block":
        at = int(rng.integers(start, max(start + 1, end - 4096)))
        return data[:at] + bytes(min(4096, end - at)) + data[at + min(4096, end - at) :]
    if kind == "one bit":
        out = bytearray(data)
        out[at] ^= 1 << int(rng.integers(0, 8))
        return bytes(out)
    raise ValueError(kind)


DAMAGE = ("cut", "zero tail", "cut, EOI put back", "zero block", "one bit")


def _images(size: str, count: int) -> list[bytes]:
    width, height = (int(v) for v in size.split("x"))
    params = {**DEFAULT_SYNTHETIC, "scenes": 12, "seconds": 8.0, "width": width, "height": height}
    log = ensure_default_log(params, progress=False)
    files = sorted((log / "samples").glob("CAM_*/*.jpg"))[:count]
    if not files:
        raise SystemExit(f"no camera JPEGs under {log}/samples")
    return [f.read_bytes() for f in files]


def bench_size(size: str, count: int, rounds: int, seed: int) -> None:
    images = _images(size, count)
    mean_kb = sum(map(len, images)) / len(images) / 1e3
    print(f"\n{size}: {len(images)} camera JPEGs, {mean_kb:.0f} kB on average")
    for name, method in METHODS.items():  # warm-up, and every clean image passes every method
        if any(method(d) for d in images):
            raise SystemExit(f"{name} calls a clean image bad")
    per_image: dict[str, list[float]] = {name: [] for name in METHODS}
    for _ in range(rounds):
        for name, method in METHODS.items():
            t = time.process_time()
            for data in images:
                method(data)
            per_image[name].append(1e3 * (time.process_time() - t) / len(images))
    print(f"  CPU ms per image, {rounds} alternated rounds, min / median / max")
    for name, values in per_image.items():
        print(f"    {name:36s} {min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}")
    rng = np.random.default_rng(seed)
    print(f"  damaged copies called bad (one per image and kind, seed {seed})")
    print("    " + f"{'':36s}" + "".join(f"{k:>19s}" for k in DAMAGE))
    damaged = {kind: [_damage(d, kind, rng) for d in images] for kind in DAMAGE}
    for name, method in METHODS.items():
        with _quiet_stderr():
            cells = [f"{sum(map(method, damaged[kind]))}/{len(images)}" for kind in DAMAGE]
        print(f"    {name:36s}" + "".join(f"{c:>19s}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["1600x900", "800x450"], metavar="WxH")
    parser.add_argument("--images", type=int, default=120, help="camera files per size")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min)")
    print("command: " + " ".join([Path(sys.executable).name, *sys.argv]))
    for size in args.sizes:
        bench_size(size, args.images, args.rounds, args.seed)


if __name__ == "__main__":
    main()
