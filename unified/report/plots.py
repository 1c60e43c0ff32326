"""Static SVG plots for the report, drawn by matplotlib (Agg backend; text drawn as paths,
so the page needs not even a font). Each function returns one ``<svg>`` string."""

from __future__ import annotations

import io
import math
from collections import Counter
from typing import Any, Mapping, Sequence

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]
BINS = [i * 0.5 for i in range(21)]  # 0–10 in steps of 0.5


class Svg:
    """Render matplotlib figures to inline SVG strings, deterministically."""

    def __init__(self) -> None:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        self.plt = plt
        self.n = 0

    def __call__(self, fig: Any) -> str:
        self.n += 1
        # a fixed salt per figure: deterministic output, and element ids that do not
        # collide between the SVGs inlined into one page
        with self.plt.rc_context({"svg.hashsalt": f"unified-fig-{self.n}", "svg.fonttype": "path"}):
            buf = io.StringIO()
            fig.savefig(buf, format="svg", bbox_inches="tight")
        self.plt.close(fig)
        text = buf.getvalue()
        return text[text.find("<svg") :]


def fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def distribution(
    svg: Svg, metric: str, series: Mapping[str, Sequence[float]], colors: Mapping[str, str] | None = None
) -> str:
    """One panel per backend, stacked on a shared 0–10 axis (small multiples stay
    readable with any number of backends, where overlaid histograms hide each other);
    each panel marks its mean with a vertical line. ``colors``: backend -> colour, so a
    backend keeps its colour on every plot."""
    names = list(series)
    fig, axes = svg.plt.subplots(len(names), 1, sharex=True, squeeze=False, figsize=(4.2, 0.35 + 0.8 * len(names)))
    for i, (b, ax) in enumerate(zip(names, axes[:, 0])):
        v = list(series[b])
        color = (colors or {}).get(b, COLORS[i % len(COLORS)])
        if v:
            ax.hist(v, bins=BINS, color=color, alpha=0.75)
            mean = sum(v) / len(v)
            ax.axvline(mean, color="#333", lw=0.9, ls="--")
            label = f"{b}  n={len(v)}  mean {mean:.2f}"
        else:
            label = f"{b}  no successful score"
        ax.text(
            0.01,
            0.92,
            label,
            transform=ax.transAxes,
            fontsize=7,
            va="top",
            bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0, "pad": 1},
        )
        ax.set_xlim(0, 10)
        ax.tick_params(labelsize=6)
        ax.set_yticks([])
    axes[0, 0].set_title(metric, fontsize=9)
    axes[-1, 0].set_xlabel("score (0–10)", fontsize=7)
    fig.subplots_adjust(hspace=0.08)
    return svg(fig)


def scatter(svg: Svg, metric: str, pair: Mapping[str, Any]) -> str:
    """Backend a against backend b on 0–10, one marker per distinct point, its area
    proportional to how many samples sit there and the count written beside it when > 1
    (28 samples on three values show as three labelled markers, not three dots). Past
    ``DENSITY_AT`` distinct points (a big run with continuous scores) the plot is a 2-D
    histogram instead: cells of 0.2 shaded by sample count on a log scale."""
    counts = Counter((round(x, 2), round(y, 2)) for x, y in zip(pair["xs"], pair["ys"]))
    fig, ax = svg.plt.subplots(figsize=(3.6, 3.4))
    ax.plot([0, 10], [0, 10], color="#999", lw=0.8, ls="--")
    if len(counts) > DENSITY_AT:
        _density(svg, fig, ax, pair["xs"], pair["ys"])
    elif counts:
        xs, ys, ns = zip(*((x, y, n) for (x, y), n in counts.items()))
        ax.scatter(
            xs,
            ys,
            s=[14 + 26 * (n - 1) ** 0.75 for n in ns],
            alpha=0.55,
            color="#1f77b4",
            edgecolors="#0b3d66",
            linewidths=0.5,
        )
        for x, y, n in zip(xs, ys, ns):
            if n > 1:  # left of markers at the right edge, so the label is not cut off
                ax.annotate(str(n), (x, y), fontsize=6, xytext=(-9 if x > 9 else 4, 3), textcoords="offset points")
    ax.set_xlim(-0.4, 10.4)
    ax.set_ylim(-0.4, 10.4)
    ax.set_xlabel(pair["a"], fontsize=8)
    ax.set_ylabel(pair["b"], fontsize=8)
    ax.tick_params(labelsize=7)
    ax.set_title(
        f"{metric}\nn={pair.get('n')} ρ={fmt(pair.get('spearman'))} "
        f"r={fmt(pair.get('pearson'))} |Δ|={fmt(pair.get('mean_abs_diff'))}",
        fontsize=8,
    )
    return svg(fig)


DENSITY_AT = 400


def _density(svg: Svg, fig: Any, ax: Any, xs: Sequence[float], ys: Sequence[float]) -> None:
    from matplotlib.colors import LogNorm

    edges = [i * 0.2 for i in range(51)]
    *_, image = ax.hist2d(xs, ys, bins=[edges, edges], cmap="Blues", norm=LogNorm(), cmin=1)
    fig.colorbar(image, ax=ax, fraction=0.05).set_label("samples", fontsize=7)


def heatmap(svg: Svg, metrics: list[str], pair_names: list[str], matrix: list[list[float | str | None]]) -> str:
    """Spearman ρ per metric (rows) and pair of backends (columns): "n/a" where it is
    undefined (a string), blank where the pair did not score the metric (None)."""
    import numpy as np

    fig, ax = svg.plt.subplots(figsize=(1.6 + 1.3 * len(pair_names), 0.9 + 0.42 * len(metrics)))
    data = np.array([[v if isinstance(v, float) else np.nan for v in row] for row in matrix], dtype=float)
    im = ax.imshow(np.ma.masked_invalid(data), cmap="RdYlGn", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(pair_names)))
    ax.set_xticklabels(pair_names, fontsize=7, rotation=20, ha="right")
    ax.set_yticks(range(len(metrics)))
    ax.set_yticklabels(metrics, fontsize=7)
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            text = f"{v:.2f}" if isinstance(v, float) else ("" if v is None else "n/a")
            ax.text(j, i, text, ha="center", va="center", fontsize=7)
    ax.set_title("Spearman ρ between backends", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.05)
    return svg(fig)


def number(v: Any) -> float | None:
    """A finite float, or None for "undefined", None, NaN or a bool."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None
