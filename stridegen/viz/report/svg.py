"""Small inline SVG charts for the HTML report: bars, lines, a polar histogram and interval plots.

Hand-written SVG (no plotting library): a report of dozens of charts renders in milliseconds, needs no extra
dependency, and the page stays self-contained. Every chart is a ``<svg>`` string with a ``viewBox`` (it scales
with the page), a ``<title>`` for screen readers, and its numbers in ``<title>`` tooltips of the marks.

Coordinates: SVG user units, x right, y down. Charts share one margin layout: ``_Frame`` maps data values to the
plot area inside the axes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

# A categorical palette of distinguishable colours (chosen for this report; series i uses PALETTE[i % len]).
PALETTE: tuple[str, ...] = (
    "#3b6fb6",
    "#e07b39",
    "#4a9d5b",
    "#c8433f",
    "#8065a8",
    "#8c6d4f",
    "#d46fae",
    "#7f7f7f",
    "#b5b83a",
    "#3fb0c0",
)
_WIDTH, _HEIGHT = 560, 300
Values = Sequence[float | None]  # a series' numbers; None (or NaN) for a gap
_MARGIN = (48, 26, 40, 56)  # top, right, bottom, left


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def fmt_number(value: float) -> str:
    """Compact tick / tooltip text: integers without decimals, else up to 3 significant digits."""
    if math.isnan(value):
        return "-"
    if float(value).is_integer() and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.3g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten (the usual "nice numbers"
    rule, Heckbert 1990, "Nice numbers for graph labels", Graphics Gems)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    value = start
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < hi:
        ticks.append(round(value, 10))
    return ticks


@dataclass(frozen=True)
class _Frame:
    """The plot area of a chart and its data ranges."""

    x0: float
    x1: float
    y0: float
    y1: float
    left: float = _MARGIN[3]
    top: float = _MARGIN[0]
    width: float = _WIDTH - _MARGIN[1] - _MARGIN[3]
    height: float = _HEIGHT - _MARGIN[0] - _MARGIN[2]

    def x(self, value: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return self.left + (value - self.x0) / span * self.width

    def y(self, value: float) -> float:
        span = (self.y1 - self.y0) or 1.0
        return self.top + self.height - (value - self.y0) / span * self.height


def _svg(title: str, body: list[str], width: int = _WIDTH, height: int = _HEIGHT) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" class="chart-svg">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "middle", size: int = 11, extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" {extra}>{escape(text)}</text>'


def _legend(names: Sequence[str], width: int = _WIDTH) -> list[str]:
    """One row of coloured squares and names above the plot area (wraps to a second row when long)."""
    out, x, y = [], float(_MARGIN[3]), 26.0
    for i, name in enumerate(names):
        w = 18 + 6.5 * len(name)
        if x + w > width - 8 and x > _MARGIN[3]:
            x, y = float(_MARGIN[3]), y + 14
        out.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{color(i)}"/>')
        out.append(_text(x + 14, y, name, anchor="start", size=10))
        x += w
    return out


def _axes(
    frame: _Frame,
    xlabel: str,
    ylabel: str,
    yticks: Sequence[float],
    xticks: Sequence[tuple[float, str]],
    rotate: bool = False,
) -> list[str]:
    out = []
    bottom = frame.top + frame.height
    for t in yticks:
        y = frame.y(t)
        out.append(
            f'<line x1="{frame.left:.1f}" x2="{frame.left + frame.width:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(_text(frame.left - 5, y + 4, fmt_number(t), anchor="end", size=10))
    for value, label in xticks:
        x = frame.x(value)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" stroke="#555"/>')
        if rotate:  # long category names: slanted, ending under their tick
            y = bottom + 12
            out.append(_text(x, y, label, anchor="end", size=10, extra=f'transform="rotate(-35 {x:.1f} {y:.1f})"'))
        else:
            out.append(_text(x, bottom + 15, label, size=10))
    out.append(
        f'<path d="M{frame.left:.1f},{frame.top:.1f} V{bottom:.1f} H{frame.left + frame.width:.1f}" '
        'fill="none" stroke="#555"/>'
    )
    out.append(_text(frame.left + frame.width / 2, _HEIGHT - 6, xlabel, size=11))
    mid = frame.top + frame.height / 2
    out.append(_text(14, mid, ylabel, size=11, extra=f'transform="rotate(-90 14 {mid:.1f})"'))
    return out


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    xlabel: str = "",
    ylabel: str = "count",
    stacked: bool = False,
    y_max: float | None = None,
) -> str:
    """Vertical bars: one group per category, one bar per series (side by side, or ``stacked``)."""
    names = list(series)
    values = [[float(v) for v in series[n]] for n in names]
    n_cat = len(categories)
    longest = max((len(str(c)) for c in categories), default=0)
    rotate = longest * 6.0 > (_WIDTH - _MARGIN[1] - _MARGIN[3]) / max(n_cat, 1)
    if stacked:
        top = max((sum(v[i] for v in values) for i in range(n_cat)), default=0.0)
    else:
        top = max((max(v, default=0.0) for v in values), default=0.0)
    yticks = nice_ticks(0.0, y_max if y_max is not None else max(top, 1e-9))
    plot_height = _HEIGHT - _MARGIN[0] - _MARGIN[2] - (min(70.0, 5.5 * longest) if rotate else 0.0)
    frame = _Frame(0.0, float(max(n_cat, 1)), 0.0, yticks[-1], height=plot_height)
    step = frame.width / max(n_cat, 1)
    every = max(1, math.ceil(n_cat / (40 if rotate else 16)))  # at most ~16 level labels, ~40 slanted
    xticks = [(i + 0.5, str(c)) for i, c in enumerate(categories) if i % every == 0]
    body = _axes(frame, "" if rotate else xlabel, ylabel, yticks, xticks, rotate=rotate)
    group_w = step * 0.8
    for i in range(n_cat):
        base = 0.0
        for s, v in enumerate(values):
            value = v[i]
            if stacked:
                x, w = frame.left + i * step + step * 0.1, group_w
                y_lo, y_hi = base, base + value
                base += value
            else:
                w = group_w / len(values)
                x, y_lo, y_hi = frame.left + i * step + step * 0.1 + s * w, 0.0, value
            if value <= 0:
                continue
            tip = f"{names[s]} · {categories[i]}: {fmt_number(value)}"
            body.append(
                f'<rect x="{x:.1f}" y="{frame.y(y_hi):.1f}" width="{max(w - 0.5, 0.5):.1f}" '
                f'height="{frame.y(y_lo) - frame.y(y_hi):.1f}" fill="{color(s)}"><title>{escape(tip)}</title></rect>'
            )
    if len(names) > 1 or names != [""]:
        body += _legend(names)
    return _svg(title, body)


def line_chart(
    title: str,
    series: Mapping[str, tuple[Values, Values]],
    xlabel: str = "",
    ylabel: str = "",
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    x_labels: Sequence[str] | None = None,
    markers: bool = False,
) -> str:
    """Polylines, one per series of (x, y); NaN / None values break a line. ``x_labels`` names x = 0, 1, ..."""

    def finite(v: float | None) -> float | None:
        return None if v is None or not math.isfinite(float(v)) else float(v)

    clean = {name: [(finite(x), finite(y)) for x, y in zip(xs, ys, strict=True)] for name, (xs, ys) in series.items()}
    all_x = [x for pts in clean.values() for x, _ in pts if x is not None]
    all_y = [y for pts in clean.values() for _, y in pts if y is not None]
    xr = x_range or ((min(all_x), max(all_x)) if all_x else (0.0, 1.0))
    yr = y_range or ((min(0.0, *all_y), max(all_y)) if all_y else (0.0, 1.0))
    yticks = nice_ticks(yr[0], yr[1])
    frame = _Frame(xr[0], xr[1] if xr[1] > xr[0] else xr[0] + 1, yticks[0], yticks[-1])
    if x_labels is not None:
        xticks = [(float(i), str(label)) for i, label in enumerate(x_labels)]
    else:
        xticks = [(t, fmt_number(t)) for t in nice_ticks(frame.x0, frame.x1) if frame.x0 <= t <= frame.x1]
    body = _axes(frame, xlabel, ylabel, yticks, xticks)
    for s, (name, pts) in enumerate(clean.items()):
        segments: list[list[tuple[float, float]]] = [[]]
        for x, y in pts:
            if x is None or y is None:
                segments.append([])
            else:
                segments[-1].append((x, y))
        for seg in segments:
            if len(seg) > 1:
                d = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in seg)
                body.append(f'<polyline points="{d}" fill="none" stroke="{color(s)}" stroke-width="1.6"/>')
            if markers or len(seg) == 1:
                for x, y in seg:
                    tip = f"{name}: {fmt_number(x)} → {fmt_number(y)}"
                    body.append(
                        f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="2.6" fill="{color(s)}">'
                        f"<title>{escape(tip)}</title></circle>"
                    )
    body += _legend(list(clean))
    return _svg(title, body)


def polar_histogram(title: str, edges_deg: Sequence[float], series: Mapping[str, Sequence[float]]) -> str:
    """A rose diagram: wedge i spans [edges[i], edges[i+1]) degrees, 0 = ahead at the top, counter-clockwise
    positive (left), the convention of ``stridegen.core.angles.polar_angle_deg``; series stack outwards and the
    radius grows with the square root of the count, so a wedge's area is proportional to it."""
    width, height = _WIDTH, _HEIGHT + 40
    cx, cy = width / 2, _MARGIN[0] + (height - _MARGIN[0]) / 2 - 4
    r_max = (height - _MARGIN[0]) / 2 - 24
    names = list(series)
    totals = [sum(float(series[n][i]) for n in names) for i in range(len(edges_deg) - 1)]
    peak = max(totals, default=0.0) or 1.0

    def point(angle_deg: float, radius: float) -> tuple[float, float]:
        a = math.radians(angle_deg)
        return cx - radius * math.sin(a), cy - radius * math.cos(a)  # ccw from up: left is negative x

    body = []
    for frac in (0.25, 0.5, 1.0):
        r = r_max * math.sqrt(frac)
        body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="none" stroke="#ddd"/>')
        x, y = point(-135.0, r)  # ring labels behind-right, where the ahead / side labels are not
        body.append(_text(x + 3, y + 10, fmt_number(peak * frac), anchor="start", size=9, extra='fill="#777"'))
    for angle, label in ((0, "ahead 0°"), (90, "left 90°"), (180, "180°"), (-90, "right -90°")):
        x, y = point(angle, r_max + 12)
        body.append(_text(x, y + 4, label, size=9))
    for i in range(len(edges_deg) - 1):
        a0, a1 = float(edges_deg[i]), float(edges_deg[i + 1])
        inner = 0.0
        for s, name in enumerate(names):
            count = float(series[name][i])
            if count <= 0:
                continue
            outer = inner + count
            r_in, r_out = r_max * math.sqrt(inner / peak), r_max * math.sqrt(outer / peak)
            p = [point(a0, r_out), point(a1, r_out), point(a1, r_in), point(a0, r_in)]
            # the arc from a0 to a1 runs counter-clockwise on the page (sweep flag 0), back clockwise (1)
            d = (
                f"M{p[0][0]:.1f},{p[0][1]:.1f} A{r_out:.1f},{r_out:.1f} 0 0 0 {p[1][0]:.1f},{p[1][1]:.1f} "
                f"L{p[2][0]:.1f},{p[2][1]:.1f} A{r_in:.1f},{r_in:.1f} 0 0 1 {p[3][0]:.1f},{p[3][1]:.1f} Z"
            )
            tip = f"{name} · {fmt_number(a0)}° to {fmt_number(a1)}°: {fmt_number(count)}"
            body.append(
                f'<path d="{d}" fill="{color(s)}" stroke="#fff" stroke-width="0.4"><title>{escape(tip)}</title></path>'
            )
            inner = outer
    body += _legend(names)
    return _svg(title, body, width=width, height=height)


