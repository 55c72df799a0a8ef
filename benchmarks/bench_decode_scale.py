"""Full-resolution logs at the decoded scale each stage needs (issue 35): whole-process CPU of `stridegen build`
at 800x450 and 1600x900, and what decoding 1600x900 images at 1/2 (``lidar_watershed``'s ``image_min_side``)
changes in the masks and the QA against full-resolution decoding.

    .venv/bin/python benchmarks/bench_decode_scale.py                  # 3 alternated rounds
    .venv/bin/python benchmarks/bench_decode_scale.py --rounds 6 --compare   # + mask IoU / QA change at 1600x900

Three variants per round, each first in turn: 800x450, 1600x900 (the default: decoded at 1/2), and 1600x900 with
``segmenter.image_min_side=0`` (every image decoded whole, as before issue 35).

Each timed run is a separate ``stridegen build`` process (the virtual environment's ``stridegen`` script) of the
default synthetic log (3 scenes x 20 s, 45 keyframes) at that resolution, one worker, into a fresh folder; the CPU
time is the child's user + sys (``os.wait4``: the whole command, imports, start-up and
any child processes included), on one core (the build is single-threaded at workers=1; BLAS and OpenCV threads are
set to 1 through the environment). The resolutions alternate within each round so that the machine's drift falls on
both; min / median / max over the rounds are printed. The logs are generated once (cached) and not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from single_thread import THREAD_ENV

from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC, ensure_default_log

RESOLUTIONS = ((800, 450), (1600, 900))


def build_cpu(log: Path, out: Path, overrides: list[str]) -> tuple[float, int]:
    """(user + sys CPU seconds of one `stridegen build` process, its waited-for children included, keyframes)."""
    stridegen = str(Path(sys.executable).parent / "stridegen")
    cmd = [stridegen, "build", str(log), "workers=1", *overrides, "--out", str(out), "--overwrite"]
    child = subprocess.Popen(cmd, env={**os.environ, **THREAD_ENV}, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (RUSAGE_CHILDREN would sum every child)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit status {child.returncode}")
    report = json.loads((out / "build_report.json").read_text())
    return usage.ru_utime + usage.ru_stime, int(report["keyframes_built"])


def compare(full: Path, reduced: Path) -> dict[str, object]:
    """Masks and QA of two builds of one log: IoU of each (image, track) mask, the visible flags, QA counts."""
    from stridegen.shards.reader import open_dataset

    ious: list[float] = []
    flips = total = 0
    qa_full = qa_red = 0
    with open_dataset(full) as a, open_dataset(reduced) as b:
        for name in a.scenes:
            sa, sb = a.scene(name), b.scene(name)
            ma, mb = sa.masks, sb.masks
            assert ma is not None and mb is not None
            key_a = {(int(i), int(t)): k for k, (i, t) in enumerate(zip(ma.image_index, ma.track_index, strict=True))}
            key_b = {(int(i), int(t)): k for k, (i, t) in enumerate(zip(mb.image_index, mb.track_index, strict=True))}
            if key_a.keys() != key_b.keys():
                raise SystemExit(f"{name}: the two builds segment different objects")
            for key, ka in key_a.items():
                kb = key_b[key]
                x, y = sa.mask(ka), sb.mask(kb)
                union = np.count_nonzero(x | y)
                ious.append(np.count_nonzero(x & y) / union if union else 1.0)
                flips += bool(ma.visible[ka]) != bool(mb.visible[kb])
                total += 1
            qa_full += sa.counts.get("qa", 0)
            qa_red += sb.counts.get("qa", 0)
    arr = np.asarray(ious)
    return {
        "masks": total,
        "mean_iou": float(arr.mean()),
        "median_iou": float(np.median(arr)),
        "p5_iou": float(np.percentile(arr, 5)),
        "iou_below_0.9": int(np.count_nonzero(arr < 0.9)),
        "visible_flips": flips,
        "qa_full": qa_full,
        "qa_reduced": qa_red,
    }


WHOLE = "segmenter.options.image_min_side=0"  # every image decoded whole: the build before issue 35


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", action="store_true", help="mask IoU / QA count of 1600x900 at 1/2 against whole")
    args = ap.parse_args(argv)
    logs = {
        (w, h): ensure_default_log(dict(DEFAULT_SYNTHETIC, width=w, height=h), progress=False) for w, h in RESOLUTIONS
    }
    variants = [
        ("800x450", logs[(800, 450)], []),
        ("1600x900", logs[(1600, 900)], []),
        ("1600x900 whole", logs[(1600, 900)], [WHOLE]),
    ]
    rates: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="bench_decode_scale_") as tmp:
        for r in range(args.rounds):
            for name, log, overrides in variants[r % 3 :] + variants[: r % 3]:  # each variant first in turn
                out = Path(tmp) / f"{name.replace(' ', '-')}-{r}"  # a fresh folder: no resume
                cpu, kf = build_cpu(log, out, overrides)
                rates[name].append(kf / cpu)
                print(f"round {r + 1} {name}: {kf} keyframes, {cpu:.2f} CPU-s, {kf / cpu:.2f} keyframes/CPU-s")
        print("\nkeyframes per CPU-second of `stridegen build` (whole process, one core), min / median / max:")
        for key, values in rates.items():
            print(f"  {key}: {min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}")
        if args.compare:
            comparison = compare(Path(tmp) / "1600x900-whole-0", Path(tmp) / "1600x900-0")
            print("\n1600x900, decoded at 1/2 against whole:", json.dumps(comparison))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
