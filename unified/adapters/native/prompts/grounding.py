"""Whole-text 0/1/2 ratings: context_sufficiency (can the contexts alone answer the
question as the reference does?) and response_groundedness (is the whole response backed
by the contexts?). One call per judge each; both open with the sample's contexts in the
given order (the shared prefix, see ``prompts``); B words the task differently and shows
the other texts in another order.
"""

from __future__ import annotations

from typing import Sequence

from ..schemas import WholeRating
from . import Ask, Variant, evidence_ask

_SUFF_A = """
Decide whether the retrieved contexts above contain enough information to answer the
question below the way the reference answer does, using the contexts alone (no outside
knowledge). Rating: 2 = everything the reference answer needs is in the contexts; 1 = part
of it; 0 = the contexts do not allow that answer. Write a one-sentence reason, then the
rating. JSON: {"reason": string, "rating": 0|1|2}.
"""
_SUFF_B = """
Coverage check. Below are an expected answer and the question it answers. Could a careful
writer who sees ONLY the contexts above produce the expected answer? 2 yes, fully; 1 only
partly; 0 no. Give a short reason and the rating as JSON {"reason": "...", "rating": 0, 1
or 2}.
"""

_GROUND_A = """
Rate how well the response below is grounded in the contexts above: 2 = every statement
in the response is supported by the contexts; 1 = partly supported (some statements are
not); 0 = not supported or contradicted. Judge only against the contexts. Write a
one-sentence reason, then the rating. JSON: {"reason": string, "rating": 0|1|2}.
"""
_GROUND_B = """
Is the reply below backed up by the source documents (the contexts above)? Answer 2 if
all of it is, 1 if only some of it is, 0 if little or none is (or the documents disagree
with it). Do not use outside knowledge. JSON {"reason": "...", "rating": 0, 1 or 2}.
"""


def _rating_parse(ans: WholeRating) -> tuple[int, str]:
    return int(ans.rating), ans.reason.strip()


def sufficiency(variant: Variant, question: str, contexts: Sequence[str], reference: str) -> Ask:
    """``parse`` returns ``(rating, reason)``. Both judges open with the shared contexts
    (``evidence``); they differ in wording and in the order of question and answer."""
    if variant == "A":
        items, task = f"QUESTION: {question.strip()}\nREFERENCE ANSWER: {reference.strip()}", _SUFF_A
    else:
        items, task = f"Expected answer: {reference.strip()}\nQuestion: {question.strip()}", _SUFF_B
    return Ask(evidence_ask(contexts, task, items, "JSON:"), WholeRating, _rating_parse)


def groundedness(variant: Variant, response: str, contexts: Sequence[str]) -> Ask:
    """``parse`` returns ``(rating, reason)``. Both judges open with the shared contexts."""
    if variant == "A":
        items, task = f"RESPONSE\n{response.strip()}", _GROUND_A
    else:
        items, task = f"Reply:\n{response.strip()}", _GROUND_B
    return Ask(evidence_ask(contexts, task, items, "JSON:"), WholeRating, _rating_parse)
