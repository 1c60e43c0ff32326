"""Is an answer cut at ``max_tokens`` a loop? Small local models (and large ones, now and
then) repeat one block of text until the token cap ends them; raising the cap only buys a
longer loop. A length error says which it was, so the remedy it names is the right one.

A text *loops* when its tail is periodic: for a block length ``p``, the last ``2p``
characters equal the ``2p`` before them shifted by ``p``, i.e. ``t[-3p:-p] == t[-2p:]``
— at least three copies of the block end the text, wherever the cut fell inside the last
one. The smallest such ``p`` is the block, if the block is not itself periodic with a period
under ``MIN_BLOCK`` characters (a run of short legit repeats such as ``"yes", "yes", ``
is not a loop); the repeat count is how far
back the period holds, ``⌊span / p⌋``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from unified.judge.base import JudgeLengthError, JudgeLoopError

MIN_BLOCK = 24  # characters: shorter periods are enum lists and separators, not loops
MIN_REPEATS = 3
# An in-process judge that looped asks once more with this repetition penalty (1.1: Ollama's
# default; llama-cpp-python's is 1.0, none). Measured on the
# packaged 1.5B model: DeepEval's truths of a RAGTruth news article looped 26 times at 1.0
# and were answered at 1.1. Only a call that looped is asked again; no other answer changes.
RETRY_REPEAT_PENALTY = 1.1


@dataclass(frozen=True)
class Loop:
    """The repeated block, its length in characters and how many copies end the text."""

    block: str
    length: int
    repeats: int

    def describe(self, shown: int = 60) -> str:
        """``a 57-character block 9 times: '…'`` (the block cut to ``shown`` characters)."""
        text = self.block if len(self.block) <= shown else self.block[: shown - 1] + "…"
        return f"a {self.length}-character block {self.repeats} times: {text!r}"


def _periodic_span(text: str, p: int) -> int:
    """How many characters at the end of ``text`` follow period ``p`` (t[i] == t[i-p])."""
    i = len(text) - 1
    while i - p >= 0 and text[i] == text[i - p]:
        i -= 1
    return len(text) - 1 - i + p


def repeated_tail(text: str, min_block: int = MIN_BLOCK, min_repeats: int = MIN_REPEATS) -> Loop | None:
    """The loop that ends ``text`` (module docstring), or None when its tail is not one."""
    t = text.rstrip()
    for p in range(min_block, len(t) // min_repeats + 1):
        if t[-3 * p : -p] != t[-2 * p :]:
            continue
        block = t[-p:]
        if (block + block).find(block, 1) < min_block:
            return None  # the block is itself a short repeat ("yes", "yes", …): no loop
        span = _periodic_span(t, p)
        if span // p >= min_repeats:
            start = len(t) - span
            return Loop(block=t[start : start + p], length=p, repeats=span // p)
    return None


def length_remedy(text: str) -> str:
    """The end of a length error's message: a loop named as one, else "raise max_tokens"."""
    return _remedy(repeated_tail(text))


def _remedy(loop: Loop | None) -> str:
    if loop is None:
        return "raise max_tokens"
    # the remedy first: a task error is shown cut to one line, and the block is the part to lose
    return f"the model looped, so a higher max_tokens only makes the loop longer: use a stronger judge (it repeated {loop.describe(40)})"


def cut_error(what: str, cap: Any, text: str, note: str = "") -> JudgeLengthError:
    """The error for an answer cut at ``cap`` tokens: ``JudgeLoopError`` when ``text`` ends
    in a loop, else ``JudgeLengthError``; ``note`` says what was already tried."""
    loop = repeated_tail(text)  # once: it decides both the error's class and its remedy
    error = JudgeLoopError if loop is not None else JudgeLengthError
    return error(f"{what}: answer cut at max_tokens={cap} (finish_reason=length){note}; {_remedy(loop)}")


__all__ = ["RETRY_REPEAT_PENALTY", "Loop", "cut_error", "length_remedy", "repeated_tail"]
