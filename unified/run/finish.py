"""The end of a run's scoring: the folder's lines made final, then what happened as a
``RunResult``.

The rules, in order:

* Exactly one line per task: the lines are compacted when the folder held lines before
  this run or samples changed (stale, superseded and orphaned lines go); the repeats of
  folded tasks leave ``repeats.jsonl``.
* A jury line follows its members: the jury's lines are recomputed from the members'
  current lines (read directly, last line per task, under the 0–10 rule), so a member
  rescored in this run leaves no stale jury line.
* A calibrated value belongs to the file named for this run: ``--calibration`` sets it on
  the lines it covers; without it, the values earlier runs left are removed.
* ``scores.parquet`` is written from the final lines (a derived copy: when it cannot be
  written the run says so in one line and goes on), after the last change to them.
* ``run.json`` records the invocation as ended (``running: false``).

Nothing here needs the ``Report``: ``summary.json``, ``report.html`` and ``index.json``
are the report layer's (``unified.report.run_end``), written from the ``RunResult``.
"""

from __future__ import annotations

import contextlib
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from unified.redact import one_line
from unified.run.columnar import build_parquet, raw_line, remove_parquet
from unified.run.executor import LocalExecutor
from unified.run.manifest import price_tables, write_manifest
from unified.run.prepare import IndexRule
from unified.run.repeats import folded_tasks
from unified.run.result import RunResult
from unified.run.runfolder import PARQUET_FILE, SCORES_FILE, AppendLog
from unified.run.runsummary import RunCounts
from unified.run.state import RunState
from unified.run.stream import TaskStream
from unified.scores import full_line, invalid_line, line_problem, score_line


def finish_scoring(state: RunState, stream: TaskStream, index: IndexRule) -> RunResult:
    """Make the folder's lines final (module docstring) and say what the run did."""
    s = state
    unasked: dict[str, int] = {}  # per pair not asked for: lines compaction dropped
    if s.scan.all_lines or s.counts.samples_changed:
        dropped = s.folder.compact(s.seen, set(s.plan.hashes), complete=s.complete)
        s.counts.lines_dropped, unasked = dropped.lines, dropped.unasked
    if s.book.pairs:  # repeats of folded tasks live in their folded lines now
        s.book.compact(folded_tasks(s.folder.scores))
    manifest = s.folder.read_manifest()
    write_jury(s, s.opts.jury or manifest.get("jury"))
    calibrate(s)
    scores_print = write_parquet(s, stream.log)  # after the last change to the lines
    timings = _timings(s, manifest, stream)
    write_manifest(s, manifest, running=False)
    result = _result(s, manifest, index, scores_print)
    result.timings, result.total_tasks = timings, stream.total_tasks
    result.notes = run_notes(s, stream.reader_notes(), stream.restored, unasked)
    return result


def finish_unchanged(state: RunState, index: IndexRule) -> RunResult:
    """The no-op path: only the manifest records the invocation; the stored summary is
    what the run says again. Nothing else in the folder is read or written."""
    s = state
    manifest = s.folder.read_manifest()
    write_manifest(s, manifest, running=False)
    summary = s.folder.read_summary()
    s.complete = True
    with contextlib.suppress(TypeError):
        s.counts = RunCounts(**summary.get("counts", {}))
    result = _result(s, manifest, index, None)
    result.unchanged, result.stored_summary = True, summary
    result.notes = run_notes(s, [], 0, {})
    return result


def _result(s: RunState, manifest: dict[str, Any], index: IndexRule, scores_print: Any) -> RunResult:
    executor_summary = getattr(s.executor, "summary", None)
    return RunResult(
        folder=s.out,
        options=s.opts,
        refs=s.refs,
        backends=[b.name for b in s.backends],
        plan=s.plan,
        counts=s.counts,
        stop=s.stop,
        say=s.say,
        temporary=s.temporary,
        complete=s.complete,
        config=_config(s),
        price_tables=len(price_tables(s, manifest)),  # as just written to run.json
        retried_spend=manifest.get("retried_spend"),
        executor_summary=executor_summary() if callable(executor_summary) else None,  # Ray: per node
        repeats=dict(s.book.pairs),
        prices=s.prices(),
        tasks_before=s.scan.lines,
        source_file=str(s.source.samples) if isinstance(s.source.samples, (str, Path)) else None,
        write_index=lambda written, stable: index.write(written, stable, scores_print),
    )


def write_jury(state: RunState, method: str | None) -> None:
    """Recompute the jury lines from the members' current lines (module docstring)."""
    if not method:
        return
    from unified.analysis.jury import JURY, jury_scores

    members = (d for d in current_lines(state.folder.scores) if d["backend"] != JURY)
    lines = [score_line(s) for s in jury_scores(members, method)]
    state.folder.replace_backend_lines(JURY, lines)
    state.jury_method = method


