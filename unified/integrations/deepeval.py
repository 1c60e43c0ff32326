"""Our metrics as DeepEval metrics: ``UnifiedMetric``, a ``deepeval.metrics.BaseMetric``.

Use it wherever DeepEval takes a metric — ``deepeval.evaluate``, ``assert_test``,
``deepeval test run``::

    from deepeval import assert_test
    from unified.integrations.deepeval import UnifiedMetric

    def test_answer():
        assert_test(test_case, [UnifiedMetric("faithfulness", backend=["native", "ragas"],
                                              threshold=0.7)])

Each test case becomes a ``Sample`` (``unified.adapters.deepeval.objects``: ``input``,
``actual_output``, ``retrieval_context``, ``expected_output``, ``context`` as our
``reference_contexts``) and is scored by ``IntegrationScorer``
(``unified.integrations.scoring``): the same judge config, cache and call counting as
``evaluate``.

Scales: ``score = value / 10`` (our 0–10 on DeepEval's 0–1). ``threshold`` is on
DeepEval's 0–1 scale, as DeepEval users type it; None means our default pass bound for
the metric and backend divided by 10 (faithfulness: 0.7); ``strict_mode`` sets it to 1.0
as DeepEval's own metrics do. ``success = value >= 10 · threshold · bound_scale``, our
pass rule: precision@k and recall@k pass relative to the best value the sample allows
(``Outcome.bound_scale``; P@3 with one relevant id tops out at 0.333, so a perfect
ranking passes ``threshold=0.5`` at 0.167), every other metric at ``threshold`` itself —
with the default threshold, exactly when ``evaluate`` says ``passed``. ``reason``: our
backend's reason; with several backends the jury's value, each backend's value and
reason. ``score_breakdown``: each backend's value on 0–1.

Errors: a missing test-case field raises DeepEval's ``MissingTestCaseParamsError`` before
any judge call (so ``skip_on_missing_params`` works); any other failure raises
``IntegrationError`` after setting ``self.error`` and ``success = False`` — DeepEval then
reports the metric as errored (``ignore_errors=True``) or stops. Never a 0 in its place.
"""

from __future__ import annotations

from typing import Any, Sequence

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before deepeval is imported: no telemetry, no .deepeval/ files

from deepeval.errors import MissingTestCaseParamsError  # noqa: E402
from deepeval.metrics import BaseMetric  # noqa: E402

from unified.bounds import BoundScaleError, read_bound  # noqa: E402
from unified.data.layouts import LAYOUTS  # noqa: E402
from unified.integrations.scoring import IntegrationError, IntegrationScorer, Outcome  # noqa: E402

__all__ = ["IntegrationError", "UnifiedMetric"]


