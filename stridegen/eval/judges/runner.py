"""Run a judge method over items: cache lookup, bounded-concurrency requests, verdicts, summary.

Every request is keyed by the hash of its full payload (model, messages, sampling, template version); a
cached key is never sent again, so a killed run restarted with the same cache directory only sends what is
missing. Failed requests are logged as errors, never cached; items whose requests failed get status "error"
and are left out of every mean.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypedDict

from pydantic import ValidationError

from stridegen.core.errors import PredictionFormatError
from stridegen.eval.judges.cache import VerdictCache
from stridegen.eval.judges.client import ChatClient, CostMeter, estimate_prompt_tokens
from stridegen.eval.judges.methods import JudgeContext, JudgeMethod
from stridegen.eval.judges.records import (
    JudgeError,
    JudgeItem,
    JudgeRequestError,
    RequestSpec,
    VerdictParseError,
)
from stridegen.eval.judges.safety import looks_like_injection


def load_items(path: str | Path) -> list[JudgeItem]:
    """Items from a JSONL file (one JSON object per line; blank lines skipped). Ids must be unique."""
    path = Path(path)
    if not path.exists():
        raise PredictionFormatError(path, "items file does not exist")
    items: list[JudgeItem] = []
    seen: set[str] = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if isinstance(raw, dict) and "id" in raw:
                raw["id"] = str(raw["id"])
            item = JudgeItem.model_validate(raw)
        except (ValueError, ValidationError) as exc:
            raise PredictionFormatError(path, f"line {lineno}: {exc}") from exc
        if item.id in seen:
            raise PredictionFormatError(path, f"line {lineno}: duplicate id '{item.id}'")
        seen.add(item.id)
        items.append(item)
    return items


@dataclass
class _Planned:
    item: JudgeItem
    specs: list[RequestSpec] = field(default_factory=list)
    error: str | None = None


@dataclass
class RunResult:
    verdicts: list[dict[str, Any]]
    summary: dict[str, Any]
    sent: int = 0
    cached: int = 0


def plan(items: list[JudgeItem], method: JudgeMethod, mode: str, ctx: JudgeContext) -> list[_Planned]:
    planned = []
    for item in items:
        try:
            planned.append(_Planned(item, method.requests(item, mode, ctx)))
        except JudgeError as exc:
            planned.append(_Planned(item, error=str(exc)))
    return planned


def _redact(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages for printing: inline image data shortened."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for p in content:
                if p.get("type") == "image_url":
                    url = p["image_url"]["url"]
                    parts.append({"type": "image_url", "image_url": {"url": url[:40] + f"...({len(url)} chars)"}})
                else:
                    parts.append(p)
            content = parts
        out.append({**m, "content": content})
    return out


def dry_run(
    planned: list[_Planned], cache: VerdictCache, model: str, meter: CostMeter, image_tokens: int, out: TextIO
) -> dict[str, Any]:
    """Print every request that would be sent (cached ones skipped) and the estimated tokens and cost."""
    n_req = n_cached = prompt_tokens = output_tokens = 0
    for p in planned:
        if p.error:
            out.write(f"# item {p.item.id}: not sendable: {p.error}\n")
            continue
        for spec in p.specs:
            key = spec.cache_key(model)
            if key in cache:
                n_cached += 1
                continue
            est_in = estimate_prompt_tokens(spec.messages, image_tokens)
            est_out = int(spec.sampling.get("max_tokens") or 1024)
            n_req += 1
            prompt_tokens += est_in
            output_tokens += est_out
            out.write(
                json.dumps(
                    {
                        "item": p.item.id,
                        "tag": spec.tag,
                        "key": key[:16],
                        "model": model,
                        "sampling": spec.sampling,
                        "est_prompt_tokens": est_in,
                        "messages": _redact(spec.messages),
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    estimate = {
        "requests": n_req,
        "cached": n_cached,
        "est_prompt_tokens": prompt_tokens,
        "max_output_tokens": output_tokens,
        "est_cost_usd_upper": round(meter.cost(prompt_tokens, output_tokens), 6),
    }
    out.write(f"# dry run: {json.dumps(estimate)}\n")
    return estimate


def run_judge(
    items: list[JudgeItem],
    method: JudgeMethod,
    mode: str,
    ctx: JudgeContext,
    cache: VerdictCache,
    client: ChatClient,
    concurrency: int = 4,
) -> RunResult:
    """Judge ``items``; returns one verdict per item (status ok / error) and the summary."""
    model = client.settings.model
    planned = plan(items, method, mode, ctx)
    todo: list[tuple[str, RequestSpec, str]] = []
    queued: set[str] = set()
    n_cached = 0
    for p in planned:
        for spec in p.specs:
            key = spec.cache_key(model)
            if key in cache:
                n_cached += 1
            elif key not in queued:  # identical requests across items are sent once
                queued.add(key)
                todo.append((key, spec, p.item.id))

    failures: dict[str, str] = {}

    def work(job: tuple[str, RequestSpec, str]) -> None:
        key, spec, item_id = job
        context = {"item_id": item_id, "tag": spec.tag, "method": method.name, "mode": mode}
        try:
            completion = client.complete(spec.messages, spec.sampling)
            try:
                parsed = spec.parse(completion.text)
            except VerdictParseError as exc:
                failures[key] = f"unparseable reply: {exc}"
                cache.record_error(key, "parse", str(exc), raw=completion.text, **context)
                return
            cache.put(key, completion, parsed, **context)
        except JudgeRequestError as exc:
            failures[key] = str(exc)
            cache.record_error(key, exc.kind, str(exc), **context)
        except Exception as exc:  # an unexpected failure loses one request, never the whole run
            failures[key] = f"{type(exc).__name__}: {exc}"
            cache.record_error(key, "unexpected", failures[key], **context)

    if todo:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            list(pool.map(work, todo))

    verdicts = [_verdict(p, method, mode, ctx, cache, model, failures) for p in planned]
    summary = summarise(verdicts)
    # "usage": what this run spent; "verdict_usage" (from summarise): what all ok verdicts cost, cached included.
    summary.update(
        {
            "method": method.name,
            "mode": mode,
            "model": model,
            "requests_sent": len(todo),
            "requests_cached": n_cached,
            "usage": client.meter.summary(),
        }
    )
    return RunResult(verdicts, summary, sent=len(todo), cached=n_cached)


def _verdict(
    p: _Planned,
    method: JudgeMethod,
    mode: str,
    ctx: JudgeContext,
    cache: VerdictCache,
    model: str,
    failures: dict[str, str],
) -> dict[str, Any]:
    base = {
        "id": p.item.id,
        "method": method.name,
        "mode": mode,
        "category": p.item.category,
        "template_version": method.template_version,
    }
    if p.error:
        return {**base, "status": "error", "error": p.error}
    parsed: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
    raw: dict[str, str] = {}
    for spec in p.specs:
        key = spec.cache_key(model)
        hit = cache.get(key)
        if hit is None:
            failed[spec.tag] = failures.get(key, "not answered")
            continue
        completion, parsed[spec.tag] = hit
        raw[spec.tag] = completion.text
        usage["prompt_tokens"] += completion.prompt_tokens
        usage["completion_tokens"] += completion.completion_tokens
        usage["cost_usd"] += completion.cost_usd
    try:
        verdict = method.aggregate(p.item, parsed, failed, ctx)
    except JudgeError as exc:
        return {**base, "status": "error", "error": str(exc), "failed": failed}
    flags = list(verdict.get("flags", []))
    if looks_like_injection(p.item.answer) or (p.item.answer_b and looks_like_injection(p.item.answer_b)):
        flags.append("answer_injection_suspected")
    return {
        **base,
        "status": "ok",
        "score": verdict["score"],
        "score_100": verdict["score_100"],
        "groups": verdict.get("groups", []),
        "flags": flags,
        "details": verdict.get("details", {}),
        "partial_failures": failed,
        "usage": usage,
        "judge_replies": raw,
    }


class ScoreStats(TypedDict):
    """Count, mean and sample standard deviation of 0-100 scores (None where undefined)."""

    n: int
    mean_100: float | None
    std_100: float | None


def summarise(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over ok verdicts only (overall and per group); error counts alongside, never averaged in."""
    ok = [v for v in verdicts if v["status"] == "ok"]
    groups: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for v in verdicts:
        if v["status"] != "ok":
            errors[f"category:{v['category']}"] += 1
            continue
        for g in v.get("groups", []):
            groups[g].append(float(v["score_100"]))
    flags: dict[str, int] = defaultdict(int)
    for v in ok:
        for f in v.get("flags", []):
            flags[f] += 1

    def stats(values: list[float]) -> ScoreStats:
        n = len(values)
        if not n:
            return {"n": n, "mean_100": None, "std_100": None}
        mean = sum(values) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1)) if n > 1 else None
        return {"n": n, "mean_100": mean, "std_100": sd}

    verdict_usage = {
        k: sum(v.get("usage", {}).get(k, 0) for v in ok) for k in ("prompt_tokens", "completion_tokens", "cost_usd")
    }
    return {
        "n_items": len(verdicts),
        "n_ok": len(ok),
        "n_error": len(verdicts) - len(ok),
        "verdict_usage": verdict_usage,
        "overall": stats([float(v["score_100"]) for v in ok]),
        "groups": {g: {**stats(vals), "n_error": errors.get(g, 0)} for g, vals in sorted(groups.items())},
        "errors_by_category": dict(sorted(errors.items())),
        "flags": dict(sorted(flags.items())),
    }


def write_outputs(result: RunResult, out_dir: str | Path) -> tuple[Path, Path]:
    """verdicts.jsonl and summary.json under ``out_dir`` (each written to a temp file, then renamed)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    verdict_path, summary_path = out_dir / "verdicts.jsonl", out_dir / "summary.json"
    _atomic_write(verdict_path, "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in result.verdicts))
    _atomic_write(summary_path, json.dumps(result.summary, indent=2, ensure_ascii=False) + "\n")
    return verdict_path, summary_path


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
