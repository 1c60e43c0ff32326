"""Errors grouped by cause, on the messages real runs write: a dead judge endpoint, a judge
that never answers, samples missing a field, and malformed input rows."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from judge_server import JudgeServer
from support import as_read

from unified.adapters import missing_field_error
from unified.analysis.errorgroups import cause_of, group_errors
from unified.api import evaluate
from unified.judge import JudgeConfig, build_judges
from unified.metrics import parse_metric
from unified.sample import Sample

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
BAD = ROOT / "examples" / "data" / "bad_rows.jsonl"


def _lines(out: Path) -> list[dict]:
    return [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there any more: connection refused
    return port


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")


def test_a_dead_judge_is_one_cause_for_every_sample(tmp_path):
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    judges = build_judges(JudgeConfig(base_url=url, model="m", max_retries=0), single_judge=True, cache=False)
    evaluate(DATA, "faithfulness", ["native"], judges=judges, out=tmp_path, quiet=True)
    lines = _lines(tmp_path)
    assert len(lines) == 28 and all(d["error"] for d in lines)
    (g,) = group_errors(lines)
    assert g["count"] == 28 and g["backends"] == ["native"] and g["metrics"] == ["faithfulness"]
    # before and after the circuit breaker opened, one cause
    assert g["cause"] == f"judge at {url} (model m) refused the connection"
    assert g["example"]["sample_id"] == lines[0]["sample_id"]
    assert g["example"]["error"] == lines[0]["error"]  # the full text, unmasked


def test_a_hanging_judge_groups_its_timeouts(tmp_path):
    with JudgeServer(hang_seconds=5) as srv:
        srv.force_fault("hang", n=10_000)
        judges = build_judges(
            JudgeConfig(base_url=srv.base_url, model="m", max_retries=0, timeout=0.3), single_judge=True, cache=False
        )
        evaluate(DATA, "faithfulness,precision@3", ["native"], judges=judges, out=tmp_path, quiet=True, max_samples=4)
    groups = group_errors(_lines(tmp_path))
    # precision@3 needs no judge and scored; the four timeouts are one cause
    assert [(g["count"], g["metrics"]) for g in groups] == [(4, ["faithfulness"])]
    assert groups[0]["cause"] == f"judge at {srv.base_url} (model m) did not answer within 0.3s"


def test_missing_fields_group_per_field_and_metric_not_per_sample():
    samples = [Sample(id=f"s{i}", user_input="q?", response="a") for i in range(5)]
    errors = [
        {
            "sample_id": s.id,
            "metric": m,
            "backend": "native",
            "value": None,
            "error": missing_field_error(s, parse_metric(m)),
        }
        for s in samples
        for m in ("faithfulness", "context_recall")
    ]
    groups = group_errors(errors)
    assert [(g["count"], g["cause"]) for g in groups] == [
        (5, "sample '<sample>': field 'retrieved_contexts' is missing or empty (needed by context_recall)"),
        (5, "sample '<sample>': field 'retrieved_contexts' is missing or empty (needed by faithfulness)"),
    ]


def test_row_errors_group_by_what_is_wrong_not_by_line(tmp_path):
    rows = [{"id": f"r{i}", "question": "q", "contexts": "one string, not a list"} for i in range(3)]
    path = tmp_path / "data.jsonl"
    text = "\n".join(json.dumps(r) for r in rows) + '\n{"id": "x", oops}\n'
    path.write_text(text)
    evaluate(path, "mrr", ["native"], out=tmp_path / "run", quiet=True)
    groups = group_errors(_lines(tmp_path / "run"))
    by_cause = {g["cause"]: g["count"] for g in groups}
    assert by_cause == {
        "data.jsonl:<n>: field 'retrieved_contexts': expected a list of strings, got a single "
        "string in '…'; wrap it in a list: [\"…\"]": 3,
        "data.jsonl:<n>: invalid JSON: Expecting property name enclosed in double quotes (char <n>)": 1,
    }


def test_judge_error_inside_a_framework_message_is_the_same_cause():
    url = "http://127.0.0.1:9/v1"
    core = f"chat model=fake at {url}: connection failed (Connection error.) (gave up after 4 retries)"
    errors = [
        {
            "sample_id": "q1",
            "metric": "faithfulness",
            "backend": "native",
            "error": f"claims response extraction failed: {core}",
        },
        {
            "sample_id": "q2",
            "metric": "faithfulness",
            "backend": "ragas",
            "error": f"ragas Faithfulness: JudgeConnectionError: {core}",
        },
        {
            "sample_id": "q3",
            "metric": "context_relevancy",
            "backend": "deepeval",
            "error": f"deepeval ContextualRelevancyMetric: JudgeConnectionError: {core}",
        },
        {
            "sample_id": "q4",
            "metric": "context_relevancy",
            "backend": "native",
            "error": f"contexts: both judges failed: A: {core}; B: {core}",
        },
        {"sample_id": "q5", "metric": "faithfulness", "backend": "native", "value": 7.0},  # no error
    ]
    (g,) = group_errors(errors)
    assert g["count"] == 4 and g["cause"] == f"judge at {url} (model fake) Connection error."
    assert g["backends"] == ["deepeval", "native", "ragas"]


@pytest.mark.parametrize(
    "a, b, same",
    [
        # quoted sample ids and values are masked, names after "field"/"metric" are kept
        (
            ("sample 'q1': field 'reference' is missing", "q1"),
            ("sample 'q22': field 'reference' is missing", "q22"),
            True,
        ),
        (
            ("sample 'q1': field 'reference' is missing", "q1"),
            ("sample 'q1': field 'response' is missing", "q1"),
            False,
        ),
        (("ragas ContextRecall: returned nan", "a"), ("ragas ContextRecall: returned 1.5", "b"), True),
        # an HTTP status is a cause, not a value: 429 and 500 stay apart
        (("chat model=m at http://h:1/v1: HTTP 429", "a"), ("chat model=m at http://h:1/v1: HTTP 500", "a"), False),
        (
            ("data.jsonl:3: field 'retrieved_contexts[1]': expected a string, got int", "row:3"),
            ("data.jsonl:9: field 'retrieved_contexts[0]': expected a string, got int", "row:9"),
            True,
        ),
        # a long content-hash id is masked even where it is not quoted
        (
            ("no retrieved_ids for 0123456789abcdef", "0123456789abcdef"),
            ("no retrieved_ids for fedcba9876543210", "fedcba9876543210"),
            True,
        ),
    ],
)
def test_cause_masks_only_task_specific_parts(a, b, same):
    assert (cause_of(*a) == cause_of(*b)) is same


def test_a_named_fields_alternative_stays_a_name_and_values_stay_masked():
    """``missing field 'relevant_ids' (or 'graded_relevance')`` was grouped as ``(or '…')``,
    hiding the other field that would do."""
    assert cause_of("missing field 'relevant_ids' (or 'graded_relevance')", "s1") == (
        "missing field 'relevant_ids' (or 'graded_relevance')"
    )
    assert cause_of("got 'abc' (or 'def')", "s1") == "got '…' (or '…')"
    assert cause_of("field 'x' (or 'two words')", "s1") == "field 'x' (or '…')"


def test_urls_keep_their_digits_and_apostrophes_are_not_quotes():
    assert (
        cause_of("chat model=m at http://10.0.0.1:8000/v1: HTTP 503 (busy for 2.5s)", "x")
        == "chat model=m at http://10.0.0.1:8000/v1: HTTP 503 (busy for 2.5s)"
    )
    assert (
        cause_of("chat model=m at http://10.0.0.1:8000/v1: timed out after 2.5s", "x")
        == "judge at http://10.0.0.1:8000/v1 (model m) did not answer within 2.5s"
    )
    assert (
        cause_of("the judge doesn't answer for the sample's \"long quoted text\"", "s")
        == "the judge doesn't answer for the sample's \"…\""
    )
