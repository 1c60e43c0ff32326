"""Progress of a run: a rich bar per backend on a terminal or in Jupyter, one plain line
at least every ``every_s`` seconds otherwise (CI logs, pipes), nothing when quiet.

Call counts and cache hits come from the judge layer's listeners, so they include calls
made deep inside ragas/deepeval. ``rate`` is judge calls per second of wall time since the
run started.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from unified.judge.base import CallRecord, add_listener, remove_listener


def _in_jupyter() -> bool:
    try:
        from rich.console import Console

        return bool(Console().is_jupyter)
    except Exception:
        return False


class Progress:
    """``mode``: "auto" (bar on a TTY or in Jupyter, else lines), True (bar), "lines",
    False (silent)."""

    def __init__(
        self, mode: bool | str, totals: dict[str, int | None], *, stream: TextIO | None = None, every_s: float = 10.0
    ):
        self.totals = totals
        self.done = {b: 0 for b in totals}
        self.errors = {b: 0 for b in totals}
        self.calls = {b: 0 for b in totals}  # LLM judge calls sent
        self.embedding_calls = {b: 0 for b in totals}
        self.hits = {b: 0 for b in totals}
        self.started = time.monotonic()
        self._stream = stream or sys.stderr
        self._every = every_s
        self._last_line = self.started
        self._bar: Any = None
        self._ids: dict[str, Any] = {}
        if mode == "auto":
            mode = True if (self._stream.isatty() or _in_jupyter()) else "lines"
        self.mode = mode
        if mode is True:
            self._start_bar()
        add_listener(self.on_call)

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        self._bar = Bar(
            TextColumn("[bold]{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("err {task.fields[errors]}"),
            TextColumn("cached {task.fields[hits]}"),
            TextColumn("{task.fields[rate]} calls/s"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        for b, total in self.totals.items():
            self._ids[b] = self._bar.add_task(b, total=total, errors=0, hits=0, rate="0.0")
        self._bar.start()

    def on_call(self, rec: CallRecord) -> None:
        b = rec.backend
        if b in self.calls:
            if rec.cached:
                self.hits[b] += 1
            elif rec.kind == "embedding":
                self.embedding_calls[b] += 1
            else:
                self.calls[b] += 1

    def advance(self, backend: str, n: int, errors: int = 0) -> None:
        self.done[backend] = self.done.get(backend, 0) + n
        self.errors[backend] = self.errors.get(backend, 0) + errors
        now = time.monotonic()
        if self._bar is not None:
            rate = self.calls.get(backend, 0) / max(1e-9, now - self.started)
            self._bar.update(
                self._ids[backend],
                advance=n,
                errors=self.errors[backend],
                hits=self.hits.get(backend, 0),
                rate=f"{rate:.1f}",
            )
        elif self.mode == "lines" and now - self._last_line >= self._every:
            self.line()

    def tick(self) -> None:
        """Called periodically by the runner, so a run stuck on a judge still reports."""
        if self.mode == "lines" and time.monotonic() - self._last_line >= self._every:
            self.line()

    def line(self) -> None:
        self._last_line = time.monotonic()
        elapsed = self._last_line - self.started
        done, errs, calls = sum(self.done.values()), sum(self.errors.values()), sum(self.calls.values())
        known = all(t is not None for t in self.totals.values())
        total = f"/{sum(t or 0 for t in self.totals.values())}" if known else ""
        print(
            f"progress: {done}{total} tasks, {errs} failed, {calls} judge calls "
            f"({calls / max(elapsed, 1e-9):.1f}/s), {sum(self.hits.values())} cached, {elapsed:.0f}s",
            file=self._stream,
            flush=True,
        )

    def stop(self) -> None:
        remove_listener(self.on_call)
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
