"""The jury: pooled value, verdict, dissent, member errors, fingerprints, and the jury as a
backend of its own in the cross-check."""

from __future__ import annotations

import json

import pytest

from unified.analysis.crosscheck import crosscheck
from unified.analysis.jury import JURY, JuryError, jury_hashes, jury_scores, pool
from unified.sample import Sample
from unified.scores import Score


def _s(backend, value=None, *, sid="q1", metric="faithfulness", error=None, threshold=7.0, **kw):
    if error:
        return Score.failure(metric, backend, sid, error, threshold=threshold, **kw)
    return Score.from_raw(
        metric, backend, sid, value, raw_range=(0, 10), threshold=threshold, reason=f"{backend} thinks {value}", **kw
    )


def test_median_jury_with_one_dissenting_member():
    members = {"native": _s("native", 8.0), "ragas": _s("ragas", 3.0), "deepeval": _s("deepeval", 9.0)}
    j = pool("faithfulness", "q1", members, "median")
    assert j.backend == JURY and j.metric == "faithfulness" and j.sample_id == "q1"
    assert j.value == 8.0 and j.passed is True and j.threshold == 7.0  # faithfulness: 7
    assert j.details["dissenters"] == ["ragas"]
    assert j.details["members"]["ragas"] == {"value": 3.0, "passed": False, "dissent": True}
    assert j.details["members"]["native"]["dissent"] is False
    assert j.details["n_members"] == 3 and j.details["n_errors"] == 0 and not j.degraded
    assert "ragas 3.0 (dissents)" in j.reason and j.error is None
    json.loads(j.model_dump_json())  # a scores.jsonl line


def test_mean_and_majority_differ_where_they_should():
    members = {"a": _s("a", 10.0), "b": _s("b", 6.5), "c": _s("c", 6.0)}
    mean = pool("faithfulness", "q1", members, "mean")
    assert mean.value == pytest.approx(7.5) and mean.passed is True  # 7.5 ≥ 7
    assert mean.details["dissenters"] == ["b", "c"]
    majority = pool("faithfulness", "q1", members, "majority")
    assert majority.value == 6.5 and majority.passed is False  # one of three passes
    assert majority.details["dissenters"] == ["a"]
    # the vote uses each member's own verdict: a lenient member passes at its own bound
    lenient = {"a": _s("a", 6.0, threshold=5.0), "b": _s("b", 6.0, threshold=5.0), "c": _s("c", 9.0)}
    v = pool("faithfulness", "q1", lenient, "majority")
    assert v.passed is True and v.value == 6.0  # 3 of 3 pass by their own bounds; median 6 < 7
    # a lenient member at 6 with its own bound 5 passes by its own verdict; under a median
    # jury failing at 7 it is on the jury's side (6 < 7): no dissent. Under majority, its
    # vote is what counts
    mixed = {"a": _s("a", 6.0, threshold=5.0), "b": _s("b", 4.0), "c": _s("c", 9.0)}
    med = pool("faithfulness", "q1", mixed, "median")
    assert med.passed is False and med.details["members"]["a"] == {"value": 6.0, "passed": True, "dissent": False}
    assert med.details["dissenters"] == ["c"]
    vote = pool("faithfulness", "q1", mixed, "majority")
    assert vote.passed is True and vote.details["dissenters"] == ["b"]  # a and c pass
    # an even split is decided by the median against the threshold
    split = pool("faithfulness", "q1", {"a": _s("a", 9.0), "b": _s("b", 4.0)}, "majority")
    assert split.value == 6.5 and split.passed is False


def test_a_member_error_is_excluded_and_counted_never_zero():
    members = {
        "native": _s("native", 8.0),
        "ragas": _s("ragas", error="InstructorRetryException: bad JSON"),
        "deepeval": _s("deepeval", 9.0),
    }
    j = pool("faithfulness", "q1", members, "mean")
    assert j.value == pytest.approx(8.5)  # (8 + 9) / 2, not (8 + 0 + 9) / 3
    assert j.details["n_errors"] == 1 and j.details["errors"] == {"ragas": "InstructorRetryException: bad JSON"}
    assert "ragas" not in j.details["members"] and j.degraded
    assert "1 error excluded" in j.reason
    missing = pool("faithfulness", "q1", {"native": _s("native", 8.0), "ragas": None}, "median")
    assert missing.details["missing"] == ["ragas"] and missing.degraded and missing.value == 8.0


def test_every_member_failed_gives_a_failure_score():
    j = pool(
        "faithfulness",
        "q1",
        {"native": _s("native", error="HTTP 500"), "ragas": _s("ragas", error="timeout")},
        "median",
    )
    assert j.value is None and not j.ok and j.passed is None
    assert j.error.startswith("jury (median): every member failed") and "HTTP 500" in j.error
    assert "timeout" in j.error and j.details["n_errors"] == 2


