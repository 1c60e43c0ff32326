"""What the ``embedchain`` backend serves, read without importing embedchain (which is never
installed here: it runs in an isolated environment of its own, ``unified.adapters.isolated``,
because embedchain 0.1.128 needs ``posthog<4`` where deepeval needs ``posthog>=7``).

embedchain's evaluation metrics (``embedchain.evaluation.metrics``), one row each:

- ``ContextRelevance``: the judge copies the context sentences useful for the question;
  raw = useful sentences / context sentences (pysbd), 0–1 — a judge that writes more
  sentences than the context has gives more than 1, which is an error here, not a 10;
- ``AnswerRelevance``: the judge writes questions the answer would answer; raw = mean
  cosine of their embeddings with the question's (domain [-1, 1], clipped below 0);
- ``Groundedness``: the judge splits the answer into claims, then gives each a verdict
  ``1``/``0``/``-1`` (supported, contradicted, can't tell); raw = sum / claims. A ``-1``
  is NaN in embedchain and makes the sum NaN: that task is an error ("returned nan"),
  never a number.

``value = 10 · raw`` on 0–1. Scored one row at a time: embedchain's ``evaluate(dataset)``
drops a row that raised from its mean without saying so in its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from unified.adapters.facts import BackendFacts, FrameworkMetric
from unified.sample import Sample


@dataclass(frozen=True, kw_only=True)
class EmbedchainMetric(FrameworkMetric):
    """How one canonical metric runs on embedchain: ``cls`` in
    ``embedchain.evaluation.metrics``; ``fields``: Sample -> ``EvalData`` keywords;
    ``uses``: "llm" and/or "embeddings"; ``domain``: as ``RagasMetric.domain``."""

    fields: Callable[[Sample], dict[str, Any]]
    uses: tuple[str, ...] = ("llm",)
    domain: tuple[float, float] | None = None
    nan_means: str = ""


def _eval_data(s: Sample) -> dict[str, Any]:
    return {"question": s.user_input or "", "contexts": list(s.retrieved_contexts or []), "answer": s.response or ""}


EMBEDCHAIN_METRICS: dict[str, EmbedchainMetric] = {
    "context_relevancy": EmbedchainMetric(cls="ContextRelevance", fields=_eval_data, alias="", calls=(1, 0, 0)),
    # one chat call, then one embedding call per generated question and one for the question
    "answer_relevancy": EmbedchainMetric(
        cls="AnswerRelevance", fields=_eval_data, uses=("llm", "embeddings"), domain=(-1.0, 1.0), alias="", calls=None
    ),
    # claims of the answer checked against the contexts: faithfulness; its prompt reads the question
    "faithfulness": EmbedchainMetric(
        cls="Groundedness",
        fields=_eval_data,
        needs=("user_input",),
        alias="",
        calls=(2, 0, 0),
        nan_means=" (a claim verdict of -1, 'cannot tell', is NaN in embedchain and makes the score NaN)",
    ),
}

FACTS = BackendFacts(
    name="embedchain",
    title="Embedchain 0.1.128",
    summary="Embedchain's evaluation metrics, in an isolated environment, over your judge",
    backend="unified.adapters.embedchain.backend:EmbedchainBackend",
    order=95,
    hint="the embedchain backend needs uv: pip install 'unified-rag-eval[isolated]'",
    metrics=EMBEDCHAIN_METRICS,
    extra="isolated",
    package=None,
    doc="embedchain.md",
)
