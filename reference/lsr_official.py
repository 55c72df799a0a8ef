"""A plain re-implementation of the STRIDE-QA-Bench toolkit's LSR evaluation: the oracle of stridegen.eval.lsr.

``reference_evaluate`` re-implements the toolkit's evaluation (turingmotors/STRIDE-QA-Dataset,
benchmarks/STRIDE-QA-Bench/src/strideqa_bench/{benchmark.py, utils/parser.py, utils/metric_utils.py}) the way
the toolkit runs it: a loop over response records, one parse per (record, qa_type), dictionaries keyed by
"<group>_<time>_<subject>" for the localization pairs, a counting loop for the success rates, and a pandas
``pivot_table`` for TLC / MLSR. It is written independently of stridegen.eval. ``make_bench`` draws random
official-format response records and an annotation sheet; ``ours_official`` runs the same records through
stridegen.eval, in the reference's output shape. Used by tests/eval/lsr/test_lsr.py (parity) and
benchmarks/bench_lsr.py (the "official-style" side of the timing).
"""

from __future__ import annotations

import re
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.eval.lsr import bench as sb
from stridegen.eval.lsr.data import DIMENSIONS
from stridegen.eval.lsr.evaluate import evaluate
from stridegen.eval.lsr.tolerance import STRIDEQA_BENCH

# ============================================================================================ reference
OFFICIAL_TOLERANCE = {
    "tolerance": {
        "direction": {"range": 10, "fn": "angular_absolute"},
        "distance": {"range": 0.25, "fn": "relative"},
        "velocity": {"range": 0.2, "fn": "relative", "absolute_floor": {"threshold": 0.5}},
    }
}
REF_TIME = {"ego_distance_data": 0, "ego_speed_data": 0, "target_speed_data": 0, "target_bearing_angle_data": 0}
REF_SUBJECT = {
    "ego_distance_data": "target",
    "ego_speed_data": "ego",
    "target_speed_data": "target",
    "target_bearing_angle_data": "target",
}
for _t in (1, 2, 3):
    REF_TIME.update(
        {f"ego_distance_data_4d_t{_t}": _t, f"ego_speed_data_4d_t{_t}": _t, f"target_speed_data_4d_t{_t}": _t}
    )
    REF_SUBJECT.update(
        {
            f"ego_distance_data_4d_t{_t}": "target",
            f"ego_speed_data_4d_t{_t}": "ego",
            f"target_speed_data_4d_t{_t}": "target",
        }
    )


def ref_parse_unit(qa_type: str, text: str) -> tuple[float, str] | None:
    """The toolkit's parsers, written as plain per-unit loops with re.search: (value, unit text) or None."""
    if qa_type == "direction":
        m = re.search(r"([-+]?\d+(?:\.\d+)?)\s*-?\s*((?:°|deg(?:ree)?s?))", text, flags=re.I)
        if not m:
            return None
        angle = float(m.group(1))
        if angle < -180 or angle > 180:
            angle = ((angle + 180) % 360) - 180
        return angle, m.group(2)
    if qa_type == "distance":
        table = [
            ("inch", 0.0254, ["inch", "inches", "in"]),
            ("foot", 0.3048, ["foot", "feet", "ft"]),
            ("cm", 0.01, ["cm", "centimeters", "centimetres"]),
            ("m", 1.0, ["m", "meter", "meters", "metre", "metres"]),
            ("km", 1000.0, ["km", "kilometer", "kilometers", "kilometre", "kilometres"]),
        ]
        for _, factor, terms in table:
            alternation = "|".join(re.escape(t) for t in terms)
            m = re.search(rf"(\d+\.?\d*)\s*({alternation})\b(?!/)", text, re.I)
            if m:
                return float(m.group(1)) * factor, m.group(2)
        return None
    if qa_type == "velocity":
        velocity_table = [
            (
                1.0,
                [
                    "m/s",
                    "m s-1",
                    r"m s\^1",
                    "m s⁻1",
                    "mps",
                    "meter per second",
                    "metre per second",
                    "meters per second",
                    "metres per second",
                ],
            ),
            (
                1 / 3.6,
                [
                    "km/h",
                    "km h-1",
                    "kmh",
                    "kph",
                    "kilometer per hour",
                    "kilometre per hour",
                    "kilometers per hour",
                    "kilometres per hour",
                ],
            ),
            (1609.34 / 3600, ["mph", "mile per hour", "miles per hour"]),
        ]
        for factor, terms in velocity_table:
            for term in terms:
                term_regex = re.escape(term).replace("\\ ", "\\s+")
                m = re.search(rf"(\d+\.?\d*)\s*\b({term_regex})\b", text, re.I)
                if m:
                    return float(m.group(1)) * factor, m.group(2)
        return None
    raise ValueError(qa_type)


