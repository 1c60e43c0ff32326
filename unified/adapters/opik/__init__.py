"""What the ``opik`` backend serves, without importing opik: one row per canonical metric
with opik's class, the fields it reads, its raw scale and how that scale becomes 0–10.

Every mapped opik metric is one LLM call that returns a JSON verdict with a score in
[0, 1] and a reason (opik's own parsers refuse a score outside [0, 1]):

    faithfulness, hallucination   Hallucination.score   1 = hallucinated   value = 10 · (1 − raw)
    answer_relevancy              AnswerRelevance        1 = relevant       value = 10 · raw
    context_precision             ContextPrecision       1 = precise        value = 10 · raw
    context_recall                ContextRecall          1 = recalled       value = 10 · raw

The registry, ``--dry-run`` and ``unified-eval metrics`` read this module; the backend
(``backend.py``) resolves each class name in ``opik.evaluation.metrics``. Measured: each
opik judge metric sends exactly one request; nothing is shared between metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unified.adapters.facts import BackendFacts, FrameworkMetric

Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"


@dataclass(frozen=True, kw_only=True)
class OpikMetric(FrameworkMetric):
    """How one canonical metric runs on opik.

    ``cls``: class name in ``opik.evaluation.metrics``; ``reads``: Sample field -> the
    keyword of opik's ``score``/``ascore`` (a field that is empty is passed as None, and
    opik decides); ``blank_ok``: fields opik reads but can do without, passed as "" when
    absent (None would be printed into its prompt as "None"); ``init``: fixed constructor
    kwargs.
    """

    reads: dict[str, str]
    blank_ok: tuple[str, ...] = ()
    init: dict[str, Any] = field(default_factory=dict)


_HALLU = OpikMetric(
    cls="Hallucination",
    reads={Q: "input", R: "output", C: "context"},
    scale="Hallucination score 0–1 (1 = the response is not faithful to the contexts); value = 10·(1 − raw)",
    higher_is_better=False,
    # opik's prompt shows the input "for context only, not to be used for faithfulness
    # evaluation": a summary without a question is judged with an empty one
    blank_ok=(Q,),
)

#: canonical metric -> opik metric. The one table the backend obeys.
OPIK_METRICS: dict[str, OpikMetric] = {
    "faithfulness": _HALLU,
    "hallucination": _HALLU,
    # require_context=False: a row without contexts is judged on question and answer
    # alone (opik's no-context prompt) instead of failing; with contexts opik's default
    # prompt is used unchanged
    "answer_relevancy": OpikMetric(
        cls="AnswerRelevance",
        reads={Q: "input", R: "output", C: "context"},
        scale="answer_relevance_score 0–1 (1 = fully relevant); value = 10·raw",
        init={"require_context": False},
    ),
    "context_precision": OpikMetric(
        cls="ContextPrecision",
        reads={Q: "input", R: "output", REF: "expected_output", C: "context"},
        scale="context_precision_score 0–1 (1 = the contexts are precise for the reference); value = 10·raw",
        needs=(R,),
    ),
    "context_recall": OpikMetric(
        cls="ContextRecall",
        reads={Q: "input", R: "output", REF: "expected_output", C: "context"},
        scale="context_recall_score 0–1 (1 = the contexts hold everything the reference says); value = 10·raw",
        needs=(R,),
    ),
}

FACTS = BackendFacts(
    name="opik",
    title="Opik",
    summary="Opik's RAG judge metrics over your judge",
    backend="unified.adapters.opik.backend:OpikBackend",
    order=40,
    hint="the opik backend needs opik: pip install 'unified-rag-eval[opik]'",
    metrics=OPIK_METRICS,
    extra="opik",
    package="opik",
    quiet_env={
        # opik's usage events and error reports (both to comet.com)
        "OPIK_ANALYTICS_ENABLE": "false",
        "OPIK_SENTRY_ENABLE": "false",
        # no trace or span is sent to an Opik server (metrics are built with track=False too)
        "OPIK_TRACK_DISABLE": "true",
        # litellm, which opik imports, otherwise fetches its price list from GitHub at
        # import (about 10 s of retries offline)
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    },
    doc="opik.md",
)
