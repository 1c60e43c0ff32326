"""The Dingo backend: fidelity to dingo called directly, two judges side by side in one
process (dingo's configuration and client are class-level globals), the 0–10 mapping,
dingo's failure shapes as task errors (never a fail, never a silent 0), parameters, the
dry-run estimate, and no network, stray file or logging change in a clean process.

Fidelity method (as for the other frameworks): run the backend against the loopback judge
server with a SQLite judge cache; then call dingo directly — written from dingo's RAG
examples, ``Evaluator.dynamic_config = EvaluatorLLMArgs(...)``, ``Evaluator.eval(Data(...))``
— with our client in the evaluator's ``client`` slot over a second judge bundle on the
SAME cache, and check that the server saw no new request and that the raw values agree.
Loopback answers (``judge_answers_dingo``) are plumbing, never judgment quality.
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

pytest.importorskip("dingo", reason="the dingo extra is not installed")

import judge_answers_dingo
from dingo.config.input_args import EvaluatorLLMArgs
from dingo.io.input import Data
from dingo.model import Model
from judge_server import JudgeServer

from unified.adapters import describe_metric, estimate_calls, get_backend
from unified.adapters.dingo import DINGO_METRICS
from unified.adapters.dingo.backend import JudgeDingoClient
from unified.adapters.registry import quiet_env
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

TESTS = Path(__file__).parent

pytestmark = pytest.mark.dingo

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
ALL = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_utilization"


def _judges(srv: JudgeServer, cache_path=None, **kw):
    return build_judges(
        JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
        embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed", max_retries=0),
        cache_path=cache_path,
        **kw,
    )


def _direct_data(s: Sample) -> Data:
    # as dingo's RAG examples build a row; the ground truth where LLMRAGContextRecall reads it
    return Data(
        data_id=s.id,
        prompt=s.user_input,
        content=s.response,
        context=s.retrieved_contexts,
        raw_data={"expected_output": s.reference},
    )


def _direct(monkeypatch, canonical: str, judges, s: Sample):
    """Dingo's own evaluator class, configured as its docs show, our client in its slot."""
    cls = Model.llm_name_map[DINGO_METRICS[canonical].cls]
    client = JudgeDingoClient(judges)
    monkeypatch.setattr(cls, "dynamic_config", EvaluatorLLMArgs(model="fake"))
    monkeypatch.setattr(cls, "client", client)
    monkeypatch.setattr(cls, "embedding_model", {"model_name": "fake-embed", "client": client})
    return cls.eval(_direct_data(s))


def test_the_table_is_dingos_five_rag_evaluators_and_their_names_are_ours():
    assert sorted(m.cls for m in DINGO_METRICS.values()) == sorted(
        k for k in Model.llm_name_map if k.startswith("LLMRAG")
    )
    assert parse_metric("LLMRAGFaithfulness").canonical == "faithfulness"
    # its prompt judges each context with the question and the response, never a reference
    assert parse_metric("LLMRAGContextPrecision").canonical == "context_utilization"
    # dingo has no LLMRAGHallucination: the name users of older docs wrote stays accepted
    assert parse_metric("LLMRAGHallucination").canonical == "hallucination"
    assert describe_metric("faithfulness")["aliases"]["dingo"] == ["LLMRAGFaithfulness"]


@pytest.mark.parametrize("metric", sorted(DINGO_METRICS))
async def test_adapter_equals_direct_dingo_call(metric, tmp_path, monkeypatch):
    cache = tmp_path / "c.sqlite"
    with JudgeServer(answer_fn=judge_answers_dingo.answer_fn) as srv:
        judges_a = _judges(srv, cache)
        backend = get_backend("dingo", judges_a)
        scores = [(await backend.score(s, [parse_metric(metric)]))[0] for s in SAMPLES]
        await backend.aclose()
        await judges_a.aclose()
        assert srv.request_count > 0 and all(s.error is None for s in scores), [s.error for s in scores]

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        direct = []
        for s in SAMPLES:
            with task_scope("dingo", metric, s.id):  # the cache's per-task occurrence index
                direct.append(await asyncio.to_thread(_direct, monkeypatch, metric, judges_b, s))
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    for score, d in zip(scores, direct):
        assert d.label[0].endswith(("_PASS", "_FAIL")) and d.score is not None
        assert score.raw == pytest.approx(d.score, abs=1e-12)
        assert score.value == pytest.approx(min(max(d.score, 0.0), 10.0), abs=1e-9)
        assert score.reason == d.reason[0]
        assert score.details["dingo_metric"] == DINGO_METRICS[metric].cls


