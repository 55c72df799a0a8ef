"""Run a judge method over items: cache lookup, bounded-concurrency requests, verdicts, summary.

Every request is keyed by the hash of its full payload (model, messages, sampling, template version); a
cached key is never sent again, so a killed run restarted with the same cache directory only sends what is
missing. Failed requests are logged as errors, never cached; items whose requests failed get status "error"
and are left out of every mean, but counted in their groups. Before an item is planned its answer(s) are cut
to ``ctx.max_answer_chars`` and, in robust mode, guarded (safety.guard); both are recorded in the verdict.
An endpoint that refuses the credentials (HTTP 401/403) stops the run at once (ChatAuthError). Everything
returned or written is redacted (redact.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypedDict

import numpy as np
from pydantic import ValidationError

from stridegen.core.errors import PredictionFormatError
from stridegen.eval.judges.cache import VerdictCache
from stridegen.eval.judges.methods import FAITHFUL_WARNING, Judge, JudgeContext
from stridegen.eval.judges.records import JudgeError, JudgeItem, RequestSpec, VerdictParseError
from stridegen.eval.judges.safety import guard, looks_like_injection
from stridegen.llm.client import ChatClient, CostMeter, estimate_prompt_tokens
from stridegen.llm.records import ChatAuthError, ChatRequestError
from stridegen.llm.redact import redact_obj

# Summary confidence intervals of the mean 0-100 score: percentile bootstrap (Efron & Tibshirani 1993, "An
# Introduction to the Bootstrap", ch. 13), seeded. Chosen over Student's t because judge scores are bounded and
# often two- or three-valued (CEE 0/100, pairwise 0/50/100): a percentile interval stays inside the range the
# scores can take, a t-interval does not. With fewer than ~20 items it is too narrow (ch. 14): read it as rough.
CI_N_BOOT = 2000
CI_ALPHA = 0.05
CI_SEED = 0
_MAX_RECORDED_SPANS = 5


def load_items(path: str | Path) -> list[JudgeItem]:
    """Items from a JSONL file (one JSON object per line; blank lines skipped). Ids must be unique; an integer id
    is read as its decimal text. A UTF-8 byte-order mark is tolerated; a missing or empty file, another encoding and
    bad lines are PredictionFormatErrors naming the file and the line (stridegen.formats.textfile)."""
    from stridegen.formats.textfile import iter_jsonl, shown

    path = Path(path)
    items: list[JudgeItem] = []
    first_line: dict[str, int] = {}
    for lineno, raw in iter_jsonl(path, "items file", PredictionFormatError):
        if not isinstance(raw, dict):
            raise PredictionFormatError(path, f"line {lineno}: expected a JSON object, got {type(raw).__name__}")
        if isinstance(raw.get("id"), int) and not isinstance(raw.get("id"), bool):
            raw["id"] = str(raw["id"])
        try:
            item = JudgeItem.model_validate(raw)
        except ValidationError as exc:
            raise PredictionFormatError(path, f"line {lineno}: {validation_summary(exc)}") from None
        if item.id in first_line:
            raise PredictionFormatError(
                path, f"line {lineno}: duplicate id {shown(item.id)} (first on line {first_line[item.id]})"
            )
        first_line[item.id] = lineno
        items.append(item)
    return items


def validation_summary(exc: ValidationError) -> str:
    """A pydantic error on one line: ``field 'answer': Field required; field 'id': Input should be ...``."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "record"
        parts.append(f"field {where!r}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


@dataclass
class _Planned:
    item: JudgeItem  # as read; flags and records are about this text
    specs: list[RequestSpec] = field(default_factory=list)
    error: str | None = None
    handling: dict[str, dict[str, Any]] = field(default_factory=dict)  # answer field -> what was done to it


@dataclass
class RunResult:
    verdicts: list[dict[str, Any]]
    summary: dict[str, Any]
    sent: int = 0
    cached: int = 0


def truncation_note(kept: int, total: int) -> str:
    """What follows a cut answer in the prompt (no bracket, brace or verdict word: nothing the guard removes)."""
    return f"\n… (answer truncated: the first {kept} of {total} characters are shown)"


def prepare_answer(text: str, mode: str, cap: int | None) -> tuple[str, dict[str, Any]]:
    """The answer text a method is given, and the record of what was done to it.

    The written answer is cut to ``cap`` characters; in robust mode it is then guarded (normalised, markup
    excised, neutralised: safety.guard), and cut again if guarding made it longer (NFKC can expand a character
    up to 18 times). A cut answer ends with ``truncation_note``. Record keys: ``truncated`` {chars, kept},
    ``removed`` (number of excised spans) and ``removed_text`` (the first few, shortened),
    ``format_chars_removed``, ``nfkc`` (NFKC changed the text).
    """
    record: dict[str, Any] = {}
    shown = text
    if cap is not None and cap > 0 and len(text) > cap:
        shown = text[:cap]
        record["truncated"] = {"chars": len(text), "kept": cap}
    if mode == "robust":
        g = guard(shown)
        shown = g.text
        if cap is not None and cap > 0 and len(shown) > cap:
            shown = shown[:cap]
            record["truncated"] = {"chars": len(text), "kept": cap}
        if g.removed:
            record["removed"] = len(g.removed)
            record["removed_text"] = [r[:120] for r in g.removed[:_MAX_RECORDED_SPANS]]
        if g.format_chars:
            record["format_chars_removed"] = g.format_chars
        if g.normalised:
            record["nfkc"] = True
    if "truncated" in record:
        shown += truncation_note(len(shown), len(text))
    return shown, record


def prepare_item(item: JudgeItem, mode: str, cap: int | None) -> tuple[JudgeItem, dict[str, dict[str, Any]]]:
    """``item`` with its answer (and ``answer_b``) as the judge will see them, and what was done to each."""
    updates: dict[str, str] = {}
    handling: dict[str, dict[str, Any]] = {}
    for name in ("answer", "answer_b"):
        text = getattr(item, name)
        if text is None:
            continue
        shown, record = prepare_answer(text, mode, cap)
        if shown != text:
            updates[name] = shown
        if record:
            handling[name] = record
    return (item.model_copy(update=updates) if updates else item), handling


def plan(items: list[JudgeItem], method: Judge, mode: str, ctx: JudgeContext) -> list[_Planned]:
    planned = []
    for item in items:
        shown, handling = prepare_item(item, mode, ctx.max_answer_chars)
        try:
            planned.append(_Planned(item, method.requests(shown, mode, ctx), handling=handling))
        except JudgeError as exc:
            planned.append(_Planned(item, error=str(exc), handling=handling))
    return planned


def _image_path_of(item: JudgeItem, base_dir: Path) -> Path | None:
    """The file of ``item``'s image as a method resolves it (relative paths start at ``base_dir``), or None."""
    if not item.image:
        return None
    path = Path(item.image)
    return path if path.is_absolute() else base_dir / path


def _with_image_paths(messages: list[dict[str, Any]], urls: dict[str, str]) -> list[dict[str, Any]]:
    """Messages for the requests file: an inline image whose data URL is in ``urls`` (data URL -> path) becomes
    ``{"path": ..., "url_chars": n}``; any other is shortened to its first 40 characters and named by its hash."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for p in content:
                if p.get("type") == "image_url":
                    url = p["image_url"]["url"]
                    if url in urls:
                        ref = {"path": urls[url]}
                    else:
                        ref = {"url": url[:40] + "...", "url_sha256": hashlib.sha256(url.encode()).hexdigest()}
                    parts.append({"type": "image_url", "image_url": {**ref, "url_chars": len(url)}})
                else:
                    parts.append(p)
            content = parts
        out.append({**m, "content": content})
    return out


def dry_run(
    planned: list[_Planned],
    cache: VerdictCache,
    model: str,
    meter: CostMeter,
    image_tokens: int,
    requests_out: TextIO,
    base_dir: Path = Path("."),
    image_root: Path | None = None,
) -> dict[str, Any]:
    """Write every request that would be sent (cached ones skipped) to ``requests_out``, one JSON object a line,
    and return the estimate: items, requests, cached, not sendable, distinct images, estimated prompt tokens, the
    output-token ceiling and the cost bound they give.

    A request line is {item, tag, key, model, sampling, est_prompt_tokens, max_output_tokens, messages}; an inline
    image in ``messages`` names its file instead of its bytes (relative to ``image_root`` when under it). An item
    whose requests cannot be built is a line {item, not_sendable}."""
    from stridegen.llm.client import image_part

    n_req = n_cached = n_unsendable = prompt_tokens = output_tokens = 0
    urls: dict[str, str] = {}  # data URL of an item image -> its path as written
    seen_paths: set[Path] = set()
    images_sent: set[str] = set()
    for p in planned:
        if p.error:
            n_unsendable += 1
            requests_out.write(json.dumps({"item": p.item.id, "not_sendable": p.error}, ensure_ascii=False) + "\n")
            continue
        path = _image_path_of(p.item, base_dir)
        if path is not None and path not in seen_paths and path.is_file():
            seen_paths.add(path)
            shown = _relative_to(path, image_root)
            urls[image_part(path)["image_url"]["url"]] = shown
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
            messages = _with_image_paths(spec.messages, urls)
            images_sent.update(_image_refs(messages))
            line = {
                "item": p.item.id,
                "tag": spec.tag,
                "key": key,
                "model": model,
                "sampling": spec.sampling,
                "est_prompt_tokens": est_in,
                "max_output_tokens": est_out,
                "messages": messages,
            }
            requests_out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return {
        "items": len(planned),
        "not_sendable": n_unsendable,
        "requests": n_req,
        "cached": n_cached,
        "distinct_images": len(images_sent),
        "est_prompt_tokens": prompt_tokens,
        "max_output_tokens": output_tokens,
        "est_cost_usd_upper": round(meter.cost(prompt_tokens, output_tokens), 6),
    }


def _relative_to(path: Path, root: Path | None) -> str:
    """``path`` relative to ``root`` when it lies under it, else as given."""
    if root is not None:
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(path)


def _image_refs(messages: list[dict[str, Any]]) -> list[str]:
    """The image references (path, else shortened URL) of messages written by ``_with_image_paths``."""
    return [
        p["image_url"].get("path") or p["image_url"]["url_sha256"]
        for m in messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


def run_judge(
    items: list[JudgeItem],
    method: Judge,
    mode: str,
    ctx: JudgeContext,
    cache: VerdictCache,
    client: ChatClient,
    concurrency: int = 4,
    ci_n_boot: int = CI_N_BOOT,
    ci_alpha: float = CI_ALPHA,
    ci_seed: int = CI_SEED,
) -> RunResult:
    """Judge ``items``; returns one verdict per item (status ok / error) and the summary.

    Raises ChatAuthError, after the requests already in flight, when the endpoint answers 401 or 403: no
    further request is sent. In faithful mode the summary's ``warnings`` say that it is open to injection.
    """
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
    stop = threading.Event()
    refused: list[ChatAuthError] = []
    attempted = [0]
    lock = threading.Lock()

    def work(job: tuple[str, RequestSpec, str]) -> None:
        if stop.is_set():  # credentials refused: nothing more is sent
            return
        with lock:
            attempted[0] += 1
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
        except ChatAuthError as exc:
            stop.set()
            failures[key] = str(exc)
            cache.record_error(key, exc.kind, str(exc), status=exc.status, **context)
            with lock:
                refused.append(exc)
        except ChatRequestError as exc:
            failures[key] = str(exc)
            cache.record_error(key, exc.kind, str(exc), **context)
        except Exception as exc:  # an unexpected failure loses one request, never the whole run
            failures[key] = f"{type(exc).__name__}: {exc}"
            cache.record_error(key, "unexpected", failures[key], **context)

    if todo:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            list(pool.map(work, todo))
    if refused:
        first = refused[0]
        raise ChatAuthError(
            first.status,
            f"{str(first).removeprefix('auth: ')}; run stopped after {attempted[0]} of {len(todo)} request(s)",
        )

    verdicts = [redact_obj(_verdict(p, method, mode, ctx, cache, model, failures)) for p in planned]
    summary = summarise(verdicts, ci_n_boot, ci_alpha, ci_seed)
    # "usage": what this run spent; "verdict_usage" (from summarise): what all ok verdicts cost, cached included.
    summary.update(
        {
            "method": method.name,
            "mode": mode,
            "model": model,
            "max_answer_chars": ctx.max_answer_chars,
            "requests_sent": len(todo),
            "requests_cached": n_cached,
            "usage": client.meter.summary(),
            "warnings": [FAITHFUL_WARNING] if mode == "faithful" else [],
        }
    )
    return RunResult(verdicts, redact_obj(summary), sent=len(todo), cached=n_cached)


def _item_groups(method: Judge, item: JudgeItem) -> list[str]:
    """The method's groups of an item (``category:<c>`` for a plugin without ``groups`` or that fails on it)."""
    groups = getattr(method, "groups", None)
    try:
        return list(groups(item)) if groups is not None else [f"category:{item.category}"]
    except JudgeError:
        return [f"category:{item.category}"]


def _verdict(
    p: _Planned,
    method: Judge,
    mode: str,
    ctx: JudgeContext,
    cache: VerdictCache,
    model: str,
    failures: dict[str, str],
) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": p.item.id,
        "method": method.name,
        "mode": mode,
        "category": p.item.category,
        "template_version": method.template_version,
        "groups": _item_groups(method, p.item),
    }
    if p.handling:
        base["answer_handling"] = p.handling
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
    if any("truncated" in h for h in p.handling.values()):
        flags.append("answer_truncated")
    if any("removed" in h for h in p.handling.values()):
        flags.append("answer_markup_removed")
    return {
        **base,
        "status": "ok",
        "score": verdict["score"],
        "score_100": verdict["score_100"],
        "groups": verdict.get("groups", base["groups"]),
        "flags": flags,
        "details": verdict.get("details", {}),
        "partial_failures": failed,
        "usage": usage,
        "judge_replies": raw,
    }


