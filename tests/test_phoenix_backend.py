"""The Phoenix backend's plumbing: every call goes through our judge (no OpenAI client, no
key, no other host), a judge failure or an answer outside Phoenix's labels is that task's
one-line error with the secret scrubbed, per-context relevance is billed per call, a
missing field or an unknown parameter is refused before any call, and the dry-run
estimate matches the calls made.

The loopback judge server answers random-but-valid JSON: plumbing, never judgment quality.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("phoenix.evals", reason="the phoenix extra is not installed")

from judge_server import JudgeServer

from unified.adapters import get_backend
from unified.adapters.estimate import estimate_calls
from unified.adapters.phoenix.backend import schema_model
from unified.judge import JudgeConfig, build_judges
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

pytestmark = pytest.mark.phoenix

SAMPLE = Sample(
    user_input="What is the capital of France?",
    response="Paris.",
    retrieved_contexts=["Paris is the capital of France.", "Lyon is a city.", "Rome is in Italy."],
    reference="Paris",
    id="s1",
)
TESTS = Path(__file__).parent


def _judges(srv: JudgeServer, **kw):
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0, **kw), cache=False)


async def _score(srv: JudgeServer, metrics: str, sample: Sample = SAMPLE):
    judges = _judges(srv)
    try:
        return await get_backend("phoenix", judges).score(sample, parse_metrics(metrics))
    finally:
        await judges.aclose()


async def test_labels_map_to_0_or_10_and_relevance_is_the_share_of_relevant_contexts():
    labels = iter(["relevant", "irrelevant", "relevant"])

    def answer(body):
        text = json.dumps(body["messages"])
        if "retrieved_information" in text:
            return {"explanation": "per document", "label": next(labels)}
        if "faithful or unfaithful" in text:
            return {"explanation": "made up", "label": "unfaithful"}
        return {"explanation": "right", "label": "correct"}

    with JudgeServer(answer_fn=answer) as srv:
        f, c, r = await _score(srv, "faithfulness,answer_correctness,context_relevancy")
        assert srv.chat_count == 1 + 1 + 3
    assert (f.raw, f.value, f.reason, f.details["labels"]) == (0.0, 0.0, "made up", ["unfaithful"])
    assert (c.raw, c.value, c.details["labels"]) == (1.0, 10.0, ["correct"])
    assert "no reference" in c.details["note"]
    assert r.raw == pytest.approx(2 / 3) and r.value == pytest.approx(20 / 3)
    assert r.details["labels"] == ["relevant", "irrelevant", "relevant"]
    assert (f.cost.calls, c.cost.calls, r.cost.calls) == (1, 1, 3)


async def test_label_outside_phoenixs_choices_is_refused_not_scored():
    """A judge that answers a label Phoenix does not declare gets one repair try, then the
    task fails with one line; no score is invented from it."""
    with JudgeServer(answer_fn=lambda body: {"explanation": "hmm", "label": "maybe"}) as srv:
        (s,) = await _score(srv, "faithfulness")
        assert srv.chat_count == 2  # the answer, then the judge layer's one repair retry
    assert s.value is None and s.raw is None
    assert s.error.startswith("phoenix FaithfulnessEvaluator: JudgeOutputError")
    assert "\n" not in s.error


async def test_judge_http_error_is_one_scrubbed_line():
    secret = "sk-proj-LEAKME0123456789abcdefABCDEF"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("500", 10)
        (s,) = await _score(srv, "faithfulness")
    assert s.value is None and s.error.startswith("phoenix FaithfulnessEvaluator: ")
    assert secret not in s.error and "\n" not in s.error


async def test_missing_field_and_unknown_parameter_make_no_call():
    backend = get_backend("phoenix")
    assert "temperature" in backend.param_error(parse_metric("faithfulness[temperature=0.5]"))
    with JudgeServer() as srv:
        (s,) = await _score(srv, "context_relevancy", Sample(user_input="q", response="a", id="n"))
        assert srv.chat_count == 0
    assert "retrieved_contexts" in s.error


async def test_dry_run_estimate_equals_calls_made():
    refs = parse_metrics("faithfulness,answer_correctness,context_relevancy")
    rows = estimate_calls("phoenix", [SAMPLE], refs)
    with JudgeServer() as srv:
        scores = await _score(srv, "faithfulness,answer_correctness,context_relevancy")
        assert sum(r["calls"] for r in rows) == srv.chat_count == 5
    assert [r["calls"] for r in rows] == [s.cost.calls for s in scores]


def test_schema_model_keeps_phoenixs_labels_and_required_fields():
    model = schema_model(
        {
            "type": "object",
            "required": ["explanation", "label"],
            "properties": {
                "explanation": {"type": "string", "description": "why"},
                "label": {"type": "string", "enum": ["faithful", "unfaithful"]},
            },
        }
    )
    assert model.model_validate({"explanation": "x", "label": "faithful"}).label == "faithful"
    with pytest.raises(ValueError):
        model.model_validate({"explanation": "x", "label": "factual"})
    with pytest.raises(ValueError):
        model.model_validate({"label": "faithful"})


def test_no_key_no_other_host_no_openai_client(tmp_path):
    """In a fresh process without OPENAI_API_KEY: import the backend and score against the
    loopback server while every socket connect and DNS lookup is recorded. Only
    127.0.0.1 is contacted, and Phoenix's OpenAI client is never built."""
    code = textwrap.dedent(f"""
        import asyncio, json, socket, sys
        sys.path.insert(0, {str(TESTS)!r})
        seen = []
        real_connect, real_gai = socket.socket.connect, socket.getaddrinfo
        def connect(self, addr): seen.append(str(addr[0])); return real_connect(self, addr)
        def gai(host, *a, **k): seen.append(str(host)); return real_gai(host, *a, **k)
        socket.socket.connect, socket.getaddrinfo = connect, gai
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import JudgeConfig, build_judges
        from unified.metrics import parse_metrics
        from unified.sample import Sample
        import phoenix.evals.llm.adapters.openai.factories as f
        f.create_openai_client = lambda *a, **k: sys.exit("phoenix built an OpenAI client")
        async def main():
            with JudgeServer() as srv:
                j = build_judges(JudgeConfig(base_url=srv.base_url, model="m", max_retries=0), cache=False)
                s = await get_backend("phoenix", j).score(
                    Sample(user_input="q?", response="a.", retrieved_contexts=["c"], reference="a", id="x"),
                    parse_metrics("faithfulness,answer_correctness,context_relevancy"))
                await j.aclose()
                print(json.dumps({{"ok": [x.ok for x in s], "hosts": sorted(set(seen))}}))
        asyncio.run(main())
    """)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OPENAI")}
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["ok"] == [True, True, True]
    assert set(out["hosts"]) <= {"127.0.0.1"}, out["hosts"]
    assert list(tmp_path.iterdir()) == []  # no stray files in the working directory
