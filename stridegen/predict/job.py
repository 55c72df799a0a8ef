"""The predict job on the scene-job runner (``stridegen.run.runner``): one task per scene of the source, resumable.

A worker asks the scene's questions (``stridegen.predict.questions``): it draws each question's frames
(``images``), phrases it with the prompt profile (``prompts``), takes every answer it already has from the reply
cache (``cache``: keyed by the request's content) and has the predictor answer the rest, caching each reply the
moment it arrives. It then writes the scene's *part* (its questions in order, each with its answer or why it has
none) and a stats file (requests sent, cache hits, tokens, cost, latencies). A scene with a failed request is a
failed scene: a rerun retries it, sending only the requests that have no cached answer. When the endpoint refuses
the key (401/403) the worker leaves a stop marker and every scene after it fails at once without a request.

The job is a ``SceneJob`` (``PredictTask`` per scene). The driver (``run_predict``) never builds a predictor: it
checks the predictor's options against its factory (``registry.validate_options``) and the profile, then runs the
tasks and joins the parts (``outputs``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stridegen.core import registry
from stridegen.core.canonical import sha256_canonical
from stridegen.llm.records import ChatAuthError
from stridegen.llm.redact import redact
from stridegen.logs.names import scene_file_stem
from stridegen.predict.base import GenerationSettings, PromptRequest, Reply
from stridegen.predict.cache import ReplyCache
from stridegen.predict.images import FrameRenderer
from stridegen.predict.outputs import summarise, write_manifest, write_outputs
from stridegen.predict.prompts import PromptProfile
from stridegen.predict.questions import Question, QuestionSource
from stridegen.run.config import ExecutorSection
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneJob,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    pause_if_asked,
    run_scene_jobs,
    write_part,
)
from stridegen.shards.journal import check_outside_source

STOP_MARKER = "STOPPED"  # left in the output folder when the endpoint refused the key
STATS = "stats"  # per-scene stats files of the last run of each scene
PROGRESS_STAGE = "answered:"  # stage events "answered:<n>": n more questions of the scene have their answer
PROGRESS_EVERY = 8  # questions per progress event


class PredictSpec(BaseModel):
    """Everything a worker needs (plain data: it travels to worker processes and Ray tasks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    predictor: str
    options: dict[str, Any]
    profile: PromptProfile
    generation: GenerationSettings
    blind: bool = False
    limit: int | None = Field(None, ge=1)  # at most this many questions per scene (the first ones)
    cache_dir: str
    out_dir: str

    def marks(self) -> dict[str, str]:
        return {"spatial": self.profile.marks.spatial, "spatiotemporal": self.profile.marks.spatiotemporal}


def make_predictor(spec: PredictSpec) -> Any:
    """The spec's predictor, made once per worker process (the run's one backend cache)."""
    from stridegen.run.backends import cached

    return cached(
        "predictor",
        [spec.predictor, spec.options],
        lambda: registry.make("predictor", spec.predictor, spec.options),
    )


def request_identity(spec: PredictSpec, predictor: Any) -> dict[str, Any]:
    """What names the answers' source in the cache key: the predictor's identity, blind or not."""
    return {**predictor.identity(), "blind": spec.blind}


def scene_requests(spec: PredictSpec, questions: list[Question]) -> list[PromptRequest]:
    """Each question as the model sees it: the profile's system prompt, the question, the drawn frames (none
    when blind)."""
    renderer = FrameRenderer(spec.profile)
    return [
        PromptRequest(
            spec.profile.system_prompt(q.kind, q.times_s),
            q.text,
            () if spec.blind else tuple(renderer.render(f) for f in q.frames),
        )
        for q in questions
    ]


@dataclass
class _SceneStats:
    questions: int = 0
    cached: int = 0
    sent: int = 0
    answered: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latencies_s: list[float] = field(default_factory=list)
    prepare_s: float = 0.0
    predict_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "cached": self.cached,
            "sent": self.sent,
            "answered": self.answered,
            "failed": dict(sorted(self.failed.items())),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "latencies_s": [round(x, 4) for x in self.latencies_s],
            "prepare_s": round(self.prepare_s, 4),
            "predict_s": round(self.predict_s, 4),
        }


