"""The ``mmdet3d`` detector on CPU (or GPU): seconds per frame of the full-size built-in models, random weights.

Each model is built by mmdet3d's own builder from its built-in config (full size: voxel 0.075 m over 108 m, 10
sweeps; BEVFusion with its Swin-T camera branch at 256 x 704), given random weights (``torch.manual_seed``; the cost
does not depend on the weights), saved as a checkpoint and run through ``Mmdet3dDetector`` on a synthetic log with
LiDAR sweeps (about 23 k points per sweep, 10 sweeps per frame) and six 1600 x 900 cameras. The first frame is a
warm-up; the others are timed: CPU seconds (process time, all threads) and wall seconds per frame.

    .venv/bin/python benchmarks/bench_mmdet3d.py                                   # centerpoint, centerpoint-pillar
    .venv/bin/python benchmarks/bench_mmdet3d.py --models centerpoint bevfusion-lidar bevfusion \\
        --repo ~/src/mmdetection3d                                                 # BEVFusion needs a checkout
    .venv/bin/python benchmarks/bench_mmdet3d.py --device cuda --frames 20 --json out/bench_mmdet3d.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def save_random_checkpoint(config: Path, repo: str, out: Path, seed: int = 0) -> list[str]:
    """Build the config's model with mmdet3d's builder and random weights; save it as mmengine does."""
    import torch
    from mmdet3d.registry import MODELS
    from mmengine.registry import init_default_scope

    from stridegen.pipeline.detect import mmdet3d_model as mm

    mm.prepare_repo(Path(repo).expanduser().resolve() if repo else None)
    cfg = mm.load_config(config)
    init_default_scope(cfg.get("default_scope", "mmdet3d"))
    mm.drop_pretrained_init(cfg.model)  # BEVFusion's Swin names a URL; random weights need no download
    torch.manual_seed(seed)
    model = MODELS.build(cfg.model)
    classes = list(cfg.get("class_names") or cfg.metainfo.classes)
    torch.save({"meta": {"dataset_meta": {"classes": classes}}, "state_dict": model.state_dict()}, out)
    return classes


def bench_model(name: str, frames: list, args: argparse.Namespace, work: Path) -> dict:
    import torch

    from stridegen.pipeline.detect import mmdet3d_backend as mb
    from stridegen.pipeline.detect import mmdet3d_model as mm

    config, _ = mm.resolve_config_path(name, args.repo)
    checkpoint = work / f"{name}.pth"
    save_random_checkpoint(config, args.repo, checkpoint)
    start = time.perf_counter()
    det = mb.Mmdet3dDetector(
        model=name, checkpoint=str(checkpoint), device=args.device, mmdet3d_repo=args.repo, score_threshold=0.1
    )
    load_s = time.perf_counter() - start
    det.detect(frames[0])  # warm-up
    cpu0, wall0 = time.process_time(), time.perf_counter()
    boxes = 0
    for frame in frames[1:]:
        boxes += len(det.detect(frame))
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
    n = len(frames) - 1
    return {
        "model": name,
        "device": args.device,
        "threads": torch.get_num_threads(),
        "frames": n,
        "load_s": round(load_s, 2),
        "cpu_s_per_frame": round((time.process_time() - cpu0) / n, 2),
        "wall_s_per_frame": round((time.perf_counter() - wall0) / n, 2),
        "points_per_frame": int(det.lidar_inputs(frames[1])[0].shape[0]),
        "boxes_per_frame": round(boxes / n, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["centerpoint", "centerpoint-pillar"])
    parser.add_argument("--repo", default=os.environ.get("STRIDEGEN_MMDET3D_REPO", ""), help="mmdetection3d checkout")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--frames", type=int, default=3, help="timed frames (after one warm-up frame)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--root", type=Path, help="an existing synthetic log with sweeps (default: generate one)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    import torch

    from stridegen.logs import open_log
    from stridegen.logs.synthetic.generator import generate_dataset

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = args.root
        if root is None:
            root = work / "log"
            seconds = 0.5 * (args.frames + 2)
            generate_dataset(
                root, scenes=1, seconds=seconds, seed=0, width=1600, height=900, sweeps=True, progress=False
            )
        frames = [f for f in open_log(root).scenes()[0].frames if f.index > 0][: args.frames + 1]
        if len(frames) < 2:
            print(f"{root}: needs at least 2 frames past the first", file=sys.stderr)
            return 1
        rows = []
        for name in args.models:
            rows.append(bench_model(name, frames, args, work))
            print(json.dumps(rows[-1]), flush=True)
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + " --- |" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
