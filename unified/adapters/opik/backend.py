"""The Opik backend: our Sample and judge inside opik 2.x's LLM-judge metrics.

opik does the scoring, unchanged; this module only translates:

- ``Sample`` -> the keyword arguments of ``await metric.ascore(...)`` (opik's names:
  input, output, context, expected_output; the table in ``unified/adapters/opik/__init__.py``);
- our judge -> ``JudgeOpikModel``, a subclass of opik's documented custom-model base
  ``opik.evaluation.models.OpikBaseModel``. opik's judge metrics call
  ``agenerate_chat_completion(messages, response_format)``; we send the messages
  unchanged through our ``ChatJudge`` (cache, retries, breaker, accounting) and hand the
  validated answer back as JSON text, which opik parses itself. opik never builds its
  litellm client, reads no provider key and reaches no endpoint of its own;
- opik's ``ScoreResult`` -> ``Score``: ``value = 10·raw`` (``10·(1 − raw)`` for
  Hallucination, where 1 means hallucinated); ``ScoreResult.reason`` is the Score's
  reason. opik's exception (its parsers refuse a score outside [0, 1]) becomes
  ``value=None`` with ``error="opik <Class>: <what opik said>"``.

Metrics are built with ``track=False`` (no ``@opik.track`` span, so no trace is sent
anywhere) and one fresh instance per evaluation (cheap: opik keeps the model and its
few-shot examples on ``self``, nothing else).
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before opik is imported: analytics, Sentry and tracking switches

import opik  # noqa: E402
import opik.evaluation.metrics as opik_metrics  # noqa: E402
from opik.evaluation.models import OpikBaseModel  # noqa: E402
from opik.exceptions import MetricComputationError  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from unified.adapters.framework import FrameworkBackend, Outcome, run_blocking  # noqa: E402
from unified.adapters.opik import FACTS, OPIK_METRICS, OpikMetric  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402

# opik's parsers log every refused verdict at ERROR with a traceback before raising; the
# same message reaches the Score's error (one line), so the log copy is only noise
logging.getLogger("opik.evaluation.metrics").setLevel(logging.CRITICAL)


class JudgeOpikModel(OpikBaseModel):
    """opik's model interface answered by our ``ChatJudge``.

    ``agenerate_chat_completion(messages, response_format)``: opik's messages, unchanged;
    with ``response_format`` (a pydantic class) the judge's validated instance as JSON
    text, else the judge's free text. Returns ``{"role": "assistant", "content": ...}``
    as opik expects. The string and provider-response variants wrap the same call.
    """

    def __init__(self, judges: Judges):
        super().__init__(model_name=getattr(judges.chat, "model", "") or "unified-judge")
        self.judges = judges

    async def _answer(self, messages: list[dict[str, str]], response_format: type[BaseModel] | None) -> str:
        chat = self.judges.require_chat()
        msgs = [{"role": str(m["role"]), "content": str(m.get("content", ""))} for m in messages]
        if response_format is not None:
            return (await chat.ask(msgs, response_format)).model_dump_json()
        return await chat.ask_text(msgs)

    async def agenerate_chat_completion(self, messages: Any, response_format: Any = None, **kwargs: Any) -> Any:
        return {"role": "assistant", "content": await self._answer(messages, response_format)}

    def generate_chat_completion(self, messages: Any, response_format: Any = None, **kwargs: Any) -> Any:
        return run_blocking(lambda: self.agenerate_chat_completion(messages, response_format))

    async def agenerate_string(self, input: str, response_format: Any = None, **kwargs: Any) -> str:
        return await self._answer([{"role": "user", "content": input}], response_format)

    def generate_string(self, input: str, response_format: Any = None, **kwargs: Any) -> str:
        return run_blocking(lambda: self.agenerate_string(input, response_format))

    async def agenerate_provider_response(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        # the OpenAI response shape opik reads from a provider (choices[0].message.content)
        text = await self._answer(messages, kwargs.get("response_format"))
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}

    def generate_provider_response(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        return run_blocking(lambda: self.agenerate_provider_response(messages, **kwargs))


def opik_kwargs(m: OpikMetric, sample: Sample) -> dict[str, Any]:
    """Sample -> opik's ``score`` keyword arguments (an empty field is passed as None,
    or as "" when the table says opik can do without it: ``blank_ok``)."""
    return {kw: (getattr(sample, f) or ("" if f in m.blank_ok else None)) for f, kw in m.reads.items()}


def _cause(e: BaseException) -> str:
    """opik's exception, and for its generic MetricComputationError the one it replaced:
    opik's parsers raise it from inside ``except``, so the specific reason (a score
    outside [0, 1], a missing key) is only in ``__context__``."""
    text = f"{type(e).__name__}: {e}"
    inner = e.__cause__ or e.__context__
    if isinstance(e, MetricComputationError) and inner is not None and str(inner) not in text:
        text += f" ({type(inner).__name__}: {inner})"
    return text


class OpikBackend(FrameworkBackend):
    """Run canonical metrics with opik's LLM-judge metrics over our judge.

    Options as ``FrameworkBackend`` (``concurrency``; ``run_dir``). A metric's bracket
    parameters (``faithfulness[seed=3]``) are passed to opik's constructor.
    """

    FACTS = FACTS

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self.model = JudgeOpikModel(self.judges)

    def version(self) -> str:
        return str(opik.__version__)

    def framework_params(self, row: Any) -> set[str]:
        """The opik metric constructor's keywords, but those this backend sets (``model``,
        ``track``) or that rename or file its results (``name``, ``project_name``): a typo
        failed every task, one paid attempt at a time."""
        init = inspect.signature(getattr(opik_metrics, row.cls).__init__).parameters
        return set(init) - {"self", "model", "track", "name", "project_name"}

    def new_metric(self, canonical: str, params: tuple[tuple[str, Any], ...] = ()) -> Any:
        """A fresh opik metric object for ``canonical``, untracked, over our judge."""
        m = OPIK_METRICS[canonical]
        kwargs = {**m.init, **dict(params), "model": self.model, "track": False}
        return getattr(opik_metrics, m.cls)(**kwargs)

    def error_text(self, e: BaseException) -> str:
        return _cause(e)

    async def evaluate(self, sample: Sample, ref: MetricRef, row: OpikMetric, details: dict[str, Any]) -> Outcome:
        """``await metric.ascore(**kwargs)`` on a fresh, untracked metric; a result opik
        marks ``scoring_failed`` is no value."""
        result = await self.new_metric(ref.canonical, self.passed_params(ref)).ascore(**opik_kwargs(row, sample))
        if getattr(result, "scoring_failed", False):
            details["opik_scoring_failed"] = True
        raw = None if details.get("opik_scoring_failed") else result.value
        return Outcome(raw, f"returned {result.value!r}", reason=result.reason)
