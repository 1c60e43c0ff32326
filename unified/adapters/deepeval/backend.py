"""The DeepEval backend: our Sample and judge inside deepeval 4.3's metrics.

deepeval does the scoring, unchanged; this module only translates:

- ``Sample`` -> ``LLMTestCase``: user_input -> input, response -> actual_output,
  reference -> expected_output, retrieved_contexts -> retrieval_context. For
  ``HallucinationMetric``, which reads ``context`` (the "ground truth" passages), the
  retrieved contexts go into ``context`` instead: a RAG sample has no other passages, and
  this makes hallucination mean "the response contradicts what was retrieved";
- our judge -> ``JudgeDeepEvalLLM``, a ``DeepEvalBaseLLM`` subclass that honours the
  ``schema`` argument (returns the validated pydantic instance) and otherwise returns text;
- deepeval's score (0–1, higher is better for every mapped metric — HallucinationMetric
  too since 4.3, where its score is the share of contexts *not* contradicted) -> ``Score``
  with ``value = 10 · raw``; deepeval's exception -> ``value=None`` with
  ``error="deepeval <Class>: <what deepeval said>"``.

A fresh metric instance per test case: deepeval metrics keep their state (score, reason,
verdicts) on ``self``, so one instance shared by concurrent cases would mix results. We
drive ``await metric.a_measure(tc, _show_indicator=False)`` ourselves under our own
concurrency limit instead of ``deepeval.evaluate()``, which has one global timeout and,
with ``ignore_errors``, silently returns fewer results.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import warnings
from typing import Any, TypeVar

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before deepeval is imported: telemetry, dotenv and file switches

# with DEEPEVAL_FILE_SYSTEM=READ_ONLY, deepeval prints a notice to *stdout* at import
# ("configured for read only environment"): it would corrupt machine-readable CLI output
with contextlib.redirect_stdout(io.StringIO()):
    import deepeval
    import deepeval.metrics as deepeval_metrics
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, SingleTurnParams
from pydantic import BaseModel  # noqa: E402

from unified.adapters.deepeval import FACTS, DeepEvalMetric  # noqa: E402
from unified.adapters.framework import FrameworkBackend, Outcome, run_blocking  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402

T = TypeVar("T", bound=BaseModel)


class DeepEvalJudgeError(RuntimeError):
    """A judge failure inside ``a_generate``, re-raised under a type deepeval does not
    treat specially: its ``a_generate_with_schema`` catches ``TypeError`` and retries
    without the schema, which would silently double the calls."""


class JudgeDeepEvalLLM(DeepEvalBaseLLM):
    """deepeval's model interface answered by our ``ChatJudge``.

    ``a_generate(prompt, schema)``: the prompt deepeval built, as one user message;
    with ``schema`` the judge's validated instance of it (deepeval then skips its own JSON
    parsing), without it the judge's free text (deepeval parses JSON out of it).
    """

    def __init__(self, judges: Judges):
        self.judges = judges
        super().__init__(model=getattr(judges.chat, "model", "") or "unified-judge")

    def load_model(self, *args: Any, **kwargs: Any) -> "JudgeDeepEvalLLM":
        return self

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return f"unified:{self.name}"

    async def a_generate(self, prompt: str, schema: type[T] | None = None, **kwargs: Any) -> Any:
        messages = [{"role": "user", "content": str(prompt)}]
        try:
            chat = self.judges.require_chat()
            if schema is not None:
                return await chat.ask(messages, schema)
            return await chat.ask_text(messages)
        except TypeError as e:
            raise DeepEvalJudgeError(f"judge call failed: TypeError: {e}") from e

    def generate(self, prompt: str, schema: type[T] | None = None, **kwargs: Any) -> Any:
        return run_blocking(lambda: self.a_generate(prompt, schema))


# ---------------------------------------------------------------- Sample -> LLMTestCase


def llm_test_case(sample: Sample, row: DeepEvalMetric) -> LLMTestCase:
    """Sample -> LLMTestCase: user_input -> input, response -> actual_output, reference ->
    expected_output, retrieved_contexts -> retrieval_context (and -> context for a metric
    that reads it, ``row.context_from_retrieved``). Absent fields stay None so deepeval's
    own MissingTestCaseParamsError names them."""
    kw: dict[str, Any] = dict(
        # LLMTestCase.input is a required string; FaithfulnessMetric and HallucinationMetric
        # check it is not None but never read it (4.3.1), and every metric that does read it
        # needs user_input in the registry: a sample without a question passes ""
        input=sample.user_input or "",
        actual_output=sample.response,
        expected_output=sample.reference,
        retrieval_context=sample.retrieved_contexts,
    )
    if row.context_from_retrieved:
        kw["context"] = sample.retrieved_contexts
    return LLMTestCase(**kw)


def _init(row: DeepEvalMetric) -> dict[str, Any]:
    """The row's constructor kwargs with ``evaluation_params`` as deepeval's enum."""
    init = dict(row.init)
    if "evaluation_params" in init:
        init["evaluation_params"] = [SingleTurnParams[p] for p in init["evaluation_params"]]
    return init


class DeepEvalBackend(FrameworkBackend):
    """Run canonical metrics with deepeval 4.3 metrics over our judge.

    Options as ``FrameworkBackend`` (``concurrency``: test cases measured at once across
    all samples of this backend; ``run_dir``). A metric's bracket parameters
    (``faithfulness[include_reason=false]``) are passed to the deepeval constructor, but
    ``threshold``: deepeval gets the task's bound on its own scale (bound / 10), so
    ``details['deepeval_success']`` agrees with ``passed``.

    A fresh metric instance per test case: deepeval metrics keep their state (score,
    reason, verdicts) on ``self``, so one instance shared by concurrent cases would mix
    results.
    """

    FACTS = FACTS

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self.model = JudgeDeepEvalLLM(self.judges)

    def version(self) -> str:
        """deepeval's version (the module defines ``__version__``; its stubs do not say so)."""
        return str(getattr(deepeval, "__version__", "unknown"))

    def framework_params(self, row: Any) -> set[str] | None:
        """The deepeval constructor's keywords, but those this backend sets (the model,
        the bound, async mode); None (no check) for a constructor taking ``**kwargs``."""
        params = inspect.signature(getattr(deepeval_metrics, row.cls).__init__).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return None
        return set(params) - {"self", "model", "threshold", "async_mode"}

    def new_metric(self, canonical: str, threshold: float = 0.5, params: tuple[tuple[str, Any], ...] = ()) -> Any:
        """A fresh deepeval metric object for ``canonical`` (one per test case);
        ``threshold`` on deepeval's own 0–1 scale."""
        row: DeepEvalMetric = FACTS.metrics[canonical]  # type: ignore[index,assignment]
        kwargs = {**_init(row), "model": self.model, "threshold": threshold, "async_mode": True, **dict(params)}
        with warnings.catch_warnings():
            # HallucinationMetric's notice that 4.3 flipped its direction: the table already
            # reads it as higher-is-better, so the notice would only be noise
            warnings.filterwarnings("ignore", message=".*now scores in the same direction", category=DeprecationWarning)
            return getattr(deepeval_metrics, row.cls)(**kwargs)

    async def evaluate(self, sample: Sample, ref: MetricRef, row: DeepEvalMetric, details: dict[str, Any]) -> Outcome:
        """``await metric.a_measure(test_case)`` with the task's bound on deepeval's scale."""
        metric = self.new_metric(ref.canonical, self.framework_bound(ref), self.passed_params(ref))
        raw = await metric.a_measure(llm_test_case(sample, row), _show_indicator=False)
        details["deepeval_success"] = getattr(metric, "success", None)
        why = getattr(metric, "error", None) or f"returned {raw!r}"
        return Outcome(raw, why, reason=getattr(metric, "reason", None))
