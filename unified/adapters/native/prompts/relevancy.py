"""answer_relevancy: questions generated back from the response, plus a noncommittal flag.

Two independently written generation prompts (judge A, judge B). The question itself is
never shown, so the generated questions reflect only what the response answers.
"""

from __future__ import annotations

from unified.judge.base import JudgeOutputError

from ..schemas import GeneratedQuestions
from . import Ask, Variant, system, user

_A = """
Read an answer and write {n} different questions that this answer would be a direct,
complete reply to. Each question must be answerable from the answer alone. Also set
"noncommittal" to true when the answer is evasive, vague or refuses ("I don't know",
"it depends", "I cannot say"), else false.

Example
Answer: Albert Einstein was born in Ulm, Germany, in 1879.
JSON: {{"questions": ["Where was Albert Einstein born?", "In which city and year was
Einstein born?", "What is Albert Einstein's birthplace?"], "noncommittal": false}}

Answer with JSON only: {{"questions": [string, ...], "noncommittal": bool}}.
"""

_B = """
Reverse engineering a chatbot reply. Imagine the user message that produced the reply
below and write {n} plausible phrasings of that user message. Flag the reply as
noncommittal (true) if it avoids committing to an answer — hedging, "not sure", "cannot
help with that" — otherwise false. JSON keys: "questions" (list of {n} strings),
"noncommittal" (boolean).
"""


def question_generation(variant: Variant, response: str, n: int = 3) -> Ask:
    """``parse`` returns ``(questions, noncommittal)``."""
    sys_text = (_A if variant == "A" else _B).format(n=n)
    label = "Answer" if variant == "A" else "Chatbot reply"
    messages = [system(sys_text), user(f"{label}: {response.strip()}\nJSON:")]

    def parse(ans: GeneratedQuestions) -> tuple[list[str], bool]:
        qs = [q.strip() for q in ans.questions if q and q.strip()]
        if not qs:
            raise JudgeOutputError("the judge generated no question (only empty strings)")
        return qs, bool(ans.noncommittal)

    return Ask(messages, GeneratedQuestions, parse)
