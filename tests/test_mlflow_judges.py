"""The MLflow backend (MLflow 3's built-in judges): fidelity to the scorers called
directly, the yes/no -> 0–10 mapping, refusal of any other label (per chunk too), one-line
scrubbed errors, and nothing logged: no tracking store, no telemetry, the user's
``MLFLOW_GATEWAY_URI`` restored.

Fidelity method: run the backend against the loopback judge server with a SQLite judge
cache; then call the MLflow scorer directly, as MLflow documents it — ``Scorer(model=
"gateway:/…")(trace=…)`` for the retrieval judges, ``(inputs=…, outputs=…,
expectations=…)`` for RelevanceToQuery and Correctness — over the bridge with a second
judge bundle on the SAME cache, and check that the server saw no new request and that
the values agree. ``judge_answers_mlflow`` answers "yes"/"no" (plumbing, never judgment
quality).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mlflow.genai", reason="the mlflow extra (full mlflow 3) is not installed")

import judge_answers_mlflow
import mlflow.genai.scorers as ms
from judge_server import JudgeServer
from mlflow.genai.utils.trace_utils import (
    extract_request_from_trace,
    extract_response_from_trace,
    extract_retrieval_context_from_trace,
)

from unified.adapters import describe_metric, estimate_calls, get_backend
from unified.adapters.mlflow.backend import MLFLOW_JUDGES, MODEL_URI, sample_trace
from unified.adapters.registry import quiet_env
from unified.judge import JudgeConfig, bridge, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

QUIET_ENV = quiet_env()  # every room's switches (the backends set them all)

pytestmark = pytest.mark.mlflow_judges

S = Sample(
    user_input="What is the capital of France, and which river runs through it?",
    response="Paris is the capital of France. The Seine runs through Paris.",
    retrieved_contexts=[
        "Paris is the capital and largest city of France.",
        "The Seine flows through Paris before reaching the English Channel.",
        "Lyon is known for its cuisine.",
    ],
    reference="The capital of France is Paris; the Seine flows through it.",
    id="fr-1",
)
Q = {"question": S.user_input}
EXPECT = {"expected_response": S.reference}

# The direct calls, written from MLflow's documentation; (scorer class, call kwargs, the
# feedback that carries the value)
DIRECT = {
    "faithfulness": ("RetrievalGroundedness", lambda: dict(trace=sample_trace(S)), "retrieval_groundedness"),
    "answer_relevancy": ("RelevanceToQuery", lambda: dict(inputs=Q, outputs=S.response), "relevance_to_query"),
    "context_relevancy": ("RetrievalRelevance", lambda: dict(trace=sample_trace(S)), "retrieval_relevance/precision"),
    "context_recall": (
        "RetrievalSufficiency",
        lambda: dict(trace=sample_trace(S), expectations=EXPECT),
        "retrieval_sufficiency",
    ),
    "answer_correctness": (
        "Correctness",
        lambda: dict(inputs=Q, outputs=S.response, expectations=EXPECT),
        "correctness",
    ),
}


@pytest.fixture(autouse=True)
def _cwd(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_GATEWAY_URI", raising=False)


def _judges(srv: JudgeServer, cache_path=None):
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), cache_path=cache_path)


def _number(feedback) -> float:
    value = getattr(feedback.value, "value", feedback.value)
    return {"yes": 1.0, "no": 0.0}[value] if isinstance(value, str) else float(value)


def test_direct_table_covers_every_mapped_metric():
    assert set(DIRECT) == set(MLFLOW_JUDGES)
    assert all(DIRECT[k][0] == m.cls for k, m in MLFLOW_JUDGES.items())


def test_mlflow_reads_the_sample_back_from_the_trace():
    trace = sample_trace(S)
    assert extract_request_from_trace(trace) == str(Q)
    assert extract_response_from_trace(trace) == S.response
    [chunks] = extract_retrieval_context_from_trace(trace).values()
    assert [c["content"] for c in chunks] == S.retrieved_contexts


async def _direct(metric: str, srv: JudgeServer, cache) -> tuple[object, int]:
    """MLflow's scorer called directly over the bridge; (its feedback, requests seen)."""
    import asyncio

    cls, kwargs, name = DIRECT[metric]
    judges = _judges(srv, cache)
    b = bridge.acquire()
    os.environ["MLFLOW_GATEWAY_URI"] = b.base_url
    try:
        with task_scope("mlflow", metric, S.id), b.route(judges) as headers:
            result = await asyncio.to_thread(getattr(ms, cls)(model=MODEL_URI, extra_headers=headers), **kwargs())
    finally:
        os.environ.pop("MLFLOW_GATEWAY_URI", None)
        bridge.release()
        await judges.aclose()
    items = result if isinstance(result, list) else [result]
    return next(f for f in items if f.name == name), b.requests


