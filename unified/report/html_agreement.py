"""The report's sections on agreement beyond pairs and on reliability: Krippendorff's
alpha over all backends and the jury's own section (from ``crosscheck.json``), the
probability calibration against people with a reliability diagram per backend (Brier,
ECE, collapse), and the test–retest section of a run with ``--repeats`` (from
``summary.json``).

The reliability diagram is a small inline SVG (no script, no library): x = the backend's
value read as a probability (value/10, mean per bin), y = the share of people who pass the
samples of that bin; the diagonal is perfect calibration, a dot's area is its bin's count.
"""

from __future__ import annotations

from typing import Any, Mapping

from unified.report.html_base import e, num, table

_SIZE, _PAD = 150, 18


def _cell(v: Any) -> str:
    return "—" if isinstance(v, str) or v is None else num(v, 3)


def section_alpha(cc: Mapping[str, Any]) -> str:
    """Per metric: Krippendorff's alpha (interval, nominal) over its backends."""
    rows = []
    for metric, m in (cc.get("metrics") or {}).items():
        a = m.get("alpha")
        if a:
            rows.append(
                [
                    e(metric),
                    e(", ".join(a["backends"])),
                    str(a["n"]),
                    _cell(a["interval"]),
                    _cell(a["nominal"]),
                    e("; ".join(a.get("notes", []))),
                ]
            )
    if not rows:
        return ""
    return (
        "<section id='alpha'><h2>Agreement over all backends</h2><p class='note'>Krippendorff's "
        "alpha: 1 − observed / chance disagreement, over every backend at once (the jury is not a "
        "rater: it is made of them). Interval on the 0–10 values, nominal on pass/fail. 1 is "
        "perfect agreement, 0 what chance gives.</p>"
        + table(
            ["metric", "backends", "samples", "alpha (interval)", "alpha (pass/fail)", "notes"],
            rows,
            num_cols=range(2, 5),
        )
        + "</section>"
    )


def section_jury(cc: Mapping[str, Any]) -> str:
    """Per metric with a jury: members, method, dissent rate, each member's dissents."""
    rows = []
    for metric, m in (cc.get("metrics") or {}).items():
        j = m.get("jury")
        if not j:
            continue
        for member, d in j["members_dissent"].items():
            most = " (most)" if member == j["most_dissent"] else ""
            rows.append(
                [
                    e(metric),
                    e(str(j["method"])),
                    num(j["dissent_rate"], 3) if j["dissent_rate"] is not None else "—",
                    e(member) + most,
                    str(d["voted"]),
                    str(d["dissents"]),
                    _cell(d["rate"]),
                ]
            )
    if not rows:
        return ""
    return (
        "<section id='jury'><h2>The jury</h2><p class='note'>The jury pools its members, so it is "
        "not paired with them in the agreement tables. Dissent rate: the share of samples on which "
        "at least one member is on the other side of the jury's verdict.</p>"
        + table(
            ["metric", "method", "dissent rate", "member", "voted", "dissents", "its rate"], rows, num_cols=(2, 4, 5, 6)
        )
        + "</section>"
    )


def reliability_svg(bins: list[Mapping[str, Any]]) -> str:
    """The reliability diagram of one backend (module docstring) as inline SVG."""
    span = _SIZE - 2 * _PAD
    x = lambda p: _PAD + p * span
    y = lambda p: _SIZE - _PAD - p * span
    total = sum(b["count"] for b in bins) or 1
    dots = "".join(
        f"<circle cx='{x(b['p_mean']):.1f}' cy='{y(b['observed']):.1f}' "
        f"r='{2 + 6 * (b['count'] / total) ** 0.5:.1f}' fill='#3b6ea5' fill-opacity='0.75'>"
        f"<title>{b['count']} sample(s): value/10 ≈ {b['p_mean']:.2f}, people pass {b['observed']:.0%}</title>"
        "</circle>"
        for b in bins
    )
    path = " ".join(f"{'M' if i == 0 else 'L'}{x(b['p_mean']):.1f},{y(b['observed']):.1f}" for i, b in enumerate(bins))
    return (
        f"<svg width='{_SIZE}' height='{_SIZE}' viewBox='0 0 {_SIZE} {_SIZE}' role='img' "
        "aria-label='reliability diagram'>"
        f"<rect x='{_PAD}' y='{_PAD}' width='{span}' height='{span}' fill='none' stroke='#bbb'/>"
        f"<line x1='{x(0)}' y1='{y(0)}' x2='{x(1)}' y2='{y(1)}' stroke='#999' stroke-dasharray='3,3'/>"
        f"<path d='{path}' fill='none' stroke='#3b6ea5'/>{dots}"
        f"<text x='{_SIZE / 2}' y='{_SIZE - 3}' font-size='9' text-anchor='middle'>value / 10</text>"
        f"<text x='9' y='{_SIZE / 2}' font-size='9' text-anchor='middle' transform='rotate(-90 9 {_SIZE / 2})'>"
        "people pass</text></svg>"
    )


