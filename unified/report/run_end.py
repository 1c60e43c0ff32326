"""The end of a run: from the folder the run layer scored to its ``Report``, and what the
user sees of it.

The run layer (``unified.run.runner.scored_run``) scores into the folder and hands over a
``RunResult`` while it still holds the folder's lock and its signal rule; ``finish_run``
then, in this order:

* reads the folder once into a ``Report`` (aggregates in the order asked: metrics as in
  ``--metrics``, backends as in ``--backends``, anything else the folder holds after);
* builds ``summary.json`` (aggregates, failures grouped by cause, counts, configuration,
  timings, spend) and writes it and ``report.html`` — into a folder of the user's only;
* writes ``index.json`` last, when the run layer's rule allows (``RunResult.write_index``);
* says the end on stderr: the run's notes, the table, ``rows read = scored + rejected``,
  the grouped failures with the command that scores them again.

The no-op rerun (``RunResult.unchanged``) writes nothing and says the stored summary
again. A temporary folder's Report is returned in memory: the folder goes when the run
closes.
"""

from __future__ import annotations

from typing import Any

from unified.data.files import write_json
from unified.report.core import Report
from unified.run.repeats import retest_lines, retest_summary
from unified.run.result import RunResult
from unified.run.runfolder import REPORT_FILE, SCORES_FILE, SUMMARY_FILE
from unified.run.runindex import INDEX_FILE
from unified.run.runsummary import build_summary, print_failures, print_table, retried_spend
from unified.scores import Aggregate


def finish_run(result: RunResult) -> Report:
    """Write the end of the run (module docstring) and return its Report."""
    if result.unchanged:
        return _said_again(result)
    report = Report.from_dir(result.folder)
    aggregates = as_asked(result, report.summary())
    groups, degraded = report.error_groups(), report.degraded_groups()  # from the one pass
    result.counts.score_lines = sum(a.count for a in aggregates)
    summary = _summary(result, report, aggregates, groups, degraded)
    result.summary = summary
    if not result.temporary:
        write_json(result.folder / SUMMARY_FILE, summary)
        if result.options.write_report:
            report.write_html(result.folder / REPORT_FILE)
    result.write_index(report.summary(), report.summary(stable=True))
    say_end(result, summary, groups, degraded)
    if result.temporary:  # the folder goes when the run closes: the Report lives in memory
        return Report(list(report.iter_scores()), list(report.iter_samples()))
    return report


def _said_again(result: RunResult) -> Report:
    """The no-op rerun: the stored summary, said again."""
    summary = result.stored_summary
    result.summary = summary
    if result.options.show_summary and not result.options.quiet:
        result.say(
            f"nothing to do: {result.folder} already holds every task of this input and configuration "
            f"(the input and {SCORES_FILE} are unchanged since the run that wrote {INDEX_FILE}); "
            "the table below is that run's"
        )
    say_end(result, summary, summary.get("error_groups", []), summary.get("degraded_groups", []))
    report = Report.from_dir(result.folder)
    report.unchanged = True
    return report


def as_asked(result: RunResult, aggregates: list[Aggregate]) -> list[Aggregate]:
    """Aggregates in the order the user asked: metrics as in --metrics, backends as in
    --backends (anything else the folder holds after, as first written)."""
    metrics = {r.name: i for i, r in enumerate(result.refs)}
    backends = {b: i for i, b in enumerate(result.backends)}
    return sorted(
        aggregates, key=lambda a: (metrics.get(a.metric, len(metrics)), backends.get(a.backend, len(backends)))
    )


def _summary(
    result: RunResult,
    report: Report,
    aggregates: list[Aggregate],
    groups: list[dict[str, Any]],
    degraded: list[dict[str, Any]],
) -> dict[str, Any]:
    """``summary.json``'s content (``unified.run.runsummary``)."""
    from dataclasses import asdict

    summary = build_summary(
        aggregates,
        groups,
        report.error_list(limit=50),
        result.counts,
        [asdict(s) for s in result.plan.skipped],
        result.config,
        result.timings,
        result.interrupted is not None,
        degraded,
    )
    summary["unserved_metrics"] = result.plan.unserved(result.refs)
    if result.price_tables > 1:  # as written to run.json
        summary["usd_price_tables"] = result.price_tables  # the USD figures mix them
    if spent := retried_spend(result.retried_spend):
        summary["retried_spend"] = spent
    if result.executor_summary is not None:  # where the tasks ran (Ray: per node)
        summary["executor"] = result.executor_summary
    if result.repeats:
        summary["repeats"] = retest_summary(report.iter_scores(), result.repeats)
    _batch_spend(result, summary, aggregates)
    return summary


