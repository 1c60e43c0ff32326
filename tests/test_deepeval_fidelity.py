"""Fidelity of the DeepEval backend: for every mapped metric, the adapter's raw score equals
what deepeval itself computes through its documented API (``await
metric.a_measure(LLMTestCase(...))`` with our model) on the same sample with the same
judge answers, to 1e-9, and ``value == 10 × raw`` (no inversion: every mapped deepeval
metric, HallucinationMetric included in 4.3.1, is higher-is-better).

Method: run the backend against the loopback judge server with a SQLite judge cache; then
build a second judge bundle on the SAME cache, call deepeval directly and check that the
server saw zero new requests. Loopback answers are random-but-schema-valid (plumbing, not
judgment quality); where deepeval fails on them, both paths must fail the same way.
"""

from __future__ import annotations

import pytest

pytest.importorskip("deepeval", reason="the deepeval extra is not installed")

from deepeval import metrics as dm
from deepeval.test_case import LLMTestCase, SingleTurnParams
from judge_server import JudgeServer, binary_answer_fn

from unified.adapters import get_backend

# the adapter first: it switches deepeval's telemetry and file writes off before import
from unified.adapters.deepeval import CORRECTNESS_CRITERIA, DEEPEVAL_METRICS
from unified.adapters.deepeval.backend import JudgeDeepEvalLLM
from unified.judge import JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric
from unified.sample import Sample

pytestmark = pytest.mark.deepeval

SAMPLE = Sample(
    user_input="What is the capital of France, and which river runs through it?",
    response="Paris is the capital of France. The Seine runs through Paris.",
    retrieved_contexts=[
        "Paris is the capital and largest city of France.",
        "The Seine flows through Paris before reaching the English Channel.",
        "Lyon is known for its cuisine.",
    ],
    reference="The capital of France is Paris; the Seine flows through it.",
    id="fr-1",
)
S = SAMPLE
RAG_CASE = LLMTestCase(
    input=S.user_input, actual_output=S.response, expected_output=S.reference, retrieval_context=S.retrieved_contexts
)
# HallucinationMetric reads `context`: the adapter documents that it fills it from the
# retrieved contexts
HALLU_CASE = LLMTestCase(input=S.user_input, actual_output=S.response, context=S.retrieved_contexts)

# The direct calls, written from deepeval's documentation, independently of the adapter.
DIRECT = {
    "faithfulness": (lambda m: dm.FaithfulnessMetric(model=m, eval_mode="llm"), RAG_CASE),
    "answer_relevancy": (lambda m: dm.AnswerRelevancyMetric(model=m, eval_mode="llm"), RAG_CASE),
    "context_relevancy": (lambda m: dm.ContextualRelevancyMetric(model=m, eval_mode="llm"), RAG_CASE),
    "context_recall": (lambda m: dm.ContextualRecallMetric(model=m, eval_mode="llm"), RAG_CASE),
    "context_precision": (lambda m: dm.ContextualPrecisionMetric(model=m, eval_mode="llm"), RAG_CASE),
    "hallucination": (lambda m: dm.HallucinationMetric(model=m, eval_mode="llm"), HALLU_CASE),
    "answer_correctness": (
        lambda m: dm.GEval(
            name="Correctness",
            criteria=CORRECTNESS_CRITERIA,
            model=m,
            evaluation_params=[
                SingleTurnParams.INPUT,
                SingleTurnParams.ACTUAL_OUTPUT,
                SingleTurnParams.EXPECTED_OUTPUT,
            ],
        ),
        RAG_CASE,
    ),
}


# integers in {0, 1} (GEval's 0–10 score included) keep scores in deepeval's range
_scripted = binary_answer_fn()


def _judges(srv: JudgeServer, cache_path):
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), cache_path=cache_path)


def test_direct_table_covers_every_mapped_metric():
    assert set(DIRECT) == set(DEEPEVAL_METRICS)


def test_hallucination_is_higher_is_better_in_this_deepeval():
    """4.3.1 scores the share of contexts NOT contradicted (passing verdict = yes), so the
    table must not invert it; this guards against a deepeval upgrade flipping it back."""
    import inspect

    from deepeval.metrics.hallucination import hallucination

    src = inspect.getsource(hallucination.HallucinationMetric._calculate_score)
    assert "passing=(Verdict.YES,)" in src
    assert DEEPEVAL_METRICS["hallucination"].higher_is_better is True


@pytest.mark.parametrize("metric", sorted(DEEPEVAL_METRICS))
async def test_adapter_equals_direct_deepeval_call(metric, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "c.sqlite"
    with JudgeServer(answer_fn=_scripted) as srv:
        judges_a = _judges(srv, cache)
        score = (await get_backend("deepeval", judges_a).score(SAMPLE, [parse_metric(metric)]))[0]
        await judges_a.aclose()
        assert srv.request_count > 0, "the adapter must have asked the judge"
        assert score.metric == metric and score.backend == "deepeval"

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        build, case = DIRECT[metric]
        direct_metric = build(JudgeDeepEvalLLM(judges_b))
        direct_raw = direct_error = None
        # task_scope only gives the judge cache its per-task occurrence index
        with task_scope("deepeval", metric, SAMPLE.id):
            try:
                direct_raw = await direct_metric.a_measure(case, _show_indicator=False)
            except Exception as e:  # compared with the adapter's error below
                direct_error = f"{type(e).__name__}: {e}"
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    assert not (tmp_path / ".deepeval").exists()
    if score.ok:
        assert direct_error is None
        assert abs(score.raw - float(direct_raw)) <= 1e-9
        assert 0.0 <= direct_raw <= 1.0
        assert abs(score.value - 10 * direct_raw) <= 1e-9
        assert score.reason == direct_metric.reason
        assert score.cost.calls > 0
    else:
        assert score.value is None
        assert score.error.startswith(f"deepeval {DEEPEVAL_METRICS[metric].cls}: ")
        assert direct_error is not None
        assert " ".join(direct_error.split())[:200] in score.error
