"""The writer's low-level dataset creation (issue 35) gives the bytes h5py's high-level ``create_dataset`` gives."""

from __future__ import annotations

import io

import h5py
import numpy as np

from stridegen.shards.writer import _Plists, create_file, write_array

ROWS = [b"\xff\xd8jpeg", b"", b"\x00\x01\x02"]
TEXT = np.array(["a", "été", ""], dtype=object)
NUMS = np.arange(12, dtype=np.float32).reshape(4, 3)


def _rows() -> np.ndarray:
    out = np.empty(len(ROWS), dtype=object)
    for i, row in enumerate(ROWS):
        out[i] = np.frombuffer(row, dtype=np.uint8)
    return out


def _image(fill) -> bytes:
    buffer = io.BytesIO()
    with create_file("x.h5", buffer) as f:
        fill(f)
    return buffer.getvalue()


def _low(f, bytes_first: bool) -> None:
    plists = _Plists()
    steps = [
        lambda: write_array(f, "b", _rows(), True, plists=plists),
        lambda: write_array(f, "s", TEXT, plists=plists),
    ]
    for step in steps if bytes_first else steps[::-1]:
        step()
    write_array(f, "n", NUMS, compression="gzip", level=4, plists=plists)
    write_array(f, "k", np.int64(7), plists=plists)


def _high(f, bytes_first: bool) -> None:
    def rows() -> None:
        ds = f.create_dataset("b", shape=(3,), dtype=h5py.vlen_dtype(np.uint8), track_times=False)
        for i, row in enumerate(ROWS):
            ds[i] = np.frombuffer(row, dtype=np.uint8)
        ds.attrs["row_crc32"] = np.array([__import__("zlib").crc32(r) for r in ROWS], dtype=np.uint32)

    def text() -> None:
        data = np.array([s.encode() for s in TEXT], dtype=object)
        f.create_dataset("s", data=data, dtype=h5py.string_dtype("utf-8"), track_times=False)

    for step in [rows, text] if bytes_first else [text, rows]:
        step()
    f.create_dataset("n", data=NUMS, compression="gzip", compression_opts=4, chunks=True, track_times=False)
    f.create_dataset("k", data=np.int64(7), track_times=False)


def test_same_bytes_as_the_high_level_calls_in_either_order() -> None:
    for bytes_first in (True, False):
        low = _image(lambda f, b=bytes_first: _low(f, b))
        assert low == _image(lambda f, b=bytes_first: _high(f, b))
        with h5py.File(io.BytesIO(low), "r") as f:
            assert [bytes(r) for r in f["b"][()]] == ROWS
            assert [s.decode() for s in f["s"][()]] == list(TEXT)
            assert h5py.check_string_dtype(f["s"].dtype) is not None
            np.testing.assert_array_equal(f["n"][()], NUMS)
            assert f["n"].compression == "gzip"
