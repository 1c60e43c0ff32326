"""What the ``embedding`` backend serves, read without loading a model: its metrics, their
tuned parameters and pass bounds, and what one sample costs in embedding calls.

No LLM, no key, no network: every score comes from the packaged all-MiniLM-L6-v2 model or
the configured embedder. The formulas and how each default was chosen are in
``backend.py``'s docstring; the fitted offline judge of faithfulness in ``judge.py`` and
``offline_judge.json``.
"""

from __future__ import annotations

from typing import Any, Sequence

from unified.adapters.embedding import judge
from unified.adapters.facts import BackendFacts

#: Tuned defaults (see backend.py's docstring and benchmarks/meta_eval.py). ``threshold``
#: is the pass bound on 0–10; ``t`` the soft-match threshold on cosine similarity.
#: ``threshold_<variant>`` is a variant's own bound; the default faithfulness bound is the
#: fitted model's (``offline_judge.json``), not a number here.
DEFAULTS: dict[str, dict[str, float]] = {
    "faithfulness": {"t": 1.0, "w": 0.0, "threshold_similarity": 7.0},
    "answer_relevancy": {"n": 0.5, "threshold": 5.0},
    "context_relevancy": {
        "t": 0.85,
        "threshold": 4.25,
        "threshold_mean": 7.0,
        "t_sentence": 0.65,
        "threshold_sentence": 0.5,
    },
    "context_recall": {"t": 1.0},
    "context_precision": {"t": 0.45},
    "semantic_similarity": {},
    "bertscore": {},
}

#: the variants a metric accepts (``metric[variant=…]``); the first is the default
VARIANTS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("default", "similarity"),
    "context_relevancy": ("default", "mean", "sentence"),
}


def variant(ref: Any) -> str:
    """The variant ``ref`` asks for (``default`` when it names none)."""
    return str(ref.param("variant", "default"))


def own_bound(ref: Any) -> float | None:
    """This backend's default pass bound for ``ref`` on 0–10: the variant's own bound,
    else the metric's tuned one, else (fitted faithfulness) the shipped model's bound on
    p times 10; None: the metric's (the registry's rule, ``MetricRef.bound``)."""
    table = DEFAULTS.get(ref.canonical, {})
    bound = table.get(f"threshold_{variant(ref)}", table.get("threshold"))
    if bound is None and ref.canonical == "faithfulness" and variant(ref) == "default":
        bound = round(10.0 * judge.load("faithfulness").bound, 6)  # 10 · 0.56 is 5.6000000000000005
    return bound


def embedding_calls(refs: Sequence[Any], sample: Any, *, single_judge: bool = False) -> list[tuple[int, int] | None]:
    """No chat call; one embedding call per sample for all the sentence-vector metrics,
    billed to the first, and one for bertscore's token vectors."""
    out: list[tuple[int, int] | None] = []
    shared_billed = False
    for ref in refs:
        if ref.canonical == "bertscore":
            out.append((0, 1))
            continue
        out.append((0, 0 if shared_billed else 1))
        shared_billed = True
    return out


FACTS = BackendFacts(
    name="embedding",
    title="embedding",
    summary="judge-free heuristics from a local embedding model (install CPU torch first); "
    "labelled as heuristics, with bounds tuned on human labels",
    backend="unified.adapters.embedding.backend:EmbeddingBackend",
    order=10,
    hint="the embedding backend needs the local model: pip install 'unified-rag-eval[local]' "
    "(install torch==2.13.0 CPU first: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu)",
    metrics=frozenset(DEFAULTS),
    extra="local",
    package="sentence_transformers",
    uses_judges=False,
    estimate=embedding_calls,
    bound=own_bound,
    doc=None,  # docs/offline-judge.md and the formulas in backend.py
)
