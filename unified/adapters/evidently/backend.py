"""The Evidently backend: our Sample and judge inside Evidently 0.7's LLM-judge descriptors.

Evidently does the judging, unchanged; this module only translates:

- ``Sample`` -> a one-row pandas frame (question, response, the retrieved contexts joined
  by a blank line as ``context`` and as a list as ``contexts``, reference) and the
  descriptor built as Evidently documents it (``FaithfulnessLLMEval("response",
  context="context", provider=..., model=...)``, ``ContextRelevance("question", "contexts",
  method="llm", ...)``), computed by ``Dataset.from_pandas(frame, data_definition=
  DataDefinition(), descriptors=[...])``;
- our judge -> Evidently's documented provider registry (``llm_provider``): the provider
  ``unified`` is ``JudgeEvidentlyWrapper``, an ``LLMWrapper`` whose ``complete(messages)``
  is our ``ChatJudge.ask_text`` (Evidently parses the JSON itself). It answers inside a
  route (``judge_route(judges)``, a context variable), so one process can serve several
  judges at once; no OpenAI client is built and no provider key is read;
- Evidently's columns -> ``Score``: the category as 1 (Evidently's target category, e.g.
  UNFAITHFUL) or 0 (its other category), or with ``[include_score=true]`` Evidently's score
  in [0, 1] (1 = absolutely the target); 0–10 by the room's table (inverted where the target
  is the bad outcome). UNKNOWN, any other category, a missing score or a per-context score
  outside [0, 1] is no value, with what the judge said. The reasoning is the Score's reason.

Evidently's descriptors are synchronous (they run their own event loop), so each runs in a
worker thread of the backend; its judge calls come back to the task's event loop, in the
task's context, so they are cached, limited and billed like any other.

Evidently 0.7.23 imports ``infer_dtype_from_object`` from ``pandas.core.dtypes.common``,
which pandas 3 removed, for one legacy data-integrity test this backend never runs: without
that name ``import evidently`` fails. ``_pandas_3_name()`` supplies it (only when pandas
lacks it) as a function that raises, naming why, if anything ever calls it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Coroutine, Iterator, TypeVar

import pandas as pd

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before evidently is imported: its telemetry switches are read at import


def _pandas_3_name() -> None:
    """Give pandas 3 the name evidently 0.7.23 imports at its top (see the module doc)."""
    import pandas.core.dtypes.common as common

    if hasattr(common, "infer_dtype_from_object"):
        return

    def infer_dtype_from_object(dtype: Any) -> Any:
        raise NotImplementedError(
            "pandas 3 has no infer_dtype_from_object; evidently's column-type test needs pandas < 3"
        )

    common.infer_dtype_from_object = infer_dtype_from_object


_pandas_3_name()

import evidently  # noqa: E402
import evidently.descriptors as ev_descriptors  # noqa: E402
from evidently import DataDefinition, Dataset  # noqa: E402
from evidently.llm.utils.blocks import find_largest_json  # noqa: E402
from evidently.llm.utils.wrapper import LLMResult, LLMWrapper, llm_provider  # noqa: E402

from unified.adapters.evidently import FACTS, EvidentlyMetric  # noqa: E402
from unified.adapters.framework import FrameworkBackend, Outcome  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402

#: the provider name the descriptors are given: our judge
PROVIDER = "unified"
# Evidently's column statistics divide by the count of numbers: a score the judge left out
# (refused below, with the reason) would print a RuntimeWarning in the middle of a run
warnings.filterwarnings("ignore", category=RuntimeWarning, module="evidently.core.datasets")
R = TypeVar("R")


# ---------------------------------------------------------------- the judge as Evidently's provider


@dataclass
class _Route:
    """One caller's judges, the event loop their calls run on (None: the caller's own), the
    judge's answers in order, and the requests that failed (Evidently retries them once;
    the judge layer already has)."""

    judges: Judges
    loop: asyncio.AbstractEventLoop | None
    answers: list[str] = field(default_factory=list)
    failed: dict[str, BaseException] = field(default_factory=dict)


_route: contextvars.ContextVar[_Route | None] = contextvars.ContextVar("evidently_route", default=None)


@contextlib.contextmanager
def judge_route(judges: Judges) -> Iterator[_Route]:
    """Inside the block (and in threads started with a copy of its context), the
    ``unified`` provider answers with ``judges``, on the event loop running here (if any)."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    route = _Route(judges, loop)
    token = _route.set(route)
    try:
        yield route
    finally:
        _route.reset(token)


