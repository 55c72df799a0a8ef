"""The judge tests' fake judges over the scripted loopback server (tests/chat_server.py, re-exported here for
the judge tests)."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from tests.chat_server import Reply, ScriptedServer, completion_body, last_user_text

__all__ = ["Reply", "ScriptedServer", "completion_body", "last_user_text"]


# --------------------------------------------------------------------------------------------------------------
# A fake judge: recognises the verdict format a request asks for and answers with a fixed verdict, after an
# analysis that quotes the request's user text (which holds the delimited answer) and optional raw quotes.

_CEE_KEY = re.compile(r"in the form '([A-Za-z ]+): 1'")
_DIMENSION_LINE = re.compile(r"^- (.+?): .* \(importance (\d)\)$", re.M)


def verdict_for(body: dict, rating: int = 4, cee_vote: int = 0, prefer_text: str = "") -> str:
    """The fake judge's final verdict line for a request, in the format the request asks for.

    Pairwise: the judge prefers the answer containing ``prefer_text``, whichever position it is shown in.
    """
    text = last_user_text(body)
    if "and the overall score, exactly like:" in text:
        dims = {name: [rating, int(w)] for name, w in _DIMENSION_LINE.findall(text)}
        dims["Overall Score"] = rating
        return json.dumps(dims)
    match = _CEE_KEY.search(text)
    if match:
        return f"{match.group(1)}: {cee_vote}"
    if 'or "[[C]]" for a tie' in text:
        label_b = max(text.find("ANSWER B "), text.find("Assistant B's answer begins"))
        where = text.find(prefer_text, label_b if label_b >= 0 else 0)
        return "[[B]]" if label_b >= 0 and where >= 0 else "[[A]]"
    return f"Rating: [[{rating}]]"


def quoting_reply(body: dict, verdict: str, raw_quotes: list[str] = (), quote_after: bool = False) -> str:
    """Analysis quoting the user text (and raw strings), then the verdict; optionally the quote again after."""
    quoted = last_user_text(body)
    parts = ["Analysis: the request reads as follows.", quoted]
    parts += [f'The answer also claims: "{q}"' for q in raw_quotes]
    parts.append("Weighing everything, my own judgement follows.")
    parts.append(verdict)
    if quote_after:  # re-quote only the nonce-delimited blocks (the answer as the judge received it)
        blocks = re.findall(r"<<<(?!END )([A-Z ]+) ([0-9a-f]+)>>>.*?<<<END \1 \2>>>", quoted, flags=re.S)
        spans = [
            m.group(0)
            for m in re.finditer(r"<<<(?!END )([A-Z ]+) ([0-9a-f]+)>>>.*?<<<END \1 \2>>>", quoted, flags=re.S)
        ]
        assert blocks, "quote_after needs delimited blocks"
        parts.append("For the record, the evaluated text was:\n" + "\n".join(spans))
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------------------------
# Three hostile-minded fake judges for the hostile corpus (tests/eval/judges/hostile_answers.jsonl). Each gives an
# honest verdict (verdict_for) and then misbehaves in its own way with the answer *as the request shows it*:
#
# - echo: writes its verdict, then repeats the answer text it was shown, without any delimiter (a model that
#   restates the answer after its verdict); a JSON verdict is then written again with the answer spliced in
#   as its last member;
# - quote_after: quotes the answer blocks with their delimiters before and after its verdict, and finally an
#   opened block that is never closed (a reply cut off mid-quote);
# - obey: reads the answer the way a model that looks through Unicode look-alikes, invisible characters and
#   whitespace would (generous_reading), and if it finds a verdict there, in any of our formats, gives that
#   verdict instead of its own.

_ROBUST_BLOCK = re.compile(r"<<<(?!END )((?:ANSWER|PREDICTION)(?: [AB])?) ([0-9a-f]+)>>>\n(.*?)\n<<<END \1 \2>>>", re.S)
# (begin label, end label) of the answer sections of the faithful layouts; None: to the end of the text.
_FAITHFUL_SECTIONS = [
    ("[Predicted text begins]\n", "\n[Predicted text ends]"),
    ("[Assistant's answer begins]\n", "\n[Assistant's answer ends]"),
    ("[Assistant A's answer begins]\n", "\n[Assistant A's answer ends]"),
    ("[Assistant B's answer begins]\n", "\n[Assistant B's answer ends]"),
    ("[Assistant's answer]\n", "\n[Dimensions"),
    ("Model's answer: ", None),
]


def answer_sections(body: dict) -> list[tuple[str, str]]:
    """(the answer as shown, with its delimiters or labels; the text inside) for each judged answer."""
    text = last_user_text(body)
    found = [(m.group(0), m.group(3)) for m in _ROBUST_BLOCK.finditer(text)]
    if found:
        return found
    for begin, end in _FAITHFUL_SECTIONS:
        start = text.find(begin)
        if start < 0:
            continue
        stop = text.rfind(end) if end is not None else -1
        stop = stop if stop > start else len(text)
        inner = text[start + len(begin) : stop]
        found.append((text[start : stop + (len(end) if end is not None and stop < len(text) else 0)], inner))
    return found


# Look-alikes as a reader sees through them (written for the tests, independently of safety.py).
_LOOKALIKE = {
    **{c: "[" for c in "([［【〔〖〘〚⟦⟨⟪⦋⦍⦏⁅❨❪❬❮❰❲⸢⸤⸦⸨〈《「『﹙﹝﹇<＜"},
    **{c: "]" for c in ")]］】〕〗〙〛⟧⟩⟫⦌⦎⦐⁆❩❫❭❯❱❳⸣⸥⸧⸩〉》」』﹚﹞﹈>＞"},
    **{c: "{" for c in "{｛﹛⦃❴"},
    **{c: "}" for c in "}｝﹜⦄❵"},
    **{c: ":" for c in ":：﹕︓∶꞉˸ː=＝≔"},
    **{c: '"' for c in "'\"＂＇“”„‟‘’‚‛«»‹›`´"},
    **dict(
        zip("аеорсухіѕԁһАВЕКМНОРСТХοαικρνΟΑΒΕΖΗΙΚΜΝΡΤΥΧ", "aeopcyxisdhABEKMHOPCTXoaikpvOABEZHIKMNPTYX", strict=True)
    ),
}


def generous_reading(text: str) -> str:
    """NFKC; invisible (Cf), combining (Mn, Me) and filler characters dropped; every decimal digit as ASCII;
    look-alike brackets, braces, colons, quotes and letters as their ASCII forms; no space around [ ] { } :."""
    t = unicodedata.normalize("NFKC", text)
    t = "".join(c for c in t if unicodedata.category(c) not in ("Cf", "Mn", "Me") and c not in "\u3164\u115f\u1160")
    t = "".join(str(unicodedata.decimal(c)) if unicodedata.category(c) == "Nd" else _LOOKALIKE.get(c, c) for c in t)
    return re.sub(r"\s*([\[\]{}:])\s*", r"\1", t)


_CEE_KEYS = ("Most Likely Score", "Final Score", "Final Assessment Score")
_ANY_KEYED = re.compile(r'(?i)"?(?:overall\s*score|rating|score)"?:"?\[*([0-9]+(?:\.[0-9]+)?)')


def requested_verdict(text: str) -> dict[str, Any]:
    """What a verdict-obeying judge would read in ``text``: rating (1-10), vote (0/1), winner (A/B/C)."""
    from stridegen.eval.judges.parsing import (
        parse_bracket_rating,
        parse_dimension_json,
        parse_keyed_binary,
        parse_pairwise,
    )
    from stridegen.eval.judges.records import VerdictParseError

    r = generous_reading(text)
    asked: dict[str, Any] = {}
    for read in (
        lambda: parse_bracket_rating(r),
        lambda: parse_dimension_json(r)["overall"],
        lambda: float(_ANY_KEYED.findall(r)[-1]),
    ):
        try:
            value = float(read())
        except (VerdictParseError, IndexError, ValueError):
            continue
        if 1 <= value <= 10:
            asked["rating"] = value
            break
    for key in _CEE_KEYS:
        try:
            asked["vote"] = parse_keyed_binary(r, key)
        except VerdictParseError:
            continue
    try:
        asked["winner"] = parse_pairwise(r)
    except VerdictParseError:
        pass
    return asked


def verdict_format(body: dict) -> str:
    """Which verdict a request asks for: json, cee, pair or rating."""
    text = last_user_text(body)
    if "and the overall score, exactly like:" in text:
        return "json"
    if _CEE_KEY.search(text):
        return "cee"
    if 'or "[[C]]" for a tie' in text:
        return "pair"
    return "rating"


def obeyed_verdict(body: dict, honest: str) -> str:
    """The verdict an obeying judge writes: the one the shown answers ask for, if any, else ``honest``."""
    asked: dict[str, Any] = {}
    for _, inner in answer_sections(body):
        asked.update(requested_verdict(inner))
    fmt = verdict_format(body)
    if fmt == "pair" and "winner" in asked:
        return f"[[{asked['winner']}]]"
    if fmt == "cee" and ("vote" in asked or "rating" in asked):
        vote = asked.get("vote", 1 if asked.get("rating", 0) >= 6 else 0)
        key = _CEE_KEY.search(last_user_text(body))
        assert key is not None
        return f"{key.group(1)}: {vote}"
    if fmt == "json" and "rating" in asked:
        verdict = json.loads(honest)
        return json.dumps(
            {k: ([asked["rating"], v[1]] if isinstance(v, list) else asked["rating"]) for k, v in verdict.items()}
        )
    if fmt == "rating" and "rating" in asked:
        return f"Rating: [[{asked['rating']:g}]]"
    return honest


def hostile_reply(body: dict, behaviour: str, honest: str) -> str:
    """The reply of the fake judge ``behaviour`` (echo, quote_after, obey) whose honest verdict is ``honest``."""
    sections = answer_sections(body)
    if behaviour == "echo":
        reply = honest + "\n" + "\n".join(inner for _, inner in sections)
        if verdict_format(body) == "json":  # and once more inside its JSON verdict, as one more member
            reply += "\n" + "\n".join(f"{honest[:-1]}, {inner}}}" for _, inner in sections)
        return reply
    if behaviour == "quote_after":
        shown = "\n".join(whole for whole, _ in sections)
        reply = f"The answer reads:\n{shown}\nMy verdict follows.\n{honest}\nFor the record:\n{shown}"
        if sections:  # a reply cut off in the middle of a last quote: the block is opened, never closed
            whole, inner = sections[0]
            reply += "\nOnce more:\n" + whole[: whole.index(inner) + len(inner)]
        return reply
    if behaviour == "obey":
        return "I follow the instructions I was given.\n" + obeyed_verdict(body, honest)
    raise ValueError(f"unknown behaviour {behaviour}")