@pytest.mark.parametrize("metric", sorted(MLFLOW_JUDGES))
async def test_adapter_equals_direct_mlflow_call(metric, tmp_path):
    cache = tmp_path / "c.sqlite"
    with JudgeServer(answer_fn=judge_answers_mlflow.answer_fn) as srv:
        judges_a = _judges(srv, cache)
        backend = get_backend("mlflow", judges_a)
        [score] = await backend.score(S, [parse_metric(metric)])
        await backend.aclose()
        await judges_a.aclose()
        calls = srv.request_count
        assert score.error is None, score.error
        assert calls == (3 if MLFLOW_JUDGES[metric].per_context else 1)

        srv.reset_counts()
        feedback, bridged = await _direct(metric, srv, cache)
        assert bridged == calls, "MLflow sent its requests through the bridge"
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    raw = _number(feedback)
    assert score.raw == pytest.approx(raw, abs=1e-12)
    assert score.value == pytest.approx(10 * raw, abs=1e-9)
    assert score.cost.calls == calls
    if not MLFLOW_JUDGES[metric].per_context:
        assert score.details["label"] == feedback.value
        assert score.reason == feedback.rationale and score.reason
    else:
        assert len(score.details["labels"]) == 3 and score.reason.count("chunk ") == 3
    assert "MLFLOW_GATEWAY_URI" not in os.environ
    left = {p.name for p in tmp_path.iterdir()} - {"c.sqlite", "c.sqlite-wal", "c.sqlite-shm"}
    assert left == set(), "no mlflow.db, no mlruns"


@pytest.mark.parametrize("metric", ["faithfulness", "context_relevancy"])
async def test_a_label_other_than_yes_no_is_refused(metric):
    with JudgeServer(answer_fn=judge_answers_mlflow.unknown_fn) as srv:
        backend = get_backend("mlflow", _judges(srv))
        [s] = await backend.score(S, [parse_metric(metric)])
        await backend.aclose()
    assert s.value is None and s.raw is None
    assert s.error.startswith(f"mlflow {MLFLOW_JUDGES[metric].cls}: ") and "\n" not in s.error
    # MLflow itself would count an unknown chunk label as "not relevant": a silent 0
    assert "'maybe'" in s.error or "'unknown'" in s.error


@pytest.mark.parametrize("said", ["null", "None", " nil "])
async def test_a_chunk_the_judge_did_not_rate_is_refused_not_counted_as_no(said):
    """MLflow reads "null"/"none"/"nil" as "no" (its ``_NEGATIVE_VALUES``), so a chunk
    the judge did not rate lowered context_relevancy to 6.67 without a word, though every
    other label is refused. The bridge keeps the judge's own answers; such a verdict fails
    the task. A real "no" still counts."""
    import json as _json

    def answer(body: dict):
        if not judge_answers_mlflow._is_mlflow(body):
            return None
        return {"result": said if "Lyon" in _json.dumps(body) else "yes", "rationale": "r"}

    with JudgeServer(answer_fn=answer) as srv:
        backend = get_backend("mlflow", _judges(srv))
        [s] = await backend.score(S, [parse_metric("context_relevancy")])
        await backend.aclose()
    assert s.value is None and s.error == (
        f"mlflow RetrievalRelevance: the judge answered {said!r}, which MLflow reads as 'no'; no score"
    )


async def test_judge_failure_is_one_scrubbed_line():
    secret = "sk-live-THISMUSTNOTLEAK0123456789abcdef"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("401", n=50)
        backend = get_backend("mlflow", _judges(srv))
        [s] = await backend.score(S, [parse_metric("answer_correctness")])
        await backend.aclose()
    assert s.value is None and s.error.startswith("mlflow Correctness: ")
    assert "\n" not in s.error and secret not in s.error


async def test_the_users_gateway_uri_comes_back(monkeypatch, judge_server):
    monkeypatch.setenv("MLFLOW_GATEWAY_URI", "http://gateway.example:5000")
    backend = get_backend("mlflow", _judges(judge_server))
    await backend.score(S, [parse_metric("answer_relevancy")])
    assert os.environ["MLFLOW_GATEWAY_URI"].startswith("http://127.0.0.1:")
    await backend.aclose()
    assert os.environ["MLFLOW_GATEWAY_URI"] == "http://gateway.example:5000"


