"""CPU time of writing one scene's shard (``stridegen.shards.writer.write_shard``), per scene of a dataset.

    .venv/bin/python benchmarks/bench_shard_write.py                     # out/demo, else a fresh demo build
    .venv/bin/python benchmarks/bench_shard_write.py --dataset out/demo --repeat 9
    .venv/bin/python benchmarks/bench_shard_write.py --against 64059a9   # alternate with that commit's writer

Each scene's record is read back from the dataset once (unchecked), then ``write_shard`` writes it to a temporary
folder ``--repeat`` times; the figure is this process's CPU time (user + system) per write, min / median / max,
and per dataset (the scene's shard has one CRC-32 per dataset, so their count is known). With ``--against REV``
the writer module of git revision REV is loaded beside the current one and the two write alternately, round by
round, so that load on a shared machine disturbs both alike; both must give the same bytes (checked), and the
ratio of their medians is printed. CPU time still includes HDF5's gzip work and the SHA-256, the fsync's system
time and the copy of the shard's bytes; only the ratio is meaningful on a busy machine.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stridegen.shards.reader import open_dataset  # noqa: E402
from stridegen.shards.writer import write_shard  # noqa: E402


def writer_at(rev: str):
    """The ``write_shard`` of git revision ``rev``'s stridegen/shards/writer.py, loaded as a separate module."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:stridegen/shards/writer.py"], check=True, capture_output=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "writer_before.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("writer_before", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.write_shard


def cpu_ms(fn) -> tuple[float, object]:
    start = time.process_time()
    out = fn()
    return (time.process_time() - start) * 1e3, out


def summary(times: list[float]) -> str:
    return f"{min(times):7.1f} / {statistics.median(times):7.1f} / {max(times):7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--against", default=None, help="a git revision whose writer to alternate with")
    args = parser.parse_args()
    dataset = args.dataset
    if dataset is None:
        dataset = ROOT / "out" / "demo"
        if not (dataset / "manifest.json").exists():
            dataset = Path(tempfile.mkdtemp()) / "demo"
            subprocess.run([sys.executable, "-m", "stridegen.cli", "build", "--out", str(dataset)], check=True)
    manifest = json.loads((dataset / "manifest.json").read_text())
    output = manifest.get("config", {}).get("output", {})
    compression, level = str(output.get("compression", "gzip")), int(output.get("compression_level", 4))
    config_hash = manifest["config_hash"]
    writers = {"current": write_shard}
    if args.against:
        writers[args.against] = writer_at(args.against)
    out = Path(tempfile.mkdtemp())
    print(f"{dataset}: {len(manifest['shards'])} scene(s), {compression} {level}, {args.repeat} rounds")
    for entry in manifest["shards"]:
        (name,) = entry["scenes"]
        with open_dataset(dataset, checksums=False) as ds:
            record = ds.scene(name).record()
        times: dict[str, list[float]] = {label: [] for label in writers}
        digests: dict[str, set[str]] = {label: set() for label in writers}
        infos = {}
        for _ in range(args.repeat):
            for label, write in writers.items():
                ms, info = cpu_ms(lambda w=write, r=record: w(r, out, config_hash, compression, level))
                times[label].append(ms)
                digests[label].add(info.sha256)
                infos[label] = info
        shard = out / "shards" / f"{name}.h5"
        with __import__("h5py").File(shard, "r") as f:
            n_datasets = len(f[f"scenes/{name}"].attrs["checksum_paths"])
        same = len({d for s in digests.values() for d in s}) == 1
        print(f"  {name}: {n_datasets} datasets, {infos['current'].bytes / 1e6:.1f} MB, same bytes: {same}")
        for label, t in times.items():
            per = statistics.median(t) / n_datasets
            print(f"    {label:>10}: {summary(t)} per write (min / median / max), {per:.2f} ms per dataset")
        if args.against:
            ratio = statistics.median(times["current"]) / statistics.median(times[args.against])
            print(f"    current / {args.against}: {ratio:.2f} (medians)")
        assert same, f"{name}: the writers gave different bytes: {digests}"
        assert hashlib.sha256(shard.read_bytes()).hexdigest() in digests["current"]


if __name__ == "__main__":
    main()