def current_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The score lines of ``path`` as every reader keys them (``columnar.raw_line``), each
    read under the 0–10 rule: a value that breaks it is a failed task, never a number."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        for raw in f:
            d = raw_line(raw)
            if d is not None:
                d = full_line(d)
                problem = line_problem(d)
                yield d if problem is None else invalid_line(d, problem)


def calibrate(state: RunState) -> None:
    """``--calibration``: set ``calibrated`` on the lines it covers (and only those);
    without it, remove the calibrated values earlier runs left in the folder — a value
    mapped by a file this run did not name must not pass for a result of it."""
    if state.calibration is not None:
        state.folder.map_lines(state.calibration.apply)
        return
    from unified.analysis.calibrated import uncalibrated

    if state.folder.any_calibrated():
        state.say("note: no --calibration this time: the calibrated values of earlier runs are removed")
        state.folder.map_lines(uncalibrated)


def write_parquet(state: RunState, log: AppendLog | None) -> Any:
    """``scores.parquet`` from the final lines (``unified.run.columnar``): a finished run
    into a folder of the user's only. Returns scores.jsonl's fingerprint as the copy
    proved it (``index.json`` records it), or None."""
    if state.temporary or state.stop.interrupted:
        return None
    tap = log.tap if log is not None else None
    if log is not None:
        log.tap = None  # its buffers go once the copy is written, before the report's peak
    try:  # the copy built while the lines were written, when it is proven; else from the file
        meta = (tap.finish(state.out) if tap is not None else None) or build_parquet(state.out)
    except (OSError, ValueError, TypeError) as e:  # OutputError; Arrow's errors subclass the other two
        remove_parquet(state.out)
        state.say(f"note: no {PARQUET_FILE} written ({one_line(str(e))}); readers use {SCORES_FILE}")
        return None
    return None if meta is None else meta["scores"]


def run_notes(state: RunState, reader_notes: list[str], restored: int, unasked: dict[str, int]) -> list[str]:
    """The run's own end notes, as they are said: the reader's warnings, samples that
    changed, lines dropped, samples whose line was written again, and lines of pairs
    this run did not ask for that compaction dropped."""
    c = state.counts
    notes = [f"warning: {note}" for note in reader_notes]
    if c.samples_changed:
        notes.append(
            f"note: {c.samples_changed} sample(s) changed since their scores were written "
            "(their content differs): scored again"
        )
    if c.lines_dropped:
        notes.append(f"note: dropped {c.lines_dropped} stale or superseded score line(s) from {state.folder.scores}")
    if restored:
        notes.append(
            f"note: {restored} scored sample(s) had no line in {state.folder.samples} (deleted or edited "
            "since): written again from the input"
        )
    for pair, n in sorted(unasked.items()):
        metric, _, backend = pair.partition("|")
        notes.append(
            f"note: {metric} ({backend}): {n} line(s) of changed or removed samples dropped and not "
            "scored again (not asked for in this run; add it to --metrics to score them)"
        )
    return notes


def _config(s: RunState) -> dict[str, Any]:
    """``summary.json``'s ``config``: what the run was asked and how it ran."""
    from unified.run.fingerprint import describe_judges

    ex = s.opts.executor
    return {
        "metrics": [r.name for r in s.refs],
        "backends": [b.name for b in s.backends],
        "groups_in_flight": s.executor.concurrency if isinstance(s.executor, LocalExecutor) else s.opts.concurrency,
        "batch": s.batch is not None,
        "max_samples": s.opts.max_samples,
        "executor": ex if isinstance(ex, str) or ex is None else type(ex).__name__,
        "source": s.source.describe(),
        "judges": s.judge_desc or describe_judges(s.judges),
        **s.opts.run_config,
    }


def _timings(s: RunState, manifest: dict[str, Any], stream: TaskStream) -> dict[str, Any]:
    """This invocation's seconds, the folder's over every invocation, and its calls."""
    seconds = time.monotonic() - s.t0
    # earlier invocations of this folder, then this one (its manifest entry is not final yet)
    total = seconds + sum(
        float(r.get("seconds") or 0) for r in manifest.get("invocations", []) if r.get("started") != s.started
    )
    p = stream.progress
    return {
        "started": s.started,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        "wall_seconds_total": round(total, 3),
        "samples_per_s": round(s.counts.rows_scored / seconds, 2) if seconds > 0 else None,
        "judge_calls": sum(p.calls.values()) if p else 0,
        "embedding_calls": sum(p.embedding_calls.values()) if p else 0,
        "cache_hits": sum(p.hits.values()) if p else 0,
    }
