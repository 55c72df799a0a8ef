"""The ``lmms-eval`` exporter: a task folder that lmms-eval (0.7) loads, so any of its models answers the dataset's
spatiotemporal questions and stridegen's LSR evaluator scores the answers.

Layout and names: stridegen.formats.lmms_task. One document per spatiotemporal question (the JSON-lines data file,
read by lmms-eval through ``datasets``' ``json`` builder): ``question_id``, ``question``, ``answer``, ``predicate``,
``horizon_s``, ``group_id``, ``group_size`` (the group's number of questions), ``images`` (the group's four
context frames with the keyframe image's regions marked, the renders of the ``llava`` exporter, oldest first) and
``lsr`` (the question's LSR records as a JSON string: ``stridegen.pipeline.qa.spatiotemporal_records.lsr_records``, with
the group's rule-based scenario relation). The task YAML names the functions of the generated ``utils.py``, which
binds stridegen.eval.lsr.lmms_task to the folder.

``datasets`` resolves a relative data-file path against the working directory, not the YAML, so the YAML names the
data file by an absolute path: the export folder's, or ``location`` (the folder's path where lmms-eval will run).
The images and the functions are found relative to ``utils.py`` and move with the folder.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stridegen import __version__
from stridegen.core.errors import ConfigError
from stridegen.formats.lmms_task import (
    DATA_DIR,
    DEFAULT_PROFILE,
    DEFAULT_TASK,
    DOC_FUNCTIONS,
    IMAGES_DIR,
    METRICS,
    POST_PROMPT,
    PRE_PROMPT,
    SPLIT,
)
from stridegen.pipeline.qa.spatiotemporal_records import lsr_records
from stridegen.shards.adapters import items_from_table
from stridegen.shards.export.chat import ChatExporter
from stridegen.shards.samples import SceneIndex, scene_samples
from stridegen.shards.scenarios import scene_relations
from stridegen.shards.scene_view import SceneView
from stridegen.shards.writer import atomic_write_bytes

_TASK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NEW_TOKENS = 128  # one sentence with a number and a unit


def _quoted(text: str) -> str:
    """A YAML scalar holding ``text`` exactly (a JSON string is a YAML double-quoted scalar)."""
    return json.dumps(text, ensure_ascii=True)


class LmmsEvalExporter(ChatExporter):
    """lmms-eval task folder (module docstring). Options: ``task`` (the task name and file stem, a Python
    identifier), ``location`` (the absolute folder path the YAML names for its data; default the export folder),
    ``profile`` (the LSR tolerance profile the scoring uses), ``max_new_tokens``, and the ``llava`` image options
    ``jpeg_quality`` and ``alpha``."""

    name = "lmms-eval"

    def __init__(
        self,
        task: str = DEFAULT_TASK,
        location: str | None = None,
        profile: str = DEFAULT_PROFILE,
        max_new_tokens: int = MAX_NEW_TOKENS,
        jpeg_quality: int = 92,
        alpha: float = 0.4,
    ) -> None:
        super().__init__(jpeg_quality, alpha)
        if not isinstance(task, str) or not _TASK_NAME.fullmatch(task):
            raise ConfigError(f"lmms-eval task: expected a name of letters, digits and _ (not first), got {task!r}")
        if location is not None and (not isinstance(location, str) or not Path(location).is_absolute()):
            raise ConfigError(f"lmms-eval location: expected an absolute folder path, got {location!r}")
        if not isinstance(profile, str) or not profile:
            raise ConfigError(f"lmms-eval profile: expected a tolerance profile name or path, got {profile!r}")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ConfigError(f"lmms-eval max_new_tokens: expected a whole number >= 1, got {max_new_tokens!r}")
        self.task = task
        self.location = location
        self.profile = profile
        self.max_new_tokens = max_new_tokens

    # ------------------------------------------------------------------------------------------ one scene
    def export_scene(self, scene: SceneView, out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
        qa = scene.qa
        if qa is None or len(qa) == 0:
            return [], {"questions": 0, "images": 0}
        index = SceneIndex(scene)
        relation = scene_relations(scene)
        rows = items_from_table(qa)
        question_ids = {id(item): qid for qid, item in rows}
        truth: dict[str, list[dict[str, Any]]] = {}  # question id -> its LSR records
        for record in lsr_records([item for _, item in rows], relation, lambda item: question_ids[id(item)]):
            truth.setdefault(record.question_id, []).append(asdict(record))
        rendered: dict[tuple[int, int, int], str] = {}
        docs = []
        for sample in scene_samples(index):
            if sample["kind"] != "spatiotemporal":
                continue
            k, c = sample["keyframe_index"], sample["channel_index"]
            images = [f"{IMAGES_DIR}/{self._image(index, out_dir, k, c, f, rendered)}" for f in sample["frames"]]
            for turn in sample["turns"]:
                info = turn["qa_info"]
                qid = info["question_id"]
                docs.append(
                    {
                        "question_id": qid,
                        "question": turn["question"],
                        "answer": turn["answer"],
                        "predicate": info["predicate"],
                        "horizon_s": truth[qid][0]["horizon_s"],
                        "group_id": sample["id"],
                        "group_size": len(sample["turns"]),
                        "images": images,
                        "lsr": json.dumps(truth[qid], sort_keys=True),
                    }
                )
        return docs, {"questions": len(docs), "images": len(rendered)}

    # ------------------------------------------------------------------------------------------ the task folder
    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        data = f"{DATA_DIR}/{self.task}.jsonl"
        lines = [json.dumps(doc, ensure_ascii=True) for scene in records for doc in scene]
        (out_dir / DATA_DIR).mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out_dir / data, ("\n".join(lines) + "\n" if lines else "").encode())
        folder = Path(self.location) if self.location is not None else out_dir.resolve()
        yaml_name, utils_name = f"{self.task}.yaml", "utils.py"
        atomic_write_bytes(out_dir / yaml_name, self.task_yaml((folder / data).as_posix(), source).encode())
        atomic_write_bytes(out_dir / utils_name, self.utils_module().encode())
        return [data, yaml_name, utils_name]

    def task_yaml(self, data_file: str, source: dict[str, Any]) -> str:
        """The task config: the data file, the split, the functions of utils.py, generation settings, metrics."""
        lines = [
            "# An lmms-eval task written by `stridegen export --format lmms-eval` (stridegen docs/export.md): the",
            "# spatiotemporal questions of a stridegen dataset, scored with stridegen's LSR evaluator.",
            "# Run: lmms-eval --include_path <this folder> --tasks " + self.task + " --model ...",
            f"task: {self.task}",
            "dataset_path: json",
            "dataset_kwargs:",
            "  data_files:",
            f"    {SPLIT}: {_quoted(data_file)}",
            f"test_split: {SPLIT}",
            "output_type: generate_until",
            *(f"{name}: !function utils.{name}" for name in DOC_FUNCTIONS),
            "generation_kwargs:",
            f"  max_new_tokens: {self.max_new_tokens}",
            "  temperature: 0",
            "  do_sample: false",
            "metric_list:",
        ]
        for metric in METRICS:
            lines += [
                f"  - metric: {metric}",
                f"    aggregation: !function utils.aggregate_{metric}",
                "    higher_is_better: true",
            ]
        lines += [
            "lmms_eval_specific_kwargs:",
            "  default:",
            f"    pre_prompt: {_quoted(PRE_PROMPT)}",
            f"    post_prompt: {_quoted(POST_PROMPT)}",
            "metadata:",
            "  version: 1",
            f"  stridegen: {_quoted(__version__)}",
            f"  lsr_profile: {_quoted(self.profile)}",
            f"  source_config_hash: {_quoted(str(source.get('config_hash', '')))}",
            f"  source_shards_digest: {_quoted(str(source.get('shards_digest', '')))}",
        ]
        return "\n".join(lines) + "\n"

    def utils_module(self) -> str:
        """utils.py: stridegen's task functions (stridegen.eval.lsr.lmms_task) bound to the folder it lies in."""
        lines = [
            '"""The functions of the lmms-eval task beside this file (written by stridegen export --format lmms-eval).',
            "",
            "They are stridegen.eval.lsr.lmms_task's, bound to this folder (the images) and to the LSR tolerance",
            'profile below; stridegen must be installed where lmms-eval runs."""',
            "",
            "from pathlib import Path",
            "",
            "from stridegen.eval.lsr.lmms_task import LmmsEvalTask",
            "",
            f"_task = LmmsEvalTask(Path(__file__).resolve().parent, profile={self.profile!r})",
            *(f"{name} = _task.{name}" for name in DOC_FUNCTIONS),
            *(f"aggregate_{metric} = _task.aggregation({metric!r})" for metric in METRICS),
        ]
        return "\n".join(lines) + "\n"
