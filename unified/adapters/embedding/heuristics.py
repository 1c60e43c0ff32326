"""The judge-free heuristics of the ``embedding`` backend, as plain functions on vectors.

Inputs are L2-normalised embeddings (numpy arrays, one row per sentence), so a dot
product is a cosine similarity. Every function returns ``(raw, details)`` with ``raw`` in
[0, 1]; ``unified/adapters/embedding/backend.py`` turns it into a Score. Kept free of I/O and of the model
so that the formulas can be tested and re-run on cached vectors (the meta-evaluation's
threshold search does exactly that).

Notation: ``cos(x, y)`` cosine similarity; ``best(x, Y) = max_y cos(x, y)``;
``soft(s, t) = min(1, max(0, s) / t)``: a match that reaches the threshold ``t`` counts
fully, a weaker one counts in proportion. A soft share keeps the ranking information
that a hard 0/1 cut throws away (with one context per sample a hard cut makes the score
binary), and equals the hard share when every match is far from ``t``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def soft(s: np.ndarray | float, t: float) -> np.ndarray:
    """``min(1, max(0, s) / t)``, elementwise."""
    return np.clip(np.asarray(s, dtype=float) / t, 0.0, 1.0)


def best_matches(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``a``: its best cosine among the rows of ``b``, and that row's index."""
    sims = a @ b.T
    idx = sims.argmax(axis=1)
    return sims[np.arange(len(a)), idx], idx


def faithfulness(
    resp: np.ndarray,
    ctx: np.ndarray,
    nonanswer: Sequence[bool],
    t: float,
    unsupported: Sequence[float] | None = None,
    w: float = 0.0,
) -> tuple[float, dict[str, Any]]:
    """support_i = 0 if response sentence i is a non-answer, else
    soft(best(r_i, C), t) · (1 − w · u_i);  raw = mean_i support_i.

    C: all sentences of all contexts. u_i in [0, 1]: the lexical unsupported share of
    sentence i (``unified.text.unsupported_terms``: its content words, numbers and names
    found in no context). w = 0 is the similarity alone; w = 1 lets a sentence whose
    every term is absent from the contexts count 0 however close its embedding is."""
    best, idx = best_matches(resp, ctx)
    u = np.zeros(len(resp)) if unsupported is None else np.asarray(unsupported, dtype=float)
    similarity = soft(best, t) * (1.0 - w * u)
    support = np.where(np.asarray(nonanswer, dtype=bool), 0.0, similarity)
    return float(support.mean()), {"best": best, "idx": idx, "support": support, "unsupported": u}


def answer_relevancy(
    q: np.ndarray, resp: np.ndarray, novelty: float, nonanswer: Sequence[bool], n: float
) -> tuple[float, dict[str, Any]]:
    """raw = max(0, cos(q, r)) · soft(novelty, n) · (1 − share of non-answer sentences).

    novelty = share of the response's content words absent from the question: an answer
    that only restates the question has novelty ≈ 0; one with at least a share ``n`` of
    new words is not penalised (a natural answer repeats some of the question's words)."""
    cos = float(q @ resp)
    answered = 1.0 - float(np.mean(np.asarray(nonanswer, dtype=float))) if len(nonanswer) else 1.0
    new = float(soft(novelty, n))
    return (
        max(0.0, cos) * new * answered,
        {"cosine": cos, "novelty": novelty, "novelty_factor": new, "answered": answered},
    )


def context_relevancy(
    q: np.ndarray, ctx_sents: list[np.ndarray], coverage: Sequence[float], t: float
) -> tuple[float, dict[str, Any]]:
    """rel_k = ½·best(q, sentences of context k) + ½·coverage_k; raw = mean_k soft(rel_k, t)."""
    rel = np.array([0.5 * float((s @ q).max()) + 0.5 * cov if len(s) else 0.0 for s, cov in zip(ctx_sents, coverage)])
    return float(soft(rel, t).mean()), {"relevance": rel}


def context_relevancy_sentences(q: np.ndarray, sents: np.ndarray, t: float) -> tuple[float, dict[str, Any]]:
    """Embedchain's definition: raw = |{s : cos(q, s) ≥ t}| / |all context sentences|."""
    sims = sents @ q
    return float((sims >= t).mean()), {"similarity": sims}


def context_recall(ref: np.ndarray, ctx: np.ndarray, t: float) -> tuple[float, dict[str, Any]]:
    """raw = mean_i soft(best(ref_i, C), t) over the reference's sentences."""
    best, idx = best_matches(ref, ctx)
    return float(soft(best, t).mean()), {"best": best, "idx": idx}


def context_precision(ref: np.ndarray, ctx_sents: list[np.ndarray], t: float) -> tuple[float, dict[str, Any]]:
    """v_k = 1 when max over (reference sentence, sentence of context k) cosine ≥ t;
    raw = Σ_k P@k · v_k / Σ_k v_k (average precision; 0 when no context is useful)."""
    sim = np.array([float((s @ ref.T).max()) if len(s) else 0.0 for s in ctx_sents])
    useful = sim >= t
    hits, total = 0, 0.0
    for k, v in enumerate(useful, start=1):
        if v:
            hits += 1
            total += hits / k
    return (total / hits if hits else 0.0), {"similarity": sim, "useful": useful}


def bertscore(cand: np.ndarray, ref: np.ndarray) -> tuple[float, dict[str, Any]]:
    """Greedy token matching (Zhang et al. 2020, BERTScore, no idf, no rescaling):
    P = mean_{x∈cand} max_{y∈ref} cos(x, y), R = mean_{y∈ref} max_{x∈cand} cos(x, y),
    F1 = 2PR / (P + R). Rows must be L2-normalised token embeddings."""
    sims = cand @ ref.T
    p = float(sims.max(axis=1).mean())
    r = float(sims.max(axis=0).mean())
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return f, {"precision": p, "recall": r, "f1": f}
