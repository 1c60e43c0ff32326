"""In-process scripted judges for tests and dry runs (like httpx's MockTransport).

``ScriptedJudge`` answers each request with ``script(schema, messages)`` — a dict that is
validated against the schema, or an exception to raise — and counts its calls through
the same accounting as a real client. It synthesises nothing by itself: what it answers
is what the test wrote, so it checks plumbing and formulas, never judgment quality.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from pydantic import BaseModel, ValidationError

from unified.judge.base import CallRecord, ChatJudge, Embedder, JudgeOutputError, record_call

Script = Callable[[type[BaseModel], list[dict[str, str]]], Any]


class ScriptedJudge(ChatJudge):
    """A ChatJudge whose answers come from ``script``; ``calls`` keeps (schema name,
    messages) of every request."""

    def __init__(self, script: Script, model: str = "scripted"):
        self.script = script
        self.model = model
        self.calls: list[tuple[str, list[dict[str, str]]]] = []

    async def ask(self, messages, schema, **params: Any):
        self.calls.append((schema.__name__, messages))
        record_call(CallRecord(kind="chat", backend="", metric="", sample_id="", model=self.model, cached=False))
        out = self.script(schema, messages)
        if isinstance(out, BaseException):
            raise out
        try:
            return schema.model_validate(out)
        except ValidationError as e:  # as the real client does after its repair retry
            raise JudgeOutputError(f"invalid answer for {schema.__name__}: {e.error_count()} errors") from None


class ScriptedEmbedder(Embedder):
    """Embeds by a lookup table (text -> vector), default ``default`` for unknown texts."""

    def __init__(
        self,
        table: dict[str, Sequence[float]] | None = None,
        default: Sequence[float] = (1.0, 0.0),
        model: str = "scripted-embed",
    ):
        self.table = dict(table or {})
        self.default = list(default)
        self.model = model
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        record_call(CallRecord(kind="embedding", backend="", metric="", sample_id="", model=self.model, cached=False))
        return [list(self.table.get(t, self.default)) for t in texts]


def fill_keys(schema: type[BaseModel], value: Callable[[str], Any]) -> dict[str, Any]:
    """An answer for a keyed verdict model: ``value(key)`` for every field."""
    return {k: value(k) for k in schema.model_fields}