class ScoreStats(TypedDict):
    """Count, mean, sample standard deviation and bootstrap interval of 0-100 scores (None where undefined)."""

    n: int
    mean_100: float | None
    std_100: float | None
    ci_low_100: float | None
    ci_high_100: float | None


def bootstrap_mean_ci(
    values: list[float], n_boot: int = CI_N_BOOT, alpha: float = CI_ALPHA, seed: int = CI_SEED
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean (Efron & Tibshirani 1993, ch. 13): the alpha/2 and 1 - alpha/2
    quantiles of the means of ``n_boot`` resamples drawn with replacement (numpy's default "linear" quantile).
    None when there are fewer than 2 values or no replicates."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or n_boot <= 0:
        return None, None
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    chunk = max(1, 2_000_000 // len(x))  # bound the index matrix to ~16 MB
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        means[start : start + size] = x[rng.integers(0, len(x), size=(size, len(x)))].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def summarise(
    verdicts: list[dict[str, Any]], ci_n_boot: int = CI_N_BOOT, ci_alpha: float = CI_ALPHA, ci_seed: int = CI_SEED
) -> dict[str, Any]:
    """Means over ok verdicts only (overall and per group), with bootstrap intervals; error counts per group
    alongside (an error verdict counts in the groups its item belongs to), never averaged in."""
    ok = [v for v in verdicts if v["status"] == "ok"]
    groups: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    errors_by_category: dict[str, int] = defaultdict(int)
    for v in verdicts:
        if v["status"] != "ok":
            errors_by_category[f"category:{v['category']}"] += 1
            for g in v.get("groups") or [f"category:{v['category']}"]:
                errors[g] += 1
                groups.setdefault(g, [])
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
            return {"n": n, "mean_100": None, "std_100": None, "ci_low_100": None, "ci_high_100": None}
        mean = sum(values) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1)) if n > 1 else None
        lo, hi = bootstrap_mean_ci(values, ci_n_boot, ci_alpha, ci_seed)
        return {"n": n, "mean_100": mean, "std_100": sd, "ci_low_100": lo, "ci_high_100": hi}

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
        "errors_by_category": dict(sorted(errors_by_category.items())),
        "flags": dict(sorted(flags.items())),
        "ci": {
            "method": "percentile bootstrap of the mean",
            "level": 1 - ci_alpha,
            "n_boot": ci_n_boot,
            "seed": ci_seed,
        },
    }


def write_outputs(result: RunResult, out_dir: str | Path) -> tuple[Path, Path]:
    """verdicts.jsonl and summary.json under ``out_dir`` (each written to a temp file, then renamed)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    verdict_path, summary_path = out_dir / "verdicts.jsonl", out_dir / "summary.json"
    verdicts = redact_obj(result.verdicts)
    atomic_write_text(
        verdict_path, "".join(json.dumps(v, ensure_ascii=False, allow_nan=False) + "\n" for v in verdicts)
    )
    atomic_write_text(summary_path, json.dumps(redact_obj(result.summary), indent=2, ensure_ascii=False) + "\n")
    return verdict_path, summary_path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file (fsynced, then renamed into place)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
