"""Batch mode: judge calls through an OpenAI-compatible Batch API, at the batch price.

Inside ``batch_scope(mode)`` every uncached chat request of an HTTP judge
(``OpenAIChatJudge``) becomes one line of a batch instead of a request of its own::

    custom_id = sha256(request_key + ":" + sha256(canonical_json(body)))

``request_key`` is the judge-cache key of the call being answered (``CachedChatJudge``
sets it; without a cache: the body's hash and its occurrence in the task), so the same
command recomputes the same ids, and a repair request (same key, other body) has an
id of its own.

When the requests go out. Every task runs as an asyncio task and all of a run's tasks
are in flight at once in batch mode, so the first step of every sample asks within a
short burst. A request waits in ``pending``; once no new request has arrived for
``window`` seconds (or ``max_requests`` are pending) the pending requests are sent as
ONE job: ``POST /v1/files`` (purpose ``batch``, JSONL of ``{custom_id, method, url,
body}``), then ``POST /v1/batches``. A multi-step metric's next step starts when the
previous job's answers come back, so it forms the next job: one job per step over
all samples.

Polling. ``GET /v1/batches/{id}`` after ``poll_first`` seconds, then every
``interval · 1.5`` up to ``poll_max`` (defaults 1 s → 30 s); a line is said when the
counts or the state change (``batch b_12: 140/200 done, 2 failed, in_progress, 3m``).
In a final state the output and error files are read (``GET /v1/files/{id}/content``):
each request gets its answer, or a ``JudgeBatchError`` naming the job and the reason
(an error line; no line: the job was cancelled, expired or failed first). That error
is the task's error; ``--retry-errors`` sends such requests again in a new job.

Exactly once. ``batches.jsonl`` in the run folder (``unified.judge.batch_ledger``) holds
every upload and job before the next POST goes out. A request already in a recorded
job is never sent again: the job is polled (or its output read again) instead. An
upload without a job line (killed between the POSTs) is first looked up among the
endpoint's jobs (``GET /v1/batches``, by input file id). So is every retry of
``POST /v1/batches`` (a timeout or 5xx may come after the job was made): a retried
create never makes a second, twice-paid job.

Every Batch API call goes through the endpoint's retries, circuit breaker and scrubbed
errors (``HttpEndpoint.call``); no per-request timeout applies to the wait for a job
(a provider's window is 24 h).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from unified.judge.base import JudgeError, JudgeHTTPError, current_meter, request_key
from unified.judge.batch_ledger import BATCHES_FILE, FINAL_STATES, BatchLedger
from unified.judge.resilience import MESSAGE_LIMIT, Attempts
from unified.redact import endpoint_of, one_line

#: the chat endpoint a batch line targets (the path the Batch API expects)
CHAT_URL = "/v1/chat/completions"
#: OpenAI's limit on the requests of one job (platform.openai.com/docs/guides/batch)
MAX_REQUESTS = 50_000


class JudgeBatchError(JudgeError):
    """A request the batch job did not answer usably; ``--retry-errors`` sends it again."""


@dataclass
class BatchSettings:
    """How batch mode waits: ``window`` idle seconds before pending requests are sent,
    ``max_requests`` per job, polling from ``poll_first`` growing ×1.5 to ``poll_max``
    seconds, and ``say_every`` seconds between progress lines when nothing changed."""

    window: float = 1.0
    max_requests: int = MAX_REQUESTS
    poll_first: float = 1.0
    poll_max: float = 30.0
    completion_window: str = "24h"
    say_every: float = 60.0

    def __post_init__(self) -> None:
        if not 1 <= self.max_requests <= MAX_REQUESTS:
            raise ValueError(f"batch max_requests must be 1 to {MAX_REQUESTS}, got {self.max_requests}")
        if self.window < 0 or self.poll_first <= 0 or self.poll_max < self.poll_first:
            raise ValueError(
                f"batch timing: window >= 0 and 0 < poll_first <= poll_max, got window={self.window}, "
                f"poll_first={self.poll_first}, poll_max={self.poll_max}"
            )


@dataclass
class BatchMode:
    """The batch mode of one run: settings, the folder's ledger, where lines go, and one
    ``Batcher`` per HTTP endpoint (two judges may be two providers)."""

    settings: BatchSettings
    ledger: BatchLedger
    say: Callable[[str], None] = lambda line: None
    batchers: dict[int, "Batcher"] = field(default_factory=dict)
    #: ``--retry-errors``: jobs that had ended before this run are not read again (below)
    reask: frozenset[str] = frozenset()

    def batcher(self, http: Any) -> "Batcher":
        b = self.batchers.get(id(http))
        if b is None:
            b = self.batchers[id(http)] = Batcher(self, http)
        return b

    async def aclose(self) -> None:
        for b in self.batchers.values():
            await b.aclose()


def batch_settings(value: Any) -> BatchSettings | None:
    """``RunOptions.batch`` -> settings: False/None -> None (online), True -> defaults, a
    dict -> those fields (an unknown one is a ValueError naming the known ones)."""
    if value is None or value is False:
        return None
    if value is True:
        return BatchSettings()
    if isinstance(value, BatchSettings):
        return value
    if isinstance(value, dict):
        known = set(BatchSettings.__dataclass_fields__)
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"batch: unknown setting(s) {unknown}; known: {sorted(known)}")
        return BatchSettings(**value)
    raise ValueError(f"batch must be True, False or a dict of settings, got {type(value).__name__}")


def batch_refusal(judges: Any) -> str | None:
    """Why this bundle's chat judges cannot answer in batch jobs, or None. Only an
    OpenAI-compatible HTTP judge has a Batch API; an in-process ``.gguf`` model (or any
    other kind) is refused rather than silently run online at the online price."""
    for label, judge in (("judge", judges.chat), ("judge 2", judges.chat2)):
        if judge is None:
            continue
        kind = judge.describe().get("kind")
        if kind != "openai":
            what = "an in-process .gguf model" if kind == "gguf" else f"a {kind} judge"
            return (
                f"--batch needs an OpenAI-compatible HTTP judge with a Batch API; the {label} "
                f"({judge.model}) is {what}: drop --batch or pass --base-url"
            )
    return None


_mode: contextvars.ContextVar[BatchMode | None] = contextvars.ContextVar("unified_batch_mode", default=None)


def current_batch_mode() -> BatchMode | None:
    return _mode.get()


@contextlib.asynccontextmanager
async def batch_scope(
    settings: BatchSettings,
    folder: str | Path | None,
    say: Callable[[str], None] = lambda line: None,
    retry_errors: bool = False,
) -> AsyncIterator[BatchMode]:
    """Batch mode for every task started inside; ``folder``: the run folder whose
    ``batches.jsonl`` records the jobs (None: memory only). ``retry_errors``: a request
    whose job had ended before this run is sent again. A usable answer of such a job
    was stored in the judge cache when it was read and never gets here; one that does
    failed its task (text that is no JSON even after the repair turn, a cut-off answer),
    and replaying it would fail the task again whatever the retry."""
    ledger = BatchLedger(Path(folder) / BATCHES_FILE if folder is not None else None)
    mode = BatchMode(settings, ledger, say, reask=ledger.ended_jobs() if retry_errors else frozenset())
    if mode.ledger.skipped_lines:
        say(f"note: {mode.ledger.skipped_lines} unreadable line(s) in {BATCHES_FILE} skipped (a torn write)")
    token = _mode.set(mode)
    try:
        yield mode
    finally:
        _mode.reset(token)
        await mode.aclose()


def custom_id_for(body: dict[str, Any]) -> str:
    """The batch ``custom_id`` of a request body (module docstring): keyed by the cache key
    of the call in progress, else by the body and its occurrence in the running task."""
    body_hash = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    key = request_key.get()
    if key is None:
        key = f"{body_hash}:{current_meter().next_occurrence('batch:' + body_hash)}"
    return hashlib.sha256(f"{key}:{body_hash}".encode()).hexdigest()


def _elapsed(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s}s" if s < 60 else (f"{s // 60}m" if s < 3600 else f"{s // 3600}h{(s % 3600) // 60:02d}m")


def progress_line(batch: Any) -> str:
    """``batch b_12: 140/200 done, 2 failed, in_progress, 3m`` for a ``Batch``."""
    rc = batch.request_counts
    done, failed, total = (rc.completed, rc.failed, rc.total) if rc is not None else (0, 0, 0)
    age = _elapsed(time.time() - batch.created_at) if batch.created_at else "?"
    return f"batch {batch.id}: {done}/{total} done, {failed} failed, {batch.status}, {age}"


async def _read(client: Any, file_id: str) -> Any:
    return await client.files.content(file_id)


async def _job_of(client: Any, file_id: str) -> str | None:
    """The id of the endpoint's job made from upload ``file_id``, or None."""
    async for job in client.batches.list(limit=100):
        if job.input_file_id == file_id:
            return str(job.id)
    return None


