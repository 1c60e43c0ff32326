"""What the ``patronus`` backend serves, read without importing the Patronus SDK: Patronus
AI's hosted RAG evaluators, called through the ``patronus`` SDK's ``AsyncRemoteEvaluator``
(``POST /v1/evaluate``) with your Patronus API key.

These evaluators run on Patronus's servers, not on your judge: the room uses no judge of
ours (``uses_judges=False``), and without a key every pair is refused before anything is
sent (one line naming ``PATRONUS_API_KEY``). Each evaluator answers a verdict, ``pass``
true or false, with an explanation; the raw value is the verdict as a number:

    hallucination        retrieval-hallucination         pass → raw 1, fail → raw 0
    answer_relevancy     retrieval-answer-relevance      value = 10 · raw
    context_relevancy    retrieval-context-relevance     (the evaluator's own ``score_raw``
    context_sufficiency  retrieval-context-sufficiency    is kept in ``details``)

One ``POST /v1/evaluate`` per metric per sample (plus, once per evaluator and backend, the
SDK's ``GET /v1/evaluators`` that resolves its id and default criteria); none of them is a
judge call, so ``--dry-run`` counts 0 judge calls for this backend — Patronus bills them.
Patronus's open judge, Lynx, runs on your own judge in the ``lynx`` room.
"""

from __future__ import annotations

from dataclasses import dataclass

from unified.adapters.facts import BackendFacts, FrameworkMetric

Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"
PASS_FAIL = "evaluator verdict pass (raw 1) or fail (raw 0); value = 10·raw"
#: the SDK's own settings (its Config: ``PATRONUS_API_KEY``, ``PATRONUS_API_URL``)
KEY_ENV, URL_ENV = "PATRONUS_API_KEY", "PATRONUS_API_URL"
DEFAULT_API_URL = "https://api.patronus.ai"


@dataclass(frozen=True, kw_only=True)
class PatronusEvaluator(FrameworkMetric):
    """How one canonical metric runs on Patronus.

    ``cls``: the evaluator's id (or alias) as ``RemoteEvaluator`` takes it; ``reads``:
    Sample field -> keyword of ``evaluate()`` (``task_input``, ``task_output``,
    ``task_context``, ``gold_answer``); a field the row lacks is sent as None.
    """

    reads: dict[str, str]
    scale: str | None = PASS_FAIL
    calls: tuple[int, int, int] | None = (0, 0, 0)  # no judge call: Patronus answers


#: canonical metric -> Patronus evaluator. The one table the backend obeys.
PATRONUS_EVALUATORS: dict[str, PatronusEvaluator] = {
    # a pass/fail verdict: our pass/fail metric (faithfulness, a share of supported claims,
    # is Lynx's in the lynx room); the evaluator judges the answer to a question
    "hallucination": PatronusEvaluator(
        cls="retrieval-hallucination",
        reads={Q: "task_input", R: "task_output", C: "task_context"},
        needs=(Q,),
    ),
    "answer_relevancy": PatronusEvaluator(cls="retrieval-answer-relevance", reads={Q: "task_input", R: "task_output"}),
    "context_relevancy": PatronusEvaluator(
        cls="retrieval-context-relevance", reads={Q: "task_input", C: "task_context"}
    ),
    "context_sufficiency": PatronusEvaluator(
        cls="retrieval-context-sufficiency",
        reads={Q: "task_input", R: "task_output", C: "task_context", REF: "gold_answer"},
    ),
}

FACTS = BackendFacts(
    name="patronus",
    title="Patronus (hosted)",
    summary="Patronus AI's hosted RAG evaluators through its SDK, with your Patronus API key (not your judge)",
    backend="unified.adapters.patronus.backend:PatronusBackend",
    order=91,
    hint="the patronus backend needs the Patronus SDK: pip install 'unified-rag-eval[patronus]'",
    metrics=PATRONUS_EVALUATORS,
    extra="patronus",
    package="patronus",
    uses_judges=False,
    # the names these metrics had here before the room existed (Patronus's evaluator
    # names without their "retrieval-" family prefix)
    more_names={
        "answer_relevancy": {"patronus_short": "answer-relevance"},
        "context_relevancy": {"patronus_short": "context-relevance"},
        "context_sufficiency": {"patronus_short": "context-sufficiency"},
    },
    # no switch: the SDK exports traces and evaluation logs only after patronus.init(),
    # which this backend never calls (it hands each evaluator its own API client), and
    # it reads its settings only there; a test records every socket of a run
    doc="patronus.md",
)
