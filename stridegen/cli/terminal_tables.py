"""Terminal tables that keep their label column on a narrow terminal (80 columns).

Rich fits a table that is too wide by shrinking its wrappable columns first: a row-label column (scene, class,
category) then collapses to nothing, and numbers are cut to "…". ``fitted_tables`` instead splits the value
columns into as many tables as needed, each of them led by the full label column, so every label and every number
is printed whole: a wide table becomes two or three narrow ones, in column order.

Widths are measured the way rich draws a table with its default box and padding: each column takes its widest cell
(or header) plus two padding characters and one border, and the table one closing border. rich is imported inside
the functions, so that importing the CLI stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_PER_COLUMN = 3  # padding (one each side) + the left border of the column
_CLOSING = 1  # the table's right border


def cell_width(text: str) -> int:
    """Printed width of a cell given in rich markup (``[green]built[/green]`` is 5 wide)."""
    from rich.text import Text

    return Text.from_markup(text).cell_len


def _pack(base: int, widths: Sequence[int], limit: int) -> list[list[int]]:
    """Greedy packing of consecutive columns into tables of at most ``limit`` characters."""
    groups: list[list[int]] = [[]]
    used = base
    for i, w in enumerate(widths):
        need = w + _PER_COLUMN
        if groups[-1] and used + need > limit:
            groups.append([])
            used = base
        groups[-1].append(i)
        used += need
    return [g for g in groups if g] or [[]]


def column_groups(label_width: int, widths: Sequence[int], max_width: int) -> list[list[int]]:
    """Indices of the value columns split into as few consecutive groups as fit ``max_width`` beside the label
    column, balanced: the widest table is as narrow as that number of tables allows (a column wider than the room
    left is a group of its own)."""
    base = label_width + _PER_COLUMN + _CLOSING
    groups = _pack(base, widths, max_width)
    lo, hi = base + max((w + _PER_COLUMN for w in widths), default=0), max_width
    while lo < hi:  # the smallest table width that still needs no more tables (a linear-partition search)
        mid = (lo + hi) // 2
        if len(_pack(base, widths, mid)) <= len(groups):
            hi = mid
        else:
            lo = mid + 1
    return _pack(base, widths, lo) if lo <= max_width else groups


def fitted_tables(
    title: str,
    label: str,
    columns: Sequence[str],
    rows: Sequence[tuple[str, Sequence[str]]],
    width: int | None = None,
    caption: str | None = None,
    justify: str | Sequence[str] = "right",
    row_styles: Sequence[str | None] | None = None,
) -> list[Any]:
    """rich Tables of ``rows`` ((label, cells) in markup) under ``columns``, each led by the label column and no
    wider than ``width`` (default: the terminal's), "(1/2)" after split titles; then the caption (a rich Text), if any.
    ``justify`` is one alignment for every value column or one per column; ``row_styles`` a style per row (e.g.
    "bold" for a total row)."""
    from rich.console import Console
    from rich.table import Table

    max_width = width if width is not None else Console().width
    label_width = max([cell_width(label), *(cell_width(r[0]) for r in rows)])
    widths = [max([cell_width(h), *(cell_width(r[1][i]) for r in rows)]) for i, h in enumerate(columns)]
    groups = column_groups(label_width, widths, max_width)
    aligns = [justify] * len(columns) if isinstance(justify, str) else list(justify)
    fold = label_width + _PER_COLUMN + _CLOSING + (max(widths, default=0) + _PER_COLUMN) > max_width
    tables: list[Any] = []
    for n, group in enumerate(groups, start=1):
        suffix = f" ({n}/{len(groups)})" if len(groups) > 1 else ""
        table = Table(title=f"{title}{suffix}" if title else None)
        if fold:  # a label too long to sit beside even one column: wrap it rather than lose it
            room = max(8, max_width - max((widths[i] for i in group), default=0) - 2 * _PER_COLUMN - _CLOSING)
            table.add_column(label, overflow="fold", max_width=room)
        else:
            table.add_column(label, no_wrap=True, min_width=label_width)
        for i in group:
            table.add_column(columns[i], justify=aligns[i], no_wrap=True)  # type: ignore[arg-type]
        for r, (head, cells) in enumerate(rows):
            style = row_styles[r] if row_styles is not None else None
            table.add_row(head, *(cells[i] for i in group), style=style)
        tables.append(table)
    if caption:  # under the last table, as wide as the terminal (a caption inside a narrow table wraps early)
        from rich.text import Text

        tables.append(Text(caption, style="table.caption", justify="center"))
    return tables
