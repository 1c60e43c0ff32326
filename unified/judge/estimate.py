"""``--dry-run``: how many judge calls and tokens a run would cost, without calling anything.

Calls per sample come from a table (chat calls, embedding calls) that may depend on K, the
number of retrieved contexts. RAGAS and DeepEval figures were measured (see
FRAMEWORK_NOTES.md); native figures follow the native metric design (two judges; with
``single_judge`` the verification half is dropped). Tokens are estimated as

    input  = calls * (PROMPT_OVERHEAD + chars(fields the metric reads) / 4)
    output = calls * OUTPUT_TOKENS

a deliberately rough figure (real prompts differ per framework), flagged as an estimate.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

PROMPT_OVERHEAD = 350  # instructions + few-shot examples of a typical judge prompt
OUTPUT_TOKENS = 120    # a short JSON verdict list
CHARS_PER_TOKEN = 4

# (chat calls, embedding calls) as a function of K contexts
_Fn = Callable[[int], tuple[int, int]]


def _c(chat: int, emb: int = 0) -> _Fn:
    return lambda k: (chat, emb)


CALLS: dict[str, dict[str, _Fn]] = {
    "native": {
        "faithfulness": _c(3),              # 1 claim extraction + 2 verifications
        "answer_relevancy": _c(2, 1),       # 2 reverse questions + 1 embedding batch
        "context_relevancy": _c(2),
        "context_recall": _c(3),            # 1 reference claims + 2 attributions
        "context_precision": _c(2),
        "answer_correctness": _c(4),        # 2 claim extractions + 2 comparisons
        "context_sufficiency": _c(2),
        "context_correctness": _c(3),       # 1 reference claims + 2 verifications
        "response_groundedness": _c(2),
        "hallucination": _c(3),
        "semantic_similarity": _c(0, 1),
    },
    "ragas": {
        "faithfulness": _c(2),
        "answer_relevancy": _c(3, 2),       # 3 identical prompts on purpose
        "context_precision": lambda k: (k, 0),
        "context_recall": _c(1),
        "context_relevancy": _c(2),
        "response_groundedness": _c(2),
        "answer_correctness": _c(3, 2),
        "semantic_similarity": _c(0, 2),
    },
    "deepeval": {
        "faithfulness": _c(4),
        "answer_relevancy": _c(3),
        "context_relevancy": lambda k: (k + 1, 0),
        "context_precision": _c(2),
        "context_recall": _c(2),
        "hallucination": _c(2),
        "answer_correctness": _c(2),        # GEval
    },
}
# native custom rubrics: two judges, one call each
_NATIVE_RUBRIC = _c(2)


def estimate_calls_full(backend: str, metric: str, n_contexts: int = 0,
                        kind: str | None = None, single_judge: bool = False) -> tuple[int, int]:
    """(chat calls, embedding calls) for one sample. ``kind``: the metric's kind, so that
    deterministic metrics cost nothing and native rubric metrics get the rubric figure."""
    if kind == "deterministic":
        return (0, 0)
    if backend == "embedding":
        return (0, 1)
    table = CALLS.get(backend)
    if table is None:
        raise ValueError(f"no call estimate for backend {backend!r}")
    fn = table.get(metric)
    if fn is None:
        if backend == "native" and kind == "llm":
            fn = _NATIVE_RUBRIC
        else:
            raise ValueError(f"no call estimate for metric {metric!r} on backend {backend!r}")
    chat, emb = fn(n_contexts)
    if single_judge and backend == "native" and chat >= 2:
        chat -= 1  # one of the two judges
    return chat, emb


def estimate_calls(backend: str, metric: str, n_contexts: int = 0) -> int:
    """Chat calls one sample costs for ``metric`` on ``backend`` with ``n_contexts`` contexts."""
    return estimate_calls_full(backend, metric, n_contexts)[0]


def _chars(sample: Any, fields: Iterable[str]) -> int:
    total = 0
    for f in fields:
        v = getattr(sample, f, None)
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, list):
            total += sum(len(str(x)) for x in v)
    return total


def estimate_run(samples: Sequence[Any], metric_refs: Sequence[Any], backends: Sequence[str],
                 single_judge: bool = False) -> list[dict]:
    """One row per (backend, metric): samples, chat calls, embedding calls, input/output
    tokens (estimated). Combinations without a figure get ``calls=None`` and a ``note``."""
    rows: list[dict] = []
    for backend in backends:
        for ref in metric_refs:
            spec = getattr(ref, "spec", None)
            name = getattr(ref, "canonical", None) or str(ref)
            kind = getattr(spec, "kind", None)
            fields = getattr(spec, "required", ("user_input", "response", "retrieved_contexts",
                                                "reference"))
            row: dict[str, Any] = {"backend": backend, "metric": getattr(ref, "name", name),
                                   "samples": len(samples), "calls": 0, "embedding_calls": 0,
                                   "input_tokens": 0, "output_tokens": 0,
                                   "tokens_estimated": True}
            try:
                for s in samples:
                    k = len(getattr(s, "retrieved_contexts", None) or [])
                    chat, emb = estimate_calls_full(backend, name, k, kind, single_judge)
                    text_tokens = _chars(s, fields) // CHARS_PER_TOKEN
                    row["calls"] += chat
                    row["embedding_calls"] += emb
                    row["input_tokens"] += chat * (PROMPT_OVERHEAD + text_tokens) + emb * text_tokens
                    row["output_tokens"] += chat * OUTPUT_TOKENS
            except ValueError as exc:
                row.update(calls=None, embedding_calls=None, input_tokens=None,
                           output_tokens=None, note=str(exc))
            rows.append(row)
    return rows
