"""Loopback answers for Embedchain's evaluation prompts (plumbing, never evidence of
judgment quality).

Embedchain's metrics ask for free text in line formats — claims one per line, verdicts
``1``/``0``/``-1`` one per line, the useful context sentences, generated questions — where
the loopback server would answer a phrase, which Embedchain rightly refuses (a verdict
line that is no verdict raises ``KeyError``). ``answer_fn`` answers each prompt in its
format, drawn from the request's hash (deterministic per prompt): one verdict (``1`` or
``0``) per claim, one or two of the context's own sentences, two questions. It never
answers ``-1``: that verdict makes Embedchain's score NaN, which a test asks for on
purpose. Every other request is left to the server (None).
"""

from __future__ import annotations

import random
import re
from typing import Any

from judge_server import _phrase, _seed_for, _text_of

CLAIMS = "Please provide one or more statements from each sentence of the provided answer."
VERDICTS = "please provide a verdict for each claim statement"
SENTENCES = "Please extract relevant sentences from the provided context"
QUESTIONS = "questions from the provided answer."


def answer_fn(body: dict, seed: int = 23) -> Any:
    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    rng = random.Random(_seed_for(_text_of(body), seed))
    if CLAIMS in text:
        return "\n".join(f"The {_phrase(rng)}." for _ in range(rng.randint(1, 3)))
    if VERDICTS in text:
        claims = [ln for ln in text.split("Claim statements:", 1)[-1].strip().splitlines() if ln.strip()]
        return "\n".join(rng.choice("10") for _ in claims or [""])
    if SENTENCES in text:
        context = text.split("Context:", 1)[-1].split("Question:", 1)[0].strip()
        sentences = re.split(r"(?<=[.!?])\s+", context)
        return " ".join(sentences[: rng.randint(1, min(2, len(sentences)))])
    if QUESTIONS in text:
        return f"What is {_phrase(rng)}?\nWhy is {_phrase(rng)}?"
    return None
