"""Offline segmenters on a synthetic log: time per mask and per image, mask IoU against the instance-id truth.

Every camera image of the log is segmented with the ground-truth boxes (and the key LiDAR sweep) by each backend;
each mask is compared with the generator's per-pixel instance ids (docs/synthetic.md), over objects with at least
``--min-area`` truth pixels. Requests are built once per image, outside the timed region (their cost is printed
separately). Runs on one core (affinity and OpenCV / BLAS threads pinned) so ms figures are per core.

    .venv/bin/python benchmarks/bench_segment.py                       # generate 1 scene x 10 s at 800x450
    .venv/bin/python benchmarks/bench_segment.py --root out/synth      # an existing synthetic log
    .venv/bin/python benchmarks/bench_segment.py --update-docs         # also write the tables into docs/segmenters.md
    .venv/bin/python benchmarks/bench_segment.py --nuscenes            # LiDAR recall / leak on the nuScenes demo

``--nuscenes``: the real nuScenes demo keyframe (../shared/data/nuscenes-demo, every camera) has no pixel truth,
so the LiDAR stands in, over the objects with at least 5 own (in-box) returns: *recall* = share of an object's own
returns inside its mask; *leak* = share of the other returns that lie inside the object's projected hull and
farther than its centre (``depth_m``) and fall inside its mask. Both are means over objects.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "segmenters.md"
NUSCENES_DEMO = REPO.parent / "shared" / "data" / "nuscenes-demo"  # the --nuscenes keyframe's log
BEGIN, END = "<!-- bench_segment:begin -->", "<!-- bench_segment:end -->"


@dataclass
class Image:
    request: object
    truth_ids: np.ndarray  # [N] instance id in the truth PNG of each request object
    labels: np.ndarray  # [N] detection class
    ids_png: np.ndarray  # [H, W] uint16


@dataclass
class Scores:
    seconds: float = 0.0
    masks: int = 0
    images: int = 0
    iou: list[float] = field(default_factory=list)
    quality: list[float] = field(default_factory=list)
    label: list[str] = field(default_factory=list)


def load_images(root: Path) -> tuple[list[Image], float]:
    """Every camera image with at least one object: its request, truth ids and labels; and the request time."""
    import cv2

    from stridegen.logs import open_log
    from stridegen.pipeline.segment.request import camera_view, frame_lidar, frame_requests

    instances = json.loads((root / "instance_ids" / "instances.json").read_text())["scenes"]
    images: list[Image] = []
    request_s = 0.0
    for scene in open_log(root).scenes():
        id_of = {v["instance_token"]: int(k) for k, v in instances[scene.name].items() if v["instance_token"]}
        for frame in scene.frames:
            boxes = frame.annotations().boxes
            t0 = time.perf_counter()
            views = [camera_view(frame, channel) for channel in frame.camera_channels]
            requests = list(frame_requests(views, boxes, frame_lidar(frame)))
            request_s += time.perf_counter() - t0
            for channel, (request, keep) in zip(frame.camera_channels, requests, strict=True):
                if len(request) == 0:
                    continue
                stem = Path(frame.sensor(channel).path).stem
                ids_png = cv2.imread(str(root / "instance_ids" / channel / f"{stem}.png"), cv2.IMREAD_UNCHANGED)
                truth_ids = np.array([id_of[str(t)] for t in boxes.track_id[keep]], dtype=np.int64)
                images.append(Image(request, truth_ids, np.asarray(boxes.label[keep], dtype=object), ids_png))
    return images, request_s


def run_backend(name: str, images: list[Image], min_area: int, options: dict) -> Scores:
    from stridegen.pipeline.segment import make_segmenter
    from stridegen.pipeline.segment.request import mask_iou

    segmenter = make_segmenter(name, **options)
    scores = Scores()
    for image in images:
        t0 = time.perf_counter()
        result = segmenter.segment(image.request)
        scores.seconds += time.perf_counter() - t0
        scores.masks += len(image.request)
        scores.images += 1
        for j, truth_id in enumerate(image.truth_ids.tolist()):
            truth = image.ids_png == truth_id
            if int(truth.sum()) < min_area:
                continue
            scores.iou.append(mask_iou(result.masks[j], truth))
            scores.quality.append(float(result.quality[j]))
            scores.label.append(str(image.labels[j]))
    return scores


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Rank correlation (average ranks for ties)."""
    if a.size < 3:
        return float("nan")

    def ranks(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        r = np.empty(x.size)
        r[order] = np.arange(x.size, dtype=np.float64)
        for value in np.unique(x):  # average ranks of ties
            tie = x == value
            r[tie] = r[tie].mean()
        return r

    ra, rb = ranks(a), ranks(b)  # constant input (e.g. every IoU 1.0) has no ranking: NaN, printed "n/a"
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _fmt(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{x:.2f}"


def tables(results: dict[str, Scores]) -> str:
    lines = [
        "| backend | masks | ms / mask | ms / image | scored | mean IoU | median IoU | IoU >= 0.9 | "
        "quality > 0.8 | Spearman(quality, IoU) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in results.items():
        iou, q = np.array(s.iou), np.array(s.quality)
        lines.append(
            f"| `{name}` | {s.masks} | {1e3 * s.seconds / max(s.masks, 1):.2f} | "
            f"{1e3 * s.seconds / max(s.images, 1):.1f} | {iou.size} | {iou.mean():.3f} | "
            f"{np.median(iou):.3f} | {np.mean(iou >= 0.9):.2f} | {np.mean(q > 0.8):.2f} | "
            f"{_fmt(spearman(q, iou))} |"
        )
    classes = sorted({c for s in results.values() for c in s.label})
    lines += [
        "",
        "Mean IoU by class (scored objects):",
        "",
        "| backend | " + " | ".join(f"{c} (n)" for c in classes) + " |",
        "|---|" + "---:|" * len(classes),
    ]
    for name, s in results.items():
        label, iou = np.array(s.label), np.array(s.iou)
        cells = [
            f"{iou[label == c].mean():.3f} ({int(np.sum(label == c))})" if np.any(label == c) else "-" for c in classes
        ]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


MIN_OWN_POINTS = 5  # objects with fewer own returns are not scored by --nuscenes


def nuscenes_recall_leak(backends: list[str], options: dict) -> None:
    """Print recall / leak (module docstring) of each backend on the nuScenes demo keyframe's camera images."""
    from stridegen.logs import open_log
    from stridegen.pipeline.segment import make_segmenter
    from stridegen.pipeline.segment.lidar import point_pixels
    from stridegen.pipeline.segment.request import camera_view, frame_lidar, frame_requests, hull_masks

    frame = open_log(NUSCENES_DEMO).scenes()[0].frames[0]
    boxes = frame.annotations().boxes
    views = [camera_view(frame, channel) for channel in frame.camera_channels]
    requests = [r for r, _ in frame_requests(views, boxes, frame_lidar(frame)) if len(r)]
    print("| backend | objects | recall | leak | ms / image |")
    print("|---|---:|---:|---:|---:|")
    for name in backends:
        segmenter = make_segmenter(name, **options.get(name, {}))
        recall: list[float] = []
        leak: list[float] = []
        seconds = 0.0
        for request in requests:
            t0 = time.perf_counter()
            masks = segmenter.segment(request).masks
            seconds += time.perf_counter() - t0
            hulls = hull_masks(request.hull_uv, request.height, request.width)
            rows, cols = point_pixels(request.lidar_uv, request.height, request.width)
            for i in range(len(request)):
                own = request.lidar_object == i
                if np.count_nonzero(own) < MIN_OWN_POINTS:
                    continue
                recall.append(float(masks[i][rows[own], cols[own]].mean()))
                other = ~own & hulls[i][rows, cols] & (request.lidar_depth_m > request.depth_m[i])
                if other.any():
                    leak.append(float(masks[i][rows[other], cols[other]].mean()))
        print(
            f"| `{name}` | {len(recall)} | {np.mean(recall):.3f} | {np.mean(leak):.3f} | "
            f"{1e3 * seconds / len(requests):.1f} |"
        )


def update_docs(text: str) -> None:
    doc = DOCS.read_text()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOCS} has no {BEGIN} ... {END} block")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="an existing synthetic log (default: generate one to a tmp dir)")
    parser.add_argument("--scenes", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--width", type=int, default=800)
    parser.add_argument("--height", type=int, default=450)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends", default="projected_box,grabcut,lidar,lidar_watershed")
    parser.add_argument("--options", default="{}", help='JSON {"backend": {option: value}} passed to the backends')
    parser.add_argument("--min-area", type=int, default=100, help="score objects with at least this many pixels")
    parser.add_argument("--update-docs", action="store_true", help=f"write the tables into {DOCS.name}")
    parser.add_argument("--nuscenes", action="store_true", help="LiDAR recall / leak on the nuScenes demo instead")
    args = parser.parse_args()
    if args.nuscenes:
        nuscenes_recall_leak(args.backends.split(","), json.loads(args.options))
        return

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import cv2

    cv2.setNumThreads(1)
    options = json.loads(args.options)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root
        if root is None:
            from stridegen.logs.synthetic import generate_dataset

            root = Path(tmp) / "synth"
            t0 = time.perf_counter()
            generate_dataset(
                root,
                scenes=args.scenes,
                seconds=args.seconds,
                seed=args.seed,
                width=args.width,
                height=args.height,
                progress=False,
            )
            print(
                f"generated {args.scenes} x {args.seconds:g} s at {args.width}x{args.height} "
                f"(seed {args.seed}) in {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
        images, request_s = load_images(Path(root))
        n_objects = sum(len(i.request) for i in images)
        results = {}
        for name in args.backends.split(","):
            results[name] = run_backend(name, images, args.min_area, options.get(name, {}))
            print(f"{name}: {results[name].seconds:.1f} s", file=sys.stderr)
    source = (
        f"`--root {args.root}`"
        if args.root
        else (f"{args.scenes} synthetic scene(s) x {args.seconds:g} s, {args.width}x{args.height}, seed {args.seed}")
    )
    command = "python benchmarks/bench_segment.py " + " ".join(sys.argv[1:]).replace("--update-docs", "").strip()
    text = (
        f"Command: `{command.strip()}` ({source}; {len(images)} images with objects, {n_objects} masks, "
        f"objects with >= {args.min_area} truth pixels scored; one core). Request building (image decode, "
        f"LiDAR read, projection, LiDAR assignment): {1e3 * request_s / max(len(images), 1):.1f} ms / image."
        f"\n\n{tables(results)}"
    )
    print(text)
    if args.update_docs:
        update_docs(text)


if __name__ == "__main__":
    main()
