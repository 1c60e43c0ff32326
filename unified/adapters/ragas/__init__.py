"""What the ``ragas`` backend serves, read without importing ragas: one row per canonical
metric with its ragas 0.4 collections class, the fields it reads, its raw scale and what
one sample costs in judge calls.

ragas's number becomes 0–10 by the one rule on each row's range: ``value = 10 · raw`` for
the 0–1 scores, inverted for the one lower-is-better metric (noise_sensitivity:
``value = 10 · (1 − raw)``). The backend (``backend.py``) resolves each class in
``ragas.metrics.collections`` and calls ``await metric.ascore(**fields)`` as ragas
documents; ``objects.py`` reads ragas's ``EvaluationDataset`` and samples as ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from unified.adapters.facts import BackendFacts, FrameworkMetric, ObjectReader
from unified.sample import Sample


def _fields(*names: str) -> Callable[[Sample], dict[str, Any]]:
    """ascore keyword arguments named exactly like Sample fields (ragas's modern names)."""
    return lambda s: {n: getattr(s, n) for n in names}


@dataclass(frozen=True, kw_only=True)
class RagasMetric(FrameworkMetric):
    """How one canonical metric runs on ragas.

    ``cls``: class name in ``ragas.metrics.collections``; ``fields``: Sample ->
    ``ascore`` kwargs; ``uses``: which of "llm"/"embeddings" the constructor takes;
    ``init``: fixed constructor kwargs; ``sync_embed``: Sample fields whose text ragas
    embeds through the sync API. ``domain``: the values ragas can legitimately return
    when it is wider than ``raw_range`` (a cosine similarity is in [-1, 1]; below 0 it
    clips to 0, as every cosine does here); a value outside the domain is an error,
    never clipped. ``calls``: measured through the judge layer
    (``benchmarks/calls_per_sample.py``).
    """

    fields: Callable[[Sample], dict[str, Any]]
    uses: tuple[str, ...] = ("llm",)
    init: dict[str, Any] = field(default_factory=dict)
    sync_embed: Callable[[Sample], list[str]] | None = None
    domain: tuple[float, float] | None = None


COSINE = (-1.0, 1.0)
Q, RESP, C, REF = "user_input", "response", "retrieved_contexts", "reference"

#: canonical metric -> ragas collections metric. The one table the backend obeys.
RAGAS_METRICS: dict[str, RagasMetric] = {
    # ragas 0.4.3's Faithfulness raises "user_input is missing" and puts the question into
    # its statement-generation prompt: a sample without one cannot run here
    "faithfulness": RagasMetric(cls="Faithfulness", fields=_fields(Q, RESP, C), needs=(Q,), calls=(2, 0, 0)),
    # 3 identical prompts on purpose (ragas's strictness), then the question and the
    # generated questions embedded
    "answer_relevancy": RagasMetric(
        cls="AnswerRelevancy", fields=_fields(Q, RESP), uses=("llm", "embeddings"), domain=COSINE, calls=(3, 0, 2)
    ),
    "context_relevancy": RagasMetric(cls="ContextRelevance", fields=_fields(Q, C), calls=(2, 0, 0)),
    "context_recall": RagasMetric(cls="ContextRecall", fields=_fields(Q, C, REF), calls=(1, 0, 0)),
    # one verdict per retrieved context
    "context_precision": RagasMetric(cls="ContextPrecisionWithReference", fields=_fields(Q, REF, C), calls=(0, 1, 0)),
    # F1 of claims and a cosine, weighted
    "answer_correctness": RagasMetric(
        cls="AnswerCorrectness",
        fields=_fields(Q, RESP, REF),
        uses=("llm", "embeddings"),
        domain=COSINE,
        calls=(3, 0, 2),
    ),
    "response_groundedness": RagasMetric(cls="ResponseGroundedness", fields=_fields(RESP, C), calls=(2, 0, 0)),
    # ragas embeds reference then response, with the sync API; empty text becomes " "
    "semantic_similarity": RagasMetric(
        cls="SemanticSimilarity",
        fields=_fields(REF, RESP),
        uses=("embeddings",),
        sync_embed=lambda s: [s.reference or " ", s.response or " "],
        domain=COSINE,
        calls=(0, 0, 2),
    ),
    # further collections metrics whose inputs a Sample has (where no call count was
    # measured, the dry run says so instead of guessing)
    "factual_correctness": RagasMetric(cls="FactualCorrectness", fields=_fields(RESP, REF), calls=(4, 0, 0)),
    "context_utilization": RagasMetric(cls="ContextPrecisionWithoutReference", fields=_fields(Q, RESP, C), calls=None),
    "context_entity_recall": RagasMetric(cls="ContextEntityRecall", fields=_fields(REF, C), calls=None),
    "answer_accuracy": RagasMetric(cls="AnswerAccuracy", fields=_fields(Q, RESP, REF), calls=(2, 0, 0)),
    # share of the response's claims that are wrong: lower is better, so it is inverted
    "noise_sensitivity": RagasMetric(
        cls="NoiseSensitivity", fields=_fields(Q, RESP, REF, C), higher_is_better=False, calls=(3, 2, 0)
    ),
}

#: ragas's integer verdicts and the values its prompts allow. ragas reads them as numbers or
#: truth values (a verdict of -3 counts as "faithful", a noncommittal of 11 as noncommittal),
#: so the judge is held to them: an answer outside fails the task (tests/test_ragas_backend.py
#: checks that every integer field of the served metrics' answer models is listed here)
VERDICTS: dict[tuple[str, str], tuple[int, ...]] = {
    ("StatementFaithfulnessAnswer", "verdict"): (0, 1),
    ("ContextPrecisionOutput", "verdict"): (0, 1),
    ("AnswerRelevanceOutput", "noncommittal"): (0, 1),
    ("ContextRecallClassification", "attributed"): (0, 1),
    ("ContextRelevanceOutput", "rating"): (0, 1, 2),
    ("ResponseGroundednessOutput", "rating"): (0, 1, 2),
    ("AnswerAccuracyOutput", "rating"): (0, 2, 4),
}

FACTS = BackendFacts(
    name="ragas",
    title="RAGAS 0.4 (collections)",
    summary="RAGAS 0.4.3's collections metrics, called through ragas itself over your judge",
    backend="unified.adapters.ragas.backend:RagasBackend",
    order=20,
    hint="the ragas backend needs ragas: pip install 'unified-rag-eval[ragas]'",
    metrics=RAGAS_METRICS,
    extra="ragas",
    package="ragas",
    quiet_env={
        # ragas caches it with lru_cache on first use; the value must be the string "true"
        "RAGAS_DO_NOT_TRACK": "true",
    },
    more_names={
        # RAGAS 0.1's metric names, and the collections' shorter class names
        "faithfulness": {"ragas_v1": "faithfulness"},
        "answer_relevancy": {"ragas_v1": "answer_relevance"},
        "context_relevancy": {"ragas_v1": "context_relevance"},
        "context_recall": {"ragas_v1": "context_recall"},
        "context_precision": {"ragas_v1": "context_precision", "ragas_short": "ContextPrecision"},
        "answer_correctness": {"ragas_v1": "answer_correctness"},
        "semantic_similarity": {"ragas_v1": "answer_similarity"},
        "context_utilization": {"ragas_short": "ContextUtilization"},
    },
    objects=(
        ObjectReader(
            module="ragas",
            classes=frozenset({"EvaluationDataset", "SingleTurnSample", "MultiTurnSample"}),
            target="unified.adapters.ragas.objects:records",
        ),
    ),
    verdicts=VERDICTS,
    doc="ragas.md",
)
