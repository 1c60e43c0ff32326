"""The TruLens backend: our Sample and judge inside trulens-feedback 2.x feedback functions.

TruLens does the judging, unchanged; this module only translates:

- our judge -> TruLens's documented extension point, an ``LLMProvider`` subclass
  (``JudgeTruLensProvider``) whose ``_create_chat_completion`` asks our ``ChatJudge``:
  with TruLens's ``response_format`` (``ChainOfThoughtResponse``) the validated instance,
  without it the judge's free text. No provider package (``trulens-providers-openai``,
  LiteLLM) is involved, no key is read; the provider's ``Endpoint`` neither paces (the
  judge layer limits) nor retries (the judge layer retries: TruLens's own 3 retries with
  2/4/8 s sleeps would multiply ours);
- ``Sample`` -> the feedback function's arguments, as TruLens's RAG triad selects them;
- TruLens's number -> ``Score``. Feedback functions normalise the judge's rating r on
  [lo, hi] (0–3 by default) to raw = (r − lo)/(hi − lo) ∈ [0, 1], so

      value = 10 · raw

  ``context_relevancy`` runs once per retrieved context and averages (the triad's
  ``agg=np.mean``); ``faithfulness`` (groundedness) averages the per-statement ratings.

TruLens feedback functions are synchronous and groundedness fans statements out to a
thread pool of its own. They run in worker threads here; each judge request is handed
back to the event loop the backend runs on, inside a copy of the task's context, so every
call is cached, limited and billed to its (backend, metric, sample) like a native call.

Two TruLens defaults are changed for groundedness, and said in ``details['note']``:
sentences are split by the judge (``use_sent_tokenize=False``) because NLTK's splitter
calls ``nltk.download`` — a network request — on every use; and TruLens's trivial-statement
filter is off (``filter_trivial_statements=False``) because it passes the judge's answer
to Python's ``eval``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import re
from typing import Any, Callable, Sequence

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before trulens is imported
# trulens.core warns on stderr at import that its optional `jsonschema` requirement is
# absent; nothing here uses it, and a line on every import reads like a failure
logging.getLogger("trulens.core.utils.imports").setLevel(logging.ERROR)

from importlib.metadata import version  # noqa: E402

from pydantic import BaseModel, PrivateAttr  # noqa: E402
from trulens.core.feedback import feedback as core_feedback  # noqa: E402
from trulens.core.feedback.endpoint import Endpoint  # noqa: E402
from trulens.feedback.groundtruth import GroundTruthAgreement  # noqa: E402
from trulens.feedback.llm_provider import LLMProvider  # noqa: E402

from unified.adapters.framework import FrameworkBackend, Outcome, on_loop  # noqa: E402
from unified.adapters.trulens import FACTS, TruLensMetric  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402
from unified.text import cut_at_word, words  # noqa: E402

VERSION = version("trulens-feedback")
ENDPOINT = "unified-judge"
# the endpoint logs every failed request at ERROR before raising; the failure is the
# task's error already (one line, scrubbed), so a second, unscrubbed copy on stderr goes
logging.getLogger("trulens.core.feedback.endpoint").setLevel(logging.CRITICAL)


class JudgeTruLensProvider(LLMProvider):
    """TruLens's LLM provider answered by our ``ChatJudge``.

    ``loop``: the event loop the judge layer runs on; TruLens calls
    ``_create_chat_completion`` from worker threads, and each request is submitted to that
    loop inside a copy of ``context`` (the task's accounting scope). Without a loop (plain
    synchronous use) the request runs on a fresh loop in the calling thread.
    """

    model_engine: str = "unified-judge"
    _judges: Judges = PrivateAttr()
    _loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)
    _context: contextvars.Context | None = PrivateAttr(default=None)

    def __init__(
        self, judges: Judges, loop: asyncio.AbstractEventLoop | None = None, context: contextvars.Context | None = None
    ):
        # no pacing (the judge layer limits), no retries (the judge layer retries); one
        # endpoint per provider, unregistered, so its pace deque dies with the task
        endpoint = Endpoint(name=ENDPOINT, rpm=1e9, retries=0, _register_instance=False)
        super().__init__(model_engine=getattr(judges.chat, "model", "") or "unified-judge", endpoint=endpoint)
        self._judges, self._loop, self._context = judges, loop, context

    async def _ask(self, messages: list[dict[str, str]], response_format: type[BaseModel] | None) -> Any:
        chat = self._judges.require_chat()
        if response_format is not None:
            return await chat.ask(messages, response_format)
        text = await chat.ask_text(messages)
        if (problem := negative_rating(text)) is not None:
            raise ValueError(problem)
        return text

    def _create_chat_completion(
        self,
        prompt: str | None = None,
        messages: Sequence[dict] | None = None,
        response_format: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> Any:
        msgs = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages or ()]
        if prompt is not None:
            msgs.append({"role": "user", "content": prompt})
        return on_loop(self._loop, lambda: self._ask(msgs, response_format), self._context)


#: a number with a minus sign: TruLens's rating parser reads the digits and drops the sign
_NEGATIVE = re.compile(r"(?<![\w.])[-−–]\s*\d+(?:\.\d+)?")


def negative_rating(text: str) -> str | None:
    """Why a free-text rating cannot be handed to TruLens, or None. TruLens reads a rating
    out of the text with a pattern that has no sign: "-3" is read as 3 and "-1" (TruLens's
    own "could not grade") as 1, each a confident score. Every TruLens scale starts at 0,
    so a negative number in a rating answer is out of scale: the task fails saying what the
    judge answered."""
    found = _NEGATIVE.search(text)
    if found is None:
        return None
    return (
        f"the judge answered a negative rating ({found.group(0).strip()!r}), which TruLens would read without its sign"
    )


# ---------------------------------------------------------------- how each row is called

GROUNDEDNESS_CONFIGS = core_feedback.GroundednessConfigs(use_sent_tokenize=False, filter_trivial_statements=False)

Run = Callable[[JudgeTruLensProvider, Sample], list[Any]]
# (the ``or`` defaults below only satisfy the types: ``_precheck`` has refused a sample
# without these fields)


def _groundedness(p: JudgeTruLensProvider, s: Sample) -> list[Any]:
    # the triad's source selector collects the contexts as a list (collect_list=True)
    return [
        p.groundedness_measure_with_cot_reasons(
            source=s.retrieved_contexts,  # type: ignore[arg-type]  # a list, as the triad passes it
            statement=s.response or "",
            groundedness_configs=GROUNDEDNESS_CONFIGS,
        )
    ]


#: share of a statement's words that must be the response's, and of the response's words
#: the statements must hold: a judge's split may drop a comma or re-case a word, never
#: add a preamble or leave a sentence out
SPLIT_MATCH = 0.8
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")


def split_problem(s: Sample, results: list[Any]) -> str | None:
    """Why TruLens's grades do not grade the response: with ``use_sent_tokenize=False`` the
    judge splits it into statements, and TruLens grades whatever lines come back. An empty
    split, a line that is not the response ("Sure! Here are the sentences:") or a split
    that leaves part of the response out gave a valid-looking value. None when the
    statements are the response's (``SPLIT_MATCH`` of the words both ways)."""
    meta = _split(results[0])[1] if len(results) == 1 else {}
    items = meta.get("reasons")
    statements = [str(r.get("criteria") or "") for r in items if isinstance(r, dict)] if isinstance(items, list) else []
    statements = [_LIST_MARKER.sub("", st) for st in statements]  # "1. Yes." is the sentence "Yes."
    said = set(words(s.response))
    if not any(words(st) for st in statements):
        return "the judge's sentence split of the response returned no statement; no score"
    for st in statements:
        w = words(st)
        if sum(x in said for x in w) < SPLIT_MATCH * len(w) or not w:
            return f"the judge's sentence split returned {cut_at_word(st, 60)!r}, which is not the response's; no score"
    covered = {x for st in statements for x in words(st)}
    if sum(x in covered for x in said) < SPLIT_MATCH * len(said):
        return "the judge's sentence split left part of the response out; no score"
    return None


