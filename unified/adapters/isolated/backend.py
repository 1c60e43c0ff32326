"""The isolated backend: a room's facts, its framework called in a worker of its own.

``IsolatedBackend.bound_to(facts)`` is the class of one isolated name (``ragas@0.3.9``,
``embedchain``): a ``FrameworkBackend`` whose ``FACTS`` are the room's (same table, same
scales, same bounds, same 0–10 rule), whose ``evaluate`` sends the task to the worker
(``client.WorkerProcess``) inside a bridge route opened in the task's accounting scope —
so every call the framework makes is cached, retried and billed to this (backend, metric,
sample) — and reads back the raw value. A worker error or a worker death is that task's
error; the next task gets a fresh worker.

The environment is found or built when the first task needs it (``envs.ensure_env``), in
a thread, so the run's other backends are not held up by a build.

What each framework is asked (``payload``): the room's table row says which class, which
fields and which constructor settings, exactly as the in-process backend reads it.
"""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any, ClassVar

from unified.adapters.facts import BackendFacts
from unified.adapters.framework import FrameworkBackend, Outcome
from unified.adapters.isolated import RECIPES, split_name
from unified.adapters.isolated.client import WorkerProcess
from unified.adapters.isolated.envs import EnvBuildError, EnvSpec, ensure_env, env_python
from unified.judge import bridge
from unified.judge.base import Judges
from unified.metrics import MetricRef
from unified.sample import Sample


class IsolatedBackend(FrameworkBackend):
    """Base of every isolated backend class (made per name by ``bound_to``).

    Options as ``FrameworkBackend``. The worker starts on the first task and ends with
    ``aclose`` (the run's end, Ctrl-C, SIGTERM)."""

    framework: ClassVar[str] = ""
    requested_version: ClassVar[str | None] = None
    _classes: ClassVar[dict[str, type["IsolatedBackend"]]] = {}

    @classmethod
    def bound_to(cls, facts: BackendFacts) -> type["IsolatedBackend"]:
        """The class of isolated backend ``facts.name`` (one per name, kept)."""
        if facts.name not in cls._classes:
            split = split_name(facts.name)
            if split is None:
                raise ValueError(f"'{facts.name}' is no isolated backend")
            base, version = split
            attrs = {"FACTS": facts, "framework": base, "requested_version": version or RECIPES[base].default_version}
            cls._classes[facts.name] = type(f"Isolated_{facts.name}", (cls,), attrs)
        return cls._classes[facts.name]

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self._worker: WorkerProcess | None = None
        self._bridge: bridge.JudgeBridge | None = None
        self._start = threading.Lock()
        self._unbuildable: str | None = None  # the build's failure, said to every later task

    # ------------------------------------------------------------ the environment, the worker
    def spec(self) -> EnvSpec:
        recipe = RECIPES[self.framework]
        return EnvSpec(recipe.distribution, self.requested_version, recipe.pins)

    def version(self) -> str:
        """The version asked for (the environment installs exactly it)."""
        return str(self.requested_version or "latest")

    def _worker_now(self) -> WorkerProcess:
        """The worker, its environment built and the bridge started on first use."""
        with self._start:
            if self._unbuildable is not None:
                raise EnvBuildError(self._unbuildable)
            if self._worker is None:
                try:
                    folder = ensure_env(self.spec())
                except EnvBuildError as e:  # one build per run, not one per task
                    self._unbuildable = str(e)
                    raise
                self._bridge = bridge.acquire()
                chat = self.judges.chat
                hello = {
                    "framework": self.framework,
                    "bridge": self._bridge.base_url,
                    "model": getattr(chat, "model", "") or "unified-judge",
                    "verdicts": [[c, f, list(v)] for (c, f), v in self.FACTS.verdicts.items()],
                }
                self._worker = WorkerProcess(self.name, env_python(folder), hello)
            return self._worker

    @property
    def worker(self) -> WorkerProcess | None:
        return self._worker

    # ------------------------------------------------------------ one task
    def requirements(self, ref: MetricRef) -> frozenset[str]:
        row = self.table.get(ref.canonical)
        uses = getattr(row, "uses", ("llm",))
        return frozenset({"llm": "chat", "embeddings": "embedder"}[u] for u in uses)

    def details_for(self, row: Any) -> dict[str, Any]:
        details = {
            "framework": self.framework,
            f"{self.framework}_version": self.version(),
            f"{self.framework}_{self.metric_key}": row.cls,
            "isolated": True,
        }
        if getattr(row, "note", None):
            details["note"] = row.note
        return details

    def param_error(self, ref: MetricRef) -> str | None:
        """Only ``threshold`` for now: the other bracket parameters go to the framework's
        constructor, which this process cannot read for another release (and ragas drops
        unknown keywords silently), so they are refused in one line rather than risked."""
        passed = [k for k, _ in self.passed_params(ref)]
        if not passed:
            return None
        return (
            f"metric '{ref.name}': parameter '{passed[0]}' is not passed to isolated backends ({self.name}); "
            "only threshold is taken here"
        )

    def payload(self, sample: Sample, ref: MetricRef, row: Any) -> dict[str, Any]:
        """What the worker is asked for this task (the module docstring)."""
        out: dict[str, Any] = {
            "metric": row.cls,
            "init": dict(getattr(row, "init", {}) or {}),  # the room's settings, for its current release
            "params": dict(self.passed_params(ref)),  # the user's bracket parameters: passed as given
            "uses": list(getattr(row, "uses", ("llm",))),
        }
        if self.framework == "ragas":
            out["fields"] = row.fields(sample)
        elif self.framework == "deepeval":
            out["fields"] = {
                "input": sample.user_input or "",
                "actual_output": sample.response,
                "expected_output": sample.reference,
                "retrieval_context": sample.retrieved_contexts,
                **({"context": sample.retrieved_contexts} if row.context_from_retrieved else {}),
            }
            out["threshold"] = self.framework_bound(ref)
        else:
            out["fields"] = row.fields(sample)
        return out

    async def evaluate(self, sample: Sample, ref: MetricRef, row: Any, details: dict[str, Any]) -> Outcome:
        """The task in the worker, its judge calls through this task's bridge route."""
        worker = await asyncio.to_thread(self._worker_now)
        assert self._bridge is not None
        payload = self.payload(sample, ref, row)
        with self._bridge.route(self.judges) as headers:
            answer = await worker.request({**payload, "route": headers[bridge.ROUTE_HEADER]})
        if "error" in answer:
            raise RuntimeError(str(answer["error"]))
        details.update(answer.get("details") or {})
        details[f"{self.framework}_version"] = worker.ready.get("version", self.version())
        raw = answer.get("raw")
        why = f"returned {answer.get('returned', repr(raw))}"
        if raw is None and "nan" in str(answer.get("returned", "")).lower():
            why += getattr(row, "nan_means", "")
        return Outcome(
            math.nan if raw is None else raw, why, reason=answer.get("reason"), domain=getattr(row, "domain", None)
        )

    async def aclose(self) -> None:
        """End the worker (bye, SIGTERM, SIGKILL) and give back the bridge."""
        worker, self._worker = self._worker, None
        if worker is not None:
            await asyncio.to_thread(worker.close)
        if self._bridge is not None:
            self._bridge = None
            bridge.release()
