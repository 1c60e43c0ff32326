"""The loopback server itself: schema-valid synthesis, prompt-mode schema detection,
embeddings, faults, counters, and latency that does not serialise requests."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from typing import Literal, Optional

import numpy as np
import openai
import pytest
from judge_server import JudgeServer, find_schema_in_text, request_schema, synthesize
from pydantic import BaseModel, Field


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]
    reason: Optional[str] = None


class Nested(BaseModel):
    verdicts: list[Verdict] = Field(min_length=2, max_length=4)
    score: int = Field(ge=3, le=5)
    ratio: float = Field(gt=0, lt=1)
    flag: bool
    kind: Literal["a"]
    tags: list[str]
    maybe: Optional[Verdict] = None
    pair: tuple[int, str]


@pytest.mark.parametrize("model", [Verdict, Nested])
def test_synthesized_values_validate_against_pydantic_schemas(model):
    schema = model.model_json_schema()
    for seed in range(25):
        model.model_validate(synthesize(schema, random.Random(seed)))


def test_unbounded_integers_are_small():
    values = {synthesize({"type": "integer"}, random.Random(s)) for s in range(50)}
    assert values <= {0, 1, 2} and len(values) > 1


def test_schema_found_in_prompt_text_and_response_format():
    schema = Verdict.model_json_schema()
    text = f'Judge this. Example: {{"a": 1}}. Output JSON for schema:\n{json.dumps(schema)}\nGo.'
    assert find_schema_in_text(text) == schema
    assert find_schema_in_text("no schema here {not json}") is None
    body = {"messages": [], "response_format": {"type": "json_object", "schema": schema}}
    assert request_schema(body) == (schema, "llama_cpp")
    body = {"messages": [{"role": "system", "content": text}]}
    assert request_schema(body) == (schema, "prompt")


async def test_chat_is_deterministic_per_prompt_and_counts(judge_server):
    client = openai.AsyncOpenAI(base_url=judge_server.base_url, api_key="x", max_retries=0)
    rf = {"type": "json_schema", "json_schema": {"name": "N", "schema": Nested.model_json_schema()}}

    async def ask(text: str) -> str:
        r = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": text}], response_format=rf
        )
        assert r.choices[0].finish_reason == "stop" and r.usage.prompt_tokens > 0
        return r.choices[0].message.content

    a1, a2, b = await ask("one"), await ask("one"), await ask("two")
    assert a1 == a2
    Nested.model_validate_json(a1), Nested.model_validate_json(b)
    plain = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert plain.choices[0].message.content.endswith(".")
    assert (judge_server.chat_count, judge_server.request_count) == (4, 4)
    assert judge_server.requests[0]["messages"][0]["content"] == "one"
    judge_server.reset_counts()
    assert judge_server.request_count == 0 and judge_server.requests == []
    await client.close()


async def test_embeddings_float_and_base64_are_the_same_unit_vectors(judge_server):
    client = openai.AsyncOpenAI(base_url=judge_server.base_url, api_key="x", max_retries=0)
    f = await client.embeddings.create(model="e", input=["alpha", "beta"], encoding_format="float")
    b = await client.embeddings.create(model="e", input=["alpha"], encoding_format="base64")
    v = np.array(f.data[0].embedding)
    decoded = np.frombuffer(base64.b64decode(b.data[0].embedding), dtype="<f4")
    assert v.shape == (384,) and abs(np.linalg.norm(v) - 1) < 1e-5
    assert np.allclose(v, decoded, atol=1e-6)
    assert not np.allclose(v, f.data[1].embedding)
    assert judge_server.embedding_count == 2
    await client.close()


async def test_forced_faults_have_the_documented_shape():
    with JudgeServer(hang_seconds=5) as srv:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=0.3)
        msgs = [{"role": "user", "content": "q"}]
        srv.force_fault("429")
        with pytest.raises(openai.RateLimitError) as e:
            await client.chat.completions.create(model="m", messages=msgs)
        assert e.value.response.headers["retry-after"] == "0.05"
        srv.force_fault("500")
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model="m", messages=msgs)
        srv.force_fault("hang")
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=msgs)
        srv.force_fault("length")
        r = await client.chat.completions.create(model="m", messages=msgs)
        assert r.choices[0].finish_reason == "length"
        srv.force_fault("nonjson")
        rf = {"type": "json_object", "schema": Verdict.model_json_schema()}
        r = await client.chat.completions.create(model="m", messages=msgs, response_format=rf)
        with pytest.raises(ValueError):
            json.loads(r.choices[0].message.content)
        assert srv.fault_count == 5 and srv.faults_by_kind == {
            k: 1 for k in ("429", "500", "hang", "length", "nonjson")
        }
        await client.close()
    with pytest.raises(ValueError, match="unknown fault"):
        JudgeServer(faults=("teapot",))


async def test_latency_overlaps_concurrent_requests():
    latency, n = 0.2, 16
    with JudgeServer(latency=latency) as srv:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "warm"}])
        start = time.perf_counter()
        await asyncio.gather(
            *(
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
                for i in range(n)
            )
        )
        elapsed = time.perf_counter() - start
        await client.close()
    # serialised would take n * latency = 3.2 s
    assert latency <= elapsed < latency * n / 3


def test_seeded_fault_rate_is_reproducible():
    def draws(seed: int) -> list:
        srv = JudgeServer(fault_rate=0.3, seed=seed)
        return [srv._admit({}, "chat") for _ in range(40)]

    first = draws(7)
    assert first == draws(7) and first != draws(8)
    assert 3 <= sum(f is not None for f in first) <= 25
