"""The self-contained HTML report: one function per section, each reading the ``View``.

One offline file: static SVG plots (``plots``), tables, ``<details>`` drill-downs and a
few lines of inline script (``html_base.JS``). No CDN, no network. Every piece of user
text goes through ``html.escape``. Sections, in page order:

header        run name, scores, errors, backends, metrics, real run time, cost in money
summary       per metric × backend: n, mean, median, stdev, pass rate, errors (, $)
cost          per backend: judge and embedding calls, cache hits, tokens, retries, $
dist          per metric, one histogram panel per backend on a shared 0–10 axis
agreement     (≥ 2 backends) Spearman heatmap, pair table with notes, scatter plots
disagree      (≥ 2 backends) per metric the samples whose backends differ most
errors        failed tasks grouped by cause, with counts and one example each; then
              degraded tasks (a value from fewer judges than asked) the same way
samples       per-sample drill-down (``#<sample-id>`` opens one)
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from unified.report import plots
from unified.report.html_base import CSS, JS, e, num, pct, sample_link, table, usd
from unified.report.html_compare import compare_sections
from unified.report.html_samples import section_disagree, section_samples
from unified.report.model import unreadable_note
from unified.report.view import View, build_view
from unified.scores import Cost

if TYPE_CHECKING:
    from unified.report.core import Report


def render_html(report: "Report", *, max_drilldown: int = 200) -> str:
    """The whole page as a string."""
    view = build_view(report, max_drilldown)
    extra_links, extra = compare_sections(report.run_dir)
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(view.title)}</title>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<link rel='icon' href='data:,'><style>{CSS}</style></head><body>",
        header(view),
        nav(view, extra_links),
        "<main>",
        section_summary(view),
        section_cost(view),
        section_dist(view),
    ]
    if view.multi:
        parts += [section_agreement(view), section_disagree(view)]
    parts += extra
    parts += [section_errors(view), section_samples(view), "</main>", f"<script>{JS}</script></body></html>"]
    return "".join(parts)


def run_seconds(summary: dict[str, Any]) -> float | None:
    """Real run time: ``wall_seconds_total`` (all invocations of the folder, after a
    resume) when the runner wrote it, else the last invocation's ``seconds``."""
    t = summary.get("timings") or {}
    for k in ("wall_seconds_total", "seconds"):
        if isinstance(t.get(k), (int, float)):
            return float(t[k])
    return None


def total_money(view: View) -> tuple[float, int] | None:
    if not view.money:
        return None
    return sum(v for v, _ in view.money.values()), sum(n for _, n in view.money.values())


def header(view: View) -> str:
    m = view.model
    n_err = sum(a.errors for a in view.aggregates)
    n_deg = sum(g["count"] for g in view.degraded_groups)
    bits = [
        f"{sum(a.count for a in view.aggregates)} scores",
        f"{n_err} errors",
        *([f"<a class='err' href='#degraded'>{n_deg} degraded</a>"] if n_deg else []),
        f"backends: {e(', '.join(m.backends) or '—')}",
        f"metrics: {e(', '.join(m.metrics) or '—')}",
    ]
    seconds = run_seconds(m.summary)
    if seconds is not None:
        bits.append(f"run time {seconds:.1f} s")
    money_total = total_money(view)
    if money_total is not None:
        bits.append(f"cost {usd(money_total[0])}")
    bits.append(f"generated {datetime.now(timezone.utc).isoformat(timespec='seconds')}")
    notes = []
    if m.superseded:
        notes.append(f"{m.superseded} score line(s) repeated a task; the last line of each was used")
    if m.unreadable:
        notes.append(unreadable_note(m.unreadable, None))
    note_html = "".join(f"<div class='meta'>note: {e(n)}</div>" for n in notes)
    return f"<header><h1>{e(view.title)}</h1><div class='meta'>{' · '.join(bits)}</div>{note_html}</header>"


