"""Normalisation to 0–10 and aggregation that never sees NaN."""

import math

import pytest

from unified.scores import Cost, Score, aggregate, aggregate_by, normalize


@pytest.mark.parametrize(
    "raw, rng, hib, expected",
    [
        (0.5, (0, 1), True, 5.0),  # 10 * (0.5 - 0) / 1
        (3, (1, 5), True, 5.0),  # 10 * (3 - 1) / 4
        (4, (0, 10), True, 4.0),
        (0.2, (0, 1), False, 8.0),  # inverted: 10 * (1 - 0.2) / 1
        (1, (1, 5), False, 10.0),  # lowest raw is best when lower is better
        (1.5, (0, 1), True, 10.0),  # clipped above
        (-0.3, (0, 1), True, 0.0),  # a negative cosine clips to 0
        (-0.3, (-1, 1), True, 3.5),  # 10 * (-0.3 + 1) / 2
    ],
)
def test_normalize(raw, rng, hib, expected):
    assert normalize(raw, rng, higher_is_better=hib) == pytest.approx(expected)


@pytest.mark.parametrize("raw", [None, math.nan, math.inf, -math.inf, "x", True])
def test_unusable_raw_is_none(raw):
    assert normalize(raw) is None


def test_bad_range():
    with pytest.raises(ValueError, match="hi > lo"):
        normalize(0.5, (1, 1))


def test_from_raw_failure_never_nan():
    s = Score.from_raw("faithfulness", "ragas", "s1", math.nan, threshold=7.0)
    assert s.value is None and s.raw is None and s.passed is None and not s.ok
    assert "nan" in s.error
    kept = Score.from_raw("faithfulness", "ragas", "s1", None, error="judge timed out")
    assert kept.error == "judge timed out"


def test_from_raw_pass_fail():
    assert Score.from_raw("m", "b", "s", 0.7, threshold=7.0).passed is True
    assert Score.from_raw("m", "b", "s", 0.69, threshold=7.0).passed is False
    assert Score.from_raw("m", "b", "s", 0.69).passed is None  # no threshold, no verdict


def _ok(v, passed=None, calls=1):
    return Score(metric="m", backend="b", sample_id="s", value=v, passed=passed, cost=Cost(calls=calls))


def _fail(calls=1):
    return Score.failure("m", "b", "s", "boom", cost=Cost(calls=calls))


def test_aggregate_all_failed():
    agg = aggregate([_fail(), _fail(2)])
    assert (agg.count, agg.scored, agg.errors) == (2, 0, 2)
    assert agg.mean is None and agg.median is None and agg.stdev is None and agg.pass_rate is None
    assert agg.cost.calls == 3  # failed calls still cost


def test_aggregate_empty():
    agg = aggregate([], "m", "b")
    assert (agg.count, agg.scored, agg.errors, agg.mean) == (0, 0, 0, None)


def test_aggregate_mixed_skips_failures():
    agg = aggregate([_ok(4.0, True), _fail(), _ok(8.0, False), _ok(6.0)])
    # mean over successes only: (4 + 8 + 6) / 3 = 6; pass rate over scores with a verdict: 1/2
    assert agg.mean == pytest.approx(6.0) and agg.median == 6.0
    assert agg.stdev == pytest.approx(2.0)  # sample stdev of 4, 6, 8
    assert agg.pass_rate == 0.5 and agg.errors == 1 and agg.scored == 3
    assert not any(isinstance(x, float) and math.isnan(x) for x in agg.model_dump().values())


def test_aggregate_by_groups_in_first_seen_order():
    scores = [
        Score(metric="b", backend="x", sample_id="1", value=2.0),
        Score(metric="a", backend="x", sample_id="1", value=4.0),
        Score(metric="b", backend="x", sample_id="2", value=4.0),
    ]
    aggs = aggregate_by(scores)
    assert [(a.metric, a.count, a.mean) for a in aggs] == [("b", 2, 3.0), ("a", 1, 4.0)]


def test_from_raw_error_text_applies_only_to_an_unusable_raw():
    bad = Score.from_raw("m", "b", "s", float("nan"), error="judge said nothing useful")
    assert bad.value is None and bad.error == "judge said nothing useful"
    good = Score.from_raw("m", "b", "s", 0.5, error="only if unusable")
    assert good.ok and good.value == 5.0 and good.error is None
