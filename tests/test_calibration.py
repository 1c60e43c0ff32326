"""Calibration against people: the best threshold, prediction-powered inference (against a
hand-computed example and in a seeded coverage simulation), partial labels, graded labels,
and the undefined cases with their reasons."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score

from unified.analysis.calibration import best_threshold, calibrate, mean_ci, ppi_mean
from unified.analysis.crosscheck import crosscheck, render_crosscheck
from unified.analysis.stats import UNDEFINED, Undefined, bootstrap_ci, note_undefined
from unified.analysis.verdict import label_cut
from unified.sample import Sample
from unified.scores import Score


def test_ppi_against_a_hand_computed_example():
    # N = 10 rows, the backend passes 7; the first 4 are labelled
    f_all = [1, 1, 1, 0, 0, 1, 1, 0, 1, 1]
    f_lab, y_lab = [1, 1, 1, 0], [1, 0, 1, 0]
    r = ppi_mean(f_all, f_lab, y_lab)
    # θ̂ = 7/10 − mean(f − y) = 0.7 − (0 + 1 + 0 + 0)/4 = 0.45
    assert r["estimate"] == pytest.approx(0.45)
    # Var = (N − n)/N² · s²(f) + n · s²(g),  g = f/N − (f − y)/n
    #     = 6/100 · (10/9 · 0.21) + 4 · s²([0.1, −0.15, 0.1, 0]) = 0.014 + 0.0558333…
    var = 0.014 + 4 * (0.041875 / 3)
    half = 1.959963984540054 * math.sqrt(var)
    assert r["ci_high"] == pytest.approx(0.45 + half)
    assert r["ci_low"] == 0.0  # 0.45 − 0.518 clipped: a rate is never negative
    assert (r["n_labelled"], r["n_total"]) == (4, 10)


def test_ppi_with_every_row_labelled_is_the_classical_interval():
    rng = np.random.default_rng(3)
    y = (rng.random(50) < 0.4).astype(float)
    f = np.where(rng.random(50) < 0.8, y, 1 - y)
    r, c = ppi_mean(f, f, y), mean_ci(y)
    assert r["estimate"] == pytest.approx(y.mean())
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((c["ci_low"], c["ci_high"]))


def _simulate(seed: int, n_total=2000, n_labelled=150, p=0.6) -> tuple[dict, dict, float]:
    """A biased judge: passes 90 % of true passes and 30 % of true fails (E f = 0.66)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n_total) < p).astype(float)
    f = np.where(y == 1, rng.random(n_total) < 0.9, rng.random(n_total) < 0.3).astype(float)
    lab = rng.choice(n_total, n_labelled, replace=False)  # labels missing at random
    return ppi_mean(f, f[lab], y[lab]), mean_ci(y[lab]), float(f.mean())


def test_ppi_interval_covers_the_true_rate_at_about_the_nominal_rate():
    runs = [_simulate(seed) for seed in range(100)]
    covered = sum(r["ci_low"] <= 0.6 <= r["ci_high"] for r, _, _ in runs)
    assert covered >= 90, covered  # a 95 % interval: ~95 of 100
    # the judge alone is biased: its pass rate sits well above the truth
    assert np.mean([naive for _, _, naive in runs]) == pytest.approx(0.66, abs=0.01)
    # and PPI is more precise than the 150 labels alone (the judge carries information)
    width = lambda d: d["ci_high"] - d["ci_low"]
    assert np.mean([width(r) for r, _, _ in runs]) < np.mean([width(c) for _, c, _ in runs])


def test_ppi_undefined_with_reasons():
    assert ppi_mean([1, 0, 1], [1, 0], [1, 1])["estimate"].reason == "n_labelled=2 < 3"
    r = ppi_mean([1, 0], [1, 0, 1], [1, 1, 0])
    assert r["estimate"] == UNDEFINED and "n_total=2 < n_labelled=3" in r["ci_low"].reason


