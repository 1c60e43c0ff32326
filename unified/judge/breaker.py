"""A circuit breaker per judge endpoint: a dead or hanging judge is found in seconds.

States and rules (``n`` = ``failures_to_open``, default 5; ``cooldown`` default 30 s):

- **closed**: requests go out. Each *attempt* (not each logical call) that ends in a
  connection failure or a timeout adds one to a count of failures in a row; any answer
  from the server — a success, and also an error status or a malformed body, which
  prove it reachable — resets the count. At ``n`` in a row the circuit **opens** —
  except that a *timeout* counts only when the server has answered nothing for a whole
  ``answer_window`` (the attempt timeout): with many calls in flight, the few slow
  requests of a busy but living judge finish one after another and would otherwise look
  like ``n`` failures in a row. A refused connection always counts.
- **open**: nothing is sent. Every call fails at once with ``JudgeUnavailableError``
  naming the endpoint and the last cause: new calls, calls waiting for a concurrency
  slot or a rate-limit turn, calls sleeping before a retry and requests still on the
  wire (they are abandoned: the server has not answered its last ``n`` attempts).
- **half-open**: ``cooldown`` seconds after opening, the next attempt is a probe (one at
  a time; every other call still fails at once). An answer closes the circuit, a
  connection failure or timeout opens it again for another ``cooldown``.

Time to find a judge that accepts connections and never answers, with ``c`` calls in
flight (``concurrency``) and a per-attempt ``timeout``::

    t ≈ ceil(n / c) · timeout          (default 8 in flight, 60 s: one wave, about 60 s)

A refused connection is found within the first ``n`` attempts, in well under a second.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import weakref
from typing import Any, Awaitable, Callable, TypeVar

from unified.judge.base import JudgeUnavailableError

R = TypeVar("R")

FAILURES_TO_OPEN = 5
COOLDOWN_SECONDS = 30.0


class CircuitBreaker:
    """One endpoint's breaker; safe to share across event loops and threads.

    ``endpoint`` is the secret-free label used in messages, e.g.
    ``"judge at http://127.0.0.1:9/v1 (model m)"``.
    """

    def __init__(
        self,
        endpoint: str,
        failures_to_open: int = FAILURES_TO_OPEN,
        cooldown: float = COOLDOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        answer_window: float = 0.0,
    ):
        self.endpoint = endpoint
        self.answer_window = float(answer_window)
        self._last_answer: float | None = None
        self.failures_to_open = max(1, int(failures_to_open))
        self.cooldown = float(cooldown)
        self._clock = clock
        self._lock = threading.Lock()
        self.state = "closed"
        self.failures = 0  # connection failures / timeouts in a row
        self.cause = ""
        self._opened_at = 0.0
        self._probing = False
        # per event loop: the tasks inside ``guard`` now, cancelled when the circuit opens
        self._guarded: weakref.WeakKeyDictionary[Any, set[asyncio.Task[Any]]] = weakref.WeakKeyDictionary()
        self._ended: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()  # ...by this breaker

    # ------------------------------------------------------------ state
    @property
    def is_open(self) -> bool:
        """True while calls are refused (open, or half-open with its probe out)."""
        return self.state != "closed"

    def error(self) -> JudgeUnavailableError:
        return JudgeUnavailableError(
            f"{self.endpoint} {self.cause} ({self.failures_to_open} attempts in a row; no more "
            "requests sent) — resumable with --retry-errors",
            endpoint=self.endpoint,
            cause=self.cause,
        )

    def _rejecting(self) -> bool:
        """Would an attempt now be refused? (open within the cooldown, or a probe is out)"""
        if self.state == "closed":
            return False
        if self._probing:
            return True
        return self._clock() - self._opened_at < self.cooldown

    def admit(self) -> bool:
        """Before each attempt: raise ``JudgeUnavailableError`` unless the attempt may go
        out. After the cooldown the first caller becomes the half-open probe (True)."""
        with self._lock:
            if self.state == "closed":
                return False
            if self._rejecting():
                raise self.error()
            self.state, self._probing = "half-open", True
            return True

    def succeeded(self) -> None:
        """The server answered (any status): reset the count, close the circuit."""
        with self._lock:
            self.failures = 0
            self._last_answer = self._clock()
            self.state, self._probing = "closed", False

    def failed(self, cause: str, timed_out: bool = False) -> None:
        """An attempt ended in a connection failure or a timeout (``cause``: "refused the
        connection", "did not answer within 60s", ...)."""
        with self._lock:
            if timed_out and self.state == "closed" and self._answered_recently():
                return  # a slow request of a judge that is answering others
            self.failures += 1
            self.cause = cause
            tripped = self.state == "half-open" or (self.state == "closed" and self.failures >= self.failures_to_open)
            if not tripped:
                return
            self.state, self._probing, self._opened_at = "open", False, self._clock()
            loops = list(self._guarded)
        for loop in loops:
            _in_loop(loop, functools.partial(self._end_guarded, loop))

    def _answered_recently(self) -> bool:
        return self._last_answer is not None and self._clock() - self._last_answer < self.answer_window

    def abandoned(self) -> None:
        """A probe ended without an outcome (its caller was cancelled): let the next
        caller probe instead, without waiting another cooldown."""
        with self._lock:
            if self.state == "half-open" and self._probing:
                self.state, self._probing = "open", False

    # ------------------------------------------------------------ calls
    def _end_guarded(self, loop: Any) -> None:
        """In ``loop``: cancel every call still inside ``guard`` there. Run from the loop
        itself, so a task still registered is suspended inside its call, and the
        cancellation lands there (``guard`` turns it into ``JudgeUnavailableError``)."""
        with self._lock:
            tasks = list(self._guarded.get(loop, ()))
        for task in tasks:
            if not task.done():
                self._ended.add(task)
                task.cancel()

    async def guard(self, call: Callable[[], Awaitable[R]]) -> R:
        """Run ``call()`` (one logical call with its retries) so that it fails at once with
        ``JudgeUnavailableError`` when the circuit opens — wherever it is waiting: for a
        concurrency slot, a rate-limit turn, a retry's backoff or a server that does
        not answer.

        The call runs in the caller's own task, not a task of its own: an answer returns
        to the caller with no turn of the event loop in between, so the judge cache
        stores it before any other request can start (the kill -9 bound: at most the
        calls then on the wire are unpaid-for)."""
        if self._rejecting():
            raise self.error()
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None
        with self._lock:
            self._guarded.setdefault(loop, set()).add(task)
        try:
            return await call()
        except asyncio.CancelledError:
            if task in self._ended:  # cancelled by this breaker...
                self._ended.discard(task)
                if task.uncancel() == 0:  # ...and by nobody else (a Ctrl-C at that moment wins)
                    raise self.error() from None
            raise
        finally:
            with self._lock:
                self._guarded.get(loop, set()).discard(task)


def _in_loop(loop: Any, fn: Callable[[], None]) -> None:
    """``fn()`` soon, in ``loop`` (from any thread): never now, so the task that opened the
    circuit leaves ``guard`` with its own error before the others are cancelled."""
    try:
        loop.call_soon_threadsafe(fn)
    except RuntimeError:  # that loop is closed: nobody is waiting there any more
        pass


__all__ = ["COOLDOWN_SECONDS", "FAILURES_TO_OPEN", "CircuitBreaker"]
