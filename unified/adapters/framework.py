"""The skeleton every framework backend shares: one task, from the sample to a Score.

A framework room's ``backend.py`` subclasses ``FrameworkBackend`` with its ``FACTS`` and
writes one method, ``evaluate(sample, ref, row, details) -> Outcome``: call the framework
the way its own docs do and say what it returned. Everything around that call is here,
once, for every framework:

1. the precheck: a metric the room does not serve, a field the sample lacks (the
   metric's own or the framework's, ``FrameworkMetric.needs``), a bracket parameter the
   framework does not take — each one line, no judge paid;
2. the concurrency limit and the task's accounting scope (every judge call the framework
   makes is billed to this (backend, metric, sample));
3. an exception from the framework is the task's error, one line, scrubbed;
4. the raw number becomes a Score by the 0–10 rule of ``unified.scores`` on the row's
   scale; a raw that is no finite number, or one outside the framework's own range, is
   a failure saying what the framework returned — never a clipped, confident score;
5. the pass bound is the task's one bound (``Backend.bound``): ``Score.threshold`` is
   that bound and ``passed = value ≥ bound``. A framework that decides pass/fail itself
   gets the same bound on its own scale (``framework_bound``).

It also holds what the adapters share: a per-loop concurrency limit and a sync bridge
for the frameworks' rare blocking paths.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Coroutine, Literal, Mapping, TypeVar, get_args, get_origin

from pydantic import BaseModel, create_model

from unified.adapters.base import Backend, missing_field_error, unknown_param_error
from unified.adapters.facts import BackendFacts, FrameworkMetric
from unified.adapters.quiet import quiet_frameworks
from unified.judge.base import Judges, task_scope
from unified.metrics import MetricRef
from unified.redact import one_line
from unified.sample import Sample
from unified.scores import Score, raw_bound

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


def on_loop(
    loop: asyncio.AbstractEventLoop | None,
    factory: Callable[[], Coroutine[Any, Any, R]],
    context: contextvars.Context | None = None,
) -> R:
    """Run a coroutine on ``loop`` from a framework's worker thread and block for its result.

    A framework that calls its model synchronously from a thread of its own reaches our
    judge this way: the call runs on the backend task's loop (where the judge's clients,
    limits and breaker live), in a copy of ``context`` (the task's, so the call is billed to
    its metric) or of the calling thread's. With no loop, or from that loop itself, it runs
    as ``run_blocking`` does.
    """
    if loop is None or _running_loop() is loop:
        return run_blocking(factory)
    ctx = (context or contextvars.copy_context()).copy()  # one Context per call: threads share none
    return ctx.run(asyncio.run_coroutine_threadsafe, factory(), loop).result()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


#: (answer model's class name, field) -> the values a framework's prompt allows there
Verdicts = Mapping[tuple[str, str], tuple[int, ...]]
_strict: dict[tuple[type, int], type] = {}


M = TypeVar("M", bound=BaseModel)


def strict_answer_model(model: type[M], verdicts: Verdicts) -> type[M]:
    """``model`` with each numeric verdict field of ``verdicts`` narrowed to the values the
    framework's prompt allows (``Literal[0, 1]``), nested models and lists of them too.

    A framework that reads an integer verdict as a number or a truth value (ragas counts a
    verdict of −3 as "faithful") would score an answer its metric never allows; asked with
    the strict model, the judge layer validates the answer (one repair turn, as for any
    invalid answer; nothing invalid is cached) and the task fails with what the judge said.
    The strict class subclasses ``model``, so the framework's own type checks still hold.
    A model with nothing to narrow is returned as it is."""
    key = (model, id(verdicts))
    if key not in _strict:
        fields: dict[str, Any] = {}
        for name, info in model.model_fields.items():
            narrowed = _narrow(model.__name__, name, info.annotation, verdicts)
            if narrowed is not info.annotation:
                fields[name] = (narrowed, info)
        _strict[key] = create_model(model.__name__, __base__=model, **fields) if fields else model
    return _strict[key]


def _narrow(owner: str, field: str, annotation: Any, verdicts: Verdicts) -> Any:
    """A field's type with verdicts narrowed (a nested model, a list of models)."""
    allowed = verdicts.get((owner, field))
    if allowed is not None:
        return Literal[allowed]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return strict_answer_model(annotation, verdicts)
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (Any,)
        narrowed = _narrow(owner, field, item, verdicts)
        return annotation if narrowed is item else list[narrowed]  # type: ignore[valid-type]
    return annotation


