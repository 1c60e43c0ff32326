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


# The run API imports the judge layer (and openai, about 2 s): loaded on first use, so
# that `import unified` for the schema and the registry stays instant.
_LAZY = {
    "evaluate": "unified.runner", "aevaluate": "unified.runner", "Report": "unified.report",
    "evaluate_pipeline": "unified.pipeline", "aevaluate_pipeline": "unified.pipeline",
    "load_samples": "unified.io", "read_samples": "unified.io", "write_samples": "unified.io",
}
__all__ += list(_LAZY)


def __getattr__(name: str):  # PEP 562
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'unified' has no attribute {name!r}")
