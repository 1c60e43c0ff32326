"""``--dry-run``: what a run would cost in judge calls and tokens, without calling anything.

Each backend's registry entry names its estimate, ``fn(refs, sample, *, single_judge) ->
[(chat calls, embedding calls) | None per ref]`` for one sample with all ``refs`` requested
together, billed as the backend bills them (a call shared by several metrics goes to the
first that needs it, so the rows of a backend add up to what it spends). Native derives
its figures from its metric table (``native/table.py``); RAGAS, DeepEval, Phoenix and TruLens
figures below were measured through the judge layer (FRAMEWORK_NOTES.md,
benchmarks/calls_per_sample.py); they share nothing between metrics. Tokens are estimated as

    input  = chat · (PROMPT_OVERHEAD + chars(fields the metric reads) / 4) + embedding · chars / 4
    output = chat · OUTPUT_TOKENS

a deliberately rough figure (real prompts differ per framework), flagged as an estimate.
This module imports no framework.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from unified.adapters.registry import backend_info, resolve
from unified.metrics import MetricRef

PROMPT_OVERHEAD = 350  # instructions + few-shot examples of a typical judge prompt
OUTPUT_TOKENS = 120  # a short JSON verdict list
CHARS_PER_TOKEN = 4

Calls = tuple[int, int]  # (chat calls, embedding calls) for one sample

#: metric -> (chat calls, extra chat calls per retrieved context, embedding calls)
RAGAS_CALLS: dict[str, tuple[int, int, int]] = {
    "faithfulness": (2, 0, 0),
    "answer_relevancy": (3, 0, 2),  # 3 identical prompts on purpose
    "context_precision": (0, 1, 0),  # one verdict per context
    "context_recall": (1, 0, 0),
    "context_relevancy": (2, 0, 0),
    "response_groundedness": (2, 0, 0),
    "answer_correctness": (3, 0, 2),
    "semantic_similarity": (0, 0, 2),
}
DEEPEVAL_CALLS: dict[str, tuple[int, int, int]] = {
    "faithfulness": (4, 0, 0),
    "answer_relevancy": (3, 0, 0),
    "context_relevancy": (1, 1, 0),  # one verdict per context + the reason
    "context_precision": (2, 0, 0),
    "context_recall": (2, 0, 0),
    "hallucination": (2, 0, 0),
    "answer_correctness": (2, 0, 0),  # GEval
}

#: Phoenix: one classification per evaluation; relevance once per retrieved context
PHOENIX_CALLS: dict[str, tuple[int, int, int]] = {
    "faithfulness": (1, 0, 0),
    "answer_correctness": (1, 0, 0),
    "context_relevancy": (0, 1, 0),
}
#: TruLens besides groundedness (which depends on the response's sentences, see below)
TRULENS_CALLS: dict[str, tuple[int, int, int]] = {
    "answer_relevancy": (1, 0, 0),
    "context_relevancy": (0, 1, 0),  # the triad's per-context selector, averaged
    "answer_correctness": (1, 0, 0),  # ground-truth agreement
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _from_table(
    table: Mapping[str, tuple[int, int, int]], refs: Sequence[MetricRef], sample: Any
) -> list[Calls | None]:
    k = len(getattr(sample, "retrieved_contexts", None) or [])
    rows = (table.get(r.canonical) for r in refs)
    return [None if row is None else (row[0] + row[1] * k, row[2]) for row in rows]


def ragas_calls(refs: Sequence[MetricRef], sample: Any, *, single_judge: bool = False) -> list[Calls | None]:
    """RAGAS: each metric alone (``RAGAS_CALLS``); one judge whatever ``single_judge``."""
    return _from_table(RAGAS_CALLS, refs, sample)


def deepeval_calls(refs: Sequence[MetricRef], sample: Any, *, single_judge: bool = False) -> list[Calls | None]:
    """DeepEval: each metric alone (``DEEPEVAL_CALLS``); one judge whatever ``single_judge``."""
    return _from_table(DEEPEVAL_CALLS, refs, sample)


def phoenix_calls(refs: Sequence[MetricRef], sample: Any, *, single_judge: bool = False) -> list[Calls | None]:
    """Phoenix: each metric alone (``PHOENIX_CALLS``); one judge whatever ``single_judge``."""
    return _from_table(PHOENIX_CALLS, refs, sample)


def trulens_calls(refs: Sequence[MetricRef], sample: Any, *, single_judge: bool = False) -> list[Calls | None]:
    """TruLens: ``TRULENS_CALLS``, and for groundedness (faithfulness) 1 + S: the judge
    splits the response into sentences, then rates each. S is estimated by cutting the
    response after ``.``, ``!`` or ``?`` (the judge's split may differ)."""
    out = _from_table(TRULENS_CALLS, refs, sample)
    response = (getattr(sample, "response", None) or "").strip()
    n_sentences = len([p for p in _SENTENCE_END.split(response) if p.strip()])
    return [(1 + n_sentences, 0) if r.canonical == "faithfulness" else c for r, c in zip(refs, out)]


def embedding_calls(refs: Sequence[MetricRef], sample: Any, *, single_judge: bool = False) -> list[Calls | None]:
    """The embedding backend: no chat call; one embedding call per sample for all its
    sentence-vector metrics, billed to the first, and one for bertscore's token vectors."""
    out: list[Calls | None] = []
    shared_billed = False
    for ref in refs:
        if ref.canonical == "bertscore":
            out.append((0, 1))
            continue
        out.append((0, 0 if shared_billed else 1))
        shared_billed = True
    return out


def _chars(sample: Any, fields: Iterable[str]) -> int:
    total = 0
    for f in fields:
        v = getattr(sample, f, None)
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, list):
            total += sum(len(str(x)) for x in v)
    return total


