"""A run's coroutine driven from synchronous code: ``unified.evaluate`` and its twins.

The rule: the caller gets the coroutine's value, or ``RunInterrupted`` after a Ctrl-C or
SIGTERM — raised only once the run's folder is whole and unlocked.

* No event loop running: ``asyncio.run``.
* A loop running in this thread (Jupyter): the run goes on a private loop in a worker
  thread while the caller waits; a KeyboardInterrupt in the caller cancels the run and
  waits for it to end, and the message says how a notebook user resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

from unified.run.interrupts import RunInterrupted

T = TypeVar("T")


def run_blocking(start: Callable[[Callable[[RunInterrupted], None]], Awaitable[T]], out: Any) -> T:
    """``start(on_interrupt)`` -> the run's coroutine, run to its end here (module
    docstring). The run calls ``on_interrupt`` with what a caller needs (done, total, the
    hint) before its cancellation propagates; ``out``: the run folder, named in the
    interruption when the run never got that far."""
    box: list[RunInterrupted] = []

    def interrupted() -> RunInterrupted:
        if box:
            return box[0]
        where = Path(out) if out is not None else Path(".")
        return RunInterrupted(0, None, where, f"evaluate(..., out={str(where)!r})")

    if _loop_running():  # Jupyter: the message says how a notebook user resumes
        return _run_in_worker(lambda: start(box.append), lambda: interrupted().in_notebook())
    result: list[T] = []

    async def main() -> None:
        # the value leaves through ``result``, not as the main task's result: asyncio.run
        # (3.11, restoring its SIGINT handler) reprs that task, result included, and the repr
        # of a fresh run's Report counts every task (1.5 s of CPU at 200k tasks)
        result.append(await start(box.append))

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
