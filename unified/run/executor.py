"""Executors: where the scoring of task groups happens. The runner plans and writes; an
executor only scores.

A ``TaskGroup`` is one sample, one backend and the metrics still to score on it, all in
one ``backend.score`` call so a backend can share judge calls between them. Groups that
need a judge and groups that do not are separate, with separate windows, so groups in
flight never wait on each other's slots. Groups are pulled in input order, so while every
judge slot is taken the next groups wait to be pulled; a judge that stopped answering is
cut off by its circuit breaker (about one timeout), after which its tasks fail at once
and the rest flow again.

``LocalExecutor`` runs groups as asyncio tasks in this process: at most ``concurrency``
judge-using groups and ``free_concurrency`` judge-free ones in flight (the memory window;
the judge layer applies its own call limits). Other executors (Ray) implement the same
``run`` and reuse ``score_group``, so a Score is made by the same code everywhere.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from unified.judge.base import TaskMeter, task_scope
from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Score, judged_update


@dataclass(frozen=True)
class Pair:
    """One (metric, backend) of the run; ``bit`` indexes it in done-set bitmasks and
    ``config_hash`` fingerprints its configuration; ``repeats`` > 1 when each of its
    tasks is scored that many times (a judge-using pair under ``--repeats``)."""

    metric: MetricRef
    backend: Any  # unified.adapters.Backend
    bit: int
    config_hash: str
    needs_judge: bool
    repeats: int = 1
    # the backend scores it with a plain call (``backend.compute``): no judge, no await
    computed: bool = False
    #: the task's pass bound on 0–10, resolved once by the run plan (``Backend.bound``:
    #: the user's ``[threshold=…]``, else the backend's own default, else the metric's)
    bound: float | None = None

    @property
    def key(self) -> str:
        return f"{self.metric.name}|{self.backend.name}"

    @property
    def task_bound(self) -> float:
        """``bound``, or — for a pair made without a plan (a Ray worker's) — the backend's."""
        return self.bound if self.bound is not None else task_bound(self.backend, self.metric)


def task_bound(backend: Any, ref: MetricRef) -> float:
    """The pass bound of (``backend``, ``ref``): the backend's one rule (``Backend.bound``),
    or the metric's for an object that is no ``Backend``."""
    own = getattr(backend, "bound", None)
    return float(own(ref)) if callable(own) else ref.bound()


@dataclass
class TaskGroup:
    sample: Sample
    backend: Any
    pairs: list[Pair]
    sample_hash: str
    needs_judge: bool = field(default=False)
    repeat: int | None = None  # which test–retest repeat this group scores (unified.run.repeats)
    seed: int | None = None  # that repeat's seed: on every judge request, in every cache key
    # (row, DataFrame index label) of the sample's input row, stamped on its score lines
    where: tuple[int | None, Any] = (None, None)
    # the sample's metrics on this backend an earlier run scored (``Backend.score_with``)
    companions: list[MetricRef] = field(default_factory=list)

    @property
    def computed(self) -> bool:
        """Scored by ``compute_group`` (every pair a formula the backend computes)."""
        return self.repeat is None and not self.needs_judge and all(p.computed for p in self.pairs)

    def failures(self, why: str) -> list[Score]:
        """One failure Score per pair, named and stamped as a scored one would be."""
        return [
            Score.failure(
                p.metric.name,
                self.backend.name,
                self.sample.id,
                why,
                threshold=p.task_bound,
                sample_hash=self.sample_hash,
                config_hash=p.config_hash,
            )
            for p in self.pairs
        ]


# a group's results: Scores, or — from ``compute_group`` — the Scores' field dicts
OnDone = Callable[[TaskGroup, list[Any]], None]


class Executor(Protocol):
    async def run(self, groups: Iterable[TaskGroup], on_done: OnDone) -> None:
        """Score every group (pulling ``groups`` lazily) and call ``on_done`` once per
        group with exactly one Score per pair, in order. Cancellation cancels the groups
        in flight; a group's failure is Scores with ``error``, never an exception."""
        ...


# Executors that live elsewhere, by name: a lazy import path (fsspec's registry), so the run
# path never imports an integration it is not asked for.
NAMED_EXECUTORS: dict[str, str] = {"ray": "unified.platforms.ray_executor:RayExecutor"}


def named_executor(name: str, **options: Any) -> Any:
    """``NAMED_EXECUTORS[name](**options)``; an unknown name is a ValueError naming the choices."""
    import importlib

    if name not in NAMED_EXECUTORS:
        raise ValueError(f"unknown executor '{name}'; choose local or {' or '.join(NAMED_EXECUTORS)}")
    module, _, cls = NAMED_EXECUTORS[name].partition(":")
    return getattr(importlib.import_module(module), cls)(**options)


class LocalExecutor:
    """asyncio tasks in this process (module docstring).

    Computed groups (``TaskGroup.computed``: formulas, no judge, no await) get no task:
    they wait in a block of at most ``free_concurrency`` groups, which is scored in one
    plain loop (``compute_group``) at the points where their tasks would have run — when
    the block is full, before the executor waits for a window, and at the end — so the
    lines come out in the same order as they would through tasks. After each block,
    ``after_block`` (the runner writes the block's lines at once) and one turn of the
    event loop (the progress ticker, Ctrl-C and SIGTERM are served between blocks)."""

    def __init__(self, concurrency: int = 16, free_concurrency: int | None = None):
        self.concurrency = max(1, concurrency)
        self.free_concurrency = max(1, free_concurrency or self.concurrency)

    async def run(
        self, groups: Iterable[TaskGroup], on_done: OnDone, after_block: Callable[[], None] | None = None
    ) -> None:
        windows = {True: asyncio.Semaphore(self.concurrency), False: asyncio.Semaphore(self.free_concurrency)}
        inflight: set[asyncio.Task] = set()
        block: list[TaskGroup] = []

        def run_block() -> None:
            for g in block:
                on_done(g, compute_group(g))
            block.clear()
            if after_block is not None:
                after_block()

        async def one(group: TaskGroup, window: asyncio.Semaphore) -> None:
            try:
                on_done(group, await score_group(group))
            finally:
                window.release()

        try:
            for group in groups:
                if group.computed:
                    if len(block) >= self.free_concurrency:
                        run_block()
                        await asyncio.sleep(0)
                    block.append(group)
                    continue
                window = windows[group.needs_judge]
                if block and window.locked():  # the wait below is where the block's tasks would run
                    run_block()
                await window.acquire()
                task = asyncio.create_task(one(group, window))
                inflight.add(task)
                task.add_done_callback(inflight.discard)
            if block:
                run_block()
            while inflight:
                await asyncio.gather(*list(inflight))
        except BaseException:
            for t in list(inflight):
                t.cancel()
            await asyncio.gather(*list(inflight), return_exceptions=True)
            raise


def compute_group(group: TaskGroup) -> list[Any]:
    """``score_group`` for a computed group, without a task scope or a Score: the
    backend's ``compute`` gives each metric's Score fields, stamped here with the task
    key as requested and both fingerprints (a dict per pair; ``line_of`` writes it).
    Never raises: a backend bug is each pair's failure, as in ``score_group``."""
    refs = [p.metric for p in group.pairs]
    try:
        got = group.backend.compute(group.sample, refs)
    except Exception as e:  # a backend bug must not stop the run
        return group.failures(f"{type(e).__name__}: {e}".strip())
    if not isinstance(got, list) or len(got) != len(refs) or not all(isinstance(f, dict) for f in got):
        return group.failures(f"backend '{group.backend.name}' computed {type(got).__name__} for {len(refs)} metric(s)")
    key = {"backend": group.backend.name, "sample_id": group.sample.id, "sample_hash": group.sample_hash}
    for f, p in zip(got, group.pairs):
        f.update(key, metric=p.metric.name, config_hash=p.config_hash)
        f.update(judged_update(f, p.task_bound))  # as score_group stamps a Score
    return got


async def score_group(group: TaskGroup) -> list[Score]:
    """One ``backend.score`` call for the group's metrics; never raises (except on
    cancellation). Enforces the contract: one Score per metric, named as requested,
    stamped with the sample and configuration fingerprints."""
    backend, sample = group.backend, group.sample
    refs = [p.metric for p in group.pairs]
    label = ",".join(r.name for r in refs)
    with task_scope(backend.name, label if len(refs) > 1 else refs[0].name, sample.id, seed=group.seed) as meter:
        try:
            score_with = getattr(backend, "score_with", None) if group.companions else None
            got = await (score_with(sample, refs, group.companions) if score_with else backend.score(sample, refs))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a backend bug must not stop the run
            return group.failures(f"{type(e).__name__}: {e}".strip())
    if not isinstance(got, list) or len(got) != len(refs) or not all(isinstance(s, Score) for s in got):
        n = len(got) if hasattr(got, "__len__") else "?"
        return group.failures(
            f"backend '{backend.name}' returned {type(got).__name__} of length {n} for {len(refs)} metric(s)"
        )
    scores = _checked(backend, sample, refs, got)
    scores = _attribute_cost(scores, meter)
    # every Score carries its task's bound, whatever the backend wrote (a third-party
    # backend's own pass rule would otherwise give the same value two verdicts)
    return [
        s.judged_against(p.task_bound).model_copy(
            update={"sample_hash": group.sample_hash, "config_hash": p.config_hash}
        )
        for s, p in zip(scores, group.pairs)
    ]


def _checked(backend: Any, sample: Sample, refs: list[MetricRef], got: list[Score]) -> list[Score]:
    # the task key is (sample_id, metric-as-requested, backend): enforce it
    return [
        s
        if (s.metric, s.backend, s.sample_id) == (r.name, backend.name, sample.id)
        else s.model_copy(update={"metric": r.name, "backend": backend.name, "sample_id": sample.id})
        for r, s in zip(refs, got)
    ]


def _attribute_cost(scores: list[Score], meter: TaskMeter) -> list[Score]:
    """A backend that did not account its own cost: bill each recorded call to the metric
    in whose scope it was made (``CallRecord.metric``); a call made outside any metric's
    scope is billed to the first metric of the group."""
    if not meter.records or any(s.cost.calls or s.cost.cache_hits or s.cost.embedding_calls for s in scores):
        return scores
    per: dict[str, TaskMeter] = {s.metric: TaskMeter() for s in scores}
    first = scores[0].metric
    for rec in meter.records:
        per.get(rec.metric, per[first]).records.append(rec)
    return [
        s.model_copy(update={"cost": per[s.metric].cost().model_copy(update={"seconds": s.cost.seconds})})
        for s in scores
    ]
