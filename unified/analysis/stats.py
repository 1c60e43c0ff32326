"""The statistics every comparison reports, the one bootstrap, and the one way to say that
a statistic cannot be computed.

Undefined, with a reason (the one convention of ``crosscheck``, ``diff``, ``calibration``,
``translate`` and ``migrate``): a statistic that cannot be computed is the string
``"undefined"`` — never None, never NaN (JSON cannot carry NaN and it silently poisons every
mean it touches). In Python it is an ``Undefined``, a ``str`` equal to ``"undefined"`` that
also carries ``.reason``; whoever writes it into a result puts ``"<name> undefined:
<reason>"`` into the ``notes`` list of the object that holds it (``note_undefined``). So the
JSON holds ``"undefined"`` where the number would be, and the why one level up.

Rules: with n < 3 nothing is reported (two points always lie on a line); a correlation,
a kappa or an AUC needs at least 2 distinct values on each side (it divides by a
variance). A mean, a share, a difference need no variance and stay defined for constant
values.

Floating point: scores are on 0–10 and arithmetic on them errs by about 1e-15 of their
size (10/3 · 3 is not 10; the mean of three 7.1s is not 7.1). A quantity a statistic
divides by is therefore compared with zero at the data's own scale, never with ``== 0``::

    negligible(x, scale)  ⇔  |x| ≤ REL_TOL · scale,   REL_TOL = 1e-9,  scale = max(1, max |v|)

(squared quantities against scale²). Values that differ by less than that are one value:
a "difference" of 1e-16 is noise, and a statistic built on it (a power analysis asking for
1.7e33 samples, an ICC of −8.6e30, an alpha of 1.75) is a number without meaning.

The statistics are written out here (a few lines each, formula in the docstring) rather
than called from scipy, so a reader sees exactly what is reported; the tests check them
against scipy and scikit-learn. numpy only.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Callable, Sequence

import numpy as np

# a 1-D run of numbers: a list, a tuple or a NumPy array
Numbers = Sequence[Any] | np.ndarray

UNDEFINED = "undefined"
MIN_N = 3
#: relative size under which a floating-point quantity is noise (module docstring)
REL_TOL = 1e-9


def data_scale(*arrays: Numbers) -> float:
    """max(1, the largest |value|) of ``arrays``: the size floating-point noise is relative to."""
    biggest = [float(np.max(np.abs(np.asarray(a, dtype=float)))) for a in arrays if len(a)]
    return max([1.0, *biggest])


def negligible(x: float, scale: float) -> bool:
    """``|x| ≤ REL_TOL · scale``: zero up to floating-point noise at the data's scale (pass
    scale² for a squared quantity such as a variance)."""
    return abs(x) <= REL_TOL * scale


def is_constant(values: Numbers) -> bool:
    """Every value the same: exactly for categories, up to noise at the data's scale for
    numbers (7.1 and 7.100000000000001 are one value)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu":  # booleans, text: categories
        return bool((arr == arr.flat[0]).all())
    num = arr.astype(float)
    return negligible(float(num.max() - num.min()), data_scale(num))


class Undefined(str):
    """A statistic that cannot be computed: equal to (and serialised as) ``"undefined"``,
    with ``.reason`` saying why (``"n=2 < 3"``, ``"labels have a single distinct value"``)."""

    reason: str

    def __new__(cls, reason: str = "") -> "Undefined":
        obj = super().__new__(cls, UNDEFINED)
        obj.reason = reason
        return obj

    def __repr__(self) -> str:
        return f"Undefined({self.reason!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Undefined, (self.reason,))


Stat = float | str  # a number, or UNDEFINED


def is_undefined(x: Any) -> bool:
    """True for ``"undefined"`` (an ``Undefined`` or the plain string read back from JSON)."""
    return isinstance(x, str) and x == UNDEFINED


def note_undefined(notes: list[str], name: str, value: Any, fallback: str = "") -> Any:
    """Record why ``value`` is undefined as ``"<name> undefined: <reason>"`` in ``notes``
    (once), and return ``value`` unchanged, so a result is built and explained in one step."""
    if is_undefined(value):
        reason = getattr(value, "reason", "") or fallback
        line = f"{name} undefined: {reason}" if reason else f"{name} undefined"
        if line not in notes:
            notes.append(line)
    return value


