"""What a run did to its folder: the ``RunResult`` the run layer hands to its caller.

The run layer scores into the folder and stops there; everything that needs the
``Report`` — ``summary.json``, ``report.html``, ``index.json``, the end lines on stderr —
is written by the end of the run in the report layer (``unified.report.run_end``) while
the run still holds the folder's lock. This object carries what that end needs and
nothing it can read from the folder itself.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from unified.metrics import MetricRef
from unified.run.interrupts import RunInterrupted, StopState
from unified.run.options import RunOptions
from unified.run.runplan import RunPlan
from unified.run.runsummary import RunCounts


@dataclass
class RunResult:
    """One finished (or stopped) run: its folder, counts, plan, how it ended, what it cost.

    ``temporary``: the folder is the run's own (``out=None``), removed when the run
    closes; nothing the user keeps is written there. ``unchanged``: ``index.json`` proved
    there was nothing to do; ``stored_summary`` is then the summary of the run that wrote
    it. ``notes``: the run's own end notes (rows the reader warned about, samples that
    changed, lines dropped, samples written again). ``write_index(written, stable)``
    writes ``index.json`` from the aggregates, when the run's rule allows it (a complete
    run over a file read in place, ``unified.run.runindex``)."""

    folder: Path
    options: RunOptions
    refs: list[MetricRef]
    backends: list[str]
    plan: RunPlan
    counts: RunCounts
    stop: StopState
    say: Callable[[str], None]
    temporary: bool = False
    complete: bool = False
    unchanged: bool = False
    stored_summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    price_tables: int = 0
    retried_spend: Any = None  # run.json's "retried_spend" (pair -> Cost)
    executor_summary: dict[str, Any] | None = None
    repeats: dict[str, Any] = field(default_factory=dict)  # pair key -> Pair, of --repeats pairs
    prices: Any = None
    total_tasks: int | None = None
    tasks_before: int = 0  # lines of this run's tasks already on disk when it began
    write_index: Callable[[list[Any], list[Any]], None] = lambda written, stable: None
    summary: dict[str, Any] = field(default_factory=dict)  # summary.json as the end wrote it
    source_file: str | None = None  # the input file as the user named it (None: not a file)

    @property
    def interrupted(self) -> str | None:
        """The signal that cut the scoring, if one did."""
        return self.stop.interrupted

    def hint(self, retry: bool = False) -> str:
        """The command that resumes this run (``resume_hint``)."""
        return resume_hint(self.options, self.folder, retry)

    def interruption(self) -> RunInterrupted | None:
        """What a caller is told when the run ends under a signal; None when it did not."""
        stop = self.stop.stopped
        if stop is None:
            return None
        done = self.tasks_before + self.counts.tasks_run
        return RunInterrupted(
            done, self.total_tasks, self.folder, self.hint(), stop, complete=not self.stop.interrupted
        )


def resume_hint(opts: RunOptions, out: Path, retry: bool = False) -> str:
    """The command that resumes a run: the original command line, redacted, with ``--out``
    (and ``--retry-errors`` when asked); for a Python caller, the ``evaluate`` call."""
    from unified.redact import redact_argv

    if opts.resume_hint and not opts.command:
        base = opts.resume_hint
    elif opts.command:
        argv = [a for a in redact_argv(opts.command[1:]) if a not in ("--fresh", "--no-resume")]
        if "--out" not in argv and "-o" not in argv:
            argv += ["--out", str(out)]
        base = "unified-eval " + shlex.join(argv)
    else:
        base = f"evaluate(..., out={str(out)!r})"
    if retry and "--retry-errors" not in base:
        base = (
            base + " --retry-errors"
            if base.startswith("unified-eval")
            else base.replace("out=", "retry_errors=True, out=")
        )
    if "***" in base:  # a credential was removed from a URL: say how to pass it instead
        base += (
            "  (credentials in a URL are not repeated here: put the full URL in "
            "UNIFIED_JUDGE_BASE_URL / UNIFIED_JUDGE2_BASE_URL and drop --base-url / "
            "--judge2-base-url)"
        )
    return base
