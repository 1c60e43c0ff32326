"""Per-context judgments: relevance to the question (0/1/2) and usefulness for arriving
at the reference answer (yes/no), all contexts in one call per judge.

The plan asks relevance on every sample and usefulness on every sample with a reference
(``table.asks``), whether ``context_relevancy``, ``context_precision`` or both are
requested: one call serves both, and a metric alone is asked the same prompt.

Judge A's prompt opens like every prompt over the sample's contexts (``evidence``), so a
local judge's prompt cache serves the contexts it already read for the verification.
Judge B shows the contexts reversed — here they are the items rated, and the other order
counters position bias — so B's prompt shares no prefix and keeps its own system text.
"""

from __future__ import annotations

from typing import Sequence

from ..schemas import keyed_model
from . import Ask, Variant, display_order, evidence_ask, numbered, system, user

_A = """
You grade the retrieved contexts above for a question-answering system. Judge every
numbered context on its own.
{relevance}{useful}Give exactly one value for every key listed, and no other keys.
"""
_A_REL = """Relevance to the QUESTION (key context_N_relevance):
  0 = not relevant: about something else, or only shares words with the question;
  1 = partly relevant: on topic, but only part of what is needed to answer;
  2 = relevant: contains information that answers the question.
"""
_A_USE = """Usefulness for the REFERENCE ANSWER (key context_N_useful): "yes" when the
context contains information that helps to arrive at the reference answer, else "no".
"""

_B = """
Search-quality review. You will see passages (in no particular order), then the user's
query{ref_note}. Rate each passage independently of the others.
{relevance}{useful}Use exactly the listed keys.
"""
_B_REL = """passage_N_relevance: how well the passage addresses the query —
  2 it answers the query, 1 it is on topic but incomplete, 0 it does not help.
"""
_B_USE = """passage_N_useful: "yes" if someone writing the expected answer would draw
on this passage, "no" otherwise.
"""


def context_judgement(
    variant: Variant,
    question: str,
    contexts: Sequence[str],
    reference: str | None,
    *,
    relevance: bool,
    usefulness: bool,
) -> Ask:
    """Ask relevance and/or usefulness of every context. ``parse`` returns
    ``{"relevance": [0|1|2 per context] | None, "useful": [bool per context] | None}``
    in the original context order."""
    if not (relevance or usefulness):
        raise ValueError("ask for relevance, usefulness or both")
    if usefulness and not reference:
        raise ValueError("usefulness needs a reference answer")
    n = len(contexts)
    order = display_order(n, variant)
    shown = [contexts[i] for i in order]
    prefix = "context" if variant == "A" else "passage"
    if variant == "A":
        task = _A.format(relevance=_A_REL if relevance else "", useful=_A_USE if usefulness else "")
        items = f"QUESTION: {question.strip()}"
        if usefulness:
            items += f"\nREFERENCE ANSWER: {reference.strip()}"  # type: ignore[union-attr]
        messages = evidence_ask(shown, task, items)
    else:
        sys_text = _B.format(
            ref_note=" and the expected answer" if usefulness else "",
            relevance=_B_REL if relevance else "",
            useful=_B_USE if usefulness else "",
        )
        body = "Passages:\n" + numbered("passage", shown) + f"\n\nQuery: {question.strip()}"
        if usefulness:
            body += f"\nExpected answer: {reference.strip()}"  # type: ignore[union-attr]
        messages = [system(sys_text), user(body + "\n\nAnswer with JSON only.")]
    keys: list[tuple[str, str]] = []
    for p in range(1, n + 1):
        if relevance:
            keys.append((f"{prefix}_{p}_relevance", "rating"))
        if usefulness:
            keys.append((f"{prefix}_{p}_useful", "yesno"))
    schema = keyed_model(f"ContextJudgement{variant}", tuple(keys))

    def parse(ans) -> dict[str, list | None]:
        data = ans.model_dump()
        rel: list[int] = [0] * n
        use: list[bool] = [False] * n
        for p, original in enumerate(order, 1):  # display position -> original index
            if relevance:
                rel[original] = int(data[f"{prefix}_{p}_relevance"])
            if usefulness:
                use[original] = data[f"{prefix}_{p}_useful"] == "yes"
        return {"relevance": rel if relevance else None, "useful": use if usefulness else None}

    return Ask(messages, schema, parse)
