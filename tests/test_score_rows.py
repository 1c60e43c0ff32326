"""Issue 24 item 8: every Score keeps the position of its input row (and a DataFrame's
index label), so rows whose ids are content hashes join back to the user's data."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from support import as_read

from unified import evaluate


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q3"],
            "retrieved_ids": [["a", "b"], ["b", "a"], ["c"]],
            "relevant_ids": [["a"], ["a"], ["a"]],
        },
        index=["doc-7", "doc-3", "doc-9"],
    )


def test_a_dataframes_index_and_row_are_on_every_score(tmp_path):
    df = _frame()
    report = evaluate(df, metrics=["mrr"], backends=["native"], out=tmp_path / "run", quiet=True)
    scores = report.to_pandas()
    assert list(scores["input_index"]) == ["doc-7", "doc-3", "doc-9"]
    assert list(scores["row"]) == [1, 2, 3]
    joined = df.join(scores.set_index("input_index")["value"])  # the user's join, by their index
    assert list(joined["value"]) == [10.0, 5.0, 0.0]
    lines = [as_read(json.loads(x)) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    assert {(d["row"], d["input_index"]) for d in lines} == {(1, "doc-7"), (2, "doc-3"), (3, "doc-9")}


def test_row_errors_and_records_keep_their_position(tmp_path):
    rows = [
        {"user_input": "q1", "retrieved_ids": ["a"], "relevant_ids": ["a"]},
        {"user_input": ""},  # not a sample: a row error, on row 2
        {"user_input": "q3", "retrieved_ids": ["b", "a"], "relevant_ids": ["a"]},
    ]
    report = evaluate(rows, metrics=["mrr"], backends=["native"], out=tmp_path / "run", quiet=True)
    by_row = {s.row: s for s in report.iter_scores()}
    assert set(by_row) == {1, 2, 3}
    assert by_row[2].row_error and by_row[2].input_index is None
    assert by_row[1].value == 10.0 and by_row[3].value == 5.0


@pytest.mark.deepeval
def test_deepeval_test_cases_without_names_join_back_by_position(tmp_path):
    from deepeval.test_case import LLMTestCase

    cases = [LLMTestCase(input=f"question {i}", actual_output=f"answer {i}") for i in range(3)]
    report = evaluate(cases, metrics=["mrr"], backends=["native"], out=tmp_path / "run", quiet=True)
    scores = sorted(report.iter_scores(), key=lambda s: s.row)
    assert [s.row for s in scores] == [1, 2, 3]
    assert len({s.sample_id for s in scores}) == 3  # content-hash ids, all different
