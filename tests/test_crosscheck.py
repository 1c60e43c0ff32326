"""Cross-check statistics against scipy / scikit-learn, undefined cases, the cross-check
report on Scores with failures, and agreement with human labels on ARES rows."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as ss
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, roc_auc_score

from unified.analysis.crosscheck import (
    UNDEFINED,
    auc,
    balanced_accuracy,
    bootstrap_ci,
    cohen_kappa,
    crosscheck,
    format_crosscheck,
    label_for,
    pair_stats,
    pearson,
    rankdata,
    render_crosscheck,
    spearman,
)
from unified.sample import Sample
from unified.scores import Score

ARES = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "ares"
    / "LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl"
)


def _tied(rng: random.Random, n: int, levels: int) -> list[float]:
    """Values on a coarse grid, so ties are frequent (as judge ratings 0/5/10 are)."""
    return [float(rng.randrange(levels)) * 10 / (levels - 1) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy_with_ties(seed):
    rng = random.Random(seed)
    x, y = _tied(rng, 40, 4), _tied(rng, 40, 3)
    assert rankdata(x) == pytest.approx(ss.rankdata(x))
    assert pearson(x, y) == pytest.approx(ss.pearsonr(x, y)[0], abs=1e-12)
    assert spearman(x, y) == pytest.approx(ss.spearmanr(x, y)[0], abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_kappa_auc_balanced_accuracy_match_sklearn(seed):
    rng = random.Random(100 + seed)
    a = [rng.random() < 0.6 for _ in range(50)]
    b = [v if rng.random() < 0.7 else not v for v in a]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    labels = [int(v) for v in a]
    scores = [s + (3.0 if l else 0.0) for s, l in zip(_tied(rng, 50, 5), labels)]  # many ties
    assert auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    pred = [s >= 5 for s in scores]
    assert balanced_accuracy(pred, labels) == pytest.approx(balanced_accuracy_score(labels, pred), abs=1e-12)


def test_auc_counts_ties_as_half():
    # one positive, one negative with the same score, plus a separated pair
    assert auc([5, 5, 9, 1], [1, 0, 1, 0]) == pytest.approx(
        (1 + 0.5 + 1 + 1) / 4
    )  # pos{5,9} vs neg{5,1}: 5>1, 5=5 (½), 9>5, 9>1


def test_undefined_for_small_n_and_constant_values():
    assert pearson([1, 2], [2, 3]) == UNDEFINED
    assert spearman([3, 3, 3, 3], [1, 2, 3, 4]) == UNDEFINED
    assert cohen_kappa([True] * 4, [True, False, True, False]) == UNDEFINED
    assert auc([1, 2, 3, 4], [1, 1, 1, 1]) == UNDEFINED
    assert auc([7, 7, 7, 7], [0, 1, 0, 1]) == UNDEFINED
    assert balanced_accuracy([True, False, True], [1, 1, 1]) == UNDEFINED

    small = pair_stats([1.0, 9.0], [2.0, 8.0], 5, 5)
    assert small["n"] == 2
    assert all(small[k] == UNDEFINED for k in ("pearson", "spearman", "mean_abs_diff", "pass_agreement", "cohen_kappa"))
    assert "n=2" in small["notes"][0]

    const = pair_stats([6.0, 6.0, 6.0, 6.0], [1.0, 4.0, 7.0, 10.0], 5, 5)
    assert const["pearson"] == const["spearman"] == const["cohen_kappa"] == UNDEFINED
    # no variance needed: still defined
    assert const["mean_abs_diff"] == pytest.approx(np.mean([5, 2, 1, 4]))
    assert const["pass_agreement"] == pytest.approx(0.5)
    assert any("single distinct value" in n for n in const["notes"])
    json.dumps(const, allow_nan=False)  # never NaN


def test_pair_stats_thresholds_are_per_backend():
    a, b = [2.0, 4.0, 6.0, 8.0], [1.0, 3.0, 5.0, 7.0]
    same = pair_stats(a, b, 5, 5)  # a: 6, 8 pass; b: 5, 7 pass
    assert same["pass_agreement"] == pytest.approx(1.0)
    stricter = pair_stats(a, b, 3, 5)  # a: 4,6,8 pass; b: 5,7 pass -> sample 2 differs
    assert stricter["pass_agreement"] == pytest.approx(0.75)
    assert stricter["pearson"] == pytest.approx(1.0)
    assert stricter["mean_abs_diff"] == pytest.approx(1.0)


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate():
    rng = random.Random(7)
    labels = [int(rng.random() < 0.5) for _ in range(60)]
    scores = [rng.random() + 0.6 * l for l in labels]
    point = auc(scores, labels)
    ci = bootstrap_ci(auc, scores, labels, n=300, seed=3)
    assert ci == bootstrap_ci(auc, scores, labels, n=300, seed=3)
    assert ci != bootstrap_ci(auc, scores, labels, n=300, seed=4)
    assert ci[0] < point < ci[1]
    assert bootstrap_ci(auc, scores, [1] * 60, n=50) == UNDEFINED


def _score(metric, backend, sid, value=None, error=None, reason=None, threshold=None):
    if error:
        return Score.failure(metric, backend, sid, error)
    return Score.from_raw(metric, backend, sid, value / 10, threshold=threshold, reason=reason)


def test_crosscheck_excludes_and_counts_failures():
    vals_a = [9, 8, 2, 7, 5, 1]
    vals_b = [8, 9, 3, 1, 4, 2]
    scores = []
    for i, (a, b) in enumerate(zip(vals_a, vals_b)):
        scores.append(_score("faithfulness", "ragas", f"s{i}", a, reason=f"ragas says {a}"))
        scores.append(_score("faithfulness", "deepeval", f"s{i}", b, reason=f"deepeval says {b}"))
    scores.append(_score("faithfulness", "ragas", "s6", error="InstructorRetryException: bad JSON"))
    scores.append(_score("faithfulness", "deepeval", "s6", 6))
    scores.append(_score("faithfulness", "deepeval", "s7", error="HTTP 500"))
    scores.append(_score("faithfulness", "ragas", "s7", error="HTTP 500"))

    res = crosscheck(scores)
    json.dumps(res, allow_nan=False)
    m = res["metrics"]["faithfulness"]
    assert m["backends"]["ragas"]["errors"] == 2 and m["backends"]["ragas"]["scored"] == 6
    assert m["backends"]["deepeval"]["errors"] == 1 and m["backends"]["deepeval"]["scored"] == 7
    assert m["backends"]["ragas"]["mean"] == pytest.approx(np.mean(vals_a), abs=1e-4)
    (pair,) = m["pairs"]
    assert pair["n"] == 6 and pair["excluded"] == 2
    assert pair["spearman"] == pytest.approx(ss.spearmanr(vals_a, vals_b)[0], abs=1e-4)  # symmetric
    mat = m["agreement_matrix"]
    assert mat["spearman"]["ragas"]["deepeval"] == mat["spearman"]["deepeval"]["ragas"] == pair["spearman"]
    assert mat["mean_abs_diff"]["ragas"]["ragas"] == 0.0


def test_top_disagreements_are_ordered_and_side_by_side():
    rng = random.Random(11)
    scores = []
    expected = {}
    for i in range(12):
        a, b, c = (rng.randrange(11) for _ in range(3))
        sid = f"q{i:02d}"
        expected[sid] = max(abs(a - b), abs(a - c), abs(b - c))
        for backend, v in (("native", a), ("ragas", b), ("deepeval", c)):
            scores.append(_score("context_recall", backend, sid, v, reason=f"{backend}:{v}"))
    samples = {f"q{i:02d}": Sample(user_input=f"question {i}?", id=f"q{i:02d}") for i in range(12)}
    res = crosscheck(scores, samples, top_n=5)
    rows = res["metrics"]["context_recall"]["disagreements"]
    assert len(rows) == 5
    want = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    assert [(r["sample_id"], r["diff"]) for r in rows] == [(s, float(d)) for s, d in want]
    first = rows[0]
    assert set(first["values"]) == {"native", "ragas", "deepeval"}
    assert first["reasons"]["ragas"] == f"ragas:{int(first['values']['ragas'])}"
    assert first["question"] == samples[first["sample_id"]].user_input
    a, b = first["between"]
    assert abs(first["values"][a] - first["values"][b]) == pytest.approx(first["diff"])
    assert len(res["metrics"]["context_recall"]["pairs"]) == 3


def test_label_names_map_to_canonical_metrics():
    labels = {"context_relevance": 1, "faithfulness": 0, "answer_relevance": 1}
    assert label_for("context_relevancy", labels) == "context_relevance"
    assert label_for("ContextualRelevancyMetric", labels) == "context_relevance"
    assert label_for("answer_relevancy", labels) == "answer_relevance"
    assert label_for("faithfulness", labels) == "faithfulness"
    assert label_for("context_recall", labels) is None
    assert label_for("context_recall", {"context_recall": 0.5}) == "context_recall"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


@pytest.mark.skipif(not ARES.exists(), reason="../shared/data/ares not present")
def test_human_agreement_on_ares_rows():
    rows = [json.loads(l) for l in ARES.read_text(encoding="utf-8").splitlines()[:60]]
    samples = {}
    for r in rows:
        s = Sample.from_record(r, warn_unknown=False)  # top-level `labels` -> metadata.labels
        samples[s.id] = s
    assert samples[rows[0]["id"]].metadata["labels"]["faithfulness"] in (0, 1)
    # two real, cheap evaluators: share of response words found in the context, and the
    # response length; neither reads the labels
    scores, overlap = [], {}
    for sid, s in samples.items():
        resp, ctx = _words(s.response or ""), _words(" ".join(s.retrieved_contexts or []))
        overlap[sid] = 10 * len(resp & ctx) / max(1, len(resp))
        scores.append(Score.from_raw("faithfulness", "overlap", sid, overlap[sid], raw_range=(0, 10)))
        scores.append(
            Score.from_raw("faithfulness", "length", sid, min(10.0, len(s.response or "") / 100), raw_range=(0, 10))
        )
    scores.append(Score.failure("faithfulness", "length", "not-a-sample", "timeout"))
    res = crosscheck(scores, samples, bootstrap=200)
    json.dumps(res, allow_nan=False)
    human = res["metrics"]["faithfulness"]["human"]
    assert human["label"] == "faithfulness" and human["kind"] == "binary"
    ids = sorted(samples)
    y = [samples[i].metadata["labels"]["faithfulness"] for i in ids]
    e = human["backends"]["overlap"]
    assert e["n"] == len(ids) and e["positives"] == sum(y)
    assert e["auc"] == pytest.approx(roc_auc_score(y, [overlap[i] for i in ids]), abs=1e-4)
    lo, hi = e["auc_ci95"]
    assert lo <= e["auc"] <= hi
    pred = [overlap[i] >= 7.0 for i in ids]  # faithfulness's default threshold
    assert e["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, pred), abs=1e-4)
    assert human["backends"]["length"]["n"] == len(ids)  # the failure is not counted


def test_graded_labels_use_spearman_and_are_binarised_at_the_metric_threshold():
    # changed with issue 15 (calibration against people): graded labels used to get only
    # Spearman; they are now also binarised (0–1 grades at threshold/10) for AUC, PPI, …
    samples, scores = {}, []
    grades = [0.0, 0.5, 1.0, 0.5, 0.25, 1.0, 0.0]
    for i, g in enumerate(grades):
        s = Sample(user_input=f"q{i}", id=f"g{i}", metadata={"labels": {"context_recall": g}})
        samples[s.id] = s
        scores.append(Score.from_raw("context_recall", "native", s.id, (g + (i % 3) / 10) / 1.3))
    h = crosscheck(scores, samples)["metrics"]["context_recall"]["human"]
    assert h["kind"] == "graded"
    vals = [(g + (i % 3) / 10) / 1.3 * 10 for i, g in enumerate(grades)]
    assert h["backends"]["native"]["spearman"] == pytest.approx(ss.spearmanr(vals, grades)[0], abs=1e-4)
    assert h["binarised_at"] == pytest.approx(0.5)  # context_recall: threshold 5 on 0–10
    binary = [int(g >= 0.5) for g in grades]
    assert h["backends"]["native"]["positives"] == sum(binary) == 4
    assert h["backends"]["native"]["auc"] == pytest.approx(roc_auc_score(binary, vals), abs=1e-4)


def test_format_crosscheck_renders_every_section():
    scores = [
        _score("faithfulness", b, f"s{i}", v, reason="because [[Yes]] [bold]x[/bold]")
        for i in range(4)
        for b, v in (("native", i * 3), ("ragas", 9 - i * 2))
    ]
    scores += [_score("answer_relevancy", "native", f"s{i}", 5) for i in range(2)]
    scores += [_score("answer_relevancy", "ragas", f"s{i}", 5) for i in range(2)]
    res = crosscheck(scores)
    text = render_crosscheck(res, width=160)
    assert "faithfulness — per backend" in text
    assert "native × ragas" in text
    assert "largest disagreements" in text
    assert "because [[Yes]] [bold]x[/bold]" in text  # a reason is text, not rich markup
    assert "thresholds translated" in text and "native → ragas" in text
    assert UNDEFINED in text  # answer_relevancy: n=2
    assert format_crosscheck(res) is not None
