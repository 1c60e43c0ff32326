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
