"""Prompts of the native backend, one module per metric family.

Every builder returns an ``Ask``: the chat messages, the pydantic schema of the answer,
and ``parse`` — which maps the validated answer back to the *original* item order (judge
B shows items in another order) and raises ``JudgeOutputError`` when the answer does not
fit the request. Judge A and judge B are two independently worded phrasings; B also
changes the order in which texts are shown, against position bias.

Layout for a local judge's prompt (KV) cache: a prompt that shows the sample's contexts
starts with the part every such call of the sample shares — ``EVIDENCE_SYSTEM`` and the
contexts in their given order (``evidence``) — and only then the variant's instructions
and the items that vary (claims, question, response). llama.cpp re-reads only what
follows the longest prefix it has already read, so judge B's verification, the
groundedness and sufficiency ratings and judge A's context grading of a sample read the
contexts once between them. The exception is judge B's context grading: there the
contexts are the items rated, and B shows them reversed against position bias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from pydantic import BaseModel

Variant = Literal["A", "B"]

# Part of every native task's configuration fingerprint: a prompt change changes the
# answers, so a run folder scored with other prompts is refused on resume (``--fresh``)
# instead of mixing scores. Raise it with every change of wording or layout
# (tests/test_native_retry_prompts.py pins the sources' digest per version).
# 2: the shared opening (system + contexts first) for the local judge's prompt cache.
# 3: per-claim keys without underscores (``response3``, not ``response_claim_3``).
PROMPTS_VERSION = 3


@dataclass(frozen=True)
class Ask:
    """One judge request: messages, answer schema, and answer -> neutral result."""

    messages: list[dict[str, str]]
    schema: type[BaseModel]
    parse: Callable[[Any], Any]


def numbered(label: str, texts: Sequence[str]) -> str:
    """``[label 1] text`` blocks, one per text, numbered from 1 in the order given."""
    return "\n\n".join(f"[{label} {i}]\n{t.strip()}" for i, t in enumerate(texts, 1))


def keyed(key: str, texts: Sequence[str]) -> str:
    """``[key1] text`` blocks: each item shown under the exact JSON key its verdict goes
    to, the label plus its number from 1 (``response1``, ``response2``, …).

    Why no underscore: a judge writes every key of a per-item answer, and tokenizers cut
    ``response_claim_12`` into ~6 pieces but ``response12`` into ~3 (Qwen2.5: 111 vs 87
    tokens for 12 verdicts). On a local model that generates ~10 tokens/s, that is
    seconds per sample; on a paid one, output tokens."""
    return "\n\n".join(f"[{key}{i}]\n{t.strip()}" for i, t in enumerate(texts, 1))


# Shared by every prompt that shows a sample's contexts in their given order: it must not
# depend on the variant, the metric or the items, or the prefix stops being shared.
EVIDENCE_SYSTEM = """
You are a careful judge of texts against retrieved contexts. The numbered contexts come
first; the task and the items to judge follow them. Judge only against what the contexts
say, never against your own knowledge. Answer with JSON only.
"""


def evidence(contexts: Sequence[str]) -> str:
    """The shared opening of a user turn: every context, numbered in the given order,
    closed by a fixed line (so the tokens up to it never depend on the text after it)."""
    return "CONTEXTS\n" + numbered("Context", contexts) + "\n\nEND OF CONTEXTS"


def evidence_ask(
    contexts: Sequence[str], task: str, items: str, closing: str = "Answer with JSON only."
) -> list[dict[str, str]]:
    """Messages of a judgment over contexts: shared system and contexts, then the
    variant's ``task`` instructions, then the ``items`` that vary, then ``closing``."""
    body = f"{evidence(contexts)}\n\n{task.strip()}\n\n{items.strip()}\n\n{closing}"
    return [system(EVIDENCE_SYSTEM), user(body)]


def display_order(n: int, variant: Variant) -> list[int]:
    """Original indices in the order a judge sees them: A as given, B reversed."""
    return list(range(n)) if variant == "A" else list(range(n - 1, -1, -1))


def system(text: str) -> dict[str, str]:
    return {"role": "system", "content": text.strip()}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text.strip()}
