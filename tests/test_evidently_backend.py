"""The Evidently backend: fidelity to Evidently called directly, categories and scores on
0–10, each bad answer a task error (UNKNOWN, another category, a missing or out-of-range
score), two judges at once, parameters, the dry-run estimate, and no telemetry, server or
stray file in a clean process.

Fidelity method (as for the other frameworks): run the backend against the loopback judge
server with a SQLite judge cache; then compute the descriptor directly — written from
Evidently's documentation, ``Dataset.from_pandas(df, data_definition=DataDefinition(),
descriptors=[FaithfulnessLLMEval("response", context=..., provider=..., model=...)])`` —
over a second judge bundle on the SAME cache (provider ``unified`` inside
``judge_route``), and check that the server saw no new request and the raw values agree.
Loopback answers (``judge_answers_evidently``) are plumbing, never judgment quality.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# the backend module first: it lets evidently 0.7.23 import under pandas 3
pytest.importorskip("unified.adapters.evidently.backend", reason="the evidently extra is not installed")

import judge_answers_evidently
import pandas as pd
from judge_server import JudgeServer

from unified.adapters import describe_metric, estimate_calls, get_backend
from unified.adapters.evidently import EVIDENTLY_METRICS
from unified.adapters.evidently.backend import PROVIDER, judge_route
from unified.adapters.registry import quiet_env
from unified.judge import JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

# isort: split
# evidently only after the backend module, which lets it import under pandas 3
from evidently import DataDefinition, Dataset
from evidently.descriptors import ContextQualityLLMEval, ContextRelevance, CorrectnessLLMEval, FaithfulnessLLMEval

pytestmark = pytest.mark.evidently
TESTS = Path(__file__).parent

SAMPLES = [
    Sample(
        user_input="What is the capital of France, and which river runs through it?",
        response="Paris is the capital of France. The Seine runs through Paris.",
        retrieved_contexts=[
            "Paris is the capital and largest city of France.",
            "The Seine flows through Paris before reaching the English Channel.",
            "Lyon is known for its cuisine.",
        ],
        reference="The capital of France is Paris; the Seine flows through it.",
        id="fr-1",
    ),
    Sample(
        user_input="Who wrote Hamlet?",
        response="Hamlet was written by Christopher Marlowe.",
        retrieved_contexts=["Hamlet is a tragedy by William Shakespeare.", "Marlowe wrote Doctor Faustus."],
        reference="William Shakespeare",
        id="ham-1",
    ),
]
S = SAMPLES[0]


def _frame(s: Sample) -> pd.DataFrame:
    # our own column names: Evidently's prompts carry the values, never the names
    return pd.DataFrame(
        [
            {
                "q": s.user_input,
                "answer": s.response,
                "source": "\n\n".join(s.retrieved_contexts),
                "chunks": s.retrieved_contexts,
                "gold": s.reference,
            }
        ]
    )


# The direct calls, written from Evidently's documentation, independently of the adapter:
# (descriptor, the raw value from its columns as the table says: 1 = target category)
def _category(target):
    return lambda out, scored: float(out["E score"]) if scored else float(out["E"] == target)


DIRECT = {
    "faithfulness": (
        lambda kw: FaithfulnessLLMEval("answer", context="source", provider=PROVIDER, model="fake", alias="E", **kw),
        _category("UNFAITHFUL"),
    ),
    "answer_correctness": (
        lambda kw: CorrectnessLLMEval("answer", target_output="gold", provider=PROVIDER, model="fake", alias="E", **kw),
        _category("INCORRECT"),
    ),
    "context_sufficiency": (
        lambda kw: ContextQualityLLMEval("source", question="q", provider=PROVIDER, model="fake", alias="E", **kw),
        _category("VALID"),
    ),
    "context_relevancy": (
        lambda kw: ContextRelevance(
            "q", "chunks", method="llm", method_params={"provider": PROVIDER, "model": "fake"}, alias="E", **kw
        ),
        lambda out, scored: float(out["E"]),
    ),
}
CASES = [(m, "") for m in sorted(EVIDENTLY_METRICS)] + [("faithfulness", "include_score=true")]


def _judges(srv: JudgeServer, cache_path=None, **kw):
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), cache_path=cache_path, **kw)


def test_direct_table_covers_every_mapped_metric_and_names_are_ours():
    assert set(DIRECT) == set(EVIDENTLY_METRICS)
    assert parse_metric("FaithfulnessLLMEval").canonical == "faithfulness"
    assert parse_metric("ContextQualityLLMEval").canonical == "context_sufficiency"
    assert parse_metric("CorrectnessLLMEval").canonical == "answer_correctness"
    assert parse_metric("ContextRelevance").canonical == "context_relevancy"  # ragas's name too


@pytest.mark.parametrize("metric,params", CASES, ids=[f"{m}[{p}]" if p else m for m, p in CASES])
async def test_adapter_equals_direct_evidently_call(metric, params, tmp_path):
    ref = parse_metric(f"{metric}[{params}]" if params else metric)
    cache = tmp_path / "c.sqlite"
    with JudgeServer(answer_fn=judge_answers_evidently.answer_fn) as srv:
        judges_a = _judges(srv, cache)
        backend = get_backend("evidently", judges_a)
        scores = [(await backend.score(s, [ref]))[0] for s in SAMPLES]
        await backend.aclose()
        await judges_a.aclose()
        assert srv.request_count > 0 and all(s.error is None for s in scores), [s.error for s in scores]

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        build, raw_of = DIRECT[metric]
        kw = dict(ref.params)
        direct = []
        for s in SAMPLES:
            with task_scope("evidently", ref.name, s.id), judge_route(judges_b):
                descriptors = [build(kw)]
                out = await asyncio.to_thread(
                    lambda: Dataset.from_pandas(
                        _frame(s), data_definition=DataDefinition(), descriptors=descriptors
                    ).as_dataframe()
                )
            direct.append(raw_of(out.iloc[0], bool(kw.get("include_score"))))
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    row = EVIDENTLY_METRICS[metric]
    for score, raw in zip(scores, direct):
        assert score.raw == pytest.approx(raw, abs=1e-12)
        assert score.value == pytest.approx(10 * raw if row.higher_is_better else 10 * (1 - raw), abs=1e-9)
        assert score.details["evidently_descriptor"] == row.cls


async def test_two_judges_at_once_each_answer_their_own_tasks():
    def always(category):
        return judge_answers_evidently.shaped(lambda a: {**a, "category": category})

    with JudgeServer(answer_fn=always("FAITHFUL")) as good, JudgeServer(answer_fn=always("UNFAITHFUL")) as bad:
        a = get_backend("evidently", _judges(good, cache=False))
        b = get_backend("evidently", _judges(bad, cache=False))
        runs = await asyncio.gather(*(x.score(s, [parse_metric("faithfulness")]) for s in SAMPLES * 3 for x in (a, b)))
        seen = (good.request_count, bad.request_count)
    assert [r[0].value for r in runs] == [10.0, 0.0] * 6
    assert seen == (6, 6)


# (case, metric, the answer the judge gives, words of the error, requests)
BAD_SHAPES = [
    ("unknown", "faithfulness", lambda a: {**a, "category": "UNKNOWN"}, "category 'UNKNOWN', not UNFAITHFUL or", 1),
    ("another word", "context_sufficiency", lambda a: {**a, "category": "valid"}, "category 'valid', not VALID or", 1),
    ("no category", "answer_correctness", lambda a: {"reasoning": "r"}, "the judge's answer has no 'category'", 1),
    (
        "no score",
        "faithfulness[include_score=true]",
        lambda a: {"category": "FAITHFUL", "reasoning": "r"},
        "the judge's answer has no 'score'",
        1,
    ),
    ("text score", "faithfulness[include_score=true]", lambda a: {**a, "score": "high"}, "no numeric score", 1),
    (
        "score 1.5",
        "faithfulness[include_score=true]",
        lambda a: {**a, "score": 1.5},
        "returned 1.5, outside its own range [0, 1]",
        1,
    ),
    # one context out of range: the mean would hide it
    (
        "context 1.5",
        "context_relevancy",
        lambda a: {**a, "score": 1.5},
        "scored context 1 1.5, not a score in [0, 1]",
        3,
    ),
    (
        "context no score",
        "context_relevancy",
        lambda a: {"category": "RELEVANT"},
        "the judge's answer has no 'score'",
        3,
    ),
    # Evidently asks once more when it cannot parse an answer
    ("no json", "answer_correctness", lambda a: "It is correct.", "LLMResponseParseError", 2),
]


@pytest.mark.parametrize("case,metric,bad,words,requests", BAD_SHAPES, ids=[c[0] for c in BAD_SHAPES])
async def test_a_bad_answer_is_a_task_error_with_the_reason(case, metric, bad, words, requests):
    ref = parse_metric(metric)
    with JudgeServer(answer_fn=judge_answers_evidently.shaped(bad)) as srv:
        [s] = await get_backend("evidently", _judges(srv)).score(S, [ref])
        assert srv.request_count == requests
    assert s.value is None and s.passed is None and words in s.error, s.error
    assert s.error.startswith(f"evidently {EVIDENTLY_METRICS[ref.canonical].cls}: ") and "\n" not in s.error


@pytest.mark.parametrize("metric", sorted(EVIDENTLY_METRICS))
async def test_a_failed_call_is_one_scrubbed_line_and_is_asked_once(metric):
    """Evidently retries a failed request once; the judge layer has already retried as
    configured, so the retry gets the same error without a new request."""
    secret = "sk-live-THISMUSTNOTLEAK0123456789abcdef"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("401", n=50)
        [s] = await get_backend("evidently", _judges(srv)).score(S, [parse_metric(metric)])
        # one per context for ContextRelevance (sent at once: the first failure ends it)
        per_sample = len(S.retrieved_contexts) if metric == "context_relevancy" else 1
        assert 1 <= srv.request_count <= per_sample
    assert s.value is None and s.error.startswith(f"evidently {EVIDENTLY_METRICS[metric].cls}: JudgeHTTPError")
    assert "401" in s.error and secret not in s.error and "\n" not in s.error


def test_parameters_go_to_the_descriptor_and_no_other():
    backend = get_backend("evidently", None)
    assert backend.param_error(parse_metric("faithfulness[include_score=true,uncertainty=target]")) is None
    assert backend.param_error(parse_metric("context_relevancy[aggregation_method=hit]")) is None
    assert backend.param_error(parse_metric("faithfulness[method=semantic_similarity]")) == (
        "metric 'faithfulness[method=semantic_similarity]': unknown parameter 'method' "
        "(accepted: include_score, threshold, uncertainty)"
    )
    # ContextRelevance's default method loads a sentence-transformers model: never offered
    assert backend.param_error(parse_metric("context_relevancy[method=semantic_similarity]")) is not None


async def test_uncertainty_target_removes_unknown_from_the_prompt():
    with JudgeServer(answer_fn=judge_answers_evidently.answer_fn) as srv:
        [s] = await get_backend("evidently", _judges(srv)).score(S, [parse_metric("faithfulness[uncertainty=target]")])
        prompt = srv.requests[0]["messages"][-1]["content"]
    assert s.error is None and 'UNFAITHFUL or FAITHFUL"' in prompt and "UNKNOWN" not in prompt


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
async def test_dry_run_counts_what_the_judge_layer_sees(sample):
    with JudgeServer(answer_fn=judge_answers_evidently.answer_fn) as srv:
        backend = get_backend("evidently", _judges(srv, cache=False))
        for ref in parse_metrics(",".join(EVIDENTLY_METRICS)):
            srv.reset_counts()
            [s] = await backend.score(sample, [ref])
            [row] = estimate_calls("evidently", [sample], [ref])
            assert s.error is None, s.error
            assert srv.chat_count == row["calls"] == s.cost.calls, ref.name


def test_the_raw_scale_is_shown_by_unified_eval_metrics():
    scale = describe_metric("faithfulness")["scales"]["evidently"]
    assert scale.startswith('FaithfulnessLLMEval: category "UNFAITHFUL" = 1, "FAITHFUL" = 0')
    assert "include_score=true" in scale and "10 · (1 − raw)" in scale
    assert "10 · raw" in describe_metric("ContextQualityLLMEval")["scales"]["evidently"]
    assert "mean over the K contexts" in describe_metric("context_relevancy")["scales"]["evidently"]


def test_pandas_3_gets_the_one_name_evidently_imports_and_it_refuses_to_be_used():
    import pandas.core.dtypes.common as common

    with pytest.raises(NotImplementedError, match="evidently's column-type test needs pandas < 3"):
        common.infer_dtype_from_object(object)


@pytest.mark.slow
def test_no_telemetry_no_server_no_stray_file(tmp_path):
    """A fresh process (empty HOME and cwd, the switches unset) scores every Evidently
    metric against the loopback server while every socket connect, DNS lookup and child
    process is recorded (iterative-telemetry posts from a detached child): only 127.0.0.1
    is contacted, no Python child is spawned, uvicorn is never imported, and no file appears."""
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    code = textwrap.dedent(f"""
        import asyncio, json, socket, subprocess, sys
        sys.path.insert(0, {str(TESTS)!r})
        seen, spawned = [], []
        real_connect, real_gai, real_popen = socket.socket.connect, socket.getaddrinfo, subprocess.Popen.__init__
        def connect(self, addr): seen.append(str(addr[0])); return real_connect(self, addr)
        def gai(host, *a, **k): seen.append(str(host)); return real_gai(host, *a, **k)
        def popen(self, *a, **k): spawned.append(str(a[0])[:80]); return real_popen(self, *a, **k)
        socket.socket.connect, socket.getaddrinfo, subprocess.Popen.__init__ = connect, gai, popen
        import judge_answers_evidently
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import JudgeConfig, build_judges
        from unified.metrics import parse_metrics
        from unified.sample import Sample
        s = Sample(user_input="q?", response="a.", retrieved_contexts=["c.", "d."], reference="r.", id="x")
        async def main():
            with JudgeServer(answer_fn=judge_answers_evidently.answer_fn) as srv:
                j = build_judges(JudgeConfig(base_url=srv.base_url, model="m"), cache=False)
                out = await get_backend("evidently", j).score(s, parse_metrics(
                    "faithfulness,answer_correctness,context_sufficiency,context_relevancy"))
                await j.aclose()
            import evidently.telemetry
            evidently.telemetry.event_logger.send_event("test", "test_action")  # off: sends nothing
            print(json.dumps({{"errors": [x.error for x in out], "hosts": sorted(set(seen)), "spawned": spawned,
                               "uvicorn": "uvicorn" in sys.modules}}))
        asyncio.run(main())
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI") and k not in quiet_env()}
    env["HOME"] = str(home)
    res = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["errors"] == [None] * 4
    # a Python child is what iterative-telemetry would start (the judge's own OpenAI client
    # runs `uname -p` for its platform header: that is no telemetry)
    pythons = [c for c in out["spawned"] if "python" in c or sys.executable in c]
    assert set(out["hosts"]) <= {"127.0.0.1"} and pythons == [] and out["uvicorn"] is False, out
    assert list(cwd.iterdir()) == [] and list(home.rglob("*")) == []
