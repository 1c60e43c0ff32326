"""What the RAGAS and DeepEval adapters share: a per-loop concurrency limit, one Score per
metric gathered concurrently, one-line error text, and a sync bridge for the frameworks'
rare blocking paths. The translation itself stays in each adapter."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
from abc import abstractmethod
from typing import Any, Callable, ClassVar, Coroutine, Mapping, TypeVar

from unified.adapters import Backend, missing_field_error
from unified.adapters._quiet import quiet_frameworks
from unified.judge.base import Judges
from unified.metrics import MetricRef
from unified.redact import one_line
from unified.sample import Sample
from unified.scores import Score

R = TypeVar("R")


def run_blocking(factory: Callable[[], Coroutine[Any, Any, R]]) -> R:
    """Run a coroutine to completion from sync code, even inside a running event loop.

    Inside a loop we cannot ``asyncio.run``; the coroutine then runs on a fresh loop in a
    worker thread (with the caller's context, so judge calls keep their task attribution)
    while the caller blocks.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ctx.run, lambda: asyncio.run(factory())).result()


class FrameworkBackend(Backend):
    """Base of the adapters that drive another framework's metric objects.

    Options: ``concurrency`` (int, default 16): metric evaluations in flight at once
    across all samples of this backend (the judge layer limits HTTP calls separately);
    ``run_dir``: the run's output folder, where the framework's stray files then go.
    """

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        if options.get("run_dir"):
            quiet_frameworks(options["run_dir"])
        self._concurrency = int(options.get("concurrency", 16))
        self._limits: dict[int, asyncio.Semaphore] = {}

    def _limit(self) -> asyncio.Semaphore:
        # one semaphore per event loop: a semaphore is bound to the loop that first waits
        # on it, and a backend may serve several asyncio.run() calls (CLI, benchmarks)
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._limits:
            self._limits = {loop_id: asyncio.Semaphore(self._concurrency)}
        return self._limits[loop_id]

    #: canonical metric name -> the adapter's mapping entry (its one table in code)
    table: ClassVar[Mapping[str, Any]]

    def needs_fields(self, ref: MetricRef) -> tuple[str, ...]:
        """The mapping table's ``needs`` for ``ref``: fields the framework's metric reads
        that the canonical metric does not need (empty when the entry declares none)."""
        return tuple(getattr(self.table.get(ref.canonical), "needs", ()) or ())

    def _precheck(self, sample: Sample, ref: MetricRef) -> Score | None:
        """The failure Score for a metric this adapter does not map, a field the sample
        lacks or a parameter the backend refuses (``param_error``); None when the framework
        can be called."""
        if ref.canonical not in self.table:
            return Score.failure(
                ref.name,
                self.name,
                sample.id,
                f"metric '{ref.canonical}' is not available on the {self.name} "
                f"backend; {self.name} implements: {', '.join(sorted(self.table))}",
            )
        why = missing_field_error(sample, ref, self) or self.param_error(ref)
        return Score.failure(ref.name, self.name, sample.id, why) if why else None

    def _to_score(
        self,
        sample: Sample,
        ref: MetricRef,
        cls_name: str,
        raw: Any,
        unusable: str,
        *,
        raw_range: tuple[float, float],
        details: dict[str, Any],
        reason: Any = None,
        domain: tuple[float, float] | None = None,
        **kw: Any,
    ) -> Score:
        """The framework's raw number as a Score (0–10 via ``Score.from_raw``). A raw that
        is no finite number becomes a failure saying what the framework returned
        (``unusable``). So does one outside the framework's own range (RAGAS's ContextRecall
        computes 2.0 when a judge answers ``attributed: 2``): clipping it to 10 would be a
        confident score built on an answer the metric never allows; the raw value is kept
        in ``details['raw_out_of_range']``. ``domain``: what the metric can legitimately
        return when wider than ``raw_range`` (a cosine's [-1, 1]): a value in the domain but
        outside the range is clipped, the original kept in ``details['clipped_from']``."""
        try:  # numpy scalars count; text and booleans do not
            raw = None if isinstance(raw, (str, bool)) else float(raw)
        except (TypeError, ValueError):
            raw = None
        if raw is not None and not math.isfinite(raw):
            raw = None
        lo, hi = domain or raw_range
        if raw is not None and lo <= raw <= hi and not raw_range[0] <= raw <= raw_range[1]:
            details["clipped_from"] = raw
        elif raw is not None and not lo <= raw <= hi:
            details["raw_out_of_range"] = raw
            unusable = (
                f"returned {raw:g}, outside its own range [{lo:g}, {hi:g}] "
                "(a judge answer the metric does not allow); no score"
            )
            raw = None
        return Score.from_raw(
            ref.name,
            self.name,
            sample.id,
            raw,
            raw_range=raw_range,
            error=one_line(f"{self.name} {cls_name}: {unusable}"),
            reason=reason if isinstance(reason, str) else None,
            details=details,
            **kw,
        )

    async def score(self, sample: Sample, metrics: list[MetricRef]) -> list[Score]:
        return list(await asyncio.gather(*(self._score_one(sample, ref) for ref in metrics)))

    @abstractmethod
    async def _score_one(self, sample: Sample, ref: MetricRef) -> Score:
        """One metric on one sample; a failure is a Score with ``error``, never a raise."""
