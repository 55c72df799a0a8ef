"""GPU readiness: frames per second of the neural stages on whatever device is present (CUDA if any, else CPU).

Two rows, each on random weights (the cost does not depend on the weights; none can be downloaded here):

- **detector**: ``Mmdet3dDetector`` with a built-in mmdet3d model (``bevfusion``: LiDAR + six cameras, needs an
  open-mmlab/mmdetection3d v1.4.0 checkout in ``--repo`` / ``$STRIDEGEN_MMDET3D_REPO``; ``bevfusion-lidar``;
  ``centerpoint``) on a synthetic log with 10 LiDAR sweeps per frame and six 1600 x 900 cameras; one warm-up frame,
  then frames per second (wall) over ``--frames`` frames. The model is built as ``benchmarks/bench_mmdet3d.py``
  does (mmdet3d's own builder, saved and reloaded through the checkpoint path).
- **segmenter**: ``Sam2Segmenter`` (SAM 2.1 ``--sam2-size`` t / s / b+ / l, built by ``build_sam2`` with random
  weights) on the log's camera images, ``--boxes`` box prompts per image decoded as one batch (the build's way),
  beside the same boxes decoded one at a time; images per second and the per-box decode time.

    .venv/bin/python benchmarks/bench_gpu.py                                  # what this machine has
    .venv/bin/python benchmarks/bench_gpu.py --detector bevfusion --repo ~/src/mmdetection3d --sam2-size l \\
        --frames 20 --images 60 --json out/bench_gpu.json                    # on a GPU machine

On a CPU-only machine the defaults are small (centerpoint, SAM 2.1 tiny, 2 frames, 6 images) so the run ends in
minutes; the figures then say what the CPU does, not what a GPU would. Rows the environment cannot run (no mmdet3d,
no sam2, BEVFusion without a checkout) are printed as skipped with the reason, and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

SAM2_CONFIGS = {s: f"configs/sam2.1/sam2.1_hiera_{s}.yaml" for s in ("t", "s", "b+", "l")}


def device_description(torch: Any, device: str) -> str:
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        return f"{props.name} ({props.total_memory / 2**30:.0f} GiB), torch {torch.__version__}"
    cpu = platform.processor() or platform.machine()
    return f"CPU {cpu} x{torch.get_num_threads()} threads, torch {torch.__version__}"


def _sync(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bench_detector(frames: list, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Frames per second of one mmdet3d model through our backend (the build's detect stage)."""
    import torch
    from bench_mmdet3d import save_random_checkpoint

    from stridegen.pipeline.detect import mmdet3d_backend as mb
    from stridegen.pipeline.detect import mmdet3d_model as mm

    config, _ = mm.resolve_config_path(args.detector, args.repo)
    checkpoint = work / f"{args.detector}.pth"
    save_random_checkpoint(config, args.repo, checkpoint)
    det = mb.Mmdet3dDetector(
        model=args.detector, checkpoint=str(checkpoint), device=args.device, mmdet3d_repo=args.repo
    )
    det.detect(frames[0])  # warm-up (kernels, allocator)
    _sync(torch, args.device)
    timed = frames[1 : args.frames + 1]
    start = time.perf_counter()
    for frame in timed:
        det.detect(frame)
    _sync(torch, args.device)
    wall = time.perf_counter() - start
    return {"stage": "detector", "model": args.detector, "items": len(timed), "per_s": round(len(timed) / wall, 3)}