def ref_parse(qa_type: str, text: str) -> float | None:
    parsed = ref_parse_unit(qa_type, text)
    return None if parsed is None else parsed[0]


def ref_judge_details(qa_type: str, gt: Any, pred: Any, tol: dict[str, Any]) -> dict[str, Any]:
    """Success plus the detail record the toolkit stores for every judged value."""
    if not isinstance(pred, Real):
        return {"success": False, "reason": "invalid_prediction"}
    fn = tol["fn"]
    if fn == "relative":
        r = tol["range"]
        if "absolute_floor" in tol and gt < tol["absolute_floor"]["threshold"]:
            abs_tol = tol["absolute_floor"]["threshold"] * r
            return {
                "success": abs(pred - gt) <= abs_tol,
                "min_value": gt - abs_tol,
                "max_value": gt + abs_tol,
                "pred": pred,
                "gt": gt,
                "fn_used": "absolute_floor",
            }
        lo, hi = gt * (1 - r), gt * (1 + r)
        return {
            "success": lo <= pred <= hi,
            "min_value": lo,
            "max_value": hi,
            "pred": pred,
            "gt": gt,
            "fn_used": "relative",
        }
    if fn == "angular_absolute":
        diff = (pred - gt + 180) % 360 - 180
        return {
            "success": abs(diff) <= tol["range"],
            "tolerance_range": tol["range"],
            "diff": abs(diff),
            "pred": pred,
            "gt": gt,
        }
    raise ValueError(fn)


def ref_judge(qa_type: str, gt: Any, pred: float | None, tol: dict[str, Any]) -> bool:
    return bool(ref_judge_details(qa_type, gt, pred, tol)["success"])


def ref_group(question_id: str) -> str:
    return "g" + question_id.split("_g")[1] if "_g" in question_id else question_id


