"""The Patronus backend against a loopback Patronus API (plumbing only): the SDK called
as documented gives the same verdict and sends the same request; the key is refused
up front when missing and, when given, goes to the API URL and nowhere else — not into a
Score, an error, a log, run.json or a report; the evaluator's failure shapes are task
errors; nothing is printed and no other host is reached.

``PatronusServer`` (tests/patronus_server.py) is a loopback Patronus API; it judges nothing.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("patronus", reason="the patronus extra is not installed")

from aiohttp import web
from patronus.api.api_client import PatronusAPIClient
from patronus.evals import AsyncRemoteEvaluator
from patronus_server import IDS, PatronusServer, success

from unified.adapters import describe_metric, estimate_calls, get_backend
from unified.adapters.patronus import PATRONUS_EVALUATORS
from unified.api import evaluate
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

pytestmark = pytest.mark.patronus

KEY = "pk-loopback-THISMUSTNOTLEAK-0123456789"
S = Sample(
    user_input="Which river runs through Paris?",
    response="The Seine runs through Paris.",
    retrieved_contexts=["Paris is the capital of France.", "The Seine flows through Paris."],
    reference="The Seine.",
    id="pt-1",
)
ALL = ",".join(sorted(PATRONUS_EVALUATORS))


async def _score(srv: PatronusServer, metrics: str = ALL, sample: Sample = S, **opts: Any):
    backend = get_backend("patronus", None, api_key=KEY, api_url=srv.url, **opts)
    try:
        return await backend.score(sample, parse_metrics(metrics))
    finally:
        await backend.aclose()


@pytest.mark.parametrize("metric", sorted(PATRONUS_EVALUATORS))
async def test_backend_equals_the_sdk_called_as_documented(metric, capsys):
    row = PATRONUS_EVALUATORS[metric]
    with PatronusServer() as srv:
        [score] = await _score(srv, metric)
        backend_post = srv.posts()[-1]
        # the SDK's documented use: an evaluator by id, loaded, then evaluate(...)
        api = PatronusAPIClient(
            client_http_async=httpx.AsyncClient(), client_http=httpx.Client(), base_url=srv.url, api_key=KEY
        )
        evaluator = AsyncRemoteEvaluator(row.cls, api_=api)
        await evaluator.load()
        fields = {"task_input": S.user_input, "task_output": S.response, "task_context": S.retrieved_contexts}
        fields["gold_answer"] = S.reference
        direct = await evaluator.evaluate(**{k: v for k, v in fields.items() if k in row.reads.values()})
        await api.http.aclose()
        direct_post = srv.posts()[-1]
    assert score.error is None, score.error
    assert score.raw == (1.0 if direct.pass_ else 0.0) and score.value == 10 * score.raw
    assert score.reason == direct.explanation
    assert score.details["patronus_score_raw"] == direct.score
    assert {k: v for k, v in backend_post.items() if k not in IDS} == {
        k: v for k, v in direct_post.items() if k not in IDS
    }
    assert backend_post["evaluators"][0]["evaluator"] == f"{row.cls}-2024-05"
    assert score.cost.calls == 0 and score.cost.embedding_calls == 0
    # the SDK prints every request URL (patronus 0.1.x); the backend prints nothing
    printed = capsys.readouterr().out
    assert printed.count(srv.url) == 2  # the direct call's GET and POST, not the backend's


async def test_one_load_per_evaluator_and_the_key_goes_only_to_the_api_url():
    with PatronusServer() as srv:
        scores = await _score(srv)
        scores += await _score(srv, sample=S.model_copy(update={"id": "pt-2", "response": "It is the Loire."}))
    assert all(s.error is None for s in scores), [s.error for s in scores]
    gets = [r for r in srv.requests if r[0] == "GET"]
    assert len(gets) == 2 * len(PATRONUS_EVALUATORS)  # one backend per _score: one load per evaluator each
    assert srv.keys == {KEY}
    for s in scores:
        assert KEY not in s.model_dump_json()


def test_without_a_key_every_pair_is_refused_up_front_and_nothing_is_sent(monkeypatch, tmp_path):
    monkeypatch.delenv("PATRONUS_API_KEY", raising=False)
    backend = get_backend("patronus", None)
    why = backend.param_error(parse_metric("hallucination"))
    assert why is not None and "PATRONUS_API_KEY" in why and "nothing was sent" in why and "\n" not in why
    with PatronusServer() as srv:
        monkeypatch.setenv("PATRONUS_API_URL", srv.url)
        with pytest.raises(ValueError, match="PATRONUS_API_KEY"):
            evaluate([S], parse_metrics(ALL), ["patronus"], out=tmp_path / "run", quiet=True)
    assert srv.requests == []


def test_the_settings_come_from_the_sdks_environment_variables_or_options(monkeypatch):
    monkeypatch.setenv("PATRONUS_API_KEY", "pk-env-0123456789")
    monkeypatch.setenv("PATRONUS_API_URL", "http://127.0.0.1:9/")
    b = get_backend("patronus", None)
    assert (b.api_key, b.api_url) == ("pk-env-0123456789", "http://127.0.0.1:9")
    b = get_backend("patronus", None, api_key="pk-option-0123", api_url="http://u:pw@127.0.0.1:8")
    assert (b.api_key, b.api_url) == ("pk-option-0123", "http://u:pw@127.0.0.1:8")
    extra = b.fingerprint_extra()
    assert extra["api_url"] == "http://127.0.0.1:8" and "pk-option" not in json.dumps(extra)


def test_a_run_writes_the_key_nowhere(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    echo = lambda body: web.json_response({"detail": f"key {KEY} is over quota"}, status=400)
    flip = {"n": 0}

    def every_other(body: dict) -> web.Response | None:  # half the rows fail, echoing the key
        flip["n"] += 1
        return echo(body) if flip["n"] % 2 else None

    with PatronusServer(fault=every_other) as srv:
        backend = get_backend("patronus", None, api_key=KEY, api_url=srv.url, run_dir=tmp_path / "run")
        samples = [S.model_copy(update={"id": f"pt-{i}"}) for i in range(4)]
        report = evaluate(samples, ["hallucination"], [backend], out=tmp_path / "run", quiet=True)
    scores = list(report.iter_scores())
    assert {s.error is None for s in scores} == {True, False}
    assert any("***" in (s.error or "") for s in scores)
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert "scores.jsonl" in {p.name for p in (tmp_path / "run").iterdir()}
    assert KEY not in written
    assert KEY not in caplog.text  # the SDK logs the echoing body at debug: filtered


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (lambda b: web.json_response({"detail": "invalid api key"}, status=401), "UnrecoverableAPIError"),
        (
            lambda b: web.json_response(
                {"results": [{**success(b), "status": "error", "error_message": "model down"}]}
            ),
            "evaluation failed with status 'error' and message 'model down'",
        ),  # fmt: skip
        (
            lambda b: web.json_response({"results": [{**success(b), "status": "validation_error"}]}),
            "UnrecoverableAPIError",
        ),
        (lambda b: web.Response(text="<html>bad gateway</html>", content_type="text/html"), "RetryError"),
    ],
)
async def test_the_evaluators_failures_are_task_errors(fault, said):
    with PatronusServer(fault=fault) as srv:
        [s] = await _score(srv, "answer_relevancy")
    assert s.value is None and s.raw is None
    assert s.error.startswith("patronus retrieval-answer-relevance: ") and said in s.error, s.error
    assert "\n" not in s.error and KEY not in s.error


async def test_a_result_without_a_verdict_is_no_value():
    fault = lambda b: web.json_response({"results": [success(b, **{"pass": None, "score_raw": 0.7})]})
    with PatronusServer(fault=fault) as srv:
        [s] = await _score(srv, "context_relevancy")
    assert s.value is None
    assert s.error == ("patronus retrieval-context-relevance: returned no pass/fail verdict (pass=None, score_raw=0.7)")


async def test_bracket_parameters_reach_the_evaluator_and_others_are_refused():
    with PatronusServer() as srv:
        [s] = await _score(srv, "hallucination[criteria=patronus:strict:2,threshold=8]")
        posted = srv.posts()[-1]["evaluators"][0]
    assert s.error is None and s.threshold == 8.0
    assert posted["criteria"] == "patronus:strict:2"
    b = get_backend("patronus", None, api_key=KEY)
    assert b.param_error(parse_metric("hallucination[model=x]")) == (
        "metric 'hallucination[model=x]': unknown parameter 'model' (accepted: criteria, explain_strategy, threshold)"
    )


def test_no_judge_call_is_estimated_and_the_scale_is_shown():
    rows = estimate_calls("patronus", [S, S], parse_metrics(ALL))
    assert {r["calls"] for r in rows} == {0} and {r["embedding_calls"] for r in rows} == {0}
    d = describe_metric("context_sufficiency")
    assert "patronus" in d["backends"] and "pass (raw 1)" in d["scales"]["patronus"]
    assert parse_metric("retrieval-hallucination").canonical == "hallucination"
    assert parse_metric("context-sufficiency").canonical == "context_sufficiency"


@pytest.mark.slow
def test_a_run_reaches_only_the_api_url_and_prints_nothing(tmp_path):
    """A fresh process (empty HOME and cwd) scores every metric against the loopback
    Patronus API while every socket connect and DNS lookup is recorded: only 127.0.0.1,
    no file in HOME or the cwd, nothing on stdout but the test's own line. Then without a
    key: no socket at all."""
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    script = textwrap.dedent(f"""
        import asyncio, socket, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        peers = []
        real_connect, real_gai = socket.socket.connect, socket.getaddrinfo
        def connect(self, addr):
            peers.append(addr[0] if isinstance(addr, tuple) else str(addr))
            return real_connect(self, addr)
        def gai(host, *a, **k):
            peers.append(str(host))
            return real_gai(host, *a, **k)
        socket.socket.connect, socket.getaddrinfo = connect, gai
        from test_patronus_backend import ALL, KEY, S, PatronusServer
        from unified.adapters import get_backend
        from unified.metrics import parse_metrics
        async def run(**opts):
            b = get_backend("patronus", None, **opts)
            try:
                return await b.score(S, parse_metrics(ALL))
            finally:
                await b.aclose()
        with PatronusServer() as srv:
            peers.clear()
            out = asyncio.run(run(api_key=KEY, api_url=srv.url))
        assert all(x.error is None for x in out), [x.error for x in out]
        scored = sorted(set(peers))
        peers.clear()
        out = asyncio.run(run())  # no key: refused, nothing sent
        assert all("PATRONUS_API_KEY" in x.error for x in out), [x.error for x in out]
        print("PEERS", scored, sorted(set(peers)))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATRONUS_")}
    env["HOME"] = str(home)
    out = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines() == ["PEERS ['127.0.0.1'] []"], out.stdout
    assert list(cwd.iterdir()) == [] and list(home.rglob("*")) == []
