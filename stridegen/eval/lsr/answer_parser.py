"""Read a number with its unit out of a model's free-text answer (distance, direction, speed).

Two grammars, chosen by name:

- ``official``: behaves exactly like the STRIDE-QA-Bench toolkit's parser (turingmotors/STRIDE-QA-Dataset,
  ``benchmarks/STRIDE-QA-Bench/src/strideqa_bench/utils/parser.py``, read for behaviour): the first unit family,
  in a fixed priority order, that occurs anywhere in the text wins; numbers carry no sign for distance and speed;
  angles are read only from degree forms (no clock positions); a number may start inside another token. It is
  what the ``strideqa-bench`` tolerance profile uses, so our numbers equal the toolkit's.
- ``robust`` (ours): Unicode-normalised, case-folded text is scanned once, left to right, for quantities
  ``NUMBER [range] UNIT``; for each kind the first quantity of that kind wins. It reads signs, ranges
  ("10-12 m" -> 11), number words ("twelve meters"), thousands separators, clock positions ("2 o'clock"),
  left / right words ("30 degrees to the right" -> -30), and a few unit-less phrases with a definite meaning
  ("directly ahead" -> 0 degrees, "stationary" -> 0 m/s). A bare number with no unit is *not* a value: the
  answer is unparseable and scores as a failure (never as a default unit).

Canonical units: metres, degrees (ego frame, 0 = ahead, counter-clockwise / left positive, (-180, 180]),
metres per second. The grammar is documented in docs/metrics-lsr.md.

The grammars live in ``official_grammar`` and ``robust_grammar``, what a parse returns (kinds, ``Parsed`` /
``Failure``, units) in ``answer_values``; this module picks a grammar by name and parses batches of answers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from stridegen.eval.lsr.answer_values import KINDS, PARSER_MODES, Kind, Parsed, ParseOutcome, ParserMode
from stridegen.eval.lsr.official_grammar import failure_reasons, official_scan, parse_official
from stridegen.eval.lsr.robust_grammar import parse_robust, scan_robust


def parse_answer(text: str, kind: Kind, mode: ParserMode = "robust") -> ParseOutcome:
    """Read one ``kind`` quantity from ``text`` with the named grammar."""
    if mode == "official":
        return parse_official(text, kind)
    if mode == "robust":
        return parse_robust(text, kind)
    raise ValueError(f"unknown parser mode {mode!r}; expected one of {PARSER_MODES}")


# ============================================================================================ batch interface


def parse_many(texts: Iterable[str], kinds: Iterable[Kind], mode: ParserMode) -> tuple[np.ndarray, list[str]]:
    """Parse ``texts[i]`` as ``kinds[i]``: values float64 [N] (NaN where unparseable) and a reason per item
    (``""`` when parsed). Each distinct (text, kind) is parsed once."""
    texts = list(texts)
    kinds = list(kinds)
    if len(texts) != len(kinds):
        raise ValueError(f"{len(texts)} texts but {len(kinds)} kinds")
    names = sorted(set(kinds))
    code_of = {k: c for c, k in enumerate(names)}
    return parse_grouped(texts, np.fromiter((code_of[k] for k in kinds), np.int64, len(kinds)), names, mode)


def parse_grouped(
    texts: Sequence[str], kind_code: np.ndarray, kind_names: Sequence[str], mode: ParserMode
) -> tuple[np.ndarray, list[str]]:
    """``parse_many`` with kinds given as integer codes into ``kind_names`` (no per-item string compares).

    The distinct texts are found once (a dict over all items); each kind then reads only the distinct texts its
    items use, and the values and failure reasons are spread back to the items with numpy."""
    if mode not in PARSER_MODES:
        raise ValueError(f"unknown parser mode {mode!r}; expected one of {PARSER_MODES}")
    n = len(texts)
    values = np.full(n, np.nan)
    if n == 0:
        return values, []
    kind_of_item = np.asarray([KINDS.index(k) for k in kind_names], dtype=np.int64)[kind_code]
    uniq_texts = list(dict.fromkeys(texts))
    position = dict(zip(uniq_texts, range(len(uniq_texts)), strict=True))
    codes = np.fromiter(map(position.__getitem__, texts), np.int64, n)
    reason_table: dict[str, int] = {"": 0}
    reason_code = np.zeros(n, dtype=np.int64)
    scans: dict[int, dict[Kind, ParseOutcome]] = {}  # robust: one scan per distinct text serves every kind
    for k in np.unique(kind_of_item).tolist():
        kind = KINDS[k]
        sel: np.ndarray | None = kind_of_item == k
        if sel.all():  # type: ignore[union-attr]
            sel = None
        item_codes = codes if sel is None else codes[sel]
        used, local = np.unique(item_codes, return_inverse=True)
        used_list = used.tolist()
        subset = uniq_texts if len(used_list) == len(uniq_texts) else list(map(uniq_texts.__getitem__, used_list))
        if mode == "official":
            got, ok, _ = official_scan(subset, kind)
            failed = np.flatnonzero(~ok).tolist()
            why = failure_reasons(list(map(subset.__getitem__, failed)))
        else:
            outcomes = [
                (scans[j] if j in scans else scans.setdefault(j, scan_robust(t)))[kind]
                for j, t in zip(used_list, subset, strict=True)
            ]
            got = np.asarray([o.value if type(o) is Parsed else math.nan for o in outcomes], dtype=np.float64)
            failed = [j for j, o in enumerate(outcomes) if type(o) is not Parsed]
            why = [outcomes[j].reason for j in failed]
        why_code = np.zeros(len(used_list), dtype=np.int64)
        why_code[failed] = [reason_table.setdefault(w, len(reason_table)) for w in why]
        if sel is None:
            values[:] = got[local]
            reason_code[:] = why_code[local]
        else:
            values[sel] = got[local]
            reason_code[sel] = why_code[local]
    reasons = np.asarray(list(reason_table), dtype=object)[reason_code].tolist()
    return values, reasons
