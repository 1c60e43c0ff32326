"""The run path: every (sample, metric, backend) task scored exactly once into the run
folder, streamed to disk, resumable, loud about every failure.

Data flow of one run::

    rows ──► Sample | RowError ──► TaskGroups (sample, backend, pending metrics)
                                        │  Executor (local asyncio, or Ray)
                                        ▼
              DIR/scores.jsonl  (one Score a line, appended + flushed as each finishes)
              DIR/samples.jsonl (each sample as read, for the report's drill-down)
              DIR/run.json, DIR/scores.parquet  (at the end, also after Ctrl-C/SIGTERM)
                                        │  RunResult
                                        ▼
              the caller: DIR/summary.json, DIR/report.html, DIR/index.json
              (``unified.report.run_end``; ``unified.api`` returns the Report)

``scored_run`` is this layer's door. It sets the run up (judges, backends, the plan of
which pairs can run and why the others cannot, the executor — every refusal before the
folder is touched), then the parts do one step each: ``prepare`` (the folder and the
no-op rerun check), ``stream`` (groups of tasks to the executor, lines to the folder;
``rowerrors``), ``finish`` (the lines made final). It yields a ``RunResult`` while the
folder is still locked and its signal rule still holds (``interrupts``), so the end its
caller writes is under both; then it closes the backends, unlocks, and removes what was
temporary. A run that ended under a signal raises ``CancelledError`` after its caller's
end, having handed the ``RunInterrupted`` details to ``on_interrupt``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any, AsyncIterator

from unified.metrics import MetricRef, parse_metric, parse_metrics
from unified.run.batching import batch_settings
from unified.run.executor import LocalExecutor, named_executor
from unified.run.finish import finish_scoring, finish_unchanged
from unified.run.interrupts import sigterm_cancels
from unified.run.options import RunOptions
from unified.run.prepare import FolderPrep, IndexRule
from unified.run.repeats import RepeatBook
from unified.run.result import RunResult
from unified.run.runplan import plan_run
from unified.run.state import RunState
from unified.run.stream import TaskStream

__all__ = ["as_metric_refs", "scored_run"]


def as_metric_refs(metrics: Any) -> list[MetricRef]:
    """``"faithfulness,precision@3"`` or a list of names / MetricRefs, each metric once."""
    refs = (
        parse_metrics(metrics)
        if isinstance(metrics, str)
        else [m if isinstance(m, MetricRef) else parse_metric(m) for m in metrics]
    )
    return list({r.name: r for r in reversed(refs)}.values())[::-1]  # a metric named twice counts once


@contextlib.asynccontextmanager
async def scored_run(samples: Any, metrics: Any, opts: RunOptions) -> AsyncIterator[RunResult]:
    """Score every pending task of ``samples`` × ``metrics`` × ``opts.backends`` into the
    run folder and yield what happened (module docstring). ``samples``: anything
    ``unified.data.io.read_samples`` reads, consumed as a stream."""
    refs = as_metric_refs(metrics)
    if not refs:
        raise ValueError("no metrics given; name at least one, e.g. --metrics precision@3")
    if opts.jury is not None:
        from unified.analysis.jury import METHODS

        if opts.jury not in METHODS:
            raise ValueError(f"unknown jury method '{opts.jury}': use one of {', '.join(METHODS)}")
    state = RunState.start(samples, refs, opts)
    try:
        with sigterm_cancels(state.stop):
            result = await _score(state)
            yield result
        _raise_if_stopped(result)
    finally:
        try:
            await _aclose(state)
        finally:  # a second cancellation inside aclose must not leave the lock or a temp folder
            _cleanup(state)


async def _score(state: RunState) -> RunResult:
    """Set up, prepare the folder, score (unless a SIGTERM came first), finish the lines."""
    state.source.take_snapshot(state.out, state.say)
    _setup(state)
    index = IndexRule(state)
    prep = FolderPrep(state, index)
    if prep.prepare():
        state.stop.finishing = True  # the folder is complete already: a SIGTERM now interrupts nothing
        return finish_unchanged(state, index)
    stream = TaskStream(state, prep.listed)
    if not state.stop.interrupted:
        state.stop.streaming = True
        try:
            await stream.run()
        except asyncio.CancelledError:
            state.stop.interrupted = state.stop.interrupted or "SIGINT"
        finally:
            state.stop.streaming = False
    state.stop.finishing = True
    return finish_scoring(state, stream, index)


def _setup(state: RunState) -> None:
    """Judges, backends, the plan, a calibration file, ``--batch``, the executor: each
    refused here, before the folder is touched."""
    from unified.adapters import Backend, get_backend

    s, o = state, state.opts
    s.judges, s.own_judges, s.judge_desc = _resolve_judges(o)
    s.backends = [b if isinstance(b, Backend) else get_backend(b, s.judges) for b in o.backends]
    s.plan = plan_run(s.refs, s.backends, s.judges, repeats=o.repeats)
    s.book = RepeatBook(s.out, {p.key: p for p in s.plan.pairs if p.repeats > 1})
    if o.calibration is not None:
        from unified.analysis.calibrated import Calibration

        s.calibration = Calibration.load(o.calibration)
        for note in s.calibration.check(s.plan.hashes, s.plan.configs):
            s.say(f"note: {note}")
    for w in s.plan.warnings():
        s.say(f"warning: {w}")
    _say_where_calls_go(s)
    if not s.plan.pairs:
        raise ValueError(s.plan.nothing_to_run())
    s.batch = batch_settings(s)
    s.executor = _executor(s)


def _say_where_calls_go(s: RunState) -> None:
    """The run header's judge lines (``Judges.where``): where the judge and embedding calls
    of the planned pairs go, URLs redacted; information, so ``-q`` leaves them out."""
    uses = {k for c in s.plan.configs.values() for k in ("judge", "embedder") if c.get(k)}
    if uses and s.opts.show_summary and hasattr(s.judges, "where"):
        for line in s.judges.where(chat="judge" in uses, embedder="embedder" in uses):
            s.say(line)


def _resolve_judges(opts: RunOptions) -> tuple[Any, bool, dict[str, Any]]:
    """(judges, owned, description): the given Judges, or ones built from the options and
    the environment by ``unified.judge.resolve_judges`` (the one rule the CLI uses too)."""
    if opts.judges is not None:
        return opts.judges, False, {}
    from unified.judge import resolve_judges

    judges, desc = resolve_judges(
        opts.judge,
        opts.judge2,
        opts.embedding,
        single_judge=opts.single_judge,
        cache=opts.cache,
        overrides={"timeout": opts.timeout, "max_retries": opts.max_retries},
    )
    return judges, True, desc


def _executor(state: RunState) -> Any:
    """The executor: local (``--batch``: every task in flight at once, so each step of
    every sample joins one job), one found by name (Ray), or the one given."""
    ex = state.opts.executor
    if ex in (None, "local"):
        return LocalExecutor(max(state.opts.concurrency, state.batch.max_requests if state.batch else 0))
    if isinstance(ex, str):
        ex = named_executor(ex, address=state.opts.ray_address)
    if hasattr(ex, "bind"):  # an executor that scores elsewhere rebuilds the run's backends there
        ex.bind(state.backends, state.opts.concurrency)
    return ex


def _raise_if_stopped(result: RunResult) -> None:
    """A run that ended under a signal says so on stderr, hands the details to
    ``on_interrupt``, and cancels (``late`` alone: every task was scored, the folder
    finished whole, and the message says it is complete)."""
    why = result.interruption()
    if why is None:
        return
    print(why.line(), file=sys.stderr, flush=True)
    if result.options.on_interrupt is not None:
        result.options.on_interrupt(why)
    raise asyncio.CancelledError()


async def _aclose(state: RunState) -> None:
    for b in state.backends:
        with contextlib.suppress(Exception):  # closing must not mask the run's own outcome
            await b.aclose()
    if state.own_judges:
        with contextlib.suppress(Exception):
            await state.judges.aclose()


def _cleanup(state: RunState) -> None:
    state.folder.unlock()
    state.source.remove_snapshot()
    if state.temporary:
        import shutil

        shutil.rmtree(state.out, ignore_errors=True)
