"""What other HDF5 layouts of a shard would cost to write: CPU per scene and size, against the writer as it is (issue
35). Each option CHANGES THE SHARD'S BYTES (and the last one the format the reader reads): this measures what a
format change would buy; it changes nothing in stridegen.

    .venv/bin/python benchmarks/bench_shard_layout_options.py --dataset DATASET            # 5 rounds
    .venv/bin/python benchmarks/bench_shard_layout_options.py --dataset DATASET --rounds 9

Each scene's record is read back from the dataset once (unchecked); per round every option writes every scene's
file in memory (``create_file`` on a ``BytesIO``, ``write_record``), the options alternated; the figure is this
process's CPU time (``time.process_time``) per scene, min / median / max over the rounds, and the file's size.
Options, all through h5py's public API with the writer's own ``write_record`` (``write_array`` /
``_write_table`` swapped in this process only):

- ``as built``: ``stridegen.shards.writer`` unchanged (numeric datasets gzip-compressed in chunks);
- ``small numeric contiguous``: numeric datasets under ``--small`` bytes (16 KiB) stored contiguous, uncompressed;
- ``small numeric compact``: the same ones in the object header (HDF5's compact layout: no data block of their own);
- ``no compression``: every numeric dataset contiguous, uncompressed;
- ``one compound per table``: each table's numeric columns as one compound (structured) dataset, gzip in chunks
  (fewer datasets: a different schema, which the reader would have to learn).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from bench_shard_write_parts import load_built  # noqa: E402  (benchmarks/ is the script's folder)

from stridegen.shards import writer  # noqa: E402
from stridegen.shards.integrity import values_crc32  # noqa: E402
from stridegen.shards.schema import SceneRecord  # noqa: E402

AS_BUILT = writer.write_array
WriteArray = Callable[..., int]
WriteTable = Callable[..., dict[str, int]]
AS_BUILT_TABLE = writer._write_table


def _numeric(value: Any, is_bytes: bool) -> np.ndarray | None:
    arr = np.asarray(value)
    return None if is_bytes or arr.dtype == object or arr.dtype.kind in "US" else arr


def _small_numeric(limit: int, compact: bool) -> Callable[..., int]:
    def write_array(group, name, value, is_bytes=False, compression="none", level=4) -> int:
        arr = _numeric(value, is_bytes)
        if arr is None or arr.nbytes >= limit or not arr.ndim:
            return AS_BUILT(group, name, value, is_bytes, compression, level)
        if compact:
            import h5py

            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            group.create_dataset(name, data=arr, track_times=False, dcpl=dcpl)
        else:
            group.create_dataset(name, data=arr, track_times=False)
        return values_crc32(arr)

    return write_array


def _no_compression(group, name, value, is_bytes=False, compression="none", level=4) -> int:
    return AS_BUILT(group, name, value, is_bytes, "none", level)


def _compound_table(parent, table, compression: str, level: int) -> dict[str, int]:
    """The table's numeric columns (same leading length) as one structured dataset ``columns``, the rest as built."""
    group = writer.make_group(parent, table.GROUP)
    out: dict[str, int] = {}
    numeric: dict[str, np.ndarray] = {}
    for name, value in table.arrays().items():
        arr = _numeric(value, name in table.BYTES_FIELDS)
        if arr is not None and arr.ndim:
            numeric[name] = arr
        else:
            out[f"{table.GROUP}/{name}"] = AS_BUILT(group, name, value, name in table.BYTES_FIELDS, compression, level)
    lengths = {a.shape[0] for a in numeric.values()}
    if len(lengths) == 1:
        (n,) = lengths
        packed = np.empty(n, dtype=[(k, a.dtype, a.shape[1:]) for k, a in numeric.items()])
        for k, a in numeric.items():
            packed[k] = a
        out[f"{table.GROUP}/columns"] = AS_BUILT(group, "columns", packed, False, compression, level)
    else:
        for k, a in numeric.items():
            out[f"{table.GROUP}/{k}"] = AS_BUILT(group, k, a, False, compression, level)
    return out


@contextmanager
def _swapped(
    write_array: Callable[..., int] | None, write_table: Callable[..., dict[str, int]] | None
) -> Iterator[None]:
    writer.write_array = write_array or AS_BUILT
    writer._write_table = write_table or AS_BUILT_TABLE
    try:
        yield
    finally:
        writer.write_array = AS_BUILT
        writer._write_table = AS_BUILT_TABLE


def _file(record: SceneRecord, config_hash: str, compression: str, level: int) -> int:
    buffer = io.BytesIO()
    with writer.create_file(f"{record.meta.name}.h5", buffer) as f:
        scenes = writer.make_group(f, "scenes")
        writer.write_record(writer.make_group(scenes, record.meta.name), record, compression, level, None, config_hash)
    return len(buffer.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, required=True, help="a built dataset (its manifest.json)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small", type=int, default=16 << 10, help="bytes: 'small' numeric datasets are under this")
    args = parser.parse_args()
    _manifest, records, config_hash, compression, level = load_built(args.dataset)
    options: dict[str, tuple[WriteArray | None, WriteTable | None]] = {
        "as built": (None, None),
        "small numeric contiguous": (_small_numeric(args.small, compact=False), None),
        "small numeric compact": (_small_numeric(args.small, compact=True), None),
        "no compression": (_no_compression, None),
        "one compound per table": (None, _compound_table),
    }
    print("command: " + " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"{args.dataset}: {len(records)} scene(s), {compression} {level}, {args.rounds} rounds, options alternated")
    ms: dict[str, list[float]] = {name: [] for name in options}
    size: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, (array_fn, table_fn) in options.items():
            with _swapped(array_fn, table_fn):
                start = time.process_time()
                total = sum(_file(r, config_hash, compression, level) for r in records)
                ms[name].append(1e3 * (time.process_time() - start) / len(records))
            size[name] = total / len(records) / 1e6
    print("  CPU ms per scene (the file in memory), min / median / max; MB per shard")
    for name, values in ms.items():
        spread = f"{min(values):7.2f} / {statistics.median(values):7.2f} / {max(values):7.2f}"
        print(f"    {name:26s} {spread}   {size[name]:.3f} MB")


if __name__ == "__main__":
    main()
