"""The report's three plots as inline SVG strings, drawn by hand (``drawing``): score
distributions, backend-against-backend scatters and the Spearman heatmap. Each function's
docstring says what its plot shows; each plot is one ``<svg role='img'>`` with an
accessible name, and its bars, markers and cells carry a ``<title>`` tooltip.

Work per value is one pass at C level (``drawing.bin_index``, ``Counter``, ``sum``): a
100k-sample run's page costs milliseconds of plotting, not a plotting library's import."""

from __future__ import annotations

import math
from collections import Counter
from itertools import repeat
from typing import Any, Callable, Mapping, Sequence

from unified.report import drawing as d
from unified.report.html_base import e

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]
BIN = 0.5  # histogram bins of 0.5 on 0–10
DENSITY_AT = 400  # past this many distinct points a scatter is drawn as a 2-D histogram
CELL = 0.2  # its cells

# distribution: width, side margin, title band, panel height, gap between panels, axis band
_DW, _DM, _DT, _DP, _DG, _DB = 380, 10, 22, 56, 4, 32
_LABEL_BAND = 14  # the top of a panel is the label's: bars never reach under it


def fmt(v: Any, digits: int = 2) -> str:
    """A statistic in a plot's title: "—" for None, floats to ``digits``."""
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def distribution(metric: str, series: Mapping[str, Sequence[float]], colors: Mapping[str, str] | None = None) -> str:
    """One panel per backend, stacked on a shared 0–10 axis (small multiples stay
    readable with any number of backends, where overlaid histograms hide each other):
    bins of 0.5, each panel's bars scaled to its own tallest bin, its mean marked by a
    dashed vertical line and its label ``b  n=…  mean …`` in a band above the bars.
    ``colors``: backend -> colour, so a backend keeps its colour on every plot."""
    names = list(series)
    x = lambda v: _DM + (_DW - 2 * _DM) * min(max(v, 0.0), 10.0) / 10
    panels = []
    for i, b in enumerate(names):
        top = _DT + i * (_DP + _DG)
        color = (colors or {}).get(b, COLORS[i % len(COLORS)])
        panels.append(_panel(b, [*filter(math.isfinite, series[b])], top, color, x))
    bottom = _DT + len(names) * (_DP + _DG) - _DG
    body = (
        d.text(_DW / 2, 14, metric, 10, "middle")
        + "".join(panels)
        + d.axis(range(0, 11, 2), x, bottom)
        + d.text(_DW / 2, bottom + _DB - 4, "score (0–10)", 8, "middle")
    )
    label = f"score distribution of {metric}: one histogram per backend ({', '.join(names)})"
    return d.root(_DW, bottom + _DB, label, body)


def _panel(backend: str, v: list[float], top: float, color: str, x: Callable[[float], float]) -> str:
    """One backend's panel: frame, bars with their counts as tooltips, mean line, label."""
    left, right = x(0), x(10)
    out = [d.rect(left, top, right - left, _DP, "#fff", extra=" stroke='#ccc'")]
    if v:
        counts = d.histogram(v, 1 / BIN, round(10 / BIN))
        tallest, room = max(counts), _DP - _LABEL_BAND - 1
        for i, c in enumerate(counts):
            if c:
                h = room * c / tallest
                lo = i * BIN
                tip = f"{backend}: {lo:.1f}–{lo + BIN:.1f}: {c} sample(s)"
                out.append(d.rect(x(lo), top + _DP - h, x(lo + BIN) - x(lo), h, color, tip, " fill-opacity='0.75'"))
        mean = sum(v) / len(v)
        dash = " stroke-width='0.9' stroke-dasharray='4,2'"
        out.append(d.line(x(mean), top + _LABEL_BAND, x(mean), top + _DP, "#333", dash))  # below the label
        label = f"{backend}  n={len(v)}  mean {mean:.2f}"
    else:
        label = f"{backend}  no successful score"
    out.append(d.text(left + 4, top + 10, label, 8, extra=d.halo()))
    return "".join(out)


# scatter: width, left margin (ticks + rotated label), right margin (colour bar), top, side, bottom
_SW, _SL, _SR, _ST, _SS, _SB = 360, 42, 48, 34, 270, 36
_LO, _HI = -0.4, 10.4  # the axes' range: markers at 0 and 10 are drawn whole
_R_UNIT, _R_MAX = 2.5, 14.0  # a one-sample marker's radius; the largest radius a plot draws


def _sx(v: float) -> float:
    return _SL + (v - _LO) / (_HI - _LO) * _SS


def _sy(v: float) -> float:
    return _ST + _SS - (v - _LO) / (_HI - _LO) * _SS


