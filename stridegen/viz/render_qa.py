"""Draw what one question shows: its images with the Set-of-Mark overlay of its regions, plus its answer as text.

``render_qa(dataset_dir, question_id, out_dir)`` finds the QA row with that id in any scene of a built dataset and
writes:

- spatial questions (object-centric and ego-centric): the keyframe image of the question's camera, with the
  masks of the regions the question names, each labelled with its region id (masks looked up in the ``regions``
  table by (keyframe, camera, region id));
- spatiotemporal questions: the image of the question's camera at each of its ``frame_indices`` (time order), with
  the target's mask in that image (looked up in the ``masks`` table by (image, track)), labelled with the question's
  region id. A frame where the target has no mask is drawn without one and noted in the text file;
- ``<id>.txt``: question, answer, gt_value, unit, and the structured truth and provenance of the row.

``stridegen render DATASET --qa ID --out DIR`` is the command line form (stridegen.cli.render).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stridegen.core.errors import StrideGenError

if TYPE_CHECKING:
    from stridegen.shards.scene_view import SceneView


class QuestionNotFoundError(StrideGenError, KeyError):
    """No scene of the dataset holds a QA row with the asked question id."""

    def __init__(self, dataset: str | Path, question_id: str, examples: list[str]) -> None:
        hint = f"; ids look like {examples}" if examples else "; the dataset holds no QA"
        super().__init__(f"{dataset}: no question with id {question_id!r}{hint}")
        self.dataset = str(dataset)
        self.question_id = question_id

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass
class QALocation:
    """Where a QA row lives: the scene view and the row of its ``qa`` table."""

    scene: SceneView
    row: int


@dataclass
class RenderedImage:
    """One overlay image: which frame it shows and which regions it could mark."""

    frame_index: int
    path: Path
    marked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _scene_order(dataset, question_id: str) -> list[str]:
    """Scenes whose name occurs in the id first (ids usually carry their scene), then the rest in order."""
    names = dataset.scenes
    return [n for n in names if n in question_id] + [n for n in names if n not in question_id]


def find_question(dataset, question_id: str) -> QALocation:
    """The scene and row of ``question_id`` in an open Dataset; QuestionNotFoundError if no scene has it."""
    examples: list[str] = []
    for name in _scene_order(dataset, question_id):
        view = dataset.scene(name)
        qa = view.qa
        if qa is None or len(qa) == 0:
            continue
        hits = np.flatnonzero(np.asarray(qa.question_id, dtype=object) == question_id)
        if hits.size:
            return QALocation(view, int(hits[0]))
        if len(examples) < 3:
            examples.append(str(qa.question_id[0]))
    raise QuestionNotFoundError(dataset.root, question_id, examples)


def safe_file_stem(question_id: str) -> str:
    """A file-name stem from an id: characters other than letters, digits, ``.``, ``_``, ``-`` become ``_``."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", question_id).strip(".")
    return stem or "question"


def _image_row(view, channel_index: int, frame_index: int) -> int | None:
    frames = np.asarray(view.array("images/frame_index"))
    channels = np.asarray(view.array("images/channel_index"))
    rows = np.flatnonzero((frames == frame_index) & (channels == channel_index))
    return int(rows[0]) if rows.size else None


def _mask_of_region(view, keyframe_index: int, channel_index: int, region_id: int) -> int | None:
    regions = view.regions
    if regions is None:
        return None
    rows = np.flatnonzero(
        (np.asarray(regions.keyframe_index) == keyframe_index)
        & (np.asarray(regions.channel_index) == channel_index)
        & (np.asarray(regions.region_id) == region_id)
    )
    return int(regions.mask_index[rows[0]]) if rows.size else None


def _mask_of_track(view, image_row: int | None, track_index: int) -> int | None:
    masks = view.masks
    if masks is None or image_row is None:
        return None
    rows = np.flatnonzero((np.asarray(masks.image_index) == image_row) & (np.asarray(masks.track_index) == track_index))
    return int(rows[0]) if rows.size else None


def question_frames(view, row: int) -> tuple[int, list[int]]:
    """(keyframe's frame index, frames the question shows): its ``frame_indices`` in time order, else the
    keyframe alone (spatial questions)."""
    qa = view.qa
    keyframe_frame = int(view.keyframes.frame_index[int(qa.keyframe_index[row])])
    frames = [int(f) for f in np.asarray(qa.frame_indices[row]).reshape(-1) if int(f) >= 0]
    return keyframe_frame, frames or [keyframe_frame]


@dataclass(frozen=True)
class FrameMarks:
    """What one overlay image of a question draws: the camera (``channel``, its index ``channel_index``) and frame,
    the (region id, mask row) pairs marked in question order, and the labels of the regions marked and of those with
    no mask in that image. Equal ``key``s draw equal images."""

    channel: str
    channel_index: int
    frame_index: int
    regions: tuple[tuple[int, int], ...]
    marked: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def key(self) -> tuple[object, ...]:
        return (self.channel_index, self.frame_index, self.regions)


