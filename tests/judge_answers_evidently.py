"""Loopback answers for Evidently's LLM-judge prompts — plumbing, never judgment quality.

Evidently's binary classification templates send no response format: the prompt ends
with "Return category, reasoning formatted as json ... {"category": "A or B or UNKNOWN" ...}"
and Evidently parses the answer itself. The loopback server would answer free text, which
Evidently cannot parse, so this module answers each such prompt with one of its two
categories, a reasoning and — when the prompt asks for one — a score in [0, 1] (two
decimals), deterministically per prompt.

``shaped(fix)`` returns an ``answer_fn`` whose answers first pass through ``fix(answer)``,
to serve a bad shape (UNKNOWN, a missing score) to a test.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any, Callable

#: "Classify text between ___text_starts_here___ and ___text_ends_here___ into two categories: A and B."
CATEGORIES = re.compile(r"into two categories: (\w+) and (\w+)\.")
JSON_ASK = "formatted as json without formatting as follows"


def _text(body: dict) -> str:
    return " ".join(str(m.get("content")) for m in body.get("messages", []))


def categories_of(body: dict) -> tuple[str, str] | None:
    """The two categories an Evidently prompt offers, or None for any other request."""
    text = _text(body)
    found = CATEGORIES.search(text)
    return found.groups() if found and JSON_ASK in text else None  # type: ignore[return-value]


def shaped(fix: Callable[[dict[str, Any]], Any] | None = None, seed: int = 3) -> Callable[[dict], Any]:
    """An ``answer_fn`` for Evidently's prompts (None for any other request)."""

    def answer(body: dict) -> Any:
        pair = categories_of(body)
        if pair is None:
            return None
        text = json.dumps(body.get("messages", []), sort_keys=True)
        rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}\x00{text}".encode()).digest()[:8], "big"))
        out: dict[str, Any] = {"category": rng.choice(pair), "reasoning": "loopback reasoning"}
        if '"score"' in _text(body):  # asked with include_score (ContextRelevance always)
            out["score"] = round(rng.random(), 2)
        return out if fix is None else fix(out)

    return answer


# the judge server's framework_answers hook: Evidently's prompts, None for any other request
answer_fn = shaped()
