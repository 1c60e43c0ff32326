"""A calibrated scale: a monotone map from a backend's 0–10 value to the share of people
who pass a sample, fitted by isotonic regression on the labels of a run.

Fit (pool adjacent violators, Barlow et al. 1972; the same fit as
``sklearn.isotonic.IsotonicRegression(increasing=True, out_of_bounds="clip")``): with the
labelled pairs (xᵢ, yᵢ), xᵢ our 0–10 value and yᵢ ∈ {0, 1} the people's verdict, samples
sharing a value are merged first (their mean y, weighted by their count); then

    ŷ = argmin Σ wⱼ (yⱼ − ŷⱼ)²   subject to  ŷ₁ ≤ ŷ₂ ≤ … (over the distinct x in order)

solved by merging adjacent blocks while a block's mean exceeds the next one's. The map
is the fitted points (x, ŷ), linearly interpolated between them and clipped at the ends:

    calibrated(v) = 10 · interp(v, x, ŷ)              on 0–10, monotone in v

Cross-validated error (printed when a map is fitted): K-fold (K = min(5, n), folds by a
seeded shuffle) Brier score of the map fitted without the fold, beside the Brier score of
the plain value/10 on the same samples — a map that does not beat value/10 out of sample
is not worth applying.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unified.analysis.stats import MIN_N, Numbers, Stat, Undefined, brier


def isotonic_fit(x: Numbers, y: Numbers, weights: Numbers | None = None) -> tuple[list[float], list[float]]:
    """(xs, ys): the distinct x in increasing order and the isotonic (non-decreasing)
    least-squares fit of y at them (module docstring)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    wa = np.ones_like(xa) if weights is None else np.asarray(weights, dtype=float)
    xs, inv = np.unique(xa, return_inverse=True)
    w = np.bincount(inv, weights=wa)
    means = np.bincount(inv, weights=wa * ya) / w
    blocks: list[list[float]] = []  # [weighted mean, weight, count of distinct x]
    for m, wt in zip(means, w):
        blocks.append([float(m), float(wt), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    ys = [m for m, _w, c in blocks for _ in range(int(c))]
    return [float(v) for v in xs], ys


def isotonic_predict(xs: Numbers, ys: Numbers, v: Numbers | float) -> Any:
    """The fitted map at ``v``: linear between the fitted points, clipped at the ends."""
    return np.interp(v, xs, ys)


def cross_validated(values: Numbers, labels: Numbers, folds: int = 5, seed: int = 0) -> dict[str, Stat]:
    """{"brier_calibrated", "brier_raw", "folds"}: out-of-fold Brier score of the map and
    of value/10 on the same samples (module docstring). Undefined when n < 2·MIN_N (each
    training fold needs ≥ 3 samples) or the labels hold one class."""
    v, y = np.asarray(values, dtype=float), np.asarray(labels, dtype=float)
    n = len(v)
    k = min(folds, n)
    if n < 2 * MIN_N or len(np.unique(y)) < 2:
        why = Undefined(f"n={n} < {2 * MIN_N}" if n < 2 * MIN_N else "labels hold a single class")
        return {"brier_calibrated": why, "brier_raw": why, "folds": k}
    order = np.random.default_rng(seed).permutation(n)
    pred = np.empty(n)
    for f in range(k):
        test = order[f::k]
        train = np.setdiff1d(order, test)
        xs, ys = isotonic_fit(v[train], y[train])
        pred[test] = isotonic_predict(xs, ys, v[test])
    return {"brier_calibrated": brier(pred, y), "brier_raw": brier(v / 10.0, y), "folds": k}
