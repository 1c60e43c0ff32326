"""The autoevals backend: fidelity to autoevals called as its docs show, the judge answers
autoevals would count though they are none (each refused with what the judge said), the
client that keeps every call in our judge layer (no vendor gateway, no other host),
parameters, calls per sample and autoevals' embedding cache.

Fidelity method (as for opik): score with the backend against the loopback judge server
on a SQLite judge cache; then call autoevals directly, written from its documentation —
``init(client=..., default_model=...)`` and ``await Scorer().eval_async(...)`` — with our
client over a second judge bundle on the SAME cache: the server sees no new request and
the values agree. ``judge_answers_autoevals`` keeps the loopback's verdicts 0/1
(plumbing, never judgment quality).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("autoevals", reason="the autoevals extra is not installed")

import judge_answers_autoevals
from autoevals import init
from autoevals import ragas as ar
from autoevals.string import EmbeddingSimilarity
from judge_server import JudgeServer

from unified.adapters import describe_metric, estimate_calls, get_backend
from unified.adapters.autoevals import AUTOEVALS_METRICS
from unified.adapters.autoevals.backend import MODEL, JudgeOpenAI, schema_model
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

pytestmark = pytest.mark.autoevals

S = Sample(
    user_input="What is the capital of France, and which river runs through it?",
    response="Paris is the capital of France. The Seine runs through Paris.",
    retrieved_contexts=[
        "Paris is the capital and largest city of France.",
        "The Seine flows through Paris before reaching the English Channel.",
    ],
    reference="The capital of France is Paris; the Seine flows through it.",
    id="ae-1",
)
CTX = S.retrieved_contexts
# The direct calls, written from autoevals' documentation, independently of the adapter.
DIRECT = {
    "faithfulness": (ar.Faithfulness, dict(input=S.user_input, output=S.response, context=CTX)),
    "answer_relevancy": (ar.AnswerRelevancy, dict(input=S.user_input, output=S.response, context=CTX)),
    "context_relevancy": (ar.ContextRelevancy, dict(input=S.user_input, output=S.response, context=CTX)),
    "context_recall": (
        ar.ContextRecall,
        dict(input=S.user_input, output=S.response, expected=S.reference, context=CTX),
    ),
    "context_precision": (
        ar.ContextPrecision,
        dict(input=S.user_input, output=S.response, expected=S.reference, context=CTX),
    ),
    "answer_correctness": (ar.AnswerCorrectness, dict(input=S.user_input, output=S.response, expected=S.reference)),
}


def _judges(srv: JudgeServer, cache_path=None):
    cfg = JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0)
    emb = EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed")
    if cache_path is None:
        return build_judges(cfg, embedding=emb, cache=False)
    return build_judges(cfg, embedding=emb, cache_path=cache_path)


async def _score(answer_fn, metrics: str, sample: Sample = S):
    with JudgeServer(answer_fn=answer_fn) as srv:
        judges = _judges(srv)
        scores = await get_backend("autoevals", judges).score(sample, parse_metrics(metrics))
        await judges.aclose()
        return scores, srv


def test_direct_table_covers_every_mapped_metric():
    assert set(DIRECT) == set(AUTOEVALS_METRICS)


@pytest.mark.parametrize("metric", sorted(AUTOEVALS_METRICS))
async def test_adapter_equals_direct_autoevals_call(metric, tmp_path):
    cache = tmp_path / "c.sqlite"
    row = AUTOEVALS_METRICS[metric]
    with JudgeServer(answer_fn=judge_answers_autoevals.answer_fn) as srv:
        judges_a = _judges(srv, cache)
        [score] = await get_backend("autoevals", judges_a).score(S, [parse_metric(metric)])
        await judges_a.aclose()
        assert score.error is None, score.error
        assert (srv.chat_count, srv.embedding_count) == (row.calls[0], row.calls[2]), "the table's calls, measured"

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        init(client=JudgeOpenAI(judges_b), default_model=MODEL)  # autoevals' documented global client
        cls, kwargs = DIRECT[metric]
        with task_scope("autoevals", metric, S.id):  # the cache's per-task occurrence index
            direct = await cls().eval_async(**kwargs)
        init()
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    assert 0.0 <= direct.score <= 1.0
    assert score.raw == pytest.approx(direct.score, abs=1e-12)
    assert score.value == pytest.approx(10 * direct.score, abs=1e-9)
    assert score.details["autoevals_scorer"] == row.cls
    assert (score.cost.calls, score.cost.embedding_calls) == (row.calls[0], row.calls[2])


def _with(override):
    """``judge_answers_autoevals.answer_fn`` with ``override(answer, body)`` applied."""

    def answer(body):
        a = judge_answers_autoevals.answer_fn(body)
        return override(a, body) if isinstance(a, dict) else a

    return answer


def _verdict_2(a, body):
    for key in ("verdict", "attributed"):
        if key in a:
            a[key] = 2
    for item in a.get("faithfulness", []) + a.get("statements", []):
        if isinstance(item, dict):  # the statement extraction's items are texts
            item.update({k: 2 for k in ("verdict", "attributed") if k in item})
    return a


async def test_a_verdict_that_is_not_0_or_1_is_refused_with_what_the_judge_said():
    scores, _ = await _score(_with(_verdict_2), "faithfulness,context_recall,context_precision")
    for s in scores:
        assert s.value is None and s.raw is None, (s.metric, s.value)
        assert s.error.startswith(f"autoevals {AUTOEVALS_METRICS[s.metric].cls}: "), s.error
        # a mean of 2s leaves [0, 1] (autoevals refuses it); a single 2 inside it is ours to refuse
        assert "2" in s.error and ("0 or 1" in s.error or "must be between 0 and 1" in s.error), s.error


async def test_a_verdict_2_among_zeros_stays_in_range_and_is_still_refused():
    def one_two(a, body):
        if "faithfulness" in a and a["faithfulness"]:
            for item in a["faithfulness"]:
                item["verdict"] = 0
            a["faithfulness"][0]["verdict"] = 2
            a["faithfulness"] += [{**a["faithfulness"][0], "verdict": 0} for _ in range(3)]
        return a

    def four_statements(a, body):
        if "statements" in a and isinstance(a["statements"], list) and a["statements"]:
            a["statements"] = [str(x) for x in a["statements"]][:1] * 4
        return one_two(a, body)

    [s], _ = await _score(_with(four_statements), "faithfulness")
    assert s.value is None and s.error == (
        "autoevals Faithfulness: the judge answered verdict 2 where autoevals asks 0 or 1; no score"
    )


async def test_statements_the_judge_left_unjudged_are_refused():
    def drop_one(a, body):
        if "faithfulness" in a and len(a["faithfulness"]) > 1:
            a["faithfulness"] = a["faithfulness"][:1]
        return a

    def three_statements(a, body):
        if isinstance(a.get("statements"), list) and a["statements"] and isinstance(a["statements"][0], str):
            a["statements"] = ["Paris is the capital.", "The Seine runs through it.", "It is large."]
        return drop_one(a, body)

    [s], _ = await _score(_with(three_statements), "faithfulness")
    assert s.value is None
    assert (
        s.error
        == "autoevals Faithfulness: the judge judged 1 of 3 statements; autoevals divides by the judged ones; no score"
    )


async def test_a_reference_without_statements_is_no_zero():
    def none(a, body):
        if isinstance(a.get("statements"), list) and (not a["statements"] or isinstance(a["statements"][0], dict)):
            a["statements"] = []
        return a

    [s], _ = await _score(_with(none), "context_recall")
    assert s.value is None and "found no statement in the reference, which autoevals scores 0" in s.error


async def test_no_statement_at_all_is_autoevals_division_by_zero_explained():
    def empty(a, body):
        if isinstance(a.get("statements"), list):
            a["statements"] = []
        if "faithfulness" in a:
            a["faithfulness"] = []
        return a

    [s], _ = await _score(_with(empty), "faithfulness")
    assert s.value is None and s.error.startswith("autoevals Faithfulness: ZeroDivisionError: division by zero")
    assert "the statements the judge returned" in s.error


async def test_a_noncommittal_flag_of_2_is_refused():
    [s], _ = await _score(
        _with(lambda a, b: {**a, "noncommittal": 2} if "noncommittal" in a else a), "answer_relevancy"
    )
    assert s.value is None and "noncommittal 2 where autoevals asks 0 or 1" in s.error


async def test_a_paraphrase_longer_than_the_contexts_keeps_autoevals_clip_and_says_so():
    def long(a, body):
        if "sentences" in a:
            a["sentences"] = [{"sentence": "x" * 500, "reasons": ["paraphrased"]}]
        return a

    [s], _ = await _score(_with(long), "context_relevancy")
    assert s.error is None and s.raw == 1.0
    assert s.details["clipped_from"] == pytest.approx(500 / len("\n".join(CTX)))
    assert s.reason == "x" * 500 + " — paraphrased"


async def test_a_judge_failure_is_one_scrubbed_line():
    secret = "sk-live-THISMUSTNOTLEAK0123456789abcdef"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("401", n=50)
        judges = _judges(srv)
        [s] = await get_backend("autoevals", judges).score(S, [parse_metric("context_precision")])
        await judges.aclose()
    assert s.value is None and s.error.startswith("autoevals ContextPrecision: JudgeHTTPError") and "401" in s.error
    assert secret not in s.error and "\n" not in s.error


async def test_autoevals_embedding_cache_keeps_nothing_of_a_finished_evaluation():
    before = set(EmbeddingSimilarity._CACHE)
    [s], srv = await _score(judge_answers_autoevals.answer_fn, "answer_correctness")
    assert s.error is None and srv.embedding_count == 2
    assert set(EmbeddingSimilarity._CACHE) == before


def test_parameters_go_to_the_scorer_and_the_others_are_refused():
    b = get_backend("autoevals", None)
    assert b.param_error(parse_metric("answer_relevancy[strictness=2]")) is None
    assert b.param_error(parse_metric("answer_correctness[factuality_weight=1,answer_similarity_weight=0]")) is None
    assert b.param_error(parse_metric("answer_relevancy[temperature=0]")) == (
        "metric 'answer_relevancy[temperature=0]': unknown parameter 'temperature' (accepted: strictness, threshold)"
    )


async def test_strictness_is_the_number_of_generated_questions():
    [s], srv = await _score(judge_answers_autoevals.answer_fn, "answer_relevancy[strictness=2]")
    assert s.error is None and srv.chat_count == 2 and s.cost.calls == 2


def test_the_dry_run_uses_the_measured_calls_and_the_table_shows_the_scale():
    rows = estimate_calls("autoevals", [S, S], parse_metrics("faithfulness,answer_relevancy"))
    assert [(r["calls"], r["embedding_calls"]) for r in rows] == [(4, 0), (6, 12)]
    d = describe_metric("context_precision")
    assert "autoevals" in d["backends"] and "one verdict 0/1 on the joined contexts" in d["scales"]["autoevals"]
    assert get_backend("autoevals", None).requirements(parse_metric("answer_relevancy")) == {"chat", "embedder"}


def test_the_function_schemas_become_strict_models():
    m = schema_model(ar.STATEMENT_FAITHFULNESS_SCHEMA, "judge_statements")
    ok = m.model_validate({"faithfulness": [{"statement": "s", "verdict": 1, "reason": "r"}]})
    assert ok.model_dump(by_alias=True) == {"faithfulness": [{"statement": "s", "verdict": 1, "reason": "r"}]}
    with pytest.raises(ValueError):
        m.model_validate({"faithfulness": [{"statement": "s", "reason": "r"}]})  # no verdict
    with pytest.raises(ValueError, match="cannot pass on"):
        schema_model({"type": "object", "properties": {"x": {"type": "null"}}}, "odd")


async def test_the_client_answers_forced_function_calls_only(judge_server):
    judges = _judges(judge_server)
    client = JudgeOpenAI(judges)
    with pytest.raises(ValueError, match="one forced function call"):
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(NotImplementedError):
        await client.responses.create(model="gpt-5-mini", input=[])
    await judges.aclose()
    assert judge_server.request_count == 0


@pytest.mark.slow
def test_no_vendor_gateway_no_other_host(tmp_path):
    """A fresh process (empty HOME and cwd, no OPENAI_*/BRAINTRUST_* settings) scores every
    autoevals metric against the loopback server while every socket connect and DNS
    lookup is recorded: only 127.0.0.1 — autoevals' fallback without a client, Braintrust's
    AI gateway, is never asked — and no file appears in HOME or the cwd."""
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
        import judge_answers_autoevals
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
        from unified.metrics import parse_metrics
        from unified.sample import Sample
        s = Sample(user_input="q?", response="An answer. Another.", retrieved_contexts=["c one.", "c two."],
                   reference="r.")
        with JudgeServer(answer_fn=judge_answers_autoevals.answer_fn) as srv:
            j = build_judges(JudgeConfig(base_url=srv.base_url, model="f"),
                             embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="e"), cache=False)
            b = get_backend("autoevals", j)
            metrics = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision,answer_correctness"
            out = asyncio.run(b.score(s, parse_metrics(metrics)))
        assert all(x.error is None for x in out), [x.error for x in out]
        print("PEERS", sorted(set(peers)))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "BRAINTRUST_"))}
    env["HOME"] = str(home)
    env["OPENAI_API_KEY"] = "loopback-no-key"  # our judge's client wants one; autoevals must not use it
    out = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "PEERS ['127.0.0.1']", out.stdout
    assert list(cwd.iterdir()) == [] and list(home.rglob("*")) == []