def scatter(metric: str, pair: Mapping[str, Any]) -> str:
    """Backend a against backend b on 0–10, one marker per distinct point (values rounded
    to 0.01), its area proportional to how many samples sit there (one scale per plot,
    the largest marker at most ``_R_MAX`` across) and the count written beside it when
    > 1 (28 samples on three values show as three labelled markers, not three dots). Past
    ``DENSITY_AT`` distinct points (a big run with continuous scores) the plot is a 2-D
    histogram instead: cells of 0.2 shaded by sample count on a log scale, with a legend.
    The dashed diagonal is agreement."""
    xs, ys = pair["xs"], pair["ys"]
    points = Counter(zip(map(round, xs, repeat(2)), map(round, ys, repeat(2))))
    a, b = str(pair["a"]), str(pair["b"])
    inner = _density(xs, ys, a, b) if len(points) > DENSITY_AT else _markers(points, a, b)
    stats = (
        f"n={pair.get('n')} ρ={fmt(pair.get('spearman'))} "
        f"r={fmt(pair.get('pearson'))} |Δ|={fmt(pair.get('mean_abs_diff'))}"
    )
    ticks = range(0, 11, 2)
    body = (
        d.text(_SW / 2, 13, metric, 10, "middle")
        + d.text(_SW / 2, 26, stats, 8, "middle")
        + d.rect(_SL, _ST, _SS, _SS, "#fff", extra=" stroke='#bbb'")
        + inner
        + d.line(_sx(0), _sy(0), _sx(10), _sy(10), "#999", " stroke-dasharray='4,3'")  # over dense cells too
        + d.axis(ticks, _sx, _ST + _SS)
        + d.axis(ticks, _sy, _SL, vertical=True)
        + d.text(_SL + _SS / 2, _ST + _SS + _SB - 6, a, 8, "middle")
        + d.text(11, _ST + _SS / 2, b, 8, "middle", f" transform='rotate(-90 11 {_ST + _SS / 2:.1f})'")
    )
    return d.root(_SW, _ST + _SS + _SB, f"{metric}: {b} against {a}, {stats}", body)


def _markers(points: Counter[tuple[float, float]], a: str, b: str) -> str:
    """A circle per distinct point, biggest first so small ones stay on top; its count
    beside it when > 1 (left of a marker near the right edge)."""
    if not points:
        return ""
    unit = min(_R_UNIT, _R_MAX / math.sqrt(max(points.values())))  # radius of one sample
    out = []
    for (x, y), n in sorted(points.items(), key=lambda kv: (-kv[1], kv[0])):
        r, cx, cy = max(unit * math.sqrt(n), 1.5), _sx(x), _sy(y)
        out.append(
            f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='{r:.1f}' fill='#1f77b4' fill-opacity='0.55' "
            f"stroke='#0b3d66' stroke-width='0.5'><title>{e(f'{a} {x:g}, {b} {y:g}: {n} sample(s)')}</title></circle>"
        )
        if n > 1:
            right = x <= 9
            out.append(d.text(cx + (r + 2 if right else -r - 2), cy - 2, str(n), 7, "start" if right else "end"))
    return "".join(out)


def _density(xs: Sequence[float], ys: Sequence[float], a: str, b: str) -> str:
    """Cells of ``CELL`` holding at least one sample, shaded by log(count) / log(max)."""
    n = round(10 / CELL)
    cells = Counter(zip(d.bin_index(xs, 1 / CELL, n), d.bin_index(ys, 1 / CELL, n)))
    top = max(cells.values())
    shade = lambda c: d.ramp(d.BLUES, math.log(c) / math.log(top) if top > 1 else 0.5)
    side = _sx(CELL) - _sx(0)
    out = []
    for (i, j), c in sorted(cells.items()):
        lo_x, lo_y = i * CELL, j * CELL
        tip = f"{a} {lo_x:.1f}–{lo_x + CELL:.1f}, {b} {lo_y:.1f}–{lo_y + CELL:.1f}: {c} sample(s)"
        out.append(d.rect(_sx(lo_x), _sy(lo_y + CELL), side, side, shade(c), tip))
    return "".join(out) + _log_legend(top, shade)


