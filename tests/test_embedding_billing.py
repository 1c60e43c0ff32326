"""The embedding backend bills each metric for the embedding calls it needed (issue 12,
item 5): a text shared by several metrics is paid for by the first metric that needed it,
the calls billed add up to the calls the embedder saw, and values are those of one
batched call per sample up to float noise. Real MiniLM model, real runner, real files."""

import asyncio
import json
from typing import Sequence

import pytest
from support import as_read

from unified.adapters import get_backend
from unified.adapters.embedding.backend import texts_for
from unified.api import aevaluate
from unified.judge.base import Embedder, JudgeConnectionError, Judges
from unified.metrics import parse_metrics
from unified.sample import Sample

pytestmark = pytest.mark.local

CTX = [
    "Nimbus Notes syncs offline changes within 30 seconds of reconnecting. Attachments over 50 MB download on demand.",
    "Deleted notes stay in the trash for 30 days. After that they are removed for good.",
]
SAMPLES = [
    Sample(
        id="s1",
        user_input="How fast do offline changes sync?",
        response="Offline changes sync within 30 seconds. Big attachments download on demand.",
        retrieved_contexts=CTX,
        reference="Changes sync within 30 seconds of reconnecting.",
    ),
    Sample(
        id="s2",
        user_input="How long do deleted notes stay in the trash?",
        response="Deleted notes stay in the trash for 30 days.",
        retrieved_contexts=CTX[::-1],
        reference="Thirty days, then they are removed.",
    ),
]
METRICS = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision,semantic_similarity"


class CountingEmbedder(Embedder):
    """The real local model, with every call's texts recorded."""

    def __init__(self, fail_after: int | None = None):
        from unified.judge.minilm import LocalEmbedder

        self.inner, self.model, self.calls, self.fail_after = LocalEmbedder(), "counting", [], fail_after

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.fail_after is not None and len(self.calls) > self.fail_after:
            raise JudgeConnectionError("embedding server unreachable")
        return await self.inner.embed(texts)


class ServedEmbedder(Embedder):
    """Serves vectors computed beforehand in one call per sample (the old batching)."""

    model = "served"

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


def test_run_bills_each_metric_its_own_calls_and_the_bills_add_up(tmp_path):
    emb = CountingEmbedder()
    report = asyncio.run(
        aevaluate(
            SAMPLES,
            METRICS,
            backends=("embedding",),
            judges=Judges(embedder=emb),
            out=tmp_path / "run",
            progress=False,
            quiet=True,
        )
    )
    lines = [as_read(json.loads(x)) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    billed = {(x["sample_id"], x["metric"]): x["cost"]["embedding_calls"] for x in lines}
    assert all(x["error"] is None for x in lines)
    # faithfulness embeds the response and context sentences; answer_relevancy the question
    # and the whole response (s1 has two sentences) or only the question (s2 has one, already
    # embedded); context_recall the reference; the other three find every text embedded
    for sid in ("s1", "s2"):
        assert [billed[(sid, m)] for m in METRICS.split(",")] == [1, 1, 0, 1, 0, 0]
    assert sum(billed.values()) == len(emb.calls) == 6
    per_sample = [t for call in emb.calls for t in call]
    expected = sum(len(dict.fromkeys(t for m in METRICS.split(",") for t in texts_for(m, s))) for s in SAMPLES)
    assert len(per_sample) == expected  # each text of a sample sent once, as one call did
    by_metric = {a.metric: a.cost.embedding_calls for a in report.summary()}
    assert by_metric == {
        "faithfulness": 2,
        "answer_relevancy": 2,
        "context_relevancy": 0,
        "context_recall": 2,
        "context_precision": 0,
        "semantic_similarity": 0,
    }


def test_values_match_one_batched_call_per_sample_up_to_float_noise():
    from unified.judge.minilm import LocalEmbedder

    refs = parse_metrics(METRICS)
    split = [asyncio.run(get_backend("embedding", Judges(embedder=CountingEmbedder())).score(s, refs)) for s in SAMPLES]
    vectors: dict[str, list[float]] = {}
    for s in SAMPLES:
        texts = list(dict.fromkeys(t for r in refs for t in texts_for(r.canonical, s)))
        vectors.update(zip(texts, asyncio.run(LocalEmbedder().embed(texts))))
    single = [
        asyncio.run(get_backend("embedding", Judges(embedder=ServedEmbedder(vectors))).score(s, refs)) for s in SAMPLES
    ]
    pairs = [(a.value, b.value) for xs, ys in zip(split, single) for a, b in zip(xs, ys)]
    assert all(a is not None for a, _ in pairs)
    assert max(abs(a - b) for a, b in pairs) < 1e-4  # MiniLM's padding changes with the batch


def test_a_failed_call_is_not_repeated_and_earlier_metrics_keep_their_scores():
    emb = CountingEmbedder(fail_after=1)  # the first call works, every later one fails
    out = asyncio.run(get_backend("embedding", Judges(embedder=emb)).score(SAMPLES[0], parse_metrics(METRICS)))
    assert out[0].ok and out[0].cost.embedding_calls == 1  # faithfulness
    assert out[1].value is None and "unreachable" in out[1].error  # answer_relevancy
    assert len(emb.calls) == 2  # context_recall needs new texts too, but the embedder is not asked again
    # every later metric needs a text the failed call should have brought (the question,
    # the whole response, the reference): each says so, with the same error
    assert [o.ok for o in out] == [True, False, False, False, False, False]
    assert {o.error for o in out[1:]} == {out[1].error}
    # the fake fails before reaching the model: only the one real call is billed
    assert sum(o.cost.embedding_calls for o in out) == 1
