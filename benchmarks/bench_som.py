"""Set-of-Mark export throughput at a real camera resolution: images/s on one core, per step.

    .venv/bin/python benchmarks/bench_som.py [--width 1600 --height 900 --regions 12 --images 40]

One image is what an exporter does per (keyframe image, frame): decode the stored JPEG, draw the regions
(stridegen.pipeline.som.draw_set_of_marks) and encode the result as JPEG (quality 92, as the llava / messages /
strideqa exporters write). The reference in the same run is the old per-question path's encoder, PNG at
compression level 9 (what ``stridegen render`` wrote), on the same overlays. The scene is synthetic: a textured
frame and ``--regions`` elliptical masks from 12 px to a quarter of the image height (distant to near objects).
Single-threaded OpenCV (cv2.setNumThreads(1)), so the figures are per core.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.pipeline.som import draw_set_of_marks


def _scene(width: int, height: int, regions: int, seed: int) -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    image = np.stack([(xx * 255 // width), (yy * 255 // height), ((xx + yy) % 256)], axis=-1).astype(np.uint8)
    image = np.clip(image.astype(np.int16) + rng.integers(-20, 21, image.shape), 0, 255).astype(np.uint8)
    masks = np.zeros((regions, height, width), dtype=np.uint8)
    for i in range(regions):
        size = int(12 + (height / 4 - 12) * (i / max(regions - 1, 1)))
        centre = (int(rng.integers(size, width - size)), int(rng.integers(height // 3, height - size)))
        cv2.ellipse(masks[i], centre, (size, int(size * 0.7)), 0, 0, 360, 1, -1)
    return encode_jpeg(image, 92).tobytes(), masks.astype(bool)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--regions", type=int, default=12)
    ap.add_argument("--images", type=int, default=40)
    args = ap.parse_args()
    cv2.setNumThreads(1)
    jpeg, masks = _scene(args.width, args.height, args.regions, 0)
    ids = list(range(args.regions))
    steps = {"decode": 0.0, "draw": 0.0, "encode jpeg q92": 0.0, "encode png level 9 (reference)": 0.0}
    for _ in range(args.images):
        t0 = time.perf_counter()
        image = decode_image(jpeg, "bench")
        t1 = time.perf_counter()
        marked = draw_set_of_marks(image, masks, ids)
        t2 = time.perf_counter()
        encode_jpeg(marked, 92)
        t3 = time.perf_counter()
        ok, _png = cv2.imencode(".png", marked[..., ::-1], [cv2.IMWRITE_PNG_COMPRESSION, 9])
        t4 = time.perf_counter()
        assert ok
        for name, dt in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            steps[name] += dt
    n = args.images
    print(f"{args.width}x{args.height}, {args.regions} regions, {n} images, one core")
    for name, total in steps.items():
        print(f"  {name:<32}{1000 * total / n:8.1f} ms/image")
    export = steps["decode"] + steps["draw"] + steps["encode jpeg q92"]
    old = steps["decode"] + steps["draw"] + steps["encode png level 9 (reference)"]
    print(f"  export path (decode+draw+jpeg): {n / export:6.1f} images/s/core")
    print(f"  old path (decode+draw+png 9):   {n / old:6.1f} images/s/core  (export is {old / export:.1f}x faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