def _collapse(c: Mapping[str, Any] | None) -> str:
    if not c or isinstance(c.get("flag"), str):
        return "—"
    if not c["flag"]:
        return "no"
    return (
        f"<b>collapsed</b>: {c['distinct_values']} distinct value(s), "
        f"{num(c['share_at_end'], 2)} within 0.5 of {c['end']}"
    )


def section_probability(cc: Mapping[str, Any]) -> str:
    """Per metric with labels, per backend: Brier, ECE, collapse and the reliability diagram."""
    rows = []
    for metric, m in (cc.get("metrics") or {}).items():
        for b, h in (((m.get("human") or {}).get("backends")) or {}).items():
            if "brier" not in h:
                continue
            rows.append(
                [
                    e(metric),
                    e(b),
                    str(h.get("n", "")),
                    _cell(h["brier"]),
                    _cell(h["ece"]),
                    _collapse(h.get("collapse")),
                    reliability_svg(h.get("reliability") or []),
                ]
            )
    if not rows:
        return ""
    return (
        "<section id='probability'><h2>Scores as probabilities</h2><p class='note'>Each value read as "
        "the probability that a person passes the sample (value/10). Brier: mean squared error of "
        "that probability (0 is perfect, always ½ scores 0.25). ECE: the count-weighted gap between "
        "the stated probability and the share people pass, over ten bins. Collapsed: at most two "
        "distinct values, or 90 % at one end of the scale, on samples people judge both ways.</p>"
        + table(["metric", "backend", "n", "Brier", "ECE", "collapse", "reliability diagram"], rows, num_cols=(2, 3, 4))
        + "</section>"
    )


def section_retest(summary: Mapping[str, Any] | None) -> str:
    """Test–retest of a run with ``--repeats``: ICC and unstable share per pair, then the
    unstable samples (the verdict changed between repeats)."""
    rt = (summary or {}).get("repeats")
    if not rt:
        return ""
    head = ["metric", "backend", "repeats", "samples", "ICC(1,1)", "ICC(1,k)", "unstable", "mean spread"]
    rows, unstable = [], []
    for p in rt.get("pairs", []):
        rows.append(
            [
                e(p["metric"]),
                e(p["backend"]),
                str(p["k"]),
                str(p["n"])
                + (f" ({p['n_measured']} with ≥ 2 repeats)" if p.get("n_measured", p["n"]) != p["n"] else ""),
                _cell(p["icc1"]),
                _cell(p["icc1k"]),
                _cell(p["unstable_share"]),
                _cell(p["mean_spread"]),
            ]
        )
        for u in p.get("unstable", []):
            unstable.append(
                [
                    e(p["metric"]),
                    e(p["backend"]),
                    e(u["sample_id"]),
                    e(", ".join(f"{v:.1f}" for v in u["values"])),
                    _cell(u["flip_probability"]),
                ]
            )
    return (
        "<section id='retest'><h2>Test–retest</h2><p class='note'>Every judge-using task was scored "
        f"{e(str(rt.get('repeats')))} times with distinct seeds; a score is the mean of its repeats. "
        "ICC(1,1): the share of the variance of one repeat that is between samples (1 = the judge "
        "repeats itself exactly); ICC(1,k): the same for the mean of k. Unstable: the pass/fail "
        "verdict differed between repeats.</p>"
        + table(head, rows, num_cols=range(2, 8))
        + (
            "<h3>Unstable samples</h3>"
            + table(["metric", "backend", "sample", "repeats", "P(flip)"], unstable, num_cols=(4,))
            if unstable
            else ""
        )
        + "</section>"
    )