def test_best_threshold_on_separable_data():
    neg, pos = [1.0, 2.0, 3.0, 4.0, 4.5], [6.0, 6.5, 7.0, 8.0, 9.0]
    t, ba = best_threshold(neg + pos, [0] * 5 + [1] * 5, prefer=7.0)
    assert t == pytest.approx(5.25) and ba == 1.0  # midway between the classes
    # a maximum plateau: the one nearest the backend's own threshold wins
    scores, labels = [1, 2, 3, 4, 5, 6], [0, 0, 1, 0, 1, 1]
    t, ba = best_threshold(scores, labels, prefer=2.0)
    assert ba == pytest.approx(balanced_accuracy_score(labels, [s >= t for s in scores]))
    brute = max(balanced_accuracy_score(labels, [s >= c for s in scores]) for c in np.arange(0.5, 7, 0.5))
    assert ba == pytest.approx(brute)
    entry = calibrate(neg + pos, [0] * 5 + [1] * 5, 7.0, bootstrap=300, seed=1)
    lo, hi = entry["best_threshold"]["ci95"]
    assert 4.0 <= lo <= 5.25 <= hi <= 6.5  # resampled best splits stay inside the gap's ends
    assert entry["balanced_accuracy"] == pytest.approx(0.8)  # at 7: 3 of 5 positives pass
    assert entry["auc"] == 1.0


def test_best_threshold_undefined_cases():
    assert best_threshold([5, 5, 5, 5], [0, 1, 0, 1]).reason.startswith("scores has a single distinct value")
    assert best_threshold([1, 2, 3], [1, 1, 1]).reason.startswith("labels has a single distinct value")
    assert best_threshold([1, 2], [0, 1]).reason == "n=2 < 3"


def test_undefined_convention_and_one_bootstrap():
    notes: list[str] = []
    u = Undefined("n=1 < 3")
    assert u == UNDEFINED and json.dumps({"x": u}) == '{"x": "undefined"}'
    assert note_undefined(notes, "auc", u) is u and note_undefined(notes, "auc", u) is u
    assert note_undefined(notes, "mean", 4.0) == 4.0
    assert notes == ["auc undefined: n=1 < 3"]  # once, and numbers leave no note
    assert bootstrap_ci(np.mean, [1.0, 2.0], [3.0]).reason.startswith("arrays of different lengths")


def _labelled_run(n=60, n_labelled=25, seed=0):
    rng = np.random.default_rng(seed)
    samples, scores, truth = {}, [], []
    for i in range(n):
        y = int(rng.random() < 0.5)
        truth.append(y)
        labels = {"faithfulness": y} if i < n_labelled else {}
        samples[f"s{i}"] = Sample(user_input=f"q{i}", id=f"s{i}", metadata={"labels": labels})
        good = 8.0 + rng.random() * 2 if y else 3.0 + rng.random() * 4  # separable at 7.5
        lenient = min(10.0, good + 2.0)  # passes too much at 7
        scores.append(Score.from_raw("faithfulness", "native", f"s{i}", good, raw_range=(0, 10), threshold=7.0))
        scores.append(Score.from_raw("faithfulness", "lenient", f"s{i}", lenient, raw_range=(0, 10), threshold=7.0))
    return samples, scores, truth


def test_crosscheck_calibration_with_labels_on_a_subset():
    samples, scores, truth = _labelled_run()
    res = crosscheck(scores, samples, bootstrap=200)
    json.dumps(res, allow_nan=False)
    h = res["metrics"]["faithfulness"]["human"]
    assert h["labelled"] == 25 and h["kind"] == "binary"
    assert h["labelled_pass_rate"]["n"] == 25
    native, lenient = h["backends"]["native"], h["backends"]["lenient"]
    assert native["n"] == lenient["n"] == 25
    assert (native["ppi"]["n_labelled"], native["ppi"]["n_total"]) == (25, 60)
    # native is exact at its threshold: PPI = its own pass rate over all 60 rows
    passes = sum(s.value >= 7 for s in scores if s.backend == "native") / 60
    assert native["ppi"]["estimate"] == pytest.approx(passes, abs=1e-4)
    # lenient passes far too many (0.70 against a true 0.43); the labelled rows correct it
    naive = sum(s.value >= 7 for s in scores if s.backend == "lenient") / 60
    assert naive - np.mean(truth) > 0.2
    assert abs(lenient["ppi"]["estimate"] - np.mean(truth)) < (naive - np.mean(truth)) / 4
    assert lenient["ppi"]["ci_low"] <= np.mean(truth) <= lenient["ppi"]["ci_high"]
    # and its best threshold moves up, out of the range the truth-fails reach (≤ 9)
    assert lenient["best_threshold"]["threshold"] > 9.0 and lenient["best_threshold"]["balanced_accuracy"] == 1.0
    text = render_crosscheck(res, width=170)
    assert "calibration against people" in text and "25 / 60" in text


