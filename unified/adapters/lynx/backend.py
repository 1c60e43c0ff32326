"""The Lynx backend: Patronus AI's published hallucination-judge contract over our judge.

The prompt below is Lynx's, verbatim: the prompt Patronus AI fine-tuned Lynx on and
recommends for inference, published in the model card of
``PatronusAI/Llama-3-Patronus-Lynx-8B-Instruct`` (and of the 70B model) on Hugging Face,
section "How to Get Started with the Model", and used by the paper's evaluation code
(Ravi et al., "Lynx: An Open Source Hallucination Evaluation Model", arXiv:2407.08488;
github.com/patronus-ai/Lynx-hallucination-detection). Patronus AI publishes the model
cards under CC BY-NC 4.0 (the 70B card, and the 8B card at release; the 8B card now
names the Llama 3 Community License). Attribution: Patronus AI.

One sample, one request: the prompt as the one user message (as the model card sends it),
through our ``ChatJudge`` as free text (cache, retries, breaker, accounting), then a
strict parse of the answer (``parse_verdict``):

- the answer is one JSON object, alone (a single Markdown code fence around it is
  tolerated, nothing else: no prose before or after);
- it has both keys the prompt asks for, each once: ``REASONING`` (a string or a list of
  strings, Lynx's bullet points) and ``SCORE``, exactly ``"PASS"`` or ``"FAIL"``;
- anything else is the task's error, quoting what the judge said — never a number.

PASS → raw 1, FAIL → raw 0, ``value = 10 · raw``; the reasoning is the Score's reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from unified.adapters.framework import FrameworkBackend, Outcome
from unified.adapters.lynx import FACTS
from unified.metrics import MetricRef
from unified.redact import one_line
from unified.sample import Sample

# Verbatim from the Lynx model card (see the module docstring); a str.format template.
PROMPT = """
Given the following QUESTION, DOCUMENT and ANSWER you must analyze the provided answer and determine whether it is faithful to the contents of the DOCUMENT. The ANSWER must not offer new information beyond the context provided in the DOCUMENT. The ANSWER also must not contradict information provided in the DOCUMENT. Output your final verdict by strictly following this format: "PASS" if the answer is faithful to the DOCUMENT and "FAIL" if the answer is not faithful to the DOCUMENT. Show your reasoning.

--
QUESTION (THIS DOES NOT COUNT AS BACKGROUND INFORMATION):
{question}

--
DOCUMENT:
{context}

--
ANSWER:
{answer}

--

Your output should be in JSON FORMAT with the keys "REASONING" and "SCORE":
{{"REASONING": <your reasoning as bullet points>, "SCORE": <your final score>}}
"""  # noqa: E501

#: the verdicts and the raw value each stands for
VERDICTS = {"PASS": 1.0, "FAIL": 0.0}
#: how much of an unusable answer the error quotes (the task's error is one line of 300)
QUOTE = 160
_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?\s*```$", re.DOTALL)


class LynxAnswerError(ValueError):
    """The judge's answer is not Lynx's JSON verdict; the message quotes it."""


def lynx_messages(sample: Sample) -> list[dict[str, str]]:
    """The one user message of the model card: the prompt with the question, the
    retrieved contexts joined by blank lines as the DOCUMENT, and the response as the
    ANSWER."""
    content = PROMPT.format(
        question=sample.user_input or "",
        context="\n\n".join(sample.retrieved_contexts or []),
        answer=sample.response or "",
    )
    return [{"role": "user", "content": content}]


def _refuse(why: str, text: str) -> LynxAnswerError:
    quoted = one_line(text, QUOTE) or "(empty)"
    return LynxAnswerError(f"the judge's answer {why}, so it is no Lynx verdict: {quoted}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` keeps the last of two equal keys; a verdict given twice is refused."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} given twice")
        out[key] = value
    return out


def parse_verdict(text: str) -> tuple[float, str]:
    """``(raw, reasoning)`` from a Lynx answer, by the rules of the module docstring;
    ``LynxAnswerError`` (quoting the answer) for anything else."""
    body = text.strip()
    fenced = _FENCE.match(body)
    body = fenced.group(1).strip() if fenced else body
    try:
        answer = json.loads(body, object_pairs_hook=_unique_keys)
    except ValueError as e:
        raise _refuse(f"is not one JSON object ({e})", text) from None
    if not isinstance(answer, dict):
        raise _refuse("is not a JSON object", text)
    missing = [k for k in ("REASONING", "SCORE") if k not in answer]
    if missing:
        raise _refuse(f"has no {' and no '.join(missing)}", text)
    score, reasoning = answer["SCORE"], answer["REASONING"]
    if not isinstance(score, str) or score not in VERDICTS:
        raise _refuse(f'gives SCORE {json.dumps(score)}, not "PASS" or "FAIL"', text)
    if isinstance(reasoning, list) and all(isinstance(r, str) for r in reasoning):
        reasoning = "\n".join(reasoning)
    if not isinstance(reasoning, str):
        raise _refuse("gives a REASONING that is neither text nor a list of texts", text)
    return VERDICTS[score], reasoning


def prompt_version() -> str:
    """``model-card-<first 12 hex of sha256(PROMPT)>``: what decides the questions asked
    (part of every Score's fingerprint, so an edited prompt never resumes old scores)."""
    return "model-card-" + hashlib.sha256(PROMPT.encode()).hexdigest()[:12]


class LynxBackend(FrameworkBackend):
    """faithfulness and hallucination by the Lynx contract over our chat judge.

    Options as ``FrameworkBackend`` (``concurrency``; ``run_dir``). No bracket parameter
    but ``threshold`` (the prompt and the verdict are fixed)."""

    FACTS = FACTS

    def version(self) -> str:
        return prompt_version()

    def error_text(self, e: BaseException) -> str:
        return str(e) if isinstance(e, LynxAnswerError) else super().error_text(e)

    async def evaluate(self, sample: Sample, ref: MetricRef, row: Any, details: dict[str, Any]) -> Outcome:
        """One free-text request with the model card's message; its strict parse."""
        text = await self.judges.require_chat().ask_text(lynx_messages(sample))
        raw, reasoning = parse_verdict(text)
        details["verdict"] = "PASS" if raw else "FAIL"
        return Outcome(raw, reason=reasoning)
