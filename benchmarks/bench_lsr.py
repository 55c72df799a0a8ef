"""LSR evaluation time on ~100k predictions: official-style plain loop vs stridegen.eval (identical numbers).

The official-style side is the plain re-implementation of the STRIDE-QA-Bench toolkit's evaluation kept in
reference/lsr_official.py (``reference_evaluate``: a loop over response records, per-record regex parsing and
judging, dictionaries for the localization pairs, a pandas pivot for TLC / MLSR). Both sides get the same
in-memory response records and annotation sheet (random but realistic answers, seeded); the script checks that
every success rate and every TLC / MLSR value is identical, then prints the times and the ratio. A second
figure times our whole path from the response JSON files on disk.

    .venv/bin/python benchmarks/bench_lsr.py [--groups 8000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository root: reference


def _best(fn, repeat: int) -> tuple[float, float, object]:
    """Best wall-clock and best CPU (process) time over ``repeat`` runs, and the last result. CPU time is the
    steadier figure on a shared machine; both are printed."""
    wall, cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=8000, help="groups (13 response records each)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from reference import lsr_official as ref
    from stridegen.eval.lsr import bench as sb
    from stridegen.eval.lsr.evaluate import evaluate
    from stridegen.eval.lsr.tolerance import STRIDEQA_BENCH

    responses, sheet = ref.make_bench(n_groups=args.groups, seed=0, drop_prob=0.0)
    n_items = sum(len(r["gt_value"]) for r in responses)
    print(f"{len(responses)} response records, {n_items} scored values, {args.groups} groups")

    w_ref, c_ref, ref_out = _best(
        lambda: ref.reference_evaluate(responses, ref.OFFICIAL_TOLERANCE, sheet), max(1, args.repeat - 1)
    )
    w_ours, c_ours, ours_out = _best(lambda: ref.ours_official(responses, sheet), args.repeat)
    identical = ref_out == ours_out
    print(f"{'':20s}   {'wall s':>8s} {'cpu s':>8s}")
    print(f"official-style loop : {w_ref:8.3f} {c_ref:8.3f}")
    print(
        f"stridegen (memory)  : {w_ours:8.3f} {c_ours:8.3f}   ratio wall {w_ref / w_ours:5.1f}x, "
        f"cpu {c_ref / c_ours:5.1f}x   identical numbers: {identical}"
    )

    with tempfile.TemporaryDirectory() as tmp:
        per_t: dict[int, list] = {}
        for r in responses:
            per_t.setdefault(int(r["qa_category"][-1]) if "_4d_t" in r["qa_category"] else 0, []).append(r)
        for t, recs in per_t.items():
            (Path(tmp) / f"model_t{t}.json").write_text(json.dumps(recs), encoding="utf-8")

        def from_files():
            items, _ = sb.build_items(sb.load_responses(tmp), STRIDEQA_BENCH, sheet)
            return evaluate(items, STRIDEQA_BENCH)

        w_files, c_files, _ = _best(from_files, args.repeat)
    print(f"stridegen (files)   : {w_files:8.3f} {c_files:8.3f}   (JSON reading included)")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
