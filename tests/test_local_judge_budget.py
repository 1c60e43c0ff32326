"""Defaults that fit local judges (``unified.judge.budget``) and the in-process queue of
``LlamaCppJudge``: no network timeout on a local model, one call at a time, the wait for
the model never a timeout, per-prompt ``max_tokens`` caps, a timed-out call failing at
once while the model finishes. The model here is a stand-in for ``llama_cpp.Llama`` that
"generates" one token per tick; the real model runs in ``test_local_judge_smoke.py``."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Literal

import pytest
from pydantic import BaseModel

from unified.judge import JudgeConfig, JudgeTimeoutError, budget, task_scope
from unified.judge.llama import LlamaCppJudge
from unified.judge.resolve import resolve_judges
from unified.judge.structured import schema_json


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]


class Claims(BaseModel):
    claims: list[str]


class TickingLlama:
    """``create_chat_completion`` that takes ``tokens`` ticks of ``tick`` seconds and
    records how many calls overlapped."""

    def __init__(self, tokens: int = 5, tick: float = 0.05):
        self.tokens, self.tick = tokens, tick
        self.active = 0
        self.max_active = 0
        self.kwargs: list[dict] = []
        self.finished = 0
        self._lock = threading.Lock()

    def create_chat_completion(self, messages, **kwargs):
        self.kwargs.append(kwargs)
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            for _ in range(self.tokens):
                time.sleep(self.tick)
            self.finished += 1
            return {
                "choices": [{"message": {"content": '{"verdict": "yes"}'}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": self.tokens},
            }
        finally:
            with self._lock:
                self.active -= 1


MSGS = [{"role": "user", "content": "Is it? Answer in JSON."}]


def test_kinds_and_their_defaults():
    gguf = JudgeConfig(model="/models/q.gguf")
    ollama = JudgeConfig(model="qwen2.5", base_url="http://127.0.0.1:11434/v1")
    llamacpp = JudgeConfig(model="m", base_url="http://localhost:9000/v1/llama.cpp")
    remote = JudgeConfig(model="gpt-4o-mini")
    loopback_other = JudgeConfig(model="m", base_url="http://127.0.0.1:5123/v1")  # e.g. a test server
    assert [budget.judge_kind(c) for c in (gguf, ollama, llamacpp, remote, loopback_other)] == [
        "gguf",
        "local",
        "local",
        "remote",
        "remote",
    ]
    assert budget.call_timeout(gguf) is None and budget.concurrency(gguf) == 1
    assert budget.call_timeout(ollama, 100) == budget.PROMPT_SECONDS + 100 * budget.SECONDS_PER_TOKEN
    assert budget.concurrency(ollama) == 1
    assert budget.call_timeout(remote) == 60.0 and budget.concurrency(remote) == 8
    # what the user set always wins
    set_ = JudgeConfig(model="/models/q.gguf", timeout=5, concurrency=3)
    assert budget.call_timeout(set_) == 5 and budget.concurrency(set_) == 3


def test_a_gguf_judge_from_the_cli_path_has_no_timeout_and_one_slot(tmp_path):
    model = tmp_path / "q.gguf"
    model.write_bytes(b"GGUF")
    judges, desc = resolve_judges(str(model), cache=False)
    cfg = judges.chat.config
    assert cfg.timeout is None and cfg.concurrency is None  # left to the kind
    assert budget.call_timeout(cfg) is None and budget.concurrency(cfg) == 1


def test_answer_caps_follow_the_schema_and_the_prompt():
    cfg = JudgeConfig(model="/models/q.gguf", max_tokens=2048)
    keyed = budget.answer_cap(cfg, MSGS, schema_json(Verdict))
    assert keyed is not None and 20 <= keyed <= 40  # one enum key: a closed answer
    short = budget.answer_cap(cfg, [{"role": "user", "content": "x" * 400}], schema_json(Claims))
    long = budget.answer_cap(cfg, [{"role": "user", "content": "x" * 6000}], schema_json(Claims))
    # an extraction may restate all it read: the whole prompt, plus room for reasons
    assert short == budget.FREE_TEXT_BASE + 100 and long == budget.FREE_TEXT_BASE + 1500
    assert budget.answer_cap(cfg, [{"role": "user", "content": "x" * 80000}], schema_json(Claims)) == 2048
    assert budget.answer_cap(JudgeConfig(model="gpt-4o-mini"), MSGS, schema_json(Claims)) is None


async def test_calls_queue_and_the_wait_is_never_a_timeout():
    """Six concurrent calls of 0.25 s each with a 1 s timeout: the last waits ~1.25 s for
    the model, yet none times out, and they never overlap. (Each call is a quarter of the
    timeout, so a loaded box's slower ticks do not reach it.)"""
    fake = TickingLlama(tokens=5, tick=0.05)
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf", timeout=1.0), llama=fake)
    with task_scope("native", "faithfulness", "s1") as meter:
        out = await asyncio.gather(*(judge.ask(MSGS, Verdict) for _ in range(6)))
    assert all(o.verdict == "yes" for o in out)
    assert fake.max_active == 1 and fake.finished == 6
    assert all(r.error is None for r in meter.records)
    assert max(r.latency for r in meter.records) < 1.0  # latency is generation, not queueing


async def test_a_call_past_its_timeout_fails_at_once_and_the_next_waits_for_the_model():
    """llama.cpp cannot be interrupted: the late call fails at its timeout, the next call
    waits until the model is free (no overlap) and its own clock starts only then."""
    fake = TickingLlama(tokens=40, tick=0.02)  # 0.8 s per call
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf", timeout=0.4, max_retries=0), llama=fake)
    start = time.monotonic()
    with pytest.raises(JudgeTimeoutError, match=r"0.4s of generation.*does not count"):
        await judge.ask(MSGS, Verdict)
    assert time.monotonic() - start < 0.75  # failed at its timeout, not at the end of generation
    fake.tokens = 5  # 0.1 s: fits its own timeout once the model is free
    assert (await judge.ask(MSGS, Verdict)).verdict == "yes"
    assert fake.max_active == 1 and fake.finished == 2


async def test_each_call_gets_its_cap_and_the_schema_grammar():
    fake = TickingLlama(tokens=1, tick=0.0)
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf"), llama=fake)
    await judge.ask(MSGS, Verdict)
    await judge.ask(MSGS, Verdict, max_tokens=7)
    first, second = fake.kwargs
    assert first["max_tokens"] == budget.answer_cap(judge.config, MSGS, schema_json(Verdict))
    assert first["response_format"] == {"type": "json_object", "schema": schema_json(Verdict)}
    assert second["max_tokens"] == 7  # the caller's own cap wins
