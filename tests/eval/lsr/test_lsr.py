"""LSR metrics: hand-computed cases, parity with a plain re-implementation of the official toolkit's logic,
property tests, bad input.

The reference is ``reference_evaluate`` of reference/lsr_official.py: the STRIDE-QA-Bench toolkit's
evaluation re-implemented the way the toolkit runs it, independently of stridegen.eval (it is also the
"official-style" side of benchmarks/bench_lsr.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reference.lsr_official import (
    OFFICIAL_TOLERANCE,
    make_bench,
    ours_official,
    ref_judge,
    ref_parse,
    reference_evaluate,
)
from stridegen.core.errors import ConfigError, PredictionFormatError
from stridegen.eval.lsr import bench as sb
from stridegen.eval.lsr.answer_parser import parse_many
from stridegen.eval.lsr.data import read_predictions_jsonl, read_records_jsonl
from stridegen.eval.lsr.evaluate import evaluate
from stridegen.eval.lsr.items import ItemBuilder, items_from_records
from stridegen.eval.lsr.official_grammar import parse_official
from stridegen.eval.lsr.tolerance import PAPER, STRIDEQA_BENCH, Rule, load_profile, profile_from_mapping
from stridegen.formats.lsr_record import LsrRecord
from tests.shared_data import REPO

FIXTURE = Path(__file__).parent / "fixtures" / "strideqa_bench_mini"

# ============================================================================================ hand-computed


def _avg(metrics: dict[str, Any], name: str) -> float:
    return metrics[name][-1]["success_rate"]


def _per_t(metrics: dict[str, Any], name: str) -> list[tuple[Any, float, int]]:
    return [(r["time"], r["success_rate"], r["sample_size"]) for r in metrics[name]]


def _fixture_metrics(profile: Any) -> dict[str, Any]:
    sheet = sb.read_annotation_sheet(FIXTURE / "annotation_sheet.csv")
    items, report = sb.build_items(
        sb.load_responses(FIXTURE / "responses"), profile, sheet, sb.load_annotation_questions(FIXTURE)
    )
    assert report["skipped"] == {} and report["missing_predictions"] == 0
    return evaluate(items, profile).metrics()


def test_fixture_hand_computed_strideqa_bench() -> None:
    m = _fixture_metrics(STRIDEQA_BENCH)
    assert _per_t(m, "target_distance") == [(0, 1.0, 3), (1, 0.66666667, 3), (2, 0.5, 2), (3, 0.5, 2), ("avg", 0.7, 10)]
    # t=2 "2 o'clock" has no degree form: the official grammar cannot read it.
    assert _per_t(m, "target_direction") == [(0, 1.0, 3), (1, 1.0, 3), (2, 0.5, 2), (3, 0.5, 2), ("avg", 0.8, 10)]
    assert _per_t(m, "ego_velocity") == [(0, 1.0, 2), (1, 1.0, 2), (2, 1.0, 2), (3, 0.5, 2), ("avg", 0.875, 8)]
    # gt 0.8 m/s, answer 1.2 m/s: relative 20 % fails (the official floor starts below 0.5 m/s).
    assert _per_t(m, "target_velocity") == [(0, 1.0, 2), (1, 0.5, 2), (2, 1.0, 2), (3, 1.0, 2), ("avg", 0.875, 8)]
    assert _per_t(m, "lsr") == [(0, 1.0, 3), (1, 0.66666667, 3), (2, 0.0, 2), (3, 0.5, 2), ("avg", 0.6, 10)]
    tc = {r["relation"]: r for r in m["temporal_consistency"]}
    # Group g00003 has no relation: the official pivot leaves it out of TLC / MLSR.
    assert tc["Overall"] == {"relation": "Overall", "TLC@1": 0.5, "TLC@2": 0.0, "TLC@3": 0.0, "TLC": 0.0, "MLSR": 0.5}
    assert tc["Oncoming_Pass"]["TLC@1"] == 1.0 and tc["Overtake"]["TLC@1"] == 0.0
    assert tc["Oncoming_Pass"]["MLSR"] == 0.5 and tc["Overtake"]["MLSR"] == 0.5
    assert m["counts"]["unparsed"] == {"empty": 2, "no_number": 1, "no_unit": 1}
    assert m["counts"]["consistency_groups"] == 2 and m["counts"]["groups"] == 3


def test_fixture_hand_computed_paper() -> None:
    m = _fixture_metrics(PAPER)
    assert _avg(m, "target_distance") == 0.7
    assert _per_t(m, "target_direction")[2] == (2, 1.0, 2)  # "2 o'clock" = -60 degrees
    assert _avg(m, "target_direction") == 0.9
    assert _avg(m, "target_velocity") == 1.0  # gt 0.8 < 1.0 m/s: |1.2 - 0.8| <= 0.5
    assert _per_t(m, "lsr") == [(0, 1.0, 3), (1, 0.66666667, 3), (2, 0.5, 2), (3, 0.5, 2), ("avg", 0.7, 10)]
    overall = m["temporal_consistency"][0]
    assert m["counts"]["consistency_groups"] == 3
    # Every group counts: g1 [1,0,1,1], g2 [1,1,0,0], g3 [1,1,-,-] (missing horizons fail).
    assert overall["TLC@1"] == 2 / 3 and overall["TLC@2"] == 0.0 and overall["TLC"] == 0.0
    assert overall["MLSR"] == pytest.approx((0.75 + 0.5 + 0.5) / 3, abs=0, rel=1e-15)


def test_fixture_matches_reference() -> None:
    responses = [r for _, recs in sb.load_responses(FIXTURE / "responses") for r in recs]
    sheet = sb.read_annotation_sheet(FIXTURE / "annotation_sheet.csv")
    assert ours_official(responses, sheet) == reference_evaluate(responses, OFFICIAL_TOLERANCE, sheet)


# ============================================================================================ parity


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parity_with_reference_random_bench(seed: int) -> None:
    responses, sheet = make_bench(n_groups=150, seed=seed)
    ours = ours_official(responses, sheet)
    ref = reference_evaluate(responses, OFFICIAL_TOLERANCE, sheet)
    assert ours == ref  # exact: same floats, same rounding


def test_parity_is_order_independent() -> None:
    responses, sheet = make_bench(n_groups=60, seed=7)
    rng = np.random.default_rng(3)
    shuffled = [responses[i] for i in rng.permutation(len(responses))]
    assert ours_official(shuffled, sheet) == ours_official(responses, sheet)


_TEXT_PIECES = st.sampled_from(
    [
        " ",
        "m",
        "meters",
        "metres",
        "km",
        "cm",
        "ft",
        "feet",
        "in",
        "inch",
        "°",
        "deg",
        "degrees",
        "-degree",
        "m/s",
        "km/h",
        "mph",
        "kph",
        "mps",
        "m s-1",
        "miles per hour",
        "meters per second",
        "at",
        "about",
        "-",
        "+",
        ".",
        ",",
        "/",
        "2 o'clock",
        "away",
        "\n",
        "Region [0]",
    ]
)
_NUMBERS = st.one_of(
    st.integers(-400, 400).map(str),
    st.floats(-400, 400, allow_nan=False).map(lambda x: f"{x:.2f}"),
    st.integers(0, 99).map(lambda x: f"{x}."),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_TEXT_PIECES, _NUMBERS), min_size=0, max_size=8))
def test_official_grammar_equals_plain_reference(pieces: list[str]) -> None:
    text = "".join(pieces)
    for kind in ("distance", "direction", "velocity"):
        ours = parse_official(text, kind)  # type: ignore[arg-type]
        ref = ref_parse(kind, text)
        assert (getattr(ours, "value", None)) == ref, (text, kind)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(_TEXT_PIECES, _NUMBERS, st.just("\x00"), st.just("12")), max_size=6).map("".join),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["distance", "direction", "velocity"]),
)
def test_official_batch_parse_equals_per_text_reference(texts: list[str], kind: str) -> None:
    # many answers are scanned in one pass (joined with NUL): each must read as if alone
    values, _ = parse_many(texts, [kind] * len(texts), "official")  # type: ignore[list-item]
    expected = [ref_parse(kind, t) for t in texts]
    assert [None if np.isnan(v) else float(v) for v in values] == expected


def test_fast_and_careful_ingestion_paths_agree() -> None:
    responses, sheet = make_bench(n_groups=40, seed=11)
    fast, _ = sb.build_items([(Path("m"), responses)], STRIDEQA_BENCH, sheet)
    builder = ItemBuilder("m")
    seen: set[str] = set()
    for i, rec in enumerate(responses):
        sb._add_response(builder, rec, f"record {i}", sheet, None, seen)
    careful = builder.finish(STRIDEQA_BENCH, {g: (v["relation"], v["object_type"]) for g, v in sheet.items()})
    assert fast.question_id == careful.question_id and fast.group_ids == careful.group_ids
    for name in ("group", "horizon", "dimension", "gt", "out_of_view"):
        assert np.array_equal(getattr(fast, name), getattr(careful, name)), name
    assert np.array_equal(fast.pred, careful.pred, equal_nan=True) and fast.pred_reason == careful.pred_reason


_FINITE = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100, allow_nan=False), _FINITE), min_size=1, max_size=20))
def test_rules_equal_scalar_reference(pairs: list[tuple[float, float]]) -> None:
    gt = np.array([p[0] for p in pairs])
    pred = np.array([p[1] for p in pairs])
    for qa_type, rule in (
        ("distance", STRIDEQA_BENCH.distance),
        ("direction", STRIDEQA_BENCH.direction),
        ("velocity", STRIDEQA_BENCH.velocity),
    ):
        expected = [ref_judge(qa_type, g, p, OFFICIAL_TOLERANCE["tolerance"][qa_type]) for g, p in pairs]
        assert rule.judge(gt, pred).tolist() == expected


def test_rules_boundaries_and_nan() -> None:
    dist = Rule("relative", 0.25)
    assert dist.judge(np.array([20.0, 20.0, 20.0, 20.0]), np.array([15.0, 25.0, 14.99, np.nan])).tolist() == [
        True,
        True,
        False,
        False,
    ]
    ang = Rule("angular_absolute", 10)
    assert ang.judge(np.array([175.0, -178.0, 0.0]), np.array([-175.0, 175.0, 10.0])).tolist() == [True, True, True]
    assert ang.judge(np.array([0.0]), np.array([10.001])).tolist() == [False]


@pytest.mark.parametrize(
    ("gt", "pred", "paper_ok", "bench_ok"),
    [
        (0.8, 1.2, True, False),  # paper: below 1.0 -> +-0.5; bench: relative +-0.16
        (0.4, 0.55, True, False),  # bench: below 0.5 -> +-0.1
        (0.3, 0.39, True, True),
        (0.0, 0.1, True, True),
        (0.0, 0.11, True, False),
        (0.9, 1.45, False, False),
        (5.0, 6.0, True, True),
    ],
)
def test_paper_and_bench_velocity_floor_differ(gt: float, pred: float, paper_ok: bool, bench_ok: bool) -> None:
    assert PAPER.velocity.judge(np.array([gt]), np.array([pred]))[0] == paper_ok
    assert STRIDEQA_BENCH.velocity.judge(np.array([gt]), np.array([pred]))[0] == bench_ok


# ============================================================================================ properties


def _records(n_groups: int, seed: int, complete: bool) -> tuple[list[LsrRecord], dict[str, Any]]:
    rng = np.random.default_rng(seed)
    recs, preds = [], {}
    for g in range(n_groups):
        for t in range(4):
            if not complete and rng.random() < 0.15:
                continue
            for dim, gt in (
                ("target_distance", rng.uniform(2, 50)),
                ("target_direction", rng.uniform(-180, 180)),
                ("target_velocity", rng.uniform(0, 10)),
                ("ego_velocity", rng.uniform(0, 10)),
            ):
                qid = f"q{g}_{t}_{dim}"
                recs.append(
                    LsrRecord(
                        qid,
                        f"g{g}",
                        t,
                        dim,
                        float(gt),
                        scenario=f"s{g % 3}",
                        object_class=f"c{g % 2}",
                        out_of_view=bool(g % 4 == 0),
                    )
                )
                noise = rng.choice([0.0, 0.1, 0.5, np.nan])
                preds[qid] = (
                    None
                    if np.isnan(noise)
                    else float(gt * (1 + noise) if dim != "target_direction" else gt + 100 * noise)
                )
    preds = {k: v for k, v in preds.items() if v is not None}
    return recs, preds


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 30), st.integers(0, 10_000), st.booleans())
def test_metric_properties(n_groups: int, seed: int, complete: bool) -> None:
    recs, preds = _records(n_groups, seed, complete)
    assume(recs)  # the generator can skip every horizon of a lone group; no records, no dimensions to check
    items, report = items_from_records(recs, preds, PAPER)
    m = evaluate(items, PAPER).metrics()
    assert report["missing_predictions"] == sum(1 for r in recs if r.question_id not in preds)
    dist = {r["time"]: r for r in m["target_distance"]}
    dirn = {r["time"]: r for r in m["target_direction"]}
    for row in m["lsr"]:
        # every slot has both halves here, so LSR <= each half's rate and slot counts match
        assert row["sample_size"] == dist[row["time"]]["sample_size"] == dirn[row["time"]]["sample_size"]
        assert row["success_rate"] <= min(dist[row["time"]]["success_rate"], dirn[row["time"]]["success_rate"])
    overall = m["temporal_consistency"][0]
    k_max = max(r.horizon_s for r in recs)
    k_values = [overall[f"TLC@{k}"] for k in range(1, k_max + 1)]
    assert k_values == sorted(k_values, reverse=True)
    assert overall["TLC"] == (k_values[-1] if k_values else overall["TLC"]) <= overall["MLSR"] <= 1.0
    if complete:
        per_t = [r["success_rate"] for r in m["lsr"] if r["time"] != "avg"]
        assert overall["MLSR"] == pytest.approx(float(np.mean(per_t)), abs=1e-8)
    # breakdowns partition the slots
    assert sum(v["lsr"][-1]["sample_size"] for v in m["breakdowns"]["scenario"].values()) == m["lsr"][-1]["sample_size"]
    assert (
        sum(v["lsr"][-1]["sample_size"] for v in m["breakdowns"]["out_of_view"].values()) == m["lsr"][-1]["sample_size"]
    )


# ============================================================================================ bad input


def _fixture_records() -> list[dict[str, Any]]:
    return [r for _, recs in sb.load_responses(FIXTURE / "responses") for r in recs]


def test_duplicate_question_id_error_and_skip() -> None:
    recs = _fixture_records()
    recs.append(dict(recs[0]))
    with pytest.raises(PredictionFormatError, match="duplicate question"):
        sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH)
    items, report = sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH, on_invalid="skip")
    assert report["skipped"] == {"duplicate_question_id": 1}
    assert len(items) == 36


def test_nan_truth_and_unknown_category() -> None:
    recs = _fixture_records()
    recs[0] = dict(recs[0], gt_value={"distance": float("nan")})
    recs[2] = dict(recs[2], gt_value={"velocity": 10**400})
    recs[1] = dict(recs[1], qa_category="ego_lane_data")
    with pytest.raises(PredictionFormatError, match="bad gt value"):
        sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH)
    items, report = sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH, on_invalid="fail")
    assert report["skipped"] == {"bad_gt_value": 2, "unknown_qa_category": 1}
    assert len(items) == 33


def test_missing_and_null_pred_policies() -> None:
    recs = _fixture_records()
    target = recs[2]  # ego speed at t=0 for g00001, answered correctly in the fixture
    recs[2] = {k: v for k, v in target.items() if k != "pred"}
    recs[3] = dict(recs[3], pred=None)
    with pytest.raises(PredictionFormatError, match="missing pred"):
        sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH)
    items, report = sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH, on_invalid="fail")
    assert report["forced_failures"] == {"missing_pred": 1, "pred_not_text": 1}
    m = evaluate(items, STRIDEQA_BENCH).metrics()
    # the toolkit scores a missing pred as a failure: same here, and counted
    assert m["ego_velocity"][0] == {"time": 0, "success_rate": 0.5, "sample_size": 2}
    items, report = sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH, on_invalid="skip")
    assert report["skipped"] == {"missing_pred": 1, "pred_not_text": 1} and len(items) == 34


def test_unknown_ids_and_missing_predictions_against_annotations() -> None:
    annotations = sb.load_annotation_questions(FIXTURE)
    recs = _fixture_records()
    dropped = recs.pop(0)
    recs.append(dict(recs[0], question_id="q99999999_g00001"))
    with pytest.raises(PredictionFormatError, match="unknown question id"):
        sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH, annotations=annotations)
    items, report = sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH, annotations=annotations, on_invalid="skip")
    assert report["skipped"] == {"unknown_question_id": 1} and report["missing_predictions"] == 1
    assert dropped["question_id"] not in items.question_id
    items, report = sb.build_items(
        [(Path("r.json"), recs)], STRIDEQA_BENCH, annotations=annotations, on_invalid="skip", missing="fail"
    )
    assert dropped["question_id"] in items.question_id
    i = items.question_id.index(dropped["question_id"])
    assert np.isnan(items.pred[i]) and items.pred_reason[i] == "missing_prediction"


def test_gt_differing_from_annotation_is_rejected() -> None:
    annotations = sb.load_annotation_questions(FIXTURE)
    recs = _fixture_records()
    recs[0] = dict(recs[0], gt_value={"distance": 99.0})
    with pytest.raises(PredictionFormatError, match="gt differs"):
        sb.build_items([(Path("r.json"), recs)], STRIDEQA_BENCH, annotations=annotations)


def test_annotation_sheet_na_strings_and_conflicts(tmp_path: Path) -> None:
    p = tmp_path / "annotation_sheet.csv"
    p.write_text("group_id,object_type,relation\ng1,car,NA\ng2,,Overtake\ng3,bus,null\n", encoding="utf-8")
    sheet = sb.read_annotation_sheet(p)
    assert sheet["g1"]["relation"] is None and sheet["g2"]["object_type"] is None
    assert sheet["g3"]["relation"] is None and sheet["g2"]["relation"] == "Overtake"
    p.write_text("group_id,object_type,relation\ng1,car,A\ng1,car,B\n", encoding="utf-8")
    with pytest.raises(PredictionFormatError, match="twice"):
        sb.read_annotation_sheet(p)


def test_group_id_rule() -> None:
    assert sb.extract_group_id("q00000234_g00018") == "g00018"
    assert sb.extract_group_id("plain") == "plain"
    assert sb.extract_group_id("q1_g2_g3") == "g2"


def test_records_structured_predictions_and_units(tmp_path: Path) -> None:
    recs = [
        LsrRecord("a", "g", 0, "target_distance", 1000.0, unit="m", scenario="S"),
        LsrRecord("a", "g", 0, "target_direction", 30.0, unit="deg", scenario="S"),
        LsrRecord("b", "g", 0, "ego_velocity", 36.0, unit="km/h", scenario="S"),
        LsrRecord("c", "g", 1, "target_distance", 10.0),
        LsrRecord("c", "g", 1, "target_direction", -90.0),
    ]
    preds = {"a": {"target_distance": 1.1, "target_direction": 25}, "b": {"value": 10.5, "unit": "m/s"}, "c": 12.0}
    with pytest.raises(PredictionFormatError, match="ambiguous numeric prediction"):
        items_from_records(recs, preds, PAPER)
    preds["a"] = {"target_distance": {"value": 1.1, "unit": "km"}, "target_direction": 25}
    preds["c"] = "12 m at 3 o'clock"
    items, _ = items_from_records(recs, preds, PAPER)
    m = evaluate(items, PAPER).metrics()
    assert _per_t(m, "lsr") == [(0, 1.0, 1), (1, 1.0, 1), ("avg", 1.0, 2)]
    assert m["ego_velocity"][-1]["success_rate"] == 1.0  # 36 km/h = 10 m/s truth, 10.5 m/s answer
    path = tmp_path / "recs.jsonl"
    path.write_text(
        json.dumps(
            {"question_id": "x", "group_id": "g", "horizon_s": 1.5, "dimension": "target_distance", "gt_value": 3}
        )
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(PredictionFormatError, match="whole number"):
        read_records_jsonl(str(path))


def test_prediction_jsonl_duplicates_nan_and_unknown(tmp_path: Path) -> None:
    p = tmp_path / "pred.jsonl"
    p.write_text(
        '{"question_id": "a", "pred": "12 m"}\n{"question_id": "a", "pred": "13 m"}\n'
        '{"question_id": "b", "value": NaN}\n{"question_id": "zzz", "pred": "1 m"}\n',
        encoding="utf-8",
    )
    with pytest.raises(PredictionFormatError, match="line 2: duplicate question id"):
        read_predictions_jsonl(str(p))
    preds, dropped = read_predictions_jsonl(str(p), "skip")
    assert dropped == {"duplicate_question_id": 1} and preds["a"] == "12 m"
    recs = [LsrRecord("a", "g", 0, "target_distance", 12.0), LsrRecord("b", "g", 0, "target_direction", 0.0)]
    with pytest.raises(PredictionFormatError, match="unknown question id"):
        items_from_records(recs, preds, PAPER)
    items, report = items_from_records(recs, preds, PAPER, on_invalid="fail")
    assert report["skipped"] == {"unknown_question_id": 1}
    assert report["forced_failures"] == {"bad_prediction_value": 1}
    assert evaluate(items, PAPER).metrics()["lsr"][-1]["success_rate"] == 0.0


def test_duplicate_slot_is_rejected() -> None:
    recs = [LsrRecord("a", "g", 0, "target_distance", 12.0), LsrRecord("b", "g", 0, "target_distance", 12.0)]
    with pytest.raises(PredictionFormatError, match="duplicate slot"):
        items_from_records(recs, {"a": "12 m", "b": "12 m"}, PAPER)


# ============================================================================================ profiles


def test_yaml_profiles_equal_builtins() -> None:
    assert load_profile(REPO / "configs" / "tolerance" / "paper.yaml") == PAPER
    assert load_profile(REPO / "configs" / "tolerance" / "strideqa-bench.yaml") == STRIDEQA_BENCH
    official = profile_from_mapping(OFFICIAL_TOLERANCE, "tolerance.yaml")
    assert (official.distance, official.direction, official.velocity) == (
        STRIDEQA_BENCH.distance,
        STRIDEQA_BENCH.direction,
        STRIDEQA_BENCH.velocity,
    )
    with pytest.raises(ConfigError):
        load_profile("nope")
    with pytest.raises(ConfigError):
        profile_from_mapping({"tolerance": {"distance": {"fn": "exact", "range": 0}}}, "x")


# ============================================================================================ CLI


def _cli() -> Any:
    import typer
    from typer.testing import CliRunner

    from stridegen.cli.eval_lsr import eval_lsr

    app = typer.Typer()
    app.command("lsr")(eval_lsr)

    @app.callback()
    def _main() -> None:
        pass

    return app, CliRunner()


def test_cli_official_inputs_writes_reports() -> None:
    app, runner = _cli()
    out = REPO / "test-output" / "eval_lsr_official"
    res = runner.invoke(
        app, ["lsr", "--bench-dir", str(FIXTURE), "--responses", str(FIXTURE / "responses"), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "success rate (%)" in res.stdout and "60.0" in res.stdout  # LSR 0.6 printed in %
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["profile"] == "strideqa-bench" and doc["lsr"][-1]["success_rate"] == 0.6
    res = runner.invoke(
        app,
        ["lsr", "--bench-dir", str(FIXTURE), "--responses", str(FIXTURE / "responses"), "--out", str(out)]
        + ["--no-plots", "--json"],
    )
    assert json.loads(res.stdout[: res.stdout.rindex("}") + 1])["avg"]["lsr"] == 0.6
    assert "### Temporal Consistency" in (out / "metrics.md").read_text()
    assert (out / "lsr_polar.png").stat().st_size > 0 and (out / "lsr_by_scenario.png").stat().st_size > 0


def test_cli_bench_dir_with_pred_jsonl_and_records(tmp_path: Path) -> None:
    app, runner = _cli()
    annotations = sb.load_annotation_questions(FIXTURE)
    pred = tmp_path / "pred.jsonl"
    pred.write_text(
        "".join(json.dumps({"question_id": r["question_id"], "pred": r["pred"]}) + "\n" for r in _fixture_records()),
        encoding="utf-8",
    )
    res = runner.invoke(
        app, ["lsr", "--bench-dir", str(FIXTURE), "--pred", str(pred), "--out", str(tmp_path / "o1"), "--no-plots"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "o1" / "metrics.json").read_text())["lsr"][-1]["success_rate"] == 0.6
    records = tmp_path / "records.jsonl"
    lines = []
    for qid, rec in annotations.items():
        horizon, subject = sb.QA_CATEGORIES[rec["qa_category"]]
        for qa_type, gt in rec["gt_value"].items():
            lines.append(
                json.dumps(
                    {
                        "question_id": qid,
                        "group_id": sb.extract_group_id(qid),
                        "horizon_s": horizon,
                        "dimension": f"{subject}_{qa_type}",
                        "gt_value": gt,
                    }
                )
            )
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = runner.invoke(
        app,
        [
            "lsr",
            "--records",
            str(records),
            "--pred",
            str(pred),
            "--out",
            str(tmp_path / "o2"),
            "--profile",
            "strideqa-bench",
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o2" / "metrics.json").read_text())
    assert doc["lsr"][-1]["success_rate"] == 0.6
    res = runner.invoke(app, ["lsr", "--records", str(records), "--out", str(tmp_path / "o3")])
    assert res.exit_code == 2 and "--pred is required" in res.output


def test_cli_reports_bad_input_clearly(tmp_path: Path) -> None:
    app, runner = _cli()
    recs = _fixture_records()
    recs.append(dict(recs[0]))
    (tmp_path / "bad_t0.json").write_text(json.dumps(recs), encoding="utf-8")
    res = runner.invoke(app, ["lsr", "--responses", str(tmp_path), "--out", str(tmp_path / "o"), "--no-plots"])
    assert res.exit_code == 2 and "duplicate question id" in res.output
    res = runner.invoke(
        app, ["lsr", "--responses", str(tmp_path), "--out", str(tmp_path / "o"), "--no-plots", "--on-invalid", "skip"]
    )
    assert res.exit_code == 0 and "1 records skipped" in res.output
    doc = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert doc["inputs"]["skipped"] == {"duplicate_question_id": 1}


def test_math_constants_in_reference_are_the_toolkit_ones() -> None:
    # kilometres per hour and miles per hour use the toolkit's factors in the official grammar
    assert parse_official("36 km/h", "velocity").value == 36 * (1 / 3.6)  # type: ignore[union-attr]
    assert parse_official("10 mph", "velocity").value == 10 * (1609.34 / 3600)  # type: ignore[union-attr]
    assert math.isclose(parse_official("5 ft", "distance").value, 1.524)  # type: ignore[union-attr]
