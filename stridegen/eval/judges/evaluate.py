"""A judge run from its options, and the judge-human agreement of two JSONL files (``stridegen judge run`` and
``judge agreement``, stridegen/cli/judge.py, parse the options into these and print the results).

``prepare_run`` takes a ``JudgeRunOptions`` (where the items come from, the method's config, the client settings
given explicitly) and returns a ``JudgeRun``: the method, the items and what every request shares (context,
cache, client settings); its ``dry_run`` writes what would be sent and the estimated cost, its ``execute`` judges and
writes verdicts.jsonl and summary.json. A bad option value or combination is a ``JudgeOptionError`` naming the
option. Importing this module is cheap: the judges' own modules are imported where they are used.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stridegen.eval.judges.records import JudgeError

DRY_RUN_REQUESTS = "dry_run_requests.jsonl"  # under the run's --out: the requests a dry run would send
DRY_RUN_SUMMARY = "dry_run_summary.json"  # under --out: a dry run's counts, token and cost estimate

if TYPE_CHECKING:
    from stridegen.eval.judges.cache import VerdictCache
    from stridegen.eval.judges.methods import Judge, JudgeContext
    from stridegen.eval.judges.records import JudgeItem
    from stridegen.eval.judges.runner import RunResult
    from stridegen.llm.client import ClientSettings


class JudgeOptionError(JudgeError):
    """A run option has a bad value, or options that do not go together were given; ``option`` names the option
    (e.g. ``--mode``), None when the fault is the combination."""

    def __init__(self, reason: str, option: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.option = option


@dataclass(frozen=True)
class ClientOverrides:
    """Client settings given explicitly; None: not given, so the environment, the method's config or the default
    decides (``client.settings_from_sources``). The fields are named as in ``client.ClientSettings``."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    concurrency: int | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    timeout_s: float | None = None
    max_retries: int | None = None
    backoff_base_s: float | None = None
    budget_usd: float | None = None
    supports_images: bool | None = None
    max_reply_chars: int | None = None

    def given(self) -> dict[str, Any]:
        """The settings that were given, by ``ClientSettings`` field name."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class JudgeInputs:
    """Where the items come from: an items.jsonl (``items``), or a stridegen dataset folder whose QA the
    predictions JSONL ``pred`` answers (the templated answer is the reference)."""

    items: Path | None = None
    dataset: Path | None = None
    pred: Path | None = None

    def load(self, out_dir: Path, with_images: bool) -> tuple[list[JudgeItem], Path]:
        """The items and the folder their relative image paths start from; a dataset's images are drawn into
        ``out_dir/images`` when ``with_images``."""
        from stridegen.eval.judges.runner import load_items

        one_source = "give either --input items.jsonl or --dataset DIR --pred preds.jsonl"
        if self.items is not None:
            if self.dataset is not None:
                raise JudgeOptionError(one_source)
            if self.pred is not None:
                raise JudgeOptionError("--pred goes with --dataset", "--pred")
            return load_items(self.items), self.items.resolve().parent
        if self.dataset is None:
            raise JudgeOptionError(one_source)
        if self.pred is None:
            raise JudgeOptionError("--dataset needs --pred (predictions JSONL)", "--pred")
        from stridegen.eval.judges.dataset_items import items_from_dataset
        from stridegen.eval.lsr.data import read_predictions_jsonl

        predictions, _ = read_predictions_jsonl(str(self.pred), "error")
        image_dir = out_dir / "images" if with_images else None
        items = items_from_dataset(self.dataset, predictions, image_dir, str(self.pred))
        return items, self.dataset.resolve()


@dataclass(frozen=True)
class JudgeRunOptions:
    """What a judge run is asked: the method and its mode, where the items come from, where the outputs go, which
    config and pricing files, the client settings given explicitly, the answer cap.

    None leaves a value to the method's config (``mode``: else robust; ``max_answer_chars``: else 4000, 0: no cap),
    to the packaged file (``config``, ``pricing``) or to ``out_dir/cache`` (``cache_dir``).
    """

    method: str
    inputs: JudgeInputs
    out_dir: Path
    mode: str | None = None
    config: Path | None = None
    pricing: Path | None = None
    cache_dir: Path | None = None
    client: ClientOverrides = field(default_factory=ClientOverrides)
    max_answer_chars: int | None = None


@dataclass(frozen=True)
class JudgeRun:
    """A run ready to go: the method in its mode, the items, and what every request shares."""

    judge: Judge
    mode: str
    items: list[JudgeItem]
    ctx: JudgeContext
    cache: VerdictCache
    settings: ClientSettings
    out_dir: Path

    def dry_run(self) -> tuple[dict[str, Any], Path, Path]:
        """Send nothing: write every request that would be sent (cached ones skipped, images named by their file)
        to ``out_dir/dry_run_requests.jsonl`` and the estimate (``runner.dry_run``, with the method, mode and
        model) to ``out_dir/dry_run_summary.json``; returns the estimate and the two paths."""
        import json

        from stridegen.eval.judges.runner import atomic_write_text, dry_run, plan
        from stridegen.llm.client import CostMeter

        meter = CostMeter(self.settings.price_input_per_mtok, self.settings.price_output_per_mtok)
        planned = plan(self.items, self.judge, self.mode, self.ctx)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        requests_path = self.out_dir / DRY_RUN_REQUESTS
        summary_path = self.out_dir / DRY_RUN_SUMMARY
        tmp = requests_path.with_name(requests_path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            estimate = dry_run(
                planned,
                self.cache,
                self.settings.model,
                meter,
                self.settings.image_tokens_estimate,
                out,
                self.ctx.base_dir,
                self.out_dir,
            )
        tmp.replace(requests_path)
        summary = {"method": self.judge.name, "mode": self.mode, "model": self.settings.model, **estimate}
        summary["requests_file"] = requests_path.name
        atomic_write_text(summary_path, json.dumps(summary, indent=2) + "\n")
        return summary, requests_path, summary_path

    def execute(self) -> tuple[RunResult, Path, Path]:
        """Judge every item (cached requests are not sent again); the result and the paths of verdicts.jsonl and
        summary.json, written under ``out_dir``."""
        from stridegen.eval.judges.runner import run_judge, write_outputs
        from stridegen.llm.client import ChatClient

        client = ChatClient(self.settings)
        result = run_judge(
            self.items, self.judge, self.mode, self.ctx, self.cache, client, concurrency=self.settings.concurrency
        )
        verdict_path, summary_path = write_outputs(result, self.out_dir)
        return result, verdict_path, summary_path


def prepare_run(options: JudgeRunOptions, warn: Callable[[str], None]) -> JudgeRun:
    """The run ``options`` ask for: method, config, mode (``warn`` is told that faithful mode is open to answer
    injection), client settings (explicit > environment > config > defaults, prices from the pricing table), the
    items, the cache in ``cache_dir`` (default ``out_dir/cache``) and its nonce key."""
    from stridegen.eval.judges.cache import VerdictCache
    from stridegen.eval.judges.config import load_method_config, load_pricing
    from stridegen.eval.judges.methods import (
        DEFAULT_MAX_ANSWER_CHARS,
        DEFAULT_MODE,
        FAITHFUL_WARNING,
        MODES,
        JudgeContext,
        get_method,
    )
    from stridegen.eval.judges.safety import load_or_create_key
    from stridegen.llm.client import apply_pricing, settings_from_sources

    try:
        judge = get_method(options.method)
    except JudgeError as exc:
        raise JudgeOptionError(str(exc), "--method") from exc
    cfg = load_method_config(options.method, options.config)
    mode = options.mode or cfg.get("mode", DEFAULT_MODE)
    if mode not in MODES:
        raise JudgeOptionError(f"'{mode}' is not one of {', '.join(MODES)}", "--mode")
    if mode == "faithful":
        warn(FAITHFUL_WARNING)
    settings = settings_from_sources(cfg.get("client"), options.client.given())
    settings = apply_pricing(settings, load_pricing(options.pricing))
    items, base_dir = options.inputs.load(options.out_dir, judge.uses_images and settings.supports_images)
    method_settings = cfg.get("settings") or {}
    cap = options.max_answer_chars
    if cap is None:
        cap = int(method_settings.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS))
    cache = VerdictCache(options.cache_dir or options.out_dir / "cache")
    ctx = JudgeContext(
        nonce_key=load_or_create_key(cache.directory / "nonce.key"),
        send_images=settings.supports_images,
        base_dir=base_dir,
        settings=method_settings,
        max_answer_chars=cap or None,
    )
    return JudgeRun(judge, mode, items, ctx, cache, settings, options.out_dir)


# ------------------------------------------------------------------------------------------------- agreement


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; one-line errors naming the file and line."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import iter_jsonl

    rows = []
    for lineno, row in iter_jsonl(path, "file", PredictionFormatError):
        if not isinstance(row, dict):
            raise PredictionFormatError(path, f"line {lineno}: expected a JSON object, got {type(row).__name__}")
        rows.append((lineno, row))
    return rows


def _number(path: Path, lineno: int, value: Any, what: str) -> float:
    """``value`` (line ``lineno`` of ``path``) as a finite float; an error naming the file, line and ``what``."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import shown

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise PredictionFormatError(path, f"line {lineno}: {what} is not a number: {shown(value)}")
    try:
        number = float(value)
    except ValueError:
        raise PredictionFormatError(path, f"line {lineno}: {what} is not a number: {shown(value)}") from None
    if not math.isfinite(number):
        raise PredictionFormatError(path, f"line {lineno}: {what} is not finite: {shown(value)}")
    return number


