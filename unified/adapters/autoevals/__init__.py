"""What the ``autoevals`` backend serves, read without importing autoevals: one row per
canonical metric with Braintrust autoevals' RAGAS port (``autoevals.ragas``), the
keywords it is called with, its raw scale and what one sample costs.

Every mapped scorer returns a score in [0, 1] (autoevals' own ``Score`` refuses anything
else), so ``value = 10 · raw``:

    faithfulness        Faithfulness       judged statements: Σ verdict / n
    answer_relevancy    AnswerRelevancy    3 generated questions: mean of the rescaled cosine
                                           max(0, (cos − 0.7) / 0.3) with the question; 0 if
                                           any is noncommittal
    context_relevancy   ContextRelevancy   characters of the extracted sentences / characters
                                           of the joined contexts, clipped to 1
    context_recall      ContextRecall      reference sentences attributed: Σ attributed / n
    context_precision   ContextPrecision   one verdict (0/1) on the joined contexts
    answer_correctness  AnswerCorrectness  0.75 · F1(TP, FP, FN) + 0.25 · rescaled cosine

The backend (``backend.py``) builds each scorer as autoevals documents
(``Faithfulness(client=...)``) and awaits ``eval_async(output=..., expected=...,
input=..., context=...)``; the client is an OpenAI-shaped object over our judge and
embedder. ``calls`` were measured through the judge layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from unified.adapters.facts import BackendFacts, FrameworkMetric

Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"
COSINE = "max(0, (cos − 0.7) / 0.3)"


@dataclass(frozen=True, kw_only=True)
class AutoevalsMetric(FrameworkMetric):
    """How one canonical metric runs on autoevals.

    ``cls``: scorer class in ``autoevals.ragas``; ``reads``: Sample field -> keyword of
    ``eval_async`` (``input``, ``output``, ``expected``, ``context``; the retrieved
    contexts go as the list autoevals' docs show); ``uses``: which of "llm"/"embeddings"
    the scorer calls; ``verdicts``: where the judge's 0/1 answers sit in the ``Score``'s
    metadata, as a path of keys ending with the field (lists on the way are walked) —
    each answer must be 0 or 1, or the score is refused (``backend.py``).
    """

    reads: dict[str, str]
    uses: tuple[str, ...] = ("llm",)
    verdicts: tuple[str, ...] = ()


#: canonical metric -> autoevals.ragas scorer. The one table the backend obeys.
AUTOEVALS_METRICS: dict[str, AutoevalsMetric] = {
    # its statement prompt reads the question ("Faithfulness requires input value")
    "faithfulness": AutoevalsMetric(
        cls="Faithfulness",
        reads={Q: "input", R: "output", C: "context"},
        needs=(Q,),
        scale="Faithfulness: supported statements / judged statements (0–1); value = 10·raw",
        verdicts=("faithfulness", "verdict"),
        calls=(2, 0, 0),
    ),
    # generates questions from the answer and the contexts ("requires context value"); 3
    # identical prompts on purpose (strictness), then the question and each generated
    # question embedded
    "answer_relevancy": AutoevalsMetric(
        cls="AnswerRelevancy",
        reads={Q: "input", R: "output", C: "context"},
        needs=(C,),
        uses=("llm", "embeddings"),
        scale=f"AnswerRelevancy: mean over 3 generated questions of {COSINE}, 0 if any is noncommittal; value = 10·raw",
        verdicts=("questions", "noncommittal"),
        calls=(3, 0, 6),
    ),
    "context_relevancy": AutoevalsMetric(
        cls="ContextRelevancy",
        reads={Q: "input", R: "output", C: "context"},
        scale="ContextRelevancy: extracted characters / context characters, clipped to 1; value = 10·raw",
        calls=(1, 0, 0),
    ),
    "context_recall": AutoevalsMetric(
        cls="ContextRecall",
        reads={Q: "input", R: "output", REF: "expected", C: "context"},
        scale="ContextRecall: attributed reference sentences / sentences (0–1); value = 10·raw",
        verdicts=("statements", "statements", "attributed"),
        calls=(1, 0, 0),
    ),
    # one verdict for all contexts together (not a ranked precision)
    "context_precision": AutoevalsMetric(
        cls="ContextPrecision",
        reads={Q: "input", R: "output", REF: "expected", C: "context"},
        scale="ContextPrecision: one verdict 0/1 on the joined contexts; value = 10·raw",
        verdicts=("precision", "verdict"),
        calls=(1, 0, 0),
    ),
    "answer_correctness": AutoevalsMetric(
        cls="AnswerCorrectness",
        reads={Q: "input", R: "output", REF: "expected"},
        uses=("llm", "embeddings"),
        scale=f"AnswerCorrectness: 0.75 · F1 of TP/FP/FN statements + 0.25 · {COSINE} of answer and reference; "
        "value = 10·raw",
        calls=(1, 0, 2),
    ),
}

FACTS = BackendFacts(
    name="autoevals",
    title="autoevals",
    summary="Braintrust autoevals' RAGAS scorers over your judge and embedder",
    backend="unified.adapters.autoevals.backend:AutoevalsBackend",
    order=80,
    hint="the autoevals backend needs autoevals: pip install 'unified-rag-eval[autoevals]'",
    metrics=AUTOEVALS_METRICS,
    extra="autoevals",
    package="autoevals",
    # autoevals reads no switch of its own: it sends only what its client sends (ours),
    # and wraps that client for Braintrust logging only when the braintrust package is
    # installed and the client comes without its methods (the backend passes them); a
    # test records every socket of a run
    doc="autoevals.md",
)
