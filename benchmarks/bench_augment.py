"""CPU milliseconds per 1600x900 image for each corruption, per core: stridegen vs imagecorruptions vs albumentations.

Run it in its own environment (the comparison packages are not project dependencies)::

    python3 -m venv /tmp/augbench-venv
    /tmp/augbench-venv/bin/pip install imagecorruptions==1.1.2 albumentations==2.0.8 "opencv-python-headless<5" \
        scipy simplejpeg
    # imagecorruptions pulls opencv-python (5.x), whose cv2 shadows the headless 4.x one: put 4.x back
    /tmp/augbench-venv/bin/pip uninstall -y opencv-python
    /tmp/augbench-venv/bin/pip install --force-reinstall --no-deps "opencv-python-headless<5"
    /tmp/augbench-venv/bin/python benchmarks/bench_augment.py [--severity 3] [--repeats 5] [--json out.json]

The image is the nuScenes-demo CAM_FRONT frame in ../shared/data (1600x900). stridegen is imported from this
checkout. imagecorruptions 1.1.2 predates numpy 2 and scikit-image 0.19; `_shim_imagecorruptions` patches the two
removed names it uses, inside this benchmark only. The albumentations column uses the transform of the same
family set to a comparable strength (named in the output); it is a speed reference, not the same formula.
Per core, single-threaded on both sides (``--threads``, default 1): OpenCV's pool (``cv2.setNumThreads``, which
imagecorruptions' and albumentations' OpenCV calls share), and OMP/MKL/OpenBLAS (environment, then threadpoolctl
where installed). Each figure is CPU time (``time.process_time``: every thread of the process), not wall clock.
After one warm-up call of each, ``--repeats`` rounds run ours, imagecorruptions' and albumentations' call in turn
(alternated, so a busy machine weighs on all of them alike); the table gives min / median / max CPU ms over the
rounds and the ratio of the medians (one call for imagecorruptions' glass_blur, which takes tens of seconds).
`faults` is the number of minor page faults per call of ours (fresh memory touched: load-independent). The process
keeps freed memory as a `stridegen augment` worker does (``keep_freed_memory``), so each corruption's figure does
not depend on which ones ran before it. Without imagecorruptions or albumentations installed their columns are
empty (ours is still timed).

`--parity` instead checks fidelity to imagecorruptions on the same image at every severity: PSNR to the clean
image of ours and of the reference (random corruptions: mean over 3 seeds), and for the deterministic ones the
mean absolute pixel difference between the two outputs (imagecorruptions truncates to uint8, we round: ~0.5).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # single-threaded BLAS/OpenMP unless the caller says otherwise

import cv2  # noqa: E402
import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_IMAGE_DIR = REPO.parent / "shared" / "data" / "nuscenes-demo" / "samples" / "CAM_FRONT"

# stridegen name -> imagecorruptions name (same ImageNet-C formula)
IMAGECORRUPTIONS_NAMES = {
    "gaussian_noise": "gaussian_noise",
    "shot_noise": "shot_noise",
    "impulse_noise": "impulse_noise",
    "defocus_blur": "defocus_blur",
    "glass_blur": "glass_blur",
    "motion_blur": "motion_blur",
    "zoom_blur": "zoom_blur",
    "snow": "snow",
    "fog": "fog",
    "brightness": "brightness",
    "contrast": "contrast",
    "elastic": "elastic_transform",
    "pixelate": "pixelate",
    "jpeg_compression": "jpeg_compression",
    "saturation": "saturate",
}
# Issue 17, item 5: every corruption at least 5x faster than imagecorruptions where it has the corruption, and at
# least as fast as albumentations' closest transform.
IMAGECORRUPTIONS_GOAL = 5.0
ALBUMENTATIONS_GOAL = 1.0
SLOW_REFERENCE = {"glass_blur"}  # imagecorruptions' pixel-swap loop takes tens of seconds: timed once


def _shim_imagecorruptions():
    """Make imagecorruptions 1.1.2 run on numpy 2 / scikit-image >= 0.19 (benchmark only)."""
    if not hasattr(np, "float_"):
        np.float_ = np.float64  # noqa: NPY201 - removed in numpy 2.0; used by its plasma_fractal
    import imagecorruptions
    import imagecorruptions.corruptions as ic
    from skimage.filters import gaussian as _gaussian

    def gaussian(image, sigma=1.0, multichannel=None, **kwargs):  # `multichannel` was removed in skimage 0.19
        if multichannel:
            kwargs.setdefault("channel_axis", -1)
        return _gaussian(image, sigma=sigma, **kwargs)

    ic.gaussian = gaussian
    return imagecorruptions


def _albumentations_transforms() -> dict[str, tuple[str, object]]:
    import albumentations as A

    def one(t):
        return A.Compose([t])

    def downscale(scale: float, upscale: int):
        pair = {"downscale": cv2.INTER_AREA, "upscale": upscale}
        return A.Downscale(scale_range=(scale, scale), interpolation_pair=pair, p=1)

    return {
        # ImageNet-C brightness is V + c in HSV (c = 0.3 at severity 3: 76.5 of 255), which HueSaturationValue's
        # value shift computes too; RandomBrightnessContrast adds to R, G and B (another formula: ALSO).
        "brightness": (
            "HueSaturationValue(V + 76.5)",
            one(
                A.HueSaturationValue(hue_shift_limit=(0, 0), sat_shift_limit=(0, 0), val_shift_limit=(76.5, 76.5), p=1)
            ),
        ),
        "reduced_brightness": (
            "RandomBrightnessContrast(-0.5)",
            one(A.RandomBrightnessContrast(brightness_limit=(-0.5, -0.5), contrast_limit=(0, 0), p=1)),
        ),
        # ImageNet-C contrast is (x - m) c + m with m the channel's mean (c = 0.2 at severity 3); ColorJitter's
        # contrast is the same blend towards the grey image's mean. RandomBrightnessContrast's "contrast" scales
        # towards black, x (1 + limit) with no mean (albumentations 2.0.8: multiply_add(img, alpha, beta = 0)):
        # another edit (ALSO).
        "contrast": (
            "ColorJitter(contrast=0.2)",
            one(A.ColorJitter(brightness=0, contrast=(0.2, 0.2), saturation=0, hue=0, p=1)),
        ),
        "saturation": (
            "ColorJitter(saturation=2)",
            one(A.ColorJitter(brightness=0, contrast=0, saturation=(2, 2), hue=0, p=1)),
        ),
        # Severity 3 blends 60 % of the way to BT.601 luma: ColorJitter's saturation 0.4 is that blend (ToGray, the
        # whole way, is severity 5: ALSO).
        "grayscale": (
            "ColorJitter(saturation=0.4)",
            one(A.ColorJitter(brightness=0, contrast=0, saturation=(0.4, 0.4), hue=0, p=1)),
        ),
        "color_quantization": ("Posterize(3 bits)", one(A.Posterize(num_bits=3, p=1))),
        "jpeg_compression": ("ImageCompression(q=15)", one(A.ImageCompression(quality_range=(15, 15), p=1))),
        "gaussian_noise": ("GaussNoise(std=.18)", one(A.GaussNoise(std_range=(0.18, 0.18), p=1))),
        "shot_noise": ("ShotNoise", one(A.ShotNoise(p=1))),
        "impulse_noise": ("SaltAndPepper(.09)", one(A.SaltAndPepper(amount=(0.09, 0.09), p=1))),
        "motion_blur": ("MotionBlur(31)", one(A.MotionBlur(blur_limit=(31, 31), p=1))),
        "zoom_blur": ("ZoomBlur(1.2)", one(A.ZoomBlur(max_factor=(1.2, 1.2), step_factor=(0.02, 0.02), p=1))),
        "defocus_blur": ("Defocus(r=6)", one(A.Defocus(radius=(6, 6), alias_blur=(0.5, 0.5), p=1))),
        "glass_blur": ("GlassBlur(1, 2, 3)", one(A.GlassBlur(sigma=1.0, max_delta=2, iterations=3, p=1))),
        "pixelate": ("Downscale(.4, area/nearest)", one(downscale(0.4, cv2.INTER_NEAREST))),
        "low_resolution": ("Downscale(.25, area/linear)", one(downscale(0.25, cv2.INTER_LINEAR))),
        "fog": ("RandomFog(.5)", one(A.RandomFog(fog_coef_range=(0.5, 0.5), p=1))),
        "snow": ("RandomSnow", one(A.RandomSnow(p=1))),
        "rain": ("RandomRain", one(A.RandomRain(p=1))),
        "water_splash": ("Spatter(rain)", one(A.Spatter(mode="rain", p=1))),
        "lens_obstruction": ("Spatter(mud)", one(A.Spatter(mode="mud", p=1))),
        "lens_distortion": ("OpticalDistortion", one(A.OpticalDistortion(distort_limit=(0.3, 0.3), p=1))),
        "elastic": ("ElasticTransform", one(A.ElasticTransform(p=1))),
    }


def _albumentations_also() -> dict[str, tuple[str, object]]:
    """albumentations transforms of the same family with another formula or strength, timed for reference only."""
    import albumentations as A

    return {
        "brightness": (
            "RandomBrightnessContrast(+0.3): an RGB add",
            A.Compose([A.RandomBrightnessContrast(brightness_limit=(0.3, 0.3), contrast_limit=(0, 0), p=1)]),
        ),
        "grayscale": ("ToGray: severity 5's full grey", A.Compose([A.ToGray(p=1)])),
        "contrast": (
            "RandomBrightnessContrast(contrast -0.8): x 0.2, towards black",
            A.Compose([A.RandomBrightnessContrast(brightness_limit=(0, 0), contrast_limit=(-0.8, -0.8), p=1)]),
        ),
    }


def _cpu_ms(fn: Callable[[], object]) -> tuple[float, int]:
    """(CPU ms of every thread of this process, minor page faults) of one call. Page faults count the fresh memory
    a call touches (the kernel maps it in 4 KiB pages): unlike the time, they do not depend on the machine's load."""
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000.0, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


