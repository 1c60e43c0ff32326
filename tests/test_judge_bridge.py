"""The loopback bridge (``unified.judge.bridge``): an OpenAI-compatible endpoint on
127.0.0.1 that answers through our judge layer, for frameworks that only take a URL.

Checked with real parts: the real loopback judge server behind a real judge bundle, real
HTTP requests to the bridge from another thread (as MLflow's ``requests`` calls come).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest
from judge_server import JudgeServer

from unified.judge import JudgeConfig, bridge, build_judges
from unified.judge.base import task_scope

SCHEMA = {
    "title": "JudgeEvaluation",
    "type": "object",
    "required": ["result", "rationale"],
    "properties": {"result": {"type": "string"}, "rationale": {"type": "string"}},
}


def _post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, dict]:
    req = urllib.request.Request(
        url + "/gateway/mlflow/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _body(schema: dict | None = SCHEMA) -> dict:
    body: dict = {"model": "unified-judge", "messages": [{"role": "user", "content": "Is Paris in France?"}]}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    return body


def test_schema_model_covers_flat_objects_and_declines_the_rest():
    model = bridge.schema_model(
        {
            "title": "A",
            "type": "object",
            "required": ["s"],
            "properties": {
                "s": {"type": "string"},
                "n": {"type": "number"},
                "k": {"enum": ["yes", "no"]},
                "xs": {"type": "array", "items": {"type": "string"}},
            },
        }
    )
    assert model is not None and model.__name__ == "A"
    assert model(s="a", k="yes", xs=["b"]).n is None
    with pytest.raises(ValueError):
        model(s="a", k="maybe")
    assert bridge.schema_model({"type": "object", "properties": {"o": {"type": "object"}}}) is None
    assert bridge.schema_model({"type": "array"}) is None


async def test_a_routed_request_is_answered_by_the_judge_and_billed_to_the_task():
    with JudgeServer() as srv:
        judges = build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0))
        b = bridge.acquire()
        try:
            with task_scope("mlflow", "faithfulness", "s1") as meter, b.route(judges) as headers:
                status, answer = await asyncio.to_thread(_post, b.base_url, _body(), headers)
                status_text, answer_text = await asyncio.to_thread(_post, b.base_url, _body(None), headers)
        finally:
            bridge.release()
            await judges.aclose()
        sent = srv.requests[0]
    assert status == 200 and status_text == 200
    content = json.loads(answer["choices"][0]["message"]["content"])
    assert set(content) == {"result", "rationale"}
    assert isinstance(answer_text["choices"][0]["message"]["content"], str)
    assert sent["messages"][-1]["content"].endswith("Is Paris in France?") or any(
        "Is Paris in France?" in str(m["content"]) for m in sent["messages"]
    )
    assert meter.cost().calls == 2  # both calls land on the task that opened the route
    assert {r.metric for r in meter.records} == {"faithfulness"}


async def test_requests_without_a_live_route_are_refused_and_never_reach_the_judge():
    with JudgeServer() as srv:
        judges = build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0))
        b = bridge.acquire()
        try:
            with b.route(judges) as headers:
                pass
            closed = await asyncio.to_thread(_post, b.base_url, _body(), headers)
            guessed = await asyncio.to_thread(_post, b.base_url, _body(), {bridge.ROUTE_HEADER: "guess"})
        finally:
            bridge.release()
            await judges.aclose()
        assert srv.request_count == 0
    assert closed[0] == 403 and guessed[0] == 403


async def test_a_judge_failure_is_a_non_retryable_status_with_a_scrubbed_line():
    secret = "sk-live-THISMUSTNOTLEAK0123456789abcdef"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("401", n=5)
        judges = build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0))
        b = bridge.acquire()
        try:
            with b.route(judges) as headers:
                status, body = await asyncio.to_thread(_post, b.base_url, _body(), headers)
        finally:
            bridge.release()
            await judges.aclose()
    assert status == 424  # not 5xx/429: frameworks would retry what our layer already retried
    message = body["error"]["message"]
    assert "401" in message and secret not in message and "\n" not in message


def test_the_last_release_stops_the_server():
    a = bridge.acquire()
    b = bridge.acquire()
    assert a is b
    url = a.base_url
    bridge.release()
    with pytest.raises(urllib.error.HTTPError) as still_up:  # one user left: it answers (403, no route)
        urllib.request.urlopen(
            urllib.request.Request(url + "/v1/chat/completions", data=b"{}", method="POST"), timeout=5
        )
    assert still_up.value.code == 403
    bridge.release()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(
            urllib.request.Request(url + "/v1/chat/completions", data=b"{}", method="POST"), timeout=5
        )


def test_schema_model_follows_nested_objects_refs_and_integer_verdicts():
    """The answer models frameworks send (pydantic's ``model_json_schema``): a list of
    objects by ``$ref`` into ``$defs``, an optional field, an integer verdict narrowed to
    its allowed values (``enum``)."""
    model = bridge.schema_model(
        {
            "title": "NLIStatementOutput",
            "type": "object",
            "$defs": {
                "Verdict": {
                    "title": "Verdict",
                    "type": "object",
                    "required": ["statement", "verdict"],
                    "properties": {
                        "statement": {"type": "string"},
                        "verdict": {"type": "integer", "enum": [0, 1]},
                        "reason": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    },
                }
            },
            "required": ["statements"],
            "properties": {"statements": {"type": "array", "items": {"$ref": "#/$defs/Verdict"}}},
        }
    )
    assert model is not None
    ok = model.model_validate({"statements": [{"statement": "a", "verdict": 1}]})
    assert ok.statements[0].verdict == 1 and ok.statements[0].reason is None
    with pytest.raises(ValueError):  # a verdict the framework's prompt never allows
        model.model_validate({"statements": [{"statement": "a", "verdict": -3}]})
    assert bridge.schema_model({"type": "object", "properties": {"r": {"$ref": "#/$defs/Missing"}}}) is None


async def test_embeddings_are_answered_by_the_embedder_and_billed_to_the_task():
    with JudgeServer() as srv:
        judges = build_judges(
            JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), embedding=srv.base_url, cache=False
        )
        b = bridge.acquire()
        try:
            with task_scope("ragas@0.3.9", "answer_relevancy", "s1") as meter, b.route(judges) as headers:
                req = urllib.request.Request(
                    b.base_url + "/v1/embeddings",
                    data=json.dumps({"model": "e", "input": ["one", "two"]}).encode(),
                    headers={"Content-Type": "application/json", **headers},
                )
                answer = await asyncio.to_thread(lambda: json.loads(urllib.request.urlopen(req, timeout=30).read()))
        finally:
            bridge.release()
            await judges.aclose()
    vectors = [d["embedding"] for d in answer["data"]]
    assert [d["index"] for d in answer["data"]] == [0, 1] and len(vectors) == 2 and vectors[0] != vectors[1]
    assert meter.cost().embedding_calls == 1  # one batched request, as the framework sent it