async def test_two_judges_in_one_process_each_keep_their_own():
    """Two backends over two judges that answer differently, scoring at once: each
    backend's values are its own judge's, each judge sees only its backend's requests, and
    dingo's own class is left as it was (the configuration lives on the backend's subclass)."""

    def scoring(value):
        return judge_answers_dingo.shaped(
            lambda kind, a: {**a, "score": value} if kind == "faithfulness" else {"rating": int(value) // 5}
        )

    cls = Model.llm_name_map["LLMRAGFaithfulness"]
    before = (cls.client, cls.dynamic_config)
    with JudgeServer(answer_fn=scoring(2.0)) as low, JudgeServer(answer_fn=scoring(10.0)) as high:
        a, b = get_backend("dingo", _judges(low, cache=False)), get_backend("dingo", _judges(high, cache=False))
        metrics = parse_metrics("faithfulness,context_relevancy")
        runs = await asyncio.gather(*(x.score(s, metrics) for s in SAMPLES * 3 for x in (a, b)))
        seen = (low.request_count, high.request_count)
    by_backend = [runs[0::2], runs[1::2]]
    assert {(sc.metric, sc.value) for scores in by_backend[0] for sc in scores} == {
        ("faithfulness", 2.0),
        ("context_relevancy", 0.0),
    }
    assert {(sc.metric, sc.value) for scores in by_backend[1] for sc in scores} == {
        ("faithfulness", 10.0),
        ("context_relevancy", 10.0),
    }
    assert seen == (12, 12)  # 6 samples × 2 metrics, one call each, on each judge
    assert (cls.client, cls.dynamic_config) == before


async def test_the_bound_is_dingos_threshold_and_both_verdicts_agree():
    with JudgeServer(answer_fn=judge_answers_dingo.answer_fn) as srv:
        backend = get_backend("dingo", _judges(srv))
        scores = await backend.score(S, parse_metrics("faithfulness[threshold=8],context_relevancy[threshold=3]"))
    for s in scores:
        assert s.error is None and s.threshold in (8.0, 3.0)
        assert s.details["dingo_passed"] == s.passed == (s.value >= s.threshold)
        assert s.details["dingo_label"].endswith("_PASS" if s.passed else "_FAIL")


async def test_faithfulness_keeps_the_judges_score_when_its_verdicts_disagree():
    """LLMRAGFaithfulness reads the judge's "score" field, not its verdicts: a judge that
    marks every statement unfaithful but says 9.5 gets 9.5, and details say so."""

    def all_unfaithful(kind, a):
        if kind != "faithfulness":
            return a
        return {"statements": [{**st, "verdict": 0} for st in a["statements"]], "score": 9.5}

    with JudgeServer(answer_fn=judge_answers_dingo.shaped(all_unfaithful)) as srv:
        [s] = await get_backend("dingo", _judges(srv)).score(S, [parse_metric("faithfulness")])
    assert s.error is None and s.value == 9.5
    assert s.details["dingo_verdict_score"] == 0.0 and s.details["dingo_score_disagrees"] is True
    assert "judge's own 'score'" in s.details["note"]


def _drop(key):
    return lambda a: {k: v for k, v in a.items() if k != key}


# (case, metric, the answer the loopback judge gives dingo, words of the error, requests)
BAD_SHAPES = [
    ("no score", "faithfulness", _drop("score"), "has no numeric 'score' (None), which dingo reads as 0", 1),
    # dingo's comparison fails on a text score; it asks twice more (its own retries)
    ("text score", "faithfulness", lambda a: {**a, "score": "7"}, "QUALITY_BAD.TypeError: '>=' not supported", 3),
    ("score 11", "faithfulness", lambda a: {**a, "score": 11}, "returned 11, outside its own range [0, 10]", 1),
    ("no question", "answer_relevancy", _drop("question"), "the judge's answer 1 generated no question", 3),
    ("rating 3", "context_relevancy", lambda a: {"rating": 3}, "the judge rated the contexts 3, not 0, 1 or 2", 1),
    ("no rating", "context_relevancy", lambda a: {"score": 2}, "rated the contexts None, not 0, 1 or 2", 1),
    ("no statement", "context_recall", lambda a: {"classifications": []}, "classified no statement", 1),
    (
        "attributed 2",
        "context_recall",
        lambda a: {"classifications": [{"statement": "x", "attributed": 2}]},
        "statement 1 is attributed 2, not 0 or 1",
        1,
    ),
    (
        "text verdict",
        "context_utilization",
        lambda a: {"verdict": "false", "reason": "r"},
        "verdict for context 1 is 'false', not true/false",
        3,
    ),
    ("no json", "context_recall", lambda a: "All of it is attributable.", "QUALITY_BAD.ConvertJsonError", 1),
]


@pytest.mark.parametrize("case,metric,bad,words,requests", BAD_SHAPES, ids=[c[0] for c in BAD_SHAPES])
async def test_a_bad_answer_is_a_task_error_with_the_reason(case, metric, bad, words, requests):
    kind = {"context_utilization": "context_precision"}.get(metric, metric)
    fix = judge_answers_dingo.shaped(lambda k, a: bad(a) if k == kind else a)
    with JudgeServer(answer_fn=fix) as srv:
        [s] = await get_backend("dingo", _judges(srv)).score(S, [parse_metric(metric)])
        assert srv.request_count == requests
    assert s.value is None and s.passed is None and words in s.error, s.error  # an error, never a fail
    assert s.error.startswith(f"dingo {DINGO_METRICS[metric].cls}: ") and "\n" not in s.error


@pytest.mark.parametrize("metric", sorted(DINGO_METRICS))
async def test_a_failed_call_is_an_error_never_a_fail_and_is_asked_once(metric):
    """Dingo reports a failed call as score None, status True (its "bad"), label
    QUALITY_BAD.<exception> — and retries it twice with a sleep: the backend says it is an
    error with the judge's words, and the judge layer (which has retried as configured) is
    not asked again."""
    secret = "sk-live-THISMUSTNOTLEAK0123456789abcdef"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("401", n=50)
        [s] = await get_backend("dingo", _judges(srv)).score(S, [parse_metric(metric)])
        assert srv.request_count == 1
    assert (
        s.value is None and s.passed is None and s.error.startswith(f"dingo {DINGO_METRICS[metric].cls}: QUALITY_BAD.")
    )
    assert "401" in s.error and "\n" not in s.error and secret not in s.error
    assert s.details["dingo_label"].startswith("QUALITY_BAD.") and "dingo_passed" not in s.details


async def test_a_failed_embedding_is_the_answer_relevancy_error():
    with JudgeServer(answer_fn=judge_answers_dingo.answer_fn) as srv:
        judges = build_judges(
            JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
            embedding=EmbeddingConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="e", max_retries=0),
            cache=False,
        )
        [s] = await get_backend("dingo", judges).score(S, [parse_metric("answer_relevancy")])
    assert s.value is None and "ANSWER_RELEVANCY_ERROR" in s.error and "127.0.0.1:9" in s.error