async def _on_route_loop(route: _Route, factory: Callable[[], Coroutine[Any, Any, R]]) -> R:
    """``await factory()`` on the route's loop (from Evidently's loop in a worker thread)."""
    if route.loop is None or route.loop is asyncio.get_running_loop():
        return await factory()
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(factory(), route.loop))


@llm_provider(PROVIDER, None)
class JudgeEvidentlyWrapper(LLMWrapper):
    """Evidently's LLM interface answered by the route's ``ChatJudge``: ``complete`` sends
    Evidently's messages unchanged through ``ask_text`` and returns the text (token counts
    0: the judge layer counts them, once)."""

    def __init__(self, model: str, options: Any):
        self.model = model

    async def complete(self, messages: list[Any], seed: int | None = None) -> LLMResult[str]:
        route = _route.get()
        if route is None:
            raise RuntimeError(f"the '{PROVIDER}' provider answers only inside judge_route(judges)")
        msgs = [{"role": str(m.role), "content": str(m.content)} for m in messages]
        key = json.dumps(msgs, ensure_ascii=False)
        if key in route.failed:  # Evidently's retry of a request the judge layer gave up on
            raise route.failed[key]
        try:
            text = await _on_route_loop(route, lambda: route.judges.require_chat().ask_text(msgs))
        except Exception as e:
            route.failed[key] = e
            raise
        route.answers.append(text)
        return LLMResult(text, 0, 0)


# ---------------------------------------------------------------- Sample -> frame, frame -> raw


def sample_frame(sample: Sample) -> pd.DataFrame:
    """The one-row frame every descriptor reads (its columns: ``EvidentlyMetric.column``)."""
    contexts = list(sample.retrieved_contexts or [])
    row = {
        "question": sample.user_input or "",
        "response": sample.response or "",
        "context": "\n\n".join(contexts),
        "contexts": contexts,
        "reference": sample.reference or "",
    }
    return pd.DataFrame([row])


def new_descriptor(row: EvidentlyMetric, model: str, params: tuple[tuple[str, Any], ...] = ()) -> Any:
    """The descriptor for ``row``, as Evidently documents it, over the ``unified`` provider;
    its output columns are named after ``row.cls``."""
    if row.target is None:  # ContextRelevance: the llm method, each context's score kept
        return ev_descriptors.ContextRelevance(
            row.column,
            row.inputs["contexts"],
            method="llm",
            method_params={"provider": PROVIDER, "model": model},
            output_scores=True,
            alias=row.cls,
            **dict(params),
        )
    cls = getattr(ev_descriptors, row.cls)
    return cls(row.column, **row.inputs, provider=PROVIDER, model=model, alias=row.cls, **dict(params))


def _cell(frame: pd.DataFrame, column: str) -> Any:
    """One cell of the one-row result; None when the column is absent or the cell is NaN."""
    if column not in frame:
        return None
    value = frame[column].iloc[0]
    return None if isinstance(value, float) and math.isnan(value) else value


