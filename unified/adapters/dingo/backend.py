"""The Dingo backend: our Sample and judge inside dingo-python 2.5's RAG evaluators.

Dingo does the scoring, unchanged; this module only translates:

- ``Sample`` -> dingo's ``Data`` as its RAG examples build it: ``prompt`` (question),
  ``content`` (response), ``context`` (retrieved contexts) and, for context recall, the
  reference as ``raw_data["expected_output"]`` (its documented slot for the ground truth);
  then ``Evaluator.eval(data)``, as dingo documents;
- our judge -> dingo's evaluators are classes whose configuration (``dynamic_config``),
  OpenAI client (``client``) and embedding client (``embedding_model``) are class-level
  globals shared by every caller in the process. The backend never touches dingo's own
  classes: it builds a subclass per (evaluator, parameters, bound) whose three slots are
  its own — ``client`` a ``JudgeDingoClient``, the OpenAI client surface dingo calls
  (``chat.completions.create``, ``embeddings.create``) answered by our ``ChatJudge`` and
  ``Embedder`` (cache, retries, breaker, accounting). Two backends over two different
  judges therefore run side by side in one process, each on its own classes;
- dingo's ``EvalDetail`` -> ``Score``: the raw value is ``EvalDetail.score``, already on
  0–10, so ``value = raw`` (answer relevancy's negative cosines are shown as 0). Dingo
  reports a failed call as ``score=None, status=True`` with a label such as
  ``QUALITY_BAD.APIConnectionError``: a result counts as a verdict only when its label
  ends in ``_PASS`` or ``_FAIL``; anything else is the task's error with dingo's label and
  reason. A verdict resting on a judge answer dingo silently defaulted (a missing
  ``score`` read as 0, a string ``"false"`` read as a relevant context) is refused too.

Dingo's evaluators are synchronous (and sleep 1 s between their own retries), so each
runs in a worker thread of the backend; its judge calls come back to the task's event
loop, in the task's context, so they are billed to the task like any other.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import importlib.metadata
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Coroutine, TypeVar

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before dingo is imported (it reads no switch today; a later version may)

# dingo's logger is the *root* logger: importing it sets the root level to WARNING and adds
# a stderr handler, so every library's warnings would print twice. Both are put back.
_root = logging.getLogger()
_root_state = (_root.level, list(_root.handlers))

import dingo  # noqa: E402
from dingo.config.input_args import EvaluatorLLMArgs  # noqa: E402
from dingo.io.input import Data  # noqa: E402
from dingo.model import Model  # noqa: E402
from openai.types import CreateEmbeddingResponse  # noqa: E402
from openai.types.chat import ChatCompletion  # noqa: E402

_root.setLevel(_root_state[0])
for _handler in [h for h in _root.handlers if h not in _root_state[1]]:
    _root.removeHandler(_handler)


class _NotDingo(logging.Filter):
    """Drops the records dingo's own files log on the root logger (its failed calls, its
    warnings): the same words reach the Score's error, one line; on stderr they would be
    noise in the middle of a progress bar. Other loggers' records never pass this filter
    (a logger's filters see only the records logged on it)."""

    prefix = os.path.dirname(os.path.abspath(dingo.__file__)) + os.sep

    def filter(self, record: logging.LogRecord) -> bool:
        return not os.path.abspath(record.pathname).startswith(self.prefix)


if not any(isinstance(f, _NotDingo) for f in _root.filters):
    _root.addFilter(_NotDingo())

from unified.adapters.dingo import FACTS, DingoMetric  # noqa: E402
from unified.adapters.framework import FrameworkBackend, Outcome, on_loop  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402

R = TypeVar("R")


# ---------------------------------------------------------------- the judge as dingo's client


@dataclass
class _Task:
    """What one task's dingo call shares with the client: the task's event loop (judge
    calls run there), the judge's answers in order (what dingo's value rests on), the
    judge errors, and the requests that failed (dingo retries them; the judge layer has)."""

    loop: asyncio.AbstractEventLoop
    answers: list[str] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    failed: dict[str, BaseException] = field(default_factory=dict)


_task: contextvars.ContextVar[_Task | None] = contextvars.ContextVar("dingo_task", default=None)


class _Namespace:
    def __init__(self, **attrs: Any):
        self.__dict__.update(attrs)


class JudgeDingoClient:
    """The part of an ``openai.OpenAI`` client dingo's RAG evaluators call, answered by
    our judges: ``chat.completions.create(model, messages, **params)`` -> a
    ``ChatCompletion`` whose content is ``ChatJudge.ask_text(messages)`` (dingo parses the
    JSON itself); ``embeddings.create(model, input)`` -> a ``CreateEmbeddingResponse`` of
    ``Embedder.embed``. The keywords dingo passes along from its config (its
    ``temperature``, even its ``threshold``) are not sent: the judge's own settings decide
    the answer, as for every backend.

    Put it in an evaluator's ``client`` slot (and ``embedding_model = {"model_name": ...,
    "client": it}``). Inside a backend task, calls run on the task's loop; called from
    plain code they run on a loop of their own (``run_blocking``)."""

    def __init__(self, judges: Judges):
        self.judges = judges
        self.chat = _Namespace(completions=_Namespace(create=self._chat))
        self.embeddings = _Namespace(create=self._embed)

    def _run(self, factory: Callable[[], Coroutine[Any, Any, R]]) -> R:
        task = _task.get()
        return on_loop(task.loop if task is not None else None, factory)

    def _chat(self, model: str, messages: list[dict[str, Any]], **params: Any) -> ChatCompletion:
        msgs = [{"role": str(m.get("role", "user")), "content": str(m.get("content") or "")} for m in messages]
        task = _task.get()
        key = json.dumps(msgs, ensure_ascii=False)
        if task is not None and key in task.failed:  # dingo's retry of a request the judge layer gave up on
            raise task.failed[key]
        try:
            text = self._run(lambda: self.judges.require_chat().ask_text(msgs))
        except Exception as e:
            if task is not None:
                task.failed[key] = e
                task.errors.append(e)
            raise
        if task is not None:
            task.answers.append(text)
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        return ChatCompletion.model_validate(
            {"id": "unified-judge", "object": "chat.completion", "created": 0, "model": model, "choices": [choice]}
        )

    def _embed(self, model: str, input: str | list[str], **params: Any) -> CreateEmbeddingResponse:
        texts = [input] if isinstance(input, str) else list(input)
        try:
            vectors = self._run(lambda: self.judges.require_embedder().embed(texts))
        except Exception as e:
            if (task := _task.get()) is not None:
                task.errors.append(e)
            raise
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        usage = {"prompt_tokens": 0, "total_tokens": 0}  # counted by the judge layer, once
        return CreateEmbeddingResponse.model_validate({"object": "list", "model": model, "data": data, "usage": usage})


# ---------------------------------------------------------------- Sample -> Data, EvalDetail -> raw


def dingo_data(sample: Sample) -> Data:
    """``Sample`` -> dingo's ``Data`` (``prompt``, ``content``, ``context``; the reference
    as ``raw_data["expected_output"]``, where LLMRAGContextRecall reads it)."""
    raw = {"expected_output": sample.reference} if sample.reference else {}
    return Data(
        data_id=sample.id,
        prompt=sample.user_input or "",
        content=sample.response or "",
        context=list(sample.retrieved_contexts or []),
        raw_data=raw,
    )


def parse_answer(text: str) -> Any:
    """A judge answer as dingo reads it (a leading ```json / ``` and a trailing ``` cut,
    then JSON), or None when it is no JSON."""
    text = text.strip()
    for fence in ("```json", "```"):
        text = text.removeprefix(fence)
    text = text.removesuffix("```")
    try:
        return json.loads(text.strip())
    except json.JSONDecodeError:
        return None


def check_faithfulness(answers: list[Any], details: dict[str, Any]) -> str | None:
    """LLMRAGFaithfulness takes the judge's own ``score`` (a missing one is read as 0) and
    never recomputes it from the statement verdicts. Refused: no numeric ``score``. Kept
    beside it: ``dingo_verdict_score = 10 · faithful / statements`` and, when the two
    differ by more than 0.05, ``dingo_score_disagrees``."""
    answer = answers[-1] if isinstance(answers[-1], dict) else {}
    score = answer.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return f"the judge's answer has no numeric 'score' ({score!r}), which dingo reads as 0; no score"
    statements = [s for s in answer.get("statements") or [] if isinstance(s, dict)]
    share = 10 * sum(1 for s in statements if s.get("verdict") == 1) / len(statements) if statements else None
    details["dingo_statements"] = len(statements)
    details["dingo_verdict_score"] = None if share is None else round(share, 2)
    if share is not None and abs(share - float(score)) > 0.05:
        details["dingo_score_disagrees"] = True
    return None


def check_answer_relevancy(answers: list[Any], details: dict[str, Any]) -> str | None:
    """Each generated question must be a non-empty text with ``noncommittal`` 0 or 1:
    dingo embeds a missing question as "" and reads a missing flag as committal."""
    for i, a in enumerate(answers):
        if not isinstance(a, dict) or not str(a.get("question") or "").strip():
            return f"the judge's answer {i + 1} generated no question; no score"
        if a.get("noncommittal") not in (0, 1):
            return f"the judge's answer {i + 1} has noncommittal {a.get('noncommittal')!r}, not 0 or 1; no score"
    details["dingo_generated_questions"] = [a["question"] for a in answers]
    return None


def check_context_relevancy(answers: list[Any], details: dict[str, Any]) -> str | None:
    """The rating must be 0, 1 or 2 (dingo reads a missing one as 0)."""
    rating = answers[-1].get("rating") if isinstance(answers[-1], dict) else None
    if isinstance(rating, bool) or rating not in (0, 1, 2):
        return f"the judge rated the contexts {rating!r}, not 0, 1 or 2; no score"
    details["dingo_rating"] = rating
    return None


def check_context_recall(answers: list[Any], details: dict[str, Any]) -> str | None:
    """At least one classified statement, each ``attributed`` 0 or 1 (dingo scores no
    statements as 0 and counts any other value as not attributed)."""
    items = answers[-1].get("classifications") if isinstance(answers[-1], dict) else None
    if not isinstance(items, list) or not items:
        return "the judge classified no statement of the reference; no score"
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("attributed") not in (0, 1):
            got = item.get("attributed") if isinstance(item, dict) else item
            return f"the judge's statement {i + 1} is attributed {got!r}, not 0 or 1; no score"
    details["dingo_attributed"] = [item["attributed"] for item in items]
    return None


def check_context_precision(answers: list[Any], details: dict[str, Any]) -> str | None:
    """One ``verdict`` per context, a JSON true/false (dingo counts a missing one as false
    and any non-empty text, "false" too, as true); dingo also takes a list of verdict
    objects for one context (its majority)."""
    verdicts = []
    for i, a in enumerate(answers):
        items = a if isinstance(a, list) else [a]
        for item in items:
            v = item.get("verdict") if isinstance(item, dict) else None
            if not isinstance(v, bool):
                return f"the judge's verdict for context {i + 1} is {v!r}, not true/false; no score"
        verdicts.append(items[0]["verdict"] if len(items) == 1 else [item["verdict"] for item in items])
    details["dingo_verdicts"] = verdicts
    return None


#: dingo evaluator -> the check of the judge answers its verdict rests on
CHECKS: dict[str, Callable[[list[Any], dict[str, Any]], str | None]] = {
    "LLMRAGFaithfulness": check_faithfulness,
    "LLMRAGAnswerRelevancy": check_answer_relevancy,
    "LLMRAGContextRelevancy": check_context_relevancy,
    "LLMRAGContextRecall": check_context_recall,
    "LLMRAGContextPrecision": check_context_precision,
}


def is_verdict(label: str) -> bool:
    """Dingo's verdict labels end in ``_PASS`` or ``_FAIL``; every other label
    (``QUALITY_BAD.<Exception>``, ``…_ERROR``, ``…_NO_ANSWER``, ``REQUEST_FAILED``) says it
    could not judge."""
    return label.endswith(("_PASS", "_FAIL"))


def detail_outcome(row: DingoMetric, result: Any, task: _Task, used: int, details: dict[str, Any]) -> Outcome:
    """Dingo's ``EvalDetail`` -> the task's Outcome: its score when it is a verdict whose
    ``used`` judge answers pass the evaluator's check; else no value, with dingo's label
    and reason (and the judge's error, when dingo's reason lost it)."""
    label = (result.label or [""])[0]
    reason = str((result.reason or [""])[0])
    details["dingo_label"] = label
    if not is_verdict(label) or result.score is None:
        why = f"{label or 'no label'}: {reason}".strip()
        if task.errors and str(task.errors[-1]) not in why:  # dingo's reason lost the judge's words
            why += f" (judge: {type(task.errors[-1]).__name__}: {task.errors[-1]})"
        return Outcome(None, why)
    details["dingo_passed"] = not result.status
    answers = [parse_answer(t) for t in task.answers[-used:]] if used > 0 else []
    if len(answers) < used or any(a is None for a in answers):
        return Outcome(None, f"dingo gave {label} on fewer judge answers than it asks for; no score")
    problem = CHECKS[row.cls](answers, details)
    return Outcome(None if problem else result.score, problem or "", reason=reason, domain=row.domain)


# ---------------------------------------------------------------- the backend


class DingoBackend(FrameworkBackend):
    """Run canonical metrics with dingo-python's RAG evaluators over our judge.

    Options as ``FrameworkBackend`` (``concurrency``: evaluations at once, each in a worker
    thread; ``run_dir``). Bracket parameters: ``answer_relevancy[strictness=5]`` (how many
    questions dingo generates); the bound is given to dingo as its ``threshold``.
    """

    FACTS = FACTS

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self.client = JudgeDingoClient(self.judges)
        self._classes: dict[tuple[str, tuple[tuple[str, Any], ...], float], Any] = {}
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def version(self) -> str:
        return importlib.metadata.version("dingo-python")

    def requirements(self, ref: MetricRef) -> frozenset[str]:
        row = FACTS.table.get(ref.canonical)
        return frozenset({"chat", "embedder"} if getattr(row, "embeds", False) else {"chat"})

    def framework_params(self, row: Any) -> set[str]:
        return set(row.params)

    def dingo_class(self, row: DingoMetric, params: tuple[tuple[str, Any], ...], bound: float) -> Any:
        """This backend's own subclass of dingo's evaluator ``row.cls`` (same name): its
        ``client``, ``embedding_model`` and ``dynamic_config`` (the judge's model name,
        ``threshold = bound``, the bracket parameters) are set on it, never on dingo's
        class, so no other caller in the process sees them."""
        key = (row.cls, params, bound)
        if key not in self._classes:
            base = Model.llm_name_map[row.cls]
            model = getattr(self.judges.chat, "model", "") or "unified-judge"
            attrs: dict[str, Any] = {
                "__module__": __name__,
                "client": self.client,
                "dynamic_config": EvaluatorLLMArgs(model=model, threshold=bound, **dict(params)),
            }
            if row.embeds:
                embedder = getattr(self.judges.embedder, "model", "") or "unified-embedder"
                attrs["embedding_model"] = {"model_name": embedder, "client": self.client}
            if "strictness" in dict(params):  # dingo reads it from its config only after the first sample
                attrs["strictness"] = int(dict(params)["strictness"])
            self._classes[key] = type(row.cls, (base,), attrs)
        return self._classes[key]

    def _answers_used(self, row: DingoMetric, sample: Sample, cls: Any) -> int:
        """How many judge answers dingo's value rests on: one per generated question (the
        class's ``strictness``), one per context for a per-context evaluator, else one."""
        if row.embeds:
            return int(getattr(cls, "strictness", 3))
        per_context = row.calls is not None and row.calls[1] > 0
        return len(sample.retrieved_contexts or []) if per_context else 1

    async def evaluate(self, sample: Sample, ref: MetricRef, row: DingoMetric, details: dict[str, Any]) -> Outcome:
        """``Evaluator.eval(data)`` on this backend's subclass, in a worker thread whose
        judge calls come back to this task."""
        cls = self.dingo_class(row, self.passed_params(ref), self.framework_bound(ref))
        used = self._answers_used(row, sample, cls)
        if used < 1 and row.embeds:
            raise ValueError(f"strictness must be a whole number of at least 1, got {used}")
        loop = asyncio.get_running_loop()
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self._concurrency, thread_name_prefix="dingo")
        task = _Task(loop)
        token = _task.set(task)
        try:
            ctx = contextvars.copy_context()
        finally:
            _task.reset(token)
        result = await loop.run_in_executor(self._pool, ctx.run, cls.eval, dingo_data(sample))
        return detail_outcome(row, result, task, used, details)

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
