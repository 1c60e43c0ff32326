"""The TruLens backend's plumbing: every call goes through our judge (no provider package,
no key, no other host — NLTK's downloader is never reached), calls made on TruLens's own
worker threads are billed to the right task, a rating outside TruLens's scale or TruLens's
"unparsable" sentinel is refused, a judge failure is one scrubbed line after exactly one
attempt (TruLens's endpoint retries are off), and the dry-run estimate matches the calls.

The loopback judge server answers random-but-valid JSON: plumbing, never judgment quality.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("trulens.feedback", reason="the trulens extra is not installed")

from judge_answers_trulens import sentences, trulens_answer_fn
from judge_server import JudgeServer, binary_answer_fn

from unified.adapters import get_backend
from unified.adapters.estimate import estimate_calls
from unified.adapters.trulens.backend import JudgeTruLensProvider
from unified.judge import JudgeConfig, build_judges
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

pytestmark = pytest.mark.trulens

SAMPLE = Sample(
    user_input="What is the capital of France?",
    response="Paris is the capital. It lies on the Seine. It is large.",
    retrieved_contexts=["Paris is the capital of France.", "The Seine flows through Paris."],
    reference="Paris",
    id="s1",
)
ALL = "faithfulness,answer_relevancy,context_relevancy,answer_correctness"
TESTS = Path(__file__).parent


async def _score(srv: JudgeServer, metrics: str, sample: Sample = SAMPLE, **opts):
    judges = build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), cache=False)
    backend = get_backend("trulens", judges, **opts)
    try:
        return await backend.score(sample, parse_metrics(metrics))
    finally:
        await backend.aclose()
        await judges.aclose()


async def test_calls_on_trulens_threads_are_billed_to_their_own_metric():
    """Groundedness fans its statements out to TruLens's thread pool; each metric's
    Score.cost still counts exactly the requests it caused."""
    with JudgeServer(answer_fn=trulens_answer_fn(binary_answer_fn())) as srv:
        scores = await _score(srv, ALL)
        total = srv.chat_count
    assert all(s.ok for s in scores), [s.error for s in scores]
    calls = {s.metric: s.cost.calls for s in scores}
    assert calls == {
        "faithfulness": 1 + len(sentences(SAMPLE.response)),
        "answer_relevancy": 1,
        "context_relevancy": 2,
        "answer_correctness": 1,
    }
    assert sum(calls.values()) == total
    for s in scores:
        assert 0.0 <= s.raw <= 1.0 and s.value == pytest.approx(10 * s.raw)
        assert s.details["trulens_version"]


async def test_rating_outside_trulens_scale_is_refused():
    with JudgeServer(answer_fn=lambda body: {"criteria": "c", "supporting_evidence": "e", "score": 7}) as srv:
        (s,) = await _score(srv, "answer_relevancy")
        assert srv.chat_count == 1
    assert s.value is None
    assert s.error.startswith("trulens relevance_with_cot_reasons: ") and "0-3 rating" in s.error


async def test_unparsable_sentinel_is_refused_not_scored(monkeypatch):
    """TruLens reports a statement it could not grade as -1.0; clipping that to 0 would be
    a confident "not grounded" built on no verdict."""
    monkeypatch.setattr(
        JudgeTruLensProvider,
        "relevance_with_cot_reasons",
        lambda self, prompt, response: (-1.0, {"reason": "unparsable"}),
    )
    with JudgeServer() as srv:
        (s,) = await _score(srv, "answer_relevancy")
    assert s.value is None and s.details["raw_out_of_range"] == -1.0
    assert "outside its own range [0, 1]" in s.error


@pytest.mark.parametrize(
    "split, says",
    [
        (lambda text: "", "returned no statement"),
        (
            lambda text: "Sure! Here are the sentences:\n" + "\n".join(sentences(text)),
            "'Sure! Here are the sentences:'",
        ),
        (lambda text: sentences(text)[0], "left part of the response out"),
        (lambda text: "\n".join(sentences(text)).replace(".", ""), None),  # a split that drops the stops is fine
        (lambda text: "\n".join(f"{i}. {t}" for i, t in enumerate(sentences(text), 1)), None),  # numbered: fine
    ],
)
async def test_a_sentence_split_that_is_not_the_response_is_refused(split, says):
    """With ``use_sent_tokenize=False`` TruLens grades whatever lines the judge's split
    returns: an empty split scored 10.0 on the statement '', a chatty preamble was graded
    as a claim, and a split that dropped a sentence left it ungraded, each as a valid value."""
    from judge_answers_trulens import SPLITTER_MARK

    def answer(body: dict):
        msgs = body["messages"]
        if SPLITTER_MARK in json.dumps(msgs):
            return split(msgs[-1]["content"])
        return {"criteria": "c", "supporting_evidence": "e", "score": 3}

    with JudgeServer(answer_fn=answer) as srv:
        (s,) = await _score(srv, "faithfulness")
    if says is None:
        assert s.ok and s.value == 10.0
    else:
        assert s.value is None and says in s.error and s.error.endswith("; no score")


async def test_one_ungraded_context_is_refused_not_averaged(monkeypatch):
    """context_relevancy averages one result per context: a -1 ("could not grade") beside
    two 1.0s averaged to 0.33, inside [0, 1], and passed as a value."""
    answers = iter([(-1.0, {"reason": "unparsable"}), (1.0, {"reason": "ok"})])
    monkeypatch.setattr(
        JudgeTruLensProvider, "context_relevance_with_cot_reasons", lambda self, question, context: next(answers)
    )
    with JudgeServer() as srv:
        (s,) = await _score(srv, "context_relevancy")
    assert s.value is None and s.details["raw_out_of_range"] == -1.0


async def test_judge_failure_is_one_scrubbed_line_after_one_attempt():
    secret = "sk-proj-LEAKME0123456789abcdefABCDEF"
    with JudgeServer(fault_message=f"upstream said {secret}") as srv:
        srv.force_fault("500", 20)
        # a free-text request: the judge layer sends it once (max_retries=0); TruLens's
        # endpoint would retry 3 times with 2/4/8 s sleeps on top
        (s,) = await _score(srv, "answer_correctness")
        assert srv.chat_count == 1
    assert s.value is None
    assert s.error.startswith("trulens GroundTruthAgreement.agreement_measure: ")
    assert "request failed 1 time(s)" in s.error and "HTTP 500" in s.error
    assert secret not in s.error and "\n" not in s.error


async def test_missing_reference_and_unknown_parameter_make_no_call():
    assert "criteria" in get_backend("trulens").param_error(parse_metric("answer_relevancy[criteria=x]"))
    with JudgeServer() as srv:
        (s,) = await _score(
            srv, "answer_correctness", Sample(user_input="q", response="a", retrieved_contexts=["c"], id="n")
        )
        assert srv.chat_count == 0
    assert "reference" in s.error


async def test_dry_run_estimate_equals_calls_made():
    refs = parse_metrics(ALL)
    rows = estimate_calls("trulens", [SAMPLE], refs)
    with JudgeServer(answer_fn=trulens_answer_fn(binary_answer_fn())) as srv:
        scores = await _score(srv, ALL)
        assert sum(r["calls"] for r in rows) == srv.chat_count
    assert [r["calls"] for r in rows] == [s.cost.calls for s in scores]


def test_no_key_no_other_host_no_nltk_download(tmp_path):
    """In a fresh process without OPENAI_API_KEY: import the backend and score every metric
    against the loopback server while every socket connect and DNS lookup is recorded, and
    ``nltk.download`` fails the run if called. Only 127.0.0.1 is contacted."""
    code = textwrap.dedent(f"""
        import asyncio, json, socket, sys
        sys.path.insert(0, {str(TESTS)!r})
        seen = []
        real_connect, real_gai = socket.socket.connect, socket.getaddrinfo
        def connect(self, addr): seen.append(str(addr[0])); return real_connect(self, addr)
        def gai(host, *a, **k): seen.append(str(host)); return real_gai(host, *a, **k)
        socket.socket.connect, socket.getaddrinfo = connect, gai
        import nltk
        nltk.download = lambda *a, **k: sys.exit("nltk.download was called")
        from judge_answers_trulens import trulens_answer_fn
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import JudgeConfig, build_judges
        from unified.metrics import parse_metrics
        from unified.sample import Sample
        async def main():
            with JudgeServer(answer_fn=trulens_answer_fn()) as srv:
                j = build_judges(JudgeConfig(base_url=srv.base_url, model="m", max_retries=0), cache=False)
                b = get_backend("trulens", j)
                s = await b.score(
                    Sample(user_input="q?", response="One. Two.", retrieved_contexts=["c"], reference="a", id="x"),
                    parse_metrics({ALL!r}))
                await b.aclose(); await j.aclose()
                print(json.dumps({{"errors": [x.error for x in s], "hosts": sorted(set(seen))}}))
        asyncio.run(main())
    """)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OPENAI")}
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["errors"] == [None] * 4
    assert set(out["hosts"]) <= {"127.0.0.1"}, out["hosts"]
    assert list(tmp_path.iterdir()) == []  # no stray files (no default.sqlite, no nltk_data)
