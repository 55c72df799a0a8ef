"""The questions `stridegen predict` asks, scene by scene, from a built dataset folder or a ``strideqa-bench``
export, each with the frames it shows (oldest first) and the regions to mark on each.

- **dataset**: every QA row of every scene, in question order. A spatial question (object-centric or
  ego-centric) shows its keyframe image; a spatiotemporal one shows its context frames (``qa.frame_indices``). The
  marks are the keyframe image's regions (``all``) or the question's own (``question``: ``qa.region_ids``) in
  each frame where they have a mask (``stridegen.shards.samples.frame_region_masks``, as the exports draw them).
- **bench**: the records of ``annotation_files/strideqa_bench_t{t}.json`` in file order, grouped by their scene
  (``token_info.scene``); each shows its four ``images`` with the target's mask from ``rle`` (a frame whose mask
  is absent or empty is shown without a mark).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import ConfigError, DataFormatError
from stridegen.formats.rle import decode_rle
from stridegen.formats.textfile import load_json

BENCH_ANNOTATIONS = "annotation_files"
BENCH_IMAGES = "images"
BENCH_FILE_PATTERN = "strideqa_bench*_t[0-9].json"
# The official loop's time buckets of a record's four images, oldest first (STRIDE-QA-Bench inference.py).
BENCH_BUCKETS = ("prev_3", "prev_2", "prev_1", "current")


@dataclass(frozen=True)
class Frame:
    """One frame a question shows: ``load()`` gives the stored image bytes, the masks to mark ([N, H, W] bool at the
    stored size) and their region ids. ``key`` names what is drawn (equal keys draw equal images)."""

    key: tuple[Any, ...]
    load: Callable[[], tuple[bytes, np.ndarray, list[int]]]


@dataclass
class Question:
    question_id: str
    kind: str  # "spatial" | "spatiotemporal"
    text: str
    frames: list[Frame]
    times_s: tuple[float, ...] | None = None  # when each frame was taken, relative to the keyframe
    record: dict[str, Any] | None = None  # a bench record, written back with its answer
    horizon: int | None = None  # a bench record's t
    info: dict[str, Any] = field(default_factory=dict)


def annotation_folder(path: Path) -> Path | None:
    """The folder of a bench's annotation files: ``path/annotation_files`` (an export) or ``path`` itself when it
    holds them (the official release's annotation folder); None when neither."""
    if (path / BENCH_ANNOTATIONS).is_dir():
        return path / BENCH_ANNOTATIONS
    if any(path.glob(BENCH_FILE_PATTERN)):
        return path
    return None


def image_folder(path: Path) -> Path:
    """The bench's image folder: ``images/`` beside its annotation folder."""
    folder = annotation_folder(path)
    return (path if folder is None or folder == path / BENCH_ANNOTATIONS else path.parent) / BENCH_IMAGES


def source_kind(path: Path) -> str:
    """``dataset`` (a built dataset folder) or ``bench`` (a strideqa-bench export); ConfigError otherwise."""
    if (path / "manifest.json").is_file():
        return "dataset"
    if annotation_folder(path) is not None:
        return "bench"
    raise ConfigError(
        f"{path}: neither a built dataset folder (manifest.json) nor a strideqa-bench export ({BENCH_ANNOTATIONS}/"
        f" or {BENCH_FILE_PATTERN} files)"
    )


# ----------------------------------------------------------------------------------------------------- dataset
def _dataset_scene_questions(scene: Any, marks: dict[str, str]) -> list[Question]:
    from stridegen.shards.samples import SceneIndex, frame_region_masks

    qa = scene.qa
    if qa is None:
        return []
    index = SceneIndex(scene)
    timestamps = np.asarray(scene.frames.timestamp_us, dtype=np.int64)
    keyframe_frames = np.asarray(scene.keyframes.frame_index, dtype=np.int64)
    questions = []
    for q in range(len(qa)):
        k, c = int(qa.keyframe_index[q]), int(qa.channel_index[q])
        kind = "spatiotemporal" if str(qa.category[q]) == "spatiotemporal" else "spatial"
        keyframe = int(keyframe_frames[k])
        shown = [int(f) for f in np.asarray(qa.frame_indices[q]).reshape(-1) if f >= 0]
        if kind == "spatial" or not shown:
            shown = [keyframe]
        wanted = None if marks[kind] == "all" else frozenset(int(r) for r in qa.region_ids[q] if r >= 0)
        frames = []
        for frame in shown:
            regions = tuple(
                (r, m)
                for r, m in frame_region_masks(index, k, c, frame)
                if m is not None and (wanted is None or r in wanted)
            )
            frames.append(Frame(("dataset", scene.name, c, frame, regions), _dataset_loader(scene, c, frame, regions)))
        times = tuple(round((int(timestamps[f]) - int(timestamps[keyframe])) / 1e6, 1) for f in shown)
        questions.append(
            Question(
                str(qa.question_id[q]),
                kind,
                str(qa.question[q]),
                frames,
                times_s=times,
                info={"category": str(qa.category[q]), "scene": scene.name},
            )
        )
    return questions


def _dataset_loader(
    scene: Any, c: int, frame: int, regions: tuple[tuple[int, int], ...]
) -> Callable[[], tuple[bytes, np.ndarray, list[int]]]:
    def load() -> tuple[bytes, np.ndarray, list[int]]:
        channel = str(scene.cameras.channel[c])
        h, w = int(scene.cameras.height[c]), int(scene.cameras.width[c])
        masks = np.stack([scene.mask(m) for _, m in regions]) if regions else np.zeros((0, h, w), dtype=bool)
        return scene.image_bytes(channel, frame), masks, [r for r, _ in regions]

    return load


# ------------------------------------------------------------------------------------------------------- bench
def bench_files(root: Path) -> list[tuple[int, Path]]:
    """(t, path) of the bench's annotation files, by horizon."""
    folder = annotation_folder(root)
    files = [] if folder is None else sorted(folder.glob(BENCH_FILE_PATTERN))
    if not files:
        raise ConfigError(f"{root}: no {BENCH_FILE_PATTERN} annotation files")
    return sorted((int(p.stem[-1]), p) for p in files)


def bench_records(root: Path) -> list[tuple[int, dict[str, Any]]]:
    """(t, record) of every question of the bench, by horizon then file order."""
    out = []
    for t, path in bench_files(root):
        records = load_json(path, "annotation file")
        if not isinstance(records, list):
            raise DataFormatError(path, f"expected a list of question records, got {type(records).__name__}")
        for i, record in enumerate(records):
            for key in ("question_id", "question", "images", "region_id"):
                if not isinstance(record, dict) or key not in record:
                    raise DataFormatError(path, f"record {i}: no {key!r}")
            out.append((t, record))
    return out


def bench_scene(record: dict[str, Any]) -> str:
    info = record.get("token_info")
    return str(info.get("scene", "bench")) if isinstance(info, dict) else "bench"


def _bench_question(root: Path, t: int, record: dict[str, Any]) -> Question:
    region = int(record["region_id"])
    rle_field = record.get("rle")
    rles: dict[str, Any] = rle_field if isinstance(rle_field, dict) else {}
    frames = []
    for i, image in enumerate(record["images"]):
        rle = rles.get(BENCH_BUCKETS[i]) if i < len(BENCH_BUCKETS) else None
        path = image_folder(root) / str(image)
        frames.append(
            Frame(("bench", str(image), region, json.dumps(rle, sort_keys=True)), _bench_loader(path, rle, region))
        )
    return Question(
        str(record["question_id"]),
        "spatiotemporal",
        str(record["question"]),
        frames,
        record=record,
        horizon=t,
        info={"category": str(record.get("qa_category", "")), "scene": bench_scene(record)},
    )


def _bench_loader(path: Path, rle: Any, region: int) -> Callable[[], tuple[bytes, np.ndarray, list[int]]]:
    def load() -> tuple[bytes, np.ndarray, list[int]]:
        data = path.read_bytes()
        if not isinstance(rle, dict) or "size" not in rle or "counts" not in rle:
            return data, np.zeros((0, 1, 1), dtype=bool), []
        h, w = (int(v) for v in rle["size"])
        mask = decode_rle(str(rle["counts"]), h, w)
        if not mask.any():
            return data, np.zeros((0, h, w), dtype=bool), []
        return data, mask[None], [region]

    return load


# ------------------------------------------------------------------------------------------------------ source
class QuestionSource:
    """The scenes of a dataset folder or a bench export and the questions of each (module docstring)."""

    def __init__(self, path: str | Path, marks: dict[str, str]) -> None:
        self.path = Path(path)
        self.kind = source_kind(self.path)
        self.marks = dict(marks)
        self._bench: list[tuple[int, dict[str, Any]]] | None = None

    def _bench_records(self) -> list[tuple[int, dict[str, Any]]]:
        if self._bench is None:
            self._bench = bench_records(self.path)
        return self._bench

    def scenes(self) -> list[str]:
        if self.kind == "bench":
            return list(dict.fromkeys(bench_scene(r) for _, r in self._bench_records()))
        from stridegen.shards.reader import open_dataset

        with open_dataset(self.path) as dataset:
            return list(dataset.scenes)

    def question_counts(self, limit: int | None = None) -> dict[str, int]:
        """Questions per scene (for progress totals), at most ``limit`` each."""
        return {scene: min(n, limit or n) for scene, n in self._question_counts().items()}

    def _question_counts(self) -> dict[str, int]:
        if self.kind == "bench":
            counts: dict[str, int] = {}
            for _, r in self._bench_records():
                counts[bench_scene(r)] = counts.get(bench_scene(r), 0) + 1
            return counts
        from stridegen.shards.reader import open_dataset

        with open_dataset(self.path) as dataset:
            out = {}
            for name in dataset.scenes:
                qa = dataset.scene(name).qa
                out[name] = 0 if qa is None else len(qa)
            return out

    @contextmanager
    def scene_questions(self, scene: str) -> Iterator[list[Question]]:
        """The questions of ``scene``; their frames load while the context is open."""
        if self.kind == "bench":
            yield [_bench_question(self.path, t, r) for t, r in self._bench_records() if bench_scene(r) == scene]
            return
        from stridegen.shards.reader import open_dataset

        with open_dataset(self.path) as dataset:
            dataset.verify([scene])  # never ask about a shard that no longer matches its manifest
            yield _dataset_scene_questions(dataset.scene(scene), self.marks)
