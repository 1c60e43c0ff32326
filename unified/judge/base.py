"""The judge contract every backend codes against: chat judges, embedders, errors, and
the per-task accounting scope.

Backends never talk to an LLM or an embedding model directly: they call a ``ChatJudge``
or an ``Embedder`` and get a validated object or vectors back, or a ``JudgeError`` after
retries. Cost is attributed through ``task_scope`` (a context variable), so calls made
deep inside RAGAS or DeepEval code land on the right (backend, metric, sample) without
threading arguments through their APIs; a backend scoring several metrics in one call
bills each call to the metric whose ``metric_scope`` it was made in.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence, TypeVar

from pydantic import BaseModel

from unified.judge.prices import current_prices, usd_cost
from unified.scores import Cost

T = TypeVar("T", bound=BaseModel)
Messages = list[dict[str, str]]


# ---------------------------------------------------------------- errors (httpx-style)


class JudgeError(Exception):
    """A judge call failed after retries. The message never contains an API key."""


class JudgeHTTPError(JudgeError):
    """The server answered with an error status (after retries, for 429/5xx)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class JudgeTimeoutError(JudgeError):
    """No answer within the per-call timeout (after retries)."""


class JudgeConnectionError(JudgeError):
    """Could not reach the server (after retries)."""


class JudgeOutputError(JudgeError):
    """The model's answer was not valid JSON for the schema, even after one repair retry."""


class JudgeLengthError(JudgeOutputError):
    """The answer was cut at max_tokens (finish_reason == "length"): raise max_tokens."""


class JudgeLoopError(JudgeLengthError):
    """The answer was cut at max_tokens while repeating one block (``unified.judge.loops``):
    a higher max_tokens would not help."""


class JudgeNotConfiguredError(JudgeError):
    """A metric needs an LLM judge (or embedder) and none is configured."""


class JudgeUnavailableError(JudgeError):
    """The endpoint's circuit breaker is open: after several connection failures or
    timeouts in a row nothing more is sent to it for a while, and every call fails at once
    with this error (one line naming the endpoint and the last cause). The tasks it ends
    are failed tasks like any other: resumable with ``--retry-errors``."""

    def __init__(self, message: str, endpoint: str = "", cause: str = ""):
        super().__init__(message)
        self.endpoint = endpoint
        self.cause = cause


class JudgeCacheError(JudgeError, ValueError):
    """The judge cache file cannot be used (damaged, not a cache, not creatable). One line
    naming the path and the fix (``--no-cache`` or delete the file). Also a ``ValueError``:
    it is raised while judges are set up, where the CLI and ``evaluate`` report a
    ``ValueError`` as one line instead of a traceback."""


# ---------------------------------------------------------------- accounting


@dataclass
class CallRecord:
    """One judge or embedding call as seen by accounting."""

    kind: str  # "chat" | "embedding"
    backend: str
    metric: str
    sample_id: str
    model: str
    cached: bool
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    latency: float = 0.0
    retries: int = 0
    error: str | None = None
    batch: bool = False  # answered through a Batch API job: priced at the batch rate

    @classmethod
    def failure(
        cls, kind: str, model: str, error: str, latency: float, retries: int = 0, batch: bool = False
    ) -> "CallRecord":
        """A call that failed: no tokens, its one-line error. The task's fields stay empty
        here: ``record_call`` files the record under the task that made the call."""
        return cls(
            kind=kind,
            backend="",
            metric="",
            sample_id="",
            model=model,
            cached=False,
            latency=latency,
            retries=retries,
            error=error,
            batch=batch,
        )


