"""The few SVG pieces the report's plots are drawn with, as strings: the root element,
escaped text, lines, rectangles, a tick axis, colour ramps and the binning rule.

No plotting library: importing one cost the report ~50 MB of peak RSS and ~0.7 s of CPU
on a 100k-sample run, to draw three kinds of plot that are a few hundred rectangles.
Coordinates are user units of the plot's ``viewBox`` (one unit is one CSS pixel at the
plot's natural size), written with one decimal so the output is deterministic. Every
string that comes from the user (metric and backend names) goes through ``e``.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import repeat
from typing import Callable, Iterable, Sequence

from unified.report.html_base import e

# matplotlib's "Blues" from its third stop (a one-sample cell stays visible on white) and
# "RdYlGn" (ColorBrewer), so the page keeps the colours it had
BLUES = ["#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]
RDYLGN = [
    "#a50026",
    "#d73027",
    "#f46d43",
    "#fdae61",
    "#fee08b",
    "#ffffbf",
    "#d9ef8b",
    "#a6d96a",
    "#66bd63",
    "#1a9850",
    "#006837",
]
CHAR_WIDTH = 0.6  # of the font size: a sans-serif character's mean advance, to size margins


def root(width: float, height: float, label: str, body: str) -> str:
    """The ``<svg>`` element: natural size, its viewBox, and an accessible name."""
    return (
        f"<svg width='{width:.0f}' height='{height:.0f}' viewBox='0 0 {width:.0f} {height:.0f}' "
        f"role='img' aria-label='{e(label)}' font-family='system-ui,sans-serif'>{body}</svg>"
    )


def text(x: float, y: float, s: str, size: float = 8, anchor: str = "start", extra: str = "") -> str:
    """Escaped text at (x, y) (its baseline); ``extra``: more attributes, already safe."""
    return f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size:g}' text-anchor='{anchor}'{extra}>{e(s)}</text>"


def halo() -> str:
    """Attributes that draw text over a white outline (readable over bars and lines) and
    keep its runs of spaces."""
    return " stroke='#fff' stroke-width='3' paint-order='stroke' style='white-space:pre'"


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = "#999", extra: str = "") -> str:
    return f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' stroke='{stroke}'{extra}/>"


def rect(x: float, y: float, w: float, h: float, fill: str, tip: str = "", extra: str = "") -> str:
    """A rectangle; ``tip``: its tooltip (escaped), as a ``<title>`` child."""
    head = f"<rect x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' height='{h:.1f}' fill='{fill}'{extra}"
    return f"{head}><title>{e(tip)}</title></rect>" if tip else head + "/>"


def axis(
    ticks: Iterable[float], to: Callable[[float], float], at: float, *, vertical: bool = False, size: float = 7
) -> str:
    """Tick marks and labels of one axis: horizontal below the line ``y = at`` (x = ``to(t)``),
    or ``vertical`` left of the line ``x = at`` (y = ``to(t)``)."""
    out = []
    for t in ticks:
        p, label = to(t), f"{t:g}"
        if vertical:
            out.append(line(at - 3, p, at, p, "#555") + text(at - 5, p + size * 0.35, label, size, "end"))
        else:
            out.append(line(p, at, p, at + 3, "#555") + text(p, at + 4 + size, label, size, "middle"))
    return "".join(out)


def ramp(stops: Sequence[str], t: float) -> str:
    """The colour at ``t`` in [0, 1] (clipped) along evenly spaced ``stops``, linear in RGB."""
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    a, b, f = _rgb(stops[i]), _rgb(stops[i + 1]), t - i
    return "#" + "".join(f"{round(u + (v - u) * f):02x}" for u, v in zip(a, b))


def _rgb(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def text_width(s: str, size: float) -> float:
    """An estimate of the width of ``s`` at font ``size`` (margins are sized with it)."""
    return len(s) * size * CHAR_WIDTH


def bin_index(values: Iterable[float], per_unit: float, n: int) -> Iterable[int]:
    """The bin of each value on 0–10 cut in ``n`` bins of width ``1/per_unit``:
    ``min(max(floor(v·per_unit), 0), n − 1)``, lazily and without a Python-level loop.

    Bins are half-open ``[lo, hi)`` but the last is closed, as numpy's histogram: 10 falls
    in the last bin. With ``per_unit = 2`` the edges are exact in binary floating point,
    so 0.49 is in bin 0 and 0.5 in bin 1. A value outside 0–10 (the 0–10 rule says there
    is none) is counted in the nearest end bin rather than lost: it is clamped to 0–10
    before it is scaled, so even 1e308 has a bin. Values must not be NaN."""
    clamped = map(min, map(max, values, repeat(0.0)), repeat(10.0))
    floors = map(math.floor, map(float(per_unit).__mul__, clamped))
    return map(min, map(max, floors, repeat(0)), repeat(n - 1))


def histogram(values: Iterable[float], per_unit: float, n: int) -> list[int]:
    """Counts per bin (``bin_index``), in one pass."""
    counts = Counter(bin_index(values, per_unit, n))
    return [counts.get(i, 0) for i in range(n)]
