"""unified.integrations.scoring: the one scoring call under every framework integration.

On the loopback judge scripted by ``judge_answers_integrations.grounding_judge``: a
grounded answer scores 10, one about zebras 0, one mentioning ``brokenjudge`` fails.
The outcome must equal what ``evaluate`` gives for the same sample (the same run path),
and every failure must raise — never a value.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from judge_answers_integrations import grounding_judge
from judge_server import JudgeServer

from unified import Sample
from unified.api import evaluate
from unified.integrations.scoring import IntegrationError, IntegrationScorer, parse_backends

GOOD = {
    "id": "good",
    "user_input": "What is the capital of France?",
    "response": "Paris is the capital of France.",
    "retrieved_contexts": ["Paris is the capital of France.", "The Seine flows through Paris."],
}
BAD = {
    "id": "bad",
    "user_input": "What do zebras eat?",
    "response": "The moon is made of cheese.",
    "retrieved_contexts": ["Zebras graze on grass."],
}
BROKEN = {"id": "broken", "user_input": "brokenjudge?", "response": "Anything.", "retrieved_contexts": ["Text."]}


@pytest.fixture
def judge(monkeypatch):
    with JudgeServer(answer_fn=grounding_judge) as srv:
        monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "loopback")
        yield srv


def test_the_core_and_the_bridge_import_without_any_framework():
    code = (
        "import sys\n"
        "for m in ('ragas', 'deepeval', 'mlflow', 'phoenix'): sys.modules[m] = None\n"
        "import unified, unified.api\n"
        "from unified.integrations.scoring import IntegrationScorer\n"
        "print(IntegrationScorer('faithfulness').backend_label)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "native", r.stderr[-2000:]


def test_backend_argument_forms():
    assert parse_backends("faithfulness", "native") == (["native"], None)
    assert parse_backends("faithfulness", ["native", "ragas"]) == (["native", "ragas"], "median")
    assert parse_backends("faithfulness", "native,ragas,jury:mean") == (["native", "ragas"], "mean")
    members, method = parse_backends("faithfulness", "jury:majority")
    assert method == "majority" and members[0] == "native" and len(members) >= 2


@pytest.mark.parametrize(
    "backend, message",
    [
        ("jury:mode", "unknown jury method 'mode'"),
        ("nosuch", "unknown backend 'nosuch'"),
        (["native", "native"], "named twice"),
        (["native", "jury:median", "jury:mean"], "one jury at most"),
        ([], "give a backend name"),
    ],
)
def test_a_bad_backend_argument_is_refused_before_any_call(backend, message):
    with pytest.raises(ValueError, match=message):
        IntegrationScorer("faithfulness", backend)


def test_a_backend_that_does_not_implement_the_metric_is_refused():
    with pytest.raises(ValueError, match="'ragas' does not implement 'mrr'"):
        IntegrationScorer("mrr", "ragas")


def test_an_unknown_option_is_a_type_error():
    with pytest.raises(TypeError, match="unknown option"):
        IntegrationScorer("faithfulness", jduge="x")


def test_the_outcome_is_what_evaluate_gives(judge):
    scorer = IntegrationScorer("faithfulness", cache=False)
    good, bad = scorer.score(GOOD), scorer.score(Sample(**BAD))
    report = evaluate([GOOD, BAD], ["faithfulness"], quiet=True, progress=False, cache=False)
    want = {s.sample_id: s for s in report.iter_scores()}
    assert (good.value, bad.value) == (want["good"].value, want["bad"].value) == (10.0, 0.0)
    assert (good.score01, bad.score01) == (1.0, 0.0)
    assert good.passed is True and bad.passed is False and good.threshold == want["good"].threshold
    assert good.reason == want["good"].reason and good.members == {"native": 10.0}
    # every chat call the server answered is counted on the outcomes (both runs paid the same)
    assert good.calls + bad.calls == judge.chat_count / 2 > 0


def test_the_judge_cache_is_the_one_evaluate_uses(judge):
    scorer = IntegrationScorer("faithfulness")
    first = scorer.score(GOOD)
    served = judge.chat_count
    again = scorer.score(GOOD)
    assert judge.chat_count == served  # nothing sent twice
    assert (again.value, again.calls, again.cache_hits) == (first.value, 0, first.calls)


def test_async_scoring_runs_concurrently_off_the_loop(judge):
    scorer = IntegrationScorer("faithfulness", cache=False)

    async def both():
        return await asyncio.gather(scorer.ascore(GOOD), scorer.ascore(BAD))

    good, bad = asyncio.run(both())
    assert (good.value, bad.value) == (10.0, 0.0)
    # concurrent runs in threads: each counts its own calls, none lost or counted twice
    assert good.calls + bad.calls == judge.chat_count > 0


def test_a_failed_task_raises_never_a_value(judge):
    scorer = IntegrationScorer("faithfulness", cache=False, max_retries=0)
    with pytest.raises(IntegrationError) as e:
        scorer.score(BROKEN)
    assert "sample 'broken', faithfulness on native" in str(e.value)
    assert e.value.sample_id == "broken" and e.value.metric == "faithfulness"
    assert not isinstance(e.value, TypeError)  # DeepEval re-runs a metric that raises TypeError


def test_a_missing_field_raises_naming_it(judge):
    with pytest.raises(IntegrationError, match="response"):
        IntegrationScorer("faithfulness").score({"id": "q", "user_input": "a question"})


def test_a_row_that_is_no_sample_raises(judge):
    with pytest.raises(IntegrationError, match="input row"):
        # (an empty question is no longer one: a sample may have no question)
        IntegrationScorer("faithfulness").score({"user_input": ["a list"], "response": "x"})


def test_a_jury_reports_every_member(judge):
    out = IntegrationScorer("faithfulness", ["native", "ragas"], cache=False).score(GOOD)
    assert out.backend == "jury" and set(out.members) == {"native", "ragas"}
    assert out.value == 10.0 and out.reason.startswith("jury median 10.00/10 of native 10.00, ragas 10.00")


def test_a_jury_with_a_failed_member_is_a_half_result(judge):
    row = {**GOOD, "id": "half", "user_input": "ragasfail: what is the capital?"}
    scorer = IntegrationScorer("faithfulness", ["native", "ragas"], cache=False, max_retries=0)
    with pytest.raises(IntegrationError, match="half-result .* ragas: "):
        scorer.score(row)
    kept = IntegrationScorer(
        "faithfulness", ["native", "ragas"], cache=False, max_retries=0, allow_degraded=True
    ).score(row)
    assert kept.degraded and kept.members == {"native": 10.0} and kept.value == 10.0


def test_the_judge_is_given_the_way_evaluate_takes_it(monkeypatch):
    from unified.judge import JudgeConfig

    for name in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with JudgeServer(answer_fn=grounding_judge) as srv:
        as_dict = IntegrationScorer("faithfulness", judge={"base_url": srv.base_url, "model": "loopback"}, cache=False)
        as_config = IntegrationScorer("faithfulness", judge=JudgeConfig(base_url=srv.base_url, model="loopback"))
        first, second = as_dict.score(GOOD), as_config.score(BAD)
        assert (first.value, second.value) == (10.0, 0.0)
        assert first.calls + second.calls == srv.chat_count > 0


def test_no_judge_anywhere_is_one_clear_error(monkeypatch):
    for name in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(IntegrationError, match="faithfulness on native: .*judge"):
        IntegrationScorer("faithfulness").score(GOOD)