def bench_sam2(images: list, args: argparse.Namespace) -> dict[str, Any]:
    """Images per second of SAM 2 with ``args.boxes`` prompts per image decoded as one batch, and the same boxes
    one at a time (what batching saves)."""
    import numpy as np
    import torch
    from sam2.build_sam import build_sam2

    from stridegen.pipeline.segment.sam2_backend import Sam2Segmenter

    torch.manual_seed(0)
    segmenter = Sam2Segmenter.from_model(build_sam2(SAM2_CONFIGS[args.sam2_size], ckpt_path=None, device=args.device))
    rng = np.random.default_rng(0)

    def boxes_for(image: np.ndarray) -> np.ndarray:
        h, w = image.shape[:2]
        x0 = rng.uniform(0, w * 0.8, args.boxes)
        y0 = rng.uniform(0, h * 0.8, args.boxes)
        size = rng.uniform(20, min(h, w) * 0.3, (args.boxes, 2))
        return np.stack([x0, y0, np.minimum(x0 + size[:, 0], w - 1), np.minimum(y0 + size[:, 1], h - 1)], axis=1)

    prompts = [boxes_for(im) for im in images]
    segmenter.predict(segmenter.embed(images[0]), prompts[0])  # warm-up
    _sync(torch, args.device)
    embed_s = batched_s = single_s = 0.0
    for image, boxes in zip(images, prompts, strict=True):
        t0 = time.perf_counter()
        embedding = segmenter.embed(image)
        _sync(torch, args.device)
        t1 = time.perf_counter()
        segmenter.predict(embedding, boxes)
        _sync(torch, args.device)
        t2 = time.perf_counter()
        for box in boxes:
            segmenter.predict(embedding, box[None])
        _sync(torch, args.device)
        t3 = time.perf_counter()
        embed_s, batched_s, single_s = embed_s + t1 - t0, batched_s + t2 - t1, single_s + t3 - t2
    n, n_boxes = len(images), len(images) * args.boxes
    return {
        "stage": "segmenter",
        "model": f"sam2.1_hiera_{args.sam2_size}",
        "items": n,
        "per_s": round(n / (embed_s + batched_s), 3),
        "embed_ms_per_image": round(1e3 * embed_s / n, 1),
        "decode_ms_per_box_batched": round(1e3 * batched_s / n_boxes, 2),
        "decode_ms_per_box_one_by_one": round(1e3 * single_s / n_boxes, 2),
        "batching_speedup": round(single_s / batched_s, 2) if batched_s > 0 else None,
    }


def _skipped(stage: str, model: str, reason: str) -> dict[str, Any]:
    return {"stage": stage, "model": model, "skipped": reason}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto (cuda when present, else cpu), cpu, cuda, cuda:1")
    parser.add_argument("--detector", default=None, help="bevfusion (default with --repo on CUDA), centerpoint, ...")
    parser.add_argument("--repo", default=os.environ.get("STRIDEGEN_MMDET3D_REPO", ""), help="mmdetection3d checkout")
    parser.add_argument("--sam2-size", choices=sorted(SAM2_CONFIGS), default=None, help="default: l on CUDA, t on CPU")
    parser.add_argument("--frames", type=int, default=None, help="timed detector frames (default: 20 GPU, 2 CPU)")
    parser.add_argument("--images", type=int, default=None, help="timed SAM 2 images (default: 60 GPU, 6 CPU)")
    parser.add_argument("--boxes", type=int, default=12, help="box prompts per image (STRIDE-QA: ~10-20 objects)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    import importlib.util

    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = args.device.startswith("cuda")
    args.detector = args.detector or ("bevfusion" if args.repo else "centerpoint")
    args.sam2_size = args.sam2_size or ("l" if gpu else "t")
    args.frames = args.frames or (20 if gpu else 2)
    args.images = args.images or (60 if gpu else 6)
    print(f"device: {device_description(torch, args.device)}", flush=True)

    from stridegen.logs import open_log
    from stridegen.logs.synthetic.generator import generate_dataset

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = work / "log"
        generate_dataset(
            root,
            scenes=1,
            seconds=0.5 * (args.frames + 3),
            seed=0,
            width=1600,
            height=900,
            sweeps=True,
            progress=False,
        )
        frames = [f for f in open_log(root).scenes()[0].frames if f.index > 0]
        if not all(importlib.util.find_spec(m) for m in ("mmdet3d", "mmcv", "mmengine")):
            rows.append(_skipped("detector", args.detector, "needs the mmdet3d extra (make setup)"))
        elif args.detector.startswith("bevfusion") and not args.repo:
            rows.append(_skipped("detector", args.detector, "needs --repo (an mmdetection3d v1.4.0 checkout)"))
        else:
            rows.append(bench_detector(frames, args, work))
        print(json.dumps(rows[-1]), flush=True)
        if importlib.util.find_spec("sam2") is None:
            rows.append(_skipped("segmenter", f"sam2.1_hiera_{args.sam2_size}", "needs the sam2 extra (make setup)"))
        else:
            channels = [(f, c) for f in frames for c in f.camera_channels]
            images = [f.image(c) for f, c in channels[: args.images]]
            rows.append(bench_sam2(images, args))
        print(json.dumps(rows[-1]), flush=True)
    for row in rows:
        row["device"] = device_description(torch, args.device)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
