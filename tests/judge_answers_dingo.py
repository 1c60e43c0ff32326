"""Loopback answers for dingo-python's RAG prompts — plumbing, never judgment quality.

Dingo's five RAG evaluators send no response format: each prompt shows a JSON example in
its text (in Chinese, but for answer relevancy's) and dingo parses the answer itself. The
loopback server would answer free text, which dingo refuses, so this module answers each
prompt in its own shape, deterministically per prompt:

- faithfulness ("你是一个严格的事实验证专家"): 1–3 statements with 0/1 verdicts and a
  ``score`` equal to 10 · faithful / statements, rounded to 2 places;
- answer relevancy ("Generate a question for the given answer"): a question built from the
  prompt's hash and ``noncommittal`` 0;
- context relevancy ("相关性分数"): ``rating`` 0, 1 or 2;
- context recall ("归因"): 1–3 classifications with ``attributed`` 0/1;
- context precision ("信息检索专家"): ``verdict`` true/false.

``shaped(fix)`` returns an ``answer_fn`` whose dingo answers are first passed through
``fix(kind, answer)``, to serve a bad shape (a missing score, a string verdict) to a test.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any, Callable

#: a mark of each prompt (its first words that no other framework's prompt has) -> kind
MARKS = {
    "你是一个严格的事实验证专家": "faithfulness",
    "Generate a question for the given answer and identify if the answer is noncommittal": "answer_relevancy",
    "专门评估上下文对回答问题的相关性分数": "context_relevancy",
    "请分析答案中的每个句子，并分类该句子是否可以归因于给定的上下文": "context_recall",
    "你是一个信息检索专家": "context_precision",
}
WORDS = ("river", "capital", "tower", "built", "city", "when", "which", "france", "paris", "year")


def kind_of(body: dict) -> str | None:
    """Which dingo prompt ``body`` is, or None for any other request."""
    text = " ".join(str(m.get("content")) for m in body.get("messages", []))
    return next((kind for mark, kind in MARKS.items() if mark in text), None)


def _rng(body: dict, seed: int = 5) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{json.dumps(body.get('messages', []), sort_keys=True)}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def answer_for(kind: str, rng: random.Random) -> dict[str, Any]:
    """A valid answer of ``kind`` drawn from ``rng``."""
    if kind == "faithfulness":
        verdicts = [rng.choice((0, 1)) for _ in range(rng.randint(1, 3))]
        statements = [
            {"statement": f"statement {i}", "reason": "loopback", "verdict": v} for i, v in enumerate(verdicts)
        ]
        return {"statements": statements, "score": round(10 * sum(verdicts) / len(verdicts), 2)}
    if kind == "answer_relevancy":
        return {"question": " ".join(rng.choice(WORDS) for _ in range(4)) + "?", "noncommittal": 0}
    if kind == "context_relevancy":
        return {"rating": rng.choice((0, 1, 2))}
    if kind == "context_recall":
        n = rng.randint(1, 3)
        return {
            "classifications": [
                {"statement": f"statement {i}", "reason": "loopback", "attributed": rng.choice((0, 1))}
                for i in range(n)
            ]
        }
    return {"verdict": rng.choice((True, False)), "reason": "loopback"}


def shaped(fix: Callable[[str, dict[str, Any]], Any] | None = None) -> Callable[[dict], Any]:
    """An ``answer_fn`` for dingo's prompts (None for any other request); ``fix(kind,
    answer)`` may replace an answer (a dict is sent as JSON, a str verbatim)."""

    def answer(body: dict) -> Any:
        kind = kind_of(body)
        if kind is None:
            return None
        a = answer_for(kind, _rng(body))
        return a if fix is None else fix(kind, a)

    return answer


# the judge server's framework_answers hook: dingo's prompts, None for any other request
answer_fn = shaped()
