"""Where the CPU time of writing a scene's shard goes (``stridegen.shards.writer.write_shard``), part by part, and
which parts the shard's bytes fix (issue 35).

    .venv/bin/python benchmarks/bench_shard_write_parts.py --dataset DATASET            # 5 rounds
    .venv/bin/python benchmarks/bench_shard_write_parts.py --dataset DATASET --rounds 9

Each scene's record is read back from the dataset once (unchecked). Then, per round, every part runs once on every
scene, the parts alternated, and each part's figure is this process's CPU time (user + system,
``time.process_time``) per scene, min / median / max over the rounds:

- ``validate + counts``: ``SceneRecord.validate`` and ``counts``;
- ``HDF5 file in memory``: the file ``write_shard`` makes (``create_file`` on a ``BytesIO``, ``write_record``), with
  the dataset's compression: the same bytes (checked against the dataset's shard);
- ``  of which the images``: the variable-length ``images/data`` dataset alone (HDF5's global heap, one row per
  camera file) with its row CRC-32s;
- ``  the same file, no compression``: what the numeric datasets' gzip costs, by difference (other bytes: not an
  option that keeps the shards);
- ``atomic write + fsync`` of the bytes (system time of the write; the fsync's wait is not CPU);
- ``sha256`` of the bytes (the manifest's).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from stridegen.shards.reader import open_dataset  # noqa: E402
from stridegen.shards.schema import SceneRecord  # noqa: E402
from stridegen.shards.writer import atomic_write_bytes, create_file, make_group, write_array, write_record  # noqa: E402


def _in_memory(record: SceneRecord, config_hash: str, compression: str, level: int) -> bytes:
    """The bytes ``write_shard`` writes for ``record`` (its file attributes, then ``write_record``)."""
    from stridegen import __version__
    from stridegen.shards.schema import SCHEMA_VERSION, SHARD_FORMAT

    buffer = io.BytesIO()
    with create_file(f"{record.meta.name}.h5", buffer) as f:
        f.attrs["format"] = SHARD_FORMAT
        f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
        f.attrs["stridegen_version"] = __version__
        f.attrs["config_hash"] = config_hash
        scenes = make_group(f, "scenes")
        write_record(make_group(scenes, record.meta.name), record, compression, level, record.counts(), config_hash)
    return buffer.getvalue()


def _validate_and_count(record: SceneRecord) -> dict[str, int]:
    record.validate()
    return record.counts()


def _images_only(record: SceneRecord) -> None:
    with create_file("images.h5", io.BytesIO()) as f:
        write_array(make_group(f, "images"), "data", record.images.data, is_bytes=True)


def load_built(dataset: Path) -> tuple[dict[str, Any], list[SceneRecord], str, str, int]:
    """A built dataset's manifest, its scenes' records (in shard order), config hash and shard compression."""
    manifest = json.loads((dataset / "manifest.json").read_text())
    output = manifest.get("config", {}).get("output", {})
    compression, level = str(output.get("compression", "gzip")), int(output.get("compression_level", 4))
    with open_dataset(dataset, checksums=False) as ds:
        records = [ds.scene(name).record() for entry in manifest["shards"] for name in entry["scenes"]]
    return manifest, records, manifest["config_hash"], compression, level


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, required=True, help="a built dataset (its manifest.json)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    manifest, records, config_hash, compression, level = load_built(args.dataset)
    shas = [entry["sha256"] for entry in manifest["shards"]]
    images = [_in_memory(r, config_hash, compression, level) for r in records]
    same = [hashlib.sha256(b).hexdigest() for b in images] == shas
    mb = sum(map(len, images)) / len(images) / 1e6
    print("command: " + " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"{args.dataset}: {len(records)} scene(s), {mb:.1f} MB/shard, {compression} {level}")
    print(f"  {args.rounds} rounds, the parts alternated")
    print(f"  the in-memory file has the dataset's bytes: {same}")
    if not same:
        raise SystemExit("the bytes differ from the dataset's shards (another version's dataset?)")
    tmp = Path(tempfile.mkdtemp(prefix="bench_shard_write_parts_"))
    parts: dict[str, Callable[[int], object]] = {
        "validate + counts": lambda i: _validate_and_count(records[i]),
        "HDF5 file in memory": lambda i: _in_memory(records[i], config_hash, compression, level),
        "  of which the images": lambda i: _images_only(records[i]),
        "  the same file, no compression": lambda i: _in_memory(records[i], config_hash, "none", level),
        "atomic write + fsync": lambda i: atomic_write_bytes(tmp / "shard.h5", images[i]),
        "sha256": lambda i: hashlib.sha256(images[i]).hexdigest(),
    }
    ms: dict[str, list[float]] = {name: [] for name in parts}
    for _ in range(args.rounds):
        for name, part in parts.items():
            start = time.process_time()
            for i in range(len(records)):
                part(i)
            ms[name].append(1e3 * (time.process_time() - start) / len(records))
    print("  CPU ms per scene, min / median / max")
    for name, values in ms.items():
        print(f"    {name:34s} {min(values):7.2f} / {statistics.median(values):7.2f} / {max(values):7.2f}")


if __name__ == "__main__":
    main()
