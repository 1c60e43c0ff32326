"""How a run ends when it is told to stop: Ctrl-C and SIGTERM.

The rule: a signal never leaves a half-written folder.

* While tasks are scored, SIGTERM cancels them as Ctrl-C does; the run then ends cleanly,
  interrupted (its folder consistent, summarised, resumable).
* While the folder is set up, a SIGTERM is remembered and no task is scored.
* While the end of the run writes the folder (``StopState.finishing``), a SIGTERM is
  remembered too (``late``): a run that had scored every task ends with the files of a
  complete run, and ``RunInterrupted(complete=True)`` says the folder is complete, not
  "resume". A run into a temporary folder keeps nothing, so it ends interrupted as before.
* Reading a long stretch of done samples awaits nothing: ``StopState.stop_requested`` is
  asked every 256 rows, so a Ctrl-C stops the reading there.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator


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

    def line(self) -> str:
        """What the run prints on stderr as it ends interrupted."""
        if self.complete:
            return str(self)
        by = " by SIGTERM" if self.signal == "SIGTERM" else ""
        of = f" of {self.total}" if self.total is not None else ""
        return f"interrupted{by}: {self.done}{of} scored; resume with: {self.hint}"


@dataclass
class StopState:
    """Where a run stands with respect to a stop (module docstring): ``interrupted`` is
    the signal that cut the scoring, ``late`` one that came while a complete run wrote its
    folder; ``streaming`` and ``finishing`` say which phase a signal lands in."""

    keeps_late: bool = True  # False for a temporary folder: a late signal interrupts it
    interrupted: str | None = None
    late: str | None = None
    streaming: bool = False
    finishing: bool = False
    # the run task's cancellation count when the scoring began: a caller that caught an
    # earlier cancellation of its task (without uncancel) leaves it above 0 for good
    cancelling_at_start: int = 0

    @property
    def stopped(self) -> str | None:
        """The signal the run ends under (late alone: every task was scored)."""
        return self.interrupted or self.late

    def stop_requested(self) -> bool:
        """A Ctrl-C or SIGTERM arrived. Its cancellation reaches the run at its next await,
        and a resume that skips done samples awaits nothing for as long as they last
        (150k done tasks: 10 s); asked every 256 rows, it stops the reading instead, and
        the run ends interrupted as a cancelled one does."""
        try:
            task = asyncio.current_task()
        except RuntimeError:  # read outside an event loop (an executor's thread)
            task = None
        if task is not None and task.cancelling() > self.cancelling_at_start and not self.interrupted:
            self.interrupted = "SIGINT"
        return self.interrupted is not None


@contextlib.contextmanager
def sigterm_cancels(stop: StopState) -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C, wherever it lands (module docstring). The handler
    before it comes back at the end (the CLI's own, which defers the exit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_term(signum: int, frame: Any) -> None:
        if stop.finishing and stop.keeps_late:
            stop.late = stop.late or "SIGTERM"
            return
        stop.interrupted = "SIGTERM"
        if stop.streaming and task is not None:
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
