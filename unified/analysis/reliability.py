"""Reliability: how far several ratings of the same samples agree — across backends
(Krippendorff's alpha) and across repeats of one backend (test–retest ICC, flips).

Krippendorff's alpha (Krippendorff 2004, *Content Analysis*, ch. 11; "Computing
Krippendorff's Alpha-Reliability", 2011) over units u (samples), each rated by m_u ≥ 2
coders (backends; a unit with fewer values is not pairable and is left out)::

    α = 1 − D_o / D_e
    D_o = (1/n) Σ_u  1/(m_u − 1) · Σ_{i≠j ∈ u} δ(v_i, v_j)          observed disagreement
    D_e = 1/(n(n − 1)) · Σ_{i≠j over all n pairable values} δ(v_i, v_j)  expected by chance

with n = Σ_u m_u, δ(a, b) = (a − b)² for *interval* data (our 0–10 values) and [a ≠ b] for
*nominal* data (pass/fail). The sums over ordered pairs are computed in closed form:
Σ_{i≠j}(v_i − v_j)² = 2m Σ(v − v̄)² (centred: never below 0, so α ≤ 1 by construction —
the uncentred 2(m Σv² − (Σv)²) loses its digits to cancellation and gave α = 1.75 on
near-constant data) and Σ_{i≠j}[v_i ≠ v_j] = m² − Σ_c m_c². α = 1 is perfect agreement, 0
is what chance gives, < 0 systematic disagreement. D_e at floating-point noise
(``unified.analysis.stats.negligible``) is D_e = 0: no disagreement is possible.

Test–retest ICC — the one-way random-effects, single-measurement form ICC(1,1) of Shrout &
Fleiss (1979): repeats are exchangeable draws (no "repeat 1" effect is meaningful: the seeds
are arbitrary), so the model is x_ij = μ + s_i + e_ij. With n samples × k repeats::

    MSB = k Σ_i (x̄_i − x̄)² / (n − 1)           between samples
    MSW = Σ_i Σ_j (x_ij − x̄_i)² / (n(k − 1))     within a sample (the judge's own noise)
    ICC(1,1) = (MSB − MSW) / (MSB + (k − 1) MSW)
    ICC(1,k) = (MSB − MSW) / MSB                  reliability of the mean of k (what Score.value is)

Undefined (``unified.analysis.stats``'s rule) with n < 3, k < 2, or no variance at all. With
equal sample means but noise within samples (MSB = 0 < MSW) ICC(1,1) is −1/(k − 1), its
floor — the repeats disagree more than the samples differ — and ICC(1,k) is undefined (it
divides by MSB). MSB and MSW are compared with zero at the data's scale, never exactly.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from unified.analysis.stats import MIN_N, Stat, Undefined, data_scale, negligible


def _units(ratings: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Each unit's non-missing values (None and NaN are missing), pairable units only."""
    out = []
    for unit in ratings:
        vals = [v for v in unit if v is not None and not (isinstance(v, float) and np.isnan(v))]
        if len(vals) >= 2:
            out.append(vals)
    return out


def krippendorff_alpha(ratings: Sequence[Sequence[Any]], level: str = "interval", coders: str = "backends") -> Stat:
    """Krippendorff's alpha (module docstring) of ``ratings[u]`` = the values unit u got
    (one per coder, None where a coder gave none). ``level``: "interval" (numbers) or
    "nominal" (any hashable categories). Undefined with fewer than 3 pairable units, or
    when every pairable value is the same (D_e = 0). ``coders``: what the coders are, for
    the reason ("backends", "people")."""
    if level not in ("interval", "nominal"):
        raise ValueError(f"level must be 'interval' or 'nominal', not {level!r}")
    units = _units(ratings)
    if len(units) < MIN_N:
        return Undefined(f"{len(units)} sample(s) rated by ≥ 2 {coders} < {MIN_N}")
    n = sum(len(u) for u in units)
    d_o = sum(_pair_sum(u, level) / (len(u) - 1) for u in units) / n
    d_e = _pair_sum([v for u in units for v in u], level) / (n * (n - 1))
    scale = data_scale([v for u in units for v in u]) ** 2 if level == "interval" else 1.0
    if negligible(d_e, scale):
        return Undefined("every value is the same: no disagreement is possible (D_e = 0)")
    return 1.0 - d_o / d_e


