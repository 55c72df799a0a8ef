"""HTML building blocks of the report: escaped text, number formats, tables, figures and sections.

Every string from data (scene names, questions, answers, file names) goes through ``esc``; numbers through
``fmt_int`` / ``fmt_float`` / ``fmt_pct`` so that tables read the same everywhere (tests parse them back).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def json_number(value: object) -> float:
    """A JSON number as a float; NaN for null, missing, booleans and non-numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def fmt_int(value: float | int | None) -> str:
    """Integers with thousands separators ("16,269"); "-" for None."""
    return "-" if value is None else f"{int(value):,}"


def fmt_float(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{float(value):.{digits}f}"


def fmt_pct(part: float, whole: float, digits: int = 1) -> str:
    """``part`` as a percentage of ``whole`` ("-" when whole is 0)."""
    return "-" if not whole else f"{100.0 * part / whole:.{digits}f}%"


Cell = str | tuple[str, str]  # already-escaped HTML, or (HTML, extra attributes)


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    table_id: str | None = None,
    caption: str | None = None,
    numeric_from: int = 1,
) -> str:
    """A table: columns from ``numeric_from`` on are right-aligned numbers. Cells are HTML (escape data first)."""
    attrs = f' id="{esc(table_id)}"' if table_id else ""
    out = [f'<div class="table-wrap"><table{attrs}>']
    if caption:
        out.append(f"<caption>{caption}</caption>")
    out.append(
        "<thead><tr>"
        + "".join(f"<th{' class=num' if i >= numeric_from else ''}>{esc(h)}</th>" for i, h in enumerate(headers))
        + "</tr></thead><tbody>"
    )
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            html, extra = cell if isinstance(cell, tuple) else (cell, "")
            num = " class=num" if i >= numeric_from else ""
            cells.append(f"<td{num}{(' ' + extra) if extra else ''}>{html}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def figure(svg: str, caption: str, key: str) -> str:
    """A chart with its caption; ``key`` names it in the DOM (``data-chart``)."""
    return f'<figure class="chart" data-chart="{esc(key)}">{svg}<figcaption>{caption}</figcaption></figure>'


def section(section_id: str, title: str, body: str, intro: str = "") -> str:
    lead = f'<p class="intro">{intro}</p>' if intro else ""
    return f'<section id="{esc(section_id)}"><h2>{esc(title)}</h2>{lead}{body}</section>'


def subsection(title: str, body: str, sub_id: str | None = None) -> str:
    attrs = f' id="{esc(sub_id)}"' if sub_id else ""
    return f'<div class="sub"{attrs}><h3>{esc(title)}</h3>{body}</div>'


def note(text: str) -> str:
    return f'<p class="note">{text}</p>'
