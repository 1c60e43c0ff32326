"""How a Report shows itself: a one-line ``repr`` and, in Jupyter, a small HTML summary
(run folder, counts, the summary table with cost, links to the run's files)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from unified.report.html_base import e, num, pct, table, usd
from unified.run.runfolder import CROSSCHECK_FILE, REPORT_FILE, SCORES_FILE, SUMMARY_FILE

if TYPE_CHECKING:
    from unified.report.core import Report


def _counts(report: "Report") -> tuple[int, int, int, int]:
    """(samples, tasks, failed tasks, degraded tasks) from the model (no pass over samples.jsonl)."""
    m = report.model()
    samples = {sid for per_b in m.tasks.values() for s in per_b.values() for sid in s}
    return len(samples), m.n_tasks(), sum(1 for _ in m.failed()), sum(1 for _ in m.degraded())


def report_repr(report: "Report") -> str:
    """``Report(run_dir='runs/x', samples=28, metrics=3 × backends=2, scores=168, errors=4)``
    (and ``degraded=N`` when some values came from fewer judges than asked).

    A finished folder whose ``index.json`` still describes its scores is described from
    the stored aggregates and summary without reading a line: asyncio reprs a finished
    task's result (the Report ``evaluate`` returns) while it restores its signal handler."""
    where = f"run_dir={str(report.run_dir)!r}" if report.run_dir is not None else "in memory"
    stored = report.stored_view()
    if stored is not None:
        samples, tasks, failed, degraded, metrics, backends = stored
    else:
        m = report.model()
        samples, tasks, failed, degraded = _counts(report)
        metrics, backends = m.metrics, m.backends
    return (
        f"Report({where}, samples={samples}, metrics={len(metrics)} × backends={len(backends)}, "
        f"scores={tasks}, errors={failed}{f', degraded={degraded}' if degraded else ''}; "
        f"metrics: {', '.join(metrics) or '—'}; "
        f"backends: {', '.join(backends) or '—'})"
    )


def _href(path: Path) -> str:
    """A link a notebook can follow: relative to the working folder when the file is
    below it (Jupyter serves those), else a file:// URI."""
    try:
        return (
            Path(os.path.relpath(path.resolve(), Path.cwd())).as_posix()
            if path.resolve().is_relative_to(Path.cwd())
            else path.resolve().as_uri()
        )
    except ValueError:  # another drive on Windows
        return path.resolve().as_uri()


def report_html(report: "Report") -> str:
    """The notebook view: a header line, the summary table with calls, tokens and money,
    and links to report.html, scores.jsonl, summary.json and crosscheck.json."""
    m = report.model()
    samples, tasks, failed, degraded = _counts(report)
    aggs = m.aggregates()
    priced = any(t.usd is not None for *_, t, _ in m.iter_tasks())
    money: dict[tuple[str, str], float] = {}
    for metric, backend, _sid, t, _row in m.iter_tasks():
        if t.usd is not None:
            money[(metric, backend)] = money.get((metric, backend), 0.0) + t.usd
    head = ["metric", "backend", "n", "mean", "pass rate", "errors", "judge calls", "tokens"] + (
        ["cost"] if priced else []
    )
    rows = []
    for a in aggs:
        row = [
            e(a.metric),
            e(a.backend),
            str(a.count),
            num(a.mean),
            pct(a.pass_rate),
            f"<span style='color:#b42318'>{a.errors}</span>" if a.errors else "0",
            str(a.cost.calls),
            str(a.cost.input_tokens + a.cost.output_tokens),
        ]
        if priced:
            row.append(usd(money.get((a.metric, a.backend))))
        rows.append(row)
    where = e(report.run_dir) if report.run_dir is not None else "in-memory run"
    links = ""
    if report.run_dir is not None:
        files = [f for f in (REPORT_FILE, SCORES_FILE, SUMMARY_FILE, CROSSCHECK_FILE) if (report.run_dir / f).exists()]
        links = (
            "<div>"
            + " · ".join(f"<a href='{e(_href(report.run_dir / f))}' target='_blank'>{e(f)}</a>" for f in files)
            + "</div>"
        )
    total = f" · cost {usd(sum(money.values()))}" if priced else ""
    flag = f" · <b style='color:#b42318'>{degraded} degraded</b>" if degraded else ""
    return (
        f"<div class='unified-report'><b>Report</b> {where}: {samples} samples · {len(m.metrics)} metrics × "
        f"{len(m.backends)} backends · {tasks} scores · {failed} errors"
        f"{flag}{total}" + table(head, rows, num_cols=range(2, len(head))) + links + "</div>"
    )
