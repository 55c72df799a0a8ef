"""Judge items from a stridegen dataset's QA and a predictions file.

Each prediction ``{question_id, pred}`` becomes a JudgeItem: the dataset's question, its templated answer as the
reference, the model's text as the answer, the QA category as the judge category, and ``meta`` with the
structured truth (``gt_value``, ``unit``, ``gt_label``, ``object_class``) so free-form and tolerance scoring can
be compared. With ``image_dir`` each item points at the last image the question shows (the keyframe's for spatial
questions), drawn with the Set-of-Mark regions the question names (``stridegen.viz.render_qa``).

An image is drawn once per distinct (scene, camera, frame, regions marked) and shared by every question that shows
it: ``QuestionImages`` encodes it as JPEG (quality ``JUDGE_JPEG_QUALITY``, the exports' default) and names the file
by the SHA-256 of its bytes, ``<image_dir>/<hash16>.jpg``, written once (an existing file of that name holds the same
bytes). The judge request inlines those bytes, so its cache key follows the image's content.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stridegen.core.errors import PredictionFormatError
from stridegen.eval.judges.records import JudgeItem

if TYPE_CHECKING:
    from stridegen.shards.scene_view import SceneView

JUDGE_JPEG_QUALITY = 92  # as the llava / messages / hf exports write their Set-of-Mark images
SOM_ALPHA = 0.4  # mask opacity, as ``stridegen render`` and the exports draw
_HASH_CHARS = 16  # hex characters of the SHA-256 that name an image file


class QuestionImages:
    """Set-of-Mark images of questions, drawn once per distinct (scene, camera, frame, regions) into ``directory``.

    ``drawn`` counts the images drawn, ``paths`` maps each drawn key to its content-named file.
    """

    def __init__(self, directory: str | Path, alpha: float = SOM_ALPHA, quality: int = JUDGE_JPEG_QUALITY) -> None:
        self.directory = Path(directory)
        self.alpha = alpha
        self.quality = quality
        self.paths: dict[tuple[object, ...], Path] = {}
        self.drawn = 0

    def shared(self, key: tuple[object, ...], draw: Callable[[], np.ndarray]) -> Path:
        """The file of the image that ``key`` names; ``draw`` (an RGB [H, W, 3] uint8 image) is called the first
        time a key is asked for only."""
        path = self.paths.get(key)
        if path is None:
            path = self._write(draw())
            self.paths[key] = path
            self.drawn += 1
        return path

    def _write(self, rgb: np.ndarray) -> Path:
        from stridegen.formats.images import encode_jpeg

        data = encode_jpeg(rgb, self.quality).tobytes()
        path = self.directory / f"{hashlib.sha256(data).hexdigest()[:_HASH_CHARS]}.jpg"
        if not path.is_file():  # content-named: an existing file holds these bytes
            # renamed into place, never half-written; not fsynced: a lost file is drawn again by the next run
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return path.resolve()

    def question_image(self, scene: SceneView, row: int, question_id: str) -> Path:
        """The last image QA row ``row`` of ``scene`` shows (the keyframe's for a spatial question) with its regions
        marked; ShardError when the dataset stores no such image."""
        from stridegen.shards.schema import ShardError
        from stridegen.viz.render_qa import draw_frame_marks, question_frame_marks, question_frames

        keyframe_frame, frames = question_frames(scene, row)
        marks = question_frame_marks(scene, row, frames[-1], keyframe_frame)
        try:
            return self.shared((scene.name, *marks.key), lambda: draw_frame_marks(scene, marks, self.alpha))
        except KeyError as exc:  # the dataset stores no image of that (camera, frame)
            raise ShardError(scene.shard_file, f"question {question_id!r}: {exc.args[0]}") from None


def items_from_dataset(
    dataset_dir: str | Path,
    predictions: dict[str, Any],
    image_dir: str | Path | None = None,
    source: str = "<predictions>",
) -> list[JudgeItem]:
    """JudgeItems for every prediction, in the dataset's QA order; an unknown question id is an error. With
    ``image_dir`` each item's ``image`` is the absolute path of its shared Set-of-Mark image there."""
    from stridegen.shards.adapters import items_from_table
    from stridegen.shards.reader import open_dataset

    images = QuestionImages(image_dir) if image_dir is not None else None
    items: list[JudgeItem] = []
    located: list[tuple[JudgeItem, SceneView, int]] = []
    with open_dataset(dataset_dir) as ds:
        for scene in ds:
            if scene.qa is None:
                continue
            for row, (qid, qa) in enumerate(items_from_table(scene.qa)):
                if qid not in predictions:
                    continue
                pred = predictions[qid]
                item = JudgeItem(
                    id=qid,
                    question=qa.question,
                    reference=qa.answer,
                    answer=pred if isinstance(pred, str) else str(pred),
                    category=qa.category,
                    subcategory=qa.predicate,
                    meta={
                        "scene": scene.name,
                        "gt_value": None if qa.gt_value != qa.gt_value else qa.gt_value,
                        "unit": qa.unit,
                        "gt_label": qa.gt_label,
                        "object_class": qa.object_class,
                    },
                )
                items.append(item)
                located.append((item, scene, row))
        unknown = sorted(set(predictions) - {item.id for item in items})
        if unknown:
            raise PredictionFormatError(
                source, f"{len(unknown)} predictions name question ids the dataset does not have (e.g. {unknown[0]!r})"
            )
        if images is not None:
            for item, scene, row in located:
                item.image = str(images.question_image(scene, row, item.id))
    return items
