"""UnifiedEvaluator inside Phoenix's dataframe evaluation (``arize-phoenix-evals`` 3.x):
our values / 10 in Phoenix's score columns, a failed row in its execution details, not
retried.

The loopback judge is scripted (``judge_answers_integrations``): a grounded answer scores
10, one about zebras 0, one mentioning ``brokenjudge`` fails.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("phoenix.evals", reason="arize-phoenix-evals is not installed")

import pandas as pd
from judge_answers_integrations import grounding_judge
from judge_server import JudgeServer
from phoenix.evals import async_evaluate_dataframe, bind_evaluator, evaluate_dataframe

from unified.api import evaluate
from unified.integrations.phoenix import UnifiedEvaluator

ROWS = [
    {
        "input": "What is the capital of France?",
        "output": "Paris is the capital of France.",
        "context": ["Paris is the capital of France.", "The Seine flows through Paris."],
    },
    {"input": "What do zebras eat?", "output": "The moon is made of cheese.", "context": ["Zebras graze on grass."]},
]


@pytest.fixture
def judge(monkeypatch):
    with JudgeServer(answer_fn=grounding_judge) as srv:
        monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "loopback")
        yield srv


def ours(rows):
    """evaluate()'s values for ``rows``, in row order (scores are written as they finish)."""
    samples = [
        {"id": f"r{i}", "user_input": r["input"], "response": r["output"], "retrieved_contexts": r["context"]}
        for i, r in enumerate(rows)
    ]
    report = evaluate(samples, ["faithfulness"], quiet=True, progress=False, cache=False)
    values = {s.sample_id: s.value for s in report.iter_scores()}
    return [values[f"r{i}"] for i in range(len(rows))]


def test_dataframe_evaluation_gives_our_values_over_ten(judge):
    out = evaluate_dataframe(
        dataframe=pd.DataFrame(ROWS), evaluators=[UnifiedEvaluator("faithfulness", cache=False)], hide_tqdm_bar=True
    )
    scores = list(out["unified_faithfulness_score"])
    assert [s["score"] for s in scores] == [v / 10 for v in ours(ROWS)] == [1.0, 0.0]
    assert [s["label"] for s in scores] == ["pass", "fail"]
    assert scores[0]["explanation"] and scores[0]["metadata"]["backend_values_0_10"] == {"native": 10.0}
    assert scores[0]["kind"] == "llm" and scores[0]["direction"] == "maximize"


def test_async_evaluation_and_bound_column_names(judge):
    df = pd.DataFrame([{"question": r["input"], "answer": r["output"], "docs": r["context"]} for r in ROWS])
    evaluator = bind_evaluator(
        evaluator=UnifiedEvaluator("faithfulness", backend=["native", "ragas"], cache=False),
        input_mapping={"input": "question", "output": "answer", "context": "docs"},
    )
    out = asyncio.run(async_evaluate_dataframe(dataframe=df, evaluators=[evaluator], hide_tqdm_bar=True))
    scores = list(out["unified_faithfulness_jury_median_native_ragas_score"])  # the jury's own name
    assert [s["score"] for s in scores] == [1.0, 0.0]
    assert scores[0]["metadata"]["backend_values_0_10"] == {"native": 10.0, "ragas": 10.0}


def test_a_failed_row_is_phoenix_own_error_and_is_not_retried(judge):
    rows = [*ROWS[:1], {"input": "brokenjudge?", "output": "x", "context": ["t"]}]
    evaluator = UnifiedEvaluator("faithfulness", cache=False, max_retries=0)
    out = evaluate_dataframe(
        dataframe=pd.DataFrame(rows), evaluators=[evaluator], hide_tqdm_bar=True, exit_on_error=False
    )
    details = list(out["unified_faithfulness_execution_details"])
    assert details[0]["status"] == "COMPLETED" and details[1]["status"] == "FAILED"
    assert len(details[1]["exceptions"]) == 1 and "faithfulness on native" in details[1]["exceptions"][0]
    assert out["unified_faithfulness_score"][0]["score"] == 1.0 and out["unified_faithfulness_score"][1] is None


def test_inputs_the_metric_needs_are_required():
    schema = UnifiedEvaluator("faithfulness").input_schema.model_json_schema()
    # faithfulness needs no question (issue 23 part 4): input is optional
    assert set(schema["required"]) == {"output", "context"}


def test_empty_optional_cells_and_array_lists_are_read(judge):
    import numpy as np

    df = pd.DataFrame(
        [
            {**ROWS[0], "context": np.array(ROWS[0]["context"]), "expected": "Paris"},
            {**ROWS[1], "expected": float("nan")},
        ]
    )
    out = evaluate_dataframe(
        dataframe=df, evaluators=[UnifiedEvaluator("faithfulness", cache=False)], hide_tqdm_bar=True, max_retries=0
    )
    assert [s["score"] for s in out["unified_faithfulness_score"]] == [1.0, 0.0]
