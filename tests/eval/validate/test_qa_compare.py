"""validate --qa: the question identity, the track matching and the comparison on hand-made questions (known
answers), and the whole command on small synthetic logs (oracle against itself: nothing changes; the simulated
detector: answers move a little and questions are lost)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stridegen.eval.lsr.tolerance import STRIDEQA_BENCH
from stridegen.eval.validate.qa_compare import (
    REASON_NO_TRACK,
    REASON_NOT_ASKED,
    REASON_NOT_MARKED,
    QATolerances,
    compare_questions,
    summarize,
)
from stridegen.eval.validate.qa_data import (
    CanonicalQA,
    DatasetQuestions,
    canonical_question,
    match_tracks,
)
from stridegen.pipeline.qa.spatial_predicates import PAIR_YES_NO_FAMILIES
from tests.conftest import SMALL_BUILD


# ------------------------------------------------------------------------------------------- identity
def test_order_and_polarity_of_a_yes_no_pair_do_not_change_the_question():
    # left_of(A, B) = yes is right_of(B, A) = yes, left_of(B, A) = no and right_of(A, B) = no: one question
    forms = [
        ("left_of", ("r/a", "r/b"), "yes"),
        ("right_of", ("r/b", "r/a"), "yes"),
        ("left_of", ("r/b", "r/a"), "no"),
        ("right_of", ("r/a", "r/b"), "no"),
    ]
    out = {canonical_question("object_spatial", p, o, "", math.nan, label) for p, o, label in forms}
    assert len(out) == 1
    [(pred, objs, dims)] = out
    assert (pred, objs, dims[0].label) == ("left_of/right_of", ("r/a", "r/b"), "yes")
    # the opposite truth is another answer to the same question
    _, _, dims = canonical_question("object_spatial", "right_of", ("r/b", "r/a"), "", math.nan, "no")
    assert dims[0].label == "no"


@settings(max_examples=200, deadline=None)
@given(
    xa=st.floats(-50, 50),
    xb=st.floats(-50, 50),
    names=st.sampled_from([("r/1", "r/2"), ("r/2", "r/1"), ("r/10", "r/9")]),
    family=st.sampled_from(PAIR_YES_NO_FAMILIES),
    swap=st.booleans(),
    negative=st.booleans(),
)
def test_any_order_and_polarity_gives_the_positive_predicate_of_sorted_objects(xa, xb, names, family, swap, negative):
    assume(xa != xb)  # equal values are never asked
    value = dict(zip(names, (xa, xb), strict=True))  # e.g. x_cam: positive(A, B) is value[A] < value[B]
    first, second = (names[1], names[0]) if swap else names
    positive_truth = value[first] < value[second]
    predicate = family[1] if negative else family[0]
    label = "yes" if positive_truth != negative else "no"
    pred, objs, dims = canonical_question("object_spatial", predicate, (first, second), "", math.nan, label)
    lo, hi = sorted(names)
    assert (pred, objs) == (f"{family[0]}/{family[1]}", (lo, hi))
    assert dims[0].label == ("yes" if value[lo] < value[hi] else "no")


def test_ego_families_symmetric_numbers_and_directions():
    pred, objs, dims = canonical_question("ego_spatial", "smaller_than_ego", ("r/x",), "", math.nan, "yes")
    assert (pred, objs, dims[0].label) == ("bigger_than_ego/smaller_than_ego", ("r/x",), "no")
    pred, objs, dims = canonical_question("object_spatial", "direct_distance", ("r/b", "r/a"), "m", 4.5, "")
    assert (pred, objs, dims[0].kind, dims[0].value) == ("direct_distance", ("r/a", "r/b"), "length", 4.5)
    _, _, dims = canonical_question(
        "spatiotemporal", "ego_distance_data_4d_t2", ("r/x",), "m", 30.0, "", '{"direction": -12.0}'
    )
    assert [(d.name, d.kind, d.value) for d in dims] == [("value", "distance", 30.0), ("direction", "direction", -12.0)]
    with pytest.raises(ValueError, match="unit 'km'"):
        canonical_question("ego_spatial", "ego_distance", ("r/x",), "km", 1.0, "")


def test_track_matching_is_one_to_one_optimal_and_gated_at_2_m():
    ref = np.array([[0.0, 0.0], [1.5, 0.0], [10.0, 0.0]])
    # nearest-first would give 0.9 -> 1.5 and leave 2.2 alone (2.2 m from 0); the assignment matches both
    cand = np.array([[0.9, 0.0], [2.2, 0.0], [12.0, 0.0], [30.0, 0.0]])
    assert match_tracks(ref, cand).tolist() == [0, 1, -1, -1]  # 12 - 10 = 2.0 m: not below the gate
    assert match_tracks(ref, np.array([[11.99, 0.0]])).tolist() == [2]
    assert match_tracks(ref[:0], cand).tolist() == [-1, -1, -1, -1]


# ------------------------------------------------------------------------------------ comparison
def _qa(
    qid: str,
    predicate: str,
    objs: tuple[str, ...],
    unit: str = "",
    value: float = math.nan,
    label: str = "",
    category: str = "ego_spatial",
    image: tuple[str, int, str] = ("s", 4, "CAM_FRONT"),
    extra: str = "",
):
    pred, objects, dims = canonical_question(category, predicate, objs, unit, value, label, extra)
    return CanonicalQA((*image, category, pred, objects), qid, dims)


def _questions(items: list[CanonicalQA], regions: dict, tracked: set[str] = frozenset()) -> DatasetQuestions:
    out = DatasetQuestions(regions={k: frozenset(v) for k, v in regions.items()}, scenes=["s"])
    out.tracked = {("s", 4): frozenset(tracked)}
    for q in items:
        out.add(q, "test")
    return out


IMG = ("s", 4, "CAM_FRONT")


def _hand_made() -> tuple[DatasetQuestions, DatasetQuestions]:
    ref = [
        _qa("r1", "ego_distance", ("r/a",), "m", 10.0),  # 12.4: +24 %, inside
        _qa("r2", "region_length", ("r/b",), "m", 10.0),  # 12.6: +26 %, beyond
        _qa("r3", "ego_heading_angle", ("r/a",), "deg", 5.0),  # -6: 11 degrees, beyond
        _qa("r4", "ego_heading_angle", ("r/b",), "deg", 179.0),  # -175: 6 degrees the short way, inside
        _qa("r5", "ego_clock_direction", ("r/a",), "o'clock", 12.0),  # 1: one hour, inside
        _qa("r6", "ego_clock_direction", ("r/b",), "o'clock", 12.0),  # 2: two hours, beyond
        _qa("r7", "target_speed_data", ("r/a",), "m/s", 0.8, category="spatiotemporal"),  # 1.25: floor 0.5, inside
        _qa("r8", "target_speed_data_4d_t1", ("r/a",), "m/s", 0.8, category="spatiotemporal"),  # 1.35: beyond
        _qa("r9", "left_of", ("r/a", "r/b"), label="yes", category="object_spatial"),  # asked flipped, same truth
        _qa("r10", "bigger", ("r/a", "r/b"), label="yes", category="object_spatial"),  # truth changes
        _qa("r11", "ego_distance", ("r/c",), "m", 20.0),  # lost: c is tracked, not a region of the candidate's image
        _qa("r12", "ego_left_right", ("r/b",), label="left"),  # lost: b is a region there, not asked
        _qa("r13", "ego_distance", ("r/d",), "m", 30.0),  # lost: the candidate has no track of d
    ]
    cand = [
        _qa("c1", "ego_distance", ("r/a",), "m", 12.4),
        _qa("c2", "region_length", ("r/b",), "m", 12.6),
        _qa("c3", "ego_heading_angle", ("r/a",), "deg", -6.0),
        _qa("c4", "ego_heading_angle", ("r/b",), "deg", -175.0),
        _qa("c5", "ego_clock_direction", ("r/a",), "o'clock", 1.0),
        _qa("c6", "ego_clock_direction", ("r/b",), "o'clock", 2.0),
        _qa("c7", "target_speed_data", ("r/a",), "m/s", 1.25, category="spatiotemporal"),
        _qa("c8", "target_speed_data_4d_t1", ("r/a",), "m/s", 1.35, category="spatiotemporal"),
        _qa("c9", "right_of", ("r/b", "r/a"), label="yes", category="object_spatial"),
        _qa("c10", "smaller", ("r/a", "r/b"), label="yes", category="object_spatial"),
        _qa("c11", "ego_distance", ("c/7",), "m", 5.0),  # gained: an unmatched candidate track (no oracle track)
        _qa("c12", "ego_distance", ("r/e",), "m", 8.0),  # gained: the oracle tracks e but does not mark it
    ]
    return (
        _questions(ref, {IMG: {"r/a", "r/b", "r/c", "r/d"}}, {"r/a", "r/b", "r/c", "r/d", "r/e"}),
        _questions(cand, {IMG: {"r/a", "r/b", "c/7", "r/e"}}, {"r/a", "r/b", "r/c", "c/7", "r/e"}),
    )


def test_comparison_of_hand_made_questions_known_answers():
    ref, cand = _hand_made()
    comp = compare_questions(ref, cand)
    by_id = dict(zip(comp.matched.reference_id, comp.matched.changed.tolist(), strict=True))
    assert by_id == {
        "r1": False, "r2": True, "r3": True, "r4": False, "r5": False, "r6": True,
        "r7": False, "r8": True, "r9": False, "r10": True,
    }  # fmt: skip
    err = dict(zip(comp.matched.reference_id, comp.matched.abs_error.tolist(), strict=True))
    assert err["r1"] == pytest.approx(2.4) and err["r3"] == pytest.approx(11.0) and err["r4"] == pytest.approx(6.0)
    assert err["r6"] == pytest.approx(2.0) and math.isnan(err["r9"])
    rel = dict(zip(comp.matched.reference_id, comp.matched.rel_error.tolist(), strict=True))
    assert rel["r2"] == pytest.approx(2.6 / (10.0 + 1e-4))
    assert list(zip(comp.lost.question_id, comp.lost.reason, strict=True)) == [
        ("r11", REASON_NOT_MARKED),
        ("r12", REASON_NOT_ASKED),
        ("r13", REASON_NO_TRACK),
    ]
    assert list(zip(comp.gained.question_id, comp.gained.reason, strict=True)) == [
        ("c11", REASON_NO_TRACK),
        ("c12", REASON_NOT_MARKED),
    ]

    s = summarize(comp)
    assert s["total"] == {
        "matched": 10, "changed": 5, "changed_share": 0.5, "lost": 3, "gained": 2,
        "lost_by_reason": {"no_track": 1, "not_marked": 1, "not_asked": 1},
        "gained_by_reason": {"no_track": 1, "not_marked": 1, "not_asked": 0},
        "reference_questions": 13, "candidate_questions": 12,
    }  # fmt: skip
    rows = {(r["category"], r["predicate"]): r for r in s["rows"]}
    heading = rows[("ego_spatial", "ego_heading_angle")]
    assert (heading["matched"], heading["changed"], heading["unit"]) == (2, 1, "deg")
    assert heading["abs_error"]["p50"] == pytest.approx(8.5) and heading["abs_error"]["max"] == pytest.approx(11.0)
    assert heading["signed_error"]["mean"] == pytest.approx((-11.0 + 6.0) / 2)
    assert rows[("ego_spatial", "ego_distance")]["lost"] == 2 and rows[("ego_spatial", "ego_distance")]["gained"] == 2
    assert rows[("object_spatial", "bigger/smaller")]["changed"] == 1
    assert s["categories"]["spatiotemporal"]["changed"] == 1
    json.dumps(s, allow_nan=False)  # the results file takes it as it is


def test_the_lsr_profile_decides_the_spatiotemporal_tolerance():
    ref, cand = _hand_made()
    comp = compare_questions(ref, cand, QATolerances(profile=STRIDEQA_BENCH))
    by_id = dict(zip(comp.matched.reference_id, comp.matched.changed.tolist(), strict=True))
    # the toolkit's floor applies below 0.5 m/s only: 0.8 -> 1.25 is +56 %, beyond 20 %
    assert by_id["r7"] is True and by_id["r1"] is False


def test_a_dataset_against_itself_changes_nothing():
    ref, _ = _hand_made()
    s = summarize(compare_questions(ref, ref))
    assert (s["total"]["matched"], s["total"]["changed"], s["total"]["lost"], s["total"]["gained"]) == (13, 0, 0, 0)


def test_two_questions_with_one_identity_are_an_error():
    q = _qa("x1", "ego_distance", ("r/a",), "m", 1.0)
    with pytest.raises(ValueError, match="'x1' and 'x2' ask the same thing"):
        _questions([q, CanonicalQA(q.key, "x2", q.dimensions)], {})


# ------------------------------------------------------------------------- builds of a synthetic log
def _run(args: list[str]):
    from stridegen.cli import app

    return CliRunner().invoke(app, ["validate", "--qa", *args])


@pytest.fixture(scope="module")
def small_config(tmp_path_factory) -> str:
    import yaml

    from stridegen.run.config import apply_overrides

    path = tmp_path_factory.mktemp("cfg") / "build.yaml"
    path.write_text(yaml.safe_dump(apply_overrides({}, SMALL_BUILD)))
    return str(path)


@pytest.mark.slow
def test_oracle_against_itself_reports_zero_changed_answers(two_scene_log, small_config, tmp_path):
    result = _run(
        ["--log-root", str(two_scene_log), "--detector", "oracle", "--config", small_config,
         "--out", str(tmp_path), "--json", "--no-plots"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    total = doc["total"]
    assert total["reference_questions"] > 0 and total["matched"] >= total["reference_questions"]
    assert (total["changed"], total["lost"], total["gained"]) == (0, 0, 0)
    assert all(r["abs_error"]["max"] == 0.0 for r in doc["rows"] if "abs_error" in r)
    on_disk = json.loads((tmp_path / "candidate" / "validate_qa.json").read_text())
    assert on_disk == doc
    # given folders are compared as they are, nothing built
    again = _run(["--reference", str(tmp_path / "oracle"), "--candidate", str(tmp_path / "candidate"), "--no-plots"])
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "candidate" / "validate_qa.json").read_text())["total"] == total
    assert "beyond %" in again.stdout and "all" in again.stdout


def test_usage_errors(tmp_path):
    result = _run(["--reference", str(tmp_path)])
    assert result.exit_code == 2 and "pass --out DIR" in result.output
    from stridegen.cli import app

    result = CliRunner().invoke(app, ["validate", "--json"])
    assert result.exit_code == 2 and "--json is an option of validate --qa" in result.output


@pytest.mark.slow
def test_simulated_detector_moves_few_answers_and_loses_questions(two_scene_log, small_config, tmp_path):
    from stridegen.eval.validate.qa_evaluate import build_and_validate, build_configs, candidate_detector_options

    ref_cfg, cand_cfg = build_configs(
        small_config, "simulated", candidate_detector_options("simulated", "bevfusion", 0)
    )
    result = build_and_validate(two_scene_log, tmp_path, ref_cfg, cand_cfg, plots=True)
    total = result.summary["total"]
    assert total["matched"] > 0 and total["lost"] > 0
    # calibrated to mATE ~0.3-0.6 m: lengths move by decimetres and most stay inside the 25 % band
    rows = [r for r in result.summary["rows"] if r["kind"] == "length" and r["matched"]]
    assert rows and all(0.0 < r["abs_error"]["p50"] < 1.0 for r in rows)
    assert total["changed"] > 0 and total["changed_share"] < 0.25, total
    assert total["lost"] > total["gained"]  # misses and the visibility filter cost more than false positives add
    assert result.plot_path is not None and result.plot_path.stat().st_size > 0
    assert result.summary["candidate"]["detector"]["name"] == "simulated"
    # the report of the compared dataset shows the results, linked from the navigation
    from stridegen.viz.report.build import write_report

    page = (tmp_path / "report.html").resolve()
    write_report(result.candidate_dir, page, samples=0)
    html = page.read_text(encoding="utf-8")
    assert '<section id="validate-qa">' in html and '<a href="#validate-qa">' in html
    assert html.count("<tr>", html.index('id="validate-qa-rows"')) >= len(result.summary["rows"])
    assert 'data-chart="validate-qa-errors"' in html


def test_report_section_only_with_a_readable_results_file(tmp_path):
    from stridegen.core.errors import DataFormatError
    from stridegen.viz.report.validate_qa_section import RESULTS_NAME, validate_qa_section

    assert validate_qa_section(tmp_path) is None
    (tmp_path / RESULTS_NAME).write_text('{"total": {}}')
    with pytest.raises(DataFormatError, match="not the results of stridegen validate --qa"):
        validate_qa_section(tmp_path)
    ref, cand = _hand_made()
    doc = {"candidate": {"detector": {"name": "simulated"}, "tracker": "center", "segmenter": "lidar"}}
    doc.update(summarize(compare_questions(ref, cand)))
    (tmp_path / RESULTS_NAME).write_text(json.dumps(doc))
    html = validate_qa_section(tmp_path)
    assert html is not None and "bigger/smaller" in html and "50.0%" in html  # 5 of 10 answers beyond tolerance
