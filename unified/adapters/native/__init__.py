"""The ``native`` backend: this project's own metrics, declared once in ``table.py``.

Dual-judge LLM metrics, embedding metrics, deterministic retrieval metrics and every
user-registered custom metric run here. ``table.py`` declares each metric (function,
judge steps, parameters, needs) and derives the dry-run estimate; ``plan.py`` runs the
metrics of one sample, sharing their judge steps; ``backend.py`` is the ``Backend``.
This module holds the facts the registry reads, and names the backend's public parts
lazily, so reading the facts loads no judge code.
"""

from __future__ import annotations

from typing import Any

from unified.adapters.facts import BackendFacts

FACTS = BackendFacts(
    name="native",
    title="native",
    summary="our own metrics: deterministic IR metrics (`precision@k`, `recall@k`, `mrr`, `ndcg@k`, `hit_rate@k`) and dual-judge LLM metrics",
    backend="unified.adapters.native.backend:NativeBackend",
    order=0,
    hint="the native backend is part of unified-rag-eval; reinstall it",
    metrics="unified.adapters.native.table:metric_names",
    custom_metrics=True,
    estimate="unified.adapters.native.table:estimate_calls",
    doc=None,
)

#: public names of ``backend.py``, imported on first use (PEP 562)
_LAZY = ("NativeBackend", "LLM_METRICS", "EMBEDDING_METRICS", "RETRIEVAL_METRICS")
__all__ = ["FACTS", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from unified.adapters.native import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
