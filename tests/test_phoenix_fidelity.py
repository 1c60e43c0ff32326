"""Fidelity of the Phoenix backend: for every mapped metric, the adapter's raw value equals
what arize-phoenix-evals computes through its documented API (``await
Evaluator(llm=LLM(...)).async_evaluate(eval_input)``, per document for relevance, then the
mean) on the same rows with the same judge answers, and ``value == 10 × raw``; the label
and explanation are Phoenix's.

Method (as for RAGAS and DeepEval): run the backend against the loopback judge server with
a SQLite judge cache; then build a second judge bundle on the SAME cache, call Phoenix
directly and check that the server saw zero new requests. Loopback answers are random but
schema-valid labels: plumbing, not judgment quality.
"""

from __future__ import annotations

import pytest

pytest.importorskip("phoenix.evals", reason="the phoenix extra is not installed")

from judge_server import JudgeServer
from phoenix.evals.metrics import (
    CorrectnessEvaluator,
    FaithfulnessEvaluator,
    RetrievalRelevanceEvaluator,
)

from unified.adapters import get_backend

# the adapter first: it registers the `unified` provider before evaluators are built
from unified.adapters.phoenix import PHOENIX_METRICS
from unified.adapters.phoenix.backend import phoenix_llm
from unified.judge import JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric
from unified.sample import Sample

pytestmark = pytest.mark.phoenix

SAMPLES = [
    Sample(
        user_input="What is the capital of France, and which river runs through it?",
        response="Paris is the capital of France. The Seine runs through Paris.",
        retrieved_contexts=[
            "Paris is the capital and largest city of France.",
            "The Seine flows through Paris before reaching the English Channel.",
            "Lyon is known for its cuisine.",
        ],
        reference="The capital of France is Paris; the Seine flows through it.",
        id="fr-1",
    ),
    Sample(
        user_input="Who wrote Hamlet?",
        response="Hamlet was written by Christopher Marlowe.",
        retrieved_contexts=["Hamlet is a tragedy by William Shakespeare.", "Marlowe wrote Doctor Faustus."],
        reference="William Shakespeare",
        id="ham-1",
    ),
]


def _joined(s: Sample) -> str:
    return "\n\n".join(s.retrieved_contexts)


# The direct calls, written from Phoenix's documentation, independently of the adapter:
# each returns the list of Phoenix Scores; relevance is evaluated per document.
async def _faithfulness(llm, s):
    return [
        await FaithfulnessEvaluator(llm=llm).async_evaluate(
            {"input": s.user_input, "output": s.response, "context": _joined(s)}
        )
    ]


async def _correctness(llm, s):
    return [await CorrectnessEvaluator(llm=llm).async_evaluate({"input": s.user_input, "output": s.response})]


async def _relevance(llm, s):
    ev = RetrievalRelevanceEvaluator(llm=llm)
    return [await ev.async_evaluate({"input": s.user_input, "context": c}) for c in s.retrieved_contexts]


DIRECT = {"faithfulness": _faithfulness, "answer_correctness": _correctness, "context_relevancy": _relevance}
EVALUATORS = {
    "faithfulness": FaithfulnessEvaluator,
    "answer_correctness": CorrectnessEvaluator,
    "context_relevancy": RetrievalRelevanceEvaluator,
}


def _judges(srv: JudgeServer, cache_path):
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), cache_path=cache_path)


def test_direct_table_covers_every_mapped_metric():
    assert set(DIRECT) == set(PHOENIX_METRICS)


@pytest.mark.parametrize("metric", sorted(PHOENIX_METRICS))
def test_label_table_is_phoenixs_own(metric):
    """The labels `unified-eval metrics` shows (read without importing Phoenix) are the
    evaluator's own ``choices``: a Phoenix upgrade that renames a label fails here."""
    assert EVALUATORS[metric].CHOICES == PHOENIX_METRICS[metric].labels
    assert EVALUATORS[metric].DIRECTION == "maximize"


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
@pytest.mark.parametrize("metric", sorted(PHOENIX_METRICS))
async def test_adapter_equals_direct_phoenix_call(metric, sample, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no key is needed: none is read
    cache = tmp_path / "c.sqlite"
    with JudgeServer() as srv:
        judges_a = _judges(srv, cache)
        score = (await get_backend("phoenix", judges_a).score(sample, [parse_metric(metric)]))[0]
        await judges_a.aclose()
        calls = len(sample.retrieved_contexts) if metric == "context_relevancy" else 1
        assert srv.chat_count == calls, "one judge call per Phoenix evaluation"
        assert score.ok, score.error

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        with task_scope("phoenix", metric, sample.id):  # the cache's per-task occurrence index
            direct = [r[0] for r in await DIRECT[metric](phoenix_llm(judges_b), sample)]
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    raw = sum(d.score for d in direct) / len(direct)
    assert score.raw == pytest.approx(raw, abs=1e-12)
    assert score.value == pytest.approx(10 * raw, abs=1e-9)
    assert score.details["labels"] == [d.label for d in direct]
    assert all(d.label in PHOENIX_METRICS[metric].labels for d in direct)
    if len(direct) == 1:
        assert score.reason == direct[0].explanation
    else:
        assert all(d.explanation in score.reason for d in direct)
    assert score.cost.calls == len(direct)