@dataclass
class Outcome:
    """What the framework returned for one task. ``raw``: its number (anything else is
    refused with ``unusable``, e.g. "returned nan"); ``reason``: its explanation, when it
    gives one as text; ``domain``: the values it can legitimately return when wider than
    the row's range (a cosine's [-1, 1]: clipped to the range, the original kept)."""

    raw: Any
    unusable: str = ""
    reason: Any = None
    domain: tuple[float, float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class FrameworkBackend(Backend):
    """Base of the backends that drive another framework's metrics over our judge.

    Options: ``concurrency`` (int, default 16): metric evaluations in flight at once
    across all samples of this backend (the judge layer limits HTTP calls separately);
    ``run_dir``: the run's output folder, where the framework's stray files then go.
    A subclass sets ``FACTS`` (its room's facts: name, table) and writes ``evaluate``.
    """

    FACTS: ClassVar[BackendFacts]
    #: canonical metric -> the room's table row (its ``FACTS.metrics``)
    table: ClassVar[Mapping[str, FrameworkMetric]]
    #: the ``details`` key under which a Score names the framework's metric
    metric_key: ClassVar[str] = "metric"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "FACTS" in cls.__dict__:  # the room's facts say what the class serves
            cls.name = cls.FACTS.name
            cls.table = cls.FACTS.table
            cls.metrics = frozenset(cls.table)

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        if options.get("run_dir"):
            quiet_frameworks(options["run_dir"])
        self._concurrency = int(options.get("concurrency", 16))
        self._limits: dict[int, asyncio.Semaphore] = {}

    # ------------------------------------------------------------ what a room writes
    @abstractmethod
    def version(self) -> str:
        """The framework's version (it decides scores: part of the fingerprint)."""

    @abstractmethod
    async def evaluate(self, sample: Sample, ref: MetricRef, row: Any, details: dict[str, Any]) -> Outcome:
        """Call the framework for one metric on one sample (inside the task's scope);
        add what a reader needs to ``details``. Raise for a failure: its text becomes the
        task's error."""

    def framework_params(self, row: Any) -> set[str] | None:
        """The bracket parameters the framework's metric takes (passed on to it), or
        None for no check. ``threshold`` is never among them: it is our bound, given to a
        framework only on its own scale (``framework_bound``)."""
        return set()

    def error_text(self, e: BaseException) -> str:
        """A framework exception as the task's error text (without the prefix)."""
        return f"{type(e).__name__}: {e}"

    # ------------------------------------------------------------ the skeleton
    def fingerprint_extra(self) -> dict[str, Any]:
        return {"framework": self.name, "version": self.version()}

    def needs_fields(self, ref: MetricRef) -> tuple[str, ...]:
        """The row's ``needs`` for ``ref``: fields the framework's metric reads that the
        canonical metric does not need (empty when the row declares none)."""
        row = self.table.get(ref.canonical)
        return tuple(row.needs) if row is not None else ()

    def param_error(self, ref: MetricRef) -> str | None:
        """A bracket parameter the framework's metric does not take (``threshold`` is
        always taken: it is the bound), one line; None when every one is known."""
        row = self.table.get(ref.canonical)
        accepted = self.framework_params(row) if row is not None else None
        return None if accepted is None else unknown_param_error(ref, accepted | {"threshold"})

    @staticmethod
    def passed_params(ref: MetricRef) -> tuple[tuple[str, Any], ...]:
        """``ref``'s bracket parameters for the framework: all but our ``threshold``."""
        return tuple((k, v) for k, v in ref.params if k != "threshold")

    def framework_bound(self, ref: MetricRef) -> float:
        """The task's bound on the framework's own scale (the 0–10 rule, inverted)."""
        row = self.table[ref.canonical]
        return raw_bound(self.bound(ref), row.raw_range, row.higher_is_better)

    def _limit(self) -> asyncio.Semaphore:
        # one semaphore per event loop: a semaphore is bound to the loop that first waits
        # on it, and a backend may serve several asyncio.run() calls (CLI, benchmarks)
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._limits:
            self._limits = {loop_id: asyncio.Semaphore(self._concurrency)}
        return self._limits[loop_id]

    def details_for(self, row: Any) -> dict[str, Any]:
        """What every Score of this backend records: the framework, its version and its
        metric's name (and the row's ``note``, when it has one)."""
        details: dict[str, Any] = {
            "framework": self.name,
            f"{self.name}_version": self.version(),
            f"{self.name}_{self.metric_key}": row.cls,
        }
        if getattr(row, "note", None):
            details["note"] = row.note
        return details

    def _precheck(self, sample: Sample, ref: MetricRef) -> Score | None:
        """The failure Score for a metric this room does not serve, a field the sample
        lacks or a parameter the framework does not take; None when it can be called."""
        if ref.canonical not in self.table:
            why: str | None = (
                f"metric '{ref.canonical}' is not available on the {self.name} "
                f"backend; {self.name} implements: {', '.join(sorted(self.table))}"
            )
        else:
            why = missing_field_error(sample, ref, self) or self.param_error(ref)
        return Score.failure(ref.name, self.name, sample.id, why, threshold=self.bound(ref)) if why else None

    async def score(self, sample: Sample, metrics: list[MetricRef]) -> list[Score]:
        return list(await asyncio.gather(*(self._score_one(sample, ref) for ref in metrics)))

    async def _score_one(self, sample: Sample, ref: MetricRef) -> Score:
        """One metric on one sample (the module docstring's steps); never raises."""
        if (failed := self._precheck(sample, ref)) is not None:
            return failed
        row = self.table[ref.canonical]
        details = self.details_for(row)
        async with self._limit():
            with task_scope(self.name, ref.name, sample.id) as meter:
                try:
                    outcome = await self.evaluate(sample, ref, row, details)
                except Exception as e:  # the framework's own message is what the user needs
                    error = one_line(f"{self.name} {row.cls}: {self.error_text(e)}")
                    return self._failure(sample, ref, row, error, details, meter.cost())
                return self._to_score(sample, ref, row, outcome, details, meter.cost())

    def _failure(
        self, sample: Sample, ref: MetricRef, row: Any, error: str, details: dict[str, Any], cost: Any
    ) -> Score:
        return Score.failure(
            ref.name,
            self.name,
            sample.id,
            error,
            details=details,
            cost=cost,
            raw_range=row.raw_range,
            higher_is_better=row.higher_is_better,
            threshold=self.bound(ref),
        )

    def _to_score(
        self, sample: Sample, ref: MetricRef, row: Any, outcome: Outcome, details: dict[str, Any], cost: Any
    ) -> Score:
        """The framework's raw number as a Score (0–10 via ``Score.from_raw`` on the row's
        scale, against the task's bound). A raw that is no finite number becomes a failure
        saying what the framework returned (``outcome.unusable``). So does one outside the
        framework's own range (RAGAS's ContextRecall computes 2.0 when a judge answers
        ``attributed: 2``): clipping it to 10 would be a confident score built on an
        answer the metric never allows; the raw value is kept in
        ``details['raw_out_of_range']``. A value inside ``outcome.domain`` but outside the
        range is clipped, the original kept in ``details['clipped_from']``."""
        details.update(outcome.extra)
        raw, unusable = _usable(outcome.raw, row.raw_range, outcome.domain, details)
        return Score.from_raw(
            ref.name,
            self.name,
            sample.id,
            raw,
            raw_range=row.raw_range,
            higher_is_better=row.higher_is_better,
            threshold=self.bound(ref),
            error=one_line(f"{self.name} {row.cls}: {unusable or outcome.unusable}"),
            reason=outcome.reason if isinstance(outcome.reason, str) else None,
            details=details,
            cost=cost,
        )


def _usable(
    raw: Any, raw_range: tuple[float, float], domain: tuple[float, float] | None, details: dict[str, Any]
) -> tuple[float | None, str | None]:
    """(the raw as a finite float in its domain, or None; why not, when out of range)."""
    try:  # numpy scalars count; text and booleans do not
        value = None if isinstance(raw, (str, bool)) else float(raw)
    except (TypeError, ValueError):
        value = None
    if value is None or not math.isfinite(value):
        return None, None
    lo, hi = domain or raw_range
    if lo <= value <= hi:
        if not raw_range[0] <= value <= raw_range[1]:
            details["clipped_from"] = value
        return value, None
    details["raw_out_of_range"] = value
    return (
        None,
        f"returned {value:g}, outside its own range [{lo:g}, {hi:g}] (a judge answer the metric does not allow); no score",
    )
