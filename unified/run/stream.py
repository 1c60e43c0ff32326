"""The scoring of a run: samples read as a stream, grouped into tasks, handed to the
executor, and each task's line written as it finishes.

The rules:

* Samples are a *stream*: at most ``concurrency`` groups are in flight, so a 100k-row
  file is never held in memory with its scores; only ``key -> sample hash`` and the
  done-set index stay in memory.
* A task is done when its line carries this run's sample and configuration
  fingerprints; a sample whose content changed is scored again.
* One line per task: a sample id seen twice is a row error, never a second line; a
  group is one ``backend.score`` call (judge-free and judge-using groups in separate
  windows); a repeat (``--repeats``) writes its repeat lines and, with the last repeat,
  the folded Score (``unified.run.repeats``).
* Lines are stamped with their input row (and DataFrame index label), so content-hash
  ids join back to the user's rows.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterator

from unified.redact import scrub
from unified.run.batching import batch_scope
from unified.run.columnar import StreamCopy
from unified.run.executor import LocalExecutor, Pair, TaskGroup
from unified.run.progress import Progress
from unified.run.repeats import seed_of
from unified.run.rowerrors import missing_field_score, row_error_scores
from unified.run.runfolder import AppendLog, Key
from unified.run.state import RunState
from unified.sample import Sample
from unified.scores import Score, is_ok, line_and_object, score_line

# DataFrame index labels ``line_of`` writes as the Score's own encoder does (others, floats too:
# through a Score)
_PLAIN_INDEX = (type(None), int, str)  # not float: a NaN label would be written as bare NaN, not null


class TaskStream:
    """Reads the input, yields the TaskGroups still to score, writes every line (module
    docstring). ``listed``: the ids ``samples.jsonl`` holds (on a resume; ``FolderPrep``);
    ``restored`` counts the done samples whose line it wrote again."""

    def __init__(self, state: RunState, listed: set[str] | None):
        self.state = state
        self.listed = listed
        self.restored = 0
        self.reader: Any = None
        # (row, DataFrame index label) of the row being read; a sample's groups carry their own
        self.where: tuple[int | None, Any] = (None, None)
        self.log: AppendLog | None = None
        self.sample_log: AppendLog | None = None
        self.progress: Progress | None = None
        self.total_tasks: int | None = None

    # ------------------------------------------------------------ the scoring
    async def run(self) -> None:
        """Score every pending task through the run's executor, writing as they finish."""
        s = self.state
        task = asyncio.current_task()
        s.stop.cancelling_at_start = task.cancelling() if task is not None else 0
        # a sample's line is held until its scores are written (one write per block, not per row)
        self.sample_log = AppendLog(s.folder.samples)
        self.log = AppendLog(s.folder.scores, first=self.sample_log)
        if not s.temporary and self.log.empty:  # a fresh file: scores.parquet is built as it is written
            self.log.tap = StreamCopy()
        if s.book.pairs:
            s.book.open()
        self.progress = Progress(False if s.opts.quiet else s.opts.progress, self._totals())
        ticker = asyncio.create_task(self._tick())
        try:
            from unified.judge.prices import price_scope

            with price_scope(s.prices()):
                async with batch_scope(s, self._batch_news):
                    if isinstance(s.executor, LocalExecutor):  # a computed block's lines: one write
                        await s.executor.run(self.groups(), self.done, after_block=self.log.flush)
                    else:
                        await s.executor.run(self.groups(), self.done)
        finally:
            ticker.cancel()
            self.progress.stop()
            self._close()

    def _totals(self) -> dict[str, int | None]:
        """Tasks per backend for the progress bar (and ``total_tasks``), when the rows are known."""
        s = self.state
        rows = s.source.rows()
        if rows is not None and s.opts.max_samples is not None:
            rows = min(rows, s.opts.max_samples)
        self.total_tasks = rows * len(s.plan.pairs) if rows is not None else None
        return {b: (rows * len(ps) if rows is not None else None) for b, ps in s.plan.by_backend().items()}

    def _close(self) -> None:
        """Close the logs; a failing close (disk full while writing held lines) must not skip the others."""
        try:
            if self.log is not None:
                self.log.close()
        finally:
            try:
                if self.sample_log is not None:
                    self.sample_log.close()
            finally:
                self.state.book.close()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            if self.progress is not None:
                self.progress.tick()

    def _batch_news(self, line: str) -> None:
        """A batch job's counts or state: above the progress bar when one is shown."""
        if self.state.opts.quiet:
            return
        (self.progress.note if self.progress is not None and self.progress.mode else self.state.say)(line)

    # ------------------------------------------------------------ writing lines
    def emit(self, scores: list[Any], backend: str, where: tuple[int | None, Any] | None = None) -> None:
        """Write ``scores`` (Scores, or a computed group's Score field dicts); ``where``:
        the (row, DataFrame index label) of their input row — a scored group's own (it
        may finish long after its row was read), else the row being read now. A computed
        group's lines wait for the end of its block (``LocalExecutor``: one write)."""
        assert self.log is not None
        row, index = self.where if where is None else where
        update: dict[str, Any] = {"row": row, "input_index": index}
        plain = type(index) in _PLAIN_INDEX  # what line_of writes as model_dump_json would
        failed = degraded = 0
        for s in scores:
            if isinstance(s, dict) and plain:
                s.update(update)
                if s.get("error"):  # defence in depth: no error text leaves with a credential in it
                    s["error"] = scrub(s["error"])
                text, obj = line_and_object(s)
                self.log.write(text, flush=False, obj=obj)
                ok = is_ok(s.get("error"), s.get("value"))
                failed += not ok
                degraded += ok and bool(s.get("degraded"))
                continue
            s = Score(**s) if isinstance(s, dict) else s
            changes = {**update, "error": scrub(s.error)} if s.error else update
            self.log.write(score_line(s.model_copy(update=changes)))
            failed += not s.ok
            degraded += s.ok and s.degraded
        self.state.counts.tasks_run += len(scores)
        self.state.counts.tasks_failed += failed
        if self.progress is not None:
            self.progress.advance(backend, len(scores), failed, degraded)

    def done(self, group: TaskGroup, scores: list[Score]) -> None:
        """A scored group: its Scores, or — for a repeat — the repeat lines, and the
        folded Scores of the tasks it completed (``unified.run.repeats``)."""
        if group.repeat is None:
            self.emit(scores, group.backend.name, group.where)
        elif folded := self.state.book.record(group, scores):
            self.emit(folded, group.backend.name, group.where)

    # ------------------------------------------------------------ reading rows
    def groups(self) -> Iterator[TaskGroup]:
        """TaskGroups of the input, in order; row errors and missing fields are written
        directly (no backend call)."""
        from unified.adapters import missing_field_error
        from unified.data.io import RowError, input_index, read_samples

        s, o = self.state, self.state.opts
        self.reader = read_samples(
            s.source.readable,
            dict(o.mapping or {}) or None,
            fmt=o.fmt,
            layout=o.layout,
            labels=o.labels,
            list_sep=o.list_sep,
        )
        counts = s.counts
        for row, item in self.reader.rows():
            if o.max_samples is not None and counts.rows_read >= o.max_samples:
                return
            if not counts.rows_read & 255 and s.stop.stop_requested():
                return  # an incomplete read: the folder keeps what it has, the run ends interrupted
            counts.rows_read += 1
            if isinstance(item, Sample) and (False, item.id) in s.seen:
                # the reader gives every row its own id; a second line per task is never written
                item = RowError(
                    self.reader.source, counts.rows_read, "id", f"sample id '{item.id}' repeats an earlier row's id"
                )
            # stamped on this row's Scores (a trace's row is the trace, with no DataFrame label)
            self.where = (row, None if self.reader.trace else input_index(s.source.samples, row))
            if isinstance(item, RowError):
                self._row_error(item)
                continue
            yield from self._sample_groups(item, self.reader.content_hash(item), missing_field_error)
        s.complete = o.max_samples is None or counts.rows_read < o.max_samples

    def reader_notes(self) -> list[str]:
        """What the reader warned about while reading (once each)."""
        return list(self.reader.notes) if self.reader is not None else []

    def _row_error(self, err: Any) -> None:
        counts = self.state.counts
        counts.rows_rejected += 1
        skipped, by_backend = row_error_scores(err, self.state.seen, self.state.scan, self.state.plan.pairs)
        counts.tasks_skipped_done += skipped
        for backend, scores in by_backend.items():
            self.emit(scores, backend)

    def _sample_groups(
        self, sample: Sample, h: str, missing_field_error: Callable[..., str | None]
    ) -> Iterator[TaskGroup]:
        """``h``: the sample's fingerprint (``fingerprint.sample_hash``, as the reader
        computed it); ``missing_field_error``: ``unified.adapters``' rule, imported once
        per run by the caller (an import statement per sample cost more than the rule)."""
        s = self.state
        key: Key = (False, sample.id)
        s.seen[key] = h
        s.counts.rows_scored += 1
        done = s.scan.mask(key, h)
        if s.scan.has_other(key, h):
            s.counts.samples_changed += 1
        todo = [p for p in s.plan.pairs if not done >> p.bit & 1]
        s.counts.tasks_skipped_done += len(s.plan.pairs) - len(todo)
        self._advance_done(done)
        if not self._write_sample(sample, todo):
            return
        runnable: dict[tuple[str, bool], list[Pair]] = {}
        for p in todo:
            missing = missing_field_error(sample, p.metric, p.backend, self.reader.field_names)
            if missing:
                self.emit([missing_field_score(sample.id, p, missing, h)], p.backend.name)
            else:
                runnable.setdefault((p.backend.name, p.needs_judge), []).append(p)
        for (_, needs_judge), pairs in runnable.items():
            once = [p for p in pairs if p.repeats == 1]
            if once:
                yield TaskGroup(
                    sample=sample,
                    backend=once[0].backend,
                    pairs=once,
                    sample_hash=h,
                    needs_judge=needs_judge,
                    where=self.where,
                    companions=[p.metric for p in self._done_on(once[0].backend.name, done)] if needs_judge else [],
                )
            repeated = [p for p in pairs if p.repeats > 1]
            if repeated:
                yield from self._repeat_groups(sample, h, repeated, done)

    def _advance_done(self, done: int) -> None:
        """The progress of a sample's tasks done earlier: one update per backend, not per task."""
        if self.progress is None or not done:
            return
        finished: dict[str, int] = {}
        for p in self.state.plan.pairs:
            if done >> p.bit & 1:
                finished[p.backend.name] = finished.get(p.backend.name, 0) + 1
        for backend, n in finished.items():
            self.progress.advance(backend, n)

    def _write_sample(self, sample: Sample, todo: list[Pair]) -> bool:
        """The sample's line in ``samples.jsonl`` when it has tasks to score, or when a
        done sample lost its line (``listed``); True when it has tasks to score."""
        assert self.sample_log is not None
        restore = not todo and self.listed is not None and sample.id not in self.listed
        if todo or restore:
            self.sample_log.write(sample.model_dump_json(exclude_none=True), flush=False)
        self.restored += restore
        return bool(todo)

    def _done_on(self, backend: str, done: int, repeated: bool = False) -> list[Pair]:
        """The judged pairs on ``backend`` an earlier run scored for this sample (``done``:
        the scan's mask), those scored once or, ``repeated``, those folded from repeats:
        the companions a backend that fuses calls asks as the first run did
        (``Backend.score_with``)."""
        if not done:
            return []
        return [
            p
            for p in self.state.plan.pairs
            if p.backend.name == backend and p.needs_judge and (p.repeats > 1) == repeated and done >> p.bit & 1
        ]

    def _repeat_groups(self, sample: Sample, h: str, pairs: list[Pair], done: int = 0) -> Iterator[TaskGroup]:
        """One group per repeat still missing (each with its seed); a task whose repeats
        are all on disk already (a run killed before its fold) is folded at once. Repeat
        r's companions (``Backend.score_with``) are the metrics a clean run scores in that
        repeat's group and an earlier run already did: their repeat r on disk, or their
        task folded (``done``)."""
        book = self.state.book
        missing = {p.key: book.missing(sample.id, h, p) for p in pairs}
        for p in pairs:
            if not missing[p.key] and (folded := book.complete(sample.id, h, p)) is not None:
                self.emit([folded], p.backend.name)
        folded_earlier = self._done_on(pairs[0].backend.name, done, repeated=True) if pairs else []
        for r in range(max((p.repeats for p in pairs), default=0)):
            todo = [p for p in pairs if r in missing[p.key]]
            if todo:
                held = [p for p in pairs if p.repeats > r and r not in missing[p.key]]
                yield TaskGroup(
                    sample=sample,
                    backend=todo[0].backend,
                    pairs=todo,
                    sample_hash=h,
                    needs_judge=True,
                    repeat=r,
                    seed=seed_of(r),
                    where=self.where,
                    companions=[p.metric for p in held + folded_earlier if p.repeats > r],
                )
