"""The Ray actor: builds the run's backends and judges once, then scores blocks of task
groups with the same ``score_group`` the local executor uses.

A group crosses the process boundary as a ``WireGroup`` (the sample, the backend's name,
the metrics and their configuration fingerprints); the actor rebuilds the ``TaskGroup``
around its own backend object. Results stream back as they finish: ``score_block`` is
an async generator, each item a batch of ``(index in block, scores)`` — what finished
within ``FLUSH_S`` of the first, since every item costs both processes a fraction of a
millisecond of CPU — plus the judge calls recorded since the last item (so the driver's progress and call counts see the
same ``CallRecord``s a local run's listeners see).

Inside the actor, groups that need a judge and groups that do not have separate
windows (actor ``i``'s share of the run's concurrency), as in ``LocalExecutor``.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from unified.judge.base import CallRecord, add_listener
from unified.metrics import MetricRef
from unified.platforms.ray_executor.recipes import RunRecipe, build_backends, share
from unified.redact import one_line
from unified.run.executor import Pair, TaskGroup, score_group, task_bound
from unified.sample import Sample
from unified.scores import Score

FLUSH_S = 0.05  # how long a finished result waits for others to share its trip to the driver
Batch = tuple[list[tuple[int, list[Score]]], list[CallRecord]]


@dataclass
class WireGroup:
    """A ``TaskGroup`` without its backend object: what crosses to an actor."""

    idx: int
    sample: Sample
    backend: str
    metrics: list[MetricRef]
    config_hashes: list[str]
    sample_hash: str
    needs_judge: bool
    seed: int | None = None  # a test–retest repeat's seed (unified.run.repeats): the actor's requests carry it
    # the sample's metrics on this backend an earlier run scored (``Backend.score_with``)
    companions: list[MetricRef] = field(default_factory=list)

    @classmethod
    def of(cls, idx: int, g: TaskGroup) -> "WireGroup":
        return cls(
            idx,
            g.sample,
            g.backend.name,
            [p.metric for p in g.pairs],
            [p.config_hash for p in g.pairs],
            g.sample_hash,
            g.needs_judge,
            g.seed,
            list(g.companions),
        )

    def group(self, backend: Any) -> TaskGroup:
        pairs = [
            Pair(metric=m, backend=backend, bit=i, config_hash=h, needs_judge=self.needs_judge)
            for i, (m, h) in enumerate(zip(self.metrics, self.config_hashes))
        ]
        return TaskGroup(
            sample=self.sample,
            backend=backend,
            pairs=pairs,
            sample_hash=self.sample_hash,
            needs_judge=self.needs_judge,
            seed=self.seed,
            companions=list(self.companions),
        )


class ScoringWorker:
    """Actor ``index`` of ``n`` (made a Ray actor class by the driver)."""

    def __init__(self, recipe: RunRecipe, index: int, n: int, flush_s: float = FLUSH_S):
        self.index, self.n, self.flush_s = index, n, flush_s
        self.error: str | None = None
        self.backends: dict[str, Any] = {}
        self.window = share(recipe.concurrency, n, index)
        self.windows = {True: asyncio.Semaphore(self.window), False: asyncio.Semaphore(self.window)}
        self.records: list[CallRecord] = []
        missing = [k for k in recipe.key_env if not os.environ.get(k)]
        if missing:
            self.error = (
                f"the Ray worker on {_node()} has no ${missing[0]} (the judge key is read from each "
                "worker's environment: export it where the Ray nodes run, or pass "
                "RayExecutor(runtime_env={'env_vars': ...}))"
            )
            return
        try:
            self.backends = build_backends(recipe, n, index)
        except Exception as e:
            self.error = f"a Ray actor could not build the run's backends: {type(e).__name__}: {one_line(e, 200)}"
        add_listener(self.records.append)

    def ready(self) -> dict[str, Any]:
        """What the driver checks before sending work: an error line, or this actor's limits."""
        limits: dict[str, Any] = {"window": self.window}
        for name, b in self.backends.items():
            for slot in ("chat", "chat2", "embedder"):
                j = getattr(b.judges, slot, None)
                cfg = _config(j)
                if cfg is not None:
                    limits[f"{name}.{slot}"] = {
                        "concurrency": cfg.concurrency,
                        "requests_per_minute": cfg.requests_per_minute,
                    }
        return {
            "error": self.error,
            "pid": os.getpid(),
            "node": _node(),
            "node_id": _node_id(),
            "limits": limits,
            "cpu_seconds": time.process_time(),
        }

    def cpu_seconds(self) -> float:
        """CPU this actor's process has used (for benchmarks/executors.py)."""
        return time.process_time()

    async def score_block(self, wires: list[WireGroup]) -> AsyncIterator[Batch]:
        """Score every group of the block; yield results in batches as they finish."""
        done: asyncio.Queue[tuple[int, list[Score]]] = asyncio.Queue()

        async def one(w: WireGroup) -> None:
            async with self.windows[w.needs_judge]:
                try:
                    scores = await score_group(w.group(self.backends[w.backend]))
                except Exception as e:
                    scores = [
                        Score.failure(
                            m.name,
                            w.backend,
                            w.sample.id,
                            f"{type(e).__name__}: {one_line(e, 200)}",
                            threshold=task_bound(self.backends[w.backend], m),
                            sample_hash=w.sample_hash,
                            config_hash=h,
                        )
                        for m, h in zip(w.metrics, w.config_hashes)
                    ]
                done.put_nowait((w.idx, scores))

        tasks = [asyncio.create_task(one(w)) for w in wires]
        try:
            left = len(wires)
            while left:
                first = await done.get()
                if done.qsize() < left - 1:
                    # each item costs both processes ~0.3-0.5 ms of CPU: gather what finishes meanwhile
                    await asyncio.sleep(self.flush_s)
                batch = [first]
                while not done.empty():
                    batch.append(done.get_nowait())
                left -= len(batch)
                records, self.records[:] = list(self.records), []
                yield batch, records
        finally:
            for t in tasks:
                t.cancel()


def _config(judge: Any) -> Any:
    while judge is not None:
        cfg = getattr(judge, "config", None)
        if cfg is not None and hasattr(cfg, "concurrency"):
            return cfg
        judge = getattr(judge, "inner", None)
    return None


def _node_id() -> str | None:
    """The Ray node id of this actor's node (hex), as ``ray.nodes()`` names it."""
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:
        return None


def _node() -> str:
    try:
        import ray

        return str(ray.util.get_node_ip_address())
    except Exception:
        return "this node"
