"""The persistent cache against the real loopback server: cold/warm call counts, the
occurrence index, single flight, embeddings, failures not cached, multi-process writers."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from typing import Literal

import pytest
from judge_server import JudgeServer
from pydantic import BaseModel

from unified.judge import (
    CachedChatJudge,
    CachedEmbedder,
    EmbeddingConfig,
    JudgeCache,
    JudgeConfig,
    JudgeHTTPError,
    OpenAIChatJudge,
    OpenAIEmbedder,
    add_listener,
    build_judges,
    default_cache_path,
    remove_listener,
    task_scope,
)
from unified.judge.base import ChatJudge


class Rating(BaseModel):
    rating: Literal[0, 1, 2]
    reason: str


SAMPLES = [f"question {i}" for i in range(4)]


def cfg(srv: JudgeServer, **kw) -> JudgeConfig:
    return JudgeConfig(base_url=srv.base_url, model="loop-model", backoff_base=0.01, **kw)


async def fake_metric(judge, sample: str) -> list:
    """Shaped like RAGAS answer relevancy: one distinct ask + the same ask three times."""
    with task_scope("ragas", "answer_relevancy", sample):
        first = await judge.ask([{"role": "user", "content": f"rate {sample}"}], Rating)
        same = [await judge.ask([{"role": "user", "content": f"reverse {sample}"}], Rating) for _ in range(3)]
        text = await judge.ask_text([{"role": "user", "content": f"explain {sample}"}])
    return [first.model_dump(), *(s.model_dump() for s in same), text]


async def run_all(judge) -> list:
    return await asyncio.gather(*(fake_metric(judge, s) for s in SAMPLES))


async def test_cold_run_calls_then_warm_rerun_calls_nothing(judge_server, tmp_path):
    path = tmp_path / "judge_cache.sqlite"
    cold_judges = build_judges(cfg(judge_server), cache_path=path)
    cold = await run_all(cold_judges.chat)
    # per sample: 1 + 3 identical (occurrence index: 3 calls, not 1) + 1 text
    assert judge_server.chat_count == len(SAMPLES) * 5
    await cold_judges.aclose()

    judge_server.reset_counts()
    warm_judges = build_judges(cfg(judge_server), cache_path=path)  # a fresh "process"
    records: list = []
    add_listener(records.append)
    try:
        warm = await run_all(warm_judges.chat)
    finally:
        remove_listener(records.append)
    assert judge_server.chat_count == 0
    assert warm == cold
    assert JudgeCache(path).stats()["chat"] == len(SAMPLES) * 5
    assert len(records) == len(SAMPLES) * 5 and all(r.cached for r in records)
    assert {r.sample_id for r in records} == set(SAMPLES)


async def test_three_identical_requests_cost_three_cold_and_zero_warm(judge_server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    msgs = [{"role": "user", "content": "same"}]
    for expected_calls, expected_hits in ((3, 0), (0, 3)):
        judge_server.reset_counts()
        judge = CachedChatJudge(OpenAIChatJudge(cfg(judge_server)), cache)
        with task_scope("ragas", "answer_relevancy", "s1") as meter:
            for _ in range(3):
                await judge.ask(msgs, Rating)
        assert judge_server.chat_count == expected_calls
        assert (meter.cost().calls, meter.cost().cache_hits) == (expected_calls, expected_hits)


async def test_key_depends_on_endpoint_model_schema_and_params_not_on_credentials(tmp_path, monkeypatch):
    """Two servers that both call their model the same (llama.cpp's "local") are two
    judges: one's answers must never stand in for the other's. Credentials and query
    parameters in the URL do not change who answers."""
    cache = JudgeCache(tmp_path / "c.sqlite")
    with JudgeServer() as a, JudgeServer(seed=7) as b:
        msgs = [{"role": "user", "content": "q"}]
        first = await CachedChatJudge(OpenAIChatJudge(cfg(a)), cache).ask(msgs, Rating)
        # same model name behind another server: a miss, that server's own answer
        await CachedChatJudge(OpenAIChatJudge(cfg(b)), cache).ask(msgs, Rating)
        assert (a.chat_count, b.chat_count) == (1, 1)
        # the same server with a key in the URL: a hit
        keyed = JudgeConfig(
            base_url=a.base_url.replace("http://", "http://u:KEYKEY@") + "?api_key=K2",
            model="loop-model",
            backoff_base=0.01,
        )
        again = await CachedChatJudge(OpenAIChatJudge(keyed), cache).ask(msgs, Rating)
        assert a.chat_count == 1 and again == first
        # another temperature, another model: misses
        await CachedChatJudge(OpenAIChatJudge(cfg(b, temperature=0.5)), cache).ask(msgs, Rating)
        other = JudgeConfig(base_url=b.base_url, model="other", backoff_base=0.01)
        await CachedChatJudge(OpenAIChatJudge(other), cache).ask(msgs, Rating)
        assert b.chat_count == 3


async def test_single_flight_shares_an_in_flight_request(tmp_path):
    with JudgeServer(latency=0.3) as srv:
        judge = CachedChatJudge(OpenAIChatJudge(cfg(srv)), JudgeCache(tmp_path / "c.sqlite"))
        msgs = [{"role": "user", "content": "shared"}]

        async def task(i: int):
            with task_scope("native", "faithfulness", f"s{i}") as meter:
                out = await judge.ask(msgs, Rating)
            return out, meter.cost()

        results = await asyncio.gather(*(task(i) for i in range(5)))
        assert srv.chat_count == 1
        assert len({r[0].model_dump_json() for r in results}) == 1
        assert sum(c.calls for _, c in results) == 1 and sum(c.cache_hits for _, c in results) == 4


async def test_failures_are_not_cached(judge_server, tmp_path):
    judge = CachedChatJudge(
        OpenAIChatJudge(cfg(judge_server, max_retries=0, structured_output="json_schema")),
        JudgeCache(tmp_path / "c.sqlite"),
    )
    judge_server.force_fault("500")
    with pytest.raises(JudgeHTTPError):
        await judge.ask([{"role": "user", "content": "q"}], Rating)
    assert isinstance(await judge.ask([{"role": "user", "content": "q"}], Rating), Rating)
    assert judge_server.chat_count == 2


async def test_embedding_cache_only_sends_missing_texts(judge_server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    emb = EmbeddingConfig(kind="openai", base_url=judge_server.base_url, model="emb")
    e1 = CachedEmbedder(OpenAIEmbedder(emb), cache)
    cold = await e1.embed(["a", "b", "a"])
    assert judge_server.requests[-1]["input"] == ["a", "b"]
    e2 = CachedEmbedder(OpenAIEmbedder(emb), cache)
    with task_scope("native", "answer_relevancy", "s") as meter:
        warm = await e2.embed(["b", "a", "a"])
    assert warm == [cold[1], cold[0], cold[0]]  # bit-identical from the float64 store
    assert judge_server.embedding_count == 1 and meter.cost().cache_hits == 1
    await e2.embed(["a", "c"])
    assert judge_server.requests[-1]["input"] == ["c"]


def test_default_cache_path(monkeypatch, tmp_path):
    assert default_cache_path(tmp_path / "run") == tmp_path / "run" / "judge_cache.sqlite"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "unified-rag-eval" / "judge_cache.sqlite"
    assert build_judges(None, cache=False).chat is None


_WRITER = textwrap.dedent("""
    import sys
    from unified.judge.cache import JudgeCache
    cache = JudgeCache(sys.argv[1])
    for i in range(200):
        cache.put_chat(f"{sys.argv[2]}-{i}", "m", "answer", 1, 1)
        cache.put_vectors("m", [(f"{sys.argv[2]}-v{i}", [0.5, 0.25])])
        assert cache.get_chat(f"{sys.argv[2]}-{i}") is not None
""")


@pytest.mark.slow
def test_several_processes_write_one_cache_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    JudgeCache(path)
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"p{n}"], stderr=subprocess.PIPE) for n in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-500:]
    assert JudgeCache(path).stats() == {"chat": 600, "embedding": 600}


class _CountingJudge(ChatJudge):
    """An in-process judge that counts calls and answers after ``delay`` seconds."""

    model = "counting"

    def __init__(self, delay: float):
        self.calls = 0
        self.delay = delay

    async def ask(self, messages, schema, **params):
        self.calls += 1
        await asyncio.sleep(self.delay)
        return schema(rating=self.calls % 3, reason=f"call {self.calls}")


class _SlowLookupCache(JudgeCache):
    """Reads, then stalls: a lookup that straddles another caller's store (a busy
    SQLite file or a saturated thread pool)."""

    def get_chat(self, key):
        found = super().get_chat(key)
        time.sleep(0.3)
        return found


async def test_single_flight_covers_the_cache_lookup_window(tmp_path):
    """Regression: the in-flight entry used to be registered only after the cache lookup,
    so a second identical request whose lookup started before the first one stored its
    answer (and ended after) asked the judge again and got a different answer."""
    inner = _CountingJudge(0.05)
    judge = CachedChatJudge(inner, _SlowLookupCache(tmp_path / "c.sqlite"))
    msgs = [{"role": "user", "content": "shared"}]

    async def task(start: float):
        await asyncio.sleep(start)
        with task_scope("native", "faithfulness", "s") as meter:
            return await judge.ask(msgs, Rating), meter.cost()

    (a, ca), (b, cb) = await asyncio.gather(task(0.0), task(0.32))
    assert inner.calls == 1
    assert a == b
    assert ca.cache_hits + cb.cache_hits == 1  # the waiter's answer is a shared one


async def test_single_flight_waiter_survives_the_owner_being_cancelled(tmp_path):
    """Regression: a waiter used to inherit the owner's CancelledError (and end as a
    cancelled task) although nobody cancelled it; now it asks the judge itself."""
    inner = _CountingJudge(0.4)
    judge = CachedChatJudge(inner, JudgeCache(tmp_path / "c.sqlite"))

    async def task(content: str = "shared"):
        with task_scope("native", "faithfulness", "s"):
            return await judge.ask([{"role": "user", "content": content}], Rating)

    owner = asyncio.ensure_future(task())
    await asyncio.sleep(0.1)
    waiter = asyncio.ensure_future(task())
    await asyncio.sleep(0.1)
    owner.cancel()
    out = await waiter
    assert isinstance(out, Rating) and not waiter.cancelled() and owner.cancelled()
    assert inner.calls == 2
    # a waiter that is itself cancelled still ends cancelled
    owner = asyncio.ensure_future(task("other"))
    await asyncio.sleep(0.05)
    waiter = asyncio.ensure_future(task("other"))
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert isinstance(await owner, Rating)


def test_embedding_keys_follow_what_decides_the_vectors(tmp_path):
    """The cache key and the run fingerprint use one rule (Embedder.describe): another
    endpoint or another `dimensions` is another vector, the same model name or not."""
    from unified.judge import CachedEmbedder, EmbeddingConfig, OpenAIEmbedder

    cache = JudgeCache(tmp_path / "c.sqlite")

    def key(**kw):
        cfg = EmbeddingConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="e", **kw)
        return CachedEmbedder(OpenAIEmbedder(cfg), cache)._key("text")

    assert key() == key()
    assert key(dimensions=256) != key(dimensions=1536) != key()
    other = EmbeddingConfig(kind="openai", base_url="http://127.0.0.1:10/v1", model="e")
    assert CachedEmbedder(OpenAIEmbedder(other), cache)._key("text") != key()


async def test_an_answer_is_stored_before_the_next_request_is_sent(tmp_path):
    """The kill -9 bound rests on this: with one call in flight, when request k is sent the
    cache already holds the k-1 answers before it — no turn of the event loop between an
    answer and its store, the circuit breaker's guard included (it once ran each call in a
    task of its own, and the next request went out before the answer was stored)."""
    path = tmp_path / "c.sqlite"
    stored_at_send: list[int] = []
    with JudgeServer() as srv:
        cache = JudgeCache(path)
        inner = OpenAIChatJudge(JudgeConfig(base_url=srv.base_url, model="m", concurrency=1, backoff_base=0.01))
        send = inner._http.send

        async def counting_send(request, *args):  # args: the request's own timeout
            async def counted():
                stored_at_send.append(cache.stats()["chat"])  # inside the slot: the request goes out now
                return await request()

            return await send(counted, *args)

        inner._http.send = counting_send
        judge = CachedChatJudge(inner, cache)
        with task_scope("native", "faithfulness", "s"):
            await asyncio.gather(*(judge.ask([{"role": "user", "content": f"q{i}"}], Rating) for i in range(6)))
    assert stored_at_send == [0, 1, 2, 3, 4, 5]
