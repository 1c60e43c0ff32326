"""What the parts of one run share: ``RunState``, data only.

Each part of a run does one step and keeps its own working state; this holds what more
than one of them reads or counts — the run's identity (its options, folder, start time),
what it decided before scoring (the plan, judges, backends, executor) and what it
counted since (``RunCounts``, the done-set, the keys seen). The parts, in the order a run
calls them: ``unified.run.runner`` (setup), ``prepare`` (the folder and the no-op check),
``stream`` (groups of tasks to the executor, lines to the folder; ``rowerrors``),
``finish`` (the folder made final, the ``RunResult``).
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from unified.judge.base import Judges
from unified.metrics import MetricRef
from unified.run.interrupts import StopState
from unified.run.options import RunOptions
from unified.run.repeats import RepeatBook
from unified.run.runfolder import RunFolder, ScanResult, SeenKeys
from unified.run.runplan import RunPlan
from unified.run.runsummary import RunCounts
from unified.run.source import RunSource


def _printer(quiet: bool) -> Callable[[str], None]:
    """How the run says a line: on stderr, at once; nothing when quiet."""
    return (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr, flush=True))


@dataclass
class RunState:
    """One invocation's shared state (module docstring). ``out``: the run folder — a
    temporary one of the run's own when ``opts.out`` is None (``temporary``)."""

    source: RunSource
    refs: list[MetricRef]
    opts: RunOptions
    out: Path
    temporary: bool
    say: Callable[[str], None]
    folder: RunFolder
    stop: StopState
    book: RepeatBook  # the repeats of --repeats pairs (none until the plan is made)
    t0: float = field(default_factory=time.monotonic)
    # microseconds: an invocation's identity in run.json (two runs within one second,
    # a no-op rerun, were one entry, the later overwriting the earlier)
    started: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="microseconds"))
    counts: RunCounts = field(default_factory=RunCounts)
    backends: list[Any] = field(default_factory=list)
    judges: Judges = field(default_factory=Judges)
    own_judges: bool = False
    judge_desc: dict[str, Any] = field(default_factory=dict)
    plan: RunPlan = field(default_factory=RunPlan)
    calibration: Any = None  # a loaded calibration.json (unified.analysis.calibrated)
    batch: Any = None  # BatchSettings of a --batch run
    executor: Any = None
    scan: ScanResult = field(default_factory=ScanResult)
    seen: SeenKeys = field(default_factory=SeenKeys)
    complete: bool = False  # the input was read to its end (not cut by --max-samples or a stop)
    jury_method: str | None = None  # the jury this run wrote lines for

    @classmethod
    def start(cls, samples: Any, refs: list[MetricRef], opts: RunOptions) -> "RunState":
        temporary = opts.out is None
        out = Path(opts.out) if opts.out is not None else Path(tempfile.mkdtemp(prefix="unified-run-"))
        return cls(
            source=RunSource(samples),
            refs=refs,
            opts=opts,
            out=out,
            temporary=temporary,
            say=_printer(opts.quiet),
            folder=RunFolder(out),
            stop=StopState(keeps_late=not temporary),
            book=RepeatBook(out, {}),
        )

    def prices(self) -> Any:
        """The run's price table: ``prices`` as given (a dict), or parsed from its specs."""
        from unified.judge.prices import parse_prices

        return self.opts.prices if isinstance(self.opts.prices, dict) else parse_prices(self.opts.prices)
