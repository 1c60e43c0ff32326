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

Pass/fail (``score_retrieval``): precision@k and recall@k cannot always reach 1 — P@3
with one relevant document tops out at 1/3 (3.33 on 0–10), R@3 with five at 3/5 — so an
absolute bound of 5 would fail a perfect retriever on every such sample. Their pass bound
is therefore relative to the best the sample allows (``best_achievable``):

    passed = value ≥ threshold · best,   best = min(k, |rel|)/k (P@k), min(k, |rel|)/|rel| (R@k)

``value`` stays the textbook P@k / R@k, comparable with any IR library; ``passed`` asks
"did the retriever reach threshold/10 of what was possible here?", and the Score's
``threshold`` is that per-sample bound (``details``: ``best_achievable``,
``threshold_base``). Normalising the value itself (hits / min(k, |rel|)) would change the
number users compare with other tools; no default pass/fail would leave the pass rate of
the most used retrieval metric empty. MRR, nDCG and hit rate can always reach 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable

from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Score, failure_fields, raw_fields

__all__ = [
    "precision_at_k",
    "recall_at_k",
    "mrr",
    "ndcg_at_k",
    "hit_rate_at_k",
    "relevant_set",
    "score_retrieval",
    "retrieval_fields",
    "best_achievable",
    "RETRIEVAL_METRICS",
]


def _cutoff(retrieved: Sequence[str], k: int | None) -> int:
    if k is None:
        return len(retrieved)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be a whole number ≥ 1, got {k!r}")
    return k


def _hit_ranks(retrieved: Sequence[str], relevant: Iterable[str], k: int) -> list[int]:
    """1-based ranks within the top k at which a relevant id appears for the first time."""
    rel = relevant if isinstance(relevant, (set, frozenset)) else set(relevant)
    found: set[str] = set()
    ranks = []
    for rank, doc in enumerate(retrieved[:k], start=1):
        if doc in rel and doc not in found:  # a repeat holds its slot but is not a new hit
            found.add(doc)
            ranks.append(rank)
    return ranks


def _require_relevant(relevant: Iterable[str]) -> set[str] | frozenset[str]:
    rel = relevant if isinstance(relevant, (set, frozenset)) else set(relevant)
    if not rel:
        raise ValueError("no relevant ids: the metric is undefined for a question without relevance judgments")
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
    return _precision(_hit_ranks(retrieved, rel, kk), kk, len(rel))


def recall_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float:
    """Recall at k.

        R@k = |{relevant ids in the top k}| / |relevant|

    Empty ``retrieved`` → 0. Empty ``relevant`` → ValueError. Reference: Manning et al.
    (2008), §8.3.
    """
    rel = _require_relevant(relevant)
    kk = _cutoff(retrieved, k)
    return _recall(_hit_ranks(retrieved, rel, kk), kk, len(rel))


def mrr(retrieved: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float:
    """Reciprocal rank of the first relevant id within the top k (one query; the mean over
    queries is the aggregate).

        RR@k = 1 / rank_first_relevant    (0 when no relevant id is in the top k)

    Reference: Voorhees, "The TREC-8 Question Answering Track Report" (1999).
    """
    rel = _require_relevant(relevant)
    kk = _cutoff(retrieved, k)
    return _reciprocal_rank(_hit_ranks(retrieved, rel, kk), kk, len(rel))


def hit_rate_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int | None = None) -> float:
    """Hit rate at k (success@k): 1 when at least one relevant id is in the top k, else 0.
    Its mean over queries is the share of queries with a hit."""
    rel = _require_relevant(relevant)
    kk = _cutoff(retrieved, k)
    return _hit(_hit_ranks(retrieved, rel, kk), kk, len(rel))


# Each binary-relevance metric from the hit ranks within the cutoff ``kk`` and the number
# of relevant ids: the public functions and ``retrieval_fields`` (which needs the ranks
# for its details anyway, so walks the ranking once) share these.


def _precision(ranks: list[int], kk: int, n_rel: int) -> float:
    return len(ranks) / kk if kk else 0.0  # kk = 0: k=None on an empty list


def _recall(ranks: list[int], kk: int, n_rel: int) -> float:
    return len(ranks) / n_rel


def _reciprocal_rank(ranks: list[int], kk: int, n_rel: int) -> float:
    return 1.0 / ranks[0] if ranks else 0.0


def _hit(ranks: list[int], kk: int, n_rel: int) -> float:
    return 1.0 if ranks else 0.0


def _binary_ndcg(ranks: list[int], kk: int, n_rel: int) -> float:
    # ``ndcg_at_k`` with every relevant id at grade 1: each gain is 2¹ − 1 = 1, so DCG is
    # Σ 1/log2(rank + 1) over the hit ranks, in rank order (the same floats, added in the
    # same order) and IDCG that of min(k, n_rel) ones
    if kk == 0:
        return 0.0
    return sum(1.0 / _log2(rank + 1) for rank in ranks) / _ideal_dcg((1.0,) * min(kk, n_rel))


