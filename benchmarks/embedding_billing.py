"""What per-metric billing costs the ``embedding`` backend, against one call per sample.

    python benchmarks/embedding_billing.py [--data FILE.jsonl] [--limit N]

The backend embeds per metric, in the order the metrics were asked for: each metric's
call carries only the texts no earlier metric of the sample embedded, so each metric is
billed for the texts it was first to need. Before, one call per sample embedded every
text and was billed to the first metric. On the example data (default
``examples/data/rag_examples.jsonl``, shipped in the repo) this prints:

- embedder calls per metric and in total, and texts sent in total (per-metric calls must
  send each distinct text of a sample once, as the single call did);
- max |Δ value| on 0–10 between per-metric calls and one call per sample: batching
  changes MiniLM's padding, so vectors differ in the last float bits (expected ≤ 1e-5);
- the ratio of the backend's time with per-metric calls to its time with one call per
  sample (the single call emulated by serving vectors computed in one call per sample).

Ratios only, one run; the machine is shared, so treat small differences as noise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from unified.adapters import get_backend
from unified.adapters.embedding.backend import texts_for
from unified.data.io import load_samples
from unified.judge.base import Embedder, Judges
from unified.judge.minilm import LocalEmbedder
from unified.metrics import parse_metrics

REPO = Path(__file__).resolve().parent.parent
METRICS = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision,semantic_similarity"


class CountingEmbedder(Embedder):
    """Counts calls and texts on the way to ``inner``."""

    def __init__(self, inner: Embedder):
        self.inner, self.model, self.calls, self.texts = inner, inner.model, 0, 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return await self.inner.embed(texts)


class ServedEmbedder(Embedder):
    """Serves vectors computed beforehand (the one-call-per-sample emulation)."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors, self.model = vectors, "served"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


async def one_call_vectors(samples: list, names: list[str]) -> tuple[dict, int, float]:
    """Every text of a sample in one call, in the order the old backend used (the metrics'
    texts in metric order, each distinct text once); returns the vectors, the number of
    texts sent and the seconds."""
    local, out, sent = LocalEmbedder(), {}, 0
    t0 = time.perf_counter()
    for s in samples:
        texts = list(dict.fromkeys(t for m in names for t in texts_for(m, s)))
        out.update(zip(texts, await local.embed(texts)))
        sent += len(texts)
    return out, sent, time.perf_counter() - t0


async def measure(samples: list) -> None:
    refs = parse_metrics(METRICS)
    names = [r.canonical for r in refs]
    await LocalEmbedder().embed(["warm the model up"])
    counting = CountingEmbedder(LocalEmbedder())
    backend = get_backend("embedding", Judges(embedder=counting))
    t0 = time.perf_counter()
    per_metric = [await backend.score(s, refs) for s in samples]
    t_split = time.perf_counter() - t0
    vectors, sent_once, t_embed_once = await one_call_vectors(samples, names)
    served = get_backend("embedding", Judges(embedder=ServedEmbedder(vectors)))
    t0 = time.perf_counter()
    single = [await served.score(s, refs) for s in samples]
    t_single = t_embed_once + time.perf_counter() - t0
    billed = Counter()
    for scores in per_metric:
        for sc in scores:
            billed[sc.metric] += sc.cost.embedding_calls
    drift = max(
        abs(a.value - b.value)
        for xs, ys in zip(per_metric, single)
        for a, b in zip(xs, ys)
        if a.value is not None and b.value is not None
    )
    print(f"{len(samples)} samples, metrics {METRICS}")
    for m in names:
        print(f"  {m:22s} embedder calls billed: {billed[m]}")
    print(
        f"  total embedder calls {counting.calls} (one-call-per-sample: {len(samples)}); "
        f"texts sent {counting.texts} (one call per sample: {sent_once})"
    )
    print(f"  max |Δ value| per-metric vs one call: {drift:.2e} on 0–10")
    print(f"  time per-metric / one call per sample: {t_split / t_single:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data",
        default=str(REPO / "examples/data/rag_examples.jsonl"),
        help="a sample file (any format unified-eval reads)",
    )
    ap.add_argument("--limit", type=int, default=0, help="first N samples only")
    args = ap.parse_args(argv)
    samples, _ = load_samples(args.data)
    if args.limit:
        samples = samples[: args.limit]
    asyncio.run(measure(samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