def _row(backend: str, ref: MetricRef, n_samples: int) -> dict[str, Any]:
    return {
        "backend": backend,
        "metric": ref.name,
        "samples": n_samples,
        "calls": 0,
        "embedding_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "tokens_estimated": True,
    }


def _no_estimate(row: dict[str, Any], note: str) -> None:
    row.update(calls=None, embedding_calls=None, input_tokens=None, output_tokens=None, note=note)


def estimate_calls(
    backend: str,
    samples: Sequence[Any],
    metric_refs: Sequence[MetricRef],
    *,
    single_judge: bool = False,
    done: Callable[[Any, MetricRef], bool] | None = None,
) -> list[dict[str, Any]]:
    """One row per distinct metric of ``metric_refs`` (in order) for ``backend`` over
    ``samples``: ``backend, metric, samples, calls, embedding_calls, input_tokens,
    output_tokens, tokens_estimated`` (+ ``note``, every figure None, when the backend
    or the metric has no estimate). Deterministic metrics cost nothing on any backend.
    ``done(sample, ref)``: a task a run would skip (already in its folder); it is left
    out of ``samples`` and of the calls."""
    refs = list({r.name: r for r in metric_refs}.values())
    rows = {r.name: _row(backend, r, 0) for r in refs}
    path = backend_info(backend).estimate
    per_sample = resolve(path) if path is not None else None
    for s in samples:
        left = [r for r in refs if done is None or not done(s, r)]
        for r in left:
            rows[r.name]["samples"] += 1
        judged = [r for r in left if r.spec.kind != "deterministic"]
        if per_sample is None or not judged:
            continue
        for ref, calls in zip(judged, per_sample(judged, s, single_judge=single_judge)):
            row = rows[ref.name]
            if calls is None:
                _no_estimate(row, f"no call estimate for metric {ref.canonical!r} on backend {backend!r}")
            elif row["calls"] is not None:
                _add(row, calls, _chars(s, ref.spec.required) // CHARS_PER_TOKEN)
    for ref in refs if path is None else ():
        if ref.spec.kind != "deterministic":
            _no_estimate(rows[ref.name], f"no call estimate for backend {backend!r}")
    return list(rows.values())


def _add(row: dict[str, Any], calls: Calls, text_tokens: int) -> None:
    chat, emb = calls
    row["calls"] += chat
    row["embedding_calls"] += emb
    row["input_tokens"] += chat * (PROMPT_OVERHEAD + text_tokens) + emb * text_tokens
    row["output_tokens"] += chat * OUTPUT_TOKENS
