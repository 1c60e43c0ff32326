"""The native metrics' arithmetic, as plain functions on judged items.

Item ratings are already the mean of the two judges (or one judge's rating); each
function is the metric's formula on the raw scale. No function returns NaN: an empty
input either has a documented value or raises ``ValueError`` with the reason, which the
backend turns into an error Score.
"""

from __future__ import annotations

import math
from typing import Sequence


def share(items: Sequence[float]) -> float:
    """mean(items) on [0, 1]: faithfulness = supported / total claims, context_recall =
    attributed / total reference claims (with fractional items when the two judges
    disagree: an item supported by one judge of two counts 0.5)."""
    if not items:
        raise ValueError("no items to average")
    return sum(items) / len(items)


def share_at_least(ratings: Sequence[float], threshold: float) -> float:
    """context_relevancy = |{i : rating_i ≥ threshold}| / n on [0, 1]."""
    if not ratings:
        raise ValueError("no items to rate")
    return sum(1 for r in ratings if r >= threshold) / len(ratings)


def average_precision(useful: Sequence[bool]) -> float:
    """context_precision = Σ_k (P@k · v_k) / Σ_k v_k, with P@k = (Σ_{j≤k} v_j) / k and
    v_k ∈ {0, 1} the verdict of the context at rank k. 0 when no context is useful (there
    is nothing to rank well)."""
    if not useful:
        raise ValueError("no contexts to rank")
    hits = 0
    total = 0.0
    for k, v in enumerate(useful, 1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def claim_f1(tp: float, fp: float, fn: float) -> float:
    """answer_correctness = TP / (TP + ½(FP + FN)) on [0, 1].

    TP = response claims the reference states, FP = response claims it does not, FN =
    reference claims the response misses. Raises when TP + FP + FN = 0 (neither text
    states a fact: correctness is undefined, not perfect)."""
    denom = tp + 0.5 * (fp + fn)
    if tp + fp + fn <= 0 or denom <= 0:
        if tp + fp + fn <= 0:
            raise ValueError("neither the response nor the reference states a factual claim")
        return 0.0
    return tp / denom


def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    """cos(u, v) = u·v / (‖u‖‖v‖); 0 for a zero vector (no direction, no similarity)."""
    dot = sum(a * b for a, b in zip(u, v))
    nu = math.sqrt(sum(a * a for a in u))
    nv = math.sqrt(sum(b * b for b in v))
    if nu == 0 or nv == 0:
        return 0.0
    return dot / (nu * nv)


def agreement(a: Sequence[float], b: Sequence[float], width: float) -> float:
    """judge_agreement = 1 − mean_i |a_i − b_i| / width, on [0, 1].

    ``a``/``b`` are the two judges' item scores on a scale of ``width`` (1 for yes/no
    and supported/not, 2 for 0/1/2 ratings). 1 = identical judgments; for binary items it
    is the share of items on which the judges agree. Raises on empty or unequal lists."""
    if not a or len(a) != len(b):
        raise ValueError("agreement needs two equally long, non-empty lists")
    return 1.0 - sum(abs(x - y) for x, y in zip(a, b)) / (len(a) * width)


def mean_pair(a: Sequence[float] | None, b: Sequence[float] | None) -> list[float]:
    """Element-wise mean of the judges' item scores; the one available list when the
    other judge is missing."""
    if a is not None and b is not None:
        if len(a) != len(b):
            raise ValueError("judges rated different numbers of items")
        return [(x + y) / 2 for x, y in zip(a, b)]
    if a is not None:
        return list(a)
    if b is not None:
        return list(b)
    raise ValueError("no judge produced a rating")
