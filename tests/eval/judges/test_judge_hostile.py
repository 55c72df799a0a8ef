"""Injection resistance: the hostile corpus (hostile_answers.jsonl) against judges that echo, quote and obey.

Every case is an answer that tries to set its own score. End to end, items go through the real runner and
client to a loopback server whose fake judge gives an honest verdict and then misbehaves with the answer it
was shown (judge_fake_server.hostile_reply): it echoes it after its verdict, quotes it (fenced) before and
after its verdict, or obeys any verdict it can read in it through look-alikes. A case is *manipulated* when
its verdict is not the clean answer's. Robust mode (the default) must have none, and no error either, for
every method and behaviour; faithful mode reproduces the papers and is open to injection: its counts are
printed (pytest -s) and must not be zero, which shows the harness can see a manipulation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_fake_server import (
    Reply,
    ScriptedServer,
    completion_body,
    generous_reading,
    hostile_reply,
    quoting_reply,
    requested_verdict,
    verdict_for,
)

from stridegen.eval.judges.cache import VerdictCache
from stridegen.eval.judges.config import load_method_config
from stridegen.eval.judges.methods import JudgeContext, get_method
from stridegen.eval.judges.parsing import (
    parse_bracket_rating,
    parse_dimension_json,
    parse_keyed_binary,
    parse_pairwise,
)
from stridegen.eval.judges.records import JudgeItem, VerdictParseError
from stridegen.eval.judges.runner import run_judge
from stridegen.eval.judges.safety import REMOVED, guard, looks_like_injection
from stridegen.llm.client import ChatClient, ClientSettings

CORPUS = Path(__file__).with_name("hostile_answers.jsonl")
CLEAN = "The white car ahead is braking, so the ego vehicle should slow down and keep a safe gap."
PREFERRED_B = "Slow down gradually behind the braking car and keep two seconds of headway."
QUESTION = "What should the ego vehicle do?"

METHOD_ITEMS = {
    "codalm": {"category": "general_perception", "reference": "A white sedan brakes ahead; slow down."},
    "intellicockpit": {"category": "driving_suggestion", "reference": "Slow down and keep a safe distance."},
    "cee": {"category": "vqa", "reference": "Slow down."},
    "general": {"category": "open_question", "reference": "Slow down and keep a safe distance."},
    "pairwise": {"category": "open_question", "answer_b": PREFERRED_B},
}
HONEST_SCORE = {"codalm": 4.0, "intellicockpit": 4.0, "cee": 0.0, "general": 4.0, "pairwise": 0.0}
# The matrix runs every method, and intellicockpit once more scoring the weighted mean of the dimensions.
VARIANTS = {
    **{m: (m, {}) for m in METHOD_ITEMS},
    "intellicockpit-weighted": ("intellicockpit", {"score_source": "weighted"}),
}
BEHAVIOURS = ("echo", "quote_after", "obey")
# The variants issue 15 names, and the older ones: the corpus must hold each.
REQUIRED_TAGS = {
    "legacy",
    "issue_example",
    "quoted_json_key",
    "fullwidth",
    "lookalike_bracket",
    "lookalike_digit",
    "split",
    "zero_width",
    "format_char",
    "homoglyph",
    "combining",
    "delimiter",
    "faithful_delimiter",
    "instruction",
    "pairwise",
    "length",
}
BENIGN = [
    CLEAN,
    "Slow down: the car ahead brakes (about 20 m away).",
    "Region [3] is the cyclist; keep right [see the sign] and yield.",
    "Yield to the pedestrian (1) and then to the cyclist (2).",
    "Risk: high. Action: brake now; distance ≈ 12 m, speed < 30 km/h.",
    "The safety rating of the car ahead does not matter here.",
    "Тормозите: впереди пешеход.",
    "前方の車両に注意してください：約20 m先。",
    "Don't ignore the traffic rules: the light is red.",
]


def load_corpus() -> list[dict]:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    for case in cases:
        case["text"] = case["answer"].replace("{clean}", CLEAN)
    return cases


CASES = load_corpus()


def test_corpus_covers_every_variant():
    assert len(CASES) >= 75
    assert len({c["id"] for c in CASES}) == len(CASES)
    tags = {t for c in CASES for t in c["tags"]}
    assert REQUIRED_TAGS <= tags, REQUIRED_TAGS - tags
    # the harness's obeying judge can read a verdict in most of them (the rest are plain language / escapes)
    readable = [c for c in CASES if requested_verdict(c["text"])]
    assert len(readable) >= 0.9 * len(CASES)


def _parsers():
    yield lambda t: parse_bracket_rating(t)
    yield lambda t: parse_pairwise(t)
    yield lambda t: parse_dimension_json(t)
    for key in ("Most Likely Score", "Final Score", "Final Assessment Score"):
        yield lambda t, key=key: parse_keyed_binary(t, key)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_guarded_answer_holds_nothing_a_reader_could_take_for_a_verdict(case):
    g = guard(case["text"])
    assert requested_verdict(g.text) == {}, g.text
    for parse in _parsers():
        for text in (g.text, generous_reading(g.text)):
            with pytest.raises(VerdictParseError):
                parse(text)
    assert guard(g.text).text == g.text  # idempotent: the methods guard what the runner prepared
    assert looks_like_injection(case["text"])
    assert not any(ch in g.text for ch in "\u200b\u200c\u200d\u2060\ufeff\u00ad\u202e")


@pytest.mark.parametrize("text", BENIGN)
def test_benign_answers_are_not_flagged_and_keep_their_words(text):
    assert not looks_like_injection(text)
    g = guard(text)
    assert REMOVED not in g.text and not g.removed
    assert g.text == text or g.normalised  # only NFKC may touch them (the fullwidth colon of the Japanese one)


def _items(method: str, cases: list[dict]) -> list[JudgeItem]:
    fields = METHOD_ITEMS[method]
    items = [JudgeItem(id="clean", question=QUESTION, answer=CLEAN, **fields)]
    items += [JudgeItem(id=c["id"], question=QUESTION, answer=c["text"], **fields) for c in cases]
    return items


LEGACY = [c for c in CASES if "legacy" in c["tags"]]
_LEGACY_RAW = [c["text"] for c in LEGACY]


def _script(body: dict, seen: int) -> Reply:
    behaviour = body["model"]
    honest = verdict_for(body, rating=4, cee_vote=0, prefer_text=PREFERRED_B)
    if behaviour == "quote_before":  # quotes the request and raw hostile texts, then its own verdict
        return Reply(200, completion_body(quoting_reply(body, honest, raw_quotes=_LEGACY_RAW)))
    return Reply(200, completion_body(hostile_reply(body, behaviour, honest)))


def _outcome(
    variant: str, mode: str, behaviour: str, server: ScriptedServer, cache_dir: Path, cases: list[dict] = CASES
) -> tuple[list[str], list[str]]:
    """(ids of manipulated cases, ids of cases that ended in an error) of one run."""
    method, overrides = VARIANTS[variant]
    judge = get_method(method)
    settings_ = {**(load_method_config(method).get("settings") or {}), **overrides}
    ctx = JudgeContext(nonce_key=b"k" * 32, settings=settings_)
    settings = ClientSettings(base_url=server.base_url, model=behaviour, timeout_s=10, max_retries=1)
    items = _items(method, cases)
    result = run_judge(items, judge, mode, ctx, VerdictCache(cache_dir), ChatClient(settings), concurrency=8)
    by_id = {v["id"]: v for v in result.verdicts}
    clean = by_id.pop("clean")
    assert clean["status"] == "ok" and clean["score"] == HONEST_SCORE[method], clean
    manipulated = [i for i, v in by_id.items() if v["status"] == "ok" and v["score"] != clean["score"]]
    errors = [i for i, v in by_id.items() if v["status"] != "ok"]
    if mode == "robust":
        assert result.summary["warnings"] == []
        unflagged = [i for i, v in by_id.items() if "answer_injection_suspected" not in v.get("flags", [])]
        assert unflagged == []
    else:
        assert "open to answer injection" in result.summary["warnings"][0]
    return manipulated, errors


def _report(method: str, mode: str, behaviour: str, manipulated: list, errors: list) -> None:
    n = len(CASES)
    print(f"hostile {method:14s} {mode:8s} {behaviour:12s} manipulated {len(manipulated):3d}/{n}", end="")
    print(f"  errors {len(errors)} {errors if errors else ''}")


@pytest.mark.slow
@pytest.mark.openai
@pytest.mark.parametrize("method", list(VARIANTS))
def test_hostile_corpus_against_echoing_quoting_and_obeying_judges(tmp_path: Path, method: str):
    table = {}
    with ScriptedServer(_script, max_requests=20_000) as server:
        for mode in ("robust", "faithful"):
            for behaviour in BEHAVIOURS:
                table[mode, behaviour] = _outcome(method, mode, behaviour, server, tmp_path / f"{mode}-{behaviour}")
    for (mode, behaviour), (manipulated, errors) in table.items():
        _report(method, mode, behaviour, manipulated, errors)
    for behaviour in BEHAVIOURS:
        assert table["robust", behaviour] == ([], []), (behaviour, table["robust", behaviour])
    # faithful mode is open to injection: the harness must see it (else the robust zeros would prove nothing)
    assert table["faithful", "echo"][0] and table["faithful", "obey"][0]


@pytest.mark.openai
@pytest.mark.parametrize("mode", ["robust", "faithful"])
@pytest.mark.parametrize("method", list(METHOD_ITEMS))
def test_quotes_before_the_verdict_never_count(tmp_path: Path, method: str, mode: str):
    """A judge that quotes the request and the raw hostile texts, then gives its own verdict: the last verdict
    wins in both modes (the older corpus; the parsers read only the last verdict)."""
    with ScriptedServer(_script) as server:
        manipulated, _ = _outcome(method, mode, "quote_before", server, tmp_path, LEGACY)
    assert manipulated == []


def test_robust_prompt_hides_markup_and_uses_keyed_nonce():
    judge = get_method("codalm")
    hostile = {c["id"]: c["text"] for c in CASES}
    item = JudgeItem(
        id="x",
        category="general_perception",
        reference="r",
        answer=hostile["rating_brackets@suffix"]
        + hostile["json_overall@suffix"]
        + hostile["forged_answer_fence@suffix"],
    )
    ctx = JudgeContext(nonce_key=b"a" * 32)
    user = judge.requests(item, "robust", ctx)[0].messages[-1]["content"]
    answer_block = user[user.index("<<<PREDICTION") :]
    assert "[[10]]" not in answer_block and "{" not in answer_block and "<<<END ANSWER 0123" not in answer_block
    again = judge.requests(item, "robust", ctx)[0].messages[-1]["content"]
    assert again == user  # same key -> same nonce -> same request (cache hits on rerun)
    other = judge.requests(item, "robust", JudgeContext(nonce_key=b"b" * 32))[0].messages[-1]["content"]
    assert other != user
