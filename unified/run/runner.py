"""evaluate(): every (sample, metric, backend) task scored exactly once, streamed to disk,
resumable, loud about every failure.

Data flow of one run::

    rows ──► Sample | RowError ──► TaskGroups (sample, backend, pending metrics)
                                        │  Executor (local asyncio, or Ray)
                                        ▼
              DIR/scores.jsonl  (one Score a line, appended + flushed as each finishes)
              DIR/samples.jsonl (each sample as read, for the report's drill-down)
              DIR/summary.json, DIR/report.html, DIR/run.json  (at the end, also after Ctrl-C/SIGTERM)

The parts, one job each: ``RunOptions`` (every option), ``plan_run`` (which pairs can
run and why not), ``RunFolder`` (lock, fingerprints, done-set, repair, compaction), an
``Executor`` (scoring), ``Progress`` and ``runsummary`` (what the user sees). This module
only wires them:

* Samples are a *stream*: at most ``concurrency`` groups are in flight, so a 100k-row
  file is never held in memory with its scores; only ``key -> sample hash`` and the
  done-set index stay in memory.
* A task is done when its line carries this run's sample and configuration fingerprints;
  a sample whose content changed is scored again (and its old lines dropped), a changed
  configuration is refused (``RunConfigChanged``) unless ``fresh``.
* Judge calls already paid are not paid again: their answers are in the judge cache
  before the Score that used them is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from unified.judge.base import Judges
from unified.metrics import MetricRef, parse_metric, parse_metrics
from unified.redact import one_line, scrub
from unified.run.columnar import StreamCopy, build_parquet, remove_parquet
from unified.run.executor import LocalExecutor, Pair, TaskGroup, named_executor
from unified.run.fingerprint import text_hash
from unified.run.options import RunOptions
from unified.run.progress import Progress
from unified.run.repeats import RepeatBook, folded_tasks, retest_lines, retest_summary, seed_of
from unified.run.runfolder import (  # noqa: F401
    CACHE_FILE,
    PARQUET_FILE,
    REPORT_FILE,
    SAMPLES_FILE,
    SCORES_FILE,
    SUMMARY_FILE,
    AppendLog,
    Key,
    RunConfigChanged,
    RunFolder,
    RunFolderBusy,
    RunFolderError,
    ScanResult,
    SeenKeys,
    listed_sample_ids,
    repair_jsonl,
    write_json,
)
from unified.run.runindex import (
    INDEX_FILE,
    proves_unchanged,
    read_index,
    remove_index,
    run_key,
    stat_now,
    write_index,
)
from unified.run.runplan import RunPlan, plan_run
from unified.run.runsummary import RunCounts, build_summary, print_failures, print_table, retried_spend
from unified.sample import Sample
from unified.scores import Score, is_ok, line_and_object, score_line

# DataFrame index labels ``line_of`` writes as the Score's own encoder does (others, floats too:
# through a Score)
_PLAIN_INDEX = (type(None), int, str)  # not float: a NaN label would be written as bare NaN, not null

__all__ = [
    "RunConfigChanged",
    "RunFolderBusy",
    "RunFolderError",
    "RunInterrupted",
    "aevaluate",
    "evaluate",
    "print_summary",
    "repair_jsonl",
]


class RunInterrupted(KeyboardInterrupt):
    """Raised by ``evaluate`` after Ctrl-C or SIGTERM: the run folder is consistent, its
    summary written, its lock released, and ``hint`` resumes it. ``signal`` is "SIGINT" or
    "SIGTERM". In a notebook (``notebook=True``) the message says to run the cell again.
    ``complete``: the signal came after every task was scored, while the folder's files
    were written; they were finished whole and there is nothing to resume."""

    def __init__(
        self,
        done: int,
        total: int | None,
        out: Path,
        hint: str,
        signal_name: str = "SIGINT",
        *,
        notebook: bool = False,
        complete: bool = False,
    ):
        self.done, self.total, self.out, self.hint, self.signal = done, total, out, hint, signal_name
        self.complete = complete
        of = f" of {total}" if total is not None else ""
        how = "run the cell again to resume" if notebook else f"resume with: {hint}"
        if complete:
            super().__init__(f"interrupted by {signal_name} after the run; its folder is complete: {out}")
        else:
            super().__init__(f"interrupted after {done}{of} tasks; {how}")

    def in_notebook(self) -> "RunInterrupted":
        """The same interruption, told as a notebook user acts on it."""
        return RunInterrupted(
            self.done, self.total, self.out, self.hint, self.signal, notebook=True, complete=self.complete
        )


# ---------------------------------------------------------------- inputs


def count_rows(samples: Any) -> int | None:
    """Rows when cheap to know (a JSONL file's non-blank lines, a sized collection) — for
    the progress total; None otherwise."""
    if isinstance(samples, (str, Path)):
        p = Path(samples)
        if p.suffix in (".jsonl", ".ndjson") and p.is_file():
            with open(p, "rb") as f:
                return sum(1 for line in f if line.strip())
        return None
    try:
        return len(samples)
    except TypeError:
        return None


def _as_metric_refs(metrics: Any) -> list[MetricRef]:
    refs = (
        parse_metrics(metrics)
        if isinstance(metrics, str)
        else [m if isinstance(m, MetricRef) else parse_metric(m) for m in metrics]
    )
    return list({r.name: r for r in reversed(refs)}.values())[::-1]  # a metric named twice counts once


def _resolve_judges(opts: RunOptions) -> tuple[Judges, bool, dict[str, Any]]:
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


def _written_by_run(src: Path, out: Path) -> bool:
    """True when ``src`` is inside the run folder ``out`` or is one of its files under
    another name (same device and inode: a hard link, a symlink)."""
    try:
        if not src.is_file() or not out.is_dir():
            return False
        if src.resolve().is_relative_to(out.resolve()):
            return True
        st = src.stat()
        return any(p.is_file() and (p.stat().st_dev, p.stat().st_ino) == (st.st_dev, st.st_ino) for p in out.iterdir())
    except OSError:
        return False


# ---------------------------------------------------------------- one run


class _Run:
    """The state of one invocation; each method does one step of ``aevaluate``."""

    def __init__(self, samples: Any, refs: list[MetricRef], opts: RunOptions):
        self.samples, self.refs, self.opts = samples, refs, opts
        self.say: Callable[[str], None] = (
            (lambda m: None) if opts.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
        )
        self.t0 = time.monotonic()
        # microseconds: an invocation's identity in run.json (two runs within one second,
        # a no-op rerun, were one entry, the later overwriting the earlier)
        self.started = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        self.temp_out = opts.out is None
        self.out = Path(opts.out) if opts.out is not None else Path(tempfile.mkdtemp(prefix="unified-run-"))
        self.folder = RunFolder(self.out)
        self.counts = RunCounts()
        self.unasked_dropped: dict[str, int] = {}  # per pair not asked for: lines compaction dropped
        self.seen = SeenKeys()
        # (row, DataFrame index label) of the row being read; a sample's groups carry their own
        self.where: tuple[int | None, Any] = (None, None)
        self.scan = ScanResult()
        self.complete = False
        self.interrupted: str | None = None
        # a SIGTERM that came while ``finish`` wrote the folder of a run that had scored
        # every task: the files are finished whole, as a complete run's, then it ends
        self.finishing = False
        self.late_signal: str | None = None
        # the run task's cancellation count when the scoring began: a caller that caught an
        # earlier cancellation of its task (without uncancel) leaves it above 0 for good
        self.cancelling_at_start = 0
        self.backends: list[Any] = []
        self.judges: Judges = Judges()
        self.own_judges = False
        self.judge_desc: dict[str, Any] = {}
        self.plan = RunPlan()
        self.log: AppendLog | None = None
        self.scores_print: dict[str, Any] | None = None  # scores.jsonl's {stat, sha256} as scores.parquet proved it
        self.sample_log: AppendLog | None = None
        self.progress: Progress | None = None
        self.total_tasks: int | None = None
        self.jury_method: str | None = None
        self.reader: Any = None
        self.executor: Any = None
        self.streaming = False
        self.summary: dict[str, Any] = {}
        self.book = RepeatBook(self.out, {})
        self.calibration: Any = None
        self.snapshot: Path | None = None  # the copy of an input the run itself writes
        self.batch: Any = None  # BatchSettings of a --batch run
        self.unchanged = False  # the index proves the folder holds every task already (runindex)
        self.input_stat: list[int] | None = None  # the input file's stat when reading began
        # on a resume, the ids samples.jsonl holds a line for: a done sample without one (the
        # file deleted or cut since) has it written again, for the report's questions
        self.listed: set[str] | None = None
        self.restored = 0

    # ------------------------------------------------------------ setup
    def snapshot_input(self) -> None:
        """An input file the run itself writes — inside the run folder (its own
        ``samples.jsonl``) or the same file under another name (a hard link, a symlink) —
        is read from a copy taken now, before the folder is touched: the run appends to,
        compacts and (``--fresh``) removes those files while it reads, and reading what
        it appends would never end. Any other input is read in place."""
        if not isinstance(self.samples, (str, Path)) or not _written_by_run(Path(self.samples), self.out):
            return
        src = Path(self.samples)
        folder = Path(tempfile.mkdtemp(prefix="unified-input-"))
        self.snapshot = folder / src.name  # the same name: row errors still say samples.jsonl:3
        try:
            shutil.copyfile(src, self.snapshot)
        except OSError as e:
            shutil.rmtree(folder, ignore_errors=True)
            raise RunFolderError(
                f"cannot copy {src} (an input inside the run folder {self.out}) before the run: {e.strerror or e}"
            ) from None
        self.say(f"note: {src} is a file this run writes; reading a copy taken before the run")

    def setup(self) -> None:
        from unified.adapters import Backend, get_backend

        self.judges, self.own_judges, self.judge_desc = _resolve_judges(self.opts)
        self.backends = [b if isinstance(b, Backend) else get_backend(b, self.judges) for b in self.opts.backends]
        self.plan = plan_run(self.refs, self.backends, self.judges, repeats=self.opts.repeats)
        self.book = RepeatBook(self.out, {p.key: p for p in self.plan.pairs if p.repeats > 1})
        if self.opts.calibration is not None:  # refused before the folder is touched
            from unified.analysis.calibrated import Calibration

            self.calibration = Calibration.load(self.opts.calibration)
            for note in self.calibration.check(self.plan.hashes, self.plan.configs):
                self.say(f"note: {note}")
        for w in self.plan.warnings():
            self.say(f"warning: {w}")
        uses = {k for c in self.plan.configs.values() for k in ("judge", "embedder") if c.get(k)}
        if uses and self.opts.show_summary and hasattr(self.judges, "where"):  # the header: where the calls go
            for line in self.judges.where(chat="judge" in uses, embedder="embedder" in uses):
                self.say(line)
        if not self.plan.pairs:
            raise ValueError(self.plan.nothing_to_run())
        self.batch = self._batch_settings()
        self.executor = self._executor()  # an unknown executor is refused before the folder is touched

    def _batch_settings(self) -> Any:
        """``--batch``: its settings, refused before the folder is touched when the run
        cannot use a Batch API (``unified.judge.batch``); None for an online run."""
        if self.opts.batch is None or self.opts.batch is False:
            return None  # an online run: the batch module (and the openai client) is not imported
        from unified.judge.batch import batch_refusal, batch_settings

        settings = batch_settings(self.opts.batch)
        if settings is None:
            return None
        if self.opts.executor not in (None, "local"):
            raise ValueError(
                "--batch runs on the local executor (this process sends and polls the jobs); drop --executor"
            )
        why = batch_refusal(self.judges)
        if why is not None:
            raise ValueError(why)
        if not any(p.needs_judge for p in self.plan.pairs):
            self.say("note: --batch: no metric of this run calls an LLM judge; nothing to batch")
            return None
        return settings

    def prepare_folder(self) -> None:
        """Refuse a folder that is not ours, lock, start over or repair, refuse a changed
        configuration, index what is done."""
        if not self.opts.fresh:
            self.folder.refuse_foreign()  # before the lock: nothing is added to a user's folder
        self.folder.lock()
        if self._unchanged():
            self.unchanged = True
            return
        remove_index(self.out)  # before anything changes: no index vouches for a half-written folder
        remove_parquet(self.out)  # nor a columnar copy of lines about to change (unified.run.columnar)
        src = self._input_file()
        self.input_stat = stat_now(src) if src is not None else None
        if self.opts.fresh or not self.opts.resume:
            self.folder.clear()
        manifest = self.folder.read_manifest()
        if self.folder.repair():
            self.say(f"note: truncated a torn last line in {self.folder.scores} (a killed run)")
        self.folder.check_configs(self.plan.hashes, self.plan.configs, manifest.get("configs", {}))
        if self.opts.retry_errors:
            dropped = self.folder.drop_errors(self.plan.hashes)
            if dropped.lines:
                self.say(f"note: retrying {dropped.lines} failed task(s) from {self.folder.scores}")
            if dropped.spent:  # their lines went, their calls were paid: on record at once, before a kill can lose it
                manifest["retried_spend"] = dropped.merged_into(manifest.get("retried_spend"))
                self._write_manifest(manifest, running=True)
        self.scan = self.folder.scan(self.plan.bits, self.plan.hashes)
        if any(not row_error for row_error, _ in self.scan.done):
            self.listed = listed_sample_ids(self.folder.samples)
        if self.book.pairs and (held := self.book.load()):
            self.say(f"resuming {self.out}: {held} repeat(s) of unfinished tasks already on disk")
        if self.scan.lines:
            if self.opts.show_summary:  # information, not a warning: `run -q` shows only errors and gates
                self.say(f"resuming {self.out}: {self.scan.lines} score(s) of this run already on disk")
        if self.scan.unfingerprinted:
            self.say(
                f"note: {self.scan.unfingerprinted} score line(s) carry no fingerprint (an older "
                "version wrote them): their tasks are scored again"
            )
        self._write_manifest(manifest, running=True)

    # ------------------------------------------------------------ the index (runindex)
    def _input_file(self) -> Path | None:
        """The input as a file read in place (the index can vouch only for that)."""
        if self.snapshot is not None or not isinstance(self.samples, (str, Path)):
            return None
        p = Path(self.samples)
        return p if p.is_file() else None

    def _index_key(self) -> str:
        o, src = self.opts, self._input_file()
        read = {"mapping": dict(o.mapping or {}), "fmt": o.fmt, "layout": o.layout, "labels": o.labels}
        # the file's name too: a row error's text names it (``in.jsonl:4: ...``)
        name = src.name if src is not None else None
        return run_key(
            self.plan.hashes, {**read, "list_sep": o.list_sep, "jury": o.jury, "repeats": o.repeats, "name": name}
        )

    def _unchanged(self) -> bool:
        """True when ``index.json`` proves this run has nothing to do (runindex's rules)."""
        o, src = self.opts, self._input_file()
        if src is None or self.temp_out or o.fresh or not o.resume or o.calibration is not None:
            return False
        if o.max_samples is not None:
            return False
        index = read_index(self.out)
        if not index or (o.write_report and not (index.get("report") and self.folder.report.exists())):
            return False
        summary = self.folder.read_summary()
        if not summary or (o.retry_errors and (summary.get("n_errors") or summary.get("n_degraded"))):
            return False
        return proves_unchanged(index, self._index_key(), src, self.folder.scores)

    def _write_index(self, report: "Report") -> None:
        """After a complete run over a file read in place: ``index.json``, last."""
        src = self._input_file()
        if (
            src is None
            or self.temp_out
            or self.interrupted
            or not self.complete
            or self.calibration is not None
            or self.input_stat is None
            or stat_now(src) != self.input_stat  # the input changed while it was read
        ):
            return
        aggs = {
            "written": [a.model_dump() for a in report.summary()],
            "stable": [a.model_dump() for a in report.summary(stable=True)],
        }
        write_index(
            self.out, self._index_key(), src, self.folder.scores, aggs, self.opts.write_report, self.scores_print
        )

    def finish_unchanged(self) -> "Report":
        """The no-op path: the stored summary, said again; only the manifest records the
        invocation. Nothing else in the folder is read or written."""
        from unified.report import Report

        manifest = self.folder.read_manifest()
        self._write_manifest(manifest, running=False)
        summary = self.folder.read_summary()
        self.summary, self.complete = summary, True
        with contextlib.suppress(TypeError):
            self.counts = RunCounts(**summary.get("counts", {}))
        if self.opts.show_summary and not self.opts.quiet:
            self.say(
                f"nothing to do: {self.out} already holds every task of this input and configuration "
                f"(the input and {SCORES_FILE} are unchanged since the run that wrote {INDEX_FILE}); "
                "the table below is that run's"
            )
        self._say_end(summary, summary.get("error_groups", []), summary.get("degraded_groups", []))
        report = Report.from_dir(self.out)
        report.unchanged = True
        return report

    def _write_manifest(self, manifest: dict[str, Any], running: bool) -> None:
        from unified.redact import redact_argv, redact_config

        configs = {
            **manifest.get("configs", {}),
            **{p.config_hash: redact_config(self.plan.configs[p.key]) for p in self.plan.pairs},
        }
        runs = list(manifest.get("invocations", []))
        entry = {
            "started": self.started,
            "command": redact_argv(self.opts.command or []),
            "seconds": round(time.monotonic() - self.t0, 3),
            "interrupted": self.interrupted,
            "running": running,
        }
        if runs and runs[-1].get("started") == self.started:
            runs[-1] = entry
        else:
            runs.append(entry)
        jury = self.jury_method or self.opts.jury or manifest.get("jury")
        tables = self._price_tables(manifest)
        self.folder.write_manifest(
            {
                "version": 1,
                "configs": configs,
                "pairs": self.plan.hashes,
                "invocations": runs,
                **({"jury": jury} if jury else {}),
                **({"price_tables": tables} if tables else {}),
                **({"retried_spend": manifest["retried_spend"]} if manifest.get("retried_spend") else {}),
            }
        )

    def _price_tables(self, manifest: dict[str, Any]) -> list[dict[str, Any]]:
        """The price tables the folder's lines were priced under: the manifest's, and this
        run's when it scored a task (a line's ``usd`` is fixed when it is written, so a
        changed ``--price`` leaves earlier lines at the old prices)."""
        tables = [t for t in manifest.get("price_tables") or [] if isinstance(t, dict)]
        mine = self._prices()
        if mine and self.counts.tasks_run and (table := {m: list(v) for m, v in sorted(mine.items())}) not in tables:
            tables.append(table)
        return tables

    # ------------------------------------------------------------ streaming
    def emit(self, scores: list[Any], backend: str, where: tuple[int | None, Any] | None = None) -> None:
        """Write ``scores`` (Scores, or a computed group's Score field dicts); ``where``:
        the (row, DataFrame index label) of their input row, so content-hash ids join
        back to the user's rows — a scored group's own (it may finish long after its row
        was read), else the row being read now. A computed group's lines wait for the
        end of its block (``LocalExecutor``: one write for the block)."""
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
        self.counts.tasks_run += len(scores)
        self.counts.tasks_failed += failed
        if self.progress is not None:
            self.progress.advance(backend, len(scores), failed, degraded)

    def done(self, group: TaskGroup, scores: list[Score]) -> None:
        """A scored group: its Scores, or — for a repeat — the repeat lines, and the
        folded Scores of the tasks it completed (``unified.run.repeats``)."""
        if group.repeat is None:
            self.emit(scores, group.backend.name, group.where)
        elif folded := self.book.record(group, scores):
            self.emit(folded, group.backend.name, group.where)

    def groups(self) -> Iterator[TaskGroup]:
        """TaskGroups of the input, in order; row errors and missing fields are written
        directly (no backend call)."""
        from unified.adapters import missing_field_error
        from unified.data.io import RowError, input_index, read_samples

        o = self.opts
        self.reader = read_samples(
            self.snapshot or self.samples,
            dict(o.mapping or {}) or None,
            fmt=o.fmt,
            layout=o.layout,
            labels=o.labels,
            list_sep=o.list_sep,
        )
        for row, item in self.reader.rows():
            if o.max_samples is not None and self.counts.rows_read >= o.max_samples:
                return
            if not self.counts.rows_read & 255 and self._stop_requested():
                return  # an incomplete read: the folder keeps what it has, the run ends interrupted
            self.counts.rows_read += 1
            if isinstance(item, Sample) and (False, item.id) in self.seen:
                # the reader gives every row its own id; a second line per task is never written
                item = RowError(
                    self.reader.source,
                    self.counts.rows_read,
                    "id",
                    f"sample id '{item.id}' repeats an earlier row's id",
                )
            # stamped on this row's Scores (a trace's row is the trace, with no DataFrame label)
            self.where = (row, None if self.reader.trace else input_index(self.samples, row))
            if isinstance(item, RowError):
                self._row_error(item)
                continue
            yield from self._sample_groups(item, self.reader.content_hash(item), missing_field_error)
        self.complete = o.max_samples is None or self.counts.rows_read < o.max_samples

    def _stop_requested(self) -> bool:
        """A Ctrl-C or SIGTERM arrived. Its cancellation reaches the run at its next await,
        and a resume that skips done samples awaits nothing for as long as they last
        (150k done tasks: 10 s); asked here every 256 rows, it stops the reading instead,
        and the run ends interrupted as a cancelled one does."""
        try:
            task = asyncio.current_task()
        except RuntimeError:  # read outside an event loop (an executor's thread)
            task = None
        if task is not None and task.cancelling() > self.cancelling_at_start and not self.interrupted:
            self.interrupted = "SIGINT"
        return self.interrupted is not None

    def _row_error(self, err: Any) -> None:
        self.counts.rows_rejected += 1
        # an error that knows its sample (a pipeline question with an id) is filed under it,
        # in the row-error namespace: it never matches a real sample's line
        sid = getattr(err, "sample_id", None) or f"row:{getattr(err, 'row', '?')}"
        n = 1
        while (True, sid if n == 1 else f"{sid}#{n}") in self.seen:  # two errors of one id: two lines
            n += 1
        sid = sid if n == 1 else f"{sid}#{n}"
        key: Key = (True, sid)
        text = str(err)
        h = text_hash(text)
        self.seen[key] = h
        done = self.scan.mask(key, h)
        todo = [p for p in self.plan.pairs if not done >> p.bit & 1]
        self.counts.tasks_skipped_done += len(self.plan.pairs) - len(todo)
        by_backend: dict[str, list[Score]] = {}
        for p in todo:
            by_backend.setdefault(p.backend.name, []).append(
                Score.failure(
                    p.metric.name,
                    p.backend.name,
                    sid,
                    text,
                    threshold=p.metric.spec.threshold,
                    row_error=True,
                    sample_hash=h,
                    config_hash=p.config_hash,
                )
            )
        for backend, scores in by_backend.items():
            self.emit(scores, backend)

    def _sample_groups(
        self, sample: Sample, h: str, missing_field_error: Callable[..., str | None]
    ) -> Iterator[TaskGroup]:
        """``h``: the sample's fingerprint (``fingerprint.sample_hash``, as the reader
        computed it); ``missing_field_error``: ``unified.adapters``' rule, imported once
        per run by the caller (an import statement per sample cost more than the rule)."""
        key: Key = (False, sample.id)
        self.seen[key] = h
        self.counts.rows_scored += 1
        done = self.scan.mask(key, h)
        if self.scan.has_other(key, h):
            self.counts.samples_changed += 1
        todo = [p for p in self.plan.pairs if not done >> p.bit & 1]
        self.counts.tasks_skipped_done += len(self.plan.pairs) - len(todo)
        if self.progress is not None and done:
            finished: dict[str, int] = {}
            for p in self.plan.pairs:
                if done >> p.bit & 1:
                    finished[p.backend.name] = finished.get(p.backend.name, 0) + 1
            for backend, n in finished.items():  # one update per backend, not per task
                self.progress.advance(backend, n)
        assert self.sample_log is not None
        restore = not todo and self.listed is not None and sample.id not in self.listed
        if todo or restore:
            self.sample_log.write(sample.model_dump_json(exclude_none=True), flush=False)
        if not todo:
            self.restored += restore
            return
        runnable: dict[tuple[str, bool], list[Pair]] = {}
        for p in todo:
            missing = missing_field_error(sample, p.metric, p.backend)
            if missing:
                self.emit(
                    [
                        Score.failure(
                            p.metric.name,
                            p.backend.name,
                            sample.id,
                            missing,
                            threshold=p.metric.spec.threshold,
                            sample_hash=h,
                            config_hash=p.config_hash,
                        )
                    ],
                    p.backend.name,
                )
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

    def _done_on(self, backend: str, done: int, repeated: bool = False) -> list[Pair]:
        """The judged pairs on ``backend`` an earlier run scored for this sample (``done``:
        the scan's mask), those scored once or, ``repeated``, those folded from repeats:
        the companions a backend that fuses calls asks as the first run did
        (``Backend.score_with``)."""
        if not done:
            return []
        return [
            p
            for p in self.plan.pairs
            if p.backend.name == backend and p.needs_judge and (p.repeats > 1) == repeated and done >> p.bit & 1
        ]

    def _repeat_groups(self, sample: Sample, h: str, pairs: list[Pair], done: int = 0) -> Iterator[TaskGroup]:
        """One group per repeat still missing (each with its seed); a task whose repeats
        are all on disk already (a run killed before its fold) is folded at once. Repeat
        r's companions (``Backend.score_with``) are the metrics a clean run scores in that
        repeat's group and an earlier run already did: their repeat r on disk, or their
        task folded (``done``)."""
        missing = {p.key: self.book.missing(sample.id, h, p) for p in pairs}
        for p in pairs:
            if not missing[p.key] and (folded := self.book.complete(sample.id, h, p)) is not None:
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

    async def stream(self) -> None:
        task = asyncio.current_task()
        self.cancelling_at_start = task.cancelling() if task is not None else 0
        # a sample's line is held until its scores are written (one write per block, not per row)
        self.sample_log = AppendLog(self.folder.samples)
        self.log = AppendLog(self.folder.scores, first=self.sample_log)
        if not self.temp_out and self.log.empty:  # a fresh file: scores.parquet is built as it is written
            self.log.tap = StreamCopy()
        if self.book.pairs:
            self.book.open()
        rows = count_rows(self.snapshot or self.samples)
        if rows is not None and self.opts.max_samples is not None:
            rows = min(rows, self.opts.max_samples)
        totals = {b: (rows * len(ps) if rows is not None else None) for b, ps in self.plan.by_backend().items()}
        self.total_tasks = rows * len(self.plan.pairs) if rows is not None else None
        self.progress = Progress(False if self.opts.quiet else self.opts.progress, totals)
        ticker = asyncio.create_task(self._tick())
        try:
            from unified.judge.prices import price_scope

            with price_scope(self._prices()):
                async with self._batch_scope():
                    if isinstance(self.executor, LocalExecutor):  # a computed block's lines: one write
                        await self.executor.run(self.groups(), self.done, after_block=self.log.flush)
                    else:
                        await self.executor.run(self.groups(), self.done)
        finally:
            ticker.cancel()
            self.progress.stop()
            try:  # a failing close (disk full while writing held lines) must not skip the others
                self.log.close()
            finally:
                try:
                    self.sample_log.close()
                finally:
                    self.book.close()

    def _calibrate(self) -> None:
        """``--calibration``: set ``calibrated`` on the lines it covers (and only those);
        without it, remove the calibrated values earlier runs left in the folder — a value
        mapped by a file this run did not name must not pass for a result of it."""
        if self.calibration is not None:
            self.folder.map_lines(self.calibration.apply)
            return
        from unified.analysis.calibrated import uncalibrated

        if self.folder.any_calibrated():
            self.say("note: no --calibration this time: the calibrated values of earlier runs are removed")
            self.folder.map_lines(uncalibrated)

    def _batch_scope(self) -> Any:
        """Batch mode for the tasks of this run (``--batch``), else nothing."""
        if self.batch is None:
            return contextlib.nullcontext()
        from unified.judge.batch import batch_scope

        return batch_scope(self.batch, self.out, self._batch_news, retry_errors=bool(self.opts.retry_errors))

    def _batch_news(self, line: str) -> None:
        """A batch job's counts or state: above the progress bar when one is shown."""
        if self.opts.quiet:
            return
        (self.progress.note if self.progress is not None and self.progress.mode else self.say)(line)

    def _executor(self) -> Any:
        ex = self.opts.executor
        if ex in (None, "local"):
            # --batch: every task in flight at once, so each step of every sample joins one job
            return LocalExecutor(max(self.opts.concurrency, self.batch.max_requests if self.batch else 0))
        if isinstance(ex, str):
            ex = named_executor(ex, address=self.opts.ray_address)
        if hasattr(ex, "bind"):  # an executor that scores elsewhere rebuilds the run's backends there
            ex.bind(self.backends, self.opts.concurrency)
        return ex

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            if self.progress is not None:
                self.progress.tick()

    # ------------------------------------------------------------ the end
    def finish(self) -> "Report":
        """Compact, write summary/report/manifest, say what failed; the Report."""
        from unified.report import Report

        if self.scan.all_lines or self.counts.samples_changed:
            dropped = self.folder.compact(self.seen, set(self.plan.hashes), complete=self.complete)
            self.counts.lines_dropped, self.unasked_dropped = dropped.lines, dropped.unasked
        if self.book.pairs:  # repeats of folded tasks live in their folded lines now
            self.book.compact(folded_tasks(self.folder.scores))
        manifest = self.folder.read_manifest()
        self._jury(self.opts.jury or manifest.get("jury"))
        self._calibrate()
        self._write_parquet()  # after the last change to the lines; the Report below reads it
        report = Report.from_dir(self.out)
        aggregates = self._as_asked(report.summary())
        groups, degraded = report.error_groups(), report.degraded_groups()  # from the one pass
        self.counts.score_lines = sum(a.count for a in aggregates)
        timings = self._timings(manifest)
        self._write_manifest(manifest, running=False)
        summary = build_summary(
            aggregates,
            groups,
            report.error_list(limit=50),
            self.counts,
            [asdict(s) for s in self.plan.skipped],
            self._config(),
            timings,
            self.interrupted is not None,
            degraded,
        )
        summary["unserved_metrics"] = self.plan.unserved(self.refs)
        if (n_tables := len(self._price_tables(manifest))) > 1:  # as just written to run.json
            summary["usd_price_tables"] = n_tables  # the USD figures mix them
        if spent := retried_spend(manifest.get("retried_spend")):
            summary["retried_spend"] = spent
        if callable(getattr(self.executor, "summary", None)):  # where the tasks ran (Ray: per node)
            summary["executor"] = self.executor.summary()
        if self.book.pairs:
            summary["repeats"] = retest_summary(report.iter_scores(), self.book.pairs)
        self._batch_spend(summary, aggregates)
        self.summary = summary
        if not self.temp_out:
            write_json(self.folder.summary, summary)
            if self.opts.write_report:
                report.write_html(self.folder.report)
        self._write_index(report)
        self._say_end(summary, groups, degraded)
        return report

    def _prices(self) -> Any:
        """The run's price table: ``prices`` as given (a dict), or parsed from its specs."""
        from unified.judge.prices import parse_prices

        return self.opts.prices if isinstance(self.opts.prices, dict) else parse_prices(self.opts.prices)

    def _batch_spend(self, summary: dict[str, Any], aggregates: list[Any]) -> None:
        """``summary["batches"]``: what the folder's batch jobs were billed for
        (``batches.jsonl``), and a note when the score lines count less — answers a killed
        run had read are cache hits in the lines of the run that resumed it."""
        from unified.judge.batch_ledger import BATCHES_FILE, paid_summary

        path = self.out / BATCHES_FILE
        if self.temp_out or not path.exists():
            return
        paid = summary["batches"] = paid_summary(path, self._prices())
        lines = sum((a.cost.usd or 0.0) for a in aggregates) + ((summary.get("retried_spend") or {}).get("usd") or 0.0)
        if paid["usd"] is not None and paid["usd"] > lines + 1e-9:
            self.say(
                f"note: the batch jobs of this folder ({BATCHES_FILE}) were billed ${paid['usd']:.4f}; its score "
                f"lines count ${lines:.4f}: answers an interrupted run had read are cache hits at $0 in the lines "
                "of the run that resumed it"
            )

    def _write_parquet(self) -> None:
        """``scores.parquet`` from the final lines (``unified.run.columnar``): a finished run
        into a folder of the user's only. It is a derived copy: when it cannot be written
        the run says so in one line and goes on (every reader falls back to the lines)."""
        if self.temp_out or self.interrupted:
            return
        tap = self.log.tap if self.log is not None else None
        if self.log is not None:
            self.log.tap = None  # its buffers go once the copy is written, before the report's peak
        try:  # the copy built while the lines were written, when it is proven; else from the file
            meta = (tap.finish(self.out) if tap is not None else None) or build_parquet(self.out)
        except (OSError, ValueError, TypeError) as e:  # OutputError; Arrow's errors subclass the other two
            remove_parquet(self.out)
            self.say(f"note: no {PARQUET_FILE} written ({one_line(str(e))}); readers use {SCORES_FILE}")
            return
        self.scores_print = None if meta is None else meta["scores"]  # index.json's fingerprint of the lines

    def _as_asked(self, aggregates: list[Any]) -> list[Any]:
        """Aggregates in the order the user asked: metrics as in --metrics, backends as in
        --backends (anything else the folder holds after, as first written)."""
        metrics = {r.name: i for i, r in enumerate(self.refs)}
        backends = {b.name: i for i, b in enumerate(self.backends)}
        return sorted(
            aggregates, key=lambda a: (metrics.get(a.metric, len(metrics)), backends.get(a.backend, len(backends)))
        )

    def _jury(self, method: str | None) -> None:
        """Recompute the jury lines from the members' current lines (a member rescored in
        this run must not leave a stale jury line behind)."""
        if not method:
            return
        from unified.analysis.jury import JURY, jury_scores
        from unified.report import Report

        members = (s for s in Report.from_dir(self.out).iter_scores() if s.backend != JURY)
        lines = [score_line(s) for s in jury_scores(members, method)]
        self.folder.replace_backend_lines(JURY, lines)
        self.jury_method = method

    def _config(self) -> dict[str, Any]:
        from unified.run.fingerprint import describe_judges

        ex = self.opts.executor
        return {
            "metrics": [r.name for r in self.refs],
            "backends": [b.name for b in self.backends],
            "groups_in_flight": self.executor.concurrency
            if isinstance(self.executor, LocalExecutor)
            else self.opts.concurrency,
            "batch": self.batch is not None,
            "max_samples": self.opts.max_samples,
            "executor": ex if isinstance(ex, str) or ex is None else type(ex).__name__,
            "source": str(self.samples) if isinstance(self.samples, (str, Path)) else type(self.samples).__name__,
            "judges": self.judge_desc or describe_judges(self.judges),
            **self.opts.run_config,
        }

    def _timings(self, manifest: dict[str, Any]) -> dict[str, Any]:
        seconds = time.monotonic() - self.t0
        # earlier invocations of this folder, then this one (its manifest entry is not final yet)
        total = seconds + sum(
            float(r.get("seconds") or 0) for r in manifest.get("invocations", []) if r.get("started") != self.started
        )
        calls = sum(self.progress.calls.values()) if self.progress else 0
        emb = sum(self.progress.embedding_calls.values()) if self.progress else 0
        hits = sum(self.progress.hits.values()) if self.progress else 0
        return {
            "started": self.started,
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(seconds, 3),
            "wall_seconds_total": round(total, 3),
            "samples_per_s": round(self.counts.rows_scored / seconds, 2) if seconds > 0 else None,
            "judge_calls": calls,
            "embedding_calls": emb,
            "cache_hits": hits,
        }

    @staticmethod
    def _retried_note(spent: dict[str, Any], aggregates: list[Any]) -> str:
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
            else f"; with them, the lines and the dropped attempts cost ${spent['usd'] + sum(usds):.4f}"
        )
        return (
            f"note: failed attempts that --retry-errors dropped had cost {', '.join(parts)} (summary.json "
            f"retried_spend); the table's calls, tokens and USD count only the lines that stand{both}"
        )

    def _say_end(self, summary: dict[str, Any], groups: list[dict[str, Any]], degraded: list[dict[str, Any]]) -> None:
        c = self.counts
        for note in self.reader.notes if self.reader is not None else []:
            self.say(f"warning: {note}")
        if c.samples_changed:
            self.say(
                f"note: {c.samples_changed} sample(s) changed since their scores were written "
                "(their content differs): scored again"
            )
        if c.lines_dropped:
            self.say(f"note: dropped {c.lines_dropped} stale or superseded score line(s) from {self.folder.scores}")
        if self.restored:
            self.say(
                f"note: {self.restored} scored sample(s) had no line in {self.folder.samples} (deleted or edited "
                "since): written again from the input"
            )
        for pair, n in sorted(self.unasked_dropped.items()):
            metric, _, backend = pair.partition("|")
            self.say(
                f"note: {metric} ({backend}): {n} line(s) of changed or removed samples dropped and not "
                "scored again (not asked for in this run; add it to --metrics to score them)"
            )
        if (n := summary.get("usd_price_tables") or 0) > 1:
            self.say(
                f"note: this folder's lines were priced under {n} price tables (--price or [prices] changed "
                "between its runs): a line keeps the prices it was written with, so its USD totals mix them; "
                "--fresh prices every line under one"
            )
        aggs = self._aggregates_from(summary)
        if spent := summary.get("retried_spend"):
            self.say(self._retried_note(spent, aggs))
        if self.opts.quiet:
            return
        if self.opts.show_summary:
            print_table(aggs, summary["timings"].get("wall_seconds_total"))
            self.say(self._rows_line(max((a.count for a in aggs), default=0)))
            for line in retest_lines(summary.get("repeats")):
                self.say(line)
        failed, n_degraded = summary.get("n_errors", 0), summary.get("n_degraded", 0)
        print_failures(groups, failed, self.hint(retry=True) if failed or n_degraded else None, degraded=degraded)
        if unasked := self._unasked_failures(summary):
            self.say(
                "note: failed tasks of pairs this run did not ask for: "
                + ", ".join(f"{n} of {k.replace('|', ' (', 1)})" for k, n in unasked.items())
                + "; --retry-errors scores a pair again only when --metrics and --backends name it"
            )

    def _unasked_failures(self, summary: dict[str, Any]) -> dict[str, int]:
        """Failed tasks per "metric|backend" of the folder that this run's plan does not
        hold (an earlier run's pairs; the jury follows its members)."""
        from unified.analysis.jury import JURY

        asked = set(self.plan.hashes)
        out: dict[str, int] = {}
        for a in summary.get("aggregates") or []:
            key, n = f"{a['metric']}|{a['backend']}", a.get("errors") or 0
            if n and key not in asked and a["backend"] != JURY:
                out[key] = n
        return out

    def _rows_line(self, most_per_pair: int) -> str:
        """``rows read = scored + rejected``, and what else the table counts: rows an
        interruption left unread, or earlier rows of the folder that --max-samples did not
        read this time."""
        c = self.counts
        line = f"rows read {c.rows_read} = {c.rows_scored} scored + {c.rows_rejected} rejected"
        if self.interrupted:  # a row read is not yet a row scored: its tasks may have been cut
            return (
                f"rows read {c.rows_read} = {c.rows_scored} accepted + {c.rows_rejected} rejected before the "
                f"interruption; {c.tasks_run} task(s) scored this time"
            )
        if not self.complete and most_per_pair > c.rows_read:
            line += (
                f"; the table also counts earlier rows of {self.out} (up to {most_per_pair} per "
                "metric) that --max-samples did not read this time"
            )
        return line

    @staticmethod
    def _aggregates_from(summary: dict[str, Any]) -> list[Any]:
        from unified.scores import Aggregate

        return [Aggregate.model_validate(a) for a in summary["aggregates"]]

    def hint(self, retry: bool = False) -> str:
        """The command that resumes this run: the original command line, redacted, with
        ``--out`` (and ``--retry-errors`` when asked)."""
        from unified.redact import redact_argv

        if self.opts.resume_hint and not self.opts.command:
            base = self.opts.resume_hint
        elif self.opts.command:
            argv = [a for a in redact_argv(self.opts.command[1:]) if a not in ("--fresh", "--no-resume")]
            if "--out" not in argv and "-o" not in argv:
                argv += ["--out", str(self.out)]
            base = "unified-eval " + shlex.join(argv)
        else:
            base = f"evaluate(..., out={str(self.out)!r})"
        if retry and "--retry-errors" not in base:
            base = (
                base + " --retry-errors"
                if base.startswith("unified-eval")
                else base.replace("out=", "retry_errors=True, out=")
            )
        if "***" in base:  # a credential was removed from a URL: say how to pass it instead
            base += (
                "  (credentials in a URL are not repeated here: put the full URL in "
                "UNIFIED_JUDGE_BASE_URL / UNIFIED_JUDGE2_BASE_URL and drop --base-url / "
                "--judge2-base-url)"
            )
        return base

    async def aclose(self) -> None:
        for b in self.backends:
            with contextlib.suppress(Exception):  # closing must not mask the run's own outcome
                await b.aclose()
        if self.own_judges:
            with contextlib.suppress(Exception):
                await self.judges.aclose()

    def cleanup(self) -> None:
        self.folder.unlock()
        if self.snapshot is not None:
            shutil.rmtree(self.snapshot.parent, ignore_errors=True)
        if self.temp_out:
            shutil.rmtree(self.out, ignore_errors=True)


# ---------------------------------------------------------------- entry points


@contextlib.contextmanager
def _sigterm_cancels(run: _Run) -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C, wherever it lands: while tasks are scored it cancels
    them (the run then ends cleanly); while the folder is set up it is remembered and no
    task is scored. While ``finish`` writes the folder it is remembered too: if the run
    had already ended interrupted, so it does; if every task was decided, the files end
    as a complete run's (summary, index, ``scores.parquet``) and ``RunInterrupted(complete=True)``
    says the folder is complete, not "resume". The handler before it comes back at the
    end (the CLI's own, which defers the exit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_term(signum: int, frame: Any) -> None:
        # every task of the run is decided: its files end as a complete run's (a run without
        # --out keeps nothing, so it ends interrupted as before)
        if run.finishing and not run.temp_out:
            run.late_signal = run.late_signal or "SIGTERM"
            return
        run.interrupted = "SIGTERM"
        if run.streaming and task is not None:
            loop.call_soon_threadsafe(task.cancel)

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError):  # not allowed here: leave the default
        yield
        return
    try:
        yield
    finally:
        # None: the handler before was installed from C; the default is the safe fallback
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


async def _run_once(run: _Run) -> "Report":
    """Set up, score (unless a SIGTERM came first), write the folder's summary and report."""
    run.snapshot_input()
    run.setup()
    run.prepare_folder()
    if run.unchanged:
        run.finishing = True  # the folder is complete already: a SIGTERM now interrupts nothing
        return run.finish_unchanged()
    if not run.interrupted:
        run.streaming = True
        try:
            await run.stream()
        except asyncio.CancelledError:
            run.interrupted = run.interrupted or "SIGINT"
        finally:
            run.streaming = False
    run.finishing = True
    return run.finish()


async def aevaluate(
    samples: Any,
    metrics: Any,
    backends: Sequence[Any] | str = ("native",),
    judges: Judges | None = None,
    out: str | Path | None = None,
    resume: bool = True,
    concurrency: int = 16,
    progress: bool | str = "auto",
    quiet: bool = False,
    **options: Any,
) -> "Report":
    """Run every (sample, metric, backend) task once and return the run's ``Report``.

    ``samples``: anything ``unified.data.io.read_samples`` reads (a path, DataFrame, Dataset,
    framework objects, an iterable of Sample | dict), consumed as a stream. ``metrics``:
    ``"faithfulness,precision@3"`` or a list of names / MetricRefs. ``backends``: names or
    Backend instances. ``out``: the run folder; None writes nothing (the Report lives in
    memory). Every other option: ``unified.run.options.RunOptions``.
    """
    opts = RunOptions.from_kwargs(
        backends=backends,
        judges=judges,
        out=out,
        resume=resume,
        concurrency=concurrency,
        progress=progress,
        quiet=quiet,
        **options,
    )
    refs = _as_metric_refs(metrics)
    if not refs:
        raise ValueError("no metrics given; name at least one, e.g. --metrics precision@3")
    if opts.jury is not None:
        from unified.analysis.jury import METHODS

        if opts.jury not in METHODS:
            raise ValueError(f"unknown jury method '{opts.jury}': use one of {', '.join(METHODS)}")
    run = _Run(samples, refs, opts)
    try:
        with _sigterm_cancels(run):
            report = await _run_once(run)
        stop = run.interrupted or run.late_signal
        if stop:  # late_signal alone: every task was scored, the folder finished whole
            done, total, hint = run.scan.lines + run.counts.tasks_run, run.total_tasks, run.hint()
            why = RunInterrupted(done, total, run.out, hint, stop, complete=not run.interrupted)
            by = " by SIGTERM" if stop == "SIGTERM" else ""
            of = f" of {total}" if total is not None else ""
            print(
                why if why.complete else f"interrupted{by}: {done}{of} scored; resume with: {hint}",
                file=sys.stderr,
                flush=True,
            )
            if opts.on_interrupt is not None:
                opts.on_interrupt(why)
            raise asyncio.CancelledError()
        if run.temp_out:
            from unified.report import Report

            report = Report(list(report.iter_scores()), list(report.iter_samples()))
        for hook in opts.after_run:  # e.g. MLflow logging (unified.api): once the run is complete
            await asyncio.to_thread(hook, report, run.summary, run.out)
        return report
    finally:
        try:
            await run.aclose()
        finally:  # a second cancellation inside aclose must not leave the lock or a temp folder
            run.cleanup()


def evaluate(
    samples: Any,
    metrics: Any,
    backends: Sequence[Any] | str = ("native",),
    judges: Judges | None = None,
    out: str | Path | None = None,
    resume: bool = True,
    concurrency: int = 16,
    progress: bool | str = "auto",
    quiet: bool = False,
    **options: Any,
) -> "Report":
    """Synchronous ``aevaluate`` (see there). Works inside a running event loop (Jupyter):
    the run then goes on a private loop in a worker thread while the caller waits. Ctrl-C
    or SIGTERM raise ``RunInterrupted`` (a ``KeyboardInterrupt``) after leaving the run
    folder consistent, summarised and resumable."""
    box: list[RunInterrupted] = []
    options.setdefault("on_interrupt", box.append)

    def coro() -> Any:
        return aevaluate(samples, metrics, backends, judges, out, resume, concurrency, progress, quiet, **options)

    def interrupted() -> RunInterrupted:
        if box:
            return box[0]
        where = Path(out) if out is not None else Path(".")
        return RunInterrupted(0, None, where, f"evaluate(..., out={str(where)!r})")

    if _loop_running():  # Jupyter: the message says how a notebook user resumes
        return _run_in_worker(coro, lambda: interrupted().in_notebook())
    result: list["Report"] = []

    async def main() -> None:
        # the Report leaves through ``result``, not as the main task's result: asyncio.run
        # (3.11, restoring its SIGINT handler) reprs that task, result included, and the repr
        # of a fresh run's Report counts every task (1.5 s of CPU at 200k tasks)
        result.append(await coro())

    try:  # outside the except clause above: the run's own errors must not chain to "no loop"
        asyncio.run(main())
        return result[0]
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise interrupted() from None


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_in_worker(coro: Callable[[], Any], interrupted: Callable[[], RunInterrupted]) -> Any:
    """Run ``coro()`` on a private loop in a worker thread (the caller is inside a running
    loop, e.g. Jupyter); a KeyboardInterrupt in the caller cancels the run cleanly.

    The caller waits on an Event the worker sets last, never on ``Thread.join``: a join
    interrupted by Ctrl-C can return at once the next time (CPython), and the run's folder
    would still be locked when ``RunInterrupted`` reached the user."""
    ctx = contextvars.copy_context()
    result: dict[str, Any] = {}
    ready, finished = threading.Event(), threading.Event()

    def worker() -> None:
        try:
            with asyncio.Runner() as runner:
                result["loop"] = runner.get_loop()
                ready.set()
                result["value"] = runner.run(coro(), context=ctx)
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e
        finally:
            ready.set()
            finished.set()  # after the run's own cleanup: its folder is unlocked

    threading.Thread(target=worker, name="unified-evaluate", daemon=True).start()
    try:
        finished.wait()
    except KeyboardInterrupt:
        _cancel_and_wait(result, ready, finished)
        raise interrupted() from None
    if isinstance(result.get("error"), asyncio.CancelledError):
        raise interrupted()
    if "error" in result:
        raise result["error"]
    return result["value"]


def _cancel_and_wait(result: dict[str, Any], ready: threading.Event, finished: threading.Event) -> None:
    """Cancel the worker's tasks and wait until it has finished; a second Ctrl-C must not
    abandon the run before its folder is whole."""
    while True:
        try:
            ready.wait()
            loop = result.get("loop")
            if loop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing to cancel
                    loop.call_soon_threadsafe(lambda: [task.cancel() for task in asyncio.all_tasks(loop)])
            finished.wait()
            return
        except KeyboardInterrupt:
            continue


def print_summary(aggregates: list[Any], seconds: float | None = None) -> None:
    """The final table (``runsummary.print_table``)."""
    print_table(aggregates, seconds)


from unified.report import Report  # noqa: E402  (type name for annotations; report imports no runner)
