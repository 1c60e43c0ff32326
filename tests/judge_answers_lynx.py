"""Loopback answers for the Lynx prompt (plumbing, never evidence of judgment quality).

The Lynx contract asks for free text, a JSON object ``{"REASONING": [...], "SCORE":
"PASS" | "FAIL"}``; the loopback server would answer a request without a JSON schema
with a phrase, which the backend rightly refuses. ``answer_fn`` answers the Lynx prompt
as a Lynx model would, the verdict drawn from the request's hash (deterministic per
prompt), and leaves every other request to the server (None).
"""

from __future__ import annotations

import json
import random
from typing import Any

from judge_server import _phrase, _seed_for, _text_of

#: words of the Lynx prompt no other framework's prompt has
LYNX_MARK = "QUESTION (THIS DOES NOT COUNT AS BACKGROUND INFORMATION):"


def is_lynx(body: dict) -> bool:
    return any(LYNX_MARK in str(m.get("content")) for m in body.get("messages", []))


def answer_fn(body: dict, seed: int = 17) -> Any:
    """A Lynx answer as text (the model writes text, not a schema-bound object); None
    for any other request."""
    if not is_lynx(body):
        return None
    rng = random.Random(_seed_for(_text_of(body), seed))
    reasoning = [f"- The {_phrase(rng)}.", f"- The {_phrase(rng)}."]
    return json.dumps({"REASONING": reasoning, "SCORE": rng.choice(("PASS", "FAIL"))})
