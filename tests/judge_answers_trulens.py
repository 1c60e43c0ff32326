"""Loopback answers for TruLens's free-text prompts — plumbing, never judgment quality.

Most TruLens feedback functions ask with a JSON schema (``ChainOfThoughtResponse``), which
the loopback server already answers. Two ask for plain text that TruLens then parses:

- groundedness's sentence splitter ("Split the following statement into individual
  sentences"): answered with the user's statement cut after each ``.``, ``!`` or ``?``,
  one sentence per line — so a multi-sentence response yields several statements;
- ground-truth agreement ("The expected answer is:"): answered with an integer 0–10
  drawn from the request's hash (``re_0_10_rating`` reads it).

``trulens_answer_fn(fallback)`` returns an ``answer_fn`` for ``JudgeServer``: these two
prompts get the answers above, every other request goes to ``fallback`` (None: the
server's own schema synthesis).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Callable

SPLITTER_MARK = "Split the following statement into individual sentences"
AGREEMENT_MARK = "The expected answer is:"

AnswerFn = Callable[[dict], Any]


def sentences(text: str) -> list[str]:
    """``text`` cut after each sentence end; blank pieces dropped."""
    return [p.strip() for p in re.split(r"(?<=[.!?])\s+", text) if p.strip()]


def _contents(body: dict) -> list[tuple[str, str]]:
    return [(str(m.get("role")), str(m.get("content"))) for m in body.get("messages", [])]


def trulens_answer_fn(fallback: AnswerFn | None = None) -> AnswerFn:
    """An ``answer_fn`` for TruLens's text prompts (see the module docstring)."""

    def answer(body: dict) -> Any:
        msgs = _contents(body)
        if any(SPLITTER_MARK in c for r, c in msgs if r == "system"):
            user = next((c for r, c in reversed(msgs) if r == "user"), "")
            return "\n".join(sentences(user))
        if any(AGREEMENT_MARK in c for _, c in msgs):
            digest = hashlib.sha256(json.dumps(msgs).encode()).digest()
            return str(digest[0] % 11)
        return fallback(body) if fallback is not None else None

    return answer


# the judge server's framework_answers hook: TruLens's text prompts, None for any other request
answer_fn = trulens_answer_fn()
