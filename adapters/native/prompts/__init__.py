"""Prompts of the native backend, one module per metric family.

Every builder returns an ``Ask``: the chat messages, the pydantic schema of the answer,
and ``parse`` — which maps the validated answer back to the *original* item order (judge
B shows items in another order) and raises ``JudgeOutputError`` when the answer does not
fit the request. Judge A and judge B are two independently worded phrasings; B also
changes the order in which texts are shown, against position bias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from pydantic import BaseModel

Variant = Literal["A", "B"]


@dataclass(frozen=True)
class Ask:
    """One judge request: messages, answer schema, and answer -> neutral result."""

    messages: list[dict[str, str]]
    schema: type[BaseModel]
    parse: Callable[[Any], Any]


def numbered(label: str, texts: Sequence[str]) -> str:
    """``[label 1] text`` blocks, one per text, numbered from 1 in the order given."""
    return "\n\n".join(f"[{label} {i}]\n{t.strip()}" for i, t in enumerate(texts, 1))


def display_order(n: int, variant: Variant) -> list[int]:
    """Original indices in the order a judge sees them: A as given, B reversed."""
    return list(range(n)) if variant == "A" else list(range(n - 1, -1, -1))


def system(text: str) -> dict[str, str]:
    return {"role": "system", "content": text.strip()}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text.strip()}
