"""Retries, rate limits, the circuit breaker and error translation for HTTP judges — one
policy for chat and embeddings, so every backend sees identical behaviour.

Backoff before retry ``k`` (0-based) is ``min(cap, base * 2**k) * U(0.5, 1)`` (exponential
with jitter, so concurrent callers hit by the same 429 spread out); a ``Retry-After`` (or
``retry-after-ms``) header from the server replaces it. Retried: 429, 408, 409, 5xx,
connection errors, timeouts. Any other status fails at once.

Defaults (``JudgeConfig``): ``timeout`` 60 s per attempt (the wait for a concurrency slot
is not part of it), ``max_retries`` 4, ``backoff_base`` 0.5 s (waits of about 0.5, 1, 2,
4 s), and a circuit breaker per endpoint (``unified.judge.breaker``) that stops sending
after 5 connection failures or timeouts in a row, so a dead judge costs seconds and a
hanging one about one ``timeout``, not ``(max_retries + 1) · timeout`` per call.

Errors raised from here are ``JudgeError`` subclasses with a one-line message that is
scrubbed of the API key and of URL credentials *before* it is cut to length.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import random
import socket
import time
import weakref
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence, TypeVar

import openai

from unified.judge.base import JudgeConnectionError, JudgeError, JudgeHTTPError, JudgeTimeoutError
from unified.judge.breaker import CircuitBreaker
from unified.redact import one_line

log = logging.getLogger("unified.judge")
R = TypeVar("R")

_RETRY_STATUS = {408, 409, 429}
_MAX_RETRY_AFTER = 60.0
MESSAGE_LIMIT = 300  # characters of an error message, counted after scrubbing
_TIMEOUTS = (TimeoutError, asyncio.TimeoutError, openai.APITimeoutError)
_HANDLED = (
    *_TIMEOUTS,
    openai.APIStatusError,
    openai.APIConnectionError,
    openai.APIResponseValidationError,
    ValueError,
    KeyError,
)


class MalformedBody(ValueError):
    """An HTTP 200 whose body is not the answer asked for (a proxy's login page, a text
    error page): the message says what came back. Retried like any malformed body."""


def expect_body(resp: R, expected: type, what: str) -> R:
    """``resp`` when it is an ``expected`` (the SDK parsed a JSON answer), else raise the
    ``MalformedBody`` saying what came back instead (``what`` names what was asked for).
    The SDK hands back the body as a plain string when the server did not say
    ``application/json``: a proxy's login page arrives here as HTML text."""
    if isinstance(resp, expected):
        return resp
    text = resp if isinstance(resp, str) else None
    hint = ""
    if text is None:
        got = f"a {type(resp).__name__}"
    elif not text.strip():
        got = "an empty body"
    elif "<html" in text[:2000].lower() or text.lstrip()[:14].lower().startswith("<!doctype html"):
        got, hint = "HTML", " (a proxy's login or error page?)"
    else:
        got = f"text {one_line(text, 60)!r}"
    raise MalformedBody(f"malformed response body: {got}, not {what}{hint}")


@dataclass
class RetryPolicy:
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 20.0
    timeout: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), _MAX_RETRY_AFTER)
        return min(self.backoff_cap, self.backoff_base * 2**attempt) * random.uniform(0.5, 1.0)


class RateLimiter:
    """At most ``per_minute`` request starts per minute, evenly spaced (a leaky bucket).

    Spacing instead of bursts keeps a shared quota from being spent in the first second.
    """

    def __init__(self, per_minute: float):
        self.interval = 60.0 / per_minute
        self._next = 0.0
        self._locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:
            now = time.monotonic()
            wait = max(0.0, self._next - now)
            self._next = max(now, self._next) + self.interval
        if wait:
            await asyncio.sleep(wait)


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = getattr(exc.response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) * scale
            except ValueError:
                return None  # an HTTP date: fall back to our own backoff
    return None


def _status_detail(exc: openai.APIStatusError) -> str:
    """The server's own error text, whole: the caller scrubs, then cuts. Servers' shapes:
    ``{"error": {"message"}}`` (OpenAI, Azure, LiteLLM, Ollama), ``{"message"}`` at the top
    (vLLM), ``{"error": "text"}`` (vLLM's 401), and a list of those (Gemini's
    OpenAI-compatible endpoint: ``[{"error": {...}}]``)."""
    body = getattr(exc, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]
    if isinstance(body, dict):
        err = body.get("error", body)
        return str(err.get("message", "")) if isinstance(err, dict) else str(err)
    return str(body) if body else ""


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in out and len(out) < 8:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def connection_cause(exc: BaseException, secrets: Sequence[str | None] = ()) -> str:
    """Why a connection failed, as the end of "judge at URL ...": "refused the
    connection", "could not be resolved" or "could not be reached (detail)"."""
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED:
            return "refused the connection"
        if isinstance(e, socket.gaierror):
            return "could not be resolved (no such host)"
    text = " ".join(str(e) for e in chain)
    if "Connection refused" in text:
        return "refused the connection"
    root = chain[-1]
    return one_line(f"could not be reached ({type(root).__name__}: {root})", 160, secrets)


@dataclass
class _Outcome:
    """One failed attempt, translated: the error to raise, whether to retry, whether the
    server answered at all (for the breaker), and its cause when it did not."""

    error: JudgeError
    retryable: bool
    reached: bool
    cause: str = ""
    retry_after: float | None = None


