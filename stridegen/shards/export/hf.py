"""Hugging Face ``datasets`` exporter (``hf``): the ``llava`` samples as Parquet shards with the images inside,
plus a dataset card, loadable with ``datasets.load_dataset("parquet", data_dir=OUT)`` or, uploaded, from the Hub.

The samples, the Set-of-Mark images and ``qa_info`` / ``meta`` are those of the ``llava`` exporter
(stridegen.shards.export.chat, reused by subclassing); the images are rendered per scene into ``images/`` as there
and read back into the shards when the export is finalized.

Layout (``OUT``)::

    data/<split>-00000-of-0000N.parquet   the rows, ``rows_per_shard`` per file, in scene and sample order
    README.md                             the dataset card (YAML front matter: features, configs, splits)
    images/, parts/, journal.jsonl, export.json    the export's own bookkeeping (not part of the dataset)

Every row has one schema (``COLUMNS``): ``id``, ``kind``, ``images`` (a list of ``datasets.Image``: one for a
spatial sample, four for a spatiotemporal one), ``conversations`` (alternating human / gpt turns, the LLaVA
syntax), ``qa_info`` (one struct per turn pair, ``gt_extra`` as a JSON string so that the schema is fixed),
``meta`` and ``scenario`` (the group's scenario relation, docs/scenarios.md; "" for spatial samples). The Parquet
schema carries the ``huggingface`` metadata that ``datasets`` reads to restore the features (``Image`` included);
it is written in the form ``datasets`` 2.x to 5.x all read: a list is a one-element JSON list (the form
``datasets.Features.to_dict`` gives a Python list), not the ``List`` / ``Sequence`` types, whose meaning changed
between versions. The same rows and options give the same bytes (pyarrow version fixed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stridegen import __version__
from stridegen.core.errors import ConfigError, StrideGenError, require
from stridegen.shards.export.chat import IMAGE_TOKEN, LlavaExporter, image_paths
from stridegen.shards.export.splits import SPLIT_RE
from stridegen.shards.writer import TMP_MARKER, atomic_write_bytes

DATA = "data"
CARD = "README.md"
# The STRIDE-QA paper (arXiv 2508.10427), whose tasks and question templates the dataset follows; the card's
# citation block (the entry as its authors publish it, from the arXiv listing).
STRIDE_QA_BIBTEX = """@misc{ishihara2025strideqa,
  title = {STRIDE-QA: Visual Question Answering Dataset for Spatiotemporal Reasoning in Urban Driving Scenes},
  author = {Keishi Ishihara and Kento Sasaki and Tsubasa Takahashi and Daiki Shiono and Yu Yamaguchi},
  year = {2025},
  eprint = {2508.10427},
  archivePrefix = {arXiv},
  primaryClass = {cs.CV},
  url = {https://arxiv.org/abs/2508.10427},
}"""
# Rows per Parquet row group: small groups keep random access and the Hub's viewer cheap for image rows
# (datasets 2.x wrote image datasets with PARQUET_ROW_GROUP_SIZE_FOR_IMAGE_DATASETS = 100, datasets/config.py).
ROW_GROUP_ROWS = 100
# The Hub's size_categories values (upper bound of the row count, label), smallest first.
SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
)


# ---------------------------------------------------------------------------------------------- the schema
@dataclass(frozen=True)
class Leaf:
    """A scalar column type; ``dtype`` is the datasets ``Value`` dtype name (also the pyarrow type name)."""

    dtype: str


@dataclass(frozen=True)
class ImageType:
    """``datasets.Image``: stored as struct<bytes: binary, path: string>."""


@dataclass(frozen=True)
class ListOf:
    item: ColumnType


@dataclass(frozen=True)
class Struct:
    fields: tuple[tuple[str, ColumnType], ...]


ColumnType = Leaf | ImageType | ListOf | Struct
STRING, INT32, FLOAT64 = Leaf("string"), Leaf("int32"), Leaf("float64")

# (name, type, meaning): the one description the Parquet schema, its huggingface metadata and the card derive from.
COLUMNS: tuple[tuple[str, ColumnType, str], ...] = (
    ("id", STRING, "`<scene>/k<kf>/<camera>` (spatial) or the group id `<scene>/k<kf>/<camera>/r<region>`"),
    ("kind", STRING, "`spatial` or `spatiotemporal`"),
    ("images", ListOf(ImageType()), "the Set-of-Mark JPEG images: 1 (spatial) or 4 context frames, oldest first"),
    (
        "conversations",
        ListOf(Struct((("from", STRING), ("value", STRING)))),
        "alternating `human` / `gpt` turns; the first human turn starts with one `<image>\\n` per image",
    ),
    (
        "qa_info",
        ListOf(
            Struct(
                (
                    ("question_id", STRING),
                    ("category", STRING),
                    ("predicate", STRING),
                    ("gt_value", FLOAT64),
                    ("unit", STRING),
                    ("gt_label", STRING),
                    ("gt_extra", STRING),
                    ("region_ids", ListOf(INT32)),
                    ("scenario", STRING),
                )
            )
        ),
        "the structured truth of each turn pair, in turn order",
    ),
    (
        "meta",
        Struct(
            (
                ("scene", STRING),
                ("camera", STRING),
                ("keyframe_index", INT32),
                ("sample_token", STRING),
                ("frame_tokens", ListOf(STRING)),
                ("regions", ListOf(Struct((("region_id", INT32), ("track_id", STRING), ("label", STRING))))),
                ("scenario", STRING),
            )
        ),
        "the link back to the source log",
    ),
    (
        "scenario",
        STRING,
        "the STRIDE-QA-Bench scenario relation of a spatiotemporal sample's group over its keyframe window "
        "(docs/scenarios.md); empty for spatial samples",
    ),
)

# The card's column table: every nested field and its meaning (docs/export.md has the same table).
FIELD_DOCS: tuple[tuple[str, str], ...] = (
    ("images[].bytes", "the JPEG file's bytes"),
    ("images[].path", "the image's path in the export folder (`images/<scene>/<camera>/k<kf>_f<frame>.jpg`)"),
    ("conversations[].from", "`human` (the question) or `gpt` (the answer)"),
    ("conversations[].value", "the text"),
    ("qa_info[].question_id", "stridegen's question id (unique in the dataset)"),
    ("qa_info[].category", "`object_spatial`, `ego_spatial` or `spatiotemporal`"),
    ("qa_info[].predicate", "the question template's predicate"),
    ("qa_info[].gt_value", "the numeric answer, null when the answer is not a number"),
    ("qa_info[].unit", "unit of `gt_value`"),
    ("qa_info[].gt_label", "the qualitative answer (`yes` / `no` / a direction word), empty when numeric"),
    ("qa_info[].gt_extra", 'further structured truth as a JSON object string (e.g. `{"direction": 35.0}`)'),
    ("qa_info[].region_ids", "the Set-of-Mark region ids the question names"),
    ("qa_info[].scenario", "the scenario relation of the question's group (as the `scenario` column)"),
    ("meta.scene", "source scene name"),
    ("meta.camera", "camera channel"),
    ("meta.keyframe_index", "keyframe index in the scene"),
    ("meta.sample_token", "the keyframe's sample token in the source log"),
    ("meta.frame_tokens", "the source sample token of each image, in `images` order"),
    ("meta.regions", "the marked regions: `region_id`, `track_id`, `label` (class)"),
    ("meta.scenario", "the scenario relation of the sample's group (as the `scenario` column)"),
)


def arrow_type(pa: Any, t: ColumnType) -> Any:
    """The pyarrow type of a column type (datasets stores an Image as struct<bytes: binary, path: string>)."""
    if isinstance(t, Leaf):
        return {"string": pa.string(), "int32": pa.int32(), "float64": pa.float64()}[t.dtype]
    if isinstance(t, ImageType):
        return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    if isinstance(t, ListOf):
        return pa.list_(arrow_type(pa, t.item))
    return pa.struct([(name, arrow_type(pa, sub)) for name, sub in t.fields])


def hf_feature(t: ColumnType) -> Any:
    """The ``datasets.Features.to_dict`` form of a column type; a list is a one-element JSON list, which every
    datasets version from 2.x on reads as a list (``Sequence`` / ``List`` changed meaning between versions)."""
    if isinstance(t, Leaf):
        return {"dtype": t.dtype, "_type": "Value"}
    if isinstance(t, ImageType):
        return {"_type": "Image"}
    if isinstance(t, ListOf):
        return [hf_feature(t.item)]
    return {name: hf_feature(sub) for name, sub in t.fields}


def yaml_feature(t: ColumnType) -> dict[str, Any]:
    """The dataset card's YAML form of a column type (the Hub's ``dataset_info.features`` syntax: ``dtype``,
    ``list``, ``struct``; ``list`` is read as a list by datasets 2.x and later)."""
    if isinstance(t, Leaf):
        return {"dtype": t.dtype}
    if isinstance(t, ImageType):
        return {"dtype": "image"}
    if isinstance(t, ListOf):
        item = yaml_feature(t.item)
        simple = item.get("dtype") if list(item) == ["dtype"] else None
        return {"list": simple if simple is not None else item.get("struct", item)}
    return {"struct": [{"name": name, **yaml_feature(sub)} for name, sub in t.fields]}


def arrow_schema(pa: Any) -> Any:
    """The shards' schema with the ``huggingface`` metadata (``{"info": {"features": ...}}``) datasets reads."""
    features = {name: hf_feature(t) for name, t, _ in COLUMNS}
    metadata = json.dumps({"info": {"features": features}}, sort_keys=False, separators=(",", ":"))
    schema = pa.schema([(name, arrow_type(pa, t)) for name, t, _ in COLUMNS])
    return schema.with_metadata({"huggingface": metadata})