def _record(question: Question, reply: Reply) -> dict[str, Any]:
    record: dict[str, Any] = {"question_id": question.question_id}
    if question.horizon is not None:
        record["t"] = question.horizon
    if reply.ok:
        record["pred"] = reply.text
    else:
        record["error_kind"] = reply.error_kind
        record["error"] = reply.error
    return record


def predict_scene(spec: PredictSpec, scene: str, report: StageCallback) -> SceneResult:
    """Answer the questions of ``scene`` and write its part (module docstring)."""
    out = Path(spec.out_dir)
    timings: dict[str, float] = {}
    if (out / STOP_MARKER).is_file():
        reason = (out / STOP_MARKER).read_text(encoding="utf-8").strip()
        return SceneResult(scene, "failed", reason=f"not sent: {reason}", error_type="ChatAuthError")
    stats = _SceneStats()
    t0 = time.perf_counter()
    source = QuestionSource(spec.source, spec.marks())
    with source.scene_questions(scene) as questions:
        questions = questions[: spec.limit]
        requests = scene_requests(spec, questions)
    stats.prepare_s = timings["prepare"] = time.perf_counter() - t0
    report(scene, "prepare")
    predictor = make_predictor(spec)
    identity = request_identity(spec, predictor)
    keys = [r.content_key(identity, spec.generation) for r in requests]
    cache = ReplyCache(spec.cache_dir, scene)
    replies: list[Reply | None] = [cache.get(k) for k in keys]
    stats.questions = len(questions)
    stats.cached = sum(r is not None for r in replies)
    todo = [i for i, r in enumerate(replies) if r is None]
    stats.sent = len(todo)
    pending = [stats.cached]

    def on_reply(j: int, reply: Reply) -> None:
        i = todo[j]
        if reply.ok:
            reply.text = redact(str(reply.text))
            cache.put(keys[i], reply)
            stats.latencies_s.append(reply.latency_s)
        replies[i] = reply
        stats.prompt_tokens += reply.prompt_tokens
        stats.completion_tokens += reply.completion_tokens
        stats.cost_usd += reply.cost_usd
        pending[0] += 1
        if pending[0] >= PROGRESS_EVERY:
            report(scene, f"{PROGRESS_STAGE}{pending[0]}")
            pending[0] = 0
            pause_if_asked(scene, "answered")

    t1 = time.perf_counter()
    refused: ChatAuthError | None = None
    try:
        predictor.predict([requests[i] for i in todo], spec.generation, on_reply)
    except ChatAuthError as exc:
        refused = exc
        (out / STOP_MARKER).write_text(str(exc) + "\n", encoding="utf-8")
    stats.predict_s = timings["predict"] = time.perf_counter() - t1
    if pending[0]:
        report(scene, f"{PROGRESS_STAGE}{pending[0]}")
    final = [r if r is not None else Reply(None, "auth", "not sent: the endpoint refused the key") for r in replies]
    for r in final:
        if r.ok:
            stats.answered += 1
        else:
            stats.failed[r.error_kind] = stats.failed.get(r.error_kind, 0) + 1
    records = [_record(q, r) for q, r in zip(questions, final, strict=True)]
    counts = {"questions": stats.questions, "answered": stats.answered, "failed": sum(stats.failed.values())}
    info = write_part(out, scene, records, counts, sort_keys=False)
    stats_path = out / STATS / f"{scene_file_stem(scene)}.json"
    stats_path.parent.mkdir(parents=True, exist_ok=True)
    stats_path.write_text(json.dumps(stats.to_dict(), sort_keys=True) + "\n", encoding="utf-8")
    report(scene, "predict")
    if refused is not None:
        return SceneResult(scene, "failed", reason=str(refused), error_type="ChatAuthError", timings_s=timings)
    if stats.failed:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(stats.failed.items()))
        reason = f"{counts['failed']} of {stats.questions} request(s) failed ({kinds}); a rerun retries them"
        return SceneResult(scene, "failed", reason=reason, error_type="RequestsFailed", timings_s=timings)
    return SceneResult(scene, "built", info, timings_s=timings)