def undefined_reason(x: Numbers, y: Numbers | None = None, names: tuple[str, str] = ("a", "b")) -> str | None:
    """Why a variance-based statistic of ``x`` (and ``y``) is undefined, or None if it is
    defined: n < 3, or fewer than 2 distinct values on either side."""
    n = len(x)
    if n < MIN_N:
        return f"n={n} < {MIN_N}"
    for name, v in zip(names, (x, y)):
        if v is None:
            continue
        arr = np.asarray(v)
        if is_constant(arr):
            return f"{name} has a single distinct value ({arr.flat[0].item()!r}) on all {n} samples"
    return None


def rankdata(x: Numbers) -> np.ndarray:
    """1-based ranks, ties given the average of the ranks they span
    (the ``average`` method: values 5, 7, 7, 9 rank 1, 2.5, 2.5, 4)."""
    a = np.asarray(x, dtype=float)
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    new_group = np.empty(len(a), dtype=bool)
    new_group[:1] = True
    np.not_equal(sorted_a[1:], sorted_a[:-1], out=new_group[1:])
    group = np.cumsum(new_group) - 1
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], len(a))  # exclusive
    mean_rank = (starts + 1 + ends) / 2.0  # mean of the 1-based ranks start+1 … end
    ranks = np.empty(len(a))
    ranks[order] = mean_rank[group]
    return ranks


def pearson(x: Numbers, y: Numbers) -> Stat:
    """Pearson correlation

        r = Σ (xᵢ − x̄)(yᵢ − ȳ) / √( Σ (xᵢ − x̄)² · Σ (yᵢ − ȳ)² )

    Undefined when n < 3 or either side is constant."""
    why = undefined_reason(x, y)
    if why:
        return Undefined(why)
    a = np.asarray(x, dtype=float) - np.mean(x)
    b = np.asarray(y, dtype=float) - np.mean(y)
    denom = math.sqrt(float(a @ a) * float(b @ b))
    if negligible(denom, len(a) * data_scale(x) * data_scale(y)):  # distinct values that cancel
        return Undefined("zero variance in floating point")
    return float(min(1.0, max(-1.0, float(a @ b) / denom)))


def spearman(x: Numbers, y: Numbers) -> Stat:
    """Spearman rank correlation: Pearson's r of the average ranks (ties share the mean
    of their ranks), ρ = r(rank(x), rank(y)). Undefined as for ``pearson``."""
    why = undefined_reason(x, y)
    if why:
        return Undefined(why)
    return pearson(rankdata(x), rankdata(y))


def cohen_kappa(a: Numbers, b: Numbers) -> Stat:
    """Cohen's kappa of two raters' pass/fail verdicts

        κ = (p_o − p_e) / (1 − p_e),   p_o = share of equal verdicts,
        p_e = p_a(pass)·p_b(pass) + p_a(fail)·p_b(fail)     (chance agreement)

    (Cohen 1960). Undefined when n < 3 or a rater gives one verdict throughout."""
    why = undefined_reason(a, b)
    if why:
        return Undefined(why)
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    p_e = pa * pb + (1 - pa) * (1 - pb)
    if negligible(1.0 - p_e, 1.0):
        return Undefined("chance agreement is 1")
    return (p_o - p_e) / (1 - p_e)


