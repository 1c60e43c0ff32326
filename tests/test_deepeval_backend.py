"""The DeepEval backend's plumbing: our model honours ``schema`` and never triggers
deepeval's retry-without-schema, errors become one-line Score errors with deepeval's
message, fresh metric instances keep concurrent cases apart, and no ``.deepeval/`` folder
or telemetry appears.

The loopback judge server answers random-but-valid JSON: plumbing, never judgment quality.
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

pytest.importorskip("deepeval", reason="the deepeval extra is not installed")

from judge_server import JudgeServer
from pydantic import BaseModel
from support import import_in_clean_env

from unified.adapters import get_backend
from unified.adapters.deepeval.backend import DeepEvalJudgeError, JudgeDeepEvalLLM
from unified.adapters.registry import quiet_env
from unified.judge import JudgeConfig, build_judges
from unified.judge.base import ChatJudge, Judges
from unified.metrics import get_metric, parse_metric, parse_metrics
from unified.sample import Sample

QUIET_ENV = quiet_env()  # every room's switches (the backends set them all)

pytestmark = pytest.mark.deepeval

SAMPLE = Sample(
    user_input="What is the capital of France?",
    response="Paris.",
    retrieved_contexts=["Paris is the capital of France."],
    reference="Paris",
    id="s1",
)


@pytest.fixture(autouse=True)
def _key_and_cwd(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")
    monkeypatch.chdir(tmp_path)


def _judges(srv: JudgeServer) -> Judges:
    return build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0))


class _Verdict(BaseModel):
    verdict: str


class _RaisingJudge(ChatJudge):
    """Counts calls and fails with a TypeError, as a buggy client might."""

    model = "raising"

    def __init__(self) -> None:
        self.calls = 0

    async def ask(self, messages, schema, **params):
        self.calls += 1
        raise TypeError("bad argument inside the client")

    async def ask_text(self, messages, **params):
        self.calls += 1
        raise TypeError("bad argument inside the client")


def test_telemetry_switches_are_set_after_import():
    assert import_in_clean_env("unified.adapters.deepeval.backend", list(QUIET_ENV)) == QUIET_ENV


async def test_model_returns_schema_instance_and_text(judge_server):
    model = JudgeDeepEvalLLM(_judges(judge_server))
    out = await model.a_generate("Is it? Answer as JSON.", schema=_Verdict)
    assert isinstance(out, _Verdict)
    text = await model.a_generate("Say something.")
    assert isinstance(text, str) and text
    assert judge_server.chat_count == 2
    assert model.get_model_name() == "unified:fake"


async def test_type_error_in_judge_does_not_double_calls():
    judge = _RaisingJudge()
    model = JudgeDeepEvalLLM(Judges(chat=judge))
    with pytest.raises(DeepEvalJudgeError, match="TypeError: bad argument"):
        await model.a_generate_with_schema("prompt", schema=_Verdict)
    assert judge.calls == 1  # deepeval's retry-without-schema was not triggered


async def test_missing_field_gives_a_one_line_error_without_judge_calls(judge_server):
    backend = get_backend("deepeval", _judges(judge_server))
    bare = Sample(user_input="q?", response="a", id="bare")
    [score] = await backend.score(bare, [parse_metric("context_recall")])
    assert score.value is None
    assert score.error == ("sample 'bare': field 'retrieved_contexts' is missing or empty (needed by context_recall)")
    assert judge_server.request_count == 0


async def test_no_retrieved_context_is_an_error_not_a_score_over_nothing(judge_server):
    # a retriever that found nothing ([] is a valid retrieval): DeepEval scored it anyway
    # (ContextualPrecision is 0 with no verdicts; faithfulness 10 on this judge's answers)
    backend = get_backend("deepeval", _judges(judge_server))
    empty = SAMPLE.model_copy(update={"retrieved_contexts": [], "id": "empty"})
    scores = await backend.score(empty, parse_metrics("faithfulness,context_precision,context_recall"))
    assert [s.value for s in scores] == [None, None, None]
    assert scores[0].error == "sample 'empty': no retrieved contexts; faithfulness needs at least one"
    assert judge_server.request_count == 0


async def test_judge_http_error_becomes_deepeval_error(judge_server):
    judge_server.force_fault("500", n=50)
    backend = get_backend("deepeval", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("faithfulness")])
    assert score.value is None and score.raw is None
    assert score.error.startswith("deepeval FaithfulnessMetric: ")
    assert "500" in score.error and "\n" not in score.error
    assert "sk-loopback" not in score.error


async def test_invalid_json_becomes_deepeval_error(judge_server):
    judge_server.force_fault("nonjson", n=50)
    backend = get_backend("deepeval", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("answer_relevancy")])
    assert score.value is None
    assert score.error.startswith("deepeval AnswerRelevancyMetric: ")


async def test_hallucination_reads_retrieved_contexts_and_says_so(judge_server):
    backend = get_backend("deepeval", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("hallucination")])
    assert score.error is None and 0.0 <= score.value <= 10.0
    assert "retrieved_contexts" in score.details["note"]
    # the prompt deepeval built carries the retrieved context as its "context"
    assert any(SAMPLE.retrieved_contexts[0] in json.dumps(r) for r in judge_server.requests)


async def test_concurrent_cases_keep_their_own_scores(judge_server):
    """Fresh metric per case: scoring many samples at once gives each the score it gets
    alone (deepeval keeps state on the metric object)."""
    backend = get_backend("deepeval", _judges(judge_server), concurrency=8)
    samples = [
        Sample(
            user_input=f"Question {i}?",
            response=f"Answer number {i}.",
            retrieved_contexts=[f"Context {i}.", "Other."],
            reference=f"Ref {i}",
            id=f"s{i}",
        )
        for i in range(6)
    ]
    refs = parse_metrics("faithfulness,context_relevancy")
    together = await asyncio.gather(*(backend.score(s, refs) for s in samples))
    alone = [await backend.score(s, refs) for s in samples]
    assert [[x.raw for x in row] for row in together] == [[x.raw for x in row] for row in alone]
    assert all(x.sample_id == s.id for s, row in zip(samples, together) for x in row)


async def test_threshold_and_passed(judge_server):
    backend = get_backend("deepeval", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("context_precision")])
    assert score.threshold == get_metric("context_precision").threshold
    assert score.passed == (score.value >= score.threshold)
    assert score.details["deepeval_success"] == score.passed


@pytest.mark.slow
def test_no_deepeval_folder_or_dotenv_in_cwd(tmp_path):
    """A fresh process in an empty cwd (with a .env that must NOT be loaded) imports the
    backend and scores one case against a loopback server: no .deepeval/ appears, the
    .env variable stays unset, HOME stays empty."""
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    (cwd / ".env").write_text("UNIFIED_TEST_DOTENV_LEAK=1\n")
    tests_dir = Path(__file__).parent
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(tests_dir)!r})
        from judge_server import JudgeServer
        from unified.adapters import get_backend
        from unified.judge import JudgeConfig, build_judges
        from unified.metrics import parse_metric
        from unified.sample import Sample
        s = Sample(user_input="q?", response="a.", retrieved_contexts=["c."])
        with JudgeServer() as srv:
            b = get_backend("deepeval", build_judges(JudgeConfig(base_url=srv.base_url, model="f")))
            [sc] = asyncio.run(b.score(s, [parse_metric("faithfulness")]))
        assert sc.error is None, sc.error
        print("LEAK" if "UNIFIED_TEST_DOTENV_LEAK" in os.environ else "CLEAN")
    """)
    env = {**os.environ, "HOME": str(home), "OPENAI_API_KEY": "sk-loopback"}
    for k in QUIET_ENV:  # the module must set these itself
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "CLEAN"
    assert sorted(p.name for p in cwd.iterdir()) == [".env"]
    assert list(home.rglob("*")) == []