def _answer_relevance(p: JudgeTruLensProvider, s: Sample) -> list[Any]:
    return [p.relevance_with_cot_reasons(prompt=s.user_input or "", response=s.response or "")]


def _context_relevance(p: JudgeTruLensProvider, s: Sample) -> list[Any]:
    # the triad's context selector hands one context at a time (collect_list=False), agg=np.mean
    return [
        p.context_relevance_with_cot_reasons(question=s.user_input or "", context=c) for c in s.retrieved_contexts or []
    ]


def _agreement(p: JudgeTruLensProvider, s: Sample) -> list[Any]:
    truth = GroundTruthAgreement([{"query": s.user_input, "expected_response": s.reference}], provider=p)
    return [truth.agreement_measure(prompt=s.user_input or "", response=s.response or "")]


Check = Callable[[Sample, list[Any]], str | None]  # why the results grade something else

#: canonical metric -> (how TruLens's RAG triad calls its feedback function, the check of
#: its results); the rows' facts are ``TRULENS_METRICS``
RUNS: dict[str, tuple[Run, Check | None]] = {
    "faithfulness": (_groundedness, split_problem),
    "answer_relevancy": (_answer_relevance, None),
    "context_relevancy": (_context_relevance, None),
    "answer_correctness": (_agreement, None),
}
assert set(RUNS) == set(FACTS.table), "every TruLens row has its call"


