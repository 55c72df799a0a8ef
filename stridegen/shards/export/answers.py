"""The ``answers`` exporter: ``answers.jsonl``, one ``{"question_id", "category", "question", "pred"}`` line per QA
row of the dataset, with the dataset's own answer as ``pred``, and the same lines split by category in
``answers_<category>.jsonl`` (``answers_spatiotemporal.jsonl`` is what ``eval lsr`` scores).

It is the template of a model's predictions file: ``stridegen eval lsr --dataset DIR --pred`` and ``stridegen judge
run --dataset DIR --pred`` read exactly this shape (replace ``pred`` with the model's answer), and scoring the file
as it is checks the scoring end to end (every LSR rate is 1.0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stridegen.shards.scene_view import SceneView
from stridegen.shards.writer import atomic_write_bytes

FILE_NAME = "answers.jsonl"


class AnswersExporter:
    """The dataset's own answers as a predictions file (module docstring)."""

    name = "answers"

    def export_scene(self, scene: SceneView, out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
        qa = scene.qa
        if qa is None:
            return [], {"questions": 0}
        records = [
            {"question_id": str(q), "category": str(c), "question": str(text), "pred": str(answer)}
            for q, c, text, answer in zip(qa.question_id, qa.category, qa.question, qa.answer, strict=True)
        ]
        return records, {"questions": len(records)}

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        by_file: dict[str, list[str]] = {FILE_NAME: []}
        for scene in records:
            for r in scene:
                line = json.dumps(r, sort_keys=True, ensure_ascii=True) + "\n"
                by_file[FILE_NAME].append(line)
                by_file.setdefault(f"answers_{r['category']}.jsonl", []).append(line)
        for name, lines in by_file.items():
            atomic_write_bytes(out_dir / name, "".join(lines).encode())
        return sorted(by_file)
