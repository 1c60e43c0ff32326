"""Threshold translation: what backend A's pass threshold is on backend B's scale.

Scores of one metric differ in scale and shape between backends (one backend's
faithfulness is bimodal 0/10 where another's is spread), so a threshold does not carry
over. On the samples both backends scored, this module maps A's scores to B's by
**quantile matching** (equipercentile equating): a threshold t on A is sent to the B
threshold under which B passes as many samples as A passes at t,

    k(t)  = #{ i : aᵢ ≥ t }                          (A's passes at t)
    T(t)  = the midpoint of the gap between B's distinct values that leaves the number
            of B passes, #{ i : bᵢ ≥ T }, closest to k(t)

with the ends of the 0–10 scale standing in as the neighbours beyond the data (so "pass
all" is T = b_min / 2 and "pass none" is T = (b_max + 10) / 2, the latter impossible when
B has samples at 10). Ties between two equally close counts go to the stricter threshold
(fewer passes). T is non-decreasing in t: the map is monotone. A midpoint rather than a
sample's own value keeps the threshold off the data, so a new sample a hair from the
boundary is not decided by where the last one happened to fall.

Why quantile matching and not isotonic regression of B on A: a threshold is a decision
about *how many* pass, and quantile matching keeps exactly that (same pass rate on this
data). It is symmetric — A→B and B→A are inverses up to ties — and it does not shrink
toward the mean: isotonic E[B | A] of two weakly related backends is nearly flat, so it
would send every A threshold to about mean(B). What quantile matching does not use is the
pairing (which samples pass), so the pass agreement at the translated threshold is
reported next to the agreement at B's own threshold: a high pass rate match with a low
agreement says the two backends pass different samples, not that the scale differs.

Undefined (with the reason) when fewer than 3 samples were scored by both, or a side is
constant (one distinct value carries no scale to match).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unified.analysis.stats import MIN_N, Numbers, Undefined, note_undefined, rounded, undefined_reason

SCALE_LO, SCALE_HI = 0.0, 10.0
RATE_GAP = 0.1  # a pass-rate mismatch larger than this is worth a note
MAP_GRID = tuple(float(t) for t in range(11))  # A's scale points at which the map is shown


def _candidates(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct pass count B can reach and the midpoint threshold that reaches it:
    ``(thresholds, counts)``, thresholds ascending, counts descending."""
    u = np.unique(b)
    counts = len(b) - np.searchsorted(np.sort(b), u, side="left")  # #(b ≥ u_j)
    lower = np.concatenate(([min(SCALE_LO, u[0])], u[:-1]))
    thresholds = (lower + u) / 2.0
    if u[-1] < SCALE_HI:  # "pass none" is reachable only below the top of the scale
        thresholds = np.append(thresholds, (u[-1] + SCALE_HI) / 2.0)
        counts = np.append(counts, 0)
    return thresholds, counts


def quantile_map(a: Numbers, b: Numbers, t: Numbers | float) -> np.ndarray:
    """T(t) of the module docstring for each threshold in ``t``: A's threshold(s) on B's
    scale, matched by pass count on the paired values ``a``, ``b``."""
    a_sorted = np.sort(np.asarray(a, dtype=float))
    thresholds, counts = _candidates(np.asarray(b, dtype=float))
    ts = np.atleast_1d(np.asarray(t, dtype=float))
    k = len(a_sorted) - np.searchsorted(a_sorted, ts, side="left")  # #(a ≥ t)
    gap = np.abs(counts[None, :] - k[:, None]).astype(float)
    # ties between two counts go to the stricter threshold: the later (higher) candidate
    best = gap.shape[1] - 1 - np.argmin(gap[:, ::-1], axis=1)
    return thresholds[best]


def _agreement(a: np.ndarray, b: np.ndarray, t_a: float, t_b: float) -> float:
    """Share of samples with the same verdict: mean[(aᵢ ≥ t_a) = (bᵢ ≥ t_b)]."""
    return float(np.mean((a >= t_a) == (b >= t_b)))


def threshold_translation(
    a: Numbers, b: Numbers, threshold_a: float, threshold_b: float, name_a: str = "a", name_b: str = "b"
) -> dict[str, Any]:
    """A's threshold translated to B's scale on the paired values ``a[i]``, ``b[i]``.

    Returns ``from``, ``to``, ``n``, ``threshold_from`` (A's), ``threshold_to`` (T of the
    module docstring), ``threshold_default`` (B's own), ``pass_agreement_at_translated``
    (A at its threshold vs B at T), ``pass_agreement_at_default`` (A vs B, each at its
    own), ``pass_rate_from`` / ``pass_rate_to`` (at A's threshold and at T), ``method``,
    ``map`` (the map at A = 0, 1, …, 10 as ``[[t, T(t)], …]``, for a plot) and ``notes``
    explaining every ``"undefined"``.
    """
    if len(a) != len(b):
        raise ValueError(f"threshold_translation needs equal lengths, got {len(a)} and {len(b)}")
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = len(av)
    notes: list[str] = []
    out: dict[str, Any] = {
        "from": name_a,
        "to": name_b,
        "n": n,
        "method": "quantile",
        "threshold_from": float(threshold_a),
        "threshold_default": float(threshold_b),
    }
    why = undefined_reason(av, bv, (name_a, name_b))
    if n < MIN_N:
        agree_default: Any = Undefined(f"n={n} < {MIN_N} samples scored by both")
    else:
        agree_default = _agreement(av, bv, threshold_a, threshold_b)
    out["pass_agreement_at_default"] = note_undefined(notes, "pass_agreement_at_default", rounded(agree_default))
    if why:
        undefined = Undefined(f"{why} (samples scored by both)")
        for key in ("threshold_to", "pass_agreement_at_translated", "pass_rate_from", "pass_rate_to", "map"):
            out[key] = undefined
        note_undefined(notes, "threshold translation", undefined)
        out["notes"] = notes
        return out
    t_b = float(quantile_map(av, bv, threshold_a)[0])
    grid = quantile_map(av, bv, MAP_GRID)
    rate_a, rate_b = float(np.mean(av >= threshold_a)), float(np.mean(bv >= t_b))
    if abs(rate_a - rate_b) > RATE_GAP:
        notes.append(
            f"{name_b}'s values are tied too coarsely to match {name_a}'s pass rate "
            f"{rate_a:.3f} at {threshold_a:g}: the closest it reaches is {rate_b:.3f}"
        )
    out.update(
        threshold_to=rounded(t_b),
        pass_agreement_at_translated=rounded(_agreement(av, bv, threshold_a, t_b)),
        pass_rate_from=rounded(rate_a),
        pass_rate_to=rounded(rate_b),
        map=[[t, rounded(float(v))] for t, v in zip(MAP_GRID, grid)],
        notes=notes,
    )
    return out


def translate_threshold(
    a: Numbers, b: Numbers, threshold_a: float, names: tuple[str, str] = ("a", "b")
) -> float | Undefined:
    """Just T(threshold_a), or ``Undefined`` with the reason (n < 3 or a constant side),
    the sides named ``names`` in the reason (the backends, for a person reading it)."""
    why = undefined_reason(a, b, names)
    if why:
        return Undefined(why)
    return float(quantile_map(a, b, threshold_a)[0])