def _split(result: Any) -> tuple[Any, dict[str, Any]]:
    """A feedback function's result -> (number, metadata dict)."""
    if isinstance(result, tuple):
        return result[0], result[1] if isinstance(result[1], dict) else {}
    return result, {}


def _num(x: Any) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _reason(meta: dict[str, Any]) -> str | None:
    """TruLens's reasons -> one text: the ``reason`` string, or groundedness's per-statement
    list (``criteria`` = the statement, ``supporting_evidence``, ``score``)."""
    if isinstance(meta.get("reason"), str):
        return meta["reason"]
    items = meta.get("reasons")
    if isinstance(items, list):
        return (
            "\n".join(
                f"{r.get('criteria')} -> {_num(r.get('score'))}: {r.get('supporting_evidence')}"
                for r in items
                if isinstance(r, dict)
            )
            or None
        )
    return items if isinstance(items, str) else None


def combine(results: list[Any]) -> tuple[Any, str | None]:
    """Results of one task -> (raw, reason): one as it is, several (one per context) as
    their mean, reasons numbered. The numbers are left as TruLens returned them."""
    parts = [_split(r) for r in results]
    if len(parts) == 1:
        return parts[0][0], _reason(parts[0][1])
    try:
        values = [float(v) for v, _ in parts]
        # a part outside [0, 1] (TruLens's -1 "could not grade") is the task's raw as it
        # is, for the range check to refuse: averaged, (-1 + 1 + 1) / 3 = 0.33 passed it
        raw: Any = next((v for v in values if not 0.0 <= v <= 1.0), sum(values) / len(values))
    except (TypeError, ValueError):
        raw = None
    reason = "\n".join(f"[{i + 1}] {_reason(meta)}" for i, (_, meta) in enumerate(parts))
    return raw, reason


class TruLensBackend(FrameworkBackend):
    """Run canonical metrics with trulens-feedback 2.x over our judge.

    Options as ``FrameworkBackend`` (``concurrency``: feedback evaluations at once, each
    on a worker thread of this backend's own pool; ``run_dir``).
    """

    FACTS = FACTS
    metric_key = "function"

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix="trulens")

    def version(self) -> str:
        return str(VERSION)

    def provider(self) -> JudgeTruLensProvider:
        """A provider bound to the running loop and the current task's context."""
        return JudgeTruLensProvider(self.judges, asyncio.get_running_loop(), contextvars.copy_context())

    async def evaluate(self, sample: Sample, ref: MetricRef, row: TruLensMetric, details: dict[str, Any]) -> Outcome:
        """The row's feedback function on a worker thread, as the triad selects its
        arguments; the mapped functions run with TruLens's own defaults (groundedness with
        the two documented exceptions), so every bracket parameter but the bound is refused."""
        run, check = RUNS[ref.canonical]
        details["judge_scale"] = row.judge_scale
        results = await asyncio.get_running_loop().run_in_executor(self._pool, run, self.provider(), sample)
        raw, reason = combine(results)
        why = f"returned {raw!r}"
        if check is not None and (problem := check(sample, results)) is not None:
            raw, why = None, problem
        return Outcome(raw, why, reason=reason)

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        await super().aclose()
