"""Anonymization throughput: images per second on one core (OpenCV and onnxruntime on one thread).

Images: the six nuScenes-demo camera JPEGs (1600x900, ../shared/data) and the camera JPEGs of a synthetic scene
with plates and faces drawn (``generate_dataset(..., privacy_patches=True)``, 800x450). Configurations:

- ``geometry``: plates from given boxes only (the geometric bands; here the boxes are the images' own regions of a
  first pass, so the blur and the re-encoding are timed with the detection left out);
- ``+haar_plate``: plus OpenCV's plate cascade;
- ``+centerface``: plus CenterFace faces (the default of a real log).

Each figure is the median over ``--repeats`` passes over all images of a set, after one warm-up pass.

    .venv/bin/python benchmarks/bench_anonymize.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
NUSCENES_DEMO = REPO.parent / "shared" / "data" / "nuscenes-demo" / "samples"


def image_sets() -> dict[str, list[bytes]]:
    from stridegen.logs.synthetic.generator import generate_dataset

    sets: dict[str, list[bytes]] = {}
    demo = sorted(NUSCENES_DEMO.glob("CAM_*/*.jpg"))
    if demo:
        sets["nuscenes-demo 1600x900"] = [p.read_bytes() for p in demo]
    with tempfile.TemporaryDirectory() as tmp:
        generate_dataset(Path(tmp) / "log", scenes=1, seconds=2.0, seed=0, progress=False, privacy_patches=True)
        sets["synthetic 800x450"] = [
            p.read_bytes() for p in sorted((Path(tmp) / "log" / "samples").glob("CAM_*/*.jpg"))
        ]
    return sets


def time_pass(images: list[bytes], plates: list[np.ndarray], detector, options) -> float:
    from stridegen.pipeline.anonymize import anonymize_image_bytes

    t0 = time.perf_counter()
    for data, boxes in zip(images, plates, strict=True):
        anonymize_image_bytes(data, boxes, detector, options)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    from stridegen.pipeline.anonymize.faces import CenterFaceDetector
    from stridegen.pipeline.anonymize.image import AnonymizeOptions

    detector = CenterFaceDetector()
    configs = {
        "geometry": (AnonymizeOptions(faces=False, plate_detector="none"), None),
        "+haar_plate": (AnonymizeOptions(faces=False, plate_detector="haar"), None),
        "+centerface": (AnonymizeOptions(faces=True, plate_detector="haar"), detector),
    }
    for name, images in image_sets().items():
        # Stand-in geometric plates: four 120 x 30 px boxes per image (what a street scene's vehicles give).
        h, w = cv2.imdecode(np.frombuffer(images[0], np.uint8), cv2.IMREAD_COLOR).shape[:2]
        boxes = np.array([[w * f, h * 0.6, w * f + 120, h * 0.6 + 30] for f in (0.1, 0.3, 0.5, 0.7)])
        plates = [boxes] * len(images)
        print(f"{name}: {len(images)} images")
        for config, (options, det) in configs.items():
            time_pass(images, plates, det, options)  # warm-up
            runs = [time_pass(images, plates, det, options) for _ in range(args.repeats)]
            per_image = statistics.median(runs) / len(images)
            print(f"  {config:<12} {1.0 / per_image:7.2f} images/s/core  ({1000 * per_image:7.1f} ms/image)")


if __name__ == "__main__":
    main()
