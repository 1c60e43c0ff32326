"""What the ``mlflow`` backend serves, without importing mlflow: one row per canonical
metric with MLflow 3's built-in judge (``mlflow.genai.scorers``), its raw value and how
that becomes 0–10.

MLflow's judges answer a label, "yes" or "no", with a rationale. The raw value is the
label as a number, yes = 1 and no = 0, so ``value = 10 · raw`` (10 for yes, 0 for no).
RetrievalRelevance judges each retrieved chunk and reports the share of "yes" chunks
(its ``retrieval_relevance/precision`` feedback), so its raw value is that share:

    faithfulness        RetrievalGroundedness   yes/no    value = 10 · [yes]
    answer_relevancy    RelevanceToQuery        yes/no    value = 10 · [yes]
    context_relevancy   RetrievalRelevance      yes per chunk, precision = yes / K
                                                          value = 10 · precision
    context_recall      RetrievalSufficiency    yes/no    value = 10 · [yes]
    answer_correctness  Correctness             yes/no    value = 10 · [yes]

Calls per sample: one judge call per metric, K for RetrievalRelevance (K retrieved
contexts). The registry, ``--dry-run`` and ``unified-eval metrics`` read this module;
the backend is ``backend.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from unified.adapters.facts import BackendFacts, FrameworkMetric

Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"
YES_NO = 'label "yes" (raw 1) or "no" (raw 0); value = 10·raw'


@dataclass(frozen=True, kw_only=True)
class MlflowJudge(FrameworkMetric):
    """How one canonical metric runs on MLflow.

    ``cls``: scorer class in ``mlflow.genai.scorers``; ``feedback``: the name of the
    Feedback that carries the value (RetrievalRelevance also returns one per chunk);
    ``expectations``: the scorer takes ``expectations={"expected_response": reference}``;
    ``per_context``: one judge call per retrieved context.
    """

    feedback: str
    scale: str | None = YES_NO
    expectations: bool = False
    per_context: bool = False


#: canonical metric -> MLflow built-in judge. The one table the backend obeys.
MLFLOW_JUDGES: dict[str, MlflowJudge] = {
    # its prompt's claim is <question> + <answer>: without a question there is no claim
    "faithfulness": MlflowJudge(cls="RetrievalGroundedness", feedback="retrieval_groundedness", needs=(Q,)),
    "answer_relevancy": MlflowJudge(cls="RelevanceToQuery", feedback="relevance_to_query"),
    "context_relevancy": MlflowJudge(
        cls="RetrievalRelevance",
        feedback="retrieval_relevance/precision",
        scale='share of retrieved chunks labelled "yes" (raw 0–1); value = 10·raw',
        per_context=True,
        calls=(0, 1, 0),
    ),
    "context_recall": MlflowJudge(cls="RetrievalSufficiency", feedback="retrieval_sufficiency", expectations=True),
    "answer_correctness": MlflowJudge(cls="Correctness", feedback="correctness", expectations=True),
}

FACTS = BackendFacts(
    name="mlflow",
    title="MLflow 3 judges",
    summary="MLflow 3's built-in GenAI judges over your judge",
    backend="unified.adapters.mlflow.backend:MlflowBackend",
    order=50,
    hint="the mlflow backend needs full mlflow 3: pip install 'unified-rag-eval[mlflow]'",
    metrics=MLFLOW_JUDGES,
    extra="mlflow",
    package="mlflow",
    quiet_env={
        # MLflow's usage telemetry
        "MLFLOW_DISABLE_TELEMETRY": "true",
        # MLflow's judge adapter otherwise downloads its model catalog from GitHub on the
        # first judge call (empty disables the fetch)
        "MLFLOW_MODEL_CATALOG_URI": "",
    },
    doc="mlflow.md",
)
