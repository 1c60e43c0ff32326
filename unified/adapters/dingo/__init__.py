"""What the ``dingo`` backend serves, read without importing dingo: one row per canonical
metric with dingo-python 2.5's RAG evaluator (its name in ``dingo.model.Model``'s LLM
registry), the fields it reads, its raw scale and what one sample costs in judge calls.

Dingo scores on 0–10 already, with its own pass mark (``score ≥ threshold``, 5 by
default), so the raw value is dingo's ``EvalDetail.score`` and ``value = raw``:

    faithfulness          LLMRAGFaithfulness      the judge's own "score" field, 0–10
    answer_relevancy      LLMRAGAnswerRelevancy   10 · mean cos(question, generated questions),
                                                  0 when every generated question is
                                                  noncommittal (−10–10; below 0 shown as 0)
    context_relevancy     LLMRAGContextRelevancy  5 · rating, the contexts rated 0/1/2 together
    context_recall        LLMRAGContextRecall     10 · attributed / reference statements
    context_utilization   LLMRAGContextPrecision  10 · average precision of per-context
                                                  "helps answer the question" verdicts

``LLMRAGContextPrecision`` is ``context_utilization`` here, not ``context_precision``: its
prompt shows each context with the question and the *response* and never reads a
reference (ragas calls that ContextUtilization). Dingo decides pass/fail itself; the
backend gives it the task's bound as its ``threshold`` (same 0–10 scale), so dingo's label
and ``passed`` agree. ``calls``: measured through the judge layer (the backend's tests).
"""

from __future__ import annotations

from dataclasses import dataclass

from unified.adapters.facts import BackendFacts, FrameworkMetric


@dataclass(frozen=True, kw_only=True)
class DingoMetric(FrameworkMetric):
    """How one canonical metric runs on dingo.

    ``cls``: the evaluator's name in dingo's LLM registry (``Model.llm_name_map``) and its
    class name; ``embeds``: it also embeds texts (answer relevancy), through the judges'
    embedder; ``params``: the bracket parameters dingo reads from its config besides the
    threshold; ``domain``: the values dingo can legitimately return when wider than the
    range (a mean cosine × 10 is in [−10, 10]; below 0 it is shown as 0, the original kept);
    ``note``: recorded in Score.details.
    """

    raw_range: tuple[float, float] = (0.0, 10.0)
    embeds: bool = False
    params: frozenset[str] = frozenset()
    domain: tuple[float, float] | None = None
    note: str | None = None


Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"

#: canonical metric -> dingo RAG evaluator. The one table the backend obeys.
DINGO_METRICS: dict[str, DingoMetric] = {
    # one call: the judge lists statements with 0/1 verdicts and states a score itself
    "faithfulness": DingoMetric(
        cls="LLMRAGFaithfulness",
        scale='the judge\'s own "score" field, 0–10 (its statement verdicts are kept beside it, '
        "not recomputed); value = raw",
        calls=(1, 0, 0),
        note="dingo's value is the judge's own 'score'; details['dingo_verdict_score'] is 10 · faithful / statements",
    ),
    # `strictness` questions generated from the response (3 identical prompts), then the
    # question and the generated questions embedded (2 embedding calls)
    "answer_relevancy": DingoMetric(
        cls="LLMRAGAnswerRelevancy",
        scale="10 · mean cosine of the question and the questions generated from the response, "
        "0 when every one is noncommittal (raw −10–10, below 0 shown as 0); value = raw",
        embeds=True,
        params=frozenset({"strictness"}),
        domain=(-10.0, 10.0),
        calls=(3, 0, 2),
    ),
    "context_relevancy": DingoMetric(
        cls="LLMRAGContextRelevancy",
        scale="5 · rating, the contexts rated together 0/1/2 (raw 0–10); value = raw",
        calls=(1, 0, 0),
    ),
    # reads the reference as dingo's raw_data["expected_output"]; the response is unused
    "context_recall": DingoMetric(
        cls="LLMRAGContextRecall",
        scale="10 · reference statements attributed to the contexts / all of them (raw 0–10); value = raw",
        calls=(1, 0, 0),
    ),
    # one true/false verdict per retrieved context
    "context_utilization": DingoMetric(
        cls="LLMRAGContextPrecision",
        scale='10 · average precision of the per-context "helps answer the question" verdicts, '
        "judged with the response, no reference (raw 0–10); value = raw",
        calls=(0, 1, 0),
    ),
}

FACTS = BackendFacts(
    name="dingo",
    title="Dingo",
    summary="Dingo's five RAG evaluators (LLMRAG*) over your judge",
    backend="unified.adapters.dingo.backend:DingoBackend",
    order=80,
    hint="the dingo backend needs dingo-python: pip install 'unified-rag-eval[dingo]'",
    metrics=DINGO_METRICS,
    extra="dingo",
    package="dingo",
    # dingo-python reads no telemetry switch and sends nothing of its own: its RAG
    # evaluators reach a model only through the client the backend puts in their `client`
    # slot (tests record every socket and DNS lookup). What it does change at import, the
    # root logger, backend.py puts back.
    doc="dingo.md",
)