def test_graded_labels_need_a_cut_on_an_unknown_scale():
    samples, scores = {}, []
    for i, grade in enumerate([1, 2, 3, 4, 5, 5, 4, 12]):  # a 1–12 scale: neither 0–1 nor 0–10
        samples[f"g{i}"] = Sample(user_input="q", id=f"g{i}", metadata={"labels": {"faithfulness": grade}})
        scores.append(Score.from_raw("faithfulness", "native", f"g{i}", grade / 12, threshold=7.0))
    h = crosscheck(scores, samples)["metrics"]["faithfulness"]["human"]
    assert h["binarised_at"] == UNDEFINED and "--label-cut faithfulness=CUT" in h["notes"][0]
    assert "auc" not in h["backends"]["native"] and h["backends"]["native"]["spearman"] == pytest.approx(1.0)
    cut = crosscheck(scores, samples, label_cuts={"faithfulness": 4})["metrics"]["faithfulness"]["human"]
    assert cut["binarised_at"] == 4.0 and cut["backends"]["native"]["positives"] == 5
    assert cut["backends"]["native"]["auc"] == 1.0


def test_no_best_threshold_when_the_scores_rank_against_the_labels():
    from unified.analysis.calibration import best_threshold
    from unified.analysis.stats import is_undefined

    got = best_threshold([1, 2, 3, 7, 8, 9], [1, 1, 1, 0, 0, 0])  # higher score, worse answer
    assert is_undefined(got) and "no threshold beats chance" in got.reason
    t, ba = best_threshold([1, 2, 3, 7, 8, 9], [0, 0, 0, 1, 1, 1])
    assert ba == 1.0 and 3 < t < 7


def test_whole_number_grades_up_to_5_are_not_cut_at_7():
    """1–5 ratings (1, 2, 4, 5) lie in [0, 10] and were cut at faithfulness's 7 as if on
    0–10: every label a fail, a labelled pass rate of 0 and PPI [0, 0] without a word.
    The scale cannot be told from such grades, so the cut is undefined until given."""
    samples, scores = {}, []
    for i, grade in enumerate([1, 2, 4, 5, 5, 4, 1, 2]):
        samples[f"g{i}"] = Sample(user_input="q", id=f"g{i}", metadata={"labels": {"faithfulness": grade}})
        scores.append(Score.from_raw("faithfulness", "native", f"g{i}", grade / 5, threshold=7.0))
    h = crosscheck(scores, samples)["metrics"]["faithfulness"]["human"]
    assert h["binarised_at"] == UNDEFINED and "whole numbers 1–5" in h["notes"][0]
    assert "--label-cut faithfulness=CUT" in h["notes"][0] and "auc" not in h["backends"]["native"]
    cut = crosscheck(scores, samples, label_cuts={"faithfulness": 4})["metrics"]["faithfulness"]["human"]
    assert cut["binarised_at"] == 4.0 and cut["backends"]["native"]["positives"] == 4
    halves = [0.5, 2.5, 7.5, 9.0]  # fractions on both sides of the bound: 0–10 grades, cut as before
    assert label_cut("faithfulness", halves) == 7.0 and label_cut("faithfulness", [0, 3, 8, 10]) == 7.0
    averaged = [1, 2.33, 3.67, 4.33, 5]  # mean 1–5 ratings: cut at 7, every one a fail
    assert "would fail every one" in label_cut("faithfulness", averaged).reason
    assert "whole numbers 1–7" in label_cut("faithfulness", [1, 2, 3, 4, 5, 6, 7]).reason  # a 1–7 Likert


