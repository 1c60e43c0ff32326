"""Loopback answers for autoevals' RAGAS prompts (plumbing, never evidence of judgment
quality). The synthesised answers cannot satisfy three of autoevals' contracts, which
the backend rightly refuses to score:

- verdicts (``verdict``, ``attributed``, ``noncommittal``) are integers the schema does
  not bound, so the server draws 0, 1 or 2: here they are 0 or 1 (``noncommittal``
  always 0: the bundled answers commit);
- Faithfulness must judge every statement it is given: here one verdict per statement
  of the prompt, in order;
- ContextRelevancy must extract sentences from the context: here a subset of the
  context's own sentences, so the share stays ≤ 1.

``answer_fn`` answers autoevals' prompts and leaves every other request to the server
(None). The prompts are recognised by their text; autoevals renders them with chevron,
which HTML-escapes the values (``&quot;``) and prints a list as its Python repr.
"""

from __future__ import annotations

import ast
import html
import random
import re
from typing import Any

from judge_server import _phrase, _seed_for, _text_of, request_schema, synthesize

TASK = "Your actual task:"
MARKS = {
    "faithfulness": "judge the faithfulness of a series of statements",
    "relevancy": "Please extract relevant sentences from the provided context",
    "question": "Generate a question for the given answer and Identify if answer is noncommittal",
}


def _user(body: dict) -> str:
    return next((str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"), "")


def _task_value(prompt: str, name: str, until: str) -> str:
    """The value rendered after ``name:`` in the prompt's actual task, unescaped."""
    task = prompt.split(TASK, 1)[-1]
    m = re.search(rf"\n{name}: (.*?)\n{until}", task, re.DOTALL)
    return html.unescape(m.group(1)) if m else ""


def _binary(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, list, dict)):
        return value
    if isinstance(value, int):
        return rng.choice((0, 1))
    if isinstance(value, list):
        return [_binary(v, rng) for v in value]
    return {k: (0 if k == "noncommittal" else _binary(v, rng)) for k, v in value.items()}


def _statements_judged(prompt: str, rng: random.Random) -> dict[str, Any]:
    try:
        statements = ast.literal_eval(_task_value(prompt, "statements", "answer:"))
    except (ValueError, SyntaxError):
        statements = []
    verdicts = [{"statement": s, "verdict": rng.choice((0, 1)), "reason": _phrase(rng)} for s in statements]
    return {"faithfulness": verdicts}


def _sentences_extracted(prompt: str, rng: random.Random) -> dict[str, Any]:
    context = _task_value(prompt, "context", "candidate sentences:")
    pieces = [p.strip() for p in re.split(r"(?<=[.!?])\s+|\n", context) if p.strip()]
    chosen = [p for p in pieces if rng.random() < 0.6]
    return {"sentences": [{"sentence": s, "reasons": [_phrase(rng)]} for s in chosen]}


def answer_fn(body: dict, seed: int = 19) -> Any:
    """An answer for autoevals' prompts (see the module docstring); None otherwise."""
    prompt = _user(body)
    schema, _mode = request_schema(body)
    if TASK not in prompt or schema is None:
        return None
    rng = random.Random(_seed_for(_text_of(body), seed))
    if MARKS["faithfulness"] in prompt:
        return _statements_judged(prompt, rng)
    if MARKS["relevancy"] in prompt:
        return _sentences_extracted(prompt, rng)
    return _binary(synthesize(schema, rng), rng)