def category_outcome(row: EvidentlyMetric, frame: pd.DataFrame, scored: bool, details: dict[str, Any]) -> Outcome:
    """A binary descriptor's columns -> the raw value: Evidently's score when asked for
    (``scored``), else 1 for the target category, 0 for the other; UNKNOWN or any other
    answer is no value."""
    category = _cell(frame, row.cls)
    reason = _cell(frame, f"{row.cls} reasoning")
    details["evidently_category"] = category
    if scored:
        score = _cell(frame, f"{row.cls} score")
        if score is None:
            return Outcome(None, "the judge's answer has no numeric score; no value", reason=reason)
        return Outcome(score, f"returned score {score!r}", reason=reason)
    if category not in (row.target, row.other):
        said = "no category" if category is None else f"category {category!r}"
        why = f"the judge answered {said}, not {row.target} or {row.other}; no value"
        return Outcome(
            None, why + (" (UNKNOWN: not enough information)" if category == "UNKNOWN" else ""), reason=reason
        )
    return Outcome(1.0 if category == row.target else 0.0, reason=reason)


def relevance_outcome(row: EvidentlyMetric, frame: pd.DataFrame, details: dict[str, Any]) -> Outcome:
    """ContextRelevance's columns -> its aggregate (the mean of the per-context scores by
    default), refused when a context's score is missing or outside [0, 1] (a mean would
    hide it)."""
    scores = _cell(frame, f"{row.cls} scores")
    scores = [] if scores is None else [float(s) for s in scores]
    details["evidently_scores"] = scores
    for i, s in enumerate(scores):
        if not (math.isfinite(s) and 0.0 <= s <= 1.0):
            return Outcome(None, f"the judge scored context {i + 1} {s:g}, not a score in [0, 1]; no value")
    return Outcome(_cell(frame, row.cls), "returned no aggregate")


def missing_key(answers: list[str], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` a judge answer lacks, read as Evidently reads it (JSON, else
    the largest JSON object in the text): Evidently then fails on a column it cannot find
    (``KeyError: '<id>.score'``), which names neither the judge nor the key's meaning."""
    for text in answers:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = find_largest_json(text)
        for key in keys:
            if not isinstance(parsed, dict) or key not in parsed:
                return key
    return None


def _compute(frame: pd.DataFrame, descriptor: Any) -> pd.DataFrame:
    """Evidently's documented one-shot computation of a descriptor over a frame."""
    return Dataset.from_pandas(frame, data_definition=DataDefinition(), descriptors=[descriptor]).as_dataframe()


# ---------------------------------------------------------------- the backend


class EvidentlyBackend(FrameworkBackend):
    """Run canonical metrics with Evidently's LLM-judge descriptors over our judge.

    Options as ``FrameworkBackend`` (``concurrency``: descriptor computations at once, each
    in a worker thread; ``run_dir``). Bracket parameters go to the descriptor:
    ``faithfulness[include_score=true]``, ``[uncertainty=target]``;
    ``context_relevancy[aggregation_method=hit_share]``.
    """

    FACTS = FACTS
    metric_key = "descriptor"

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def version(self) -> str:
        return str(evidently.__version__)

    def framework_params(self, row: Any) -> set[str]:
        return set(row.params)

    async def evaluate(self, sample: Sample, ref: MetricRef, row: EvidentlyMetric, details: dict[str, Any]) -> Outcome:
        """The descriptor on the sample's one-row frame, in a worker thread whose judge
        calls come back to this task."""
        params = self.passed_params(ref)
        descriptor = new_descriptor(row, getattr(self.judges.chat, "model", "") or "unified-judge", params)
        loop = asyncio.get_running_loop()
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self._concurrency, thread_name_prefix="evidently")
        with judge_route(self.judges) as route:
            ctx = contextvars.copy_context()
        scored = row.target is None or bool(dict(params).get("include_score"))
        try:
            frame = await loop.run_in_executor(self._pool, ctx.run, _compute, sample_frame(sample), descriptor)
        except KeyError as e:  # a column Evidently builds from a key the judge left out
            asked = ("score",) if row.target is None else ("category", *(("score",) if scored else ()), "reasoning")
            key = missing_key(route.answers, asked)
            if key is None:
                raise
            return Outcome(None, f"the judge's answer has no '{key}' (evidently: KeyError: {e}); no value")
        if row.target is None:
            return relevance_outcome(row, frame, details)
        return category_outcome(row, frame, scored, details)

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
