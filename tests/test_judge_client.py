"""OpenAIChatJudge and OpenAIEmbedder against the real loopback server: structured-output
modes, repair retry, length errors, retries, Retry-After, timeouts, accounting."""

from __future__ import annotations

import json
import time
from typing import Literal

import pytest
from judge_server import JudgeServer
from pydantic import BaseModel

from unified.judge import (
    EmbeddingConfig,
    JudgeConfig,
    JudgeHTTPError,
    JudgeLengthError,
    JudgeOutputError,
    JudgeTimeoutError,
    OpenAIChatJudge,
    OpenAIEmbedder,
    task_scope,
)
from unified.judge.openai_client import StructuredOutputWarning

MSGS = [{"role": "user", "content": "Is the sky blue?"}]


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]
    reasons: list[str]


def judge(srv: JudgeServer, **kw) -> OpenAIChatJudge:
    kw.setdefault("backoff_base", 0.01)
    return OpenAIChatJudge(JudgeConfig(base_url=srv.base_url, model="loop-model", **kw))


@pytest.mark.parametrize(
    "mode,expected_rf", [("json_schema", "json_schema"), ("llama_cpp", "json_object"), ("prompt", None)]
)
async def test_structured_output_modes_send_their_form(judge_server, mode, expected_rf):
    j = judge(judge_server, structured_output=mode)
    out = await j.ask(MSGS, Verdict)
    assert isinstance(out, Verdict)
    body = judge_server.requests[-1]
    rf = body.get("response_format")
    if expected_rf is None:
        assert rf is None
        system = body["messages"][0]
        assert system["role"] == "system" and '"verdict"' in system["content"]
        assert body["messages"][1:] == MSGS
    elif expected_rf == "json_object":
        assert rf == {"type": "json_object", "schema": Verdict.model_json_schema()}
    else:
        assert rf["type"] == "json_schema"
        assert rf["json_schema"]["schema"] == Verdict.model_json_schema()
    assert body["temperature"] == 0.0 and body["model"] == "loop-model"
    await j.aclose()


async def test_auto_mode_switches_to_llama_cpp_once_when_json_schema_is_rejected():
    with JudgeServer(reject_json_schema=True) as srv:
        j = judge(srv, structured_output="auto", max_retries=0)
        assert j.mode == "json_schema"
        # said, and counted: the probe is a request the server saw (a passing 500 switched
        # forms for the rest of a run without a word, and the summary counted one call fewer)
        with pytest.warns(StructuredOutputWarning, match="answered HTTP 500 to the json_schema response format"):
            with task_scope("native", "faithfulness", "s1") as meter:
                await j.ask(MSGS, Verdict)
        assert meter.records[-1].retries == 1
        await j.ask([{"role": "user", "content": "again"}], Verdict)
        kinds = [(b.get("response_format") or {}).get("type") for b in srv.requests]
        assert kinds == ["json_schema", "json_object", "json_object"]
        assert j.mode == "llama_cpp"
    assert judge_for_url("http://127.0.0.1:8080/llama.cpp/v1").mode == "llama_cpp"
    assert judge_for_url("https://api.openai.com/v1").mode == "json_schema"


def judge_for_url(url: str) -> OpenAIChatJudge:
    return OpenAIChatJudge(JudgeConfig(base_url=url, model="m"))


async def test_invalid_json_gets_one_repair_retry_showing_the_error():
    answers = iter(['{"verdict": "maybe", "reasons": []}', None])
    with JudgeServer(answer_fn=lambda body: next(answers)) as srv:
        j = judge(srv)
        with task_scope("native", "faithfulness", "s1") as meter:
            out = await j.ask(MSGS, Verdict)
        assert isinstance(out, Verdict)
        assert srv.chat_count == 2 and meter.cost().calls == 2
        repair = srv.requests[1]["messages"]
        assert repair[-2] == {"role": "assistant", "content": '{"verdict": "maybe", "reasons": []}'}
        assert "verdict" in repair[-1]["content"] and "not valid" in repair[-1]["content"]


async def test_second_invalid_answer_is_judge_output_error():
    with JudgeServer(answer_fn=lambda body: "I think yes.") as srv:
        j = judge(srv)
        with pytest.raises(JudgeOutputError, match="Verdict.*after one repair retry"):
            await j.ask(MSGS, Verdict)
        assert srv.chat_count == 2


async def test_fenced_json_is_accepted():
    with JudgeServer(answer_fn=lambda b: '```json\n{"verdict": "yes", "reasons": ["x"]}\n```') as srv:
        assert (await judge(srv).ask(MSGS, Verdict)).verdict == "yes"
        assert srv.chat_count == 1


async def test_json_followed_by_prose_is_accepted_without_a_repair():
    """Regression: an answer that starts with the object and ends with prose ("... Hope
    this helps!") was not cut to the object (only prose *before* it was), so it cost a
    repair request; in prompt mode small models answer like that often."""
    text = '{"verdict": "no", "reasons": []}\nHope this helps!'
    with JudgeServer(answer_fn=lambda b: text) as srv:
        assert (await judge(srv, structured_output="prompt").ask(MSGS, Verdict)).verdict == "no"
        assert srv.chat_count == 1


