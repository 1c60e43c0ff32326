"""unified.testing in-process: what assert_scores fails on, and how it says so; assert_gates.

Retrieval metrics on the native backend are exact (no judge), so every value below is
known in advance; the loopback judge covers a pair that needs an LLM.
"""

from __future__ import annotations

import pytest

from unified import Sample, testing
from unified.testing import assert_gates, assert_scores


@pytest.fixture(autouse=True)
def isolated(monkeypatch):
    """Own defaults and records: this session's plugin must not print these tests' tallies."""
    monkeypatch.setattr(testing, "_session_defaults", {})
    monkeypatch.setattr(testing, "_test_defaults", {})
    monkeypatch.setattr(testing, "_records", [])
    monkeypatch.setattr(testing, "drain_records", lambda: [])
    for name in ("UNIFIED_JUDGE_MODEL", "UNIFIED_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def doc(sid: str, retrieved: list[str], relevant: list[str], **extra) -> Sample:
    return Sample(id=sid, user_input=f"question {sid}", retrieved_ids=retrieved, relevant_ids=relevant, **extra)


HIT = doc("hit", ["a", "b", "c"], ["a"])  # precision@3 = 1/3 → 3.33, mrr = 10
MISS = doc("miss", ["x", "y", "z"], ["a"])  # precision@3 = 0, mrr = 0
# three relevant documents, one retrieved: precision@3 = 3.33 where 10 was achievable
PARTIAL = doc("partial", ["a", "b", "c"], ["a", "x", "y"])


def rows_of(message: str) -> dict[tuple[str, str], list[str]]:
    """(sample, metric) -> [backend, value, threshold, reason words...] from the table."""
    out = {}
    for line in message.splitlines()[2:]:
        cells = line.split()
        out[(cells[0], cells[1])] = cells[2:]
    return out


def test_passing_checks_return_the_report():
    report = assert_scores([HIT], ["mrr", "hit_rate@3"])
    assert sorted((s.metric, s.value) for s in report.iter_scores()) == [("hit_rate@3", 10.0), ("mrr", 10.0)]
    tallies = [{k: v for k, v in r.items() if k != "cost"} for r in testing._records]
    assert tallies == [
        {"metric": "mrr", "backend": "native", "checks": 1, "passed": 1, "failed": 0, "errors": 0},
        {"metric": "hit_rate@3", "backend": "native", "checks": 1, "passed": 1, "failed": 0, "errors": 0},
    ]
    assert all(r["cost"]["calls"] == 0 for r in testing._records)  # no judge for retrieval metrics


def test_failure_table_names_sample_metric_value_threshold_and_reason():
    with pytest.raises(AssertionError) as e:
        assert_scores([HIT, MISS, PARTIAL], ["mrr", "precision@3"])
    msg = str(e.value)
    assert msg.splitlines()[0] == "assert_scores: 3 of 6 checks failed"
    assert msg.splitlines()[1].split() == ["sample", "metric", "backend", "value", "threshold", "reason"]
    rows = rows_of(msg)
    # hit's precision@3 (3.33 with one relevant document) passes: the bound is relative to
    # the best achievable, 5 × 1/3 = 1.67 there, 5 × 1 for partial
    assert set(rows) == {("miss", "mrr"), ("miss", "precision@3"), ("partial", "precision@3")}
    assert rows[("partial", "precision@3")][:3] == ["native", "3.33", "5.00"]
    assert rows[("miss", "precision@3")][:3] == ["native", "0.00", "1.67"]
    assert rows[("miss", "mrr")][:3] == ["native", "0.00", "5.00"]
    assert "relevant" in " ".join(rows[("miss", "mrr")][3:])  # the backend's reason
    # rows follow the input order, then the metric order
    assert [ln.split()[:2] for ln in msg.splitlines()[2:]] == [
        ["miss", "mrr"],
        ["miss", "precision@3"],
        ["partial", "precision@3"],
    ]


def test_thresholds_override_the_registry():
    assert_scores([HIT], ["precision@3"], thresholds={"precision@3": 3.0})  # 3.33 >= 3
    assert_scores([HIT], ["precision@3"], thresholds={"precision": 3.0})  # no cutoff: every @k
    assert_scores([HIT], ["mrr"], thresholds={"mrr": 10.0})  # 10 >= 10
    with pytest.raises(AssertionError, match="3.33   5.00"):
        assert_scores([PARTIAL], ["precision@3"])  # the registry's bound


def test_threshold_bound_is_strict_about_the_scale_and_names():
    with pytest.raises(AssertionError) as e:
        assert_scores([HIT], ["precision@3", "mrr"], thresholds={"precision@3": 3.5, "mrr": 10})
    assert set(rows_of(str(e.value))) == {("hit", "precision@3")}
    assert rows_of(str(e.value))[("hit", "precision@3")][:3] == ["native", "3.33", "3.50"]
    with pytest.raises(ValueError, match="'recall@3' is not among the metrics scored"):
        assert_scores([HIT], ["mrr"], thresholds={"recall@3": 5})
    with pytest.raises(ValueError, match="unknown metric 'mrrr'"):
        assert_scores([HIT], ["mrr"], thresholds={"mrrr": 5})
    with pytest.raises(ValueError, match="0–10"):
        assert_scores([HIT], ["mrr"], thresholds={"mrr": 70})


def test_an_errored_task_fails_with_its_error():
    no_ids = Sample(id="no-ids", user_input="q")
    with pytest.raises(AssertionError) as e:
        assert_scores([HIT, no_ids], ["mrr"])
    rows = rows_of(str(e.value))
    assert list(rows) == [("no-ids", "mrr")]
    backend, value, threshold, *reason = rows[("no-ids", "mrr")]
    assert (backend, value, threshold) == ("native", "error", "5.00")
    assert "field 'retrieved_ids' is missing" in " ".join(reason)
    assert str(e.value).startswith("assert_scores: 1 of 2 checks failed")


def test_a_bad_input_row_fails_too():
    with pytest.raises(AssertionError) as e:
        assert_scores(
            [
                {"id": "ok", "user_input": "q", "retrieved_ids": ["a"], "relevant_ids": ["a"]},
                {"id": "broken", "retrieved_ids": "not a list of ids"},
            ],
            ["mrr"],
        )
    msg = str(e.value)
    assert "(input row)" in msg and "error" in msg
    assert "1 of 2 checks failed" in msg


def test_a_pair_that_cannot_run_fails_and_says_why():
    with pytest.raises(AssertionError) as e:
        assert_scores([HIT], ["mrr", "faithfulness"])  # no judge configured
    msg = str(e.value)
    row = next(line for line in msg.splitlines() if "faithfulness" in line)
    assert row.split()[:6] == ["—", "faithfulness", "native", "not", "run", "—"]
    assert "no LLM judge configured" in row
    assert msg.startswith("assert_scores: 1 of 2 checks failed")


def test_an_empty_input_is_no_pass():
    with pytest.raises(AssertionError) as e:
        assert_scores([], ["mrr"])
    assert str(e.value).splitlines()[2].split()[:5] == ["—", "mrr", "native", "not", "run"]
    assert "no score came back" in str(e.value)


def test_not_implemented_is_fine_when_another_backend_scored_the_metric():
    report = assert_scores([HIT], ["mrr"], backend="native,embedding")
    assert report.backends() == ["native"]


def test_an_llm_metric_through_the_loopback_judge(judge_server):
    good = Sample(id="g", user_input="q", response="Paris is in France.", retrieved_contexts=["Paris is in France."])
    report = assert_scores(
        [good],
        ["faithfulness"],
        thresholds={"faithfulness": 0},
        judge={"base_url": judge_server.base_url, "model": "loopback"},
    )
    (score,) = report.iter_scores()
    assert score.ok and judge_server.chat_count > 0
    assert testing._records[0]["cost"]["calls"] == judge_server.chat_count


def test_defaults_precedence_call_over_marker_over_session():
    testing.configure(backend="nosuch")
    with pytest.raises(KeyError, match="unknown backend 'nosuch'"):
        assert_scores([HIT], ["mrr"])
    testing.set_test_defaults(backend="native", thresholds={"mrr": 10})
    assert_scores([HIT], ["mrr"])  # the marker beats the session
    with pytest.raises(KeyError, match="unknown backend 'other'"):
        assert_scores([HIT], ["mrr"], backend="other")  # the call beats the marker
    with pytest.raises(AssertionError):
        assert_scores([HIT], ["precision@3", "mrr"], thresholds={"precision@3": 9})  # the call's thresholds
    testing.set_test_defaults()
    assert testing._test_defaults == {}


def test_keep_the_run_folder_with_out(tmp_path):
    assert_scores([HIT], ["mrr"], out=tmp_path / "run")
    assert (tmp_path / "run" / "scores.jsonl").exists() and (tmp_path / "run" / "summary.json").exists()
    assert_scores([HIT], ["mrr"], out=tmp_path / "run")  # resumed: the same fingerprints, nothing rescored


# ---------------------------------------------------------------- assert_gates


def test_assert_gates_matches_fail_under(tmp_path):
    report = assert_scores([HIT], ["mrr", "precision@3"], thresholds={"precision": 3}, out=tmp_path / "run")
    assert assert_gates(report, {"mrr": 7}) == ["PASS mrr (native): mean 10.00 >= 7.00"]
    assert assert_gates(tmp_path / "run", "mrr=7")  # a run folder path works too
    with pytest.raises(AssertionError, match=r"FAIL precision@3 \(native\): mean 3.33 < 5.00"):
        assert_gates(report, {"precision": 5, "mrr": 7})
    with pytest.raises(AssertionError, match="FAIL recall@3: no score in this run"):
        assert_gates(report, {"recall@3": 2})
    with pytest.raises(ValueError, match="no gates"):
        assert_gates(report, {})


def test_a_gate_on_a_metric_with_errors_fails_like_the_cli():
    from unified.report import Report
    from unified.scores import Score

    report = Report(
        [
            Score.from_raw("mrr", "native", "a", 1.0, threshold=5.0),
            Score.failure("mrr", "native", "b", "judge unavailable"),
        ]
    )
    with pytest.raises(AssertionError, match=r"1 of 2 tasks failed \(50% > --max-error-rate 0\)"):
        assert_gates(report, {"mrr": 5})
    assert assert_gates(report, {"mrr": 5}, max_error_rate=0.5) == ["PASS mrr (native): mean 10.00 >= 5.00"]