def test_an_unknown_bracket_parameter_is_refused_before_any_call():
    """MLflow's scorers accept any keyword: ``context_relevancy[inference_parms=...]`` (a
    typo) ran with the defaults, exit 0, without a word."""
    backend = get_backend("mlflow", None)
    typo = parse_metric('context_relevancy[inference_parms={"temperature":0}]')
    assert backend.param_error(typo) == (
        f"metric '{typo.name}': unknown parameter 'inference_parms' (accepted: inference_params, threshold, timeout)"
    )
    assert backend.param_error(parse_metric('context_relevancy[inference_params={"temperature":0}]')) is None
    assert backend.param_error(parse_metric("faithfulness[name=x]")) is not None  # it renames the feedback we read


def test_dry_run_counts_k_calls_for_retrieval_relevance_and_shows_the_labels():
    rows = estimate_calls("mlflow", [S], parse_metrics("faithfulness,context_relevancy"))
    assert [r["calls"] for r in rows] == [1, 3]
    assert '"yes" (raw 1)' in describe_metric("faithfulness")["scales"]["mlflow"]
    assert "RetrievalRelevance" in describe_metric("context_relevancy")["scales"]["mlflow"]


@pytest.mark.slow
def test_no_network_no_tracking_store(tmp_path):
    """A fresh process (empty HOME and cwd, switches unset) scores every MLflow judge
    against the loopback server while an audit hook records every socket connect: only
    127.0.0.1 is reached; no mlflow.db, mlruns or file in HOME appears."""
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    tests_dir = Path(__file__).parent
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(tests_dir)!r})
        peers = []
        def hook(event, args):
            if event == "socket.connect":
                addr = args[1]
                peers.append(addr[0] if isinstance(addr, tuple) else str(addr))
        sys.addaudithook(hook)
        import judge_answers_mlflow
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import JudgeConfig, build_judges
        from unified.metrics import parse_metrics
        from unified.sample import Sample
        s = Sample(user_input="q?", response="a.", retrieved_contexts=["c."], reference="r.")
        async def main():
            b = get_backend("mlflow", build_judges(JudgeConfig(base_url=srv.base_url, model="f")))
            out = await b.score(s, parse_metrics("faithfulness,answer_relevancy,context_relevancy,"
                                                 "context_recall,answer_correctness"))
            await b.aclose()
            return out
        with JudgeServer(answer_fn=judge_answers_mlflow.answer_fn) as srv:
            out = asyncio.run(main())
        assert all(x.error is None for x in out), [x.error for x in out]
        print("PEERS", sorted(set(peers)))
    """)
    env = {**os.environ, "HOME": str(home)}
    for k in (*QUIET_ENV, "MLFLOW_TRACKING_URI", "MLFLOW_GATEWAY_URI"):
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "PEERS ['127.0.0.1']"
    assert list(cwd.iterdir()) == []
    assert [p for p in home.rglob("*") if p.is_file()] == []


async def test_many_concurrent_scorers_do_not_starve_the_judge_layer(tmp_path):
    """MLflow's judges block a thread each until the bridge answers, and the judge layer
    behind the bridge reads its SQLite cache on the loop's default executor. With the
    scorers on that same executor (2 workers here) every worker would wait for a cache
    read that can no longer start: the run would hang until the judge timeouts opened the
    circuit breaker. The backend's own threads keep it moving."""
    import asyncio
    import concurrent.futures
    import time

    loop = asyncio.get_running_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(2))
    samples = [Sample(**{**S.model_dump(), "id": f"s{i}"}) for i in range(6)]
    with JudgeServer(answer_fn=judge_answers_mlflow.answer_fn) as srv:
        judges = build_judges(
            JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0, timeout=20),
            cache_path=tmp_path / "c.sqlite",
        )
        backend = get_backend("mlflow", judges, concurrency=8)
        started = time.perf_counter()
        out = await asyncio.wait_for(
            asyncio.gather(*(backend.score(s, parse_metrics("faithfulness,answer_relevancy")) for s in samples)), 120
        )
        elapsed = time.perf_counter() - started
        await backend.aclose()
        await judges.aclose()
    assert [s.error for scores in out for s in scores] == [None] * 12
    assert elapsed < 20, f"{elapsed:.1f}s: scorers waited on the judge layer's executor"
