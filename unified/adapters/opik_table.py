"""What the ``opik`` backend serves, without importing opik: one row per canonical metric
with opik's class, the fields it reads, its raw scale and how that scale becomes 0–10.

Every mapped opik metric is one LLM call that returns a JSON verdict with a score in
[0, 1] and a reason (opik's own parsers refuse a score outside [0, 1]):

    faithfulness, hallucination   Hallucination.score   1 = hallucinated   value = 10 · (1 − raw)
    answer_relevancy              AnswerRelevance        1 = relevant       value = 10 · raw
    context_precision             ContextPrecision       1 = precise        value = 10 · raw
    context_recall                ContextRecall          1 = recalled       value = 10 · raw

The registry, ``--dry-run`` and ``unified-eval metrics`` read this module; the backend
(``unified/adapters/opik.py``) resolves each class name in ``opik.evaluation.metrics``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"


@dataclass(frozen=True)
class OpikMetric:
    """How one canonical metric runs on opik.

    ``cls``: class name in ``opik.evaluation.metrics``; ``reads``: Sample field -> the
    keyword of opik's ``score``/``ascore`` (a field that is empty is passed as None, and
    opik decides); ``needs``: fields opik cannot do without, beyond the canonical
    metric's own; ``blank_ok``: fields opik reads but can do without, passed as "" when
    absent (None would be printed into its prompt as "None"); ``init``: fixed constructor kwargs; ``raw_range`` /
    ``higher_is_better``: opik's scale; ``scale``: the raw value and its 0–10 mapping in
    words (``unified-eval metrics NAME``).
    """

    cls: str
    reads: dict[str, str]
    scale: str
    needs: tuple[str, ...] = ()
    blank_ok: tuple[str, ...] = ()
    init: dict[str, Any] = field(default_factory=dict)
    raw_range: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    calls: int = 1


_HALLU = OpikMetric(
    "Hallucination",
    {Q: "input", R: "output", C: "context"},
    "Hallucination score 0–1 (1 = the response is not faithful to the contexts); value = 10·(1 − raw)",
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
        "AnswerRelevance",
        {Q: "input", R: "output", C: "context"},
        "answer_relevance_score 0–1 (1 = fully relevant); value = 10·raw",
        init={"require_context": False},
    ),
    "context_precision": OpikMetric(
        "ContextPrecision",
        {Q: "input", R: "output", REF: "expected_output", C: "context"},
        "context_precision_score 0–1 (1 = the contexts are precise for the reference); value = 10·raw",
        needs=(R,),
    ),
    "context_recall": OpikMetric(
        "ContextRecall",
        {Q: "input", R: "output", REF: "expected_output", C: "context"},
        "context_recall_score 0–1 (1 = the contexts hold everything the reference says); value = 10·raw",
        needs=(R,),
    ),
}

metric_names = frozenset(OPIK_METRICS)


def scales() -> dict[str, str]:
    """canonical metric -> "opik <Class>: <raw value and its 0–10 mapping>"."""
    return {name: f"{m.cls}: {m.scale}" for name, m in OPIK_METRICS.items()}


def opik_calls(refs: Any, sample: Any, *, single_judge: bool = False) -> list[tuple[int, int] | None]:
    """``--dry-run``: one chat call per metric per sample (measured: each opik judge
    metric sends exactly one request; nothing is shared between metrics)."""
    return [None if (m := OPIK_METRICS.get(r.canonical)) is None else (m.calls, 0) for r in refs]
