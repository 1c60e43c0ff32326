"""Claims: extraction from a text, verification against contexts, comparison of two
claim lists.

Extraction is shared by every metric that needs a text's claims, so its prompt depends
only on (question, text): the same request from any metric is a judge-cache hit.

Verification is one call per judge for all claims against all contexts. It has up to two
sections — the response's claims (faithfulness, hallucination) and the reference's
claims (context_recall, context_correctness). The plan asks every section the sample
allows, whichever of these metrics are requested (``table.asks``), so they share one
call and a metric alone is asked the same prompt.
"""

from __future__ import annotations

from typing import Sequence

from ..schemas import ClaimList, keyed_model
from . import Ask, Variant, evidence_ask, keyed, system, user

# ---------------------------------------------------------------- extraction

_EXTRACT_SYSTEM = """
You break a text into atomic factual claims. A claim is one short, self-contained
statement of fact that can be checked on its own: replace pronouns with the names they
stand for and keep numbers, dates and qualifiers. Do not add facts the text does not
state. Greetings, questions, hedges and refusals ("I don't know", "I cannot answer that")
are not claims: a text with no factual content gives an empty list. A text shown without
a question (a summary, a description) is read on its own.

Example
Question: Who wrote Dune and when was it published?
Text: Dune was written by Frank Herbert. He published it in 1965, and it won the Hugo.
Answer: {"claims": ["Dune was written by Frank Herbert.",
                    "Frank Herbert published Dune in 1965.",
                    "Dune won the Hugo Award."]}

Example
Question: What is the boiling point of ethanol?
Text: I'm not sure, sorry.
Answer: {"claims": []}

Answer with JSON only: {"claims": [string, ...]}.
"""


def extraction(question: str | None, text: str) -> Ask:
    """Claims of ``text`` (read in the light of ``question``; a text that answers no
    question — a summary, a data-to-text response — is shown alone). Identical for
    every metric."""
    asked = f"Question: {question.strip()}\n" if question and question.strip() else ""
    messages = [system(_EXTRACT_SYSTEM), user(f"{asked}Text: {text.strip()}\nAnswer:")]

    def parse(ans: ClaimList) -> list[str]:
        return [c.strip() for c in ans.claims if c and c.strip()]

    return Ask(messages, ClaimList, parse)


# ---------------------------------------------------------------- verification

_VERIFY_A = """
You are a careful fact-checker. Below come numbered statements. Judge each statement
ONLY against the contexts above, never against your own knowledge:
- "supported": the contexts state it or it follows directly from them;
- "contradicted": the contexts state something incompatible with it;
- "not_found": the contexts say nothing that settles it.
Give exactly one verdict for every statement key listed, and no other keys.
"""

_VERIFY_B = """
Task: evidence check. The contexts above are the evidence; the statements to check come
next. For every statement answer one word:
  supported     -> the evidence contains it (explicitly or by direct implication)
  contradicted  -> the evidence says the opposite or an incompatible fact
  not_found     -> the evidence does not decide it
Outside knowledge does not count. One answer per listed key; no extra keys.
"""


def verification(
    variant: Variant, contexts: Sequence[str], response_claims: Sequence[str], reference_claims: Sequence[str]
) -> Ask:
    """Support verdict for each response claim and each reference claim against all
    contexts. ``parse`` returns ``{"response": [verdict…], "reference": [verdict…]}``.

    Both judges see the shared opening (``evidence``: the contexts in their given order),
    so judge B re-reads none of what judge A read; they differ in wording, keys and the
    order of the two statement sections."""
    if not response_claims and not reference_claims:
        raise ValueError("verification needs at least one claim")
    if variant == "A":
        rkey, fkey = "response", "reference"
        parts = []
        if response_claims:
            parts.append(f"STATEMENTS FROM THE RESPONSE (keys {rkey}1, {rkey}2, …)\n" + keyed(rkey, response_claims))
        if reference_claims:
            parts.append(
                f"STATEMENTS FROM THE REFERENCE ANSWER (keys {fkey}1, {fkey}2, …)\n" + keyed(fkey, reference_claims)
            )
        task = _VERIFY_A
    else:
        rkey, fkey = "answer", "gold"
        parts = []
        if reference_claims:
            parts.append(f"Gold-answer statements (keys {fkey}1, {fkey}2, …):\n" + keyed(fkey, reference_claims))
        if response_claims:
            parts.append(f"Answer statements (keys {rkey}1, {rkey}2, …):\n" + keyed(rkey, response_claims))
        task = _VERIFY_B
    keys = [(f"{rkey}{i}", "support") for i in range(1, len(response_claims) + 1)]
    keys += [(f"{fkey}{i}", "support") for i in range(1, len(reference_claims) + 1)]
    schema = keyed_model(f"Verification{variant}", tuple(keys))
    messages = evidence_ask(contexts, task, "\n\n".join(parts))

    def parse(ans) -> dict[str, list[str]]:
        data = ans.model_dump()
        return {
            "response": [data[f"{rkey}{i}"] for i in range(1, len(response_claims) + 1)],
            "reference": [data[f"{fkey}{i}"] for i in range(1, len(reference_claims) + 1)],
        }

    return Ask(messages, schema, parse)


# ---------------------------------------------------------------- comparison

_COMPARE_A = """
You compare the claims of a response with the claims of a reference answer to the same
question. For each response claim say "yes" when the reference claims state the same fact
(or directly imply it), else "no". For each reference claim say "yes" when the response
claims convey that fact, else "no". Paraphrases count as the same fact; a different
number, name or date does not. One answer per listed key, no other keys.
"""

_COMPARE_B = """
Grading an answer against a gold answer, fact by fact. Gold facts come first, then the
facts the answer states. For each gold fact: "yes" if the answer states it (wording may
differ), "no" if it is missing or stated differently. For each answer fact: "yes" if the
gold facts back it up, "no" if they do not. Use exactly the listed keys.
"""


def comparison(variant: Variant, question: str, response_claims: Sequence[str], reference_claims: Sequence[str]) -> Ask:
    """For answer_correctness. ``parse`` returns ``{"tp": [bool per response claim],
    "covered": [bool per reference claim]}``."""
    if variant == "A":
        rkey, fkey = "response", "reference"
        body = (
            f"Question: {question.strip()}\n\nRESPONSE CLAIMS\n"
            + (keyed(rkey, response_claims) or "(none)")
            + "\n\nREFERENCE CLAIMS\n"
            + (keyed(fkey, reference_claims) or "(none)")
        )
        sys_text = _COMPARE_A
    else:
        rkey, fkey = "answer", "gold"
        body = (
            f"Question: {question.strip()}\n\nGold facts:\n"
            + (keyed(fkey, reference_claims) or "(none)")
            + "\n\nAnswer facts:\n"
            + (keyed(rkey, response_claims) or "(none)")
        )
        sys_text = _COMPARE_B
    keys = [(f"{rkey}{i}", "yesno") for i in range(1, len(response_claims) + 1)]
    keys += [(f"{fkey}{i}", "yesno") for i in range(1, len(reference_claims) + 1)]
    schema = keyed_model(f"Comparison{variant}", tuple(keys))
    messages = [system(sys_text), user(body + "\n\nAnswer with JSON only.")]

    def parse(ans) -> dict[str, list[bool]]:
        data = ans.model_dump()
        return {
            "tp": [data[f"{rkey}{i}"] == "yes" for i in range(1, len(response_claims) + 1)],
            "covered": [data[f"{fkey}{i}"] == "yes" for i in range(1, len(reference_claims) + 1)],
        }

    return Ask(messages, schema, parse)
