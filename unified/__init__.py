"""unified-rag-eval: one Sample schema, one metric registry, one 0–10 scale over
RAGAS, DeepEval and native dual-judge RAG metrics.

Every public name is loaded on first use (PEP 562), so ``import unified`` — and
``unified-eval --help`` — waits for nothing it does not use: the run API pulls in the judge
layer and its HTTP client only when a run starts.
"""

__version__ = "0.3.0.dev0"  # pyproject.toml and CHANGELOG.md say the same (tests/test_rooms.py)

_LAZY = {
    "Sample": "unified.sample",
    "SampleError": "unified.sample",
    "Score": "unified.scores",
    "Cost": "unified.scores",
    "Aggregate": "unified.scores",
    "aggregate": "unified.scores",
    "normalize": "unified.scores",
    "MetricSpec": "unified.metrics",
    "get_metric": "unified.metrics",
    "metric_names": "unified.metrics",
    "parse_metric": "unified.metrics",
    "register_metric": "unified.metrics",
    "register_rubric": "unified.metrics",
    "evaluate": "unified.api",
    "aevaluate": "unified.api",
    "Report": "unified.report",
    "benchmark": "unified.benchmarking",
    "evaluate_pipeline": "unified.api",
    "aevaluate_pipeline": "unified.api",
    "load_samples": "unified.data.io",
    "read_samples": "unified.data.io",
    "write_samples": "unified.data.io",
}
__all__ = list(_LAZY)


def __getattr__(name: str):  # PEP 562
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'unified' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)


# Every backend room's framework names resolve as metric names (``FaithfulnessMetric`` is
# ``faithfulness``) and its framework objects read as samples, whatever is imported first:
# the rooms' facts are light (no framework, no model) and are read here, once.
from unified.adapters.registry import install_names as _install_names  # noqa: E402

_install_names()
