"""The report's "Detector QA error" section: shown when the dataset folder holds the results of
``stridegen validate --qa`` (this build compared with an oracle build of the same log; docs/validate-qa.md).

It reads the results file as JSON (no import of the evaluator, which sits above this layer): the totals per QA
category, the rows per predicate (answers beyond the bench's tolerance, |error| median and 90th percentile,
questions lost and gained), the tolerances, and the error histograms when their PNG is there.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from stridegen.core.errors import DataFormatError
from stridegen.viz.report.markup import esc, fmt_int, fmt_pct, note, section, subsection, table
from stridegen.viz.report.results import _read_json

# The files `stridegen validate --qa` writes into the compared (candidate) dataset's folder; the evaluator
# (stridegen/eval/validate/qa_evaluate.py) takes these names from here.
RESULTS_NAME = "validate_qa.json"
PLOT_NAME = "validate_qa_errors.png"
SECTION_ID = "validate-qa"
SECTION_LABEL = "Detector QA error"


def _read(path: Path) -> dict[str, Any]:
    doc = _read_json(path)  # the report's one JSON reader: DataFormatError naming the file
    keys = ("total", "categories", "rows", "candidate", "tolerances")
    if not isinstance(doc, dict) or any(k not in doc for k in keys):
        missing = [k for k in keys if not isinstance(doc, dict) or k not in doc]
        raise DataFormatError(path, f"not the results of stridegen validate --qa (no {', '.join(missing)})")
    return doc


def _num(stats: Any, key: str) -> str:
    if not isinstance(stats, dict) or not stats.get("n") or not isinstance(stats.get(key), (int, float)):
        return "-"
    return f"{float(stats[key]):.2f}"


def validate_qa_section(dataset_dir: str | Path) -> str | None:
    """The section's HTML, or None when the folder has no results file. DataFormatError for a file it cannot
    read."""
    folder = Path(dataset_dir)
    path = folder / RESULTS_NAME
    if not path.is_file():
        return None
    doc = _read(path)
    cand, ref = doc["candidate"], doc.get("reference", {})
    detector = cand.get("detector", {})
    intro = (
        f"this build (detector <code>{esc(detector.get('name', '?'))}</code>, tracker "
        f"<code>{esc(cand.get('tracker', '?'))}</code>, segmenter <code>{esc(cand.get('segmenter', '?'))}</code>) "
        f"against an oracle build of the same log (<code>{esc(ref.get('dataset', '?'))}</code>): questions paired "
        "by what they ask about which objects, the oracle's answer taken as the truth and judged with the bench's "
        f"tolerance (<code>{esc(RESULTS_NAME)}</code> of <code>stridegen validate --qa</code>)"
    )
    blocks = [*doc["categories"].items(), ("all", doc["total"])]
    reasons = list(doc["total"].get("lost_by_reason", {}))  # the file's own reason names, in its order
    total_rows = []
    for name, block in blocks:
        by_reason = [
            fmt_int(block.get(f"{side}_by_reason", {}).get(r, 0)) for side in ("lost", "gained") for r in reasons
        ]
        total_rows.append(
            [
                esc(name),
                fmt_int(block.get("matched", 0)),
                fmt_int(block.get("changed", 0)),
                fmt_pct(block.get("changed", 0), block.get("matched", 0)),
                fmt_int(block.get("lost", 0)),
                fmt_int(block.get("gained", 0)),
                *by_reason,
            ]
        )
    headers = ["category", "matched", "changed", "beyond tolerance", "lost", "gained"]
    headers += [f"{side}: {r.replace('_', ' ')}" for side in ("lost", "gained") for r in reasons]
    body = subsection("Totals", table(headers, total_rows, table_id="validate-qa-totals"))
    rows = []
    for r in doc["rows"]:
        value_row = r.get("dimension") == "value"
        name = r["predicate"] if value_row else f"{r['predicate']} ({r.get('dimension')})"
        rows.append(
            [
                esc(r["category"]),
                esc(name),
                esc(r.get("kind", "")),
                fmt_int(r.get("matched", 0)),
                fmt_pct(r.get("changed", 0), r.get("matched", 0)),
                _num(r.get("abs_error"), "p50"),
                _num(r.get("abs_error"), "p90"),
                esc(r.get("unit", "")),
                fmt_int(r.get("lost", 0)) if value_row else "",
                fmt_int(r.get("gained", 0)) if value_row else "",
            ]
        )
    headers = ["category", "predicate", "kind", "matched", "beyond tolerance", "|err| p50", "|err| p90", "unit"]
    body += subsection(
        "Per predicate",
        table([*headers, "lost", "gained"], rows, table_id="validate-qa-rows", numeric_from=3),
    )
    plot = folder / PLOT_NAME
    if doc.get("plot") and plot.is_file():
        image = base64.b64encode(plot.read_bytes()).decode("ascii")
        body += (
            f'<figure class="chart wide" data-chart="validate-qa-errors"><img class="plot" alt="answer errors" '
            f'src="data:image/png;base64,{image}"><figcaption>|candidate - oracle| per answer kind '
            f"({esc(PLOT_NAME)})</figcaption></figure>"
        )
    rules = "; ".join(f"{esc(k)}: {esc(v)}" for k, v in doc["tolerances"].items())
    body += note(
        "Reasons a question is lost or gained, looking at the other build's keyframe: no track: an object it "
        "names has no track there (missed, 2 m or more away, or a false positive); not marked: tracked but not a "
        "marked region of that image (visibility filter, region size); not asked: every object marked, the "
        "question not asked (an ambiguity threshold, another draw of the per-image caps, or a spatiotemporal group "
        f"skipped). Tolerances: {rules}"
    )
    return section(SECTION_ID, SECTION_LABEL, body, intro)
