"""Judge A and judge B: run both phrasings of a judgment, keep what each said.

A runs on ``judges.chat``; B runs on ``judges.chat2`` when a second model is configured,
else on ``judges.chat`` with its own wording and text order. ``single_judge`` runs A
only. A judge that fails after the judge layer's retries (HTTP, timeout, invalid JSON,
an answer that does not fit the items) is recorded with its error; the metric then uses
the other judge and says so (``degraded``) — never a silent max() over a missing value.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import ValidationError

from unified.judge.base import ChatJudge, JudgeError, JudgeOutputError, Judges

from .formulas import agreement, mean_pair
from .prompts import Ask, Variant


class StepFailed(Exception):
    """A step of the sample plan produced nothing usable (both judges failed, or a
    single, un-dualled call failed). The message names the step and the judge errors."""


async def ask_one(judge: ChatJudge, ask: Ask) -> Any:
    """One judge call, answer parsed into original item order. An answer that validates
    but does not fit the request (a missing item) is a ``JudgeOutputError``."""
    answer = await judge.ask(ask.messages, ask.schema)
    try:
        return ask.parse(answer)
    except (KeyError, IndexError, ValueError, TypeError, ValidationError) as e:
        raise JudgeOutputError(f"answer does not match the items asked: {type(e).__name__}: {e}") from None


@dataclass
class DualResult:
    """What judge A and judge B answered (parsed), or why each failed. ``dual`` is False
    when only A was asked (single-judge mode)."""

    a: Any = None
    b: Any = None
    err_a: str | None = None
    err_b: str | None = None
    dual: bool = True

    @property
    def degraded_reason(self) -> str | None:
        if not self.dual:
            return None
        if self.err_a and not self.err_b:
            return f"judge A failed ({self.err_a}); value from judge B only"
        if self.err_b and not self.err_a:
            return f"judge B failed ({self.err_b}); value from judge A only"
        return None


async def ask_dual(judges: Judges, build: Callable[[Variant], Ask], step: str) -> DualResult:
    """Ask A and B concurrently (A only in single-judge mode). Raises ``StepFailed`` when
    every judge asked failed."""
    chat = judges.require_chat()
    if judges.single_judge:
        try:
            return DualResult(a=await ask_one(chat, build("A")), dual=False)
        except JudgeError as e:
            raise StepFailed(f"{step}: judge failed: {e}") from None
    chat_b = judges.chat2 or chat
    got = await asyncio.gather(ask_one(chat, build("A")), ask_one(chat_b, build("B")), return_exceptions=True)
    res = DualResult()
    for slot, out in zip(("a", "b"), got):
        if isinstance(out, JudgeError):
            setattr(res, "err_" + slot, str(out) or type(out).__name__)
        elif isinstance(out, BaseException):
            raise out  # a bug, not a judge failure: let the metric report it
        else:
            setattr(res, slot, out)
    if res.err_a and res.err_b:
        raise StepFailed(f"{step}: both judges failed: A: {res.err_a}; B: {res.err_b}")
    return res


@dataclass
class Combined:
    """Item scores of one metric from a DualResult: each judge's list (None when that
    judge failed or was not asked), their element-wise mean, and the agreement."""

    a: list[float] | None
    b: list[float] | None
    mean: list[float]
    agreement: float | None
    degraded_reason: str | None


def combine(res: DualResult, items: Callable[[Any], list[float]], width: float) -> Combined:
    """Apply ``items`` (parsed answer -> item scores) to each judge and average them.
    ``judge_agreement`` = 1 − mean|a − b| / width (see formulas.agreement); None with one
    judge or no items."""
    a = items(res.a) if res.a is not None else None
    b = items(res.b) if res.b is not None else None
    agree = agreement(a, b, width) if (a is not None and b is not None and a) else None
    return Combined(a=a, b=b, mean=mean_pair(a, b), agreement=agree, degraded_reason=res.degraded_reason)
