"""Fidelity of the TruLens backend: for every mapped metric, the adapter's raw value equals
what trulens-feedback computes through its documented API (the provider's feedback
functions and ``GroundTruthAgreement.agreement_measure``, called with our provider as the
RAG triad's selectors would call them: contexts as one list for groundedness, one at a
time for context relevance, then the mean) on the same rows with the same judge answers;
``value == 10 × raw`` and the reason is TruLens's.

Method (as for RAGAS and DeepEval): run the backend against the loopback judge server with
a SQLite judge cache; then build a second judge bundle on the SAME cache, call TruLens
directly and check that the server saw zero new requests. Loopback answers (ratings in
{0, 1}, sentences split at full stops, agreement 0–10 from a hash) are plumbing, not
judgment quality.
"""

from __future__ import annotations

import asyncio
import contextvars

import pytest

pytest.importorskip("trulens.feedback", reason="the trulens extra is not installed")

from judge_answers_trulens import sentences, trulens_answer_fn
from judge_server import JudgeServer, binary_answer_fn
from trulens.core.feedback.feedback import GroundednessConfigs
from trulens.feedback import GroundTruthAgreement

from unified.adapters import get_backend
from unified.adapters.trulens import TRULENS_METRICS
from unified.adapters.trulens.backend import JudgeTruLensProvider
from unified.judge import JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric
from unified.sample import Sample

pytestmark = pytest.mark.trulens

SAMPLES = [
    Sample(
        user_input="What is the capital of France, and which river runs through it?",
        response="Paris is the capital of France. The Seine runs through Paris. It is long.",
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

_answers = trulens_answer_fn(binary_answer_fn())


# The direct calls, written from TruLens's documentation, independently of the adapter.
def _groundedness(p, s):
    return [
        p.groundedness_measure_with_cot_reasons(
            source=s.retrieved_contexts,
            statement=s.response,
            groundedness_configs=GroundednessConfigs(use_sent_tokenize=False, filter_trivial_statements=False),
        )
    ]


def _relevance(p, s):
    return [p.relevance_with_cot_reasons(prompt=s.user_input, response=s.response)]


def _context_relevance(p, s):
    return [p.context_relevance_with_cot_reasons(question=s.user_input, context=c) for c in s.retrieved_contexts]


def _agreement(p, s):
    truth = GroundTruthAgreement([{"query": s.user_input, "expected_response": s.reference}], provider=p)
    return [truth.agreement_measure(s.user_input, s.response)]


DIRECT = {
    "faithfulness": _groundedness,
    "answer_relevancy": _relevance,
    "context_relevancy": _context_relevance,
    "answer_correctness": _agreement,
}


def _calls(metric: str, s: Sample) -> int:
    """Judge calls TruLens makes: the splitter + one per sentence for groundedness, one per
    context for context relevance, else one."""
    return {"faithfulness": 1 + len(sentences(s.response)), "context_relevancy": len(s.retrieved_contexts)}.get(
        metric, 1
    )


def _judges(srv: JudgeServer, cache_path):
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), cache_path=cache_path)


def test_direct_table_covers_every_mapped_metric():
    assert set(DIRECT) == set(TRULENS_METRICS)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
@pytest.mark.parametrize("metric", sorted(TRULENS_METRICS))
async def test_adapter_equals_direct_trulens_call(metric, sample, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no key is needed: none is read
    cache = tmp_path / "c.sqlite"
    with JudgeServer(answer_fn=_answers) as srv:
        judges_a = _judges(srv, cache)
        score = (await get_backend("trulens", judges_a).score(sample, [parse_metric(metric)]))[0]
        await judges_a.aclose()
        assert score.ok, score.error
        assert srv.chat_count == _calls(metric, sample) == score.cost.calls

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        with task_scope("trulens", metric, sample.id):  # the cache's per-task occurrence index
            provider = JudgeTruLensProvider(judges_b, asyncio.get_running_loop(), contextvars.copy_context())
            direct = await asyncio.to_thread(DIRECT[metric], provider, sample)
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    values = [d[0] if isinstance(d, tuple) else d for d in direct]
    raw = sum(values) / len(values)
    assert 0.0 <= raw <= 1.0
    assert score.raw == pytest.approx(raw, abs=1e-12)
    assert score.value == pytest.approx(10 * raw, abs=1e-9)
    meta = direct[0][1]
    if metric == "faithfulness":  # one reason per statement, in order
        assert [r["criteria"] for r in meta["reasons"]] == sentences(sample.response)
        assert all(r["supporting_evidence"] in score.reason for r in meta["reasons"])
    elif metric == "answer_correctness":
        assert meta == {"ground_truth_response": sample.reference}
    else:
        assert all(d[1]["reason"] in score.reason for d in direct)
