"""The Lynx backend: Patronus AI's published prompt and verdict over our judge — fidelity
to the model card's usage, the strict parse (every answer that is not Lynx's JSON is a
task error quoting it, never a number), the question it needs, parameters and the dry
run's estimate.

Fidelity method: score with the backend against the loopback judge server on a SQLite
judge cache; then do what the model card shows — the prompt formatted with question,
document and answer as the one user message, the answer's JSON read — through a second
judge bundle on the SAME cache: the server sees no new request and the verdicts agree.
The loopback answers (``judge_answers_lynx``) are Lynx-shaped text: plumbing, never
judgment quality.
"""

from __future__ import annotations

import hashlib
import json

import judge_answers_lynx
import pytest
from judge_server import JudgeServer

from unified.adapters import describe_metric, estimate_calls, get_backend
from unified.adapters.lynx import LYNX_METRICS
from unified.adapters.lynx.backend import PROMPT, parse_verdict
from unified.judge import JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

S = Sample(
    user_input="Which river runs through Paris?",
    response="The Seine runs through Paris.",
    retrieved_contexts=["Paris is the capital of France.", "The Seine flows through Paris."],
    reference="The Seine.",
    id="lx-1",
)
#: sha256 of the model card's prompt, as published (a change to it must be deliberate)
MODEL_CARD_PROMPT_SHA256 = "0c9866fa13162668a4d743dc2448882f18163a6e5a88783cbfba2ec06c516f9b"


def _judges(srv: JudgeServer, cache_path=None):
    cfg = JudgeConfig(base_url=srv.base_url, model="lynx-8b", max_retries=0)
    return build_judges(cfg, cache_path=cache_path) if cache_path else build_judges(cfg, cache=False)


async def _score(answer, metrics: str = "faithfulness", sample: Sample = S):
    """Score with a loopback server whose every chat answer is ``answer`` (text)."""
    with JudgeServer(answer_fn=lambda body: answer) as srv:
        judges = _judges(srv)
        scores = await get_backend("lynx", judges).score(sample, parse_metrics(metrics))
        await judges.aclose()
        return scores, srv.chat_count


def test_the_prompt_is_the_model_cards_byte_for_byte():
    assert hashlib.sha256(PROMPT.encode()).hexdigest() == MODEL_CARD_PROMPT_SHA256
    assert PROMPT.count("{question}") == PROMPT.count("{context}") == PROMPT.count("{answer}") == 1


@pytest.mark.parametrize("metric", sorted(LYNX_METRICS))
async def test_backend_equals_the_model_cards_usage_on_the_same_cache(metric, tmp_path):
    cache = tmp_path / "c.sqlite"
    with JudgeServer(answer_fn=judge_answers_lynx.answer_fn) as srv:
        judges_a = _judges(srv, cache)
        [score] = await get_backend("lynx", judges_a).score(S, [parse_metric(metric)])
        await judges_a.aclose()
        assert srv.chat_count == 1 and score.error is None, score.error
        sent = srv.requests[0]["messages"]

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        # the model card: PROMPT.format(question=..., context=..., answer=...), one user message
        prompt = PROMPT.format(question=S.user_input, context="\n\n".join(S.retrieved_contexts), answer=S.response)
        with task_scope("lynx", metric, S.id):  # the cache's per-task occurrence index
            text = await judges_b.chat.ask_text([{"role": "user", "content": prompt}])
        await judges_b.aclose()
        assert srv.request_count == 0, "the direct call must replay the cache, not ask again"

    assert sent == [{"role": "user", "content": prompt}]
    answer = json.loads(text)
    assert score.raw == {"PASS": 1.0, "FAIL": 0.0}[answer["SCORE"]]
    assert score.value == 10 * score.raw and score.passed == (score.value >= score.threshold)
    assert score.reason == "\n".join(answer["REASONING"])
    assert score.details["verdict"] == answer["SCORE"] and score.details["lynx_metric"] == "lynx"
    assert score.cost.calls == 1


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("The answer is faithful. PASS", "is not one JSON object"),
        ('Sure! {"REASONING": ["ok"], "SCORE": "PASS"}', "is not one JSON object"),
        ('{"REASONING": ["ok"], "SCORE": "pass"}', 'gives SCORE "pass", not "PASS" or "FAIL"'),
        ('{"REASONING": ["ok"], "SCORE": 1}', 'gives SCORE 1, not "PASS" or "FAIL"'),
        ('{"REASONING": ["ok"], "SCORE": "PARTIAL"}', 'gives SCORE "PARTIAL"'),
        ('{"SCORE": "PASS"}', "has no REASONING"),
        ('{"REASONING": "ok"}', "has no SCORE"),
        ('{"REASONING": ["ok"], "SCORE": "PASS", "SCORE": "FAIL"}', "given twice"),
        ('[{"REASONING": ["ok"], "SCORE": "PASS"}]', "is not a JSON object"),
        ('{"REASONING": {"a": 1}, "SCORE": "FAIL"}', "neither text nor a list of texts"),
        ("", "is not one JSON object"),
    ],
)
async def test_every_answer_that_is_not_lynx_json_is_an_error_quoting_it(answer, said):
    [s], calls = await _score(answer)
    assert calls == 1
    assert s.value is None and s.raw is None and not s.passed
    assert s.error.startswith("lynx lynx: the judge's answer ") and said in s.error, s.error
    assert "\n" not in s.error and (answer.strip()[:20] in s.error if answer else "(empty)" in s.error)


