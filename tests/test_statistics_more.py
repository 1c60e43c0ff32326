"""Issue 22's statistics against independent implementations or published worked examples:
Krippendorff's alpha (Krippendorff 2011's reliability-data example), ICC (Shrout & Fleiss
1979, table 2), the flip probability (enumeration), Brier and ECE (scikit-learn), isotonic
regression (scikit-learn), the sign-flip test (scipy's permutation_test), Holm (the worked
example of Holm 1979's procedure) and the power calculation (scipy's noncentral t)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
import scipy.stats as ss
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss

from unified.analysis.isotonic import cross_validated, isotonic_fit, isotonic_predict
from unified.analysis.reliability import (
    alpha_for,
    flip_probability,
    icc_oneway,
    krippendorff_alpha,
    repeat_summary,
)
from unified.analysis.stats import (
    UNDEFINED,
    brier,
    ece,
    holm,
    n_for_power,
    reliability_bins,
    sign_flip_p,
)

_ = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
# observers, twelve units, missing values; published α: nominal 0.743, interval 0.849
KRIPPENDORFF_2011 = list(
    zip(
        [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
        [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
    )
)

# Shrout & Fleiss (1979), table 2: six targets rated by four judges; published
# ICC(1,1) = 0.17, ICC(1,4) = 0.44
SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def test_krippendorff_alpha_reproduces_the_published_example():
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "interval") == pytest.approx(0.849, abs=5e-4)
    # unit 12 has a single value: not pairable, so it changes nothing
    assert krippendorff_alpha(KRIPPENDORFF_2011[:11], "interval") == pytest.approx(
        krippendorff_alpha(KRIPPENDORFF_2011, "interval")
    )


def test_krippendorff_alpha_by_pairs_matches_the_closed_form():
    """The coincidence-matrix definition, written out pair by pair, on random data with gaps."""
    rng = np.random.default_rng(3)
    table = [[None if rng.random() < 0.2 else float(rng.integers(0, 11)) for _c in range(3)] for _u in range(25)]
    units = [[v for v in u if v is not None] for u in table]
    units = [u for u in units if len(u) >= 2]
    n = sum(len(u) for u in units)
    d_o = (
        sum(sum((a - b) ** 2 for i, a in enumerate(u) for j, b in enumerate(u) if i != j) / (len(u) - 1) for u in units)
        / n
    )
    flat = [v for u in units for v in u]
    d_e = sum((a - b) ** 2 for i, a in enumerate(flat) for j, b in enumerate(flat) if i != j) / (n * (n - 1))
    assert krippendorff_alpha(table) == pytest.approx(1 - d_o / d_e, abs=1e-12)


def test_krippendorff_alpha_edge_cases():
    assert krippendorff_alpha([[1, 1], [1, 2]]) == UNDEFINED  # two pairable units
    const = krippendorff_alpha([[5, 5], [5, 5], [5, 5, 5]])
    assert const == UNDEFINED and "D_e = 0" in const.reason
    assert krippendorff_alpha([[0, 0], [10, 10], [5, 5]]) == pytest.approx(1.0)
    assert krippendorff_alpha([[True, True], [False, False], [True, False]], "nominal") < 1
    with pytest.raises(ValueError):
        krippendorff_alpha([[1, 2]], "ordinal")
    alpha, n = alpha_for({"a": {"s1": 1.0, "s2": 5.0, "s3": 9.0}, "b": {"s1": 2.0, "s2": 5.0, "s3": 8.0, "s4": 1.0}})
    assert n == 3 and 0.9 < alpha <= 1


def test_icc_reproduces_shrout_fleiss():
    icc = icc_oneway(SHROUT_FLEISS)
    assert icc["icc1"] == pytest.approx(0.17, abs=5e-3)
    assert icc["icc1k"] == pytest.approx(0.44, abs=5e-3)
    assert (icc["n"], icc["k"]) == (6, 4)


def test_icc_matches_the_anova_by_hand():
    """MSB and MSW from scipy's one-way ANOVA F (F = MSB/MSW): ICC(1,1) = (F − 1)/(F + k − 1)."""
    rng = np.random.default_rng(5)
    table = rng.normal(0, 2, (15, 1)) + rng.normal(0, 1, (15, 3))
    f = ss.f_oneway(*table).statistic
    k = table.shape[1]
    assert icc_oneway(table)["icc1"] == pytest.approx((f - 1) / (f + k - 1), abs=1e-10)
    assert icc_oneway(table)["icc1k"] == pytest.approx(1 - 1 / f, abs=1e-10)


