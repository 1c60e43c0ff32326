"""UnifiedMetric inside DeepEval: ``assert_test``, ``deepeval.evaluate``, ``a_measure``, and
a user's test file under ``deepeval test run`` and plain pytest (subprocesses).

The loopback judge is scripted (``judge_answers_integrations``): a grounded answer scores
10 (DeepEval score 1.0), one about zebras 0, one mentioning ``brokenjudge`` fails.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("deepeval", reason="the deepeval extra is not installed")

from deepeval import assert_test
from deepeval import evaluate as deepeval_evaluate
from deepeval.errors import MissingTestCaseParamsError
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
from deepeval.test_case import LLMTestCase
from judge_answers_integrations import grounding_judge
from judge_server import JudgeServer

from unified.api import evaluate
from unified.integrations.deepeval import IntegrationError, UnifiedMetric

pytestmark = pytest.mark.deepeval

GOOD = LLMTestCase(
    name="good",
    input="What is the capital of France?",
    actual_output="Paris is the capital of France.",
    retrieval_context=["Paris is the capital of France.", "The Seine flows through Paris."],
)
BAD = LLMTestCase(
    name="bad",
    input="What do zebras eat?",
    actual_output="The moon is made of cheese.",
    retrieval_context=["Zebras graze on grass."],
)
BROKEN = LLMTestCase(name="broken", input="brokenjudge?", actual_output="Anything.", retrieval_context=["Text."])
QUIET = {
    "display_config": DisplayConfig(show_indicator=False, print_results=False),
    "async_config": AsyncConfig(run_async=True),
}


@pytest.fixture
def judge(monkeypatch):
    with JudgeServer(answer_fn=grounding_judge) as srv:
        monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "loopback")
        yield srv


def test_threshold_is_on_deepevals_scale():
    assert UnifiedMetric("faithfulness").threshold == 0.7  # our default bound 7 / 10
    assert UnifiedMetric("faithfulness", threshold=0.9).threshold == 0.9
    assert UnifiedMetric("faithfulness", strict_mode=True).threshold == 1.0
    with pytest.raises(ValueError, match="0.7"):
        UnifiedMetric("faithfulness", threshold=7)


def test_measure_gives_our_value_over_ten(judge):
    ours = {
        s.sample_id: s.value
        for s in evaluate([GOOD, BAD], ["faithfulness"], quiet=True, progress=False, cache=False).iter_scores()
    }
    m = UnifiedMetric("faithfulness", cache=False)
    assert m.measure(GOOD) == ours["good"] / 10 == 1.0 and m.is_successful() and m.success is True
    assert m.reason and m.score_breakdown == {"native": 1.0}
    assert m.measure(BAD) == ours["bad"] / 10 == 0.0 and not m.is_successful()


def test_assert_test_passes_and_fails(judge):
    assert_test(GOOD, [UnifiedMetric("faithfulness", threshold=0.7)])
    with pytest.raises(AssertionError, match=r"Unified faithfulness \[native\] \(score: 0.0, threshold: 0.7"):
        assert_test(BAD, [UnifiedMetric("faithfulness", threshold=0.7)])


def test_deepeval_evaluate_holds_our_values_per_backend(judge):
    metric = UnifiedMetric("faithfulness", backend=["native", "ragas"], cache=False)
    result = deepeval_evaluate([GOOD, BAD], [metric], **QUIET)
    by_name = {r.name: r.metrics_data[0] for r in result.test_results}
    assert (by_name["good"].score, by_name["good"].success) == (1.0, True)
    assert (by_name["bad"].score, by_name["bad"].success) == (0.0, False)
    assert by_name["good"].reason.startswith("jury median 10.00/10 of native 10.00, ragas 10.00")
    assert by_name["good"].evaluation_model == "unified-rag-eval jury:median(native,ragas)"


def test_a_failed_task_is_an_error_in_deepeval(judge):
    metric = UnifiedMetric("faithfulness", cache=False, max_retries=0)
    with pytest.raises(IntegrationError, match="sample 'broken', faithfulness on native"):
        deepeval_evaluate([BROKEN], [metric], **QUIET)
    result = deepeval_evaluate([GOOD, BROKEN], [metric], error_config=ErrorConfig(ignore_errors=True), **QUIET)
    data = {r.name: r.metrics_data[0] for r in result.test_results}
    assert data["broken"].success is False and data["broken"].score is None
    assert "sample 'broken'" in data["broken"].error
    assert data["good"].score == 1.0 and data["good"].error is None


def test_a_missing_field_is_deepevals_own_error_before_any_call(judge):
    metric = UnifiedMetric("faithfulness")
    with pytest.raises(MissingTestCaseParamsError, match="retrieval_context"):
        metric.measure(LLMTestCase(input="q", actual_output="a"))
    assert judge.chat_count == 0


def test_a_measure_runs_on_deepevals_loop(judge):
    import asyncio

    async def both():
        a, b = UnifiedMetric("faithfulness", cache=False), UnifiedMetric("faithfulness", cache=False)
        return await asyncio.gather(a.a_measure(GOOD), b.a_measure(BAD))

    assert asyncio.run(both()) == [1.0, 0.0]


USER_TESTS = """
from deepeval import assert_test
from deepeval.test_case import LLMTestCase
from unified.integrations.deepeval import UnifiedMetric