@dataclass(frozen=True)
class PredictTask:
    """The predict job's scene task (``stridegen.run.runner.SceneTask``): the spec as JSON, for any executor."""

    spec_json: str

    def run_scene(self, scene: str, report: StageCallback, timings: dict[str, float]) -> SceneResult:
        return predict_scene(PredictSpec.model_validate_json(self.spec_json), scene, report)


def check_spec(spec: PredictSpec) -> None:
    """What the driver checks before any scene runs, without building the predictor: the predictor's name and
    options against its factory, and the source."""
    registry.validate_options("predictor", spec.predictor, spec.options, where=f"predictor {spec.predictor}")
    QuestionSource(spec.source, spec.marks())  # raises for a folder that is neither a dataset nor a bench export


def run_hash(spec: PredictSpec, source_digest: str) -> str:
    """The config hash of a predict output folder: what its answers depend on (the source's content, the
    predictor and its options, the profile, the generation settings, blind). Concurrency and timeouts change no
    answer but are options too: a rerun with other ones needs --overwrite or the same values."""
    return sha256_canonical(
        {
            "source": source_digest,
            "predictor": spec.predictor,
            "options": spec.options,
            "profile": spec.profile.model_dump(),
            "generation": spec.generation.model_dump(),
            "blind": spec.blind,
            "limit": spec.limit,
        }
    )


def source_digest(source: QuestionSource) -> str:
    """What the source's questions and images are, as one sha256: a dataset's shard digests from its manifest, or
    a bench export's annotation files."""
    if source.kind == "bench":
        from stridegen.predict.questions import bench_files
        from stridegen.shards.writer import sha256_file

        return sha256_canonical([[p.name, sha256_file(p)] for _, p in bench_files(source.path)])
    from stridegen.shards.reader import open_dataset

    with open_dataset(source.path) as dataset:
        return sha256_canonical([[s["file"], s["sha256"]] for s in dataset.manifest["shards"]])


@dataclass
class PredictResult(SceneRunSummary):
    out_dir: Path
    summary: dict[str, Any]
    files: list[str]
    answered: int = 0
    failed_questions: int = 0
    results: list[SceneResult] = field(default_factory=list)  # in scene order


def run_predict(
    spec: PredictSpec,
    workers: int = 1,
    overwrite: bool = False,
    observer: RunObserver | None = None,
    executor: ExecutorSection | str = "local",
) -> PredictResult:
    """Answer every question of ``spec.source`` into ``spec.out_dir`` (module docstring). Config errors raise
    before any scene runs; failed requests are recorded and make their scene failed (a rerun retries them)."""
    start = time.perf_counter()
    check_spec(spec)
    source = QuestionSource(spec.source, spec.marks())
    out = Path(spec.out_dir)
    check_outside_source(source.path, out)
    scenes = source.scenes()
    config_hash = run_hash(spec, source_digest(source))
    (out / STOP_MARKER).unlink(missing_ok=True)  # a new run asks again
    job = SceneJob(JobTarget(out, config_hash, scenes), PredictTask(spec.model_dump_json()))
    [outcome] = run_scene_jobs([job], make_executor(executor, workers), overwrite, observer)
    model = str(spec.options.get("model", spec.predictor))
    files, answered, failed = write_outputs(out, scenes, source.path, source.kind, model)
    manifest = {
        "format": "stridegen-predictions",
        "version": 1,
        "config_hash": config_hash,
        "source": {"path": str(source.path.resolve()), "kind": source.kind},
        "predictor": {"name": spec.predictor, "options": spec.options},
        "profile": spec.profile.model_dump(),
        "generation": spec.generation.model_dump(),
        "blind": spec.blind,
        "scenes": scenes,
        "answered": answered,
        "failed": failed,
    }
    write_manifest(out, manifest, files)
    summary = summarise(out, outcome.results, time.perf_counter() - start, STATS)
    return PredictResult(out, summary, files, answered, failed, outcome.results)