def test_label_cuts_are_read_as_metric_equals_number():
    from unified.analysis.verdict import cut_for, parse_label_cuts

    cuts = parse_label_cuts(["Faithfulness=4", " mrr = 0.5"])
    assert cuts == {"faithfulness": 4.0, "mrr": 0.5}  # canonical names: a key kept as typed was never found
    assert cut_for("FaithfulnessMetric", cuts) == 4.0 and cut_for("precision@3", cuts) is None
    for bad in ("faithfulness", "=4", "faithfulness=high", "faithfulness=nan"):
        with pytest.raises(ValueError, match="give METRIC=CUT"):
            parse_label_cuts([bad])
    with pytest.raises(ValueError, match="unknown metric 'nosuch'"):
        parse_label_cuts(["nosuch=3"])


def test_calibrate_and_compare_take_a_label_cut(tmp_path):
    import json as _json

    from typer.testing import CliRunner

    from unified.cli.app import app

    rows = [
        {"id": f"s{i}", "user_input": "q?", "retrieved_ids": ["a", "b", "c"], "relevant_ids": [rel], "lab": grade}
        for i, (rel, grade) in enumerate(
            [("a", 5), ("b", 4), ("c", 2), ("z", 1), ("a", 5), ("c", 1), ("b", 4), ("z", 2)]
        )
    ]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(_json.dumps(r) + "\n" for r in rows))
    cli = CliRunner()
    run = cli.invoke(app, ["run", str(data), "-m", "mrr", "--label", "mrr=lab", "--out", str(tmp_path / "r"), "-q"])
    assert run.exit_code == 0, run.output
    none = cli.invoke(app, ["calibrate", str(tmp_path / "r"), "--out", str(tmp_path / "c.json")])
    assert none.exit_code == 2 and "whole numbers 1–5" in none.output and "--label-cut mrr=CUT" in none.output
    fit = cli.invoke(app, ["calibrate", str(tmp_path / "r"), "--out", str(tmp_path / "c.json"), "--label-cut", "mrr=4"])
    assert fit.exit_code == 0, fit.output
    (entry,) = _json.loads((tmp_path / "c.json").read_text())["entries"]
    assert entry["binarised_at"] == 4.0 and entry["labelled"] == 8 and entry["positives"] == 4
    bad = cli.invoke(
        app,
        [
            "compare",
            str(data),
            "-m",
            "mrr",
            "-b",
            "native,embedding",
            "--label-cut",
            "mrr:4",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert bad.exit_code == 2 and "--label-cut 'mrr:4': give METRIC=CUT" in bad.output
    assert not (tmp_path / "x").exists()
    other = ["compare", str(data), "-m", "mrr", "-b", "native,embedding", "--label-cut", "faithfulness=4"]
    unscored = cli.invoke(app, [*other, "--out", str(tmp_path / "y")])
    assert (
        unscored.exit_code == 2 and "--label-cut names faithfulness, which this run does not score" in unscored.output
    )


def _entry(**over):
    e = {
        "metric": "mrr",
        "backend": "native",
        "config_hash": "4d4ef2ab3bf1b23a",
        "map": {"x": [0.0, 5.0, 10.0], "y": [0.0, 0.5, 1.0]},
        "cv": {"folds": 5, "brier_calibrated": 0.1, "brier_raw": 0.2},
        "labelled": 40,
    }
    e.update(over)
    return e


@pytest.mark.parametrize(
    "change, says",
    [
        ({"map": {"x": [0.0, 5.0, 10.0], "y": [0.0, 2.5, 5.0]}}, "'map.y' must not decrease and must lie within 0–1"),
        ({"map": {"x": [0.0, 5.0, 10.0], "y": [0.0, float("nan"), 1.0]}}, "not a finite number"),
        ({"map": {"x": [0.0, 5.0, 10.0], "y": [1.0, 0.5, 0.0]}}, "'map.y' must not decrease"),
        ({"map": {"x": [5.0, 0.0, 10.0], "y": [0.0, 0.5, 1.0]}}, "'map.x' must increase strictly within 0–10"),
        ({"map": {"x": [0.0, 10.0], "y": [0.0, 0.5, 1.0]}}, "two lists of one length"),
        ({"map": None}, "two lists of one length"),
        ({"metric": None}, "'metric' must be a non-empty string"),
        ({"config_hash": 7}, "'config_hash' must be a non-empty string"),
        ({"fitted_on": "abc"}, "'fitted_on' must be a list of sample hashes"),
    ],
)
def test_a_calibration_map_that_fit_entry_cannot_have_written_is_refused(change, says):
    """``np.interp`` maps through anything: a y of 0–5 gave calibrated values of 46 on
    0–10, a NaN wrote NaN into the lines, a reversed y a map that is not monotone — and a
    missing key was ``error: metric``. Each is one line naming the entry."""
    from unified.analysis.calibrated import Calibration, CalibrationError

    with pytest.raises(CalibrationError, match=r"cal.json: entry 1: .*" + re.escape(says)):
        Calibration({"version": 1, "entries": [_entry(**change)]}, "cal.json")


def test_two_entries_of_one_pair_and_weak_maps_are_said():
    from unified.analysis.calibrated import Calibration, CalibrationError

    with pytest.raises(CalibrationError, match=r"entry 2: a second entry for mrr \(native\)"):
        Calibration({"version": 1, "entries": [_entry(), _entry()]}, "cal.json")
    hashes = {"mrr|native": "4d4ef2ab3bf1b23a"}
    worse = Calibration({"version": 1, "entries": [_entry(cv={"brier_calibrated": 0.3, "brier_raw": 0.2})]})
    assert any("not better than value/10" in n for n in worse.check(hashes, {}))
    few = Calibration(
        {"version": 1, "entries": [_entry(cv={"brier_calibrated": "undefined", "brier_raw": 0.2}, labelled=3)]}
    )
    assert any("could not be cross-validated (3 labelled)" in n for n in few.check(hashes, {}))
    good = Calibration({"version": 1, "entries": [_entry()]})
    assert good.check(hashes, {}) == []
    line = {"metric": "mrr", "backend": "native", "value": 5.0, "config_hash": "4d4ef2ab3bf1b23a"}
    assert good.apply(line)["calibrated"] == 5.0
    assert "calibrated" not in good.apply({**line, "degraded": True})  # fitted on full values only


def test_labels_written_as_words_in_the_row_are_read_as_with_label():
    """``"labels": {"faithfulness": "yes"}`` was dropped (only numbers and bools were read)
    while ``--label`` reads the same words; half the rows of a yes/no file counted."""
    from unified.analysis.verdict import label_value

    assert [label_value(v) for v in ("yes", "No", "[[Yes]]", "1", "0.4", True, 3, None, "", "maybe")] == [
        1.0,
        0.0,
        1.0,
        1.0,
        0.4,
        1.0,
        3.0,
        None,
        None,
        None,
    ]
    samples, scores = {}, []
    for i, word in enumerate(["yes", "no", 1, 0, "yes", "no"]):
        samples[f"s{i}"] = Sample(user_input="q", id=f"s{i}", metadata={"labels": {"faithfulness": word}})
        scores.append(Score.from_raw("faithfulness", "native", f"s{i}", 0.9 if i % 2 == 0 else 0.1, threshold=7.0))
    h = crosscheck(scores, samples)["metrics"]["faithfulness"]["human"]
    assert h["labelled"] == 6 and h["kind"] == "binary" and h["backends"]["native"]["auc"] == 1.0


def test_labels_spelled_differently_across_rows_are_all_read():
    """The label key was taken from the first labelled sample: rows spelling the metric
    ``FaithfulnessMetric`` or ``Faithfulness`` beside one ``faithfulness`` were unlabelled."""
    from unified.analysis.calibration import human_labels

    samples = {
        f"s{i}": Sample(user_input="q", id=f"s{i}", metadata={"labels": {key: i % 2}})
        for i, key in enumerate(["faithfulness", "FaithfulnessMetric", "Faithfulness", "faithfulness"])
    }
    samples["s4"] = Sample(user_input="q", id="s4", metadata={"labels": {"context_relevancy": 1}})
    assert human_labels("faithfulness", samples) == ("faithfulness", {"s0": 0.0, "s1": 1.0, "s2": 0.0, "s3": 1.0})
    assert human_labels("answer_relevancy", samples) == (None, {})


def test_compare_says_when_calibrated_agreement_is_measured_on_the_fitting_labels(tmp_path):
    """``compare --calibration`` measured the agreement of calibrated values on the very
    labels the map was fitted on (ECE 0.0) without a word; ``labels_fingerprint`` was
    recorded and never read."""
    import json as _json

    from unified.analysis.calibrated import fit_run, in_sample_notes
    from unified.api import evaluate
    from unified.report import Report

    rows = [
        {"id": f"s{i}", "user_input": "q?", "retrieved_ids": ["a", "b", "c"], "relevant_ids": [rel], "lab": lab}
        for i, (rel, lab) in enumerate([("a", 1), ("b", 1), ("c", 0), ("z", 0), ("a", 1), ("c", 0), ("b", 0), ("z", 0)])
    ]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(_json.dumps(r) + "\n" for r in rows))
    opts = {"labels": "mrr=lab", "quiet": True, "progress": False}
    evaluate(data, "mrr", ["native"], out=tmp_path / "fit", **opts)
    cal = tmp_path / "cal.json"
    cal.write_text(_json.dumps(fit_run(Report(tmp_path / "fit"))))
    evaluate(data, "mrr", ["native"], out=tmp_path / "same", calibration=cal, **opts)
    (note,) = in_sample_notes(cal, Report(tmp_path / "same"))
    assert "mrr (native): 8 of the 8 labelled samples here were in the fit" in note and "is in-sample" in note
    # a part of the fitting set with new rows beside it (the reviewer's case: only the whole
    # set was recognised, so a subset or superset showed in-sample agreement without a word)
    fresh = [{**r, "id": f"n{i}", "user_input": f"another question {i}?"} for i, r in enumerate(rows)]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(_json.dumps(r) + "\n" for r in rows[:3] + fresh))
    evaluate(other, "mrr", ["native"], out=tmp_path / "mixed", calibration=cal, **opts)
    (note,) = in_sample_notes(cal, Report(tmp_path / "mixed"))
    assert "3 of the 11 labelled samples here were in the fit" in note and "partly in-sample" in note
    held = tmp_path / "held.jsonl"
    held.write_text("".join(_json.dumps(r) + "\n" for r in fresh))  # none of the fitting rows
    evaluate(held, "mrr", ["native"], out=tmp_path / "held", calibration=cal, **opts)
    assert in_sample_notes(cal, Report(tmp_path / "held")) == []
    # a file written before ``fitted_on``: the whole set is still recognised by its fingerprint
    old_file = _json.loads(cal.read_text())
    for e in old_file["entries"]:
        del e["fitted_on"]
    cal.write_text(_json.dumps(old_file))
    assert len(in_sample_notes(cal, Report(tmp_path / "same"))) == 1
    assert in_sample_notes(cal, Report(tmp_path / "mixed")) == []