# ---------------------------------------------------------------------------------------------- the exporter
def _pyarrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, or MissingExtraError naming the ``hf`` extra."""
    return require("pyarrow", "hf"), require("pyarrow.parquet", "hf")


class HFExporter(LlavaExporter):
    """Parquet shards ``data/<split>-NNNNN-of-MMMMM.parquet`` and a dataset card ``README.md`` (module docstring)."""

    name = "hf"
    file_name = CARD

    def __init__(
        self, jpeg_quality: int = 92, alpha: float = 0.4, split: str = "train", rows_per_shard: int = 500
    ) -> None:
        super().__init__(jpeg_quality, alpha)
        if not SPLIT_RE.match(split):
            raise ConfigError(f"hf exporter: split {split!r} is not a datasets split name (letters, digits, _, .)")
        if int(rows_per_shard) < 1:
            raise ConfigError(f"hf exporter: rows_per_shard must be at least 1, got {rows_per_shard}")
        self.split = split
        self.rows_per_shard = int(rows_per_shard)
        _pyarrow()  # a missing extra fails before any scene is exported

    def sample_record(self, sample: dict[str, Any]) -> dict[str, Any]:
        """The llava record with its image path(s) always as the list ``images``."""
        record = super().sample_record(sample)
        del record["image"]
        return {"id": record["id"], "kind": record["kind"], "images": image_paths(sample), **record}

    def options(self) -> dict[str, Any]:
        return {
            "jpeg_quality": self.jpeg_quality,
            "alpha": self.alpha,
            "split": self.split,
            "rows_per_shard": self.rows_per_shard,
        }

    def shard_names(self, n_rows: int) -> list[str]:
        """``data/<split>-NNNNN-of-MMMMM.parquet`` (the names datasets maps to a split); one shard when empty."""
        total = max(1, -(-n_rows // self.rows_per_shard))
        return [f"{DATA}/{self.split}-{i:05d}-of-{total:05d}.parquet" for i in range(total)]

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        flat = [r for scene in records for r in scene]
        names = self.shard_names(len(flat))
        stats = ShardStats()
        for n, name in enumerate(names):
            rows = flat[n * self.rows_per_shard : (n + 1) * self.rows_per_shard]
            write_shard(out_dir, name, rows, stats)
        _remove_stale_shards(out_dir, names)
        card = dataset_card(flat, self.split, names, stats, self.options(), source)
        atomic_write_bytes(out_dir / CARD, card.encode())
        return [*names, CARD]


# ---------------------------------------------------------------------------------------------- writing
@dataclass
class ShardStats:
    """What the card reports of the written shards: arrow bytes (the ``num_bytes`` datasets counts: the
    tables' buffer sizes) and file bytes (``download_size``)."""

    num_bytes: int = 0
    file_bytes: int = 0
    images: int = 0


def parquet_row(record: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """One part record as a row of ``COLUMNS``: image files read into {bytes, path}, gt_extra as JSON text."""
    images = []
    for rel in record["images"]:
        path = out_dir / rel
        if not path.is_file():
            raise StrideGenError(f"{path}: image of sample {record['id']!r} is missing; rerun with --overwrite")
        images.append({"bytes": path.read_bytes(), "path": rel})
    qa_info = [
        {**info, "gt_extra": json.dumps(info.get("gt_extra") or {}, sort_keys=True, ensure_ascii=False)}
        for info in record["qa_info"]
    ]
    return {
        "id": record["id"],
        "kind": record["kind"],
        "images": images,
        "conversations": record["conversations"],
        "qa_info": qa_info,
        "meta": record["meta"],
        "scenario": record["meta"].get("scenario", ""),
    }


def _chunks(rows: Sequence[dict[str, Any]], size: int) -> Iterator[Sequence[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def write_shard(out_dir: Path, name: str, records: Sequence[dict[str, Any]], stats: ShardStats) -> None:
    """Write one Parquet shard atomically, one row group of at most ``ROW_GROUP_ROWS`` rows at a time (only one
    group's image bytes are in memory)."""
    pa, pq = _pyarrow()
    schema = arrow_schema(pa)
    final = out_dir / name
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}{TMP_MARKER}{os.getpid()}"
    try:
        with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
            for chunk in _chunks(records, ROW_GROUP_ROWS):
                table = pa.Table.from_pylist([parquet_row(r, out_dir) for r in chunk], schema=schema)
                writer.write_table(table, row_group_size=len(chunk))
                stats.num_bytes += int(table.nbytes)
                stats.images += sum(len(r["images"]) for r in chunk)
            if not records:
                writer.write_table(schema.empty_table())
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    stats.file_bytes += final.stat().st_size


def _remove_stale_shards(out_dir: Path, names: list[str]) -> None:
    """Shards of an earlier export into this folder (another split or shard count) would be loaded with these."""
    keep = {out_dir / n for n in names}
    for path in sorted((out_dir / DATA).glob("*.parquet")):
        if path not in keep:
            path.unlink()


# ---------------------------------------------------------------------------------------------- the card
def size_category(n_rows: int) -> str:
    for bound, label in SIZE_CATEGORIES:
        if n_rows < bound:
            return label
    return "n>100M"


def card_front_matter(split: str, n_rows: int, stats: ShardStats) -> dict[str, Any]:
    """The card's YAML metadata: licence placeholder, tasks, the split's files and the features."""
    return {
        "license": "other",
        "task_categories": ["visual-question-answering", "image-text-to-text"],
        "language": ["en"],
        "tags": ["stridegen", "autonomous-driving", "spatial-reasoning", "spatiotemporal", "set-of-mark"],
        "size_categories": [size_category(n_rows)],
        "pretty_name": "stridegen spatiotemporal VQA",
        "configs": [{"config_name": "default", "data_files": [{"split": split, "path": f"{DATA}/{split}-*"}]}],
        "dataset_info": {
            "features": [{"name": name, **yaml_feature(t)} for name, t, _ in COLUMNS],
            "splits": [{"name": split, "num_bytes": stats.num_bytes, "num_examples": n_rows}],
            "download_size": stats.file_bytes,
            "dataset_size": stats.num_bytes,
        },
    }


def _type_text(t: ColumnType) -> str:
    if isinstance(t, Leaf):
        return t.dtype
    if isinstance(t, ImageType):
        return "Image"
    if isinstance(t, ListOf):
        return f"list of {_type_text(t.item)}"
    return "struct"


def dataset_card(
    rows: list[dict[str, Any]],
    split: str,
    shards: list[str],
    stats: ShardStats,
    options: dict[str, Any],
    source: dict[str, Any],
) -> str:
    """README.md: YAML front matter, then what a row is, every column, how it was made and how to load it."""
    import yaml

    front = yaml.safe_dump(card_front_matter(split, len(rows), stats), sort_keys=False, width=120)
    contents = " | ".join(
        [
            f"`{split}`",
            str(len(rows)),
            *(str(sum(1 for r in rows if r["kind"] == k)) for k in ("spatial", "spatiotemporal")),
            str(sum(len(r["qa_info"]) for r in rows)),
            str(stats.images),
            str(len({r["meta"]["scene"] for r in rows})),
            str(len(shards)),
        ]
    )
    columns = "\n".join(f"| `{name}` | {_type_text(t)} | {doc} |" for name, t, doc in COLUMNS)
    fields = "\n".join(f"| `{name}` | {doc} |" for name, doc in FIELD_DOCS)
    opts = ", ".join(f"`{k}={v}`" for k, v in options.items())
    return f"""---
{front}---

# stridegen spatiotemporal VQA

Spatial and spatiotemporal question answering about driving scenes, generated from driving logs by stridegen
{__version__} and exported with `stridegen export --format hf`. The images are camera images with the questions'
objects marked (Set-of-Mark: a translucent mask, a contour and the region id).

**License.** `license: other` above is a placeholder: set it to the licence of the driving logs this dataset was
built from (their terms cover the images) and of your own additions before you share it.

## Contents

| split | rows | spatial rows | spatiotemporal rows | questions | images in rows | scenes | shards |
| --- | --- | --- | --- | --- | --- | --- | --- |
| {contents} |

## What a row is

One row is one image context and all its questions, as consecutive turns of one conversation:

- **spatial**: one keyframe image of one camera, every object region of that image marked; its object-centric and
  ego-centric questions, in question order. `images` holds one image.
- **spatiotemporal**: one target object of one keyframe image tracked over t = 0..3 s; its questions about
  distance, direction and velocity at each horizon. `images` holds the four context frames at -1.5, -1, -0.5 and
  0 s, oldest first, each with the keyframe image's regions marked where they are visible.

The first human turn starts with one `{IMAGE_TOKEN}` line per image, in `images` order; each question is one human
turn followed by its answer as the gpt turn, and `qa_info[i]` is the truth of turn pair `i`. An image shown by
several rows (the context frames of the targets of one keyframe image) is stored in each of them.

## Columns

| column | type | meaning |
| --- | --- | --- |
{columns}

| field | meaning |
| --- | --- |
{fields}

## How it was made

- stridegen {__version__}, exporter `hf` ({opts})
- source dataset config hash: `{source.get("config_hash", "")}`
- source shards digest: `{source.get("shards_digest", "")}`

Rows are in scene order, then in question order; the same source and options give byte-identical files.

## Loading

```python
import json
from datasets import load_dataset

ds = load_dataset("parquet", data_dir="path/to/this/folder", split="{split}")
row = ds[0]
row["images"][0]                          # a PIL image
row["conversations"][1]["value"]          # the first answer
json.loads(row["qa_info"][0]["gt_extra"])  # further structured truth
```

Uploaded to the Hub (`data/` and this `README.md`), it loads with `load_dataset("<user>/<name>")`.

## Citation

The questions, their categories and the Set-of-Mark prompts follow STRIDE-QA; if you use this dataset, please
cite it:

```bibtex
{STRIDE_QA_BIBTEX}
```
"""
