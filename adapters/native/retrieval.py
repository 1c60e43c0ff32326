"""Deterministic retrieval metrics computed from document ids: no judge, no model.

Plain functions in the style of ``sklearn.metrics``; ``score_retrieval`` wraps them into a
``Score`` for the native backend. Reference for every formula: Manning, Raghavan &
Schütze, *Introduction to Information Retrieval* (2008), ch. 8; nDCG as in Järvelin &
Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002,
with the exponential gain of Burges et al. (2005).

Conventions (shared by every function here, and tested):

- ``k=None`` means the whole retrieved list; an explicit ``k`` must be ≥ 1.
- ``k`` larger than the retrieved list: the missing slots count as non-relevant, so
  precision still divides by ``k`` (a retriever that returns 2 ids when asked for 5 is
  not rewarded for returning fewer).
- An empty retrieved list scores 0 (the retriever found nothing).
- An empty relevant set makes every metric undefined: a ``ValueError`` is raised, which
  ``score_retrieval`` turns into a Score error ("no relevant ids: ... undefined"),
  never a 0 that would drag an average down for a question without judgments.
- A retrieved id repeated at a later rank counts once, at its first occurrence; the
  repeat keeps its rank slot but scores as non-relevant, so repeating a hit cannot
  inflate precision.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Score

__all__ = [
    "precision_at_k", "recall_at_k", "mrr", "ndcg_at_k", "hit_rate_at_k",
    "relevant_set", "score_retrieval", "RETRIEVAL_METRICS",
]


def _cutoff(retrieved: Sequence[str], k: int | None) -> int:
    if k is None:
        return len(retrieved)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be a whole number ≥ 1, got {k!r}")
    return k


def _hit_ranks(retrieved: Sequence[str], relevant: Iterable[str], k: int) -> list[int]:
    """1-based ranks within the top k at which a relevant id appears for the first time."""
    rel = set(relevant)
    seen: set[str] = set()
    ranks = []
    for rank, doc in enumerate(retrieved[:k], start=1):
        if doc in seen:  # a repeat holds its slot but is not a new hit
            continue
        seen.add(doc)
        if doc in rel:
            ranks.append(rank)
    return ranks


def _require_relevant(relevant: Iterable[str]) -> set[str]:
    rel = set(relevant)
    if not rel:
        raise ValueError("no relevant ids: the metric is undefined for a question without "
                         "relevance judgments")
    return rel


def precision_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float:
    """Precision at k.

        P@k = |{relevant ids in the top k}| / k

    with ``k = len(retrieved)`` when ``k`` is None. Missing slots (k > len) count as
    non-relevant. Empty ``retrieved`` → 0. Empty ``relevant`` → ValueError.
    Reference: Manning et al. (2008), §8.4.
    """
    rel = _require_relevant(relevant)
    kk = _cutoff(retrieved, k)
    if kk == 0:  # k=None on an empty list
        return 0.0
    return len(_hit_ranks(retrieved, rel, kk)) / kk


def recall_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float:
    """Recall at k.

        R@k = |{relevant ids in the top k}| / |relevant|

    Empty ``retrieved`` → 0. Empty ``relevant`` → ValueError. Reference: Manning et al.
    (2008), §8.3.
    """
    rel = _require_relevant(relevant)
    kk = _cutoff(retrieved, k)
    return len(_hit_ranks(retrieved, rel, kk)) / len(rel)


def mrr(retrieved: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float:
    """Reciprocal rank of the first relevant id within the top k (one query; the mean over
    queries is the aggregate).

        RR@k = 1 / rank_first_relevant    (0 when no relevant id is in the top k)

    Reference: Voorhees, "The TREC-8 Question Answering Track Report" (1999).
    """
    rel = _require_relevant(relevant)
    kk = _cutoff(retrieved, k)
    ranks = _hit_ranks(retrieved, rel, kk)
    return 1.0 / ranks[0] if ranks else 0.0


def hit_rate_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float:
    """Hit rate at k (success@k): 1 when at least one relevant id is in the top k, else 0.
    Its mean over queries is the share of queries with a hit."""
    rel = _require_relevant(relevant)
    kk = _cutoff(retrieved, k)
    return 1.0 if _hit_ranks(retrieved, rel, kk) else 0.0


def _gain(grade: float) -> float:
    # exponential gain 2^rel − 1; a negative grade ("harmful") is treated as 0, not as a
    # penalty, so nDCG stays on [0, 1]
    return 2.0 ** max(0.0, float(grade)) - 1.0


def ndcg_at_k(retrieved: Sequence[str], grades: Mapping[str, float], k: int | None = None) -> float:
    """Normalised discounted cumulative gain at k.

        DCG@k  = Σ_{i=1..k} (2^{rel_i} − 1) / log2(i + 1)
        IDCG@k = the same sum over the ideal ordering of ALL judged documents
                 (grades sorted descending), truncated at k
        nDCG@k = DCG@k / IDCG@k

    ``rel_i`` is the grade of the id at rank i (0 when unjudged or a repeat). Binary
    relevance is the special case grade 1 for each relevant id. Documents with grade ≤ 0
    are not relevant; when none has a grade > 0 the metric is undefined (ValueError).
    Empty ``retrieved`` → 0. Reference: Järvelin & Kekäläinen (2002); Burges et al. (2005).
    """
    _require_relevant(d for d, g in grades.items() if g > 0)
    kk = _cutoff(retrieved, k)
    if kk == 0:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(retrieved[:kk], start=1):
        if doc in seen:
            continue
        seen.add(doc)
        dcg += _gain(grades.get(doc, 0.0)) / math.log2(rank + 1)
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:kk]
    idcg = sum(_gain(g) / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg


def relevant_set(sample: Sample) -> set[str] | None:
    """The relevant ids of a sample: ``relevant_ids``, or the ``graded_relevance`` keys with
    a grade > 0 when ``relevant_ids`` is absent; None when the sample has neither."""
    if sample.relevant_ids is not None:
        return set(sample.relevant_ids)
    if sample.graded_relevance is not None:
        return {d for d, g in sample.graded_relevance.items() if g > 0}
    return None


def _grades(sample: Sample) -> dict[str, float] | None:
    # nDCG prefers graded judgments; binary grades from relevant_ids otherwise
    if sample.graded_relevance is not None:
        return dict(sample.graded_relevance)
    if sample.relevant_ids is not None:
        return {d: 1.0 for d in sample.relevant_ids}
    return None


RETRIEVAL_METRICS = {
    "precision_at_k": precision_at_k,
    "recall_at_k": recall_at_k,
    "mrr": mrr,
    "ndcg_at_k": ndcg_at_k,
    "hit_rate_at_k": hit_rate_at_k,
}


def _reason(name: str, raw: float, k: int, hits: list[int], n_rel: int) -> str:
    top = f"top {k}"
    if name == "precision_at_k":
        return f"{len(hits)} of {top} relevant"
    if name == "recall_at_k":
        return f"{len(hits)} of {n_rel} relevant ids found in the {top}"
    if name == "mrr":
        return f"first relevant id at rank {hits[0]}" if hits else f"no relevant id in the {top}"
    if name == "hit_rate_at_k":
        return f"relevant id in the {top} (rank {hits[0]})" if hits else f"no relevant id in the {top}"
    return f"nDCG {raw:.3f} over the {top}; relevant ranks {hits or 'none'}"


def score_retrieval(sample: Sample, metric: MetricRef, backend: str = "native") -> Score:
    """Score one retrieval metric on one sample. Raw on [0, 1]; value = 10 · raw.

    ``details``: ``k`` (effective cutoff), ``hits`` (relevant ids found), ``ranks`` (their
    1-based ranks), ``relevant`` (size of the relevant set). A missing field or an
    undefined metric gives ``Score.failure`` naming it. Never raises.
    """
    name, sid = metric.name, sample.id
    fn = RETRIEVAL_METRICS.get(metric.canonical)
    if fn is None:
        return Score.failure(name, backend, sid, f"'{metric.canonical}' is not a retrieval metric")
    if sample.retrieved_ids is None:
        return Score.failure(name, backend, sid, "missing field 'retrieved_ids'")
    rel = relevant_set(sample)
    if rel is None:
        return Score.failure(name, backend, sid,
                             "missing field 'relevant_ids' (or 'graded_relevance')")
    retrieved = sample.retrieved_ids
    try:
        if metric.canonical == "ndcg_at_k":
            grades = _grades(sample) or {}
            raw = ndcg_at_k(retrieved, grades, metric.k)
        else:
            raw = fn(retrieved, rel, metric.k)
        k = _cutoff(retrieved, metric.k)
        ranks = _hit_ranks(retrieved, rel, k)
    except ValueError as e:
        return Score.failure(name, backend, sid, str(e))
    except Exception as e:  # never raise per sample; keep the type for debugging
        return Score.failure(name, backend, sid, f"{type(e).__name__}: {e}")
    details: dict[str, Any] = {"k": k, "hits": [retrieved[r - 1] for r in ranks],
                               "ranks": ranks, "relevant": len(rel)}
    return Score.from_raw(name, backend, sid, raw, raw_range=(0.0, 1.0),
                          threshold=float(metric.param("threshold", metric.spec.threshold)),
                          reason=_reason(metric.canonical, raw, k, ranks, len(rel)),
                          details=details)