def nav(view: View, extra: list[tuple[str, str]] = ()) -> str:  # type: ignore[assignment]
    links = [("summary", "Summary"), ("cost", "Cost"), ("dist", "Distributions")]
    if view.multi:
        links += [("agreement", "Agreement"), ("disagree", "Disagreements")]
    links += list(extra) + [("errors", "Errors"), ("samples", "Samples")]
    return "<nav>" + "".join(f"<a href='#{k}'>{v}</a>" for k, v in links) + "</nav>"


def section_summary(view: View) -> str:
    priced = bool(view.money)
    head = ["metric", "backend", "scored", "mean", "median", "stdev", "pass rate", "errors"] + (
        ["cost"] if priced else []
    )
    rows = []
    for a in view.aggregates:  # the statistics are over the scored tasks: that is their n
        err = f"<span class='err'>{a.errors}</span>" if a.errors else "0"
        row = [
            e(a.metric),
            e(a.backend),
            str(a.scored),
            num(a.mean),
            num(a.median),
            num(a.stdev),
            pct(a.pass_rate),
            err,
        ]
        if priced:
            row.append(usd(view.money.get((a.metric, a.backend), (None, 0))[0]))
        rows.append(row)
    return (
        "<section id='summary'><h2>Summary (0–10, higher is better)</h2>"
        + table(head, rows, num_cols=range(2, len(head)))
        + "</section>"
    )


def section_cost(view: View) -> str:
    per_b: dict[str, Cost] = {}
    for a in view.aggregates:
        per_b[a.backend] = per_b.get(a.backend, Cost()).add(a.cost)
    priced = bool(view.money)
    head = [
        "backend",
        "judge calls",
        "embedding calls",
        "cache hits",
        "input tokens",
        "output tokens",
        "retries",
        "task seconds",
    ] + (["cost"] if priced else [])
    rows = []
    for b in view.model.backends:
        c = per_b.get(b, Cost())
        row = [
            e(b),
            str(c.calls),
            str(c.embedding_calls),
            str(c.cache_hits),
            str(c.input_tokens),
            f"{c.output_tokens}{'*' if c.tokens_estimated else ''}",
            str(c.retries),
            f"{c.seconds:.1f}",
        ]
        if priced:
            spent = [v for (_, bb), (v, _) in view.money.items() if bb == b]
            row.append(usd(sum(spent)) if spent else "—")
        rows.append(row)
    notes = [
        "* tokens estimated from text length where the server gave no usage.",
        "Cache hits cost nothing. Task seconds are summed over tasks that overlap: busy time, "
        "not wall time (the header gives the real run time).",
    ]
    money_total = total_money(view)
    if money_total is not None and money_total[1] < view.model.n_tasks():
        notes.append(
            f"Cost in money covers the {money_total[1]} of {view.model.n_tasks()} tasks whose model has a price."
        )
    return (
        "<section id='cost'><h2>Cost per backend</h2>"
        + table(head, rows, num_cols=range(1, len(head)))
        + "".join(f"<p class='note'>{e(n)}</p>" for n in notes)
        + "</section>"
    )


def section_dist(view: View) -> str:
    m = view.model
    colors = {b: plots.COLORS[i % len(plots.COLORS)] for i, b in enumerate(m.backends)}
    figs = []
    for metric in m.metrics:
        series = {b: list(m.values(metric, b).values()) for b in m.backends if b in m.tasks.get(metric, {})}
        if not series:  # every line of this metric is an input row's error: nothing to plot
            continue
        figs.append(f"<div class='plot'>{plots.distribution(metric, series, colors)}</div>")
    return (
        "<section id='dist'><h2>Score distributions</h2><p class='note'>One panel per backend "
        "on the same 0–10 axis; the dashed line is the mean.</p><div class='plots'>"
        + "".join(figs)
        + "</div></section>"
    )


