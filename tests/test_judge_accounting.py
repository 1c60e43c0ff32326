"""Cost attribution and money: ``metric_scope`` bills each call to the metric in whose
scope it was made while the task meter still sees every record; price tables from
``--price`` strings and ``[prices]`` sections; ``Cost.usd`` from records' models and
tokens, None ("unknown") rather than a partial sum."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest
from pydantic import BaseModel

from unified.judge import (
    CachedChatJudge,
    JudgeCache,
    JudgeConfig,
    OpenAIChatJudge,
    PriceError,
    metric_scope,
    parse_prices,
    price_scope,
    task_scope,
)
from unified.judge.base import CallRecord, record_call
from unified.scores import Cost, Score, aggregate


class Rating(BaseModel):
    rating: Literal[0, 1, 2]


def rec(model: str, tin: int, tout: int, kind: str = "chat", cached: bool = False) -> CallRecord:
    return CallRecord(
        kind=kind, backend="", metric="", sample_id="", model=model, cached=cached, input_tokens=tin, output_tokens=tout
    )


def test_metric_scope_bills_each_call_to_its_metric_and_the_task_sees_all():
    with task_scope("ragas", "faithfulness,answer_relevancy", "s1") as task:
        with metric_scope("faithfulness") as faith:
            record_call(rec("m", 100, 10))
            record_call(rec("m", 50, 5))
        with metric_scope("answer_relevancy") as rel:
            record_call(rec("m", 30, 3))
            with metric_scope("answer_relevancy.embedding") as inner:  # nested: goes up the chain
                record_call(rec("e", 7, 0, kind="embedding"))
        record_call(rec("m", 1, 1))  # outside any metric scope: the task's own
    assert [r.metric for r in faith.records] == ["faithfulness", "faithfulness"]
    assert (faith.cost().calls, faith.cost().input_tokens) == (2, 150)
    assert (rel.cost().calls, rel.cost().embedding_calls, rel.cost().input_tokens) == (1, 1, 37)
    assert inner.records == rel.records[1:]
    assert (task.cost().calls, task.cost().embedding_calls, task.cost().input_tokens) == (4, 1, 188)
    assert [r.sample_id for r in task.records] == ["s1"] * 5
    assert [r.backend for r in task.records] == ["ragas"] * 5
    assert [r.metric for r in task.records][-1] == "faithfulness,answer_relevancy"


async def test_metric_scopes_keep_their_own_cache_occurrences(judge_server, tmp_path):
    """Two metrics asking the same question in one task, concurrently: each gets the
    same occurrence-0 entry, whatever the interleaving, so a warm rerun is exact."""
    cache = JudgeCache(tmp_path / "c.sqlite")
    judge = CachedChatJudge(OpenAIChatJudge(JudgeConfig(base_url=judge_server.base_url, model="m")), cache)
    question = [{"role": "user", "content": "same question"}]

    async def metric(name: str) -> Cost:
        with metric_scope(name) as meter:
            await judge.ask(question, Rating)
            await judge.ask(question, Rating)  # the second identical ask: occurrence 1
        return meter.cost()

    with task_scope("native", "a,b", "s") as task:
        costs = await asyncio.gather(metric("a"), metric("b"))
    assert judge_server.chat_count == 2  # a and b share entries 0 and 1 (single flight)
    assert sum(c.calls + c.cache_hits for c in costs) == 4 and len(task.records) == 4


def test_parse_prices_from_strings_and_sections(tmp_path):
    assert parse_prices(["gpt-4o-mini=0.15/0.60", "meta-llama/Llama-3-8B=0.2/0.2"]) == {
        "gpt-4o-mini": (0.15, 0.6),
        "meta-llama/Llama-3-8B": (0.2, 0.2),
    }
    run = tmp_path / "run.toml"
    run.write_text(
        '[judge]\nmodel = "a"\n[prices]\n"a" = "1/2"\nb = [3, 4]\nc = { input = 5, output = 6 }\n', encoding="utf-8"
    )
    assert parse_prices(["a=9/9"], config_file=run) == {
        "a": (9.0, 9.0),
        "b": (3.0, 4.0),
        "c": (5.0, 6.0),
    }  # --price wins
    for bad, why in (
        ("gpt-4o", "expected MODEL=IN/OUT"),
        ("m=1", "expected MODEL=IN/OUT"),
        ("m=x/1", "is not a number"),
        ("m=-1/1", ">= 0"),
        ("m=nan/1", ">= 0"),
    ):
        with pytest.raises(PriceError, match=why) as e:
            parse_prices([bad])
        assert str(e.value).startswith(f"--price {bad}") and isinstance(e.value, ValueError)
    with pytest.raises(PriceError, match=r"\[prices\] d: expected"):
        parse_prices(section={"d": {"in": 1}})


def test_usd_from_records_and_unknown_stays_unknown():
    prices = {"m": (1.0, 2.0), "e": (0.1, 0.0)}
    with price_scope(prices):
        with task_scope("native", "faithfulness", "s") as meter:
            record_call(rec("m", 1_000_000, 500_000))
            record_call(rec("e", 2_000_000, 0, kind="embedding"))
            record_call(rec("m", 0, 0, cached=True))  # a cache hit costs nothing
    assert meter.cost().usd == pytest.approx(1.0 + 1.0 + 0.2)
    with price_scope(prices):
        with task_scope("native", "faithfulness", "s") as unpriced:
            record_call(rec("m", 10, 10))
            record_call(rec("other", 10, 10))
    assert unpriced.cost().usd is None  # not the partial 0.00003
    with task_scope("native", "faithfulness", "s") as no_table:
        record_call(rec("m", 10, 10))
    assert no_table.cost().usd is None
    with price_scope(prices):
        with task_scope("native", "mrr", "s") as free:
            pass
    assert free.cost().usd == 0.0  # priced, and nothing was called


def test_cost_add_keeps_unknown_honest():
    priced = Cost(calls=1, input_tokens=10, usd=0.5)
    free = Cost()  # no calls: neutral
    unknown = Cost(calls=1, input_tokens=10)  # tokens used, no price
    assert priced.add(free).usd == 0.5 and free.add(priced).usd == 0.5
    assert priced.add(priced).usd == 1.0
    assert priced.add(unknown).usd is None and unknown.add(priced).usd is None
    assert free.add(free).usd is None
    scores = [
        Score(metric="f", backend="native", sample_id=str(i), value=5.0, cost=c)
        for i, c in enumerate((priced, free, priced))
    ]
    assert aggregate(scores).cost.usd == 1.0
    scores.append(Score(metric="f", backend="native", sample_id="x", value=5.0, cost=unknown))
    assert aggregate(scores).cost.usd is None


async def test_usd_from_a_real_call(judge_server):
    judge = OpenAIChatJudge(JudgeConfig(base_url=judge_server.base_url, model="loop"))
    with price_scope({"loop": (1000.0, 2000.0)}):
        with task_scope("native", "faithfulness", "s") as meter:
            await judge.ask([{"role": "user", "content": "q"}], Rating)
    c = meter.cost()
    assert c.input_tokens > 0 and c.output_tokens > 0 and not c.tokens_estimated
    assert c.usd == pytest.approx((c.input_tokens * 1000 + c.output_tokens * 2000) / 1e6)