@dataclass
class TaskMeter:
    """Accumulates the calls made while one (backend, metric, sample) task runs.

    ``occurrences`` implements the cache's occurrence index: the k-th identical request
    inside one meter gets its own cache entry, so a framework that sends the same prompt
    three times on purpose still gets three answers cold and zero calls warm. A
    ``metric_scope`` sub-meter has its own index, so the entries a metric gets do not
    depend on how its requests interleave with another metric's.

    ``parent``: the enclosing meter of a ``metric_scope``; every record reaches it too.
    ``prices``: the price table in force when the meter was made (``price_scope``).
    ``seed``: the seed of a test–retest repeat (``--repeats``), or None: every request of
    the task carries it and the judge cache keys on it (``repeat_seed``).
    """

    backend: str = ""
    metric: str = ""
    sample_id: str = ""
    records: list[CallRecord] = field(default_factory=list)
    occurrences: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    parent: "TaskMeter | None" = None
    seed: int | None = None
    prices: Mapping[str, tuple[float, float]] | None = field(default_factory=current_prices)

    def next_occurrence(self, request_hash: str) -> int:
        n = self.occurrences.get(request_hash, 0)
        self.occurrences[request_hash] = n + 1
        return n

    def cost(self) -> Cost:
        """Calls, cache hits, tokens and retries of the records, and their money cost
        (``usd``, see ``unified.judge.prices``; None without a price for every model)."""
        c = Cost(seconds=time.perf_counter() - self.started)
        for r in self.records:
            if r.kind == "embedding":
                c.embedding_calls += 0 if r.cached else 1
            else:
                c.calls += 0 if r.cached else 1
            c.cache_hits += 1 if r.cached else 0
            c.input_tokens += r.input_tokens
            c.output_tokens += r.output_tokens
            c.tokens_estimated = c.tokens_estimated or r.tokens_estimated
            c.retries += r.retries
        c.usd = usd_cost(self.records, self.prices)
        return c


_current: contextvars.ContextVar[TaskMeter | None] = contextvars.ContextVar("unified_task", default=None)
#: the judge-cache key of the call being computed (``CachedChatJudge`` sets it): a Batch API
#: request's ``custom_id`` is derived from it (``unified.judge.batch``)
request_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("unified_request_key", default=None)
_listeners: list[Any] = []


def current_meter() -> TaskMeter:
    """The meter of the running task, or a throwaway one outside any task."""
    m = _current.get()
    return m if m is not None else TaskMeter()


def repeat_seed() -> int | None:
    """The seed of the running repeat (``task_scope(seed=...)``), or None outside one:
    chat judges send it as the request's ``seed`` and the cache puts it in the key, so
    repeat r of a task is its own answer, cached on its own."""
    m = _current.get()
    return m.seed if m is not None else None


@contextlib.contextmanager
def task_scope(backend: str, metric: str, sample_id: str, seed: int | None = None) -> Iterator[TaskMeter]:
    """Attribute every judge call made inside (including in tasks it spawns) to one task
    (``seed``: the repeat's seed, see ``repeat_seed``; a backend's own nested task_scope
    keeps the seed of the repeat it runs in)."""
    outer = _current.get()
    if seed is None and outer is not None:
        seed = outer.seed
    meter = TaskMeter(backend=backend, metric=metric, sample_id=sample_id, seed=seed)
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


@contextlib.contextmanager
def metric_scope(metric: str) -> Iterator[TaskMeter]:
    """Bill the calls made inside to ``metric``, within the enclosing ``task_scope``.

    For backends that score several metrics in one call: wrap each metric's own work in
    ``metric_scope(name)``; the yielded sub-meter's ``.cost()`` is that metric's cost,
    and every record still reaches the enclosing task meter (so its ``.cost()`` stays
    the total). A step shared by several metrics is billed to the scope it runs in —
    by convention the first metric that asked for it. Outside any task the sub-meter
    simply has no parent.
    """
    outer = _current.get()
    meter = TaskMeter(
        backend=outer.backend if outer else "",
        metric=metric,
        sample_id=outer.sample_id if outer else "",
        parent=outer,
        prices=outer.prices if outer else current_prices(),
        seed=outer.seed if outer else None,
    )
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


def record_call(rec: CallRecord) -> None:
    """Called by judge clients after every call (cached or not): the record goes to the
    innermost meter (which names its metric) and to every meter enclosing it."""
    m = _current.get()
    if m is not None:
        rec.backend = rec.backend or m.backend
        rec.metric = rec.metric or m.metric
        rec.sample_id = rec.sample_id or m.sample_id
    while m is not None:
        m.records.append(rec)
        m = m.parent
    for fn in list(_listeners):
        fn(rec)


def add_listener(fn: Any) -> None:
    """Register ``fn(CallRecord)`` (progress bars, run-wide accounting)."""
    _listeners.append(fn)


