"""The answer's unsupported spans, where a backend reported them, for the review screen.

Backends say which parts of an answer the contexts do not support in their details:

- native: ``details.claims[]`` — ``{"claim", "support"}`` with support < 1 (0 = not found
  or contradicted by both judges, ½ = the judges split);
- ragas: ``details.verdicts[]`` — ``{"statement", "verdict"}`` with verdict 0.

Others (deepeval) keep only a reason: they report no span. Only metrics that judge the
answer against the contexts (``ANSWER_METRICS``) count: context_recall's claims, say, are
the reference's, not the answer's. A claim is the judge's
paraphrase, not always a quote: it is highlighted where it occurs in the answer word for
word (case ignored) and always listed under the answer with the backend that reported it.
Highlighting only marks ranges; the template escapes every character of the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: metrics whose claims are the answer's claims, checked against the contexts
ANSWER_METRICS = frozenset({"faithfulness", "hallucination", "response_groundedness"})


@dataclass(frozen=True)
class Claim:
    """A part of the answer ``backend`` found unsupported."""

    backend: str
    text: str


def _unsupported(backend: str, details: Mapping[str, Any]) -> list[Claim]:
    out = []
    for c in details.get("claims") or ():
        if isinstance(c, Mapping) and isinstance(c.get("claim"), str):
            support = c.get("support")
            if isinstance(support, (int, float)) and support < 1:
                out.append(Claim(backend, c["claim"]))
    for v in details.get("verdicts") or ():
        if isinstance(v, Mapping) and isinstance(v.get("statement"), str) and v.get("verdict") == 0:
            out.append(Claim(backend, v["statement"]))
    return out


def unsupported_claims(lines: Iterable[Mapping[str, Any]]) -> list[Claim]:
    """The unsupported claims in these score lines' details (module docstring), in order,
    each (backend, text) once."""
    seen: dict[tuple[str, str], Claim] = {}
    for d in lines:
        details = d.get("details")
        if isinstance(details, Mapping) and str(d.get("metric")).split("[")[0] in ANSWER_METRICS:
            for c in _unsupported(str(d.get("backend")), details):
                seen.setdefault((c.backend, c.text.strip()), c)
    return [c for c in seen.values() if c.text.strip()]


def segments(text: str, claims: Iterable[Claim]) -> list[tuple[str, bool]]:
    """``text`` cut into (piece, highlighted) pairs: a piece is highlighted when one of
    ``claims`` occurs there word for word (case ignored); overlapping hits merge."""
    low = text.lower()
    marks: list[tuple[int, int]] = []
    for c in claims:
        needle = c.text.strip().lower()
        start = low.find(needle) if needle else -1
        while start >= 0:
            marks.append((start, start + len(needle)))
            start = low.find(needle, start + len(needle))
    merged: list[list[int]] = []
    for a, b in sorted(marks):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out: list[tuple[str, bool]] = []
    pos = 0
    for a, b in merged:
        if a > pos:
            out.append((text[pos:a], False))
        out.append((text[a:b], True))
        pos = b
    if pos < len(text) or not out:
        out.append((text[pos:], False))
    return out


__all__ = ["ANSWER_METRICS", "Claim", "segments", "unsupported_claims"]
