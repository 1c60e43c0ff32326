"""The circuit breaker per judge endpoint, against real sockets: a port where nothing
listens, a server that accepts connections and never answers (SilentServer), and the
loopback judge with forced hangs, 401s and invalid JSON.

Counts, not clocks, carry the evidence: requests that reached the server, retries in the
call records, the breaker's state. Where a duration is checked it is against a bound
that the code without a breaker cannot meet by construction (e.g. "before the call's
own timeout"), never a performance figure."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import pytest
from judge_server import JudgeServer, SilentServer
from pydantic import BaseModel

from unified.judge import (
    EmbeddingConfig,
    JudgeConfig,
    JudgeConnectionError,
    JudgeHTTPError,
    JudgeOutputError,
    JudgeUnavailableError,
    OpenAIChatJudge,
    OpenAIEmbedder,
    add_listener,
    budget,
    remove_listener,
)
from unified.judge.breaker import CircuitBreaker

DEAD = "http://127.0.0.1:9/v1"  # port 9 (discard): nothing listens on loopback


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]


def msgs(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"claim {i}"}]


async def ask_all(judge: OpenAIChatJudge, n: int) -> list:
    return await asyncio.gather(*(judge.ask(msgs(i), Verdict) for i in range(n)), return_exceptions=True)


# ---------------------------------------------------------------- the state machine


def test_breaker_opens_after_n_failures_in_a_row_and_a_success_resets_the_count():
    now = [0.0]
    b = CircuitBreaker("judge at http://h/v1 (model m)", failures_to_open=3, cooldown=10, clock=lambda: now[0])
    for _ in range(2):
        b.failed("refused the connection")
    b.succeeded()  # an answer in between: not "in a row"
    for _ in range(2):
        b.failed("refused the connection")
    assert b.state == "closed" and b.admit() is False
    b.failed("refused the connection")
    assert b.state == "open"
    with pytest.raises(
        JudgeUnavailableError,
        match=r"^judge at http://h/v1 \(model m\) refused "
        r"the connection .*--retry-errors$",
    ):
        b.admit()
    now[0] = 10.0  # cooldown over: exactly one probe goes out
    assert b.admit() is True and b.state == "half-open"
    with pytest.raises(JudgeUnavailableError):
        b.admit()
    b.failed("did not answer within 60s")  # the probe failed: open for another cooldown
    assert b.state == "open"
    with pytest.raises(JudgeUnavailableError, match="did not answer within 60s"):
        b.admit()
    now[0] = 20.0
    assert b.admit() is True
    b.abandoned()  # the probe's caller was cancelled: the next caller may probe at once
    assert b.admit() is True
    b.succeeded()
    assert b.state == "closed" and b.failures == 0 and b.admit() is False


def test_slow_requests_of_a_judge_that_answers_others_never_open_it():
    """With many calls in flight, a living judge's few slow requests time out one after
    another; while it answered something within the last timeout, they do not count."""
    now = [0.0]
    b = CircuitBreaker("judge at http://h/v1 (model m)", failures_to_open=3, clock=lambda: now[0], answer_window=60.0)
    b.succeeded()
    now[0] = 59.0
    for _ in range(10):
        b.failed("did not answer within 60s", timed_out=True)
    assert b.state == "closed" and b.failures == 0
    for _ in range(3):  # a refused connection is evidence on its own
        b.failed("refused the connection")
    assert b.state == "open"
    quiet = CircuitBreaker(
        "judge at http://h/v1 (model m)", failures_to_open=3, clock=lambda: now[0], answer_window=60.0
    )
    quiet.succeeded()
    now[0] = 121.0  # nothing answered for a whole window: the timeouts count
    for _ in range(3):
        quiet.failed("did not answer within 60s", timed_out=True)
    assert quiet.state == "open"


# ---------------------------------------------------------------- refused connection


async def test_refused_connection_trips_at_once_and_every_call_says_so():
    records: list = []
    add_listener(records.append)
    try:
        judge = OpenAIChatJudge(JudgeConfig(base_url=DEAD, model="m"))  # default retries: 4
        results = await ask_all(judge, 40)
    finally:
        remove_listener(records.append)
    assert all(isinstance(r, JudgeUnavailableError) for r in results), results[:3]
    assert {str(r) for r in results} == {
        "judge at http://127.0.0.1:9/v1 (model m) refused the connection (5 attempts in a row; "
        "no more requests sent) — resumable with --retry-errors"
    }
    assert judge._http.breaker.state == "open"
    # without the breaker each call would spend its 4 retries (160 in all)
    assert sum(r.retries for r in records) <= 8
    assert len(records) == 40 and all(r.error for r in records)


async def test_embeddings_endpoint_has_its_own_breaker():
    emb = OpenAIEmbedder(EmbeddingConfig(kind="openai", base_url=DEAD, model="e", batch_size=1))
    with pytest.raises(
        JudgeUnavailableError,
        match=r"^embeddings at http://127.0.0.1:9/v1 "
        r"\(model e\) refused the connection",
    ):
        await emb.embed([f"text {i}" for i in range(12)])


async def test_a_dead_endpoint_does_not_stop_another(judge_server):
    dead = OpenAIChatJudge(JudgeConfig(base_url=DEAD, model="a", max_retries=0))
    alive = OpenAIChatJudge(JudgeConfig(base_url=judge_server.base_url, model="b"))
    await ask_all(dead, 10)
    assert dead._http.breaker.state == "open"
    assert isinstance(await alive.ask(msgs(0), Verdict), Verdict)
    assert alive._http.breaker.state == "closed"


async def test_without_retries_the_first_failures_are_connection_errors_then_unavailable():
    judge = OpenAIChatJudge(JudgeConfig(base_url=DEAD, model="m", max_retries=0, concurrency=1))
    results: list = []
    for i in range(7):
        try:
            await judge.ask(msgs(i), Verdict)
        except (JudgeConnectionError, JudgeUnavailableError) as exc:
            results.append(exc)
    kinds = [type(r).__name__ for r in results]
    assert kinds == ["JudgeConnectionError"] * 4 + ["JudgeUnavailableError"] * 3
    assert "connection failed (refused the connection)" in str(results[0])


# ---------------------------------------------------------------- a judge that never answers


async def test_hanging_judge_trips_after_one_wave_and_queued_calls_never_wait():
    timeout, concurrency, n = 1.0, 8, 40
    with SilentServer() as srv:
        judge = OpenAIChatJudge(
            JudgeConfig(base_url=srv.base_url, model="m", timeout=timeout, concurrency=concurrency)
        )  # default retries: 4
        start = time.perf_counter()
        results = await ask_all(judge, n)
        elapsed = time.perf_counter() - start
        sent = srv.connections
    assert all(isinstance(r, JudgeUnavailableError) for r in results), results[:3]
    assert "did not answer within 1s" in str(results[0])
    # one wave (plus the few calls that took a slot freed before the 5th timeout), not the
    # n * 5 attempts of retries without a breaker
    assert concurrency <= sent <= 2 * concurrency
    # without the breaker the 40 queued calls alone take n / concurrency = 5 timeouts
    assert elapsed < 4 * timeout
    assert judge._http.slot()._value == concurrency  # every slot given back


async def test_open_circuit_ends_requests_still_on_the_wire():
    """Three requests sent after the first five hang too: when the five time out the
    circuit opens and the three end then, not at their own timeout."""
    timeout = 1.0
    with SilentServer() as srv:
        judge = OpenAIChatJudge(JudgeConfig(base_url=srv.base_url, model="m", timeout=timeout, max_retries=0))

        async def late(i: int) -> float:
            await asyncio.sleep(timeout / 2)
            start = time.perf_counter()
            with pytest.raises(JudgeUnavailableError):
                await judge.ask(msgs(i), Verdict)
            return time.perf_counter() - start

        first = [judge.ask(msgs(i), Verdict) for i in range(5)]
        results = await asyncio.gather(*first, *(late(10 + i) for i in range(3)), return_exceptions=True)
    waited = results[5:]
    assert all(isinstance(r, float) for r in waited), waited
    assert max(waited) < timeout  # ended by the breaker, before their own timeout
    assert judge._http.slot()._value == budget.concurrency(judge.config)  # None: by kind (8 remote)


async def test_half_open_probe_closes_the_circuit_again():
    with JudgeServer(hang_seconds=30) as srv:
        judge = OpenAIChatJudge(
            # 1 s timeout and cooldown, waits of 1.3 s: a loaded CI box took over 0.3 s for a
            # real answer (the probe), and 0.1 s of slack past the cooldown was not enough
            JudgeConfig(base_url=srv.base_url, model="m", timeout=1.0, max_retries=0, breaker_cooldown=1.0)
        )
        srv.force_fault("hang", 5)
        results = await ask_all(judge, 5)
        assert all(isinstance(r, Exception) for r in results)
        assert judge._http.breaker.state == "open" and srv.chat_count == 5
        with pytest.raises(JudgeUnavailableError):  # refused at once: nothing sent
            await judge.ask(msgs(99), Verdict)
        assert srv.chat_count == 5
        await asyncio.sleep(1.3)
        srv.force_fault("hang", 1)  # the probe fails: open again, nothing else sent
        with pytest.raises(JudgeUnavailableError):
            await judge.ask(msgs(100), Verdict)
        with pytest.raises(JudgeUnavailableError):
            await judge.ask(msgs(101), Verdict)
        assert srv.chat_count == 6
        await asyncio.sleep(1.3)
        assert isinstance(await judge.ask(msgs(102), Verdict), Verdict)  # the probe answers
        assert judge._http.breaker.state == "closed"
        assert all(isinstance(r, Verdict) for r in await ask_all(judge, 5))
        assert srv.chat_count == 12


@pytest.mark.parametrize("fault,error", [("401", JudgeHTTPError), ("nonjson", JudgeOutputError)])
async def test_answers_that_are_errors_do_not_trip_it(fault, error):
    with JudgeServer() as srv:
        srv.force_fault(fault, 40)
        judge = OpenAIChatJudge(JudgeConfig(base_url=srv.base_url, model="m", backoff_base=0.01))
        for i in range(12):  # more than 5 in a row
            with pytest.raises(error):
                await judge.ask(msgs(i), Verdict)
        assert judge._http.breaker.state == "closed" and judge._http.breaker.failures == 0


@pytest.mark.slow
async def test_hanging_judge_with_default_settings_ends_within_the_issue_target():
    """Issue 10's target: 20 samples x 2 LLM metrics against a judge that never answers,
    default timeout (60 s), retries (4) and concurrency (8), end in under 3 minutes.
    Here: the 40 judge calls themselves; about one timeout in all."""
    with SilentServer() as srv:
        judge = OpenAIChatJudge(JudgeConfig(base_url=srv.base_url, model="m"))
        start = time.perf_counter()
        results = await ask_all(judge, 40)
        elapsed = time.perf_counter() - start
        sent = srv.connections
    assert all(isinstance(r, JudgeUnavailableError) for r in results)
    assert "did not answer within 60s" in str(results[0])
    assert sent <= 16 and elapsed < 180
