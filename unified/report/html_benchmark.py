"""The report's benchmark section (``benchmark.json``, written by ``unified-eval benchmark``):
the per-set table of agreement with people, the averages over sets, and a plot of
agreement against cost — one marker per (set, backend, metric) at (task seconds per
sample, AUC) with its bootstrap interval as a vertical bar, drawn as inline SVG
(``drawing``)."""

from __future__ import annotations

from typing import Any, Mapping

from unified.report import drawing as d
from unified.report.html_base import e, num, table
from unified.report.plots import COLORS

_W, _H, _L, _R, _T, _B = 460, 260, 44, 120, 22, 34  # size and margins (the right one holds the legend)


def _cell(entry: Mapping[str, Any], key: str) -> str:
    v = entry.get(key)
    return (
        num(v, 3)
        if isinstance(v, (int, float)) and not isinstance(v, bool)
        else f"— ({e(v)})"
        if isinstance(v, str)
        else "—"
    )


def _auc(entry: Mapping[str, Any]) -> str:
    ci = entry.get("auc_ci")
    text = _cell(entry, "auc")
    if isinstance(ci, list) and len(ci) == 2:
        text += f" [{num(ci[0], 3)}, {num(ci[1], 3)}]"
    return text + (" ★" if entry.get("winner") else "")


def _usd(v: Any) -> str:
    return "?" if v is None else num(v, 4)


def _row(en: Mapping[str, Any]) -> list[str]:
    cost = [
        str(en.get("judge_calls", 0)),
        f"{en.get('input_tokens', 0)}/{en.get('output_tokens', 0)}",
        _usd(en.get("usd")),
        num(en.get("seconds_per_sample"), 2),
    ]
    head = [e(en["set"]), e(en["metric"]), e(en["backend"]), str(en.get("n", 0))]
    if "note" in en:
        return head + [f"<em>{e(en['note'])}</em>", "", "", "", num(en.get("failed"), 2), *cost]
    return head + [
        _auc(en),
        _cell(en, "ba_default"),
        _cell(en, "ba_tuned"),
        _cell(en, "ece"),
        num(en.get("failed"), 2),
        *cost,
    ]


def section_benchmark(bench: Mapping[str, Any]) -> str:
    """The whole section."""
    entries = bench.get("entries") or []
    head = [
        "set",
        "metric",
        "backend",
        "n",
        "AUC [95% CI]",
        "BA @ bound",
        "BA @ tuned",
        "ECE (calibrated)",
        "failed",
        "judge calls",
        "tokens in/out",
        "USD",
        "task s/sample",
    ]
    avg_head = ["metric", "backend", "AUC", "BA @ bound", "BA @ tuned", "ECE", "failed", "sets"]
    avg_rows = [
        [
            e(a["metric"]),
            e(a["backend"]),
            *(num(a.get(k), 3) for k in ("auc", "ba_default", "ba_tuned", "ece", "failed")),
            str(a.get("auc_sets", 0)),
        ]
        for a in bench.get("averages") or []
    ]
    wall = bench.get("wall_per_sample")
    notes = "".join(f"<li>{e(n)}</li>" for n in bench.get("notes") or [])
    return (
        "<section id='benchmark'><h2>Agreement with people</h2><p class='note'>Per labelled set, best "
        "AUC first; ★ marks a set's winner only where the paired bootstrap interval of its AUC minus the "
        f"runner-up's excludes 0. BA @ tuned: {e(bench.get('split', ''))}. ECE after an isotonic map "
        "fitted on the other fold. USD ? : no price given for a model that was called (--price). "
        f"Run wall time per sample: {num(wall, 2) if wall is not None else '—'} s.</p>"
        + table(head, [_row(en) for en in entries], num_cols=range(3, 13))
        + "<h3>Average over sets</h3>"
        + table(avg_head, avg_rows, num_cols=range(2, 8))
        + plot(entries)
        + (f"<ul class='note'>{notes}</ul>" if notes else "")
        + "</section>"
    )


def plot(entries: list[Mapping[str, Any]]) -> str:
    """AUC (with its interval) against task seconds per sample, one colour per backend."""
    pts = [
        en
        for en in entries
        if isinstance(en.get("auc"), (int, float)) and isinstance(en.get("seconds_per_sample"), (int, float))
    ]
    if not pts:
        return ""
    top = max(float(en["seconds_per_sample"]) for en in pts) or 1.0
    backends = sorted({en["backend"] for en in pts})
    color = {b: COLORS[i % len(COLORS)] for i, b in enumerate(backends)}

    def x(v: float) -> float:
        return _L + (_W - _L - _R) * v / top

    def y(v: float) -> float:
        return _T + (_H - _T - _B) * (1.0 - v)

    body = [
        d.line(_L, y(0.5), _W - _R, y(0.5), "#bbb", " stroke-dasharray='3,3'"),
        d.text(_W - _R - 2, y(0.5) - 3, "chance", 7, "end"),
    ]
    body += [d.axis([0, 0.25, 0.5, 0.75, 1.0], y, _L, vertical=True), d.line(_L, _T, _L, _H - _B, "#555")]
    body += [
        d.axis([round(top * k / 4, 2) for k in range(5)], x, _H - _B),
        d.line(_L, _H - _B, _W - _R, _H - _B, "#555"),
    ]
    for en in pts:
        cx, cy, c = x(float(en["seconds_per_sample"])), y(float(en["auc"])), color[en["backend"]]
        ci = en.get("auc_ci")
        if isinstance(ci, list) and len(ci) == 2:
            body.append(d.line(cx, y(ci[0]), cx, y(ci[1]), c))
        tip = f"{en['set']} · {en['backend']} · {en['metric']}: AUC {en['auc']:.3f}, {en['seconds_per_sample']:.2f} s/sample"
        body.append(f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='4' fill='{c}'><title>{e(tip)}</title></circle>")
    for i, b in enumerate(backends):
        body.append(d.rect(_W - _R + 10, _T + 14 * i, 8, 8, color[b]) + d.text(_W - _R + 22, _T + 14 * i + 7, b, 8))
    body.append(d.text((_L + _W - _R) / 2, _H - 4, "task seconds per sample (cost)", 8, "middle"))
    body.append(d.text(10, _T - 8, "ROC AUC against people", 8))
    return "<h3>Agreement against cost</h3>" + d.root(
        _W, _H, "AUC against cost per sample, per set and backend", "".join(body)
    )