def interval_chart(
    title: str,
    labels: Sequence[str],
    means: Sequence[float | None],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    x_range: tuple[float, float] = (0.0, 100.0),
    xlabel: str = "",
) -> str:
    """Horizontal point-and-interval rows (a mean and its confidence interval per label)."""
    row_h = 22
    height = _MARGIN[0] + row_h * max(1, len(labels)) + 34
    label_w = min(220, 20 + 6.5 * max((len(t) for t in labels), default=4))
    width = _WIDTH
    x0, x1 = label_w, width - 20

    def xpos(v: float) -> float:
        return x0 + (v - x_range[0]) / ((x_range[1] - x_range[0]) or 1.0) * (x1 - x0)

    body = []
    bottom = _MARGIN[0] + row_h * max(1, len(labels))
    for t in nice_ticks(*x_range):
        if x_range[0] <= t <= x_range[1]:
            body.append(
                f'<line x1="{xpos(t):.1f}" x2="{xpos(t):.1f}" y1="{_MARGIN[0] - 6}" y2="{bottom}" stroke="#ddd"/>'
            )
            body.append(_text(xpos(t), bottom + 14, fmt_number(t), size=10))
    body.append(_text((x0 + x1) / 2, bottom + 30, xlabel, size=11))
    for i, label in enumerate(labels):
        y = _MARGIN[0] + row_h * i + row_h / 2
        body.append(_text(x0 - 8, y + 4, label, anchor="end", size=10))
        lo, hi, mean = lows[i], highs[i], means[i]
        if lo is not None and hi is not None:
            body.append(
                f'<line x1="{xpos(lo):.1f}" x2="{xpos(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{color(0)}" stroke-width="2"/>'
            )
        if mean is not None:
            tip = f"{label}: {fmt_number(mean)}" + (
                f" [{fmt_number(lo)}, {fmt_number(hi)}]" if lo is not None and hi is not None else ""
            )
            body.append(
                f'<circle cx="{xpos(mean):.1f}" cy="{y:.1f}" r="4" fill="{color(1)}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    return _svg(title, body, width=width, height=int(height))
