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
In a final state the output and error files are read (``GET /v1/files/{id}/content``,
``parse_results``: lines end at ``\\n`` only; a line no request can be told from, or a
custom id written twice, fails only the requests it concerns): each request gets its
answer, or a ``JudgeBatchError`` naming the job and the reason (an error line, a
malformed field; no line: the job was cancelled, expired or failed first). That error
is the task's error; the job is recorded as ended, and ``--retry-errors`` sends such
requests again in a new job.

How long. A job still unfinished ``BatchSettings.wait_bound()`` seconds after it was
created (default: its completion window, 24 h, plus an hour) is cancelled; what it
answered by then is kept, the rest fail saying so. One that has not ended
``cancel_wait`` seconds after the cancel is given up (recorded as ended, every request
failed).

Exactly once. ``batches.jsonl`` in the run folder (``unified.judge.batch_ledger``) holds
every upload and job before the next POST goes out. A request already in a recorded
job is never sent again: the job is polled (or its output read again) instead. An
upload without a job line (killed between the POSTs) is first looked up among the
endpoint's jobs (``GET /v1/batches``, by input file id). So is every retry of
``POST /v1/batches`` (a timeout or 5xx may come after the job was made): a retried
create never makes a second, twice-paid job.

Every Batch API call goes through the endpoint's retries, circuit breaker and scrubbed
errors (``HttpEndpoint.call``); no per-request timeout applies to the wait for a job
(a provider's window is 24 h): ``wait_bound()`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import re
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


#: the provider's own grace after its completion window before a job is ended as
#: ``expired``; a job still unfinished past window + grace is cancelled by the run
EXPIRY_GRACE = 3600.0
_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")


def window_seconds(window: str) -> float:
    """``"24h"`` -> 86400.0 (a number and one of s, m, h, d); a ValueError otherwise."""
    m = _WINDOW.match(str(window))
    if m is None:
        raise ValueError(f"batch completion_window must look like '24h', got {window!r}")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@dataclass
class BatchSettings:
    """How batch mode waits: ``window`` idle seconds before pending requests are sent,
    ``max_requests`` per job, polling from ``poll_first`` growing ×1.5 to ``poll_max``
    seconds, and ``say_every`` seconds between progress lines when nothing changed.

    How long a job may run: ``max_wait`` seconds from its creation (None: the
    ``completion_window`` the job is created with, plus ``EXPIRY_GRACE`` — past the window
    the provider ends it ``expired`` by itself). A job still unfinished then is cancelled
    (what it answered by then is kept); one that has not ended ``cancel_wait`` seconds
    after the cancel is given up: its requests fail and ``--retry-errors`` sends them again."""

    window: float = 1.0
    max_requests: int = MAX_REQUESTS
    poll_first: float = 1.0
    poll_max: float = 30.0
    completion_window: str = "24h"
    say_every: float = 60.0
    max_wait: float | None = None
    cancel_wait: float = 600.0

    def __post_init__(self) -> None:
        if not 1 <= self.max_requests <= MAX_REQUESTS:
            raise ValueError(f"batch max_requests must be 1 to {MAX_REQUESTS}, got {self.max_requests}")
        if self.window < 0 or self.poll_first <= 0 or self.poll_max < self.poll_first:
            raise ValueError(
                f"batch timing: window >= 0 and 0 < poll_first <= poll_max, got window={self.window}, "
                f"poll_first={self.poll_first}, poll_max={self.poll_max}"
            )
        window_seconds(self.completion_window)
        if self.max_wait is not None and not self.max_wait > 0:
            raise ValueError(f"batch max_wait must be a number of seconds > 0 (or None), got {self.max_wait}")
        if not self.cancel_wait > 0:
            raise ValueError(f"batch cancel_wait must be a number of seconds > 0, got {self.cancel_wait}")

    def wait_bound(self) -> float:
        """Seconds from a job's creation after which the run cancels it (class docstring)."""
        if self.max_wait is not None:
            return float(self.max_wait)
        return window_seconds(self.completion_window) + EXPIRY_GRACE


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
    other kind) is refused rather than silently run online at the online price, and so is
    an Azure OpenAI deployment URL (its Batch API is elsewhere, on other deployments)."""
    from unified.judge.config import azure_deployment

    for label, judge in (("judge", judges.chat), ("judge 2", judges.chat2)):
        if judge is None:
            continue
        kind = judge.describe().get("kind")
        if kind == "openai" and azure_deployment(judge.describe().get("endpoint")):
            return (
                f"--batch with an Azure OpenAI deployment URL (the {label}) is not supported: Azure's Batch API "
                "lives at the resource (/openai/files, /openai/batches) and needs a Global-Batch deployment; "
                "drop --batch"
            )
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


def _tokens(value: Any) -> int | None:
    """A token count as a server writes it: a whole number >= 0 (``12.0`` too); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _usage_problem(body: dict[str, Any]) -> str | None:
    """Why an answer's ``usage`` cannot be billed (not an object, a count that is no whole
    number), or None. No usage at all is fine: its tokens are estimated, and flagged so."""
    usage = body.get("usage")
    if usage is None:
        return None
    if not isinstance(usage, dict):
        return f"its usage is not an object ({type(usage).__name__})"
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        if value is not None and _tokens(value) is None:
            return f"usage.{name} is {repr(value)[:40]}, not a whole number of tokens"
    return None