def test_parameters_dingo_reads_and_no_other():
    backend = get_backend("dingo", None)
    assert backend.param_error(parse_metric("answer_relevancy[strictness=2]")) is None
    assert backend.param_error(parse_metric("faithfulness[strictness=2]")) == (
        "metric 'faithfulness[strictness=2]': unknown parameter 'strictness' (accepted: threshold)"
    )
    assert backend.requirements(parse_metric("answer_relevancy")) == {"chat", "embedder"}
    assert backend.requirements(parse_metric("faithfulness")) == {"chat"}


async def test_strictness_is_the_number_of_generated_questions():
    with JudgeServer(answer_fn=judge_answers_dingo.answer_fn) as srv:
        [s] = await get_backend("dingo", _judges(srv)).score(S, [parse_metric("answer_relevancy[strictness=2]")])
        assert (srv.chat_count, srv.embedding_count) == (2, 2)
    assert s.error is None and len(s.details["dingo_generated_questions"]) == 2


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
async def test_dry_run_counts_what_the_judge_layer_sees(sample):
    """The table's calls, measured: the server's chat and embedding counts (no cache) equal
    ``--dry-run``'s estimate, metric by metric, at K = 3 and K = 2."""
    with JudgeServer(answer_fn=judge_answers_dingo.answer_fn) as srv:
        backend = get_backend("dingo", _judges(srv, cache=False))
        for ref in parse_metrics(ALL):
            srv.reset_counts()
            [s] = await backend.score(sample, [ref])
            [row] = estimate_calls("dingo", [sample], [ref])
            assert s.error is None, s.error
            assert (srv.chat_count, srv.embedding_count) == (row["calls"], row["embedding_calls"]), ref.name
            assert (s.cost.calls, s.cost.embedding_calls) == (row["calls"], row["embedding_calls"])


