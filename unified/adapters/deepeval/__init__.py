"""What the ``deepeval`` backend serves, read without importing deepeval: one row per
canonical metric with its deepeval 4.3 class, its constructor settings, its raw scale and
what one sample costs in judge calls.

Every mapped deepeval metric scores 0–1, higher is better — HallucinationMetric too since
4.3, where its score is the share of contexts *not* contradicted — so ``value = 10 · raw``.
deepeval decides pass/fail itself (``metric.success = score ≥ threshold``): the backend
gives it the task's bound on its own scale, ``threshold = bound / 10``, so deepeval's
verdict (``details['deepeval_success']``) and ours agree. ``backend.py`` builds each
``LLMTestCase`` and calls ``await metric.a_measure(test_case)``; ``objects.py`` reads
deepeval's ``EvaluationDataset``, test cases and goldens as samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unified.adapters.facts import BackendFacts, FrameworkMetric, ObjectReader

CORRECTNESS_CRITERIA = (
    "Judge whether the actual output is factually correct and complete with respect to "
    "the expected output, for the given input. Penalise facts that contradict the "
    "expected output and facts of the expected output that are missing; do not penalise "
    "different wording, or extra detail that does not contradict the expected output."
)


@dataclass(frozen=True, kw_only=True)
class DeepEvalMetric(FrameworkMetric):
    """How one canonical metric runs on deepeval.

    ``cls``: class name in ``deepeval.metrics``; ``init``: constructor kwargs besides
    model/threshold/async_mode (``evaluation_params`` as ``SingleTurnParams`` member
    names); ``context_from_retrieved``: deepeval reads the test case's ``context``, filled
    from the retrieved contexts; ``note``: recorded in Score.details. ``calls``: measured
    through the judge layer (``benchmarks/calls_per_sample.py``).
    """

    init: dict[str, Any] = field(default_factory=dict)
    context_from_retrieved: bool = False
    note: str | None = None


_LLM_MODE = {"eval_mode": "llm"}  # explicit: other modes route to a hosted service

#: canonical metric -> deepeval metric. The one table the backend obeys.
DEEPEVAL_METRICS: dict[str, DeepEvalMetric] = {
    "faithfulness": DeepEvalMetric(cls="FaithfulnessMetric", init=_LLM_MODE, calls=(4, 0, 0)),
    "answer_relevancy": DeepEvalMetric(cls="AnswerRelevancyMetric", init=_LLM_MODE, calls=(3, 0, 0)),
    # one verdict per context + the reason
    "context_relevancy": DeepEvalMetric(cls="ContextualRelevancyMetric", init=_LLM_MODE, calls=(1, 1, 0)),
    "context_recall": DeepEvalMetric(cls="ContextualRecallMetric", init=_LLM_MODE, calls=(2, 0, 0)),
    "context_precision": DeepEvalMetric(cls="ContextualPrecisionMetric", init=_LLM_MODE, calls=(2, 0, 0)),
    # 4.3.1: score = share of contexts the response does not contradict (higher is
    # better; older releases scored the share of contradictions) -> no inversion here
    "hallucination": DeepEvalMetric(
        cls="HallucinationMetric",
        init=_LLM_MODE,
        context_from_retrieved=True,
        note="deepeval reads `context`; it was filled from the sample's retrieved_contexts",
        calls=(2, 0, 0),
    ),
    # GEval has no eval_mode parameter in 4.3.1: it always judges with the given model
    "answer_correctness": DeepEvalMetric(
        cls="GEval",
        init=dict(
            name="Correctness",
            criteria=CORRECTNESS_CRITERIA,
            evaluation_params=["INPUT", "ACTUAL_OUTPUT", "EXPECTED_OUTPUT"],
        ),
        note="GEval with a correctness rubric (criteria in unified/adapters/deepeval/__init__.py)",
        calls=(2, 0, 0),
    ),
}

FACTS = BackendFacts(
    name="deepeval",
    title="DeepEval",
    summary="DeepEval 4.3.1's metrics, called through deepeval itself over your judge",
    backend="unified.adapters.deepeval.backend:DeepEvalBackend",
    order=30,
    hint="the deepeval backend needs deepeval: pip install 'unified-rag-eval[deepeval]'",
    metrics=DEEPEVAL_METRICS,
    extra="deepeval",
    package="deepeval",
    quiet_env={
        # no PostHog/OpenTelemetry (offline, it also adds seconds at exit)
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        # otherwise deepeval loads .env* from the cwd into os.environ (unrelated keys)
        "DEEPEVAL_DISABLE_DOTENV": "1",
        # otherwise deepeval creates a .deepeval/ folder in the user's working directory
        "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
        "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
    },
    objects=(
        ObjectReader(
            module="deepeval",
            classes=frozenset(
                {"EvaluationDataset", "LLMTestCase", "Golden", "ConversationalTestCase", "ConversationalGolden"}
            ),
            target="unified.adapters.deepeval.objects:records",
        ),
    ),
    doc="deepeval.md",
)
