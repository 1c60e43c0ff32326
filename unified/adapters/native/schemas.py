"""The JSON answers the native prompts ask for, as pydantic models.

Per-item verdicts use *keyed* models built for the number of items in the request: one
required property per item (``claim_1`` … ``claim_N``), whose value is an enum. The schema
itself then says "exactly one verdict per item": a missing key fails validation, an extra
key is forbidden — either is a ``JudgeOutputError`` of that judge, which the dual-judge
path turns into a degraded score. Values are flat enums (no nested objects, no ``$ref``),
the subset every structured-output server and a prompt-only model handle well.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

Support = Literal["supported", "contradicted", "not_found"]
YesNo = Literal["yes", "no"]
Rating = Literal[0, 1, 2]


class ClaimList(BaseModel):
    """Atomic factual claims extracted from one text (empty when it states none)."""

    model_config = ConfigDict(extra="forbid")
    claims: list[str]


class GeneratedQuestions(BaseModel):
    """Questions the response would answer, and whether the response dodges."""

    model_config = ConfigDict(extra="forbid")
    questions: list[str] = Field(min_length=1)
    noncommittal: bool


class WholeRating(BaseModel):
    """One 0/1/2 rating of a whole text, reason first so the model reasons before rating."""

    model_config = ConfigDict(extra="forbid")
    reason: str
    rating: Rating


@lru_cache(maxsize=512)
def keyed_model(name: str, fields: tuple[tuple[str, str], ...]) -> type[BaseModel]:
    """A model with one required field per ``(key, kind)``; kind is ``support``, ``yesno``
    or ``rating``. Cached so identical requests carry an identical schema (cache hits)."""
    kinds: dict[str, Any] = {"support": Support, "yesno": YesNo, "rating": Rating}
    spec = {key: (kinds[kind], ...) for key, kind in fields}
    return create_model(name, __config__=ConfigDict(extra="forbid"), **spec)  # type: ignore[call-overload]


@lru_cache(maxsize=64)
def rubric_model(lo: int, hi: int) -> type[BaseModel]:
    """``{"reason": str, "score": int in [lo, hi]}`` for a custom rubric metric."""
    return create_model(
        f"RubricScore_{lo}_{hi}",
        __config__=ConfigDict(extra="forbid"),
        reason=(str, ...),
        score=(int, Field(ge=lo, le=hi)),
    )