async def test_length_is_an_error_that_says_raise_max_tokens(judge_server):
    judge_server.force_fault("length")
    with task_scope("ragas", "faithfulness", "s1") as meter:
        with pytest.raises(JudgeLengthError, match="raise max_tokens"):
            await judge(judge_server, max_tokens=64).ask(MSGS, Verdict)
    assert judge_server.chat_count == 1  # no retry: temperature 0 would cut at the same place
    assert meter.records[0].error == "finish_reason=length"


async def test_retry_after_is_honoured_instead_of_backoff(judge_server):
    judge_server.force_fault("429", 2)
    j = judge(judge_server, backoff_base=30.0)  # own backoff would take >= 15 s
    start = time.perf_counter()
    with task_scope("native", "faithfulness", "s1") as meter:
        await j.ask(MSGS, Verdict)
    elapsed = time.perf_counter() - start
    assert 0.1 <= elapsed < 5.0  # two Retry-After: 0.05 waits
    assert judge_server.chat_count == 3 and meter.records[-1].retries == 2


async def test_5xx_retried_then_explicit_error(judge_server):
    judge_server.force_fault("500", 10)
    with pytest.raises(JudgeHTTPError, match=r"HTTP 500.*gave up after 2 retries") as e:
        await judge(judge_server, max_retries=2, structured_output="json_schema").ask(MSGS, Verdict)
    assert e.value.status == 500 and judge_server.chat_count == 3


async def test_auto_probe_costs_one_request_and_reverts_when_llama_form_fails_too(judge_server):
    judge_server.force_fault("500", 10)
    j = judge(judge_server, max_retries=1)
    with pytest.raises(JudgeHTTPError, match="HTTP 500"):
        await j.ask(MSGS, Verdict)
    kinds = [b["response_format"]["type"] for b in judge_server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert j.mode == "json_schema"  # the 500s were not about the format


async def test_hang_becomes_timeout_error_naming_the_limit():
    with JudgeServer(hang_seconds=10) as srv:
        srv.force_fault("hang", 5)
        # 1 s, not 0.3: a fresh client's first request on a loaded box can take 0.3 s to leave
        j = judge(srv, timeout=1.0, max_retries=1)
        with pytest.raises(JudgeTimeoutError, match=r"timed out after 1s"):
            await j.ask(MSGS, Verdict)
        assert srv.chat_count == 2


async def test_rejected_key_fails_at_once_naming_the_variable_not_the_key(judge_server, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", "sk-test-MARKER-7f3a")
    judge_server.force_fault("401", 3)
    with pytest.raises(JudgeHTTPError, match=r"HTTP 401.*\$LOOP_KEY") as e:
        await judge(judge_server, api_key_env="LOOP_KEY").ask(MSGS, Verdict)
    assert e.value.status == 401 and judge_server.chat_count == 1
    assert "MARKER" not in str(e.value)


async def test_unreachable_server_is_a_connection_error():
    j = OpenAIChatJudge(
        JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=1, backoff_base=0.01, timeout=2)
    )
    from unified.judge import JudgeConnectionError

    with pytest.raises(JudgeConnectionError, match="connection failed"):
        await j.ask(MSGS, Verdict)


async def test_accounting_uses_server_usage(judge_server):
    j = judge(judge_server)
    with task_scope("deepeval", "answer_relevancy", "row-3") as meter:
        await j.ask(MSGS, Verdict)
        await j.ask_text(MSGS)
    rec = meter.records[0]
    assert (rec.backend, rec.metric, rec.sample_id, rec.cached) == ("deepeval", "answer_relevancy", "row-3", False)
    assert rec.input_tokens == len(json.dumps(MSGS, sort_keys=True)) // 4
    assert rec.output_tokens > 0 and not rec.tokens_estimated and rec.latency > 0
    assert meter.cost().calls == 2


async def test_requests_per_minute_spaces_requests(judge_server):
    j = judge(judge_server, requests_per_minute=600)  # one per 0.1 s
    start = time.perf_counter()
    import asyncio

    await asyncio.gather(*(j.ask([{"role": "user", "content": str(i)}], Verdict) for i in range(4)))
    assert time.perf_counter() - start >= 0.3


async def test_openai_embedder_batches_and_decodes(judge_server):
    e = OpenAIEmbedder(EmbeddingConfig(kind="openai", base_url=judge_server.base_url, model="emb", batch_size=2))
    with task_scope("native", "answer_relevancy", "s") as meter:
        vecs = await e.embed(["a", "b", "c", "a"])
    assert len(vecs) == 4 and len(vecs[0]) == 384 and vecs[0] == vecs[3] != vecs[1]
    assert judge_server.embedding_count == 2 and meter.cost().embedding_calls == 2
    assert all(b["encoding_format"] == "base64" for b in judge_server.requests)
    await e.aclose()


async def test_embedder_retries_then_succeeds(judge_server):
    judge_server.force_fault("500", 1)
    e = OpenAIEmbedder(EmbeddingConfig(kind="openai", base_url=judge_server.base_url, model="emb", backoff_base=0.01))
    assert len(await e.embed(["x"])) == 1
    assert judge_server.embedding_count == 2
