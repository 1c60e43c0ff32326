"""Loopback answers for opik's judge prompts (plumbing, never evidence of judgment
quality): opik's four RAG metrics ask for a JSON object with one score in [0, 1] and a
reason. ``answer_fn`` gives a schema-valid answer whose every number is drawn from
[0, 1] (two decimals), deterministic per prompt, so opik's own range check passes and
the backend's raw value can be compared with a direct opik call.

``out_of_range_fn`` answers 1.5 instead, to check that the value is refused.
"""

from __future__ import annotations

import random
from typing import Any

from judge_server import _seed_for, _text_of, request_schema, synthesize

#: the response formats opik's RAG metrics send (class names in opik 2.x)
OPIK_SCHEMAS = (
    "HallucinationResponseFormat",
    "AnswerRelevanceResponseFormat",
    "ContextPrecisionResponseFormat",
    "ContextRecallResponseFormat",
)


def _unit(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return round(rng.random(), 2)
    if isinstance(value, list):
        return [_unit(v, rng) for v in value]
    if isinstance(value, dict):
        return {k: _unit(v, rng) for k, v in value.items()}
    return value


def answer_fn(body: dict, seed: int = 11) -> Any:
    """An opik-schema answer with numbers in [0, 1]; None (the server's default) for any
    other request."""
    schema, _mode = request_schema(body)
    if not schema or schema.get("title") not in OPIK_SCHEMAS:
        return None
    rng = random.Random(_seed_for(_text_of(body), seed))
    return _unit(synthesize(schema, rng), rng)


def out_of_range_fn(body: dict) -> Any:
    """Like ``answer_fn`` but every score is 1.5, outside opik's [0, 1]."""
    answer = answer_fn(body)
    if isinstance(answer, dict):
        return {k: (1.5 if isinstance(v, float) else v) for k, v in answer.items()}
    return answer
