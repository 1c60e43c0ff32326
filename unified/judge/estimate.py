"""Deprecated: call estimates moved to the adapters (``unified.adapters.estimate_calls``).

The frameworks' call tables and the token arithmetic now live in
``adapters/estimate.py``, native's figures come from its metric table. This shim keeps
the old per-metric-alone signatures for callers not yet moved (``cli._dry_run``); it
reaches the adapters only through their registry. Delete it with its last caller.
"""

from __future__ import annotations

from typing import Any, Sequence


def _one(backend: str, ref: Any, n_contexts: int, single_judge: bool) -> tuple[int, int]:
    from unified.adapters import estimate_calls as new_estimate
    from unified.sample import Sample

    sample = Sample(user_input="?", retrieved_contexts=["?"] * n_contexts)
    row = new_estimate(backend, [sample], [ref], single_judge=single_judge)[0]
    if row["calls"] is None:
        raise ValueError(row["note"])
    return row["calls"], row["embedding_calls"]


def estimate_calls_full(backend: str, metric: str, n_contexts: int = 0,
                        kind: str | None = None, single_judge: bool = False) -> tuple[int, int]:
    """(chat calls, embedding calls) one sample costs for ``metric`` alone."""
    from unified.metrics import parse_metric

    return _one(backend, parse_metric(metric), n_contexts, single_judge)


def estimate_calls(backend: str, metric: str, n_contexts: int = 0) -> int:
    """Chat calls one sample costs for ``metric`` alone on ``backend``."""
    return estimate_calls_full(backend, metric, n_contexts)[0]


def estimate_run(samples: Sequence[Any], metric_refs: Sequence[Any], backends: Sequence[str],
                 single_judge: bool = False) -> list[dict]:
    """One row per (backend, metric), each metric counted alone (as before the move);
    one spelling per metric (``semantic_similarity,answer_similarity`` is one row)."""
    from unified.adapters import estimate_calls as new_estimate

    distinct = list({r.name: r for r in metric_refs}.values())
    return [row for b in backends for ref in distinct
            for row in new_estimate(b, samples, [ref], single_judge=single_judge)]