def _pair_sum(values: Sequence[Any], level: str) -> float:
    """Σ over ordered pairs i ≠ j of δ(v_i, v_j), in closed form (module docstring)."""
    m = len(values)
    if level == "interval":
        v = np.asarray(values, dtype=float)
        centred = v - v.mean()
        return float(2.0 * m * float(centred @ centred))
    counts: dict[Any, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return float(m * m - sum(c * c for c in counts.values()))


def icc_oneway(table: Sequence[Sequence[float]]) -> dict[str, Stat]:
    """{"icc1": ICC(1,1), "icc1k": ICC(1,k), "n", "k"} of an n × k table (row = sample,
    column = repeat; module docstring). Rows must all have k values."""
    x = np.asarray(table, dtype=float)
    if x.ndim != 2:
        none = Undefined("no complete rows of repeats")
        return {"icc1": none, "icc1k": none, "n": 0, "k": 0}
    n, k = x.shape
    out: dict[str, Stat] = {"n": n, "k": k}
    why: str | None = (
        f"n={n} < {MIN_N} samples with every repeat scored" if n < MIN_N else f"k={k} < 2 repeats" if k < 2 else None
    )
    if why is not None:
        out["icc1"] = out["icc1k"] = Undefined(why)
        return out
    out.update(_icc_from_squares(x))
    return out


def _icc_from_squares(x: np.ndarray) -> dict[str, Stat]:
    """ICC(1,1) and ICC(1,k) of an n × k table from its mean squares (module docstring),
    each undefined when what it divides by is noise at the data's scale."""
    n, k = x.shape
    row_means = x.mean(axis=1)
    msb = k * float(((row_means - x.mean()) ** 2).sum()) / (n - 1)
    msw = float(((x - row_means[:, None]) ** 2).sum()) / (n * (k - 1))
    scale = data_scale(x.ravel()) ** 2
    msb = 0.0 if negligible(msb, scale) else msb
    msw = 0.0 if negligible(msw, scale) else msw
    if msb == 0.0 and msw == 0.0:
        none = Undefined("every sample scored the same on every repeat: no variance to split")
        return {"icc1": none, "icc1k": none}
    icc1k: Stat = (
        (msb - msw) / msb
        if msb > 0.0
        else Undefined("the samples' means are all equal: ICC(1,k) divides by the between-sample variance")
    )
    return {"icc1": (msb - msw) / (msb + (k - 1) * msw), "icc1k": icc1k}


def flip_probability(passes: Sequence[bool]) -> Stat:
    """The probability that two different repeats of a sample disagree on pass/fail,
    estimated without bias from k repeats of which p passed::

        P(flip) = 2 p (k − p) / (k (k − 1))

    (the share of ordered pairs of distinct repeats with opposite verdicts). 0 when the
    repeats agree; at most k/(2(k − 1)) (> ½ for small k). Undefined with k < 2."""
    k = len(passes)
    if k < 2:
        return Undefined(f"k={k} < 2 repeats")
    p = sum(bool(v) for v in passes)
    return 2.0 * p * (k - p) / (k * (k - 1))


def repeat_summary(values: Sequence[float], threshold: float) -> dict[str, Any]:
    """One sample's repeats: mean, spread (sample standard deviation, ddof 1; undefined
    for one value: a single scored repeat says nothing of its spread, and a 0 would count
    as perfectly stable), range, the share passing (value ≥ ``threshold``),
    ``flip_probability`` and ``unstable`` (the verdict is not the same on every repeat)."""
    v = np.asarray(values, dtype=float)
    passes = [bool(x >= threshold) for x in v]
    return {
        "n": len(v),
        "mean": float(v.mean()),
        "spread": float(v.std(ddof=1)) if len(v) > 1 else Undefined("one scored repeat: no spread"),
        "range": float(v.max() - v.min()),
        "pass_share": sum(passes) / len(v),
        "flip_probability": flip_probability(passes),
        "unstable": bool(0 < sum(passes) < len(v)),
    }


def alpha_for(
    per_backend: Mapping[str, Mapping[str, Any]], level: str = "interval", coders: str = "backends"
) -> tuple[Stat, int]:
    """Krippendorff's alpha over the coders in ``per_backend`` ({backend: {sample: value}};
    ``coders`` names them in a reason) and the number of samples at least two of them rated."""
    ids = sorted({sid for vals in per_backend.values() for sid in vals})
    table = [[per_backend[b].get(sid) for b in sorted(per_backend)] for sid in ids]
    return krippendorff_alpha(table, level, coders), len(_units(table))


def backends_alpha(per_backend: Mapping[str, Mapping[str, Any]], thresholds: Mapping[str, float]) -> dict[str, Any]:
    """Krippendorff's alpha over every backend in ``per_backend`` ({backend: {sample:
    Score}}; failures are missing values): ``interval`` on the 0–10 values, ``nominal`` on
    pass/fail (value ≥ that backend's threshold), ``n`` samples rated by ≥ 2 backends, and
    ``notes`` for an undefined alpha."""
    from unified.analysis.stats import note_undefined, rounded

    values = {b: {sid: float(s.value) for sid, s in scores.items() if s.ok} for b, scores in per_backend.items()}
    verdicts = {b: {sid: v >= thresholds[b] for sid, v in vals.items()} for b, vals in values.items()}
    interval, n = alpha_for(values, "interval")
    nominal, _ = alpha_for(verdicts, "nominal")
    notes: list[str] = []
    return {
        "backends": sorted(per_backend),
        "n": n,
        "interval": note_undefined(notes, "alpha (interval)", rounded(interval)),
        "nominal": note_undefined(notes, "alpha (nominal, pass/fail)", rounded(nominal)),
        "notes": notes,
    }