def _classify(
    exc: BaseException, policy: RetryPolicy, what: str, secrets: Sequence[str | None], key_env: str | None
) -> _Outcome:
    def line(msg: str) -> str:
        return one_line(msg, MESSAGE_LIMIT, secrets)

    if isinstance(exc, _TIMEOUTS):
        return _Outcome(
            JudgeTimeoutError(line(f"{what}: timed out after {policy.timeout:g}s")),
            True,
            False,
            f"did not answer within {policy.timeout:g}s",
        )
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        msg = f"{what}: HTTP {status}"
        hint = f" — check the API key in ${key_env or 'the key environment variable'}" if status in (401, 403) else ""
        detail = _status_detail(exc)
        if detail:  # the server's words get what room the hint leaves (Azure's 401 text is long)
            msg += f" ({one_line(detail, max(MESSAGE_LIMIT - len(msg) - len(hint) - 3, 40), secrets)})"
        msg += hint
        return _Outcome(
            JudgeHTTPError(line(msg), status=status),
            status in _RETRY_STATUS or status >= 500,
            True,
            retry_after=_retry_after(exc),
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = connection_cause(exc, secrets)
        return _Outcome(JudgeConnectionError(line(f"{what}: connection failed ({cause})")), True, False, cause)
    if isinstance(exc, MalformedBody):
        return _Outcome(JudgeHTTPError(line(f"{what}: {exc}"), 200), True, True)
    if isinstance(exc, openai.APIResponseValidationError):
        return _Outcome(JudgeHTTPError(line(f"{what}: malformed response body ({exc})"), 200), True, True)
    # a 200 whose body is not the expected JSON (ValueError, KeyError)
    return _Outcome(JudgeHTTPError(line(f"{what}: malformed response body ({type(exc).__name__})"), 200), True, True)


class Attempts:
    """Counts retries of one logical call (reported in its CallRecord)."""

    def __init__(self) -> None:
        self.retries = 0


async def call_with_retries(
    fn: Callable[[], Awaitable[R]],
    policy: RetryPolicy,
    what: str,
    secrets: Sequence[str | None] | str | None,
    attempts: Attempts,
    on_status: Callable[[openai.APIStatusError], bool] | None = None,
    key_env: str | None = None,
    breaker: CircuitBreaker | None = None,
) -> R:
    """Run ``fn`` (one HTTP request) with retries; raise a scrubbed ``JudgeError`` at the end.

    ``what`` names the call in messages ("chat model=gpt-4o-mini at http://...", already
    redacted), ``secrets`` are exact strings to scrub (the API key, URL credentials),
    ``on_status`` may return True to retry at once without spending a retry (used by
    the structured-output auto-detection), and ``breaker`` (the endpoint's circuit
    breaker) hears every attempt's outcome and ends the call at once when it opens.
    """
    secret_list = (secrets,) if secrets is None or isinstance(secrets, str) else tuple(secrets)

    def loop() -> Awaitable[R]:
        return _retry_loop(fn, policy, what, secret_list, attempts, on_status, key_env, breaker)

    return await (breaker.guard(loop) if breaker is not None else loop())


async def _retry_loop(
    fn: Callable[[], Awaitable[R]],
    policy: RetryPolicy,
    what: str,
    secrets: Sequence[str | None],
    attempts: Attempts,
    on_status: Callable[[openai.APIStatusError], bool] | None,
    key_env: str | None,
    breaker: CircuitBreaker | None,
) -> R:
    last: JudgeError | None = None
    attempt = 0
    while attempt <= policy.max_retries:
        probe = breaker.admit() if breaker is not None else False
        try:
            result = await fn()  # fn applies policy.timeout to the request alone, not to queueing
        except _HANDLED as exc:
            if on_status is not None and isinstance(exc, openai.APIStatusError) and on_status(exc):
                on_status = None  # one free immediate re-send with the changed request
                attempts.retries += 1  # free of the retry budget, but a request the server saw
                if breaker is not None:
                    breaker.succeeded()
                continue
            out = _classify(exc, policy, what, secrets, key_env)
            if breaker is not None and out.reached:
                breaker.succeeded()  # the server answered: it is reachable
            elif breaker is not None:
                breaker.failed(out.cause, timed_out=isinstance(out.error, JudgeTimeoutError))
            last = out.error
            if not out.retryable:
                raise last from None
            if breaker is not None and breaker.is_open:
                raise breaker.error() from None
        except BaseException:  # cancelled, or not a request failure: free a probe's turn
            if probe and breaker is not None:
                breaker.abandoned()
            raise
        else:
            if breaker is not None:
                breaker.succeeded()
            return result
        if attempt < policy.max_retries:
            attempts.retries += 1
            delay = policy.delay(attempt, out.retry_after)
            log.info("retry %d/%d in %.2fs: %s", attempt + 1, policy.max_retries, delay, last)
            await asyncio.sleep(delay)
        attempt += 1
    assert last is not None
    if policy.max_retries:
        last.args = (f"{last.args[0]} (gave up after {policy.max_retries} retries)",)
    raise last from None


def loop_local(factory: Callable[[], R]) -> Callable[[], R]:
    """One ``factory()`` object per running event loop (semaphores and HTTP pools are
    bound to the loop that first uses them; callers such as DeepEval's sync API may run
    several loops in one process)."""
    per_loop: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def get() -> R:
        loop = asyncio.get_running_loop()
        obj = per_loop.get(loop)
        if obj is None:
            obj = per_loop[loop] = factory()
        return obj

    return get


__all__ = [
    "Attempts",
    "JudgeError",
    "MESSAGE_LIMIT",
    "RateLimiter",
    "RetryPolicy",
    "call_with_retries",
    "connection_cause",
    "loop_local",
]
