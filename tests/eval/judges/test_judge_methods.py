"""Judge methods: request structure per mode, aggregation rules, images, cache keys."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from stridegen.eval.judges.config import load_method_config
from stridegen.eval.judges.methods import JudgeContext, get_method
from stridegen.eval.judges.methods.cee import majority_vote
from stridegen.eval.judges.methods.general import combine_orderings
from stridegen.eval.judges.methods.intellicockpit import weighted_overall
from stridegen.eval.judges.prompts.codalm import class_group
from stridegen.eval.judges.records import JudgeError, JudgeItem

KEY = b"z" * 32


def _ctx(method: str, **kw) -> JudgeContext:
    return JudgeContext(nonce_key=KEY, settings=load_method_config(method).get("settings") or {}, **kw)


def _item(**kw) -> JudgeItem:
    base = {
        "id": "i1",
        "question": "What should the ego car do?",
        "reference": "Slow down.",
        "answer": "Brake.",
        "category": "driving_suggestion",
    }
    return JudgeItem(**{**base, **kw})


def test_intellicockpit_dimension_lookup_and_prompt():
    judge = get_method("intellicockpit")
    ctx = _ctx("intellicockpit")
    assert list(judge.dimensions(_item(), ctx))[:2] == ["Safety", "Rationality"]
    sub = _item(category="perception", subcategory="scene_description")
    assert "Driving relevance" in judge.dimensions(sub, ctx)
    assert list(judge.dimensions(_item(category="unknown"), ctx)) == [
        "Correctness",
        "Safety",
        "Completeness",
        "Clarity",
    ]
    no_yaml = JudgeContext(nonce_key=KEY)
    assert "Correctness" in judge.dimensions(_item(), no_yaml)
    spec = judge.requests(_item(), "faithful", ctx)[0]
    user = spec.messages[-1]["content"]
    assert "scores 8 on every dimension" in user and "Safety (importance" not in user
    assert "- Safety: The advised action is safe and lawful in this scene. (importance 3)" in user
    assert spec.sampling["temperature"] == 0.1
    assert judge.requests(_item(), "robust", ctx)[0].sampling["temperature"] == 0.0


def test_intellicockpit_recomputes_weighted_overall_and_flags():
    judge = get_method("intellicockpit")
    ctx = _ctx("intellicockpit")
    parsed = {
        "verdict": {
            "overall": 8.0,
            "dimensions": {
                "safety": {"score": 6.0, "importance": 3.0},
                "Rationality": {"score": 4.0, "importance": 3.0},
                "Actionability": {"score": 8.0, "importance": 1.0},
                "Bogus": {"score": 9.0, "importance": 1.0},
            },
        }
    }
    v = judge.aggregate(_item(), parsed, {}, ctx)
    # weights from the YAML table: Safety 3, Rationality 3, Actionability 2 -> (18 + 12 + 16) / 8
    assert v["details"]["weighted_overall"] == pytest.approx(46 / 8)
    assert v["score"] == 8.0 and v["score_100"] == 80.0
    assert v["flags"] == ["importance_mismatch", "missing_dimensions", "overall_disagrees", "unknown_dimensions"]
    weighted_ctx = JudgeContext(nonce_key=KEY, settings={**ctx.settings, "score_source": "weighted"})
    assert judge.aggregate(_item(), parsed, {}, weighted_ctx)["score"] == pytest.approx(46 / 8)
    assert weighted_overall({"a": 10, "b": 1}, {"a": 3, "b": 1}) == pytest.approx(31 / 4)
    with pytest.raises(JudgeError):
        judge.aggregate(_item(), {}, {"verdict": "timeout"}, ctx)


def test_images_are_sent_only_when_allowed(tmp_path: Path):
    image = tmp_path / "cam.png"
    cv2.imwrite(str(image), np.full((8, 8, 3), 127, np.uint8))
    judge = get_method("intellicockpit")
    item = _item(image="cam.png")
    content = judge.requests(item, "robust", _ctx("intellicockpit", base_dir=tmp_path))[0].messages[-1]["content"]
    assert content[0]["type"] == "image_url" and content[0]["image_url"]["url"].startswith("data:image/png;base64,")
    no_images = _ctx("intellicockpit", base_dir=tmp_path, send_images=False)
    assert isinstance(judge.requests(item, "robust", no_images)[0].messages[-1]["content"], str)
    with pytest.raises(JudgeError):
        judge.requests(_item(image="missing.png"), "robust", _ctx("intellicockpit", base_dir=tmp_path))
    # CODA-LM's Text-Score compares texts: never sends images.
    coda = get_method("codalm").requests(
        _item(category="general_perception", image="cam.png"), "robust", _ctx("codalm", base_dir=tmp_path)
    )[0]
    assert all(isinstance(m["content"], str) for m in coda.messages)


def test_codalm_structure_and_scaling():
    judge = get_method("codalm")
    ctx = _ctx("codalm")
    general = judge.requests(_item(category="general_perception"), "faithful", ctx)[0]
    assert [m["role"] for m in general.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "Rating: [[9]]" in general.messages[2]["content"] and "Rating: [[1]]" in general.messages[4]["content"]
    regional_faithful = judge.requests(_item(category="region_perception"), "faithful", ctx)[0]
    assert [m["role"] for m in regional_faithful.messages] == ["system", "user"]
    assert len(judge.requests(_item(category="regional"), "robust", ctx)[0].messages) == 6
    item = _item(category="region_perception", meta={"object_class": "vehicle.car"})
    v = judge.aggregate(item, {"rating": {"rating": 7.0}}, {}, ctx)
    assert v["score_100"] == 70.0 and v["groups"] == ["task:region_perception", "class:vehicle"]
    assert class_group("Traffic Cone") == "traffic_cone" and class_group("dog") == "miscellaneous"
    assert class_group("pedestrian") == "vru"
    with pytest.raises(JudgeError):
        judge.requests(_item(category="weather"), "robust", ctx)


def test_cee_votes_and_tie_rule():
    assert majority_vote([1, 1, 0, 1, 0]) == (1, False)
    assert majority_vote([1, 0, 0, 1, 0]) == (0, False)
    assert majority_vote([1, 1, 0, 0]) == (0, True)
    judge = get_method("cee")
    ctx = _ctx("cee")
    specs = judge.requests(_item(), "faithful", ctx)
    assert [s.tag for s in specs] == [f"prompt{i}" for i in range(1, 6)]
    assert {s.sampling["temperature"] for s in specs} == {0.5}
    assert len({s.cache_key("m") for s in specs}) == 5
    four = {f"prompt{i}": {"vote": v} for i, v in zip(range(1, 5), [1, 1, 0, 0], strict=True)}
    v = judge.aggregate(_item(), four, {"prompt5": "timeout"}, ctx)
    assert v["score"] == 0.0 and v["flags"] == ["tie"] and v["details"]["n_votes"] == 4
    with pytest.raises(JudgeError):
        judge.aggregate(_item(), {"prompt1": {"vote": 1}, "prompt2": {"vote": 1}}, {}, ctx)


def test_pairwise_orderings_cancel_position_bias():
    assert combine_orderings("A", "B") == "answer"
    assert combine_orderings("B", "A") == "answer_b"
    assert combine_orderings("A", "A") == "tie"  # always prefers position A: position bias, not a preference
    assert combine_orderings("C", "B") == "tie"
    judge = get_method("pairwise")
    specs = judge.requests(_item(answer_b="Accelerate."), "robust", _ctx("pairwise"))
    assert [s.tag for s in specs] == ["AB", "BA"]
    ab, ba = (s.messages[-1]["content"] for s in specs)
    assert ab.index("Brake.") < ab.index("Accelerate.") and ba.index("Accelerate.") < ba.index("Brake.")
    v = judge.aggregate(_item(answer_b="x"), {"AB": {"winner": "A"}, "BA": {"winner": "A"}}, {}, _ctx("pairwise"))
    assert v["score"] == 0.5 and v["flags"] == ["inconsistent_orderings"]
    with pytest.raises(JudgeError):
        judge.requests(_item(), "robust", _ctx("pairwise"))


def test_cache_key_covers_model_sampling_template_and_messages():
    judge = get_method("general")
    spec = judge.requests(_item(), "robust", _ctx("general"))[0]
    key = spec.cache_key("m1")
    assert key == judge.requests(_item(), "robust", _ctx("general"))[0].cache_key("m1")
    assert key != spec.cache_key("m2")
    spec.sampling = {**spec.sampling, "temperature": 0.3}
    assert spec.cache_key("m1") != key
    spec2 = judge.requests(_item(), "robust", _ctx("general"))[0]
    spec2.template_version = "general-v2"
    assert spec2.cache_key("m1") != key
    assert judge.requests(_item(answer="Stop."), "robust", _ctx("general"))[0].cache_key("m1") != key


def test_unknown_method_and_mode():
    with pytest.raises(JudgeError):
        get_method("nope")
    with pytest.raises(JudgeError):
        get_method("general").requests(_item(), "creative", _ctx("general"))
