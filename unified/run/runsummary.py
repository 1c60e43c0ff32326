"""The end of a run: ``summary.json``, the table, and the failures said out loud.

``summary.json`` covers the whole run folder (earlier resumed parts included):
aggregates per (metric, backend), the failures grouped by cause, row accounting
(``rows_read = rows_scored + rows_rejected``), task counts, the (secret-free)
configuration and timings — ``seconds`` of this invocation, ``wall_seconds_total`` over
every invocation of the folder, ``task_seconds`` summed over tasks (tasks overlap, so
this is busy time, larger than wall time).
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any, Mapping, TextIO

from unified.redact import one_line, redact_config


@dataclass
class RunCounts:
    """Row and task accounting of one invocation (``rows_read = rows_scored + rows_rejected``)."""

    rows_read: int = 0
    rows_scored: int = 0
    rows_rejected: int = 0
    samples_changed: int = 0
    tasks_run: int = 0
    tasks_failed: int = 0
    tasks_skipped_done: int = 0
    score_lines: int = 0
    lines_dropped: int = 0


def build_summary(
    aggregates: list[Any],
    error_groups: list[dict[str, Any]],
    errors: list[dict[str, Any]],
    counts: RunCounts,
    skipped: list[dict[str, str]],
    config: Mapping[str, Any],
    timings: Mapping[str, Any],
    interrupted: bool,
    degraded_groups: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    degraded_groups = degraded_groups or []
    return {
        "aggregates": [a.model_dump() for a in aggregates],
        "n_errors": sum(a.errors for a in aggregates),
        "n_degraded": sum(g["count"] for g in degraded_groups),
        "error_groups": error_groups,
        "degraded_groups": degraded_groups,
        "errors": errors,
        "counts": asdict(counts),
        "skipped_pairs": skipped,
        "config": redact_config(dict(config)),
        "timings": dict(timings),
        "interrupted": interrupted,
    }


def retried_spend(by_pair: Any) -> dict[str, Any] | None:
    """``summary.json``'s ``retried_spend``: what the attempts that ``--retry-errors``
    dropped had cost (``run.json``'s ``retried_spend``, pair -> Cost), summed —
    ``calls``, ``embedding_calls``, ``input_tokens``, ``output_tokens``, ``usd`` (None when
    a dropped attempt's tokens had no price) — and ``by_pair``. None when nothing was
    dropped that cost anything. The aggregates' costs count only the lines that stand."""
    from unified.scores import Cost

    if not isinstance(by_pair, dict) or not by_pair:
        return None
    costs = {str(p): Cost.lenient(c) for p, c in by_pair.items()}  # run.json may be hand-edited: never crash
    total = Cost()
    for cost in costs.values():
        total = total.add(cost)
    if not total.paid_for_something:
        return None  # nothing paid (or an entry that does not read as a cost)
    fields = ("calls", "embedding_calls", "input_tokens", "output_tokens", "usd")
    return {**{f: getattr(total, f) for f in fields}, "by_pair": {p: c.model_dump() for p, c in costs.items()}}


def print_table(aggregates: list[Any], wall_seconds: float | None = None, task_seconds: float | None = None) -> None:
    """metric × backend: n, mean, pass rate, errors, judge/embedding calls, cache hits,
    tokens (and USD when prices are known), busy seconds."""
    from rich.console import Console
    from rich.table import Table

    title = "scores (0–10)"
    if wall_seconds is not None:
        title += f" · scoring {wall_seconds:.1f}s"
    t = Table(title=title)
    t.caption = (
        "judge calls: LLM requests sent · embed calls: embedding requests · "
        "busy-s: seconds summed over a metric's tasks (they overlap, so it exceeds wall time)"
        + (
            " · scoring: wall time from the run's set-up to its last score line, over every run into "
            "this folder (not the command's start-up, framework imports or report)"
            if wall_seconds is not None
            else ""
        )
    )
    usd = any(getattr(a.cost, "usd", None) is not None for a in aggregates)
    cols = (
        [
            "metric",
            "backend",
            "scored",
            "mean",
            "pass rate",
            "errors",
            "judge calls",
            "embed calls",
            "cache hits",
            "tokens",
        ]
        + (["USD"] if usd else [])
        + ["busy-s"]
    )
    for col in cols:
        t.add_column(col, justify="left" if col in ("metric", "backend") else "right")
    for a in aggregates:
        c = a.cost
        # the mean and pass rate are over the scored tasks only: n is those, errors the rest
        row = [
            a.metric,
            a.backend,
            str(a.scored),
            "—" if a.mean is None else f"{a.mean:.2f}",
            "—" if a.pass_rate is None else f"{a.pass_rate:.0%}",
            f"[red]{a.errors}[/red]" if a.errors else "0",
            str(c.calls),
            str(c.embedding_calls),
            str(c.cache_hits),
            str(c.input_tokens + c.output_tokens),
        ]
        if usd:
            row.append("—" if getattr(c, "usd", None) is None else f"{c.usd:.4f}")
        t.add_row(*row, f"{c.seconds:.1f}")
    from unified.console import console_width

    Console(width=console_width(sys.stdout)).print(t)


def example_place(ex: dict[str, Any], source: str | None) -> str:
    """Where an error group's example is in the input: ``data.jsonl:12`` (``row 12`` for an
    input that is no file), then ``sample 'q7'`` when the sample has an id of its own (a
    content hash says nothing to a person, the row does); the sample alone for a line
    without a row (written before rows were recorded)."""
    row, sid = ex.get("row"), ex.get("sample_id")
    named = sid is not None and sid != ex.get("sample_hash")
    if row is None:
        return f"sample {sid}"
    place = f"{source}:{row}" if source else f"row {row}"
    return f"{place}, sample '{sid}'" if named else place


def print_failures(
    groups: list[dict[str, Any]],
    n_failed: int,
    retry_hint: str | None,
    stream: TextIO | None = None,
    limit: int = 8,
    degraded: list[dict[str, Any]] | None = None,
    source: str | None = None,
) -> None:
    """The grouped failures on stderr: each cause with its count and one example, named by
    its place in the input (``source``:row, the file as the user gave it; ``row N`` for an
    input that is no file) before its sample id; then the degraded scores (a value from
    fewer judges than asked) the same way."""
    stream = stream or sys.stderr
    n_degraded = sum(g["count"] for g in degraded or [])
    if not n_failed and not n_degraded:
        return
    if n_failed:
        _print_groups(f"{n_failed} task(s) failed:", groups, stream, limit, source)
    if n_degraded:
        _print_groups(
            f"{n_degraded} task(s) scored by fewer judges than asked (degraded):", degraded or [], stream, limit, source
        )
    if retry_hint:
        print(f"score them again once fixed: {retry_hint}", file=stream)
    stream.flush()


def _print_groups(
    title: str, groups: list[dict[str, Any]], stream: TextIO, limit: int, source: str | None = None
) -> None:
    print(title, file=stream)
    for g in groups[:limit]:
        ex = g["example"]
        print(
            f"  {g['count']} × {one_line(g['cause'], 200)}  (e.g. {example_place(ex, source)}, "
            f"{ex.get('metric')} ({ex.get('backend')}))",
            file=stream,
        )
    if len(groups) > limit:
        print(f"  … and {len(groups) - limit} more cause(s); see summary.json", file=stream)
