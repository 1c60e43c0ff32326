"""Retries, rate limits and error translation for HTTP judges — one policy for chat and
embeddings, so every backend sees identical behaviour.

Backoff before retry ``k`` (0-based) is ``min(cap, base * 2**k) * U(0.5, 1)`` (exponential
with jitter, so concurrent callers hit by the same 429 spread out); a ``Retry-After`` (or
``retry-after-ms``) header from the server replaces it. Retried: 429, 408, 409, 5xx,
connection errors, timeouts. Any other status fails at once. Errors raised from here are
``JudgeError`` subclasses whose text is scrubbed of the API key.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
import weakref
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, TypeVar

import openai

from unified.judge.base import (JudgeConnectionError, JudgeError, JudgeHTTPError,
                                JudgeTimeoutError)

log = logging.getLogger("unified.judge")
R = TypeVar("R")

_RETRY_STATUS = {408, 409, 429}
_MAX_RETRY_AFTER = 60.0
# things that look like keys even if we were not told the exact key
_KEY_PATTERN = re.compile(r"(sk-[A-Za-z0-9_\-]{6,}|Bearer\s+\S+)")


def scrub(text: str, secret: str | None) -> str:
    """Remove the API key (and anything key-shaped) from ``text``."""
    if secret:
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub("***", text)


@dataclass
class RetryPolicy:
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 20.0
    timeout: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), _MAX_RETRY_AFTER)
        return min(self.backoff_cap, self.backoff_base * 2 ** attempt) * random.uniform(0.5, 1.0)


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


def _status_message(exc: openai.APIStatusError) -> str:
    detail = ""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        detail = str(err.get("message", "")) if isinstance(err, dict) else str(err)
    elif body:
        detail = str(body)
    return detail[:200]


class Attempts:
    """Counts retries of one logical call (reported in its CallRecord)."""

    def __init__(self) -> None:
        self.retries = 0


async def call_with_retries(fn: Callable[[], Awaitable[R]], policy: RetryPolicy, what: str,
                            secret: str | None, attempts: Attempts,
                            on_status: Callable[[openai.APIStatusError], bool] | None = None,
                            key_env: str | None = None) -> R:
    """Run ``fn`` (one HTTP request) with retries; raise a scrubbed ``JudgeError`` at the end.

    ``what`` names the call in messages ("chat model=gpt-4o-mini at http://..."), and
    ``on_status`` may return True to retry at once without spending a retry (used by
    the structured-output auto-detection).
    """
    last: JudgeError | None = None
    attempt = 0
    while attempt <= policy.max_retries:
        retry_after: float | None = None
        try:
            return await fn()  # fn applies policy.timeout to the request alone, not to queueing
        except (TimeoutError, asyncio.TimeoutError, openai.APITimeoutError):
            last = JudgeTimeoutError(f"{what}: timed out after {policy.timeout:g}s")
        except openai.APIStatusError as exc:
            status = exc.status_code
            if on_status is not None and on_status(exc):
                on_status = None  # one free immediate re-send with the changed request
                continue
            msg = f"{what}: HTTP {status}"
            detail = _status_message(exc)
            if detail:
                msg += f" ({detail})"
            if status in (401, 403):
                msg += f" — check the API key in ${key_env or 'the key environment variable'}"
            last = JudgeHTTPError(scrub(msg, secret), status=status)
            if not (status in _RETRY_STATUS or status >= 500):
                raise last from None
            retry_after = _retry_after(exc)
        except openai.APIConnectionError as exc:
            last = JudgeConnectionError(scrub(f"{what}: connection failed ({exc})", secret))
        except openai.APIResponseValidationError as exc:
            last = JudgeHTTPError(scrub(f"{what}: malformed response body ({exc})", secret), 200)
        except (ValueError, KeyError) as exc:  # a 200 whose body is not the expected JSON
            last = JudgeHTTPError(scrub(f"{what}: malformed response body ({type(exc).__name__})",
                                        secret), 200)
        if attempt < policy.max_retries:
            attempts.retries += 1
            delay = policy.delay(attempt, retry_after)
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


__all__ = ["Attempts", "JudgeError", "RateLimiter", "RetryPolicy", "call_with_retries",
           "loop_local", "scrub"]