class UnifiedMetric(BaseMetric):
    """A unified-rag-eval metric inside DeepEval (module docstring).

    ``metric``: our metric name (any registry spelling). ``backend``: ``"native"``, a list
    of backends (pooled by a median jury) or ``"jury:METHOD"``. ``threshold``: on 0–1.
    ``judge``/``judge2``/``embedding``/``single_judge``/``cache``/``timeout``/
    ``max_retries``/``prices``: as ``evaluate`` takes them (None: the environment, then
    the run file). ``allow_degraded``: accept a value from fewer judges or backends than
    asked. Every argument is kept on an attribute of the same name: DeepEval copies a
    metric per test case by calling the class with them (``copy_metrics``)."""

    def __init__(
        self,
        metric: str,
        backend: str | Sequence[str] = "native",
        threshold: float | None = None,
        judge: Any = None,
        judge2: Any = None,
        embedding: Any = None,
        single_judge: bool = False,
        cache: Any = True,
        timeout: float | None = None,
        max_retries: int | None = None,
        prices: Any = None,
        allow_degraded: bool = False,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
    ):
        self.metric, self.backend = metric, backend
        self.judge, self.judge2, self.embedding, self.single_judge = judge, judge2, embedding, single_judge
        self.cache, self.timeout, self.max_retries, self.prices = cache, timeout, max_retries, prices
        self.allow_degraded = allow_degraded
        self.include_reason, self.strict_mode = include_reason, strict_mode
        self.async_mode, self.verbose_mode = async_mode, verbose_mode
        self._scorer = IntegrationScorer(
            metric,
            backend,
            allow_degraded=allow_degraded,
            judge=judge,
            judge2=judge2,
            embedding=embedding,
            single_judge=single_judge,
            cache=cache,
            timeout=timeout,
            max_retries=max_retries,
            prices=prices,
        )
        self.threshold = 1.0 if strict_mode else _threshold01(threshold, self._scorer)
        self._bound10: float | None = None  # this sample's pass bound on 0–10, set by a measure
        self._value10: float | None = None
        self.evaluation_model = f"unified-rag-eval {self._scorer.backend_label}"
        self.evaluation_cost = None
        self.score_breakdown = {}

    @property
    def __name__(self) -> str:  # DeepEval names a metric through this property
        return f"Unified {self._scorer.metric} [{self._scorer.backend_label}]"

    # ------------------------------------------------------------ DeepEval's protocol
    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        """Score ``test_case``; returns ``score`` (0–1). Raises on failure (module docstring)."""
        self._start(test_case)
        try:
            return self._apply(self._scorer.score(test_case))
        except IntegrationError as exc:
            self._failed(exc)
            raise

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        """``measure`` for DeepEval's async runner: the scoring runs off its event loop."""
        self._start(test_case)
        try:
            return self._apply(await self._scorer.ascore(test_case))
        except IntegrationError as exc:
            self._failed(exc)
            raise

    def is_successful(self) -> bool:
        """Our value reaches this sample's bound (module docstring: ``threshold`` · the
        sample's ``bound_scale``, compared on 0–10 as ``evaluate`` does); False after an
        error or before a measure."""
        if self.error is not None or self._value10 is None or self._bound10 is None:
            self.success = False
        else:
            self.success = self._value10 >= self._bound10
        return bool(self.success)

    # ------------------------------------------------------------ helpers
    def _start(self, test_case: Any) -> None:
        """Reset the state of a previous measure and refuse a test case that lacks a
        field the metric needs (DeepEval's own error, before any judge call)."""
        self.score = self.reason = self.success = self.error = None
        self._value10 = self._bound10 = None
        self.score_breakdown = {}
        missing = [name for name in _needed_params(self._scorer) if _is_empty(getattr(test_case, name, None))]
        if missing:
            self.error = (
                f"'{self.__name__}' needs test case field(s) {', '.join(missing)}, which are empty on this test case"
            )
            raise MissingTestCaseParamsError(self.error)

    def _apply(self, outcome: Outcome) -> float:
        self.score = outcome.score01
        self._value10 = outcome.value
        # the bound on 0–10 as ``evaluate`` computes it (base · best): the same float, the same verdict
        base = self.threshold if self.threshold is not None else _threshold01(None, self._scorer)
        self._bound10 = _bound10(base) * outcome.bound_scale
        self.reason = outcome.reason if self.include_reason else None
        if self.reason is not None and outcome.bound_scale != 1.0:
            self.reason += (
                f" (pass bound here {self._bound10 / 10:.3f} = threshold {self.threshold:g} × "
                f"{outcome.bound_scale:.3f}, the best this sample allows)"
            )
        self.score_breakdown = {b: v / 10.0 for b, v in outcome.members.items()}
        self.evaluation_cost = outcome.usd
        self.input_tokens, self.output_tokens = None, None
        self.verbose_logs = (
            (
                f"value {outcome.value:.2f}/10 on {outcome.backend}; judge calls "
                f"{outcome.calls}, cache hits {outcome.cache_hits}"
            )
            if self.verbose_mode
            else None
        )
        self.is_successful()
        return self.score

    def _failed(self, exc: IntegrationError) -> None:
        self.error = str(exc)
        self.success = False
        self.score = None
        self._value10 = self._bound10 = None


def _bound10(threshold01: float) -> float:
    """A 0–1 threshold as our 0–10 bound, read by the one bound rule (0.7 is 7.0, not
    0.7 × 10 = 7.000000000000001, which a value of exactly 7 would fail)."""
    return read_bound(f"{threshold01!r}@0-1", "threshold")


def _threshold01(threshold: float | None, scorer: IntegrationScorer) -> float:
    """The pass bound on 0–1: as given, else our default for the metric and backend / 10.

    A given bound is read by the one bound rule (``unified.bounds.read_bound``) as
    ``threshold@0-1``, so a bound above 1 (almost surely our 0–10 scale typed by mistake),
    a bool or a non-number is refused there."""
    if threshold is None:
        ours = scorer.threshold()
        return 0.5 if ours is None else ours / 10.0
    try:
        return read_bound(f"{threshold}@0-1", "threshold") / 10.0
    except BoundScaleError as exc:
        raise ValueError(
            f"{exc}: UnifiedMetric takes DeepEval's 0–1 scale (our 0–10 bound 7 is threshold=0.7)"
        ) from None


def _needed_params(scorer: IntegrationScorer) -> list[str]:
    """DeepEval's test-case attribute for each Sample field the metric requires."""
    fields = LAYOUTS["deepeval"].fields
    return [fields.get(f, f) for f in scorer.ref.spec.required if f in fields]


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, tuple)) and len(value) == 0)