def _batch_spend(result: RunResult, summary: dict[str, Any], aggregates: list[Aggregate]) -> None:
    """``summary["batches"]``: what the folder's batch jobs were billed for
    (``batches.jsonl``), and a note when the score lines count less — answers a killed
    run had read are cache hits in the lines of the run that resumed it."""
    from unified.judge.batch_ledger import BATCHES_FILE, paid_summary

    path = result.folder / BATCHES_FILE
    if result.temporary or not path.exists():
        return
    paid = summary["batches"] = paid_summary(path, result.prices)
    lines = sum((a.cost.usd or 0.0) for a in aggregates) + ((summary.get("retried_spend") or {}).get("usd") or 0.0)
    if paid["usd"] is not None and paid["usd"] > lines + 1e-9:
        result.say(
            f"note: the batch jobs of this folder ({BATCHES_FILE}) were billed ${paid['usd']:.4f}; its score "
            f"lines count ${lines:.4f}: answers an interrupted run had read are cache hits at $0 in the lines "
            "of the run that resumed it"
        )


# ---------------------------------------------------------------- what the user sees


def say_end(
    result: RunResult, summary: dict[str, Any], groups: list[dict[str, Any]], degraded: list[dict[str, Any]]
) -> None:
    """The end on stderr (module docstring); the table on stdout unless quiet."""
    say, o = result.say, result.options
    for note in result.notes:
        say(note)
    if (n := summary.get("usd_price_tables") or 0) > 1:
        say(
            f"note: this folder's lines were priced under {n} price tables (--price or [prices] changed "
            "between its runs): a line keeps the prices it was written with, so its USD totals mix them; "
            "--fresh prices every line under one"
        )
    aggs = [Aggregate.model_validate(a) for a in summary["aggregates"]]
    if spent := summary.get("retried_spend"):
        say(retried_note(spent, aggs))
    if o.quiet:
        return
    if o.show_summary:
        print_table(aggs, summary["timings"].get("wall_seconds_total"))
        say(rows_line(result, max((a.count for a in aggs), default=0)))
        for line in retest_lines(summary.get("repeats")):
            say(line)
    failed, n_degraded = summary.get("n_errors", 0), summary.get("n_degraded", 0)
    print_failures(
        groups,
        failed,
        result.hint(retry=True) if failed or n_degraded else None,
        degraded=degraded,
        source=result.source_file,
    )
    if unasked := unasked_failures(result, summary):
        say(
            "note: failed tasks of pairs this run did not ask for: "
            + ", ".join(f"{n} of {k.replace('|', ' (', 1)})" for k, n in unasked.items())
            + "; --retry-errors scores a pair again only when --metrics and --backends name it"
        )


def retried_note(spent: dict[str, Any], aggregates: list[Aggregate]) -> str:
    """What the attempts ``--retry-errors`` dropped had cost, beside the table's figures
    (which count only the lines that stand), and the two together. Not "all": lines
    compaction drops (stale samples) take their cost with them."""
    tokens = spent["input_tokens"] + spent["output_tokens"]
    parts = [f"{spent['calls']} judge call(s)"]
    parts += [f"{spent['embedding_calls']} embedding call(s)"] if spent["embedding_calls"] else []
    parts += [f"{tokens:,} tokens"] + ([] if spent["usd"] is None else [f"${spent['usd']:.4f}"])
    usds = [a.cost.usd for a in aggregates if a.cost.usd is not None or a.cost.input_tokens or a.cost.output_tokens]
    both = (
        ""
        if spent["usd"] is None or None in usds
        else f"; with them, the lines and the dropped attempts cost ${spent['usd'] + sum(u or 0.0 for u in usds):.4f}"
    )
    return (
        f"note: failed attempts that --retry-errors dropped had cost {', '.join(parts)} (summary.json "
        f"retried_spend); the table's calls, tokens and USD count only the lines that stand{both}"
    )


def unasked_failures(result: RunResult, summary: dict[str, Any]) -> dict[str, int]:
    """Failed tasks per "metric|backend" of the folder that this run's plan does not
    hold (an earlier run's pairs; the jury follows its members)."""
    from unified.analysis.jury import JURY

    asked = set(result.plan.hashes)
    out: dict[str, int] = {}
    for a in summary.get("aggregates") or []:
        key, n = f"{a['metric']}|{a['backend']}", a.get("errors") or 0
        if n and key not in asked and a["backend"] != JURY:
            out[key] = n
    return out


def rows_line(result: RunResult, most_per_pair: int) -> str:
    """``rows read = scored + rejected``, and what else the table counts: rows an
    interruption left unread, or earlier rows of the folder that --max-samples did not
    read this time."""
    c = result.counts
    line = f"rows read {c.rows_read} = {c.rows_scored} scored + {c.rows_rejected} rejected"
    if result.interrupted:  # a row read is not yet a row scored: its tasks may have been cut
        return (
            f"rows read {c.rows_read} = {c.rows_scored} accepted + {c.rows_rejected} rejected before the "
            f"interruption; {c.tasks_run} task(s) scored this time"
        )
    if not result.complete and most_per_pair > c.rows_read:
        line += (
            f"; the table also counts earlier rows of {result.folder} (up to {most_per_pair} per "
            "metric) that --max-samples did not read this time"
        )
    return line