def section_agreement(view: View) -> str:
    metrics = [m for m in view.model.metrics if view.pairs.get(m)]
    pair_names = list(dict.fromkeys(f"{p['a']} vs {p['b']}" for m in metrics for p in view.pairs[m]))
    by_name = {m: {f"{p['a']} vs {p['b']}": p for p in view.pairs[m]} for m in metrics}
    # a number, "n/a" (undefined) or None (the pair did not score the metric)
    matrix: list[list[float | str | None]] = [[_rho(by_name[m].get(pn)) for pn in pair_names] for m in metrics]
    head = ["metric", "pair", "n", "excluded", "pearson", "spearman", "mean |Δ|", "pass agreement", "kappa", "notes"]
    rows = [
        [
            e(m),
            f"{e(p['a'])} vs {e(p['b'])}",
            str(p["n"]),
            str(p["excluded"]),
            num(p.get("pearson")),
            num(p.get("spearman")),
            num(p.get("mean_abs_diff")),
            num(p.get("pass_agreement")),
            num(p.get("cohen_kappa")),
            e("; ".join(p["notes"])),
        ]
        for m in metrics
        for p in view.pairs[m]
    ]
    scatters = "".join(
        f"<div class='plot'>{plots.scatter(m, p)}</div>" for m in metrics for p in view.pairs[m] if p["xs"]
    )
    heat = f"<div class='plot heat'>{plots.heatmap(metrics, pair_names, matrix)}</div>" if metrics else ""
    return (
        "<section id='agreement'><h2>Agreement between backends</h2>"
        + heat
        + table(head, rows, num_cols=range(2, 9))
        + "<p class='note'>Scatter plots: one marker per distinct pair of values, its size and "
        "label the number of samples there.</p>" + f"<div class='plots'>{scatters}</div></section>"
    )


def _rho(pair: dict[str, Any] | None) -> float | str | None:
    if pair is None:
        return None
    v = plots.number(pair.get("spearman"))
    return "n/a" if v is None else v


def section_errors(view: View) -> str:
    """Failed tasks by cause, then degraded ones (a value, from fewer judges than asked:
    not what the run was configured to compute, so it is shown as loudly as an error)."""
    n = sum(g["count"] for g in view.error_groups)
    parts = [f"<section id='errors'><h2>Errors ({n})</h2>"]
    if view.error_groups:
        parts.append(
            f"<p class='note'>{n} failed task(s) in {len(view.error_groups)} cause(s); the "
            "sample-specific parts of each message are masked to group them.</p>"
            + _group_table(view, view.error_groups)
        )
    else:
        parts.append("<p class='ok'>no errors</p>")
    if view.degraded_groups:
        n_deg = sum(g["count"] for g in view.degraded_groups)
        parts.append(
            f"<h3 id='degraded'>Degraded ({n_deg})</h3><p class='err'>{n_deg} task(s) have a "
            "value computed by fewer judges than were asked; they count as failed tasks "
            "for the exit code, and <code>--retry-errors</code> scores them again.</p>"
            + _group_table(view, view.degraded_groups)
        )
    return "".join(parts) + "</section>"


def _group_table(view: View, groups: list[dict[str, Any]]) -> str:
    """One row per cause: count, cause, where, and one example with its message."""
    shown = set(view.drill)
    rows = []
    for g in groups:
        ex = g["example"]
        where = (
            f"input row {e(ex['sample_id'].removeprefix('row:'))}"
            if ex["row_error"]
            else f"sample {sample_link(ex['sample_id'], ex['sample_id'] in shown)}"
        )
        rows.append(
            [
                str(g["count"]),
                f"<span class='err'>{e(g['cause'])}</span>",
                e(", ".join(g["backends"])),
                e(", ".join(g["metrics"])),
                f"{where}, {e(ex['metric'])} on {e(ex['backend'])}:<div class='note'>{e(ex['error'])}</div>",
            ]
        )
    return table(["tasks", "cause", "backends", "metrics", "example"], rows, num_cols=[0])
