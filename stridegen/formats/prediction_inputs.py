"""Which predictions an evaluation scored, and the model that wrote them: the ``inputs`` that ``stridegen eval lsr``
and ``stridegen eval spatial`` record in their ``metrics.json`` (the report labels each result with its model and
pairs a model with its blind baseline from them).

``stridegen predict`` writes ``predictions.jsonl`` with a ``predict.json`` manifest beside it (docs/predict.md:
``predictor: {name, options: {model, ...}}``, ``blind``); when that manifest is there and readable, its model, blind
flag and predictor name are copied, so a reader needs no second lookup. Predictions written by other means have
no model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stridegen.core.errors import DataFormatError
from stridegen.formats.textfile import load_json

PREDICT_MANIFEST = "predict.json"  # the manifest stridegen predict writes beside predictions.jsonl


def predictions_model(pred_path: str | Path) -> dict[str, Any] | None:
    """``{model, blind, predictor}`` from the ``predict.json`` beside ``pred_path``; None when there is none or it
    is not a predict manifest (an unreadable manifest, or one over the size or depth limits of
    stridegen.core.bounded_json, names no model rather than failing the evaluation)."""
    manifest = Path(pred_path).parent / PREDICT_MANIFEST
    if not manifest.is_file():
        return None
    try:
        doc = load_json(manifest, "predict manifest", DataFormatError)
    except DataFormatError:
        return None
    predictor = doc.get("predictor") if isinstance(doc, dict) else None
    if not isinstance(predictor, dict):
        return None
    options = predictor.get("options")
    name = str(predictor.get("name", ""))
    model = options.get("model") if isinstance(options, dict) else None
    return {"model": str(model) if model is not None else name, "blind": bool(doc.get("blind")), "predictor": name}


def prediction_inputs(pred_path: str | Path) -> dict[str, Any]:
    """``{"predictions": <the path as given>}``, plus ``"model"`` (``predictions_model``) when a predict manifest is
    beside it."""
    out: dict[str, Any] = {"predictions": str(pred_path)}
    model = predictions_model(pred_path)
    if model is not None:
        out["model"] = model
    return out