async def test_a_fenced_verdict_and_a_reasoning_text_are_read():
    [s], _ = await _score('```json\n{"REASONING": "- supported by the document", "SCORE": "FAIL"}\n```')
    assert s.error is None and s.raw == 0.0 and s.value == 0.0
    assert s.reason == "- supported by the document"


def test_parse_verdict_reads_the_published_shape():
    assert parse_verdict('{"REASONING": ["- a", "- b"], "SCORE": "PASS"}') == (1.0, "- a\n- b")
    assert parse_verdict('  {"SCORE": "FAIL", "REASONING": []}  ') == (0.0, "")


async def test_a_row_without_a_question_is_refused_before_any_call():
    bare = Sample(response="It runs through Paris.", retrieved_contexts=["The Seine flows through Paris."], id="nq")
    [s], calls = await _score('{"REASONING": [], "SCORE": "PASS"}', sample=bare)
    assert calls == 0 and s.value is None
    assert "field 'user_input' is missing or empty" in s.error and "lynx backend" in s.error


async def test_a_judge_failure_is_one_scrubbed_line():
    secret = "sk-live-THISMUSTNOTLEAK0123456789abcdef"
    with JudgeServer(fault_message=f"bad key {secret}") as srv:
        srv.force_fault("401", n=5)
        judges = _judges(srv)
        [s] = await get_backend("lynx", judges).score(S, [parse_metric("hallucination")])
        await judges.aclose()
    assert s.value is None and s.error.startswith("lynx lynx: JudgeHTTPError") and "401" in s.error
    assert secret not in s.error and "\n" not in s.error


def test_parameters_are_refused_but_the_bound():
    backend = get_backend("lynx", None)
    assert backend.param_error(parse_metric("faithfulness[threshold=8]")) is None
    assert backend.param_error(parse_metric("faithfulness[temperature=0]")) == (
        "metric 'faithfulness[temperature=0]': unknown parameter 'temperature' (accepted: threshold)"
    )


def test_lynx_names_hallucination_and_the_dry_run_counts_one_call_per_metric():
    assert parse_metric("lynx").canonical == "hallucination"
    rows = estimate_calls("lynx", [S, S, S], parse_metrics("faithfulness,hallucination"))
    assert [r["calls"] for r in rows] == [3, 3] and [r["embedding_calls"] for r in rows] == [0, 0]
    d = describe_metric("faithfulness")
    assert "lynx" in d["backends"] and d["scales"]["lynx"].startswith('lynx: SCORE "PASS" (raw 1)')


async def test_the_version_in_every_score_is_the_prompts():
    with JudgeServer(answer_fn=judge_answers_lynx.answer_fn) as srv:
        judges = _judges(srv)
        [s] = await get_backend("lynx", judges).score(S, [parse_metric("faithfulness")])
        await judges.aclose()
    assert s.details["lynx_version"] == "model-card-" + MODEL_CARD_PROMPT_SHA256[:12]
    assert get_backend("lynx", None).fingerprint_extra() == {"framework": "lynx", "version": s.details["lynx_version"]}
