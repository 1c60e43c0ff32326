"""Statistics on degenerate inputs, each against an independent implementation (issue 45):
constant data (with the floating-point noise real scores carry: 10/3 · 3, the mean of 7.1s),
two values, one flip, k-of-n fractions. A statistic is either the reference's number or
"undefined" with a true reason — never a number built on noise (a power analysis asking for
1.7e33 samples, an ICC of −8.6e30, an alpha of 1.75)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from unified.analysis.reliability import icc_oneway, krippendorff_alpha
from unified.analysis.stats import auc, cohen_kappa, is_undefined, n_for_power, pearson, spearman

krippendorff = pytest.importorskip("krippendorff")
pingouin = pytest.importorskip("pingouin")
power = pytest.importorskip("statsmodels.stats.power")

THIRD = 10 / 3
NOISE = [THIRD, 0.1 * 3 * 10 / 3 * 10 / 10, 10 / 3 * 3 / 3]  # 10/3 spelled three ways: equal up to 1e-15
DEGENERATE = {
    "constant": [7.1] * 6,
    "constant up to float noise": [7.1, 0.71 * 10, 71 / 10, 7.1 + 1e-15, 7.1, 7.1 - 1e-15],
    "thirds up to float noise": NOISE * 2,
    "two values": [0.0, 10.0, 0.0, 10.0, 0.0, 10.0],
    "one flip": [10.0, 10.0, 10.0, 10.0, 10.0, 0.0],
    "k-of-n fractions": [10 * k / 3 for k in (0, 1, 2, 3, 1, 2)],
}


def _ref_or_none(fn, *args):
    """The reference's number, or None where it has none (nan or an exception)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = float(fn(*args))
        except (ValueError, ZeroDivisionError):
            return None
    return None if np.isnan(value) else value


def _same(ours, ref, tol=1e-9):
    if ref is None:
        return is_undefined(ours)
    return not is_undefined(ours) and abs(ours - ref) <= tol


@pytest.mark.parametrize("name", list(DEGENERATE))
@pytest.mark.parametrize("other", list(DEGENERATE))
def test_correlations_match_scipy_or_say_undefined(name, other):
    x, y = DEGENERATE[name], DEGENERATE[other]
    constant = lambda v: np.ptp(np.round(v, 9)) == 0
    ref_p = None if constant(x) or constant(y) else _ref_or_none(lambda a, b: sp.pearsonr(a, b)[0], x, y)
    ref_s = None if constant(x) or constant(y) else _ref_or_none(lambda a, b: sp.spearmanr(a, b)[0], x, y)
    assert _same(pearson(x, y), ref_p), (pearson(x, y), ref_p)
    assert _same(spearman(x, y), ref_s), (spearman(x, y), ref_s)


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_kappa_and_auc_match_sklearn_or_say_undefined(name):
    scores = DEGENERATE[name]
    verdicts = [v >= 5.0 for v in scores]
    labels = [True, False, True, False, True, True]
    ref_k = None if len(set(verdicts)) < 2 else _ref_or_none(cohen_kappa_score, verdicts, labels)
    assert _same(cohen_kappa(verdicts, labels), ref_k)
    # a constant score ranks nothing: undefined here (sklearn says 0.5)
    ref_a = None if np.ptp(np.round(scores, 9)) == 0 else _ref_or_none(roc_auc_score, labels, scores)
    assert _same(auc(scores, labels), ref_a)


def _table(values, raters=3):
    """n units rated by ``raters`` coders: unit i gets values[i] from each, but the last
    coder of every other unit shifted by the k-of-n pattern (so some tables vary)."""
    return [[v] * raters for v in values]


@pytest.mark.parametrize("name", list(DEGENERATE))
@pytest.mark.parametrize("level", ["interval", "nominal"])
def test_krippendorff_alpha_matches_the_reference_and_never_leaves_its_range(name, level):
    values = DEGENERATE[name]
    tables = {
        "agree": _table(values),
        "one rater off": [[v, v, (v + 5.0) % 10.0] for v in values],
        "rotated": [
            [values[i], values[(i + 1) % len(values)], values[(i + 2) % len(values)]] for i in range(len(values))
        ],
    }
    for kind, table in tables.items():
        if level == "nominal":
            table = [[v >= 5.0 for v in unit] for unit in table]
        ours = krippendorff_alpha(table, level)
        data = np.asarray(table, dtype=float).T
        constant = np.ptp(np.round(data, 9)) == 0
        ref = (
            None
            if constant
            else _ref_or_none(lambda d: krippendorff.alpha(reliability_data=d, level_of_measurement=level), data)
        )
        assert _same(ours, ref, tol=1e-7), (kind, ours, ref)
        assert is_undefined(ours) or ours <= 1.0


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_icc_matches_pingouin_or_says_undefined_with_the_true_reason(name):
    values = DEGENERATE[name]
    tables = {
        "repeats agree": [[v, v] for v in values],
        "repeats differ": [[v, (v + 2.5) % 10.0] for v in values],
        "equal means": [[0.0, 10.0] if i % 2 else [10.0, 0.0] for i, _ in enumerate(values)],
    }
    for kind, table in tables.items():
        out = icc_oneway(table)
        x = np.round(np.asarray(table, dtype=float), 9)
        rows = [(i, j, x[i, j]) for i in range(x.shape[0]) for j in range(x.shape[1])]
        df = pd.DataFrame(rows, columns=["s", "r", "v"])
        if np.ptp(x) == 0:  # nothing varies: both undefined, said so
            assert is_undefined(out["icc1"]) and "no variance" in out["icc1"].reason, kind
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = pingouin.intraclass_corr(df, targets="s", raters="r", ratings="v").set_index("Type")["ICC"]
        assert _same(out["icc1"], float(ref["ICC(1,1)"]), tol=1e-7), (kind, out, ref)
        if np.ptp(x.mean(axis=1)) == 0:  # equal means: ICC(1,1) is its floor, ICC(1,k) divides by 0
            assert out["icc1"] == pytest.approx(-1.0) and "means are all equal" in out["icc1k"].reason
        else:
            assert _same(out["icc1k"], float(ref["ICC(1,k)"]), tol=1e-7), (kind, out, ref)


@pytest.mark.parametrize(
    "diffs",
    [
        [0.1, -0.1, 0.1 + 1e-16, -0.1],  # mean at float noise: no effect, not 1.7e33 samples
        [0.1 * 3, 0.3, 0.3],  # sd at float noise: no variance, not n = 1
        [THIRD, 10 / 3, 10 / 3 * 3 / 3],
        [0.5, 1.0, -0.2, 0.8, 0.3],
        [2.5, 0.0, 2.5, 5.0],
    ],
)
def test_n_for_power_matches_statsmodels_or_says_undefined(diffs):
    d = np.asarray(diffs, dtype=float)
    rounded = np.round(d, 9)
    ours = n_for_power(diffs)
    if np.round(rounded.mean(), 9) == 0 or np.ptp(rounded) == 0:
        assert is_undefined(ours)
        return
    effect = abs(d.mean()) / d.std(ddof=1)
    ref = power.NormalIndPower().solve_power(effect_size=effect, alpha=0.05, power=0.8, ratio=0.0)
    assert ours == np.ceil(ref)