_FROM_RANKS: dict[str, Callable[[list[int], int, int], float]] = {
    "precision_at_k": _precision,
    "recall_at_k": _recall,
    "mrr": _reciprocal_rank,
    "hit_rate_at_k": _hit,
    "ndcg_at_k": _binary_ndcg,  # binary relevance only; graded judgments go through ndcg_at_k
}


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
    positive = [g for g in grades.values() if g > 0]
    if not positive:
        _require_relevant(())  # undefined: its one error
    kk = _cutoff(retrieved, k)
    if kk == 0:
        return 0.0
    found: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(retrieved[:kk], start=1):
        grade = grades.get(doc, 0.0)
        # an unjudged or non-positive grade adds 2^0 − 1 = 0; a repeat adds nothing again
        if grade > 0 and doc not in found:
            found.add(doc)
            dcg += _gain(grade) / _log2(rank + 1)
    return dcg / _ideal_dcg(tuple(sorted(positive, reverse=True)[:kk]))


_IDCG: dict[tuple[float, ...], float] = {}


def _ideal_dcg(ideal: tuple[float, ...]) -> float:
    """IDCG@k of the grades ``ideal`` (sorted descending, cut at k), kept for the next
    sample with the same ones (binary relevance: one per number of relevant ids)."""
    idcg = _IDCG.get(ideal)
    if idcg is None:
        idcg = sum(_gain(g) / _log2(i + 1) for i, g in enumerate(ideal, start=1))
        if len(_IDCG) < 4096:
            _IDCG[ideal] = idcg
    return idcg


_LOG2 = [math.log2(n) if n else 0.0 for n in range(64)]


def _log2(n: int) -> float:
    # the discounts of the first ranks, computed once: the same floats as math.log2
    return _LOG2[n] if n < 64 else math.log2(n)


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


RETRIEVAL_METRICS: dict[str, Callable[..., float]] = {
    "precision_at_k": precision_at_k,
    "recall_at_k": recall_at_k,
    "mrr": mrr,
    "ndcg_at_k": ndcg_at_k,
    "hit_rate_at_k": hit_rate_at_k,
}


def best_achievable(name: str, k: int, n_relevant: int) -> float:
    """The highest raw value ``name`` can reach at cutoff ``k`` with ``n_relevant``
    relevant ids: min(k, n)/k for precision_at_k, min(k, n)/n for recall_at_k, 1 for the
    others (and for an empty cutoff, ``k = 0``)."""
    if k == 0 or n_relevant == 0:
        return 1.0
    if name == "precision_at_k":
        return min(k, n_relevant) / k
    if name == "recall_at_k":
        return min(k, n_relevant) / n_relevant
    return 1.0


def _pass_bound(metric: MetricRef, k: int, n_relevant: int, details: dict[str, Any]) -> float:
    """The per-sample pass bound on 0–10 (module docstring: relative for P@k and R@k)."""
    base = metric.bound()  # the task's bound (MetricRef.bound), scaled below
    if metric.canonical not in ("precision_at_k", "recall_at_k"):
        return base
    best = best_achievable(metric.canonical, k, n_relevant)
    details.update(best_achievable=best, threshold_base=base)
    return base * best


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
    """Score one retrieval metric on one sample: ``Score(**retrieval_fields(...))``."""
    return Score(**retrieval_fields(sample, metric, backend))


def retrieval_fields(sample: Sample, metric: MetricRef, backend: str = "native") -> dict[str, Any]:
    """The fields of one retrieval metric's Score on one sample (a deterministic batch
    writes its line from them, ``unified.scores.line_of``). Raw on [0, 1]; value = 10 · raw.

    ``details``: ``k`` (effective cutoff), ``hits`` (relevant ids found), ``ranks`` (their
    1-based ranks), ``relevant`` (size of the relevant set). The pass bound of P@k and
    R@k is relative to the best achievable value (module docstring). A missing field or
    an undefined metric gives a failure naming it. Never raises.
    """
    name, sid, canonical = metric.name, sample.id, metric.spec.name
    if canonical not in RETRIEVAL_METRICS:
        return failure_fields(name, backend, sid, f"'{canonical}' is not a retrieval metric")
    if sample.retrieved_ids is None:
        return failure_fields(name, backend, sid, "missing field 'retrieved_ids'")
    rel = relevant_set(sample)
    if rel is None:
        return failure_fields(name, backend, sid, "missing field 'relevant_ids' (or 'graded_relevance')")
    retrieved = sample.retrieved_ids
    graded = canonical == "ndcg_at_k" and sample.graded_relevance is not None
    try:
        if graded:
            raw = ndcg_at_k(retrieved, _grades(sample) or {}, metric.k)
        else:
            _require_relevant(rel)  # the public function's checks, in its order
        k = _cutoff(retrieved, metric.k)
        ranks = _hit_ranks(retrieved, rel, k)
        if not graded:
            raw = _FROM_RANKS[canonical](ranks, k, len(rel))
    except ValueError as e:
        return failure_fields(name, backend, sid, str(e))
    except Exception as e:  # never raise per sample; keep the type for debugging
        return failure_fields(name, backend, sid, f"{type(e).__name__}: {e}")
    details: dict[str, Any] = {"k": k, "hits": [retrieved[r - 1] for r in ranks], "ranks": ranks, "relevant": len(rel)}
    return raw_fields(
        name,
        backend,
        sid,
        raw,
        raw_range=(0.0, 1.0),
        threshold=_pass_bound(metric, k, len(rel), details),
        reason=_reason(canonical, raw, k, ranks, len(rel)),
        details=details,
    )
