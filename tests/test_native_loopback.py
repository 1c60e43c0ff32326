"""Native metrics end to end through the real judge layer against the loopback server
(tests/judge_server.py): plumbing only — its answers are synthesised from the schema,
so these tests check completeness, accounting and caching, never judgment quality."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from unified.adapters.native import NativeBackend
from unified.data.io import read_samples
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.metrics import parse_metrics

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "rag_examples.jsonl"
LLM = (
    "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision,"
    "answer_correctness,context_sufficiency,context_correctness,response_groundedness,hallucination"
)
ALL = LLM + ",semantic_similarity,precision@3,recall@3,mrr,ndcg@3,hit_rate@3"


def loopback_judges(server, cache_path, single=False):
    return build_judges(
        JudgeConfig(base_url=server.base_url, model="fake", max_retries=1),
        embedding=EmbeddingConfig(kind="openai", base_url=server.base_url, model="fake-embed"),
        cache_path=cache_path,
        single_judge=single,
    )


def samples():
    return [s for s in read_samples(DATA) if hasattr(s, "user_input")]


@pytest.mark.slow
async def test_all_native_metrics_on_the_example_dataset_then_warm_cache(judge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
    rows = samples()
    assert len(rows) >= 10
    refs = parse_metrics(ALL)
    judges = loopback_judges(judge_server, tmp_path / "cache.sqlite")
    backend = NativeBackend(judges)
    cold = []
    for s in rows:
        cold.extend(await backend.score(s, refs))
    assert len(cold) == len(rows) * len(refs)
    assert all(sc.value is None or math.isfinite(sc.value) for sc in cold)  # zero NaN
    # the synthesiser answers with valid JSON, so no judge error is expected; what may
    # legitimately fail is a sample that lacks a field (reported, not raised)
    llm_names = set(LLM.split(",")) | {"semantic_similarity"}
    unexpected = [
        sc
        for sc in cold
        if sc.error
        and sc.metric in llm_names
        and "missing" not in sc.error
        and "no retrieved contexts" not in sc.error
        and "states no factual claim" not in sc.error
    ]
    assert unexpected == [], [(s.metric, s.sample_id, s.error) for s in unexpected[:5]]
    llm = [sc for sc in cold if sc.ok and sc.metric in LLM.split(",")]
    assert llm and all("judges" in sc.details for sc in llm)
    dual = [sc for sc in llm if "value_judge_a" in sc.details and sc.details["judge_agreement"] is not None]
    assert dual and all(sc.details["value_judge_b"] is not None for sc in dual)
    assert sum(sc.cost.calls for sc in cold) == judge_server.chat_count
    assert sum(sc.cost.embedding_calls for sc in cold) == judge_server.embedding_count
    assert "sk-loopback-test-key" not in "".join(sc.model_dump_json() for sc in cold)

    # warm rerun with a fresh bundle on the same cache file: zero requests
    judge_server.reset_counts()
    backend2 = NativeBackend(loopback_judges(judge_server, tmp_path / "cache.sqlite"))
    warm = []
    for s in rows:
        warm.extend(await backend2.score(s, refs))
    assert judge_server.request_count == 0
    assert [(w.metric, w.value) for w in warm] == [(c.metric, c.value) for c in cold]
    assert sum(w.cost.cache_hits for w in warm) > 0 and sum(w.cost.calls for w in warm) == 0


@pytest.mark.parametrize("k", [3, 10])
@pytest.mark.parametrize("single,expected", [(False, 8), (True, 5)])
async def test_core_metrics_call_budget_measured_at_the_server(judge_server, tmp_path, k, single, expected):
    from unified.sample import Sample

    s = Sample(
        user_input="Which river flows through Paris?",
        response="The Seine flows through Paris.",
        reference="It is the Seine.",
        retrieved_contexts=[f"Passage {i}: rivers of France." for i in range(k)],
    )
    judges = loopback_judges(judge_server, tmp_path / "c.sqlite", single=single)
    scores = await NativeBackend(judges).score(
        s, parse_metrics("faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision")
    )
    assert all(sc.ok for sc in scores), [sc.error for sc in scores]
    assert judge_server.chat_count == expected
    assert judge_server.embedding_count == 1


@pytest.mark.parametrize("faults", [1, 2])
async def test_judge_failing_after_retries_degrades_or_errors(judge_server, tmp_path, faults):
    """One of the two concurrent judge calls hits an HTTP 500 (no retries left): the
    score comes from the other judge, marked degraded; both failing gives an error."""
    from unified.sample import Sample

    s = Sample(
        user_input="Which river flows through Paris?",
        response="The Seine.",
        retrieved_contexts=["The Seine flows through Paris."],
    )
    # json_schema pinned: in "auto" mode a first 500 is re-sent once in llama.cpp form
    judges = build_judges(
        JudgeConfig(base_url=judge_server.base_url, model="fake", max_retries=0, structured_output="json_schema")
    )
    judge_server.force_fault("500", faults)
    [score] = await NativeBackend(judges).score(s, parse_metrics("response_groundedness"))
    if faults == 1:
        assert score.ok and score.degraded and "failed" in score.details["degraded_reason"]
        assert (score.details["rating_a"] is None) != (score.details["rating_b"] is None)
    else:
        assert score.value is None and "both judges failed" in score.error and "500" in score.error


async def test_extractions_are_shared_across_score_calls_through_the_cache(judge_server, tmp_path):
    from unified.sample import Sample

    s = Sample(
        user_input="Which river flows through Paris?",
        response="The Seine flows through Paris.",
        reference="It is the Seine.",
        retrieved_contexts=["The Seine flows through Paris."],
    )
    backend = NativeBackend(loopback_judges(judge_server, tmp_path / "c.sqlite"))
    # response and reference claims (the verification asks both) + 2 verifications
    await backend.score(s, parse_metrics("faithfulness"))
    assert judge_server.chat_count == 4
    judge_server.reset_counts()
    [ac] = await backend.score(s, parse_metrics("answer_correctness"))
    assert ac.ok and ac.cost.cache_hits == 2  # both claim lists come from the cache
    assert judge_server.chat_count == 2  # comparison A/B