def test_fingerprints_follow_the_members():
    members = {
        "native": _s("native", 8.0, config_hash="c1", sample_hash="h1"),
        "ragas": _s("ragas", 3.0, config_hash="c2", sample_hash="h1"),
    }
    j = pool("faithfulness", "q1", members, "median")
    assert j.sample_hash == "h1"
    assert j.config_hash == jury_hashes("faithfulness", "median", members)[0]
    assert len(j.config_hash) == 16
    # the same members, given in another order or as dicts: the same line
    as_dicts = {k: json.loads(v.model_dump_json()) for k, v in reversed(list(members.items()))}
    assert pool("faithfulness", "q1", as_dicts, "median") == j
    # any change in a member's line, configuration or result, or in the method: a new hash
    rerun = dict(members, ragas=_s("ragas", 4.0, config_hash="c2", sample_hash="h1"))
    reconf = dict(members, ragas=_s("ragas", 3.0, config_hash="c3", sample_hash="h1"))
    hashes = {
        j.config_hash,
        pool("faithfulness", "q1", rerun, "median").config_hash,
        pool("faithfulness", "q1", reconf, "median").config_hash,
        pool("faithfulness", "q1", members, "mean").config_hash,
    }
    assert len(hashes) == 4
    stale = dict(members, ragas=_s("ragas", 3.0, config_hash="c2", sample_hash="OLD"))
    mixed = pool("faithfulness", "q1", stale, "median")
    assert mixed.sample_hash is None and mixed.details["sample_hash_mismatch"] is True


def test_jury_scores_groups_skips_and_applies_last_wins():
    lines = [
        _s("native", 8.0, sid="a"),
        _s("ragas", 2.0, sid="a"),
        _s("deepeval", 9.0, sid="a"),
        _s("native", 1.0, sid="b"),
        _s("ragas", error="HTTP 500", sid="b"),
        _s("ragas", 6.0, sid="b"),  # a resumed run's later line for the same task wins
        _s("native", 5.0, sid="c"),  # only one member scored c
        _s("native", 5.0, sid="a", metric="mrr", threshold=5.0),  # one backend only: no jury
        Score.failure("faithfulness", "native", "row:7", "bad row", row_error=True),
        Score.failure("faithfulness", JURY, "a", "an old jury line"),
    ]
    out = jury_scores(lines, "median")
    assert [(s.metric, s.sample_id) for s in out] == [
        ("faithfulness", "a"),
        ("faithfulness", "b"),
        ("faithfulness", "c"),
    ]
    a, b, c = out
    assert a.value == 8.0 and a.details["dissenters"] == ["ragas"]
    assert b.value == pytest.approx(3.5) and b.details["n_errors"] == 0
    assert c.value == 5.0 and c.details["missing"] == ["deepeval", "ragas"] and c.degraded
    only_two = jury_scores(lines, "mean", members=["native", "deepeval"])
    assert only_two[0].value == pytest.approx(8.5) and set(only_two[0].details["members"]) == {"native", "deepeval"}
    with pytest.raises(JuryError, match="unknown jury method 'vote'"):
        jury_scores(lines, "vote")


def test_the_jury_is_a_backend_of_its_own_in_the_crosscheck():
    samples, scores = {}, []
    # native tracks the label, ragas is noisy, deepeval contrary on half the samples
    for i in range(12):
        y = i % 2
        samples[f"s{i}"] = Sample(user_input=f"q{i}", id=f"s{i}", metadata={"labels": {"faithfulness": y}})
        scores += [
            _s("native", 8.0 + i / 10 if y else 2.0 + i / 10, sid=f"s{i}"),
            _s("ragas", 7.5 if y else (8.0 if i % 4 == 0 else 1.0), sid=f"s{i}"),
            _s("deepeval", (9.0 if y else 1.5) if i < 6 else (1.5 if y else 9.0), sid=f"s{i}"),
        ]
    res = crosscheck(scores, samples, jury="median", bootstrap=100)
    json.dumps(res, allow_nan=False)
    m = res["metrics"]["faithfulness"]
    assert "jury" in res["backends"] and m["backends"]["jury"]["scored"] == 12
    # the jury is never paired with its own members: not in pairs, translations, the matrix or alpha
    assert not any("jury" in (p["a"], p["b"]) for p in m["pairs"])
    assert len(m["pairs"]) == 3 and "jury" not in m["agreement_matrix"]["backends"]
    assert m["alpha"]["backends"] == ["deepeval", "native", "ragas"]
    # its own section: members, dissent rate, who dissents most
    j = m["jury"]
    assert j["members"] == ["deepeval", "native", "ragas"] and j["n"] == 12 and j["method"] == "median"
    split = sum(any(v["dissent"] for v in s.details["members"].values()) for s in jury_scores(scores, "median"))
    assert j["dissent_rate"] == pytest.approx(split / 12) and 0 < split < 12
    worst = max(j["members_dissent"].items(), key=lambda kv: (kv[1]["rate"], kv[0] == j["most_dissent"]))
    assert j["most_dissent"] == worst[0] == "deepeval"  # contrary on half the samples
    human = m["human"]["backends"]
    assert human["jury"]["auc"] > human["deepeval"]["auc"]  # pooling outvotes the contrary member
    assert "ppi" in human["jury"] and "best_threshold" in human["jury"]
    # jury lines already in the scores are used as they are, not pooled twice
    again = crosscheck(scores + jury_scores(scores, "mean"), samples, jury="median", bootstrap=50)
    assert again["metrics"]["faithfulness"]["backends"]["jury"]["count"] == 12