def test_grounded_answer():
    case = LLMTestCase(input="What is the capital of France?", actual_output="Paris is the capital of France.",
                       retrieval_context=["Paris is the capital of France."])
    assert_test(case, [UnifiedMetric("faithfulness", threshold=0.7)])


def test_ungrounded_answer():
    case = LLMTestCase(input="What do zebras eat?", actual_output="The moon is made of cheese.",
                       retrieval_context=["Zebras graze on grass."])
    assert_test(case, [UnifiedMetric("faithfulness", threshold=0.7)])
"""


DEEPEVAL_CLI = "import sys; from deepeval.cli.main import app; sys.argv[0] = 'deepeval'; sys.exit(app())"


def _user_env(judge) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "UNIFIED_JUDGE"))}
    env.update(UNIFIED_JUDGE_BASE_URL=judge.base_url, UNIFIED_JUDGE_MODEL="loopback")
    return env


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["deepeval test run", "pytest"])
def test_a_user_test_file_passes_and_fails_as_expected(judge, tmp_path, runner):
    (tmp_path / "test_rag.py").write_text(USER_TESTS, encoding="utf-8")
    if runner == "pytest":
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "test_rag.py"]
    else:
        # the `deepeval` console script, run by this interpreter (a copied venv's script would
        # name the interpreter of the venv it was installed into)
        cmd = [sys.executable, "-c", DEEPEVAL_CLI, "test", "run", "test_rag.py"]
    r = subprocess.run(cmd, cwd=tmp_path, env=_user_env(judge), capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "1 passed" in out and "1 failed" in out, out
    assert "Unified faithfulness [native] (score: 0.0, threshold: 0.7" in out, out
    assert judge.chat_count > 0


RANKINGS = [  # (retrieved, relevant): perfect with one relevant, half-way, none found, all found
    (["r1", "x", "y"], ["r1"]),
    (["d1", "d2", "d3", "d4"], ["d3", "d9"]),
    (["x", "y", "z"], ["r1"]),
    (["r1", "r2"], ["r1", "r2"]),
]


@pytest.mark.parametrize("metric", ["precision@3", "recall@3", "mrr", "ndcg@3"])
def test_success_is_our_verdict_for_retrieval_metrics(metric):
    """precision@k and recall@k pass relative to the best value the sample allows: a
    perfect ranking with one relevant id gives P@3 = 0.333, which ``evaluate`` passes
    and DeepEval failed against the fixed 0.5 (``deepeval test run`` failed a test our
    own run passed). With the default threshold, ``success`` is ``evaluate``'s verdict."""
    for retrieved, relevant in RANKINGS:
        unified = {"retrieved_ids": retrieved, "relevant_ids": relevant}
        case = LLMTestCase(
            input="q", actual_output="a", retrieval_context=["c"] * len(retrieved), metadata={"unified": unified}
        )
        um = UnifiedMetric(metric)
        um.measure(case)
        ours = evaluate([{"user_input": "q", "response": "a", **unified}], metric, quiet=True, progress=False)
        (score,) = ours.iter_scores()
        assert um.success is score.passed, (metric, retrieved, relevant, um.score, um.reason)
        assert um.score == score.value / 10


def test_a_given_threshold_is_relative_for_precision_too():
    case = LLMTestCase(
        input="q",
        actual_output="a",
        retrieval_context=["c"] * 3,
        metadata={"unified": {"retrieved_ids": ["r1", "x", "y"], "relevant_ids": ["r1"]}},
    )
    strict = UnifiedMetric("precision@3", strict_mode=True)
    assert strict.measure(case) == pytest.approx(1 / 3) and strict.is_successful()  # the best it allows
    assert "pass bound here 0.333 = threshold 1 × 0.333" in strict.reason
    half = UnifiedMetric("precision@3", threshold=0.5)
    half.measure(case)
    assert half.success and half.threshold == 0.5  # the attribute DeepEval copies stays what was given
    worse = LLMTestCase(
        input="q",
        actual_output="a",
        retrieval_context=["c"] * 3,
        metadata={"unified": {"retrieved_ids": ["x", "y", "z"], "relevant_ids": ["r1"]}},
    )
    assert half.measure(worse) == 0.0 and not half.is_successful()
