"""Report: tables, files, cross-check and the offline HTML page (structure checks; the
browser test renders it for real)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from unified.report import Report
from unified.sample import Sample
from unified.scores import Cost, Score, aggregate_by

XSS = "<script>alert('x')</script>"


def _samples(n: int = 8) -> list[Sample]:
    return [
        Sample(
            id=f"q{i}",
            user_input=f"What is item {i}? {XSS if i == 0 else ''}",
            response=f"Item {i} is a thing & more",
            retrieved_contexts=[f"ctx {i} <b>bold</b>", "other"],
            reference=f"ref {i}",
        )
        for i in range(n)
    ]


def _scores(samples: list[Sample]) -> list[Score]:
    out = []
    for i, s in enumerate(samples):
        for b, shift in (("native", 0.0), ("ragas", 0.15)):
            raw = min(1.0, (i % 5) / 5 + shift * (i % 2))
            out.append(
                Score.from_raw(
                    "faithfulness",
                    b,
                    s.id,
                    raw,
                    threshold=7.0,
                    reason=f"{b} says {i} <i>",
                    details={"judge_a": [1, 2], "judge_b": [2, 2]},
                    cost=Cost(calls=2, input_tokens=100, output_tokens=10, seconds=0.5),
                )
            )
            out.append(Score.from_raw("context_recall", b, s.id, (i % 3) / 2, threshold=5.0, reason="r"))
    # a later line for the same task: it wins (a retry that failed, a run read after kill -9)
    out.append(Score.failure("context_recall", "ragas", "q7", "JudgeTimeoutError: no answer"))
    return out


@pytest.fixture
def report() -> Report:
    s = _samples()
    return Report(_scores(s), s)


def test_to_pandas_one_row_per_task_with_flat_cost(report):
    df = report.to_pandas()
    # 33 lines, 32 tasks: the repeated (q7, context_recall, ragas) counts once, as its last line
    assert len(df) == len(report.scores) == 32
    for col in (
        "metric",
        "backend",
        "sample_id",
        "value",
        "raw",
        "raw_lo",
        "raw_hi",
        "reason",
        "error",
        "cost_calls",
        "cost_input_tokens",
        "cost_seconds",
        "details",
    ):
        assert col in df.columns
    assert df["cost_calls"].sum() == 32
    assert df["value"].isna().sum() == 1  # the failure: missing, never a fake 0


def test_wide_pivot(report):
    w = report.wide()
    assert w.shape == (8, 4)
    assert set(w.columns) == {
        "native:faithfulness",
        "ragas:faithfulness",
        "native:context_recall",
        "ragas:context_recall",
    }
    assert w.loc["q1", "native:faithfulness"] == pytest.approx(2.0)


def test_wide_keeps_a_sample_and_a_pair_that_failed_everywhere():
    # pandas' pivot_table drops all-NaN rows and columns by default: a sample whose every
    # task failed, and a metric that failed on every sample, left the table without a word
    s = _samples(3)
    scores = [Score.from_raw("faithfulness", "native", x.id, 0.5) for x in s[:2]]
    scores += [Score.failure("faithfulness", "native", s[2].id, "judge failed")]
    scores += [Score.failure("context_recall", "native", x.id, "judge failed") for x in s]
    w = Report(scores, s).wide()
    assert w.shape == (3, 2) and list(w.index) == ["q0", "q1", "q2"]
    assert w["native:context_recall"].isna().all() and w.loc["q2"].isna().all()


def test_summary_equals_aggregate_by(report):
    got = [a.model_dump() for a in report.summary()]
    want = [a.model_dump() for a in aggregate_by(report.scores)]  # one line per task
    assert len(got) == len(want) == 4
    for g, w in zip(got, want):
        for k in ("metric", "backend", "count", "scored", "errors", "pass_rate"):
            assert g[k] == w[k]
        assert g["mean"] == pytest.approx(w["mean"])


def test_jsonl_and_parquet_round_trip(report, tmp_path):
    report.to_jsonl(tmp_path / "s.jsonl")
    back = [Score.model_validate_json(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert back == report.scores and back[-1].error == "JudgeTimeoutError: no answer"
    report.to_parquet(tmp_path / "s.parquet")
    df = pd.read_parquet(tmp_path / "s.parquet")
    assert len(df) == 32 and json.loads(df["details"].iloc[0]) == {"judge_a": [1, 2], "judge_b": [2, 2]}


def test_crosscheck_only_with_two_backends(report):
    cc = report.crosscheck()
    assert cc is not None and set(cc["backends"]) == {"native", "ragas"}
    assert "faithfulness" in cc["metrics"]
    one = Report([s for s in report.scores if s.backend == "native"])
    assert one.crosscheck() is None


def test_from_dir_reads_run_folder(report, tmp_path):
    report.to_jsonl(tmp_path / "scores.jsonl")
    with open(tmp_path / "samples.jsonl", "w") as f:
        for s in _samples():
            f.write(s.model_dump_json(exclude_none=True) + "\n")
    r = Report.from_dir(tmp_path)
    assert len(r.scores) == 32 and set(r.samples()) == {f"q{i}" for i in range(8)}
    assert r.error_list() == [
        {"sample_id": "q7", "metric": "context_recall", "backend": "ragas", "error": "JudgeTimeoutError: no answer"}
    ]
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        Report.from_dir(tmp_path / "nope")
    for path in (tmp_path, str(tmp_path)):  # Report(DIR) reads the folder, not DIR's characters
        assert Report(path).run_dir == tmp_path and len(Report(path).scores) == 32
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        Report(str(tmp_path / "nope"))


def test_html_is_self_contained_escaped_and_complete(report, tmp_path):
    page = report.write_html(tmp_path / "r.html").read_text()
    # offline: no external resource of any kind
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "url(http" not in page
    # user text is escaped everywhere
    assert XSS not in page and "&lt;script&gt;alert(" in page
    assert "<b>bold</b>" not in page
    # plots: distributions (2 metrics) + heatmap + scatters (2 metrics x 1 pair)
    assert page.count("<svg") == 5
    for section in (
        "id='summary'",
        "id='cost'",
        "id='dist'",
        "id='agreement'",
        "id='disagree'",
        "id='errors'",
        "id='samples'",
    ):
        assert section in page
    # drill-down carries question, contexts, response, reference, reasons and judge ratings
    block = page[page.index("<details class='sample' id=") :]
    assert "What is item" in block and "ctx " in block and "Item " in block and "ref " in block
    assert "native says" in block and "judge_a" in block
    assert "JudgeTimeoutError: no answer" in page


def test_html_single_backend_has_no_agreement_section(tmp_path):
    s = _samples(3)
    page = Report([x for x in _scores(s) if x.backend == "native"], s).write_html(tmp_path / "r.html").read_text()
    assert "id='agreement'" not in page and page.count("<svg") == 2
