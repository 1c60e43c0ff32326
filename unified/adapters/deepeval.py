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
import io
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, TypeVar

from unified.adapters._quiet import quiet_frameworks

quiet_frameworks()  # before deepeval is imported: telemetry, dotenv and file switches

# with DEEPEVAL_FILE_SYSTEM=READ_ONLY, deepeval prints a notice to *stdout* at import
# ("configured for read only environment"): it would corrupt machine-readable CLI output
with contextlib.redirect_stdout(io.StringIO()):
    import deepeval
    import deepeval.metrics as deepeval_metrics
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, SingleTurnParams
from pydantic import BaseModel  # noqa: E402

from unified.adapters._framework import FrameworkBackend, one_line, run_blocking  # noqa: E402
from unified.judge.base import Judges, task_scope  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402
from unified.scores import Score  # noqa: E402

BACKEND = "deepeval"
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


# ---------------------------------------------------------------- the mapping table


def _case(sample: Sample, *, context_from_retrieved: bool = False) -> LLMTestCase:
    """Sample -> LLMTestCase (deepeval's names; absent fields stay None so deepeval's own
    MissingTestCaseParamsError names them)."""
    kw: dict[str, Any] = dict(
        # LLMTestCase.input is a required string; FaithfulnessMetric and HallucinationMetric
        # check it is not None but never read it (4.3.1), and every metric that does read it
        # needs user_input in the registry: a sample without a question passes ""
        input=sample.user_input or "",
        actual_output=sample.response,
        expected_output=sample.reference,
        retrieval_context=sample.retrieved_contexts,
    )
    if context_from_retrieved:
        kw["context"] = sample.retrieved_contexts
    return LLMTestCase(**kw)


CORRECTNESS_CRITERIA = (
    "Judge whether the actual output is factually correct and complete with respect to "
    "the expected output, for the given input. Penalise facts that contradict the "
    "expected output and facts of the expected output that are missing; do not penalise "
    "different wording, or extra detail that does not contradict the expected output."
)


@dataclass(frozen=True)
class DeepEvalMetric:
    """How one canonical metric runs on deepeval.

    ``cls``: class name in ``deepeval.metrics``; ``init``: constructor kwargs besides
    model/threshold/async_mode; ``case``: Sample -> LLMTestCase; ``raw_range`` /
    ``higher_is_better``: deepeval's scale; ``note``: recorded in Score.details.
    """

    cls: str
    init: dict[str, Any] = field(default_factory=dict)
    case: Callable[[Sample], LLMTestCase] = _case
    raw_range: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    note: str | None = None


_LLM_MODE = {"eval_mode": "llm"}  # explicit: other modes route to a hosted service

#: canonical metric -> deepeval metric. The one table the backend obeys.
DEEPEVAL_METRICS: dict[str, DeepEvalMetric] = {
    "faithfulness": DeepEvalMetric("FaithfulnessMetric", _LLM_MODE),
    "answer_relevancy": DeepEvalMetric("AnswerRelevancyMetric", _LLM_MODE),
    "context_relevancy": DeepEvalMetric("ContextualRelevancyMetric", _LLM_MODE),
    "context_recall": DeepEvalMetric("ContextualRecallMetric", _LLM_MODE),
    "context_precision": DeepEvalMetric("ContextualPrecisionMetric", _LLM_MODE),
    # 4.3.1: score = share of contexts the response does not contradict (higher is
    # better; older releases scored the share of contradictions) -> no inversion here
    "hallucination": DeepEvalMetric(
        "HallucinationMetric",
        _LLM_MODE,
        case=lambda s: _case(s, context_from_retrieved=True),
        note="deepeval reads `context`; it was filled from the sample's retrieved_contexts",
    ),
    # GEval has no eval_mode parameter in 4.3.1: it always judges with the given model
    "answer_correctness": DeepEvalMetric(
        "GEval",
        dict(
            name="Correctness",
            criteria=CORRECTNESS_CRITERIA,
            evaluation_params=[
                SingleTurnParams.INPUT,
                SingleTurnParams.ACTUAL_OUTPUT,
                SingleTurnParams.EXPECTED_OUTPUT,
            ],
        ),
        note="GEval with a correctness rubric (criteria in unified/adapters/deepeval.py)",
    ),
}


class DeepEvalBackend(FrameworkBackend):
    """Run canonical metrics with deepeval 4.3 metrics over our judge.

    Options as ``FrameworkBackend`` (``concurrency``: test cases measured at once across
    all samples of this backend; ``run_dir``). A metric's bracket parameters (``faithfulness[include_reason=false]``)
    are passed to the deepeval constructor. deepeval's ``threshold`` is set to our
    spec threshold / 10, so ``details['deepeval_success']`` agrees with ``passed``.
    """

    name: ClassVar[str] = BACKEND
    metrics: ClassVar[frozenset[str]] = frozenset(DEEPEVAL_METRICS)
    table = DEEPEVAL_METRICS

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self.model = JudgeDeepEvalLLM(self.judges)

    def fingerprint_extra(self) -> dict[str, Any]:
        return {"framework": "deepeval", "version": _version()}

    def new_metric(self, canonical: str, threshold: float = 0.5, params: tuple[tuple[str, Any], ...] = ()) -> Any:
        """A fresh deepeval metric object for ``canonical`` (one per test case)."""
        m = DEEPEVAL_METRICS[canonical]
        kwargs = {**m.init, "model": self.model, "threshold": threshold, "async_mode": True, **dict(params)}
        with warnings.catch_warnings():
            # HallucinationMetric's notice that 4.3 flipped its direction: the table above
            # already reads it as higher-is-better, so the notice would only be noise
            warnings.filterwarnings("ignore", message=".*now scores in the same direction", category=DeprecationWarning)
            return getattr(deepeval_metrics, m.cls)(**kwargs)

    async def _score_one(self, sample: Sample, ref: MetricRef) -> Score:
        if (failed := self._precheck(sample, ref)) is not None:
            return failed
        spec, m = ref.spec, DEEPEVAL_METRICS[ref.canonical]
        common: dict[str, Any] = dict(
            raw_range=m.raw_range, higher_is_better=m.higher_is_better, threshold=spec.threshold
        )
        details: dict[str, Any] = {
            "framework": "deepeval",
            "deepeval_version": _version(),
            "deepeval_metric": m.cls,
        }
        if m.note:
            details["note"] = m.note
        async with self._limit():
            with task_scope(BACKEND, ref.name, sample.id) as meter:
                try:
                    metric = self.new_metric(ref.canonical, spec.threshold / 10.0, ref.params)
                    raw = await metric.a_measure(m.case(sample), _show_indicator=False)
                except Exception as e:  # deepeval's own message is what the user needs
                    return Score.failure(
                        ref.name,
                        BACKEND,
                        sample.id,
                        one_line(f"deepeval {m.cls}: {type(e).__name__}: {e}"),
                        details=details,
                        cost=meter.cost(),
                        **common,
                    )
                details["deepeval_success"] = getattr(metric, "success", None)
                why = getattr(metric, "error", None) or f"returned {raw!r}"
                return self._to_score(
                    sample,
                    ref,
                    m.cls,
                    raw,
                    why,
                    details=details,
                    reason=getattr(metric, "reason", None),
                    cost=meter.cost(),
                    **common,
                )


def _version() -> str:
    """deepeval's version (the module defines ``__version__``; its stubs do not say so)."""
    return str(getattr(deepeval, "__version__", "unknown"))