def question_frame_marks(view, row: int, frame: int, keyframe_frame: int) -> FrameMarks:
    """The marks of QA row ``row``'s image at ``frame``: the regions the question names, each by its region's mask at
    the keyframe (spatial questions), else by its track's mask in that image; a spatiotemporal question marks its
    target only."""
    qa = view.qa
    kf, ch = int(qa.keyframe_index[row]), int(qa.channel_index[row])
    spatiotemporal = str(qa.category[row]) == "spatiotemporal"
    pairs = [
        (int(r), int(t))
        for r, t in zip(
            np.asarray(qa.region_ids[row]).reshape(-1), np.asarray(qa.track_index[row]).reshape(-1), strict=True
        )
        if r >= 0
    ]
    if spatiotemporal:
        pairs = pairs[:1]  # the target only
    image_row = _image_row(view, ch, frame)
    regions, marked, missing = [], [], []
    for region_id, track in pairs:
        mask_index = None
        if not spatiotemporal and frame == keyframe_frame:
            mask_index = _mask_of_region(view, kf, ch, region_id)
        if mask_index is None:
            mask_index = _mask_of_track(view, image_row, track)
        label = f"Region [{region_id}] (track {track})"
        if mask_index is None:
            missing.append(label)
            continue
        regions.append((region_id, mask_index))
        marked.append(f"{label}: mask {mask_index}")
    return FrameMarks(str(view.cameras.channel[ch]), ch, frame, tuple(regions), tuple(marked), tuple(missing))


def draw_frame_marks(view, marks: FrameMarks, alpha: float) -> np.ndarray:
    """The RGB image [H, W, 3] uint8 of ``marks``' camera and frame with its regions drawn (Set-of-Mark); KeyError
    when the dataset stores no such image."""
    from stridegen.pipeline.som import draw_set_of_marks

    image = view.image(marks.channel, marks.frame_index)
    masks = [view.mask(m) for _, m in marks.regions]
    stack = np.stack(masks) if masks else np.zeros((0, *image.shape[:2]), dtype=bool)
    return draw_set_of_marks(image, stack, [r for r, _ in marks.regions], alpha=alpha)


def _render_frame(view, row: int, frame: int, keyframe_frame: int, path: Path, alpha: float) -> RenderedImage:
    from stridegen.formats.images import write_rgb

    marks = question_frame_marks(view, row, frame, keyframe_frame)
    write_rgb(path, draw_frame_marks(view, marks, alpha))
    return RenderedImage(frame, path, list(marks.marked), list(marks.missing))


def _fmt_value(value: float) -> str:
    return "nan" if math.isnan(float(value)) else repr(float(value))


def _describe(view, row: int, question_id: str, images: list[RenderedImage]) -> str:
    qa = view.qa
    ch = int(qa.channel_index[row])
    lines = [
        f"question_id: {question_id}",
        f"scene: {view.name}",
        f"category: {qa.category[row]}",
        f"predicate: {qa.predicate[row]}",
        f"camera: {view.cameras.channel[ch]}",
        f"keyframe_index: {int(qa.keyframe_index[row])}",
        f"regions: {[int(r) for r in np.asarray(qa.region_ids[row]).reshape(-1) if r >= 0]}",
        f"tracks: {[int(t) for t in np.asarray(qa.track_index[row]).reshape(-1) if t >= 0]}",
        "",
        f"question: {qa.question[row]}",
        f"answer: {qa.answer[row]}",
        f"gt_value: {_fmt_value(qa.gt_value[row])}",
        f"unit: {qa.unit[row]}",
        f"gt_label: {qa.gt_label[row]}",
        f"gt_extra: {qa.gt_extra[row]}",
        f"group_id: {qa.group_id[row]}",
        f"horizon_s: {int(qa.horizon_s[row])}",
        f"out_of_view: {int(qa.out_of_view[row])}",
        f"object_class: {qa.object_class[row]}",
        f"visual_evidence: {bool(qa.visual_evidence[row])}",
        "",
        "images:",
    ]
    for img in images:
        lines.append(f"  {img.path.name}: frame {img.frame_index}; marked {img.marked or 'nothing'}")
        lines.extend(f"    no mask in this image for {m}" for m in img.missing)
    return "\n".join(lines) + "\n"


def render_qa(dataset_dir: str | Path, question_id: str, out_dir: str | Path, alpha: float = 0.4) -> list[Path]:
    """Write the overlay images of one question (time order) and its text file into ``out_dir``.

    Returns the written paths, images first, the text file last. Raises QuestionNotFoundError for an unknown id
    and ShardError for an unreadable dataset or a question whose image the dataset does not store.
    """
    from stridegen.shards.reader import open_dataset
    from stridegen.shards.schema import ShardError

    out = Path(out_dir)
    stem = safe_file_stem(question_id)
    with open_dataset(dataset_dir) as dataset:
        loc = find_question(dataset, question_id)
        view, row = loc.scene, loc.row
        keyframe_frame, frames = question_frames(view, row)
        out.mkdir(parents=True, exist_ok=True)
        images = []
        for k, frame in enumerate(frames):
            name = f"{stem}.png" if len(frames) == 1 else f"{stem}_{k}_f{frame:04d}.png"
            try:
                images.append(_render_frame(view, row, frame, keyframe_frame, out / name, alpha))
            except KeyError as exc:  # the dataset stores no image of that (camera, frame)
                raise ShardError(view.shard_file, f"question {question_id!r}: {exc.args[0]}") from None
        text_path = out / f"{stem}.txt"
        text_path.write_text(_describe(view, row, question_id, images), encoding="utf-8")
    return [*(img.path for img in images), text_path]
