"""The native backend: this project's own dual-judge LLM metrics, embedding metrics,
deterministic retrieval metrics and user-registered custom metrics.

One ``score()`` call plans the judge calls for the whole set of metrics requested on a
sample (see ``plan.py``): judgments that read the same texts are fused into one call per
judge, extractions are made once, and each call is charged to the first metric that
needs it. Five core metrics cost 8 judge calls (dual) or 5 (single judge) whatever the
number of contexts, plus one embedding call.

Each metric's formula is in its docstring in ``metrics.py``; the arithmetic is in
``formulas.py``; the dual-judge mechanics in ``dual.py``; prompts in ``prompts/``.
"""

from __future__ import annotations

from unified.metrics import MetricRef, get_metric, UnknownMetricError
from unified.sample import Sample
from unified.scores import Score

from unified.adapters import Backend

from .plan import EMBEDDING_METRICS, LLM_METRICS, RETRIEVAL_METRICS, SamplePlan

__all__ = ["NativeBackend", "LLM_METRICS", "EMBEDDING_METRICS", "RETRIEVAL_METRICS"]


class NativeBackend(Backend):
    """Dual-judge native metrics behind the common Backend interface.

    Options (keyword arguments, also accepted per metric as ``name[key=value]``):
    ``relevance_threshold`` (1.0): mean 0/1/2 rating from which a context counts as
    relevant; ``strictness`` (3): questions generated per judge for answer_relevancy.
    Single-judge mode comes from ``Judges.single_judge``; judge B runs on
    ``Judges.chat2`` when one is configured.
    """

    name = "native"
    metrics = frozenset(LLM_METRICS | EMBEDDING_METRICS | RETRIEVAL_METRICS)

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

    async def score(self, sample: Sample, metrics: list[MetricRef]) -> list[Score]:
        """Exactly one Score per metric, in order; never raises for a per-sample problem."""
        plan = SamplePlan(self.judges, sample, list(metrics), self.options)
        return await plan.run()
