"""The native backend's class: this project's own dual-judge LLM metrics, embedding
metrics, deterministic retrieval metrics and user-registered custom metrics.

One ``score()`` call plans the judge calls for the whole set of metrics requested on a
sample (see ``plan.py``): judgments that read the same texts are fused into one call per
judge, extractions are made once, and each call is charged to the first metric that
needs it. A fused call asks what the sample allows, whichever metrics were requested, so
a metric's value never depends on the metrics scored beside it. Five core metrics cost
8 judge calls (dual) or 5 (single judge) whatever the number of contexts, plus one
embedding call; faithfulness or context_recall alone costs 4 (3) on a sample with both a
response and a reference (``table.py``).

Every native metric is declared once in ``table.py`` (function, steps, parameters, needs);
each metric's formula is in its docstring in ``metrics.py``; what each judge step asks is
in ``steps.py``; the arithmetic in ``formulas.py``; the dual-judge mechanics in
``dual.py``; prompts in ``prompts/``; the interfaces metrics and steps see in
``context.py``.
"""

from __future__ import annotations

from typing import Any

from unified.adapters import Backend, unknown_param_error
from unified.adapters.native.plan import SamplePlan, compute_fields, computed
from unified.adapters.native.prompts import PROMPTS_VERSION
from unified.adapters.native.table import NATIVE_METRICS, entry_for, metric_names
from unified.metrics import MetricRef, UnknownMetricError, get_metric
from unified.sample import Sample
from unified.scores import Score

__all__ = ["NativeBackend", "LLM_METRICS", "EMBEDDING_METRICS", "RETRIEVAL_METRICS"]

# the table's built-ins by what they need (a snapshot at import; the table is the truth)
LLM_METRICS = frozenset(n for n, e in NATIVE_METRICS.items() if e.needs_chat)
EMBEDDING_METRICS = frozenset(n for n, e in NATIVE_METRICS.items() if e.needs_embedder and not e.needs_chat)
RETRIEVAL_METRICS = frozenset(n for n, e in NATIVE_METRICS.items() if e.requirements() == frozenset())


class _TableMetrics:
    """``NativeBackend.metrics``: the table's names at the time of asking, so a metric
    added with ``register_native_metric`` is implemented without touching the class."""

    def __get__(self, obj: Any, owner: Any) -> frozenset[str]:
        return metric_names()


class NativeBackend(Backend):
    """Dual-judge native metrics behind the common Backend interface.

    Options (keyword arguments, also accepted per metric as ``name[key=value]``):
    ``relevance_threshold`` (1.0): mean 0/1/2 rating from which a context counts as
    relevant; ``strictness`` (3): questions generated per judge for answer_relevancy.
    Single-judge mode comes from ``Judges.single_judge``; judge B runs on
    ``Judges.chat2`` when one is configured.
    """

    name = "native"
    metrics = _TableMetrics()

    def implements(self, metric: MetricRef | str) -> bool:
        """Built-ins above, plus every custom metric in the registry (a function or a
        rubric): the native backend is where user-registered metrics run."""
        if isinstance(metric, MetricRef):
            return metric.canonical in self.metrics or metric.spec.custom
        if metric in self.metrics:
            return True
        try:
            return get_metric(metric).custom
        except UnknownMetricError:
            return False

    def default_bound(self, ref: MetricRef) -> float | None:
        """The ``threshold`` option of this instance (``NativeBackend(threshold=8)``), a
        default bound for every metric it scores; else the metric's."""
        option = self.options.get("threshold")
        return None if option is None else float(option)

    def requirements(self, ref: MetricRef) -> frozenset[str]:
        """From the metric's table entry: {"chat"} for judged steps or rubrics,
        {"embedder"} for embeddings, nothing for retrieval and custom functions."""
        entry = entry_for(ref.spec)
        return entry.requirements() if entry is not None else frozenset()

    def param_error(self, ref: MetricRef) -> str | None:
        """A bracket parameter the metric's table entry does not read (one line), or None."""
        entry = entry_for(ref.spec)
        return unknown_param_error(ref, entry.accepted_params()) if entry is not None else None

    def fingerprint_extra(self) -> dict[str, Any]:
        """The backend options that change scores (those a metric or step reads, e.g.
        ``relevance_threshold``, ``strictness``, ``threshold``); not ``run_dir``; and the
        version of the prompts (another wording is another judgment)."""
        read = {p for e in NATIVE_METRICS.values() for p in e.accepted_params()}
        return {
            "options": {k: v for k, v in sorted(self.options.items()) if k in read},
            "prompts": PROMPTS_VERSION,
        }

    def computes(self, metric: MetricRef) -> bool:
        """True when ``metric`` is a built-in retrieval formula, which ``compute`` scores
        without a judge or an await (the run's batch path for deterministic groups). A
        subclass that overrides ``score`` gets every sample through it: never."""
        return type(self).score is NativeBackend.score and computed(metric)

    def compute(self, sample: Sample, metrics: list[MetricRef]) -> list[dict[str, Any]]:
        """``score(sample, metrics)`` for metrics that ``computes``, synchronously, as
        the Scores' field dicts (``plan.compute_fields``)."""
        return compute_fields(self.judges, sample, list(metrics))

    async def score(self, sample: Sample, metrics: list[MetricRef]) -> list[Score]:
        """Exactly one Score per metric, in order; never raises for a per-sample problem."""
        plan = SamplePlan(self.judges, sample, list(metrics), self.options)
        return await plan.run()
