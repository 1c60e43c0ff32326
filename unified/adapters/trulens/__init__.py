"""What the ``trulens`` backend serves, read without importing TruLens: one row per
canonical metric with its trulens-feedback 2.x feedback function, the judge's rating scale
and what one sample costs in judge calls.

Feedback functions normalise the judge's rating r on [lo, hi] (0–3 by default) to
raw = (r − lo)/(hi − lo) ∈ [0, 1], so ``value = 10 · raw``; ``context_relevancy`` runs once
per retrieved context and averages (the RAG triad's ``agg=np.mean``); ``faithfulness``
(groundedness) averages the per-statement ratings. ``backend.py`` runs the functions
through a TruLens ``LLMProvider`` answered by our judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from unified.adapters.facts import BackendFacts, FrameworkMetric


@dataclass(frozen=True, kw_only=True)
class TruLensMetric(FrameworkMetric):
    """How one canonical metric runs on TruLens.

    ``cls``: the feedback function's name; ``judge_scale``: the judge's rating scale
    before TruLens normalises it to [0, 1] (kept in Score.details); ``note``: recorded in
    Score.details.
    """

    judge_scale: str
    note: str | None = None


GROUNDEDNESS_NOTE = (
    "groundedness with use_sent_tokenize=False (the judge splits sentences; "
    "NLTK's splitter downloads data) and filter_trivial_statements=False "
    "(TruLens eval()s the judge's answer there)"
)

#: canonical metric -> TruLens feedback function. The one table the backend obeys.
TRULENS_METRICS: dict[str, TruLensMetric] = {
    "faithfulness": TruLensMetric(
        cls="groundedness_measure_with_cot_reasons",
        judge_scale="0–3 per statement, mean",
        scale="judge rates each statement 0–3, raw = mean(rating / 3) ∈ [0, 1]; value = 10 · raw",
        note=GROUNDEDNESS_NOTE,
        calls=None,  # 1 + the response's sentences: ``trulens_calls``
    ),
    "answer_relevancy": TruLensMetric(
        cls="relevance_with_cot_reasons",
        judge_scale="0–3",
        scale="one 0–3 rating, raw = rating / 3; value = 10 · raw",
    ),
    # the triad's per-context selector, averaged
    "context_relevancy": TruLensMetric(
        cls="context_relevance_with_cot_reasons",
        judge_scale="0–3 per context, mean",
        scale="per context, 0–3 each, raw = mean(rating / 3); value = 10 · raw",
        calls=(0, 1, 0),
    ),
    "answer_correctness": TruLensMetric(
        cls="GroundTruthAgreement.agreement_measure",
        alias="agreement_measure",
        judge_scale="0–10 agreement with the reference",
        scale="judge answers 0–10, raw = answer / 10; value = 10 · raw",
    ),
}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def trulens_calls(refs: Sequence[Any], sample: Any, *, single_judge: bool = False) -> list[tuple[int, int] | None]:
    """The table's calls, and for groundedness (faithfulness) 1 + S: the judge splits the
    response into sentences, then rates each. S is estimated by cutting the response after
    ``.``, ``!`` or ``?`` (the judge's split may differ)."""
    out = FACTS.table_calls(refs, sample)
    response = (getattr(sample, "response", None) or "").strip()
    n_sentences = len([p for p in _SENTENCE_END.split(response) if p.strip()])
    return [(1 + n_sentences, 0) if r.canonical == "faithfulness" else c for r, c in zip(refs, out)]


FACTS = BackendFacts(
    name="trulens",
    title="TruLens",
    summary="TruLens feedback functions through a provider over your judge",
    backend="unified.adapters.trulens.backend:TruLensBackend",
    order=70,
    hint="the trulens backend needs trulens-feedback: pip install 'unified-rag-eval[trulens]'",
    metrics=TRULENS_METRICS,
    extra="trulens",
    package="trulens.feedback",
    # used as the backend uses it (our provider, no session, no tracer) trulens-feedback
    # sends nothing and writes nothing (tests record every socket); what would reach the
    # network, groundedness's nltk.download, is avoided by configuration in backend.py
    estimate=trulens_calls,
    doc="trulens.md",
)