def _line_outcome(line: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(chat completion body, None) for a usable output line, else (None, why). Total: any
    JSON object gives one of the two, never an exception (a malformed field of a finished
    job fails its request, not the poller)."""
    resp, err = line.get("response"), line.get("error")
    if resp is not None and not isinstance(resp, dict):
        return None, f"its response is not an object ({type(resp).__name__})"
    resp = resp or {}
    status, body = resp.get("status_code"), resp.get("body")
    if not err and status == 200:
        if not isinstance(body, dict):
            return None, "HTTP 200 whose body is not a JSON object"
        problem = _usage_problem(body)
        return (None, problem) if problem else (body, None)
    body_err = body.get("error") if isinstance(body, dict) else None
    detail = err or body_err or {}
    if isinstance(detail, dict):
        detail = ": ".join(str(detail[k]) for k in ("code", "message") if detail.get(k)) or "no detail"
    return None, f"HTTP {status}: {detail}" if status else str(detail)


def _json_object(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """(the object, "") for a line that is one JSON object, else (None, why not)."""
    try:
        rec = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "is not UTF-8"
    except (ValueError, RecursionError):
        return None, "is not JSON"
    if not isinstance(rec, dict):
        return None, f"is not a JSON object (a JSON {type(rec).__name__})"
    return rec, ""


@dataclass
class Results:
    """What a finished job's result files say, request by request (``parse_results``):
    ``lines`` (custom id -> its one line), ``bad`` (custom id -> why none of its lines is
    used), ``stray`` (lines no request can be told from, as "line 3 of file_9 is not JSON")."""

    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    bad: dict[str, str] = field(default_factory=dict)
    stray: list[str] = field(default_factory=list)

    def outcome(self, custom_id: str) -> tuple[dict[str, Any] | None, str | None]:
        """(answer, None), (None, why it failed), or (None, None): no line for it."""
        if custom_id in self.bad:
            return None, self.bad[custom_id]
        line = self.lines.get(custom_id)
        return _line_outcome(line) if line is not None else (None, None)


def parse_results(files: list[tuple[str, bytes]]) -> Results:
    """The lines of a job's output and error files, ``(file id, content)`` each, read the
    way JSONL is written. Rules:

    - lines end at ``\\n`` only (a ``\\r`` before it is JSON whitespace): JSON allows raw
      U+2028, U+2029 and U+0085 inside strings, and ``str.splitlines()`` cuts a line there;
    - a line that is not UTF-8, not JSON, not an object or has no string ``custom_id``
      fails no request by itself (none can be told from it) and is kept in ``stray``: the
      requests left without a line name it;
    - a ``custom_id`` on more than one line (in either file) is refused: none of its lines
      is used, never "the first one wins".
    """
    out = Results()
    places: dict[str, list[str]] = {}
    for file_id, data in files:
        for n, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue
            where = f"line {n} of {file_id}"
            rec, why = _json_object(raw)
            cid = rec.get("custom_id") if rec is not None else None
            if rec is None or not isinstance(cid, str) or not cid:
                out.stray.append(f"{where} {why or 'has no custom_id'}")
                continue
            places.setdefault(cid, []).append(where)
            out.lines.setdefault(cid, rec)
    for cid, seen in places.items():
        if len(seen) > 1:
            del out.lines[cid]
            out.bad[cid] = (
                f"its custom_id appears {len(seen)} times in the job's results ({', '.join(seen[:3])}): "
                "no answer is used"
            )
    return out


def _usage(results: Results, custom_ids: set[str], models: dict[str, str]) -> dict[str, list[int]]:
    """What a job's answered requests were billed for: {model: [prompt tokens, completion
    tokens]}, the model as the request named it (the price table's key) or, for a
    request this process did not make, as the answer names it."""
    out: dict[str, list[int]] = {}
    for cid in sorted(custom_ids):
        body, _ = results.outcome(cid)
        if body is None:
            continue
        usage = body.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        tokens = out.setdefault(models.get(cid) or str(body.get("model") or ""), [0, 0])
        tokens[0] += _tokens(usage.get("prompt_tokens")) or 0
        tokens[1] += _tokens(usage.get("completion_tokens")) or 0
    return out


_GONE = (404, 410)  # the file does not exist: deleted, or past the provider's retention


class _Closed(Exception):
    """A job that ended (or was given up) without results anyone can read: it is recorded
    as ended with every request failed (``status`` for its ``end`` record), each failing
    with ``message``; ``--retry-errors`` sends them again."""

    def __init__(self, job: Any, status: str, message: str):
        super().__init__(message)
        self.job, self.status, self.message = job, status, message


def _span(seconds: float) -> str:
    """A duration for a message: ``0.5s``, ``12s``, ``3m``, ``25h00m``."""
    return f"{seconds:.2g}s" if seconds < 10 else _elapsed(seconds)


class Batcher:
    """Pending requests → jobs → answers, for one HTTP endpoint (module docstring)."""

    def __init__(self, mode: BatchMode, http: Any):
        self.mode, self.http = mode, http
        self.settings = mode.settings
        self.endpoint = endpoint_of(http.config.base_url) or "default"
        self._futures: dict[str, asyncio.Future] = {}
        self._pending: dict[str, dict[str, Any]] = {}
        self._members: dict[str, set[str]] = {}  # batch_id -> custom ids awaiting it
        self._results: dict[str, tuple[str, Results]] = {}  # batch_id -> (status, its results)
        self._reasons: dict[str, str] = {}  # batch_id -> the job's own errors, this run's cancel
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
        status, results = self._results[batch_id]
        body, why = results.outcome(custom_id)
        if body is not None:
            fut.set_result(body)
            return
        msg = one_line(self._failure(batch_id, status, results, why), MESSAGE_LIMIT, self.http.secrets)
        fut.set_exception(JudgeBatchError(msg))

    def _failure(self, batch_id: str, status: str, results: Results, why: str | None) -> str:
        """The one line of a request the ended job did not answer usably: its line's
        reason (``why``), or — no line — how the job ended, with its own errors, this
        run's cancel and the unreadable lines of its results."""
        note = self._reasons.get(batch_id)
        if why is not None:
            return f"batch {batch_id} ({status}): request failed ({why})" + (f"; {note}" if note else "")
        missing = "completed without a line for" if status == "completed" else f"ended {status} without answering"
        parts = [note] if note else []
        if results.stray:
            parts.append(f"its results hold {len(results.stray)} unreadable line(s): {'; '.join(results.stray[:2])}")
        return f"batch {batch_id} {missing} this request" + (f" ({'; '.join(parts)})" if parts else "")

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
        """Wait for the job, read its results, answer every request waiting on it.

        A Batch API call that fails for now (a timeout, a 5xx after the retries) leaves the
        job open: a later request, or the same command again, polls it again. Results no
        one can read (``_Closed``) close it with every request failed. Anything else that
        goes wrong fails the waiting requests with one line: a poller never dies with
        requests still waiting on it (the run would hang at 0/N)."""
        try:
            try:
                job = await self._wait(batch_id)
                results = await self._read_files(job)
            except _Closed as closed:
                self._close_unanswered(batch_id, closed)
            else:
                self._close(batch_id, job, results)
        except asyncio.CancelledError:
            raise
        except JudgeError as exc:
            self._tasks.pop(batch_id, None)  # a later request may try this job again
            self._fail(sorted(self._members.pop(batch_id, set())), exc)
        except Exception as exc:  # e.g. batches.jsonl cannot be written
            self._tasks.pop(batch_id, None)
            why = JudgeBatchError(f"batch {batch_id}: its results could not be used ({type(exc).__name__}: {exc})")
            self._fail(sorted(self._members.pop(batch_id, set())), why)

    def _close(self, batch_id: str, job: Any, results: Results) -> None:
        """Record the ended job (once per folder: its failed requests and what its answers
        were billed) and answer every request waiting on it."""
        reasons = [r for r in (self._reasons.get(batch_id), _job_errors(job)) if r]
        if reasons:
            self._reasons[batch_id] = "; ".join(reasons)
        if self.mode.ledger.ended_status(batch_id) is None:
            ids = self.mode.ledger.custom_ids_of(batch_id)
            failed = sorted(c for c in ids if results.outcome(c)[0] is None)
            usage = _usage(results, ids, self._models)
            self.mode.ledger.ended(batch_id, str(job.status), _counts(job), failed, usage)
        self._results[batch_id] = (str(job.status), results)
        for cid in sorted(self._members.pop(batch_id, set())):
            self._resolve(cid, batch_id)

    def _close_unanswered(self, batch_id: str, closed: _Closed) -> None:
        """The job ended (or was given up) and no one can read its results: record it as
        ended with every request failed, so ``--retry-errors`` sends them again (paid
        again: the answers are lost) instead of polling a job no rerun can ever read."""
        ids = sorted(self.mode.ledger.custom_ids_of(batch_id))
        if self.mode.ledger.ended_status(batch_id) is None:
            self.mode.ledger.ended(batch_id, closed.status, _counts(closed.job), ids)
        self._fail(sorted(self._members.pop(batch_id, set())), JudgeBatchError(closed.message))

    async def _wait(self, batch_id: str) -> Any:
        """Poll until the job is in a final state (progress lines on change); one that
        runs past the settings' bound is cancelled, then given up (``_overdue``)."""
        interval, said, last_said = self.settings.poll_first, "", 0.0
        seen, cancelled = time.time(), None
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
            cancelled = await self._overdue(batch_id, job, seen, cancelled)
            await asyncio.sleep(interval)
            interval = min(interval * 1.5, self.settings.poll_max)

    async def _overdue(self, batch_id: str, job: Any, seen: float, cancelled: float | None) -> float | None:
        """None while the unfinished job is within ``wait_bound()`` seconds of its creation
        (of the first poll when the server gives no creation time). Past it, the job is
        cancelled — once; what it answered by then is read when it ends ``cancelled`` —
        and the cancel's time is returned. A job still not ended ``cancel_wait`` seconds
        after the cancel raises ``_Closed``: its requests fail, --retry-errors resends them."""
        now, bound = time.time(), self.settings.wait_bound()
        if cancelled is not None:
            if now - cancelled < self.settings.cancel_wait:
                return cancelled
            raise _Closed(
                job,
                f"{job.status}, given up",
                f"batch {batch_id} ({job.status}): still not ended {_span(now - cancelled)} after this run "
                f"cancelled it past max_wait ({_span(bound)}); --retry-errors sends this request again "
                "(a new, paid call)",
            )
        age = now - (float(job.created_at) if job.created_at else seen)
        if age < bound:
            return None
        note = (
            f"still {job.status} {_span(age)} after it was created, past max_wait ({_span(bound)}): "
            "cancelled by this run; --retry-errors sends what it did not answer again"
        )
        self._reasons[batch_id] = note
        self.mode.say(f"batch {batch_id}: {note}")
        try:
            await self._api("cancel job", lambda c: c.batches.cancel(batch_id))
        except JudgeError as exc:  # it may still end by itself: wait cancel_wait for it
            self.mode.say(f"batch {batch_id}: the cancel failed: {exc}")
        return now

    async def _read_files(self, job: Any) -> Results:
        """The job's output then error file, parsed (``parse_results``). A file the endpoint
        says does not exist (HTTP 404/410, after the job ended) closes the job
        (``_Closed``): no rerun could read it either."""
        files: list[tuple[str, bytes]] = []
        for file_id in (job.output_file_id, job.error_file_id):
            if not file_id:
                continue
            try:
                content = await self._api("read results", partial(_read, file_id=file_id))
            except JudgeHTTPError as exc:
                if exc.status in _GONE:
                    raise _Closed(
                        job,
                        f"{job.status}, results unreadable",
                        f"batch {job.id} ({job.status}): its result file can no longer be read (HTTP "
                        f"{exc.status} for file {file_id}); --retry-errors sends this request again (a new, paid call)",
                    ) from exc
                raise
            files.append((str(file_id), content.content))
        return parse_results(files)

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
    "Results",
    "batch_refusal",
    "batch_scope",
    "batch_settings",
    "custom_id_for",
    "current_batch_mode",
    "parse_results",
    "progress_line",
    "request_key",
    "window_seconds",
]