def test_one_class_rates_have_no_interval_of_zero_width():
    """Labels and verdicts all of one class gave PPI [1.000, 1.000]: a normal interval of
    no width, read as certainty from a handful of rows."""
    from unified.analysis.calibration import mean_ci, ppi_mean

    got = ppi_mean([1, 1, 1, 1, 1, 1], [1, 1, 1], [1, 1, 1])
    assert got["estimate"] == 1.0 and got["ci_low"] == UNDEFINED and "one class" in got["ci_high"].reason
    assert mean_ci([0, 0, 0, 0])["ci_low"] == UNDEFINED
    assert ppi_mean([1, 0, 1, 1], [1, 0, 1], [1, 0, 0])["ci_low"] != UNDEFINED
    samples, scores = {}, []
    for i in range(6):
        samples[f"s{i}"] = Sample(user_input="q", id=f"s{i}", metadata={"labels": {"faithfulness": 1}})
        scores.append(Score.from_raw("faithfulness", "native", f"s{i}", 0.9, threshold=7.0))
    res = crosscheck(scores, samples)
    assert res["metrics"]["faithfulness"]["human"]["backends"]["native"]["ppi"]["ci_low"] == UNDEFINED
    assert "undefined" in render_crosscheck(res, width=170)


def test_to_pandas_has_the_calibrated_values(tmp_path):
    """They were only in scores.jsonl, Score.calibrated and crosscheck.json."""
    import json as _json

    from unified.analysis.calibrated import fit_run
    from unified.api import evaluate
    from unified.report import Report

    rows = [
        {"id": f"s{i}", "user_input": "q?", "retrieved_ids": ["a", "b", "c"], "relevant_ids": [rel], "lab": lab}
        for i, (rel, lab) in enumerate([("a", 1), ("b", 1), ("c", 0), ("z", 0), ("a", 1), ("c", 0)])
    ]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(_json.dumps(r) + "\n" for r in rows))
    opts = {"labels": "mrr=lab", "quiet": True, "progress": False}
    evaluate(data, "mrr", ["native"], out=tmp_path / "fit", **opts)
    assert Report(tmp_path / "fit").to_pandas()["calibrated"].isna().all()
    cal = tmp_path / "cal.json"
    cal.write_text(_json.dumps(fit_run(Report(tmp_path / "fit"))))
    evaluate(data, "mrr", ["native"], out=tmp_path / "cal", calibration=cal, **opts)
    df = Report(tmp_path / "cal").to_pandas()
    lines = {
        d["sample_id"]: d["calibrated"]
        for d in map(_json.loads, (tmp_path / "cal" / "scores.jsonl").read_text().splitlines())
    }
    assert dict(zip(df["sample_id"], df["calibrated"])) == lines


