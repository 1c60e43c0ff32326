"""What the ``evidently`` backend serves, read without importing evidently: one row per
canonical metric with its Evidently 0.7 descriptor (``evidently.descriptors``), the
categories it answers, its raw scale and what one sample costs in judge calls.

Three descriptors are binary LLM judges: the judge answers a category — the descriptor's
*target* category, its other category, or UNKNOWN — and, with ``[include_score=true]``, a
score in [0, 1] where 1 is "absolutely the target category". The raw value keeps
Evidently's orientation, 1 = target, in both modes: the category as 1 (target) or 0
(other), or Evidently's score. The target is the bad outcome for faithfulness
(UNFAITHFUL) and correctness (INCORRECT), so those two are lower-is-better:

    faithfulness         FaithfulnessLLMEval     1 = UNFAITHFUL   value = 10 · (1 − raw)
    answer_correctness   CorrectnessLLMEval      1 = INCORRECT    value = 10 · (1 − raw)
    context_sufficiency  ContextQualityLLMEval   1 = VALID        value = 10 · raw
    context_relevancy    ContextRelevance        mean over the K contexts of the judge's
                         (method="llm")          score, 1 = RELEVANT; value = 10 · raw

UNKNOWN (the judge found the information insufficient to decide) or any other category is
no value. ``backend.py`` builds each descriptor as Evidently documents and computes it on a
one-row ``Dataset.from_pandas``.
"""

from __future__ import annotations

from dataclasses import dataclass

from unified.adapters.facts import BackendFacts, FrameworkMetric


@dataclass(frozen=True, kw_only=True)
class EvidentlyMetric(FrameworkMetric):
    """How one canonical metric runs on Evidently.

    ``cls``: the descriptor's name in ``evidently.descriptors``; ``column``: the column it
    evaluates and ``inputs``: its further column arguments, both named after the one-row
    frame's columns (question, response, context — the retrieved contexts joined by a blank
    line —, contexts — the list —, reference); ``target`` / ``other``: its two categories
    (raw 1 / raw 0; None for ContextRelevance, which reads only the judge's score);
    ``params``: the bracket parameters passed to the descriptor; ``note``: recorded in
    Score.details.
    """

    column: str
    inputs: dict[str, str]
    target: str | None = None
    other: str | None = None
    params: frozenset[str] = frozenset({"include_score", "uncertainty"})
    note: str | None = None

    def scale_text(self) -> str:
        if self.target is None:
            return f"{self.cls}: {self.scale}"
        image = "value = 10 · raw" if self.higher_is_better else "value = 10 · (1 − raw)"
        return (
            f'{self.cls}: category "{self.target}" = 1, "{self.other}" = 0 (UNKNOWN: no value); with '
            f'[include_score=true] Evidently\'s score 0–1, 1 = absolutely "{self.target}"; {image}'
        )


#: canonical metric -> Evidently descriptor. The one table the backend obeys.
EVIDENTLY_METRICS: dict[str, EvidentlyMetric] = {
    # the response against the retrieved contexts, joined by a blank line as its one SOURCE
    "faithfulness": EvidentlyMetric(
        cls="FaithfulnessLLMEval",
        column="response",
        inputs={"context": "context"},
        target="UNFAITHFUL",
        other="FAITHFUL",
        higher_is_better=False,
    ),
    # the response against the reference; the question is not read
    "answer_correctness": EvidentlyMetric(
        cls="CorrectnessLLMEval",
        column="response",
        inputs={"target_output": "reference"},
        target="INCORRECT",
        other="CORRECT",
        higher_is_better=False,
    ),
    "context_sufficiency": EvidentlyMetric(
        cls="ContextQualityLLMEval",
        column="context",
        inputs={"question": "question"},
        target="VALID",
        other="INVALID",
        note="Evidently's ContextQualityLLMEval judges whether the contexts suffice to answer the "
        "question; it does not read the reference",
    ),
    # one judge call per retrieved context (Evidently's llm scoring), then their mean
    "context_relevancy": EvidentlyMetric(
        cls="ContextRelevance",
        column="question",
        inputs={"contexts": "contexts"},
        scale='per context, the judge\'s score 0–1 (1 = absolutely "RELEVANT"); raw = the mean over '
        "the K contexts (or [aggregation_method=hit|hit_share]); value = 10 · raw",
        params=frozenset({"aggregation_method"}),
        calls=(0, 1, 0),
    ),
}

FACTS = BackendFacts(
    name="evidently",
    title="Evidently",
    summary="Evidently 0.7's LLM-judge descriptors over your judge",
    backend="unified.adapters.evidently.backend:EvidentlyBackend",
    order=90,
    hint="the evidently backend needs evidently: pip install 'unified-rag-eval[evidently]'",
    metrics=EVIDENTLY_METRICS,
    extra="evidently",
    package="evidently",
    quiet_env={
        # Evidently's usage events (evidently.telemetry: its event logger is off when the
        # variable is set to anything; the library sends them from its UI and collector only)
        "DO_NOT_TRACK": "1",
        # iterative-telemetry's own switch, which Evidently pulls in: with it set nothing is
        # sent (it would post from a detached `python -c` child, invisible to a socket hook)
        # and no user-id file is written under ~/.config
        "ITERATIVE_DO_NOT_TRACK": "1",
        # Evidently's older switch, read at import by evidently.legacy._config
        "EVIDENTLY_DISABLE_TELEMETRY": "1",
    },
    doc="evidently.md",
)