def auc(scores: Numbers, labels: Numbers) -> Stat:
    """ROC AUC of ``scores`` against binary ``labels`` (1 = positive), by Mann–Whitney:

        AUC = P(s⁺ > s⁻) + ½ P(s⁺ = s⁻)
            = (R⁺ − n⁺(n⁺ + 1)/2) / (n⁺ · n⁻)

    where R⁺ is the sum of the average ranks of the positives (a tie counts ½).
    Undefined when n < 3, when one class is missing, or when the scores are constant."""
    why = undefined_reason(scores, labels, ("scores", "labels"))
    if why:
        return Undefined(why)
    y = np.asarray(labels, dtype=float) > 0.5
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    r_pos = float(rankdata(scores)[y].sum())
    return (r_pos - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def balanced_accuracy(predicted: Numbers, labels: Numbers) -> Stat:
    """Mean of the recall on each class: ½ (TP/(TP+FN) + TN/(TN+FP)); 0.5 is chance.

    Undefined when n < 3 or the labels hold one class only (a constant prediction is
    fine: it scores 0.5)."""
    why = undefined_reason(labels, None, ("labels", ""))
    if why:
        return Undefined(why)
    y = np.asarray(labels, dtype=float) > 0.5
    p = np.asarray(predicted, dtype=bool)
    tpr = float((p & y).sum()) / float(y.sum())
    tnr = float((~p & ~y).sum()) / float((~y).sum())
    return (tpr + tnr) / 2.0


def bootstrap_ci(
    fn: Callable[..., Any], *arrays: Numbers, n: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | Undefined:
    """The one bootstrap: a seeded percentile interval of ``fn(*arrays)``.

    Draw ``n`` resamples of the rows with replacement (the same indices in every array, so
    pairs stay pairs), compute the statistic on each, and return its (1−level)/2 and
    (1+level)/2 quantiles (linear interpolation between order statistics):

        CI = [ q_{α/2}(θ*₁ … θ*ₙ),  q_{1−α/2}(θ*₁ … θ*ₙ) ],   α = 1 − level

    Seeded (``numpy.random.default_rng(seed)``), so the same data always give the same
    interval. The indices are drawn in chunks of at most 2 million, which consumes the
    generator exactly as one draw per resample would. Resamples where ``fn`` is undefined
    (one class drawn only) are skipped. Undefined with a reason when the arrays differ in
    length, hold fewer than 2 rows (a resample of one row is that row: the interval would
    claim certainty), or fewer than half of the resamples are usable.
    """
    cols = [np.asarray(a) for a in arrays]
    size = len(cols[0]) if cols else 0
    if any(len(c) != size for c in cols):
        return Undefined(f"arrays of different lengths {[len(c) for c in cols]}")
    if size < 2:
        return Undefined(f"n={size} < 2 rows to resample")
    rng = np.random.default_rng(seed)
    stats: list[float] = []
    step = max(1, min(n, 2_000_000 // size))  # bound memory: step × size indices at a time
    for start in range(0, n, step):
        for idx in rng.integers(0, size, size=(min(step, n - start), size)):
            value = fn(*(c[idx] for c in cols))
            if not isinstance(value, str):
                stats.append(float(value))
    if len(stats) < n / 2:
        return Undefined(f"only {len(stats)} of {n} resamples defined")
    lo, hi = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def mean(values: Numbers) -> Stat:
    """Arithmetic mean; undefined for no values."""
    if len(values) == 0:
        return Undefined("no values")
    return float(np.mean(np.asarray(values, dtype=float)))


def rounded(x: Any, digits: int = 4) -> Any:
    """Round numbers (also inside tuples/lists) for a readable JSON report; leave strings
    (``"undefined"``), None and the rest as they are."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, float):
        return round(x, digits)
    if isinstance(x, (tuple, list)):
        return [rounded(v, digits) for v in x]
    return x


# ---------------------------------------------------------------- probabilities vs labels


def brier(probs: Numbers, labels: Numbers) -> Stat:
    """Brier score of probabilities ``probs`` (here value/10) against binary ``labels``:

        BS = (1/n) Σ (pᵢ − yᵢ)²        0 is perfect; always 0.5 scores 0.25

    (Brier 1950; ``sklearn.metrics.brier_score_loss``). Undefined when n < 3 (no variance
    is needed: a constant forecast has a Brier score)."""
    n = len(labels)
    if n < MIN_N or len(probs) != n:
        return Undefined(f"n={n} < {MIN_N}" if n < MIN_N else f"{len(probs)} probabilities for {n} labels")
    p, y = np.asarray(probs, dtype=float), np.asarray(labels, dtype=float)
    return float(np.mean((p - y) ** 2))


def reliability_bins(probs: Numbers, labels: Numbers, bins: int = 10) -> list[dict[str, Any]]:
    """The reliability diagram's points: ``bins`` equal-width bins of [0, 1] (bin b holds
    b/B ≤ p < (b+1)/B, the last one p = 1 too), each non-empty bin with its ``count``, mean
    predicted probability ``p_mean`` and observed share of positives ``observed``."""
    p, y = np.asarray(probs, dtype=float), np.asarray(labels, dtype=float)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        m = idx == b
        if m.any():
            out.append(
                {
                    "bin": [b / bins, (b + 1) / bins],
                    "count": int(m.sum()),
                    "p_mean": float(p[m].mean()),
                    "observed": float(y[m].mean()),
                }
            )
    return out


def ece(probs: Numbers, labels: Numbers, bins: int = 10) -> Stat:
    """Expected calibration error over ``reliability_bins``:

        ECE = Σ_b (n_b / n) · | observed_b − p_mean_b |

    (Naeini et al. 2015; Guo et al. 2017): how far, on average over the samples, the stated
    probability is from the share of people who pass. Undefined when n < 3."""
    n = len(labels)
    if n < MIN_N or len(probs) != n:
        return Undefined(f"n={n} < {MIN_N}" if n < MIN_N else f"{len(probs)} probabilities for {n} labels")
    return float(sum(b["count"] / n * abs(b["observed"] - b["p_mean"]) for b in reliability_bins(probs, labels, bins)))


# ---------------------------------------------------------------- many comparisons


def holm(pvalues: Sequence[Any]) -> list[Any]:
    """Holm–Bonferroni adjusted p-values (Holm 1979), in the input's order. With the m
    defined p-values sorted p₍₁₎ ≤ … ≤ p₍ₘ₎::

        p̃₍ᵢ₎ = min(1, max_{j ≤ i} (m − j + 1) · p₍ⱼ₎)

    Rejecting p̃ ≤ α keeps the family-wise error rate ≤ α under any dependence. An
    ``"undefined"`` p-value stays undefined and does not count in m."""
    defined = [(float(p), i) for i, p in enumerate(pvalues) if not is_undefined(p)]
    out: list[Any] = list(pvalues)
    m, running = len(defined), 0.0
    for rank, (p, i) in enumerate(sorted(defined)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def sign_flip_p(diffs: Numbers, n_resamples: int = 10_000, seed: int = 0, exact_up_to: int = 16) -> Stat:
    """Two-sided p-value of the paired sign-flip (randomisation) test of mean(d) = 0.

    Under H₀ each dᵢ is as likely to be −dᵢ, so the statistic T = |mean(s·d)| over random
    signs s ∈ {±1}ⁿ is the null distribution::

        p = #{s : |mean(s·d)| ≥ |mean(d)|} / 2ⁿ                      (exact, n ≤ exact_up_to)
        p = (1 + #{b : |mean(s_b·d)| ≥ |mean(d)|}) / (1 + B)          (B seeded random signs)

    No normality assumed (judge scores are coarse and skewed). Ties within 1e-12 count as
    "as extreme". Undefined when n < 3 (the exact test cannot get below 0.25 anyway)."""
    d = np.asarray(diffs, dtype=float)
    n = len(d)
    if n < MIN_N:
        return Undefined(f"n={n} < {MIN_N} paired samples")
    observed = abs(float(d.mean())) - 1e-12
    if n <= exact_up_to:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        return float(np.mean(np.abs(signs @ d) / n >= observed))
    rng = np.random.default_rng(seed)
    hits = 0
    # at most 2 million signs at a time (16 MB; 1,000 rows of 100k pairs were 800 MB per
    # array): rows drawn in chunks consume the generator exactly as one draw would
    step = max(1, min(1000, 2_000_000 // n))
    for start in range(0, n_resamples, step):
        signs = rng.choice((-1.0, 1.0), size=(min(step, n_resamples - start), n))
        hits += int((np.abs(signs @ d) / n >= observed).sum())
    return (1 + hits) / (1 + n_resamples)


def n_for_power(diffs: Numbers, power: float = 0.8, alpha: float = 0.05) -> Stat:
    """Samples needed for a two-sided paired test at level ``alpha`` to detect the
    observed mean difference with probability ``power`` (normal approximation)::

        n = ⌈ ((z_{1−α/2} + z_{power}) · s_d / |d̄|)² ⌉

    with d̄ and s_d (ddof 1) the observed differences' mean and standard deviation. A
    planning figure: it treats the observed effect as the true one. Undefined when n < 3,
    when d̄ = 0 (no effect to detect) or s_d = 0 (every difference equal), both at the
    data's scale (``negligible``)."""
    d = np.asarray(diffs, dtype=float)
    if len(d) < MIN_N:
        return Undefined(f"n={len(d)} < {MIN_N} paired samples")
    mean, sd, scale = float(d.mean()), float(d.std(ddof=1)), data_scale(d)
    if negligible(mean, scale):
        return Undefined("the observed difference is 0: no effect to detect")
    if negligible(sd, scale):
        return Undefined("every paired difference is the same: no variance to plan with")
    z = NormalDist()
    k = z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)
    return float(math.ceil((k * sd / abs(mean)) ** 2))
