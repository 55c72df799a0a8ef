"""Cost of the shard identity check (issue 33) on whole commands: `eval lsr --dataset` and `inspect`.

    .venv/bin/python benchmarks/bench_shard_identity.py --dataset out/demo --rounds 7
    .venv/bin/python benchmarks/bench_shard_identity.py      # builds the demo (3 scenes x 20 s) in a temp folder

Each round runs each command twice as a fresh process, once as shipped (identity checked) and once with the three
identity checks replaced by no-ops (``Dataset._check_file_identity``: size and config hash; ``_check_identity``:
counts and content digest; ``check_totals``: the manifest's sums), in alternating order, and records the child's
CPU time (user + system, ``RUSAGE_CHILDREN``): the whole process, imports included, as a user pays it. The figure
is min / median / max over the rounds of each, and the overhead of the medians (goal: under 5 %). The predictions
of `eval lsr` are the dataset's own answers (`stridegen export --format answers`), made once.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Run the CLI in a child, with the identity checks as shipped or switched off.
CHILD = """
import sys
if sys.argv[1] == "off":
    from stridegen.shards import reader
    reader.Dataset._check_file_identity = lambda *a, **k: None
    reader.Dataset._check_identity = lambda *a, **k: None
    reader.check_totals = lambda *a, **k: None
sys.argv = ["stridegen", *sys.argv[2:]]
from stridegen.cli import main
main()
"""


def child_cpu(mode: str, args: list[str]) -> float:
    """CPU seconds (user + system) of one child process running ``stridegen ARGS`` with checks ``mode``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", CHILD, mode, *args], cwd=REPO, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"stridegen {' '.join(args)} ({mode}) failed:\n{done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def direct_cost(dataset: Path, rounds: int) -> tuple[float, int]:
    """Seconds spent inside the three identity checks over ``rounds`` openings of the dataset and of every shard
    (in this process, ``time.perf_counter`` around each call), and the number of shard openings."""
    import time

    from stridegen.shards import reader

    spent = [0.0]

    def timed(func):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - t0

        return wrapper

    saved = (reader.Dataset._check_file_identity, reader.Dataset._check_identity, reader.check_totals)
    reader.Dataset._check_file_identity = timed(saved[0])  # type: ignore[method-assign]
    reader.Dataset._check_identity = timed(saved[1])  # type: ignore[method-assign]
    reader.check_totals = timed(saved[2])
    opened = 0
    try:
        for _ in range(rounds):
            with reader.open_dataset(dataset) as ds:
                for view in ds:
                    view.group  # noqa: B018 (opens the shard: the checks run)
                    opened += 1
    finally:
        reader.Dataset._check_file_identity, reader.Dataset._check_identity, reader.check_totals = saved  # type: ignore[method-assign]
    return spent[0], opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=None, help="A built dataset (default: build the demo).")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-identity-") as tmp_name:
        tmp = Path(tmp_name)
        dataset = args.dataset
        if dataset is None:
            dataset = tmp / "demo"
            subprocess.run([sys.executable, "-c", CHILD, "on", "build", "--out", str(dataset)], cwd=REPO, check=True)
        answers = tmp / "answers"
        child_cpu("on", ["export", str(dataset), "--format", "answers", "--out", str(answers)])
        commands = {
            "eval lsr --dataset": ["eval", "lsr", "--dataset", str(dataset), "--pred"]
            + [str(answers / "answers_spatiotemporal.jsonl"), "--out", str(tmp / "lsr")],
            "inspect": ["inspect", str(dataset)],
        }
        times: dict[tuple[str, str], list[float]] = {(c, m): [] for c in commands for m in ("on", "off")}
        for r in range(args.rounds):
            for name, cmd in commands.items():
                for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                    times[(name, mode)].append(child_cpu(mode, cmd))
        print(f"dataset {dataset}; {args.rounds} alternated rounds; child process CPU s (user + system)")
        print(f"{'command':22} {'checks':6} {'min':>7} {'median':>7} {'max':>7}")
        for name in commands:
            for mode in ("on", "off"):
                t = times[(name, mode)]
                print(f"{name:22} {mode:6} {min(t):7.3f} {statistics.median(t):7.3f} {max(t):7.3f}")
            on, off = (statistics.median(times[(name, m)]) for m in ("on", "off"))
            low, high = min(times[(name, "on")]) / min(times[(name, "off")]), on / off
            print(
                f"{name:22} overhead of the median {100 * (high - 1):+.1f} % (of the minimum {100 * (low - 1):+.1f} %)"
            )
        spent, opened = direct_cost(dataset, 20)
        print(f"the checks alone, in-process: {1000 * spent / opened:.3f} ms per shard opened ({opened} openings)")


if __name__ == "__main__":
    main()