def reference_evaluate(
    responses: list[dict[str, Any]], config: dict[str, Any], annotation: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Success rates + temporal consistency, computed record by record with the toolkit's data flow: one raw
    result dict (with its judge details) per value, one LSR dict per distance / direction pair, a counting loop,
    then a DataFrame of every result and a pivot of the LSR rows for TLC / MLSR."""
    import pandas as pd

    raw: list[dict[str, Any]] = []
    for resp in responses:
        t = REF_TIME[resp["qa_category"]]
        subject = REF_SUBJECT[resp["qa_category"]]
        qid = resp.get("question_id", "")
        group = ref_group(qid)
        info = annotation.get(group, {})
        for qa_type, gt in resp.get("gt_value", {}).items():
            gt_unit = resp["unit"][qa_type]
            tol = config["tolerance"][qa_type]
            pred_text = resp.get("pred", "")
            parsed = ref_parse_unit(qa_type, pred_text)
            pred_value, pred_unit = parsed if parsed is not None else (None, None)
            details = ref_judge_details(qa_type, gt, pred_value, tol)
            details.update(tol)
            raw.append(
                {
                    "question_id": qid,
                    "group_id": group,
                    "object_type": info.get("object_type"),
                    "relation": info.get("relation"),
                    "qa_category": resp["qa_category"],
                    "time": t,
                    "ego_or_target": subject,
                    "qa_type": qa_type,
                    "gt": resp.get("gt"),
                    "pred": pred_text,
                    "gt_value": gt,
                    "pred_value": pred_value,
                    "gt_unit": gt_unit,
                    "pred_unit": pred_unit,
                    "success": details["success"],
                    "details": details,
                }
            )
    pairs: dict[str, dict[str, Any]] = {}
    for r in raw:
        key = f"{ref_group(r['question_id'])}_{r['time']}_{r['ego_or_target']}"
        entry = pairs.setdefault(
            key, {"time": r["time"], "ego_or_target": r["ego_or_target"], "distance": None, "direction": None}
        )
        if r["qa_type"] in ("distance", "direction"):
            entry[r["qa_type"]] = r
    lsr_rows = []
    for entry in pairs.values():
        dist, dirn = entry["distance"], entry["direction"]
        if dist is None and dirn is None:
            continue
        primary = dist if dist is not None else dirn
        d_gt, a_gt = (dist or {}).get("gt_value"), (dirn or {}).get("gt_value")
        d_pred, a_pred = (dist or {}).get("pred_value"), (dirn or {}).get("pred_value")
        d_det = ref_judge_details("distance", d_gt, d_pred, config["tolerance"]["distance"])
        a_det = ref_judge_details("direction", a_gt, a_pred, config["tolerance"]["direction"])
        ok = bool(d_det.get("success", False) and a_det.get("success", False))
        lsr_rows.append(
            {
                "question_id": primary["question_id"],
                "group_id": primary["group_id"],
                "object_type": primary["object_type"],
                "relation": primary["relation"],
                "qa_category": primary["qa_category"],
                "time": entry["time"],
                "ego_or_target": entry["ego_or_target"],
                "qa_type": "lsr",
                "gt_value": {"distance": d_gt, "direction": a_gt},
                "pred_value": {"distance": d_pred, "direction": a_pred},
                "success": ok,
                "details": {"distance_details": d_det, "direction_details": a_det},
            }
        )
    raw.extend(lsr_rows)
    stats: dict[str, dict[int, list[int]]] = {}
    for r in raw:
        name = "lsr" if r["qa_type"] == "lsr" else f"{r['ego_or_target']}_{r['qa_type']}"
        cell = stats.setdefault(name, {}).setdefault(r["time"], [0, 0])
        cell[0] += 1
        cell[1] += int(bool(r["success"]))
    out: dict[str, Any] = {}
    for name, per_t in stats.items():
        rows: list[dict[str, Any]] = []
        n_all = k_all = 0
        for t, (n, k) in sorted(per_t.items()):
            rows.append({"time": t, "success_rate": round(k / n, 8), "sample_size": n})
            n_all += n
            k_all += k
        rows.append({"time": "avg", "success_rate": round(k_all / n_all, 8), "sample_size": n_all})
        out[name] = rows
    df_all = pd.DataFrame(raw)
    df = df_all[df_all.qa_type == "lsr"]
    pivot = (
        df.pivot_table(index=["group_id", "relation"], columns="time", values="success", aggfunc="first")
        .fillna(False)
        .astype(bool)
    )
    temporal: dict[str, dict[str, float]] = {}

    def add(label: str, col: str, series: Any) -> None:
        temporal.setdefault(label, {})[col] = float(series.mean())
        for rel, value in series.groupby(level="relation").mean().items():
            temporal.setdefault(rel, {})[col] = float(value)

    for k in (1, 2, 3):
        add("Overall", f"TLC@{k}", pivot[0] & pivot.loc[:, list(range(1, k + 1))].all(axis=1))
    add("Overall", "TLC", pivot.loc[:, [0, 1, 2, 3]].all(axis=1))
    add("Overall", "MLSR", pivot.mean(axis=1))
    out["temporal_consistency"] = temporal
    return out


# ============================================================================================ generator
RELATIONS = ["Overtake", "Oncoming_Pass", "Maintain_State", "Path_Divergence_at_Intersection", None]


def _fmt(x: float, rng: np.random.Generator) -> str:
    # model answers mostly carry two decimals (the bench prompt's examples do), so most answers are distinct
    return f"{x:.{int(rng.choice([0, 1, 2], p=[0.1, 0.2, 0.7]))}f}"


def _distance_text(gt: float, rng: np.random.Generator) -> str:
    d = gt * rng.choice([1.0, 0.75, 1.25, 0.8, 1.3, rng.uniform(0.3, 2.0)])
    form = int(rng.integers(0, 9))
    return [
        f"Region [0] is {_fmt(d, rng)} meters away.",
        f"{_fmt(d, rng)}m",
        f"about {_fmt(d / 0.3048, rng)} feet",
        f"{_fmt(d * 100, rng)} cm",
        f"It is {_fmt(d, rng)} metres ahead, moving at 3 m/s.",
        "I can't tell.",
        f"{_fmt(d, rng)}",
        f"{_fmt(d / 1000, rng)} km",
        f"roughly {_fmt(d, rng)} m in front",
    ][form]


def _direction_text(gt: float, rng: np.random.Generator) -> str:
    a = gt + rng.choice([0.0, 10.0, -10.0, 10.5, rng.uniform(-40, 40), 360.0])
    form = int(rng.integers(0, 7))
    return [
        f"at {_fmt(a, rng)} degrees",
        f"{_fmt(a, rng)}°",
        f"a {_fmt(a, rng)}-degree angle",
        "at 2 o'clock",
        f"bearing {_fmt(a, rng)} deg",
        "unknown",
        f"{_fmt(a, rng)} DEGREES",
    ][form]


def _speed_text(gt: float, rng: np.random.Generator) -> str:
    v = max(gt * rng.choice([1.0, 0.8, 1.2, rng.uniform(0, 2)]) + rng.choice([0.0, 0.1, -0.1, 0.5]), 0.0)
    form = int(rng.integers(0, 8))
    return [
        f"{_fmt(v, rng)} m/s",
        f"{_fmt(v * 3.6, rng)} km/h",
        f"{_fmt(v / 0.44704, rng)} mph",
        f"Its speed is {_fmt(v, rng)} meters per second.",
        f"{_fmt(v, rng)}m/s",
        "It is stationary.",
        f"{_fmt(v, rng)} mps at 10 m",
        f"{_fmt(v * 3.6, rng)} kph",
    ][form]


def make_bench(
    n_groups: int, seed: int, drop_prob: float = 0.05
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Random official-format response records and annotation sheet (some groups unlabelled, some records
    dropped so that a few localization pairs are incomplete)."""
    rng = np.random.default_rng(seed)
    responses: list[dict[str, Any]] = []
    sheet: dict[str, dict[str, Any]] = {}
    q = 0

    def emit(category: str, group: int, gt: dict[str, float], pred: str) -> None:
        nonlocal q
        q += 1
        if rng.random() < drop_prob:
            return
        responses.append(
            {
                "question_id": f"q{q:08d}_g{group:05d}",
                "qa_category": category,
                "gt_value": gt,
                "unit": {k: "x" for k in gt},
                "pred": pred,
            }
        )

    for g in range(n_groups):
        rel = RELATIONS[int(rng.integers(0, len(RELATIONS)))]
        sheet[f"g{g:05d}"] = {"object_type": "car", "relation": rel, "out_of_view": -1}
        for t in range(4):
            d = float(np.round(rng.uniform(2, 60), 2))
            a = float(np.round(rng.uniform(-180, 180), 1))
            ev = float(np.round(rng.choice([0.0, 0.3, 0.45, 0.5, 0.9, rng.uniform(0, 20)]), 2))
            tv = float(np.round(rng.choice([0.0, 0.2, 0.49, 0.5, 1.0, rng.uniform(0, 15)]), 2))
            if t == 0:
                emit("ego_distance_data", g, {"distance": d}, _distance_text(d, rng))
                emit("target_bearing_angle_data", g, {"direction": a}, _direction_text(a, rng))
                emit("ego_speed_data", g, {"velocity": ev}, _speed_text(ev, rng))
                emit("target_speed_data", g, {"velocity": tv}, _speed_text(tv, rng))
            else:
                both = f"{_distance_text(d, rng)} {_direction_text(a, rng)}"
                emit(f"ego_distance_data_4d_t{t}", g, {"distance": d, "direction": a}, both)
                emit(f"ego_speed_data_4d_t{t}", g, {"velocity": ev}, _speed_text(ev, rng))
                emit(f"target_speed_data_4d_t{t}", g, {"velocity": tv}, _speed_text(tv, rng))
    return responses, sheet


# ============================================================================================ stridegen side


def ours_official(responses: list[dict[str, Any]], sheet: dict[str, dict[str, Any]]) -> dict[str, Any]:
    items, _ = sb.build_items([(Path("mem"), responses)], STRIDEQA_BENCH, sheet)
    metrics = evaluate(items, STRIDEQA_BENCH).metrics()
    out = {k: metrics[k] for k in DIMENSIONS + ("lsr",) if k in metrics}
    out["temporal_consistency"] = {
        row["relation"]: {k: v for k, v in row.items() if k != "relation"} for row in metrics["temporal_consistency"]
    }
    return out
