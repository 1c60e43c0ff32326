"""A length error names a loop as a loop (unified.judge.loops): raising max_tokens does not
fix a model that repeats itself, and the message must not say it would."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from unified.judge import JudgeConfig, task_scope
from unified.judge.base import JudgeLengthError, JudgeLoopError
from unified.judge.llama import LlamaCppJudge
from unified.judge.loops import RETRY_REPEAT_PENALTY, length_remedy, repeated_tail

CLAIM = '"The restaurant is located at 31 W Carrillo St.", '
CLAIMS = '{"claims": ["Finch & Fork serves breakfast.", ' + CLAIM * 9 + '"The restaurant is loc'


class Claims(BaseModel):
    claims: list[str]


def test_a_list_that_repeats_one_item_until_the_cap_is_a_loop():
    loop = repeated_tail(CLAIMS)
    assert loop is not None and loop.length == len(CLAIM) and loop.repeats >= 8
    assert "31 W Carrillo" in loop.describe()


@pytest.mark.parametrize(
    "text",
    [
        '{"verdicts": [' + '"yes", ' * 40,  # short legit repeats: an enum list, not a loop
        '{"claims": ["' + " ".join(f"claim number {i} says {i * 7} things" for i in range(60)),  # long, no loop
        "x" * 10,
        "",
    ],
)
def test_text_that_is_not_a_loop(text):
    assert repeated_tail(text) is None
    assert length_remedy(text) == "raise max_tokens"


def test_two_copies_are_not_yet_a_loop():
    assert repeated_tail('{"claims": [' + CLAIM * 2) is None


class CutLlama:
    """``create_chat_completion`` that answers ``text`` cut at the cap."""

    def __init__(self, text: str):
        self.text = text

    def create_chat_completion(self, messages, **kwargs):
        return {
            "choices": [{"message": {"content": self.text}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": kwargs.get("max_tokens") or 0},
        }


async def test_a_gguf_judge_that_loops_fails_naming_the_loop_not_the_cap():
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf"), llama=CutLlama(CLAIMS))  # loops twice
    with pytest.raises(JudgeLengthError) as e:
        await judge.ask([{"role": "user", "content": "list the claims"}], Claims)
    msg = str(e.value)
    assert (
        "the model looped" in msg and "it repeated a 50-character block" in msg and "The restaurant is located" in msg
    )
    assert "use a stronger judge" in msg and "raise max_tokens" not in msg


async def test_a_gguf_answer_cut_without_a_loop_still_says_raise_max_tokens():
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf"), llama=CutLlama('{"claims": ["a long first cl'))
    with pytest.raises(JudgeLengthError, match="raise max_tokens"):
        await judge.ask([{"role": "user", "content": "list the claims"}], Claims)


class PenaltyLlama:
    """Loops (cut at the cap) unless asked with a repeat penalty; records each call's kwargs."""

    def __init__(self, loops_with_penalty: bool = False):
        self.calls: list[dict] = []
        self.loops_with_penalty = loops_with_penalty

    def create_chat_completion(self, messages, **kwargs):
        self.calls.append(kwargs)
        if "repeat_penalty" not in kwargs or self.loops_with_penalty:
            return CutLlama(CLAIMS).create_chat_completion(messages, **kwargs)
        answer = '{"claims": ["Finch & Fork serves breakfast.", "It is at 31 W Carrillo St."]}'
        return {
            "choices": [{"message": {"content": answer}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20},
        }


async def test_a_call_that_looped_is_asked_once_more_with_a_repeat_penalty():
    fake = PenaltyLlama()
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf"), llama=fake)
    with task_scope("deepeval", "faithfulness", "s1") as meter:
        out = await judge.ask([{"role": "user", "content": "list the claims"}], Claims)
    assert out.claims == ["Finch & Fork serves breakfast.", "It is at 31 W Carrillo St."]
    assert [c.get("repeat_penalty") for c in fake.calls] == [None, RETRY_REPEAT_PENALTY]
    # both calls are paid and shown: the looped one as a failed call, with its tokens
    assert [r.error for r in meter.records] == ["finish_reason=length", None]
    assert meter.records[0].output_tokens == fake.calls[0]["max_tokens"]


async def test_a_second_loop_fails_saying_what_was_tried_and_a_set_penalty_is_not_overridden():
    fake = PenaltyLlama(loops_with_penalty=True)
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf"), llama=fake)
    with pytest.raises(JudgeLoopError, match=r"length\), asked again with repeat_penalty=1.1; the model looped"):
        await judge.ask([{"role": "user", "content": "list the claims"}], Claims)
    assert len(fake.calls) == 2
    own = PenaltyLlama(loops_with_penalty=True)
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf", extra={"repeat_penalty": 1.3}), llama=own)
    with pytest.raises(JudgeLoopError, match=r"length\), with repeat_penalty=1.3 as set; the model looped") as e:
        await judge.ask([{"role": "user", "content": "list the claims"}], Claims)
    assert "asked again" not in str(e.value)
    assert [c["repeat_penalty"] for c in own.calls] == [1.3]  # the user's choice, asked once


async def test_an_answer_cut_without_a_loop_is_not_asked_again():
    fake = CutLlama('{"claims": ["a long first cl')
    calls = []
    real = fake.create_chat_completion
    fake.create_chat_completion = lambda messages, **kw: calls.append(kw) or real(messages, **kw)
    judge = LlamaCppJudge(JudgeConfig(model="/models/q.gguf"), llama=fake)
    with pytest.raises(JudgeLengthError) as e:
        await judge.ask([{"role": "user", "content": "list the claims"}], Claims)
    assert not isinstance(e.value, JudgeLoopError) and len(calls) == 1
