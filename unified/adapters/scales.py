"""What a framework backend's raw value is, per metric, and how it becomes 0–10 — as text
for ``unified-eval metrics NAME`` and the docs, read without importing any framework.

Each backend's registry entry names a function returning its table (``"scales": "module:fn"``), a dict
``canonical metric -> "<the framework's name>: <raw value and its mapping>"``. Label-valued frameworks list their labels with the raw
number each stands for; the adapters check at import time that the framework still
declares exactly these labels (``PHOENIX_LABELS``), so this text cannot drift from the
code that scores. The 0–10 rule is the one of ``unified.scores``:

    value = 10 · (raw − lo) / (hi − lo)     (inverted when lower is better, clipped to [0, 10])
"""

from __future__ import annotations

#: canonical metric -> Phoenix evaluator's label -> raw value (its ``choices``)
PHOENIX_LABELS: dict[str, dict[str, float]] = {
    "faithfulness": {"faithful": 1.0, "unfaithful": 0.0},
    "answer_correctness": {"correct": 1.0, "incorrect": 0.0},
    "context_relevancy": {"relevant": 1.0, "irrelevant": 0.0},
}


def _labels(metric: str) -> str:
    return " / ".join(f'"{label}" = {raw:g}' for label, raw in PHOENIX_LABELS[metric].items())


PHOENIX_SCALES: dict[str, str] = {
    "faithfulness": f"FaithfulnessEvaluator: label {_labels('faithfulness')}; value = 10 · raw",
    "answer_correctness": f"CorrectnessEvaluator: label {_labels('answer_correctness')} "
    "(judged from the question alone, no reference); value = 10 · raw",
    "context_relevancy": f"RetrievalRelevanceEvaluator: per context, {_labels('context_relevancy')}; "
    "raw = relevant / K; value = 10 · raw",
}

TRULENS_SCALES: dict[str, str] = {
    "faithfulness": "groundedness_measure_with_cot_reasons: judge rates each statement 0–3, raw = mean(rating / 3) ∈ [0, 1]; value = 10 · raw",
    "answer_relevancy": "relevance_with_cot_reasons: one 0–3 rating, raw = rating / 3; value = 10 · raw",
    "context_relevancy": "context_relevance_with_cot_reasons: per context, 0–3 each, raw = mean(rating / 3); value = 10 · raw",
    "answer_correctness": "GroundTruthAgreement: judge answers 0–10, raw = answer / 10; value = 10 · raw",
}


def phoenix_scales() -> dict[str, str]:
    """The registry's ``scales`` hook for phoenix (``fn() -> {metric: text}``)."""
    return PHOENIX_SCALES


def trulens_scales() -> dict[str, str]:
    """The registry's ``scales`` hook for trulens (``fn() -> {metric: text}``)."""
    return TRULENS_SCALES
