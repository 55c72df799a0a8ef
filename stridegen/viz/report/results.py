"""Evaluation results for the report, read from the JSON files the evaluators write (no evaluator is imported:
``viz`` sits below ``eval`` in the layers).

A ``--eval`` path is a file or a folder (its ``*.json`` files). A JSON document is recognised by its keys:

- ``lsr``: ``stridegen eval lsr``'s ``metrics.json`` (``profile``, ``breakdowns``, ``lsr``); the polar plot
  ``lsr_polar.png`` beside it is shown as it is (the per-question positions are not in the JSON);
- ``spatial``: ``stridegen eval spatial``'s ``metrics.json`` (``parser``, ``tolerance``, ``overall``,
  ``by_category``); its ``items.jsonl`` beside it gives the worst answers (``stridegen.viz.report.worst_answers``),
  as ``eval lsr``'s does;
- ``detection``: ``stridegen eval detection --out`` (``label_aps``, ``label_tp_errors``, ``nd_score``); PR
  curves come from a ``metric_data`` key or a ``metrics_details.json`` beside it (the nuScenes devkit layout:
  ``"<class>:<threshold>" -> {recall, precision, ...}``), when present;
- ``tracking``: ``stridegen eval tracking --out`` (``label_metrics``, ``metrics_details``);
- ``judges``: ``stridegen judge run``'s ``summary.json`` (``overall``, ``groups``, ``ci``); the score
  distribution comes from ``verdicts.jsonl`` beside it, when present;
- ``agreement``: ``stridegen judge agreement --out`` (``n_matched``, ``scales``, ``metrics``).

A file given by name that is none of these is an error; in a folder such files are skipped (and listed).

``lsr`` and ``spatial`` results name the predictions they scored in ``inputs`` (``predictions``, and ``model``:
``{model, blind, predictor}`` when ``stridegen predict`` wrote them); ``EvalResult.model`` and ``blind`` read them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import DataFormatError
from stridegen.formats.textfile import iter_jsonl, load_json

KINDS: dict[str, tuple[str, ...]] = {
    "lsr": ("profile", "breakdowns", "lsr"),
    "spatial": ("parser", "tolerance", "overall", "by_category"),
    "detection": ("label_aps", "label_tp_errors", "nd_score"),
    "tracking": ("label_metrics", "metrics_details"),
    "judges": ("overall", "groups", "ci"),
    "agreement": ("n_matched", "scales", "metrics"),
}
SCORE_BINS = np.linspace(0.0, 100.0, 21)  # judge scores 0-100 in 5-point bins
_HINT = "; ".join(f"{kind}: keys {', '.join(keys)}" for kind, keys in KINDS.items())


@dataclass
class EvalResult:
    """One evaluation result: its kind, the file it came from, its JSON and what was read beside it."""

    kind: str
    source: Path
    data: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=dict)

    def _model(self) -> dict[str, Any]:
        inputs = self.data.get("inputs")
        model = inputs.get("model") if isinstance(inputs, dict) else None
        return model if isinstance(model, dict) else {}

    @property
    def model(self) -> str | None:
        """The model whose predictions were scored (``inputs.model.model``), else the predictions file's name
        (``inputs.predictions``), else None."""
        name = self._model().get("model")
        if name:
            return str(name)
        inputs = self.data.get("inputs")
        pred = inputs.get("predictions") if isinstance(inputs, dict) else None
        return str(pred) if pred else None

    @property
    def blind(self) -> bool:
        """True when the predictions were answered without the images (``inputs.model.blind``)."""
        return bool(self._model().get("blind"))


@dataclass
class EvalInputs:
    results: list[EvalResult]
    skipped: list[tuple[Path, str]]  # (file, why) of folder files that are not results


def classify(doc: object) -> str | None:
    if not isinstance(doc, dict):
        return None
    for kind, keys in KINDS.items():
        if all(k in doc for k in keys):
            return kind
    return None


def _read_json(path: Path) -> object:
    """The JSON of a result file, read within the limits on inputs (``formats.textfile.load_json``: size, NUL
    byte, nesting depth; docs/cli.md "Limits on inputs"); DataFormatError naming the file and the line otherwise."""
    return load_json(path, "result file", DataFormatError)


def jsonl_lines(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, value) of each non-blank line of a JSON Lines file, within the same limits (an object that
    repeats a key is an error too); DataFormatError naming the file and the line otherwise."""
    yield from iter_jsonl(path, "file", DataFormatError, allow_empty=True)


def _verdict_scores(path: Path) -> dict[str, np.ndarray]:
    """Histogram counts (SCORE_BINS) of the ok verdicts' ``score_100``, overall and per category."""
    counts: dict[str, np.ndarray] = {}
    for _, v in jsonl_lines(path):
        if not isinstance(v, dict) or v.get("status", "ok") != "ok":
            continue
        score = v.get("score_100")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            continue
        b = min(int(np.searchsorted(SCORE_BINS, float(score), side="right")) - 1, len(SCORE_BINS) - 2)
        for key in ("all", f"category:{v.get('category', '')}"):
            counts.setdefault(key, np.zeros(len(SCORE_BINS) - 1, dtype=np.int64))[max(b, 0)] += 1
    return counts


def _extras(kind: str, path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    here = path.parent
    extras: dict[str, Any] = {}
    if kind == "lsr":
        polar = here / "lsr_polar.png"
        if polar.is_file():
            extras["polar_png"] = polar.read_bytes()
    elif kind == "detection":
        details = doc.get("metric_data")
        if details is None and (here / "metrics_details.json").is_file():
            details = _read_json(here / "metrics_details.json")
        if isinstance(details, dict):
            extras["metric_data"] = details
    elif kind == "judges":
        verdicts = here / "verdicts.jsonl"
        if verdicts.is_file():
            extras["scores"] = _verdict_scores(verdicts)
    return extras


def load_result(path: Path, in_folder: bool = False) -> EvalResult | None:
    """The result in one JSON file; None for an unrecognised file inside a folder, an error for a named one."""
    doc = _read_json(path)
    kind = classify(doc)
    if kind is None:
        if in_folder:
            return None
        raise DataFormatError(path, f"not an evaluation result stridegen knows ({_HINT})")
    assert isinstance(doc, dict)
    return EvalResult(kind, path, doc, _extras(kind, path, doc))


def load_results(paths: list[Path]) -> EvalInputs:
    """Every result in the given files and folders, in the order given (a folder's files by name)."""
    results: list[EvalResult] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_dir():
            found = 0
            for file in sorted(path.rglob("*.json")):
                if file.name == "metrics_details.json":
                    continue  # read with the detection summary beside it
                result = load_result(file, in_folder=True)
                if result is None:
                    skipped.append((file, "not an evaluation result"))
                else:
                    results.append(result)
                    found += 1
            if not found:
                raise DataFormatError(path, f"folder holds no evaluation result JSON ({_HINT})")
        elif path.is_file():
            result = load_result(path)
            assert result is not None
            results.append(result)
        else:
            raise DataFormatError(path, "no such file or folder")
    return EvalInputs(results, skipped)
