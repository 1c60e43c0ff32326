"""unified-rag-eval: one Sample schema, one metric registry, one 0–10 scale over
RAGAS, DeepEval and native dual-judge RAG metrics."""

from unified.metrics import (MetricSpec, get_metric, metric_names, parse_metric,
                             register_metric, register_rubric)
from unified.sample import Sample, SampleError
from unified.scores import Aggregate, Cost, Score, aggregate, normalize

__all__ = [
    "Sample", "SampleError", "Score", "Cost", "Aggregate", "aggregate", "normalize",
    "MetricSpec", "get_metric", "metric_names", "parse_metric", "register_metric",
    "register_rubric",
]
__version__ = "0.1.0"


def evaluate_pipeline(*args, **kwargs):  # type: ignore[no-untyped-def]
    """Run a retriever + generator over questions and evaluate the answers; see
    ``unified.pipeline.evaluate_pipeline`` (imported on first use: it pulls in the runner)."""
    from unified.pipeline import evaluate_pipeline as _run
    return _run(*args, **kwargs)


async def aevaluate_pipeline(*args, **kwargs):  # type: ignore[no-untyped-def]
    """Async twin of ``evaluate_pipeline``; see ``unified.pipeline.aevaluate_pipeline``."""
    from unified.pipeline import aevaluate_pipeline as _run
    return await _run(*args, **kwargs)


__all__ += ["evaluate_pipeline", "aevaluate_pipeline"]
