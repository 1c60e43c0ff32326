"""``--dry-run``: what a run would cost in judge calls and tokens, without calling anything.

Each backend's room declares its per-sample estimate (``BackendFacts``): the ``calls``
of its table's rows by default — each metric alone, (chat + per-context · K, embedding)
for a sample with K retrieved contexts, measured through the judge layer
(``benchmarks/calls_per_sample.py``) — or a function of its own where calls are shared
or depend on the text (native's plan, TruLens's sentences, the embedding backend's
shared vectors): ``fn(refs, sample, *, single_judge) -> [(chat calls, embedding calls)
| None per ref]``, for one sample with all ``refs`` requested together, billed as the
backend bills them (a call shared by several metrics goes to the first that needs it, so
the rows of a backend add up to what it spends). Tokens are estimated as

    input  = chat · (PROMPT_OVERHEAD + chars(fields the metric reads) / 4) + embedding · chars / 4
    output = chat · OUTPUT_TOKENS

a deliberately rough figure (real prompts differ per framework), flagged as an estimate.
This module imports no framework.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from unified.adapters.facts import BackendFacts
from unified.adapters.registry import backend_info, resolve
from unified.metrics import MetricRef

PROMPT_OVERHEAD = 350  # instructions + few-shot examples of a typical judge prompt
OUTPUT_TOKENS = 120  # a short JSON verdict list
CHARS_PER_TOKEN = 4

Calls = tuple[int, int]  # (chat calls, embedding calls) for one sample


def per_sample_estimate(info: BackendFacts) -> Callable[..., list[Calls | None]] | None:
    """The room's estimate: its own function, else its table's ``calls``; None for a
    backend that declares neither."""
    if info.estimate is not None:
        return resolve(info.estimate) if isinstance(info.estimate, str) else info.estimate
    return info.table_calls if info.table else None


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
    per_sample = per_sample_estimate(backend_info(backend))
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
    for ref in refs if per_sample is None else ():
        if ref.spec.kind != "deterministic":
            _no_estimate(rows[ref.name], f"no call estimate for backend {backend!r}")
    return list(rows.values())


def _add(row: dict[str, Any], calls: Calls, text_tokens: int) -> None:
    chat, emb = calls
    row["calls"] += chat
    row["embedding_calls"] += emb
    row["input_tokens"] += chat * (PROMPT_OVERHEAD + text_tokens) + emb * text_tokens
    row["output_tokens"] += chat * OUTPUT_TOKENS