def _alternated(calls: dict[str, tuple[Callable[[], object], int]]) -> dict[str, tuple[list[float], float]]:
    """Each call once as a warm-up, then rounds of every call in turn; name -> (CPU ms per round, minor page faults
    per call). ``calls``: name -> (function, rounds); a name with fewer rounds drops out of the later ones."""
    for fn, _ in calls.values():
        fn()  # warm-up (imports, caches, work buffers)
    out: dict[str, tuple[list[float], float]] = {name: ([], 0.0) for name in calls}
    for k in range(max(rounds for _, rounds in calls.values())):
        for name, (fn, rounds) in calls.items():
            if k < rounds:
                ms, faults = _cpu_ms(fn)
                samples, total = out[name]
                out[name] = ([*samples, ms], total + faults / rounds)
    return out


def _single_threaded(threads: int) -> str:
    """Cap OpenCV's pool and (where threadpoolctl is installed) the BLAS/OpenMP pools at ``threads``."""
    cv2.setNumThreads(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return f"cv2 {threads} thread(s), BLAS/OpenMP threads from the environment"
    threadpool_limits(threads)
    return f"cv2 {threads} thread(s), BLAS/OpenMP {threads} (threadpoolctl)"


def _load_image(path: Path | None) -> np.ndarray:
    if path is None:
        candidates = sorted(DEFAULT_IMAGE_DIR.glob("*.jpg"))
        if not candidates:
            raise SystemExit(f"no CAM_FRONT image under {DEFAULT_IMAGE_DIR}")
        path = candidates[0]
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise SystemExit(f"cannot read {path}")
    image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    if image.shape[:2] != (900, 1600):
        image = cv2.resize(image, (1600, 900), interpolation=cv2.INTER_AREA)
    return image


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 10.0 * np.log10(255.0**2 / max(mse, 1e-12))


def parity(image: np.ndarray, names: list[str], skip_slow: bool) -> None:
    from stridegen.augment.corruptions import CORRUPTIONS

    ic = _shim_imagecorruptions()
    print(f"{'corruption':18s} sev {'PSNR ours':>10s} {'PSNR ref':>9s} {'mean|diff|':>11s}")
    for name in names:
        ic_name = IMAGECORRUPTIONS_NAMES.get(name)
        if ic_name is None or (skip_slow and name in SLOW_REFERENCE):
            continue
        corruption = CORRUPTIONS[name]
        seeds = range(3) if corruption.random else range(1)
        for severity in range(1, 6):
            ours, refs = [], []
            for seed in seeds:
                np.random.seed(seed)  # noqa: NPY002 - imagecorruptions draws from numpy's global generator
                refs.append(ic.corrupt(image, severity=severity, corruption_name=ic_name))
                ours.append(corruption.apply(image, severity, np.random.default_rng(seed)))
            p_ours = np.mean([_psnr(o, image) for o in ours])
            p_ref = np.mean([_psnr(r, image) for r in refs])
            diff = "" if corruption.random else f"{np.abs(ours[0].astype(float) - refs[0]).mean():11.2f}"
            print(f"{name:18s} {severity:3d} {p_ours:10.2f} {p_ref:9.2f} {diff}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=Path, default=None)
    parser.add_argument("--severity", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5, help="alternated rounds")
    parser.add_argument("--threads", type=int, default=1, help="OpenCV/BLAS threads, both sides (default 1)")
    parser.add_argument("--only", default="", help="comma-separated stridegen corruption names")
    parser.add_argument("--skip-slow", action="store_true", help="skip imagecorruptions glass_blur (~minutes)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    parser.add_argument("--parity", action="store_true", help="compare outputs with imagecorruptions instead")
    args = parser.parse_args(argv)

    from stridegen.augment.corruptions import CORRUPTIONS
    from stridegen.augment.corruptions.base import keep_freed_memory

    keep_freed_memory()  # as every `stridegen augment` worker does (corruptions/base.py)
    threading = _single_threaded(args.threads)
    image = _load_image(args.image)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(CORRUPTIONS)
    if args.parity:
        parity(image, names, args.skip_slow)
        return 0
    try:
        ic: Any = _shim_imagecorruptions()
    except ImportError:
        ic = None
    try:
        albu = _albumentations_transforms()
    except ImportError:
        albu = {}
    np.random.seed(0)  # noqa: NPY002 - imagecorruptions draws from numpy's global generator

    print(
        f"image {image.shape[1]}x{image.shape[0]}, severity {args.severity}, CPU ms per call (all threads), "
        f"{args.repeats} alternated rounds: min / median / max; x faster = ratio of the medians\n"
        f"{threading}; cv2 {cv2.__version__}, numpy {np.__version__}"
        + ("" if ic is not None else "; imagecorruptions NOT installed")
        + ("" if albu else "; albumentations NOT installed")
    )
    header = (
        f"{'corruption':20s} {'ours CPU ms':>19s} {'imagecorr CPU ms':>23s} {'x faster':>9s} {'albu CPU ms':>19s} "
        f"{'x faster':>9s} {'faults':>7s}  albumentations transform"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for name in names:
        corruption = CORRUPTIONS[name]
        seeds = iter(range(10**6))

        def ours_call(c: Any = corruption, s: Iterator[int] = seeds) -> np.ndarray:
            return c.apply(image, args.severity, np.random.default_rng(next(s)))

        calls: dict[str, tuple[Callable[[], object], int]] = {"ours": (ours_call, args.repeats)}
        ic_name = IMAGECORRUPTIONS_NAMES.get(name)
        if ic is not None and ic_name and not (args.skip_slow and name in SLOW_REFERENCE):

            def call(n: str = ic_name) -> np.ndarray:
                return ic.corrupt(image, severity=args.severity, corruption_name=n)

            calls["ref"] = (call, 1 if name in SLOW_REFERENCE else args.repeats)
        alb_label = ""
        if name in albu:
            alb_label, transform = albu[name]

            def albu_call(t: Any = transform) -> np.ndarray:
                return t(image=image)["image"]

            calls["albu"] = (albu_call, args.repeats)
        timed = _alternated(calls)
        samples = {k: v[0] for k, v in timed.items()}
        ours, faults = statistics.median(samples["ours"]), timed["ours"][1]
        ref = statistics.median(samples["ref"]) if "ref" in samples else None
        alb = statistics.median(samples["albu"]) if "albu" in samples else None
        row = {
            "corruption": name,
            "ours_ms": ours,
            "ours_cpu_ms_rounds": samples["ours"],
            "ours_page_faults_per_call": faults,
            "imagecorruptions_ms": ref,
            "imagecorruptions_cpu_ms_rounds": samples.get("ref"),
            "albumentations_ms": alb,
            "albumentations_cpu_ms_rounds": samples.get("albu"),
            "albumentations_transform": alb_label or None,
        }
        rows.append(row)

        def fmt(key: str, rounds: dict[str, list[float]] = samples) -> str:
            v = rounds.get(key)
            if not v:
                return f"{'-':>19s}"
            return f"{min(v):5.1f} /{statistics.median(v):6.1f} /{max(v):6.1f}"

        def ratio(v: float | None, base: float = ours) -> str:
            return f"{v / base:8.1f}x" if v is not None else f"{'-':>9s}"

        print(
            f"{name:20s} {fmt('ours')} {fmt('ref'):>23s} {ratio(ref)} {fmt('albu')} {ratio(alb)} {faults:7.0f}  "
            f"{alb_label}",
            flush=True,
        )

    print(
        f"\ngoals: >= {IMAGECORRUPTIONS_GOAL:g}x faster than imagecorruptions, "
        f">= {ALBUMENTATIONS_GOAL:g}x (as fast as) albumentations"
    )
    for r in rows:
        verdicts = [
            f"{label} {base / r['ours_ms']:6.1f}x {'ok' if base / r['ours_ms'] >= goal else 'MISSED'}"
            for label, base, goal in (
                ("imagecorruptions", r["imagecorruptions_ms"], IMAGECORRUPTIONS_GOAL),
                ("albumentations", r["albumentations_ms"], ALBUMENTATIONS_GOAL),
            )
            if base
        ]
        if verdicts:
            print(f"  {r['corruption']:20s} " + "   ".join(verdicts))
    also = {n: v for n, v in (_albumentations_also() if albu else {}).items() if n in names}
    if also:
        print("\nfor reference, albumentations transforms of the same family with another formula or strength:")
    for name, (label, transform) in also.items():

        def also_call(t: Any = transform) -> np.ndarray:
            return t(image=image)["image"]

        ms = statistics.median(_alternated({"also": (also_call, args.repeats)})["also"][0])
        ours_ms = next(r["ours_ms"] for r in rows if r["corruption"] == name)
        print(f"  {name:20s} {label:45s} {ms:6.1f} ms ({ms / ours_ms:.1f}x ours)")
        next(r for r in rows if r["corruption"] == name)["albumentations_also"] = {"transform": label, "ms": ms}
    if args.json:
        meta = {"severity": args.severity, "repeats": args.repeats, "threads": args.threads, "timing": "CPU ms"}
        args.json.write_text(json.dumps({**meta, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