def test_the_raw_scale_is_shown_by_unified_eval_metrics():
    d = describe_metric("LLMRAGContextPrecision")
    assert d["name"] == "context_utilization" and "dingo" in d["backends"]
    assert d["scales"]["dingo"].startswith("LLMRAGContextPrecision: ") and "no reference" in d["scales"]["dingo"]
    assert 'judge\'s own "score"' in describe_metric("faithfulness")["scales"]["dingo"]


@pytest.mark.slow
def test_no_network_no_stray_file_no_logging_change(tmp_path):
    """A fresh process (empty HOME and cwd, the switches unset) scores every dingo metric
    against the loopback server while every socket connect and DNS lookup is recorded: only
    127.0.0.1 is contacted, no file appears, and the root logger is as it was before dingo
    was imported (dingo's logger is the root logger)."""
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    code = textwrap.dedent(f"""
        import asyncio, json, logging, socket, sys
        sys.path.insert(0, {str(TESTS)!r})
        seen = []
        real_connect, real_gai = socket.socket.connect, socket.getaddrinfo
        def connect(self, addr): seen.append(str(addr[0])); return real_connect(self, addr)
        def gai(host, *a, **k): seen.append(str(host)); return real_gai(host, *a, **k)
        socket.socket.connect, socket.getaddrinfo = connect, gai
        root = logging.getLogger()
        before = (root.level, list(root.handlers))
        import judge_answers_dingo
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
        from unified.metrics import parse_metrics
        from unified.sample import Sample
        s = Sample(user_input="q?", response="a.", retrieved_contexts=["c."], reference="r.", id="x")
        async def main():
            with JudgeServer(answer_fn=judge_answers_dingo.answer_fn) as srv:
                j = build_judges(JudgeConfig(base_url=srv.base_url, model="m"), cache=False,
                                 embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="e"))
                out = await get_backend("dingo", j).score(s, parse_metrics({ALL!r}))
                await j.aclose()
            print(json.dumps({{"errors": [x.error for x in out], "hosts": sorted(set(seen)),
                               "logging": (root.level, list(root.handlers)) == before}}))
        asyncio.run(main())
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI") and k not in quiet_env()}
    env["HOME"] = str(home)
    res = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["errors"] == [None] * 5
    assert set(out["hosts"]) <= {"127.0.0.1"} and out["logging"] is True, out
    assert list(cwd.iterdir()) == [] and list(home.rglob("*")) == []
