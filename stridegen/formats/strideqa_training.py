"""The STRIDE-QA training layout (Hugging Face ``turing-motors/STRIDE-QA-Dataset``): write and read its files.

Layout, per split::

    {split}/images/images-NNNNN.tar                       WebDataset shards: one ``<key>.<ext>`` member per image
    {split}/annotations/{task}/annotations-NNNNN.jsonl.gz one JSON record per line, gzip

with ``task`` one of ``TASKS``. Image keys are 16 lowercase hex digits (the published shards' ``__key__`` shape);
a record names its image(s) by file name (``<key>.jpg``), which is the member name in the tars.

The writers are byte-reproducible: tar members carry no time, owner or mode beyond 0644 (USTAR), and the gzip
header has no name and mtime 0, so the same records and images always give the same files.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from stridegen.core.bounded_json import loads
from stridegen.core.errors import DataFormatError

TASKS = ("object_centric_spatial_qa", "ego_centric_spatial_qa", "ego_centric_spatiotemporal_qa")
IMAGES_DIR = "images"
ANNOTATIONS_DIR = "annotations"


def image_shard_name(n: int) -> str:
    return f"{IMAGES_DIR}/images-{n:05d}.tar"


def annotation_shard_name(task: str, n: int) -> str:
    return f"{ANNOTATIONS_DIR}/{task}/annotations-{n:05d}.jsonl.gz"


def tar_bytes(members: Iterable[tuple[str, bytes]]) -> bytes:
    """A deterministic USTAR archive of ``(name, data)`` members, in the given order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def jsonl_gz_bytes(records: Iterable[dict[str, Any]]) -> bytes:
    """Records as gzip-compressed JSON lines (sorted keys, ASCII), with a gzip header free of name and time."""
    body = b"".join(json.dumps(r, sort_keys=True, ensure_ascii=True).encode() + b"\n" for r in records)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz:
        gz.write(body)
    return buf.getvalue()


def read_annotations(split_dir: str | Path, task: str) -> list[dict[str, Any]]:
    """Every record of ``task`` in shard order. A line that is not a JSON object is a DataFormatError naming the
    file and the line."""
    if task not in TASKS:
        raise DataFormatError(split_dir, f"unknown STRIDE-QA task {task!r}; expected one of {', '.join(TASKS)}")
    records = []
    for path in sorted((Path(split_dir) / ANNOTATIONS_DIR / task).glob("annotations-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                record = loads(line, path, DataFormatError, line=n)  # depth-limited, no repeated key
                if not isinstance(record, dict):
                    raise DataFormatError(path, f"line {n}: a record must be a JSON object")
                records.append(record)
    return records


def iter_tar(path: str | Path) -> Iterator[tuple[str, bytes]]:
    """``(member name, bytes)`` of every file member of one tar, in archive order."""
    with tarfile.open(path, mode="r") as tar:
        for member in tar:
            if not member.isfile():
                continue
            fh = tar.extractfile(member)
            if fh is None:
                raise DataFormatError(path, f"member {member.name} cannot be read")
            yield member.name, fh.read()


def iter_images(split_dir: str | Path) -> Iterator[tuple[str, bytes]]:
    """``(file name, bytes)`` of every image member of the split's tars, in shard order."""
    for path in sorted((Path(split_dir) / IMAGES_DIR).glob("images-*.tar")):
        yield from iter_tar(path)
