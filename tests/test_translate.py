"""Threshold translation (quantile matching) on constructed data with known answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from unified.analysis.crosscheck import crosscheck, render_crosscheck
from unified.analysis.stats import UNDEFINED
from unified.analysis.translate import quantile_map, threshold_translation, translate_threshold
from unified.scores import Score


def _convex(x):
    return 10 * (np.asarray(x) / 10) ** 2  # a strictly monotone change of scale on 0–10


@pytest.mark.parametrize("t", [3.0, 5.0, 7.0, 8.5])
def test_a_monotone_transform_is_recovered(t):
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 10, 400)
    b = _convex(a)
    tr = threshold_translation(a, b, t, 5.0, "deepeval", "ragas")
    assert tr["from"] == "deepeval" and tr["to"] == "ragas" and tr["n"] == 400
    # exactly the midpoint on B of the two samples around t on A: g(a_below), g(a_at_or_above)
    below, above = a[a < t].max(), a[a >= t].min()
    assert tr["threshold_to"] == pytest.approx((_convex(below) + _convex(above)) / 2, abs=1e-4)
    assert tr["threshold_to"] == pytest.approx(float(_convex(t)), abs=0.15)
    # the same samples pass on both sides: B = g(A) orders them identically
    assert tr["pass_agreement_at_translated"] == 1.0
    assert tr["pass_rate_to"] == tr["pass_rate_from"]
    assert tr["pass_agreement_at_default"] == pytest.approx(np.mean((a >= t) == (b >= 5.0)), abs=1e-4)
    # the map at A = 0…10 follows g, and is monotone
    grid = np.array([v for _, v in tr["map"]])
    assert np.all(np.diff(grid) >= 0)
    assert grid[1:10] == pytest.approx(_convex(np.arange(1, 10)), abs=0.15)
    assert tr["notes"] == []


def test_translation_inverts_and_is_exact_between_samples():
    a = np.array([1.0, 2.0, 4.0, 6.0, 8.0])
    b = a + 1.0  # a shift by one point
    # A's threshold 5 passes {6, 8}; on B the gap between 5 and 7 holds it: midpoint 6
    assert translate_threshold(a, b, 5.0) == pytest.approx(6.0)
    assert translate_threshold(b, a, 6.0) == pytest.approx(5.0)
    # A's threshold at a sample's own value keeps that sample passing (≥): 4 -> (3 + 5) / 2
    assert translate_threshold(a, b, 4.0) == pytest.approx(4.0)
    # pass all / pass none use the scale's ends as neighbours
    assert quantile_map(a, b, [0.5, 9.0]) == pytest.approx([1.0, 9.5])


def test_bimodal_target_gets_the_gap_midpoint_and_a_note():
    a = np.linspace(0, 10, 21)
    b = np.where(a >= 4, 10.0, 0.0)  # a backend that answers 0 or 10 only
    tr = threshold_translation(a, b, 7.0, 5.0)
    # B can only pass 100 % or the 62 % at 10; 7 on A passes 33 %: the closest is 62 %
    assert tr["threshold_to"] == 5.0
    assert tr["pass_rate_from"] == pytest.approx(7 / 21, abs=1e-4)
    assert tr["pass_rate_to"] == pytest.approx(13 / 21, abs=1e-4)
    assert any("tied too coarsely" in n for n in tr["notes"])


# A = 1, 2, 3, 4 at threshold 2.5 passes k = 2 samples. For each B: the pass counts B can
# reach, the midpoint threshold reaching each, and the pick (nearest count; a tie goes to
# the stricter threshold, the one with fewer passes).
@pytest.mark.parametrize(
    "b, expected, why",
    [
        ([0, 0, 5, 9], 2.5, "counts 4, 2, 1, 0 at 0, 2.5, 7, 9.5: 2 exactly"),
        ([0, 5, 5, 5], 2.5, "counts 4, 3, 0 at 0, 2.5, 7.5: 3 is nearest"),
        ([1, 5, 5, 9], 7.0, "counts 4, 3, 1, 0 at 0.5, 3, 7, 9.5: 3 and 1 tie, 1 is stricter"),
        ([0, 10, 10, 10], 5.0, "counts 4, 3 at 0, 5; 'pass none' is unreachable with samples at 10"),
    ],
)
def test_nearest_pass_count_and_ties_to_the_stricter_side(b, expected, why):
    assert translate_threshold([1.0, 2.0, 3.0, 4.0], b, 2.5) == pytest.approx(expected), why


def test_undefined_with_reasons():
    small = threshold_translation([1.0, 9.0], [2.0, 8.0], 5, 5, "x", "y")
    assert small["threshold_to"] == UNDEFINED and small["pass_agreement_at_default"] == UNDEFINED
    assert any("n=2 < 3" in n for n in small["notes"])
    const = threshold_translation([6.0] * 5, [1.0, 3.0, 5.0, 7.0, 9.0], 5, 5, "x", "y")
    assert const["threshold_to"] == const["pass_agreement_at_translated"] == UNDEFINED
    assert const["pass_agreement_at_default"] == pytest.approx(0.6)  # no variance needed
    assert const["notes"] == [
        "threshold translation undefined: x has a single distinct value (6.0) on all 5 samples (samples scored by both)"
    ]
    json.dumps([small, const], allow_nan=False)
    assert translate_threshold([1, 2, 3], [4, 4, 4], 2) == UNDEFINED


def test_crosscheck_writes_both_directions_and_the_table():
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 10, 60)
    scores = []
    for i, x in enumerate(a):
        scores.append(Score.from_raw("faithfulness", "deepeval", f"s{i}", x, raw_range=(0, 10), threshold=7.0))
        scores.append(
            Score.from_raw("faithfulness", "ragas", f"s{i}", float(_convex(x)), raw_range=(0, 10), threshold=3.0)
        )
    res = crosscheck(scores)
    json.dumps(res, allow_nan=False)
    (pair,) = res["metrics"]["faithfulness"]["pairs"]
    fwd, back = pair["threshold_translation"]
    assert (fwd["from"], fwd["to"], back["from"], back["to"]) == ("deepeval", "ragas", "ragas", "deepeval")
    assert set(fwd) >= {
        "from",
        "to",
        "threshold_from",
        "threshold_to",
        "pass_agreement_at_translated",
        "pass_agreement_at_default",
        "n",
    }
    assert fwd["threshold_from"] == 7.0 and fwd["threshold_to"] == pytest.approx(4.9, abs=0.3)
    assert back["threshold_from"] == 3.0 and back["threshold_to"] == pytest.approx(10 * 0.3**0.5, abs=0.3)
    # each at its own threshold (7 on deepeval, 3 on ragas ≈ 5.5 on deepeval) they disagree
    assert fwd["pass_agreement_at_translated"] == 1.0 > fwd["pass_agreement_at_default"]
    text = render_crosscheck(res, width=160)
    assert "thresholds translated" in text and "deepeval → ragas" in text and "ragas → deepeval" in text
