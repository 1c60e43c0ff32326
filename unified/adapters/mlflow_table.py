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
the backend is ``unified/adapters/mlflow_judges.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"
YES_NO = 'label "yes" (raw 1) or "no" (raw 0); value = 10·raw'


@dataclass(frozen=True)
class MlflowJudge:
    """How one canonical metric runs on MLflow.

    ``cls``: scorer class in ``mlflow.genai.scorers``; ``feedback``: the name of the
    Feedback that carries the value (RetrievalRelevance also returns one per chunk);
    ``expectations``: the scorer takes ``expectations={"expected_response": reference}``;
    ``per_context``: one judge call per retrieved context; ``scale``: the raw value and
    its 0–10 mapping in words; ``needs``: fields MLflow cannot do without beyond the
    canonical metric's own (``Backend.needs_fields``).
    """

    cls: str
    feedback: str
    scale: str = YES_NO
    expectations: bool = False
    per_context: bool = False
    raw_range: tuple[float, float] = (0.0, 1.0)
    needs: tuple[str, ...] = ()


#: canonical metric -> MLflow built-in judge. The one table the backend obeys.
MLFLOW_JUDGES: dict[str, MlflowJudge] = {
    # its prompt's claim is <question> + <answer>: without a question there is no claim
    "faithfulness": MlflowJudge("RetrievalGroundedness", "retrieval_groundedness", needs=(Q,)),
    "answer_relevancy": MlflowJudge("RelevanceToQuery", "relevance_to_query"),
    "context_relevancy": MlflowJudge(
        "RetrievalRelevance",
        "retrieval_relevance/precision",
        'share of retrieved chunks labelled "yes" (raw 0–1); value = 10·raw',
        per_context=True,
    ),
    "context_recall": MlflowJudge("RetrievalSufficiency", "retrieval_sufficiency", expectations=True),
    "answer_correctness": MlflowJudge("Correctness", "correctness", expectations=True),
}

metric_names = frozenset(MLFLOW_JUDGES)


def scales() -> dict[str, str]:
    """canonical metric -> "<Scorer>: <raw value and its 0–10 mapping>"."""
    return {name: f"{m.cls}: {m.scale}" for name, m in MLFLOW_JUDGES.items()}


def mlflow_calls(refs: Any, sample: Any, *, single_judge: bool = False) -> list[tuple[int, int] | None]:
    """``--dry-run``: one chat call per metric per sample, one per retrieved context for
    RetrievalRelevance (measured through the bridge; nothing is shared between metrics)."""
    k = len(getattr(sample, "retrieved_contexts", None) or [])
    out: list[tuple[int, int] | None] = []
    for r in refs:
        m = MLFLOW_JUDGES.get(r.canonical)
        out.append(None if m is None else (k if m.per_context else 1, 0))
    return out