def test_a_missing_value_marker_in_a_label_column_leaves_the_row_unlabelled(tmp_path):
    """A missing-value marker ("N/A", "NaN") in a ``--label`` column was a row error: the row was not scored."""
    import json as _json

    from unified.data.io import load_samples
    from unified.data.labels import label_value as read_label

    assert [read_label(v) for v in ("N/A", "nan", "NaN", "null", "-", "#N/A", " na ")] == [None] * 7
    with pytest.raises(ValueError):
        read_label("maybe")
    rows = [{"id": f"s{i}", "user_input": "q?", "lab": lab} for i, lab in enumerate(["yes", "N/A", "NaN", "no"])]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(_json.dumps(r) + "\n" for r in rows))
    good, bad = load_samples(data, labels="faithfulness=lab")
    assert not bad and [s.metadata.get("labels", {}).get("faithfulness") for s in good] == [1, None, None, 0]


def test_a_fitted_map_whose_values_round_to_one_point_is_accepted():
    """Values 10/3 and (1/3)·10 differ in the last bit and round to one 3.333333: fitted
    before the rounding, the file held that x twice, and ``--calibration`` refused the
    file ``calibrate`` had just written."""
    from unified.analysis.calibrated import Calibration, fit_entry

    values = [0.0, 10 / 3, 1 / 3 * 10, 10.0, 6.0, 2.0]
    assert 10 / 3 != 1 / 3 * 10
    scores = {f"s{i}": Score.from_raw("mrr", "native", f"s{i}", v / 10, config_hash="h") for i, v in enumerate(values)}
    scores = {k: s.model_copy(update={"value": values[i]}) for i, (k, s) in enumerate(scores.items())}
    entry = fit_entry("mrr", "native", scores, {f"s{i}": float(i % 2) for i in range(6)}, {})
    assert not isinstance(entry, str), entry
    Calibration({"version": 1, "entries": [entry]})  # no CalibrationError
    assert len(set(entry["map"]["x"])) == len(entry["map"]["x"])