def _job_errors(job: Any) -> str:
    """The job's own reasons for failing (``errors.data``: a job that failed validation
    answers no line and says why only here), as ``code: message; …``; "" when none."""
    data = getattr(getattr(job, "errors", None), "data", None) or []
    return "; ".join(f"{e.code}: {e.message}" if getattr(e, "code", None) else str(e.message) for e in data[:3])


def _counts(job: Any) -> dict[str, int]:
    """The job's request counts (completed, failed, total) for its end record; {} when none."""
    return job.request_counts.model_dump() if job.request_counts is not None else {}


def _line_outcome(line: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(chat completion body, None) for a good output line, else (None, why)."""
    resp = line.get("response") or {}
    err = line.get("error")
    status = resp.get("status_code")
    if not err and status == 200 and isinstance(resp.get("body"), dict):
        return resp["body"], None
    body_err = (resp.get("body") or {}).get("error") if isinstance(resp.get("body"), dict) else None
    detail = err or body_err or {}
    if isinstance(detail, dict):
        detail = ": ".join(str(detail[k]) for k in ("code", "message") if detail.get(k)) or "no detail"
    return None, f"HTTP {status}: {detail}" if status else str(detail)


def _usage(lines: dict[str, dict], custom_ids: set[str], models: dict[str, str]) -> dict[str, list[int]]:
    """What a job's answered requests were billed for: {model: [prompt tokens, completion
    tokens]}, the model as the request named it (the price table's key) or, for a
    request this process did not make, as the answer names it."""
    out: dict[str, list[int]] = {}
    for cid in sorted(custom_ids):
        body, _ = _line_outcome(lines.get(cid, {}))
        if body is None:
            continue
        usage = body.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        tokens = out.setdefault(models.get(cid) or str(body.get("model") or ""), [0, 0])
        tokens[0] += int(usage.get("prompt_tokens") or 0)
        tokens[1] += int(usage.get("completion_tokens") or 0)
    return out


_GONE = (404, 410)  # the file does not exist: deleted, or past the provider's retention


class _ResultsGone(Exception):
    """An ended job's output or error file cannot be read, and never will be."""

    def __init__(self, job: Any, cause: str):
        super().__init__(cause)
        self.job, self.cause = job, cause


class Batcher:
    """Pending requests → jobs → answers, for one HTTP endpoint (module docstring)."""

    def __init__(self, mode: BatchMode, http: Any):
        self.mode, self.http = mode, http
        self.settings = mode.settings
        self.endpoint = endpoint_of(http.config.base_url) or "default"
        self._futures: dict[str, asyncio.Future] = {}
        self._pending: dict[str, dict[str, Any]] = {}
        self._members: dict[str, set[str]] = {}  # batch_id -> custom ids awaiting it
        self._results: dict[str, tuple[str, dict[str, dict]]] = {}  # batch_id -> (status, lines)
        self._reasons: dict[str, str] = {}  # batch_id -> the job's own errors, when it has any
        self._tasks: dict[str, asyncio.Task] = {}  # pollers by batch id, adoption by file id
        self._flusher: asyncio.Task | None = None
        self._last_add = 0.0
        self.jobs_created = 0
        self._models: dict[str, str] = {}  # custom id -> the model its request asked (the price's key)

    # ------------------------------------------------------------ the caller's side
    async def submit(self, custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """The chat completion body answering ``body`` (raises ``JudgeBatchError``)."""
        fut = self._futures.get(custom_id)
        self._models.setdefault(custom_id, str(body.get("model") or ""))
        if fut is None:
            fut = self._futures[custom_id] = asyncio.get_running_loop().create_future()
            try:
                await self._place(custom_id, body)
            except asyncio.CancelledError:
                self._fail([custom_id], JudgeBatchError("cancelled before it was placed in a job"))
                raise
            except Exception as exc:  # the job lookup failed: this request (and its sharers) fail
                self._fail([custom_id], exc)
        return await asyncio.shield(fut)

    async def _place(self, custom_id: str, body: dict[str, Any]) -> None:
        """Into a recorded job (resume) or into ``pending`` for the next one."""
        found = self.mode.ledger.find(self.endpoint, custom_id)
        batch_id = found[1] if found else None
        if batch_id in self.mode.reask:
            found = batch_id = None  # --retry-errors: its answer failed a task (batch_scope)
        if found is not None and batch_id is None:
            batch_id = await self._adopt(found[0])
        if batch_id is not None:
            self._attach(custom_id, batch_id)
            return
        self._pending[custom_id] = body
        self._last_add = time.monotonic()
        if len(self._pending) >= self.settings.max_requests:
            self._spawn(f"flush-{custom_id}", self._flush())
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_when_idle())

    def _resolve(self, custom_id: str, batch_id: str) -> None:
        fut = self._futures.pop(custom_id, None)
        if fut is None or fut.done():
            return
        status, lines = self._results[batch_id]
        line = lines.get(custom_id)
        if line is None:
            missing = "completed without a line for" if status == "completed" else f"ended {status} without answering"
            reason = f" ({self._reasons[batch_id]})" if batch_id in self._reasons else ""
            msg = f"batch {batch_id} {missing} this request{reason}"
            fut.set_exception(JudgeBatchError(one_line(msg, MESSAGE_LIMIT, self.http.secrets)))
            return
        body, why = _line_outcome(line)
        if body is None:
            msg = f"batch {batch_id} ({status}): request failed ({why})"
            fut.set_exception(JudgeBatchError(one_line(msg, MESSAGE_LIMIT, self.http.secrets)))
        else:
            fut.set_result(body)

    def _fail(self, custom_ids: list[str], exc: BaseException) -> None:
        for cid in custom_ids:
            fut = self._futures.pop(cid, None)
            if fut is not None and not fut.done():
                fut.set_exception(JudgeBatchError(one_line(exc, MESSAGE_LIMIT, self.http.secrets)))

    def _attach(self, custom_id: str, batch_id: str) -> None:
        if batch_id in self._results:
            self._resolve(custom_id, batch_id)
            return
        self._members.setdefault(batch_id, set()).add(custom_id)
        if batch_id not in self._tasks:
            self._spawn(batch_id, self._poll(batch_id))

    def _spawn(self, name: str, coro: Any) -> None:
        self._tasks[name] = asyncio.create_task(coro)

    # ------------------------------------------------------------ Batch API calls
    async def _api(self, what: str, request: Callable[[Any], Any]) -> Any:
        """One Batch API call with the endpoint's retries, breaker and scrubbed errors."""

        async def once() -> Any:
            return await self.http.send(lambda: request(self.http.client()))

        return await self.http.call(once, f"batch API ({what}) at {self.http.url}", Attempts())

    async def _adopt(self, file_id: str) -> str | None:
        """The job made from an upload whose ``batch`` line is missing, or None."""

        async def look() -> str | None:
            found = await self._api("list jobs", partial(_job_of, file_id=file_id))
            if found is not None:
                ids = sorted(self.mode.ledger.custom_ids_of_file(file_id))
                self.mode.ledger.created(found, file_id, self.endpoint, len(ids))
                self.mode.say(f"batch {found}: found the job of upload {file_id} (its record was cut off); polling it")
            return found

        task = self._tasks.get(file_id)
        if task is None:
            task = self._tasks[file_id] = asyncio.create_task(look())
        return await asyncio.shield(task)

    async def _flush_when_idle(self) -> None:
        while self._pending:
            wait = self._last_add + self.settings.window - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            await self._flush()

    async def _flush(self) -> None:
        """Send up to ``max_requests`` pending requests as one job."""
        take = list(self._pending.items())[: self.settings.max_requests]
        for cid, _ in take:
            self._pending.pop(cid, None)
        if not take:
            return
        ids = [cid for cid, _ in take]
        try:
            batch_id = await self._create(take)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail(ids, exc)
            return
        for cid in ids:
            self._attach(cid, batch_id)

    async def _create(self, take: list[tuple[str, dict[str, Any]]]) -> str:
        data = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": CHAT_URL, "body": body}, separators=(",", ":"))
            + "\n"
            for cid, body in take
        ).encode("utf-8")
        ids = [cid for cid, _ in take]
        up = await self._api(
            "upload", lambda c: c.files.create(file=("batch.jsonl", data, "application/jsonl"), purpose="batch")
        )
        self.mode.ledger.uploaded(str(up.id), self.endpoint, ids)  # on disk before the job is asked for
        job_id = await self._create_job(str(up.id))
        self.mode.ledger.created(job_id, str(up.id), self.endpoint, len(ids))
        self.jobs_created += 1
        self.mode.say(f"batch {job_id}: {len(ids)} request(s) sent")
        return job_id

    async def _create_job(self, file_id: str) -> str:
        """``POST /v1/batches`` for an upload, with retries that never make a second job:
        a failed attempt (a timeout, a 5xx) may have made the job before its answer was
        lost, so every retry first looks for a job of this input file (``GET /v1/batches``)."""
        tries = 0

        async def once() -> str:
            nonlocal tries
            tries += 1
            client = self.http.client()
            if tries > 1:
                found = await self.http.send(lambda: _job_of(client, file_id))
                if found is not None:
                    return found
            job = await self.http.send(
                lambda: client.batches.create(
                    input_file_id=file_id,
                    endpoint=CHAT_URL,
                    completion_window=self.settings.completion_window,
                    metadata={"source": "unified-rag-eval"},
                )
            )
            return str(job.id)

        return await self.http.call(once, f"batch API (create job) at {self.http.url}", Attempts())

    # ------------------------------------------------------------ polling
    async def _poll(self, batch_id: str) -> None:
        try:
            job = await self._wait(batch_id)
            lines = await self._read_files(job)
        except _ResultsGone as gone:
            self._results_gone(batch_id, gone)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._tasks.pop(batch_id, None)  # a later request may try this job again
            self._fail(sorted(self._members.pop(batch_id, set())), exc)
            return
        self._results[batch_id] = (job.status, lines)
        if reason := _job_errors(job):
            self._reasons[batch_id] = reason
        if self.mode.ledger.ended_status(batch_id) is None:
            ids = self.mode.ledger.custom_ids_of(batch_id)
            failed = sorted(c for c in ids if _line_outcome(lines.get(c, {}))[1])
            usage = _usage(lines, ids, self._models)
            self.mode.ledger.ended(batch_id, job.status, _counts(job), failed, usage)
        for cid in sorted(self._members.pop(batch_id, set())):
            self._resolve(cid, batch_id)

    async def _wait(self, batch_id: str) -> Any:
        """Poll until the job is in a final state (progress lines on change)."""
        interval, said, last_said = self.settings.poll_first, "", 0.0
        while True:
            job = await self._api("poll job", lambda c: c.batches.retrieve(batch_id))
            line = progress_line(job)
            now = time.monotonic()
            core = line.rsplit(",", 1)[0]  # the age alone changing is no news
            if core != said or now - last_said >= self.settings.say_every:
                self.mode.say(line)
                said, last_said = core, now
            if job.status in FINAL_STATES:
                return job
            await asyncio.sleep(interval)
            interval = min(interval * 1.5, self.settings.poll_max)

    def _results_gone(self, batch_id: str, gone: "_ResultsGone") -> None:
        """The job ended but its result files are gone: record it as ended with every
        request failed, so ``--retry-errors`` sends them again (paid again: the answers
        are lost) instead of polling a job whose results no rerun can ever read."""
        ids = sorted(self.mode.ledger.custom_ids_of(batch_id))
        if self.mode.ledger.ended_status(batch_id) is None:
            counts = _counts(gone.job)
            self.mode.ledger.ended(batch_id, f"{gone.job.status}, results unreadable", counts, ids)
        msg = (
            f"batch {batch_id} ({gone.job.status}): its result file can no longer be read ({gone.cause}); "
            "--retry-errors sends this request again (a new, paid call)"
        )
        self._fail(sorted(self._members.pop(batch_id, set())), JudgeBatchError(msg))

    async def _read_files(self, job: Any) -> dict[str, dict]:
        """custom_id -> its line, from the output file then the error file. A file the
        endpoint says does not exist (HTTP 404/410, after the job ended) raises
        ``_ResultsGone``: no rerun could read it either."""
        lines: dict[str, dict] = {}
        for file_id in (job.output_file_id, job.error_file_id):
            if not file_id:
                continue
            try:
                content = await self._api("read results", partial(_read, file_id=file_id))
            except JudgeHTTPError as exc:
                if exc.status in _GONE:
                    raise _ResultsGone(job, f"HTTP {exc.status} for file {file_id}") from exc
                raise
            for raw in content.text.splitlines():
                if raw.strip():
                    rec = json.loads(raw)
                    lines.setdefault(str(rec.get("custom_id")), rec)
        return lines

    async def aclose(self) -> None:
        tasks = [t for t in (*self._tasks.values(), self._flusher) if t is not None and not t.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = [
    "BatchMode",
    "BatchSettings",
    "Batcher",
    "JudgeBatchError",
    "MAX_REQUESTS",
    "batch_refusal",
    "batch_scope",
    "batch_settings",
    "custom_id_for",
    "current_batch_mode",
    "progress_line",
    "request_key",
]
