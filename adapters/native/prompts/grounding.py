"""Whole-text 0/1/2 ratings: context_sufficiency (can the contexts alone answer the
question as the reference does?) and response_groundedness (is the whole response backed
by the contexts?). One call per judge each; B shows the contexts reversed and the other
texts in a different place.
"""

from __future__ import annotations

from typing import Sequence

from ..schemas import WholeRating
from . import Ask, Variant, display_order, numbered, system, user

_SUFF_A = """
Decide whether the retrieved contexts contain enough information to answer the question
the way the reference answer does, using the contexts alone (no outside knowledge).
Rating: 2 = everything the reference answer needs is in the contexts; 1 = part of it;
0 = the contexts do not allow that answer. Write a one-sentence reason, then the rating.
JSON: {"reason": string, "rating": 0|1|2}.
"""
_SUFF_B = """
Coverage check. Here is an expected answer, the question it answers and some documents.
Could a careful writer who sees ONLY these documents produce the expected answer?
2 yes, fully; 1 only partly; 0 no. Give a short reason and the rating as JSON
{"reason": "...", "rating": 0, 1 or 2}.
"""

_GROUND_A = """
Rate how well the response is grounded in the contexts: 2 = every statement in the
response is supported by the contexts; 1 = partly supported (some statements are not);
0 = not supported or contradicted. Judge only against the contexts. Write a
one-sentence reason, then the rating. JSON: {"reason": string, "rating": 0|1|2}.
"""
_GROUND_B = """
Is this reply backed up by the source documents shown before it? Answer 2 if all of it
is, 1 if only some of it is, 0 if little or none is (or the documents disagree with it).
Do not use outside knowledge. JSON {"reason": "...", "rating": 0, 1 or 2}.
"""


def _rating_parse(ans: WholeRating) -> tuple[int, str]:
    return int(ans.rating), ans.reason.strip()


def sufficiency(variant: Variant, question: str, contexts: Sequence[str], reference: str) -> Ask:
    """``parse`` returns ``(rating, reason)``."""
    shown = [contexts[i] for i in display_order(len(contexts), variant)]
    if variant == "A":
        body = (
            f"QUESTION: {question.strip()}\nREFERENCE ANSWER: {reference.strip()}\n\n"
            f"CONTEXTS\n{numbered('Context', shown)}"
        )
        sys_text = _SUFF_A
    else:
        body = (
            f"Expected answer: {reference.strip()}\nQuestion: {question.strip()}\n\n"
            f"Documents:\n{numbered('Document', shown)}"
        )
        sys_text = _SUFF_B
    return Ask([system(sys_text), user(body + "\n\nJSON:")], WholeRating, _rating_parse)


def groundedness(variant: Variant, response: str, contexts: Sequence[str]) -> Ask:
    """``parse`` returns ``(rating, reason)``."""
    shown = [contexts[i] for i in display_order(len(contexts), variant)]
    if variant == "A":
        body = f"CONTEXTS\n{numbered('Context', shown)}\n\nRESPONSE\n{response.strip()}"
        sys_text = _GROUND_A
    else:
        body = f"Reply:\n{response.strip()}\n\nSource documents:\n{numbered('Document', shown)}"
        sys_text = _GROUND_B
    return Ask([system(sys_text), user(body + "\n\nJSON:")], WholeRating, _rating_parse)
