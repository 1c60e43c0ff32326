"""What the ``phoenix`` backend serves, read without importing Phoenix: one row per
canonical metric with its arize-phoenix-evals 3.x evaluator, the inputs it is given, the
labels it answers and what one sample costs in judge calls.

Every mapped evaluator is a ``ClassificationEvaluator`` whose ``choices`` map a label to
1.0 or 0.0; the raw value is that number and ``value = 10 · raw`` (faithful / correct /
relevant = 10). ``context_relevancy`` asks once per retrieved context (Phoenix's
per-document usage of ``RetrievalRelevanceEvaluator``) and averages: raw = relevant / K.
The backend checks at import that Phoenix still declares exactly the labels listed here
(``LABELS``), so what ``unified-eval metrics`` says cannot drift from what is scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from unified.adapters.facts import BackendFacts, FrameworkMetric
from unified.sample import Sample


def _joined(contexts: list[str]) -> str:
    return "\n\n".join(contexts)


@dataclass(frozen=True, kw_only=True)
class PhoenixMetric(FrameworkMetric):
    """How one canonical metric runs on Phoenix.

    ``cls``: evaluator class in ``phoenix.evals.metrics``; ``inputs``: Sample -> one
    ``eval_input`` per evaluation (several: one per retrieved context, averaged);
    ``labels``: the evaluator's labels and the raw value each stands for (its
    ``choices``); ``note``: recorded in Score.details; ``judged``: what the label is
    judged from, when a reader would assume otherwise.
    """

    inputs: Callable[[Sample], list[dict[str, str]]]
    labels: dict[str, float] = field(default_factory=dict)
    note: str | None = None
    judged: str | None = None

    def scale_text(self) -> str:
        said = " / ".join(f'"{label}" = {raw:g}' for label, raw in self.labels.items())
        if self.calls is not None and self.calls[1]:  # one evaluation per context
            return f"{self.cls}: per context, {said}; raw = relevant / K; value = 10 · raw"
        judged = f" ({self.judged})" if self.judged else ""
        return f"{self.cls}: label {said}{judged}; value = 10 · raw"


#: canonical metric -> Phoenix evaluator. The one table the backend obeys. (The ``or``
#: defaults only satisfy the types: the precheck has refused a sample without these fields.)
PHOENIX_METRICS: dict[str, PhoenixMetric] = {
    # Phoenix 3.x's RAG hallucination eval: the response against the retrieved context
    "faithfulness": PhoenixMetric(
        cls="FaithfulnessEvaluator",
        inputs=lambda s: [
            {"input": s.user_input or "", "output": s.response or "", "context": _joined(s.retrieved_contexts or [])}
        ],
        labels={"faithful": 1.0, "unfaithful": 0.0},
        # its input schema requires the query and its prompt judges the answer to it
        needs=("user_input",),
    ),
    "answer_correctness": PhoenixMetric(
        cls="CorrectnessEvaluator",
        inputs=lambda s: [{"input": s.user_input or "", "output": s.response or ""}],
        labels={"correct": 1.0, "incorrect": 0.0},
        judged="judged from the question alone, no reference",
        note="Phoenix's CorrectnessEvaluator judges the response against the question; it has no reference input",
    ),
    # one evaluation per retrieved context, as Phoenix documents for per-document relevance
    "context_relevancy": PhoenixMetric(
        cls="RetrievalRelevanceEvaluator",
        inputs=lambda s: [{"input": s.user_input or "", "context": c} for c in s.retrieved_contexts or []],
        labels={"relevant": 1.0, "irrelevant": 0.0},
        calls=(0, 1, 0),
    ),
}

FACTS = BackendFacts(
    name="phoenix",
    title="Phoenix evals",
    summary="Arize Phoenix evals' classification templates over your judge",
    backend="unified.adapters.phoenix.backend:PhoenixBackend",
    order=60,
    hint="the phoenix backend needs arize-phoenix-evals: pip install 'unified-rag-eval[phoenix]'",
    metrics=PHOENIX_METRICS,
    extra="phoenix",
    package="phoenix.evals",
    # arize-phoenix-evals reads no switch and sends nothing (its spans go to the caller's
    # OpenTelemetry provider, a no-op unless the caller set one; tests record every socket)
    doc="phoenix.md",
)
