"""Custom rubric metrics (``register_rubric``): the user's criteria, the sample's fields,
an integer score on the rubric's scale. Judge B sees the fields in reverse order and a
different framing of the same criteria.
"""

from __future__ import annotations

from typing import Mapping

from ..schemas import rubric_model
from . import Ask, Variant, system, user

_TITLES = {
    "user_input": "Question",
    "response": "Response",
    "reference": "Reference answer",
    "retrieved_contexts": "Retrieved contexts",
    "reference_contexts": "Reference contexts",
}

_A = """
You are an evaluator. Score the material below against this criterion:
{criteria}
Use an integer from {lo} (does not meet it at all) to {hi} (fully meets it). Give a short
reason, then the score. JSON: {{"reason": string, "score": integer {lo}..{hi}}}.
"""
_B = """
Apply the following grading rule strictly and impartially.
Rule: {criteria}
Scale: whole numbers {lo}-{hi}; {hi} = the rule is completely satisfied, {lo} = not at
all. Reply with JSON {{"reason": "...", "score": n}}.
"""


def _render(field: str, value: object) -> str:
    if isinstance(value, (list, tuple)):
        value = "\n".join(f"[{i}] {v}" for i, v in enumerate(value, 1))
    return f"{_TITLES.get(field, field)}:\n{value}"


def rubric(variant: Variant, criteria: str, scale: tuple[int, int], fields: Mapping[str, object]) -> Ask:
    """``parse`` returns ``(score, reason)``."""
    lo, hi = int(scale[0]), int(scale[1])
    items = list(fields.items())
    if variant == "B":
        items.reverse()
    body = "\n\n".join(_render(k, v) for k, v in items)
    sys_text = (_A if variant == "A" else _B).format(criteria=criteria.strip(), lo=lo, hi=hi)

    def parse(ans) -> tuple[int, str]:
        return int(ans.score), ans.reason.strip()

    return Ask([system(sys_text), user(body + "\n\nJSON:")], rubric_model(lo, hi), parse)