def _log_legend(top: int, shade: Callable[[int], str]) -> str:
    """The density's colour bar: 1 at the bottom, the fullest cell's count at the top, on a
    log scale, with ticks at the powers of ten between."""
    x, steps = _SL + _SS + 10, 16
    h = _SS / steps
    y = lambda c: _ST + _SS - (math.log(c) / math.log(top) if top > 1 else 0.5) * _SS
    bar = "".join(
        d.rect(x, _ST + _SS - (k + 1) * h, 9, h + 0.2, shade(top ** ((k + 0.5) / steps))) for k in range(steps)
    )
    ticks = sorted({1, top, *(10**p for p in range(1, 1 + int(math.log10(top))))})
    ticks = [t for t in ticks if t == top or y(t) - y(top) > 10]  # a tick too near the top one would overlap it
    labels = "".join(d.line(x + 9, y(t), x + 12, y(t), "#555") + d.text(x + 13, y(t) + 2.5, f"{t:g}", 7) for t in ticks)
    mid = _ST + _SS / 2
    caption = d.text(_SW - 3, mid, "samples", 7, "middle", f" transform='rotate(-90 {_SW - 3} {mid:.1f})'")
    return bar + labels + caption


# heatmap: cell width and height, title band, colour bar's gap and width
_HW, _HH, _HT, _HGAP, _HBAR = 84, 24, 26, 12, 10


def heatmap(metrics: list[str], pair_names: list[str], matrix: list[list[float | str | None]]) -> str:
    """Spearman ρ per metric (rows) and pair of backends (columns), on a red–yellow–green
    diverging scale from −1 to 1 with the value written in each cell: "n/a" on grey where
    it is undefined (a string), blank where the pair did not score the metric (None). Pair
    names are written slanted below their columns; a colour bar on the right."""
    left = 10 + max([d.text_width(m, 8) for m in metrics] + [d.text_width(p, 8) * 0.94 - _HW / 2 for p in pair_names])
    grid_w, grid_h = _HW * len(pair_names), _HH * len(metrics)
    bottom = 12 + max((d.text_width(p, 8) * 0.34 for p in pair_names), default=0)
    cells = []
    for i, (m, row) in enumerate(zip(metrics, matrix)):
        y = _HT + i * _HH
        cells.append(d.text(left - 6, y + _HH / 2 + 3, m, 8, "end"))
        cells += [_cell(left + j * _HW, y, m, p, v) for j, (p, v) in enumerate(zip(pair_names, row))]
    below = _HT + grid_h + 10
    names = "".join(
        d.text(cx, below, p, 8, "end", f" transform='rotate(-20 {cx:.1f} {below:.1f})'")
        for p, cx in ((p, left + (j + 0.5) * _HW) for j, p in enumerate(pair_names))
    )
    bar_x = left + grid_w + _HGAP
    width = bar_x + _HBAR + 22
    title = d.text(width / 2, 15, "Spearman ρ between backends", 10, "middle")
    body = title + "".join(cells) + names + _rho_legend(bar_x, max(grid_h, 60))
    return d.root(width, _HT + grid_h + bottom + 6, "Spearman ρ between backends, per metric and pair", body)


def _cell(x: float, y: float, metric: str, pair: str, v: float | str | None) -> str:
    frame = " stroke='#fff'"
    if v is None:
        return d.rect(x, y, _HW, _HH, "#fff", f"{metric}, {pair}: not scored by this pair", " stroke='#e3e7ee'")
    if isinstance(v, str):
        tip, fill, label, ink = f"{metric}, {pair}: ρ undefined", "#e9e9e9", "n/a", "#555"
    else:
        tip, fill, label = f"{metric}, {pair}: ρ = {v:.2f}", d.ramp(d.RDYLGN, (v + 1) / 2), f"{v:.2f}"
        ink = "#fff" if abs(v) > 0.7 else "#222"  # the scale's ends are dark
    return d.rect(x, y, _HW, _HH, fill, tip, frame) + d.text(
        x + _HW / 2, y + _HH / 2 + 3, label, 8, "middle", f" fill='{ink}'"
    )


def _rho_legend(x: float, h: float) -> str:
    """The heatmap's colour bar from −1 (bottom) to 1 (top), in steps of 0.1."""
    step = h / 20
    bar = "".join(
        d.rect(x, _HT + h - (k + 1) * step, _HBAR, step + 0.2, d.ramp(d.RDYLGN, (k + 0.5) / 20)) for k in range(20)
    )
    y = lambda v: _HT + h - (v + 1) / 2 * h
    ticks = "".join(
        d.line(x + _HBAR, y(v), x + _HBAR + 3, y(v), "#555") + d.text(x + _HBAR + 4, y(v) + 2.5, f"{v:g}", 7)
        for v in (-1, -0.5, 0, 0.5, 1)
    )
    return bar + ticks


def number(v: Any) -> float | None:
    """A finite float, or None for "undefined", None, NaN or a bool."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None
