"""The Opik backend: fidelity to opik called directly, the 0–10 mapping (Hallucination
inverted), refusal of values outside opik's range, one-line scrubbed errors, and no
telemetry, tracking or config file.

Fidelity method (as for ragas/deepeval): run the backend against the loopback judge
server with a SQLite judge cache; then call opik's metric directly — written from opik's
documentation, ``Metric(model=<an OpikBaseModel>, track=False).ascore(...)`` — with our
model over a second judge bundle on the SAME cache, and check that the server saw no
new request and that the values agree. Loopback answers are random-but-valid (plumbing,
never judgment quality); ``judge_answers_opik`` keeps their scores in [0, 1].
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("opik", reason="the opik extra is not installed")

import judge_answers_opik
from judge_server import JudgeServer
from opik.evaluation import metrics as om

from unified.adapters import describe_metric, estimate_calls, get_backend
from unified.adapters.opik import OPIK_METRICS
from unified.adapters.opik.backend import JudgeOpikModel
from unified.adapters.registry import quiet_env
from unified.judge import JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

QUIET_ENV = quiet_env()  # every room's switches (the backends set them all)

pytestmark = pytest.mark.opik

S = Sample(
    user_input="What is the capital of France, and which river runs through it?",
    response="Paris is the capital of France. The Seine runs through Paris.",
    retrieved_contexts=[
        "Paris is the capital and largest city of France.",
        "The Seine flows through Paris before reaching the English Channel.",
    ],
    reference="The capital of France is Paris; the Seine flows through it.",
    id="fr-1",
)

# The direct calls, written from opik's documentation, independently of the adapter.
DIRECT = {
    "faithfulness": (
        lambda m: om.Hallucination(model=m, track=False),
        dict(input=S.user_input, output=S.response, context=S.retrieved_contexts),
    ),
    "hallucination": (
        lambda m: om.Hallucination(model=m, track=False),
        dict(input=S.user_input, output=S.response, context=S.retrieved_contexts),
    ),
    "answer_relevancy": (
        lambda m: om.AnswerRelevance(model=m, track=False, require_context=False),
        dict(input=S.user_input, output=S.response, context=S.retrieved_contexts),
    ),
    "context_precision": (
        lambda m: om.ContextPrecision(model=m, track=False),
        dict(input=S.user_input, output=S.response, expected_output=S.reference, context=S.retrieved_contexts),
    ),
    "context_recall": (
        lambda m: om.ContextRecall(model=m, track=False),
        dict(input=S.user_input, output=S.response, expected_output=S.reference, context=S.retrieved_contexts),
    ),
}
INVERTED = {"faithfulness", "hallucination"}


@pytest.fixture(autouse=True)
def _cwd(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)


def _judges(srv: JudgeServer, cache_path=None):
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), cache_path=cache_path)


def test_direct_table_covers_every_mapped_metric():
    assert set(DIRECT) == set(OPIK_METRICS)


@pytest.mark.parametrize("metric", sorted(OPIK_METRICS))
async def test_adapter_equals_direct_opik_call(metric, tmp_path):
    cache = tmp_path / "c.sqlite"
    with JudgeServer(answer_fn=judge_answers_opik.answer_fn) as srv:
        judges_a = _judges(srv, cache)
        [score] = await get_backend("opik", judges_a).score(S, [parse_metric(metric)])
        await judges_a.aclose()
        assert srv.request_count == 1, "each opik judge metric is one call"
        assert score.error is None, score.error

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        build, kwargs = DIRECT[metric]
        with task_scope("opik", metric, S.id):  # the cache's per-task occurrence index
            direct = await build(JudgeOpikModel(judges_b)).ascore(**kwargs)
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    assert 0.0 <= direct.value <= 1.0
    assert score.raw == pytest.approx(direct.value, abs=1e-12)
    expected = 10 * (1 - direct.value) if metric in INVERTED else 10 * direct.value
    assert score.value == pytest.approx(expected, abs=1e-9)
    assert score.reason == direct.reason and score.reason
    assert score.details["opik_metric"] == OPIK_METRICS[metric].cls
    assert score.cost.calls == 1


async def test_score_outside_opiks_range_is_refused_with_opiks_reason():
    with JudgeServer(answer_fn=judge_answers_opik.out_of_range_fn) as srv:
        scores = await get_backend("opik", _judges(srv)).score(S, parse_metrics("faithfulness,context_recall"))
    for s in scores:
        assert s.value is None and s.raw is None
        assert "must be between 0.0 and 1.0, got 1.5" in s.error
        assert s.error.startswith(f"opik {OPIK_METRICS[s.metric].cls}: ") and "\n" not in s.error


async def test_judge_failure_is_one_scrubbed_line():
    secret = "sk-live-THISMUSTNOTLEAK0123456789abcdef"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("401", n=20)
        [s] = await get_backend("opik", _judges(srv)).score(S, [parse_metric("answer_relevancy")])
    assert s.value is None and s.error.startswith("opik AnswerRelevance: ")
    assert "401" in s.error and "\n" not in s.error
    assert secret not in s.error and secret not in (s.reason or "")


async def test_context_precision_without_response_names_the_field_and_calls_nothing(judge_server):
    bare = Sample(user_input="q?", retrieved_contexts=["c."], reference="r", id="bare")
    [s] = await get_backend("opik", _judges(judge_server)).score(bare, [parse_metric("context_precision")])
    # opik's table says ContextPrecision needs the response (needs_fields): the one message
    assert s.value is None and s.error == (
        "sample 'bare': field 'response' is missing or empty; context_precision does not need it, "
        "but the opik backend's does (score it on another backend)"
    )
    assert judge_server.request_count == 0


async def test_answer_relevancy_without_contexts_uses_opiks_no_context_prompt():
    bare = Sample(user_input="What is the capital of France?", response="Paris.", id="nc")
    with JudgeServer(answer_fn=judge_answers_opik.answer_fn) as srv:
        [s] = await get_backend("opik", _judges(srv)).score(bare, [parse_metric("answer_relevancy")])
        prompt = str(srv.requests[0]["messages"])
    assert s.error is None and 0.0 <= s.value <= 10.0
    assert "Paris." in prompt


def test_an_unknown_bracket_parameter_is_refused_before_any_call():
    """opik's constructors reject an unknown keyword only when a task builds the metric:
    ``faithfulness[foo=1]`` failed every task, one at a time; it is refused up front now,
    and a keyword of the constructor (``seed``) still goes through."""
    backend = get_backend("opik", None)
    assert backend.param_error(parse_metric("faithfulness[foo=1]")) == (
        "metric 'faithfulness[foo=1]': unknown parameter 'foo' (accepted: few_shot_examples, seed, temperature, threshold)"
    )
    assert backend.param_error(parse_metric("faithfulness[seed=3]")) is None
    assert backend.param_error(parse_metric("faithfulness[model=x]")).startswith("metric 'faithfulness[model=x]'")


def test_dry_run_counts_one_call_per_metric_and_the_table_shows_the_scale():
    rows = estimate_calls("opik", [S, S], parse_metrics("faithfulness,context_recall"))
    assert [r["calls"] for r in rows] == [2, 2]
    d = describe_metric("faithfulness")
    assert "opik" in d["backends"]
    assert "Hallucination" in d["scales"]["opik"] and "1 − raw" in d["scales"]["opik"]


@pytest.mark.slow
def test_no_network_no_tracking_no_config_file(tmp_path):
    """A fresh process (empty HOME and cwd, opik's switches unset) scores every opik
    metric against the loopback server while an audit hook records every socket connect:
    only 127.0.0.1 is reached, and no file appears in HOME or the cwd."""
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
        import judge_answers_opik
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import JudgeConfig, build_judges
        from unified.metrics import parse_metrics
        from unified.sample import Sample
        s = Sample(user_input="q?", response="a.", retrieved_contexts=["c."], reference="r.")
        with JudgeServer(answer_fn=judge_answers_opik.answer_fn) as srv:
            b = get_backend("opik", build_judges(JudgeConfig(base_url=srv.base_url, model="f")))
            out = asyncio.run(b.score(s, parse_metrics("faithfulness,answer_relevancy,context_precision,context_recall")))
        assert all(x.error is None for x in out), [x.error for x in out]
        import opik.analytics
        opik.analytics.flush() if hasattr(opik.analytics, "flush") else None
        print("PEERS", sorted(set(peers)))
    """)
    env = {**os.environ, "HOME": str(home)}
    for k in QUIET_ENV:  # the adapter must set these itself
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    peers = out.stdout.strip().splitlines()[-1]
    assert peers == "PEERS ['127.0.0.1']", peers
    assert list(cwd.iterdir()) == []
    assert list(home.rglob("*")) == []