def test_icc_undefined_cases():
    assert icc_oneway([[1, 2], [3, 4]])["icc1"] == UNDEFINED
    assert icc_oneway([[1], [2], [3]])["icc1"] == UNDEFINED
    assert "no variance" in icc_oneway([[5, 5], [5, 5], [5, 5]])["icc1"].reason
    assert icc_oneway([])["icc1"] == UNDEFINED


@pytest.mark.parametrize(
    "passes",
    [
        [True, True, True],
        [True, False, False],
        [True, False, True, False],
        [False] * 5,
        [True, False, False, False, False],
    ],
)
def test_flip_probability_is_the_share_of_disagreeing_pairs(passes):
    pairs = [(a, b) for a, b in combinations(passes, 2)]
    assert flip_probability(passes) == pytest.approx(sum(a != b for a, b in pairs) / len(pairs))
    assert flip_probability([True]) == UNDEFINED


def test_repeat_summary():
    s = repeat_summary([6.0, 4.0, 8.0], 5.0)
    assert s["mean"] == pytest.approx(6.0) and s["spread"] == pytest.approx(2.0)
    assert s["unstable"] is True and s["flip_probability"] == pytest.approx(2 / 3)
    assert repeat_summary([7.0, 7.0, 7.0], 5.0)["unstable"] is False


def test_brier_and_ece_match_sklearn():
    rng = np.random.default_rng(11)
    p = rng.random(200)  # off the bin edges: scikit-learn closes bins on the right, we on the left
    y = (rng.random(200) < p * 0.8).astype(int)
    assert brier(p, y) == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    # ECE from scikit-learn's reliability curve with the same uniform bins, weighted by counts
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    bins = reliability_bins(p, y)
    assert [b["observed"] for b in bins] == pytest.approx(prob_true)
    assert [b["p_mean"] for b in bins] == pytest.approx(prob_pred)
    counts = np.array([b["count"] for b in bins])
    assert ece(p, y) == pytest.approx(float((counts / 200 * np.abs(prob_true - prob_pred)).sum()))
    # a value on an edge (0.7 = a 7 on 0–10) belongs to the bin it starts
    assert reliability_bins([0.7, 1.0, 0.0], [1, 1, 0])[1]["bin"] == [0.7, 0.8]
    assert reliability_bins([0.7, 1.0, 0.0], [1, 1, 0])[2]["bin"] == [0.9, 1.0]
    assert brier([0.5], [1]) == UNDEFINED and ece([0.5, 0.5], [1, 0]) == UNDEFINED


def test_isotonic_matches_sklearn_with_ties():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 11, 80).astype(float)
    y = (rng.random(80) < x / 12).astype(float)
    xs, ys = isotonic_fit(x, y)
    ref = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(x, y)
    grid = np.linspace(-1, 11, 97)
    assert isotonic_predict(xs, ys, grid) == pytest.approx(ref.predict(grid), abs=1e-12)
    assert all(a <= b for a, b in zip(ys, ys[1:]))


def test_cross_validated_error():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 11, 60).astype(float)
    y = (x >= 6).astype(float)  # a clean step: the map must beat value/10 out of sample
    cv = cross_validated(x, y)
    assert cv["brier_calibrated"] < cv["brier_raw"]
    assert cross_validated([1, 2, 3], [0, 1, 1])["brier_calibrated"] == UNDEFINED
    assert cross_validated(x, np.ones(60))["brier_raw"] == UNDEFINED


def test_sign_flip_matches_scipy_exact_and_sampled():
    rng = np.random.default_rng(1)
    small = rng.normal(0.4, 1, 12)
    exact = ss.permutation_test((small,), np.mean, permutation_type="samples", n_resamples=np.inf)
    assert sign_flip_p(small) == pytest.approx(exact.pvalue, abs=1e-12)
    big = rng.normal(0.3, 1, 60)
    sampled = ss.permutation_test((big,), np.mean, permutation_type="samples", n_resamples=20000, random_state=0)
    assert sign_flip_p(big, n_resamples=20000) == pytest.approx(sampled.pvalue, abs=0.015)
    assert sign_flip_p([1.0, 2.0]) == UNDEFINED
    assert sign_flip_p([0.0, 0.0, 0.0]) == pytest.approx(1.0)


