"""Structured output, independent of any transport: the JSON schema of a pydantic answer
type, the prompt that asks for it, pulling the JSON out of an answer, validation with one
repair turn, and the token estimate used when a server reports no ``usage``.

The bottom of the judge layer after ``base``: the HTTP judge, the in-process llama.cpp
judge and the cache all import from here, and this module imports no client library.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Awaitable, Callable

from pydantic import BaseModel, ValidationError

from unified.judge.base import JudgeOutputError, Messages, T

CHARS_PER_TOKEN = 4
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@functools.lru_cache(maxsize=256)
def schema_json(schema: type[BaseModel]) -> dict:
    """``schema.model_json_schema()``, computed once per class (it is not cheap, and every
    request, repair and cache key needs it). Callers must not mutate the result."""
    return schema.model_json_schema()


def estimate_tokens(text: str) -> int:
    """Rough token count when the server reports no ``usage``:
    ``max(1, len(text) // 4)`` (about four characters per token in English)."""
    return max(1, len(text) // CHARS_PER_TOKEN)


def schema_prompt(js: dict) -> str:
    """The instruction used in prompt mode (and as a hint in every mode)."""
    return (
        "Answer with a single JSON object and nothing else (no prose, no code fences). "
        "It must validate against this JSON schema:\n" + json.dumps(js)
    )


def extract_json_text(text: str) -> str:
    """The JSON part of an answer: strip code fences and prose around one object."""
    m = _FENCE.match(text)
    if m:
        return m.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        return text[start : end + 1]
    return text


def short_validation_error(exc: ValidationError) -> str:
    """The first three problems of a pydantic error, ``loc: msg; ...`` (at most 500 chars);
    the input itself is never quoted (it may be long, and it is the model's, not ours)."""
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)[:500]


async def parse_with_repair(
    complete: Callable[[Messages], Awaitable[str]],
    messages: Messages,
    schema: type[T],
    what: str,
    schema_hint: str = "",
) -> T:
    """Ask, validate against ``schema``; on invalid JSON or a schema mismatch, ONE repair
    turn that shows the model its answer and the error; then ``JudgeOutputError``.

    ``complete(messages) -> text`` sends one request (with the client's own retries)."""
    text = await complete(messages)
    try:
        return schema.model_validate_json(extract_json_text(text))
    except ValidationError as exc:
        error = short_validation_error(exc)
    repair = [
        *messages,
        {"role": "assistant", "content": text[:4000]},
        {
            "role": "user",
            "content": f"Your answer is not valid: {error}\nReply with only the corrected JSON object{schema_hint}.",
        },
    ]
    text2 = await complete(repair)
    try:
        return schema.model_validate_json(extract_json_text(text2))
    except ValidationError as exc:
        raise JudgeOutputError(
            f"{what}: answer is not valid {schema.__name__} JSON after one repair retry: {short_validation_error(exc)}"
        ) from None


__all__ = [
    "estimate_tokens",
    "extract_json_text",
    "parse_with_repair",
    "schema_json",
    "schema_prompt",
    "short_validation_error",
]
