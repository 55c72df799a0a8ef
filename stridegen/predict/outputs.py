"""The files of a predict run, joined from the scenes' parts in scene order (every file but ``summary.json`` is
the same bytes for the same inputs, whether the run went through at once or was killed and resumed):

- ``predictions.jsonl``: ``{"question_id", "pred"}`` per answered question, in question order: what ``stridegen
  eval lsr`` (``--dataset`` / ``--bench-dir`` with ``--pred``), ``stridegen eval spatial`` and ``stridegen judge
  run --dataset ... --pred`` read;
- ``failures.jsonl``: ``{"question_id", "error_kind", "error"}`` per question without an answer (never scored);
- ``responses/<model>_t<t>.json`` (a bench source, once every question has its answer): the official response
  files, the bench's question records in their order with ``pred``, ``model_id`` and ``t`` added, which the
  official STRIDE-QA-Bench metric code and ``stridegen eval lsr --responses`` read;
- ``predict.json``: the source, the predictor, the profile, the generation settings and the sha256 of each file;
- ``summary.json``: this run's accounting (questions, answered, cached, sent, failed by kind, tokens, cost, p50 /
  p95 latency, questions per second).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.formats.prediction_inputs import PREDICT_MANIFEST
from stridegen.logs.names import scene_file_stem
from stridegen.predict.questions import bench_records
from stridegen.run.runner import SceneResult, read_part
from stridegen.shards.manifest import manifest_bytes
from stridegen.shards.writer import atomic_write_bytes, sha256_file

PREDICTIONS = "predictions.jsonl"
FAILURES = "failures.jsonl"
RESPONSES = "responses"
MANIFEST = PREDICT_MANIFEST  # the evaluators read the model from it (stridegen.formats.prediction_inputs)
SUMMARY = "summary.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _jsonl(records: Sequence[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in records)


def model_file_name(model: str) -> str:
    """The model's name as a file name part: its last path component, unsafe characters as ``-``."""
    return _UNSAFE.sub("-", model.rstrip("/").split("/")[-1]) or "model"


def write_outputs(
    out: Path, scenes: Sequence[str], source: Path, source_kind: str, model: str
) -> tuple[list[str], int, int]:
    """Join the parts of ``scenes`` (those that have one) into the files above; returns (files written, answered,
    failed)."""
    records: list[dict[str, Any]] = []
    for scene in scenes:
        try:
            records.extend(read_part(out, scene))
        except FileNotFoundError:
            continue
    answered = [{"question_id": r["question_id"], "pred": r["pred"]} for r in records if "pred" in r]
    failed = [
        {"question_id": r["question_id"], "error_kind": r["error_kind"], "error": r["error"]}
        for r in records
        if "pred" not in r
    ]
    atomic_write_bytes(out / PREDICTIONS, _jsonl(answered))
    atomic_write_bytes(out / FAILURES, _jsonl(failed))
    files = [PREDICTIONS, FAILURES]
    if source_kind == "bench" and not failed and len(answered) == len(records):
        preds = {r["question_id"]: r["pred"] for r in answered}
        by_t: dict[int, list[dict[str, Any]]] = {}
        for t, record in bench_records(source):
            if record["question_id"] in preds:
                by_t.setdefault(t, []).append(
                    {**record, "pred": preds[record["question_id"]], "model_id": model, "t": t}
                )
        for t, rows in sorted(by_t.items()):
            name = f"{RESPONSES}/{model_file_name(model)}_t{t}.json"
            atomic_write_bytes(out / name, (json.dumps(rows, indent=4, ensure_ascii=False) + "\n").encode("utf-8"))
            files.append(name)
    return files, len(answered), len(failed)


def write_manifest(out: Path, manifest: dict[str, Any], files: Sequence[str]) -> Path:
    data = {**manifest, "files": [{"file": f, "sha256": sha256_file(out / f)} for f in sorted(files)]}
    path = out / MANIFEST
    atomic_write_bytes(path, manifest_bytes(data))
    return path


def percentile(values: Sequence[float], q: float) -> float | None:
    return None if not values else float(np.percentile(np.asarray(values, dtype=np.float64), q))


def summarise(out: Path, results: Sequence[SceneResult], wall_s: float, stats_folder: str) -> dict[str, Any]:
    """This run's accounting from the stats files of the scenes it ran (resumed scenes are counted apart)."""
    totals: dict[str, Any] = {
        "scenes": len(results),
        "scenes_resumed": sum(r.status == "resumed" for r in results),
        "scenes_failed": sum(not r.ok for r in results),
        "questions": 0,
        "cached": 0,
        "sent": 0,
        "answered": 0,
        "failed": {},
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
    }
    latencies: list[float] = []
    prepare_s = 0.0
    for r in results:
        path = out / stats_folder / f"{scene_file_stem(r.scene)}.json"
        if r.status == "resumed" or not path.is_file():
            continue
        stats = json.loads(path.read_text(encoding="utf-8"))
        for key in ("questions", "cached", "sent", "answered", "prompt_tokens", "completion_tokens"):
            totals[key] += int(stats[key])
        totals["cost_usd"] += float(stats["cost_usd"])
        for kind, n in stats["failed"].items():
            totals["failed"][kind] = totals["failed"].get(kind, 0) + int(n)
        latencies.extend(float(x) for x in stats["latencies_s"])
        prepare_s += float(stats["prepare_s"])
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    totals.update(
        cost_usd=round(totals["cost_usd"], 6),
        failed=dict(sorted(totals["failed"].items())),
        latency_p50_s=None if p50 is None else round(p50, 4),
        latency_p95_s=None if p95 is None else round(p95, 4),
        image_preparation_s=round(prepare_s, 3),
        wall_s=round(wall_s, 3),
        questions_per_s=round(totals["questions"] / wall_s, 3) if wall_s > 0 else None,
    )
    atomic_write_bytes(out / SUMMARY, (json.dumps(totals, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return totals