def agreement_from_files(
    judge_path: Path, human_path: Path, n_boot: int, seed: int, alpha: float, allow_scale_mismatch: bool
) -> dict[str, Any]:
    """The agreement of a judge's verdicts (``judge_path``: JSONL with id and score; only ok ones count) with human
    scores (``human_path``: id, score, optional dimensions, system, group), matched by id: the metrics of
    ``agreement.agreement_report`` with a header (matched count, scales, bootstrap settings). Scores on different
    scales are refused unless ``allow_scale_mismatch``."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.eval.judges.agreement import agreement_report, describe_scale, infer_scale, scales_compatible
    from stridegen.eval.judges.methods import method_scale

    judged: dict[str, tuple[int, dict[str, Any]]] = {}
    for lineno, r in _read_jsonl(judge_path):
        if r.get("status", "ok") == "ok" and "id" in r:
            judged[str(r["id"])] = (lineno, r)
    a, b, systems, groups, a_dims, b_dims, methods = [], [], [], [], [], [], set()
    for lineno, h in _read_jsonl(human_path):
        hit = judged.get(str(h.get("id")))
        if hit is None or "score" not in h:
            continue
        jline, j = hit
        a.append(_number(judge_path, jline, j.get("score"), "'score'"))
        b.append(_number(human_path, lineno, h["score"], "'score'"))
        methods.add(str(j.get("method", "")))
        systems.append(str(h.get("system", j.get("system", ""))))
        groups.append(str(h.get("group", j.get("group", ""))))
        jd = (j.get("details") or {}).get("dimensions") or j.get("dimensions") or {}
        hd = h.get("dimensions") or {}
        common = sorted(set(jd) & set(hd)) if isinstance(jd, dict) and isinstance(hd, dict) else []
        a_dims.append([_number(judge_path, jline, jd[k], f"dimension '{k}'") for k in common])
        b_dims.append([_number(human_path, lineno, hd[k], f"dimension '{k}'") for k in common])
    if len(a) < 2:
        raise PredictionFormatError(
            human_path,
            f"only {len(a)} id(s) with a score match a verdict of {judge_path} ({len(judged)} judged); need at least 2",
        )
    method = next(iter(methods)) if len(methods) == 1 else ""
    declared_scale = method_scale(method)
    judge_scale = declared_scale or infer_scale(a)
    human_scale = infer_scale(b)
    compatible = scales_compatible(judge_scale, human_scale)
    if not compatible and not allow_scale_mismatch:
        source = f"method {method}" if declared_scale else "from its values"
        raise PredictionFormatError(
            human_path,
            f"scale mismatch: judge scores are {describe_scale(judge_scale)} ({source}) but human scores are "
            f"{describe_scale(human_scale)} (min {min(b):g}, max {max(b):g}); agreement across scales is "
            "meaningless; pass --allow-scale-mismatch to compute it anyway",
        )
    metrics = agreement_report(
        a,
        b,
        systems=systems if any(systems) else None,
        groups=groups if any(groups) else None,
        a_dims=a_dims if any(a_dims) else None,
        b_dims=b_dims if any(b_dims) else None,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
        categorical=judge_scale in ("binary", "pairwise"),
    )
    return {
        "n_matched": len(a),
        "scales": {
            "judge": judge_scale,
            "human": human_scale,
            "compatible": compatible,
            "mismatch_allowed": bool(allow_scale_mismatch and not compatible),
        },
        "bootstrap": {"n_boot": n_boot, "alpha": alpha, "seed": seed},
        "metrics": metrics,
    }
