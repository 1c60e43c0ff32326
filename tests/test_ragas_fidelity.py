"""Fidelity of the RAGAS backend: for every mapped metric, the adapter's raw score equals
what ragas itself computes through its documented API (``await Metric(llm=..., ...).ascore(...)``)
on the same sample with the same judge answers, to 1e-9, and ``value == 10 × raw``.

Method: run the backend against the loopback judge server with a SQLite judge cache; then
build a second judge bundle on the SAME cache, call ragas directly and check that the
server saw zero new requests (every answer was replayed). The loopback answers are
random-but-schema-valid (plumbing, not judgment quality); ``_scripted`` keeps integers at
0/1 so most metrics produce an in-range number. Where ragas itself fails or returns NaN on
such answers, the test requires both paths to fail the same way.
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("ragas", reason="the ragas extra is not installed")

import ragas.metrics.collections as rc
from judge_server import JudgeServer, binary_answer_fn

from unified.adapters import get_backend

# the adapter first: it switches ragas's telemetry off and moves its uuid file before import
from unified.adapters.ragas import RAGAS_METRICS
from unified.adapters.ragas.backend import JudgeRagasEmbedding, JudgeRagasLLM
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric
from unified.sample import Sample

pytestmark = pytest.mark.ragas

SAMPLE = Sample(
    user_input="What is the capital of France, and which river runs through it?",
    response="Paris is the capital of France. The Seine runs through Paris.",
    retrieved_contexts=[
        "Paris is the capital and largest city of France.",
        "The Seine flows through Paris before reaching the English Channel.",
        "Lyon is known for its cuisine.",
    ],
    reference="The capital of France is Paris; the Seine flows through it.",
    id="fr-1",
)

# The direct calls, written from ragas's documentation, independently of the adapter's
# table: class, constructor components, ascore keyword arguments.
S = SAMPLE
DIRECT = {
    "faithfulness": (
        rc.Faithfulness,
        ("llm",),
        dict(user_input=S.user_input, response=S.response, retrieved_contexts=S.retrieved_contexts),
    ),
    "answer_relevancy": (rc.AnswerRelevancy, ("llm", "embeddings"), dict(user_input=S.user_input, response=S.response)),
    "context_relevancy": (
        rc.ContextRelevance,
        ("llm",),
        dict(user_input=S.user_input, retrieved_contexts=S.retrieved_contexts),
    ),
    "context_recall": (
        rc.ContextRecall,
        ("llm",),
        dict(user_input=S.user_input, retrieved_contexts=S.retrieved_contexts, reference=S.reference),
    ),
    "context_precision": (
        rc.ContextPrecisionWithReference,
        ("llm",),
        dict(user_input=S.user_input, reference=S.reference, retrieved_contexts=S.retrieved_contexts),
    ),
    "answer_correctness": (
        rc.AnswerCorrectness,
        ("llm", "embeddings"),
        dict(user_input=S.user_input, response=S.response, reference=S.reference),
    ),
    "response_groundedness": (
        rc.ResponseGroundedness,
        ("llm",),
        dict(response=S.response, retrieved_contexts=S.retrieved_contexts),
    ),
    "semantic_similarity": (rc.SemanticSimilarity, ("embeddings",), dict(reference=S.reference, response=S.response)),
    "factual_correctness": (rc.FactualCorrectness, ("llm",), dict(response=S.response, reference=S.reference)),
    "context_utilization": (
        rc.ContextPrecisionWithoutReference,
        ("llm",),
        dict(user_input=S.user_input, response=S.response, retrieved_contexts=S.retrieved_contexts),
    ),
    "context_entity_recall": (
        rc.ContextEntityRecall,
        ("llm",),
        dict(reference=S.reference, retrieved_contexts=S.retrieved_contexts),
    ),
    "answer_accuracy": (
        rc.AnswerAccuracy,
        ("llm",),
        dict(user_input=S.user_input, response=S.response, reference=S.reference),
    ),
    "noise_sensitivity": (
        rc.NoiseSensitivity,
        ("llm",),
        dict(
            user_input=S.user_input, response=S.response, reference=S.reference, retrieved_contexts=S.retrieved_contexts
        ),
    ),
}


# integers in {0, 1} keep scores in ragas's documented range; lists cut to one item so
# per-statement verdict lists line up as a real judge's would (NoiseSensitivity stacks
# them into one array)
_scripted = binary_answer_fn(max_items=1)


def _judges(srv: JudgeServer, cache_path):
    return build_judges(
        JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
        embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed", max_retries=0),
        cache_path=cache_path,
    )


def test_direct_table_covers_every_mapped_metric():
    assert set(DIRECT) == set(RAGAS_METRICS)
    for name, (cls, _uses, _kw) in DIRECT.items():
        assert RAGAS_METRICS[name].cls == cls.__name__


@pytest.mark.parametrize("metric", sorted(RAGAS_METRICS))
async def test_adapter_equals_direct_ragas_call(metric, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")
    cache = tmp_path / "c.sqlite"
    ref = parse_metric(metric)
    with JudgeServer(answer_fn=_scripted) as srv:
        judges_a = _judges(srv, cache)
        score = (await get_backend("ragas", judges_a).score(SAMPLE, [ref]))[0]
        await judges_a.aclose()
        assert srv.request_count > 0, "the adapter must have asked the judge"
        assert score.metric == metric and score.backend == "ragas" and score.sample_id == "fr-1"

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        cls, uses, kwargs = DIRECT[metric]
        components = {"llm": JudgeRagasLLM(judges_b), "embeddings": JudgeRagasEmbedding(judges_b)}
        direct_metric = cls(**{u: components[u] for u in uses})
        direct_error = None
        direct_raw = None
        # task_scope only gives the judge cache its per-task occurrence index
        with task_scope("ragas", metric, SAMPLE.id):
            try:
                direct_raw = (await direct_metric.ascore(**kwargs)).value
            except Exception as e:  # compared with the adapter's error below
                direct_error = f"{type(e).__name__}: {e}"
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    if score.ok:
        assert direct_error is None
        assert abs(score.raw - float(direct_raw)) <= 1e-9
        m = RAGAS_METRICS[metric]
        expected = 10 * direct_raw if m.higher_is_better else 10 * (1 - direct_raw)
        lo, hi = m.domain or m.raw_range
        assert lo <= direct_raw <= hi
        if 0.0 <= direct_raw <= 1.0:
            assert abs(score.value - expected) <= 1e-9
        else:  # a cosine below 0: clipped, and the details say from what
            assert score.value == min(10.0, max(0.0, expected)) and score.details["clipped_from"] == score.raw
        assert score.cost.calls + score.cost.embedding_calls > 0
    elif direct_error is None and direct_raw is not None and not math.isnan(direct_raw):
        # outside what ragas itself allows: an error that says so, never a clipped 0 or 10
        assert score.value is None and "outside its own range" in score.error
        assert score.details["raw_out_of_range"] == direct_raw
    else:
        assert score.value is None and score.error.startswith(f"ragas {RAGAS_METRICS[metric].cls}: ")
        assert "\n" not in score.error
        if direct_error is not None:
            assert " ".join(direct_error.split())[:200] in score.error
        else:
            assert direct_raw is None or math.isnan(direct_raw)