def test_sign_flip_on_many_pairs_is_the_one_draw_p_in_bounded_memory():
    # a diff of two 100k-sample runs drew 1,000 rows of signs at once: 800 MB per array
    import tracemalloc

    n, resamples = 50_000, 400
    d = np.random.default_rng(3).normal(0.005, 1, n)
    signs = 2.0 * np.random.default_rng(0).integers(0, 2, size=(resamples, n)) - 1.0  # the one draw
    expected = (1 + int((np.abs(signs @ d) / n >= abs(d.mean()) - 1e-12).sum())) / (1 + resamples)
    del signs
    tracemalloc.start()
    try:
        p = sign_flip_p(d, n_resamples=resamples)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert p == expected
    assert peak < 60e6, f"{peak / 1e6:.0f} MB for {n} pairs"


def test_holm_worked_example():
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005, 0.01, 0.03, 0.04 → 4·0.005, 3·0.01,
    # 2·0.03, max(0.06, 1·0.04) = 0.02, 0.03, 0.06, 0.06; an undefined p stays undefined
    assert holm([0.01, 0.04, 0.03, 0.005, UNDEFINED]) == pytest.approx([0.03, 0.06, 0.06, 0.02, UNDEFINED])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_power_matches_the_noncentral_t():
    """At the n it returns, a paired t-test has about 80 % power (scipy's noncentral t);
    at a third of it, clearly less."""
    rng = np.random.default_rng(8)
    d = rng.normal(0.5, 2.0, 50)
    n = int(n_for_power(d))
    effect = np.mean(d) / np.std(d, ddof=1)

    def power(m: int) -> float:
        crit = ss.t.ppf(0.975, m - 1)
        nc = effect * np.sqrt(m)
        return float(1 - ss.nct.cdf(crit, m - 1, nc) + ss.nct.cdf(-crit, m - 1, nc))

    assert 0.77 <= power(n) <= 0.83
    assert power(n // 3) < 0.5
    assert n_for_power([0.0, 1.0, -1.0]) == UNDEFINED
    assert n_for_power([1.0, 1.0, 1.0]) == UNDEFINED


# ---------------------------------------------------------------- in the cross-check and the report


def _labelled(n=20):
    from unified.sample import Sample
    from unified.scores import Score

    samples, scores = {}, []
    for i in range(n):
        y = int(i % 3 != 0)  # mixed: a third fail
        sid = f"s{i}"
        samples[sid] = Sample(user_input=f"q{i}", id=sid, metadata={"labels": {"faithfulness": y}})
        scores += [
            Score(
                metric="faithfulness", backend="good", sample_id=sid, value=(7.0 + i % 3) if y else 2.0, threshold=5.0
            ),
            Score(
                metric="faithfulness",
                backend="yes_man",
                sample_id=sid,
                value={0: 9.0, 1: 8.0}.get(i, 10.0),
                threshold=5.0,
            ),
            Score(metric="faithfulness", backend="coarse", sample_id=sid, value=10.0 if y else 0.0, threshold=5.0),
        ]
    return samples, scores


def test_crosscheck_reports_alpha_brier_ece_and_collapse():
    import json

    from unified.analysis.crosscheck import crosscheck, render_crosscheck

    samples, scores = _labelled()
    res = crosscheck(scores, samples, bootstrap=50)
    json.dumps(res, allow_nan=False)
    m = res["metrics"]["faithfulness"]
    by_b = {b: {s.sample_id: s.value for s in scores if s.backend == b} for b in ("coarse", "good", "yes_man")}
    want = krippendorff_alpha([[by_b[b][f"s{i}"] for b in sorted(by_b)] for i in range(20)])
    assert m["alpha"]["interval"] == pytest.approx(round(want, 4))
    assert m["alpha"]["backends"] == ["coarse", "good", "yes_man"] and m["alpha"]["n"] == 20
    h = m["human"]["backends"]
    y = [int(i % 3 != 0) for i in range(20)]
    assert h["good"]["brier"] == pytest.approx(
        round(brier_score_loss(y, [by_b["good"][f"s{i}"] / 10 for i in range(20)]), 4)
    )
    assert h["good"]["collapse"]["flag"] is False
    assert h["yes_man"]["collapse"]["flag"] is True  # 90 % at 10 while people fail a third
    assert h["yes_man"]["collapse"]["share_at_end"] == pytest.approx(0.9) and h["yes_man"]["collapse"]["end"] == 10
    assert h["coarse"]["collapse"]["flag"] is True  # two distinct values, however right they are
    assert any(n.startswith("collapse: ") for n in h["yes_man"]["notes"])
    assert sum(b["count"] for b in h["good"]["reliability"]) == 20
    text = render_crosscheck(res, width=200)
    assert (
        "Krippendorff's alpha" in text and "COLLAPSED (90% at 10)" in text and "COLLAPSED (2 distinct values)" in text
    )


def test_collapse_is_undefined_when_people_agree_on_everything():
    from unified.analysis.calibration import collapse_flag

    notes: list[str] = []
    c = collapse_flag([10.0] * 10, [1.0] * 10, notes)
    assert c["flag"] == UNDEFINED and "not mixed" in notes[0]


def test_report_sections_for_alpha_jury_probability_and_retest(tmp_path):
    import json

    from unified.analysis.crosscheck import crosscheck
    from unified.report.html_compare import compare_sections

    samples, scores = _labelled()
    cc = crosscheck(scores, samples, jury="median", bootstrap=50)
    from unified.run.runindex import stamp_lines

    (tmp_path / "scores.jsonl").write_text("")  # the lines the file was computed from
    (tmp_path / "crosscheck.json").write_text(json.dumps(stamp_lines(tmp_path, cc)))
    retest = {
        "repeats": 3,
        "pairs": [
            {
                "metric": "faithfulness",
                "backend": "good",
                "k": 3,
                "n": 20,
                "icc1": 0.5,
                "icc1k": 0.75,
                "unstable_share": 0.1,
                "mean_spread": 1.2,
                "unstable": [{"sample_id": "s3", "values": [4.0, 6.0, 5.0], "flip_probability": 0.6667}],
            }
        ],
    }
    (tmp_path / "summary.json").write_text(json.dumps({"repeats": retest}))
    links, parts = compare_sections(tmp_path)
    anchors = [a for a, _ in links]
    assert anchors[:3] == ["retest", "alpha", "jury"] and "probability" in anchors
    page = "".join(parts)
    assert page.count("<svg") == 4  # one reliability diagram per backend, the jury included
    assert "s3" in page and "collapsed" in page and "(most)" in page


def test_a_single_scored_repeat_has_no_spread_and_is_left_out_of_the_shares():
    """A task whose other repeats failed had spread 0.0 and unstable False, so a flaky
    judge looked stable: the mean spread of 3 repeats with faults read 2.16 where the
    samples with two or more scored repeats gave 2.41."""
    from types import SimpleNamespace

    from unified.run.repeats import retest_lines, retest_summary
    from unified.scores import Score

    one = repeat_summary([7.0], 5.0)
    assert one["spread"] == UNDEFINED and "one scored repeat" in one["spread"].reason

    def line(sid: str, values: list[float | None]) -> Score:
        scored = [v for v in values if v is not None]
        details = {
            "repeats": [{"value": v} for v in values],
            "repeat_stats": repeat_summary(scored, 5.0),
        }
        return Score(metric="m", backend="b", sample_id=sid, value=sum(scored) / len(scored), details=details)

    lines = [line("a", [2.0, 8.0, 5.0]), line("b", [6.0, 6.0, 6.0]), line("c", [9.0, None, None])]
    (pair,) = retest_summary(lines, {"m|b": SimpleNamespace(repeats=3)})["pairs"]
    assert pair["n"] == 3 and pair["n_measured"] == 2
    assert pair["mean_spread"] == pytest.approx(3.0 / 2)  # (3.0 + 0.0) / 2, not / 3
    assert pair["unstable_share"] == pytest.approx(0.5)
    assert any("1 sample(s) with one scored repeat" in n for n in pair["notes"])
    assert any("ICC over the 2 of 3 samples" in n for n in pair["notes"])
    text = "\n".join(retest_lines({"pairs": [pair]}))
    assert "1 of 2 samples unstable" in text and "note: 1 sample(s) with one scored repeat" in text