def remove_listener(fn: Any) -> None:
    with contextlib.suppress(ValueError):
        _listeners.remove(fn)


# ---------------------------------------------------------------- interfaces


class ChatJudge(ABC):
    """An LLM that answers a chat request with a validated pydantic object."""

    model: str = ""

    @abstractmethod
    async def ask(self, messages: Messages, schema: type[T], **params: Any) -> T:
        """Return ``schema``-validated output, or raise a ``JudgeError`` after retries
        (``JudgeOutputError`` after one repair retry on invalid JSON)."""

    async def ask_text(self, messages: Messages, **params: Any) -> str:
        """Free-text answer (for frameworks that parse JSON themselves)."""
        raise NotImplementedError

    def sampling_params(self) -> dict[str, Any]:
        """What besides model, messages and schema decides the answer (for cache keys)."""
        return {}

    def describe(self) -> dict[str, Any]:
        """What decides this judge's answers, secret-free, for run fingerprints and cache
        keys: the model, the sampling parameters and (HTTP judges) the endpoint and the
        structured-output mode. Never a key or a URL's credentials."""
        return {"kind": type(self).__name__, "model": self.model, "sampling": self.sampling_params()}

    def where(self) -> str:
        """Where this judge's calls go, for people (the run's header, the dry run): an HTTP
        judge says ``MODEL at URL`` (redacted); this default names the model and the class."""
        return f"{self.model} ({type(self).__name__})"

    async def aclose(self) -> None:
        return None


class Embedder(ABC):
    """Texts -> vectors (list of float lists, one per text, in order)."""

    model: str = ""

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``; raise a ``JudgeError`` after retries."""

    def describe(self) -> dict[str, Any]:
        """What decides the vectors, secret-free (kind and model; HTTP embedders add their
        endpoint; see ``ChatJudge.describe``)."""
        return {"kind": type(self).__name__, "model": self.model}

    def where(self) -> str:
        """Where the texts go, for people (``ChatJudge.where``)."""
        return f"{self.model} ({type(self).__name__})"

    async def aclose(self) -> None:
        return None


@dataclass
class Judges:
    """What a backend gets: judge A, optional judge B on a second model, an embedder.

    ``single_judge``: native metrics judge each item once (half the calls).
    """

    chat: ChatJudge | None = None
    chat2: ChatJudge | None = None
    embedder: Embedder | None = None
    single_judge: bool = False

    def require_chat(self) -> ChatJudge:
        if self.chat is None:
            raise JudgeNotConfiguredError(
                "this metric needs an LLM judge: pass --base-url/--model or set "
                "UNIFIED_JUDGE_BASE_URL and UNIFIED_JUDGE_MODEL"
            )
        return self.chat

    def require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise JudgeNotConfiguredError(
                "this metric needs embeddings: pass --embedding local (extra `local`) or an "
                "OpenAI-compatible embeddings URL"
            )
        return self.embedder

    def describe(self) -> dict[str, Any]:
        """Secret-free description of everything here that decides an answer (for run
        fingerprints): each judge's ``describe()``, ``single_judge``, the embedder's."""
        return {
            "judge": self.chat.describe() if self.chat is not None else None,
            "judge2": self.chat2.describe() if self.chat2 is not None else None,
            "single_judge": self.single_judge,
            "embedder": self.embedder.describe() if self.embedder is not None else None,
        }

    def where(self, chat: bool = True, embedder: bool = True) -> list[str]:
        """One line per judge a run uses (``chat``: judges A and B, ``embedder``), saying
        where its calls go: ``judge: gpt-4o-mini at https://api.openai.com/v1 (OpenAI's API:
        no base URL was given)``. URLs are redacted."""
        pairs: list[tuple[str, ChatJudge | Embedder | None]] = [
            ("judge", self.chat if chat else None),
            ("judge 2", self.chat2 if chat else None),
            ("embeddings", self.embedder if embedder else None),
        ]
        return [f"{label}: {j.where()}" for label, j in pairs if j is not None]

    async def aclose(self) -> None:
        for j in (self.chat, self.chat2, self.embedder):
            if j is not None:
                await j.aclose()
