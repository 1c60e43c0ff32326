"""Our metrics as RAGAS metrics: ``UnifiedRagasMetric`` for ``ragas.evaluate`` (ragas 0.4).

``ragas.evaluate(dataset, metrics=[...])`` takes instances of ``ragas.metrics.base.Metric``;
a single-turn one is a ``SingleTurnMetric``, which must declare the sample columns it
reads (``_required_columns``: ragas checks the dataset against them and hands the metric
a sample cut down to them), implement ``init(run_config)`` and ``async
_single_turn_ascore(sample, callbacks) -> float``. Ours is no ``MetricWithLLM``: ragas
then never builds its default OpenAI client for it — every judge call goes through our
judge layer::

    from ragas import EvaluationDataset, evaluate
    from unified.integrations.ragas import UnifiedRagasMetric

    result = evaluate(dataset, metrics=[UnifiedRagasMetric("faithfulness", backend="native")])
    result.to_pandas()["unified_faithfulness"]      # our values / 10

Each ``SingleTurnSample`` becomes a ``Sample`` (``unified.adapters.ragas.objects``) and is
scored by ``IntegrationScorer`` (``unified.integrations.scoring``): the same judge config,
cache and call counting as ``evaluate``. The value is ours on 0–1: ``value / 10``.

Columns: the metric's required Sample fields under their ragas names (``user_input``,
``response``, ``retrieved_contexts``, ``reference``, ``reference_contexts``,
``retrieved_context_ids``, ``reference_context_ids``); the other ragas columns our
samples have are optional (kept when present, so a metric that can use them sees them).

Name: ``unified_<metric>`` unless ``name=`` is given — so it never overwrites the column
of ragas's own metric of the same name in one ``evaluate`` call.

The collections style of ragas 0.4 (``await metric.ascore(user_input=..., response=...,
retrieved_contexts=...)`` inside an ``@experiment``) works too: ``ascore`` / ``score``
return a ``MetricResult`` with the same value and our reason.

Errors: a sample that cannot be scored raises ``IntegrationError`` from the job. With
``raise_exceptions=True`` ragas stops with it; with ragas's default (False) ragas logs
"Exception raised in Job[...]" and writes NaN — ragas's own mark of a failed job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from unified.adapters.ragas.quiet import quiet_ragas

quiet_ragas()  # before ragas is imported: no telemetry, uuid file in a private folder

from ragas.dataset_schema import SingleTurnSample  # noqa: E402
from ragas.metrics.base import MetricType, SingleTurnMetric  # noqa: E402
from ragas.metrics.result import MetricResult  # noqa: E402
from ragas.run_config import RunConfig  # noqa: E402

from unified.integrations.scoring import IntegrationError, IntegrationScorer  # noqa: E402
from unified.sample import FRAMEWORK_FIELDS  # noqa: E402

__all__ = ["IntegrationError", "UnifiedRagasMetric"]

_RAGAS_FIELDS = FRAMEWORK_FIELDS["ragas"]  # our field -> ragas column


@dataclass(init=False)
class UnifiedRagasMetric(SingleTurnMetric):
    """A unified-rag-eval metric inside ``ragas.evaluate`` (module docstring).

    ``metric``: our metric name; ``backend``: ``"native"``, a list (a median jury) or
    ``"jury:METHOD"``; ``judge``/``judge2``/``embedding``/``single_judge``/``cache``/
    ``timeout``/``max_retries``/``prices``: as ``evaluate`` takes them (None: the
    environment, then the run file); ``allow_degraded``: accept a value from fewer judges
    or backends than asked."""

    # ragas's own field, not an argument here: our __init__ derives it from the metric (and
    # ``dataclasses.replace`` must not pass it back)
    _required_columns: dict = field(default_factory=dict, init=False, repr=False)
    metric: str = "faithfulness"
    backend: str | Sequence[str] = "native"
    judge: Any = None
    judge2: Any = None
    embedding: Any = None
    single_judge: bool = False
    cache: Any = True
    timeout: float | None = None
    max_retries: int | None = None
    prices: Any = None
    allow_degraded: bool = False
    _scorer: IntegrationScorer | None = field(default=None, init=False, repr=False)

    # Written by hand: the generated one would put ragas's own fields (``_required_columns``,
    # ``name``) first, so ``UnifiedRagasMetric("answer_relevancy")`` scored faithfulness
    # under a faithfulness name. Our metric and backend come first; the rest by keyword.
    def __init__(
        self,
        metric: str = "faithfulness",
        backend: str | Sequence[str] = "native",
        *,
        name: str = "",
        judge: Any = None,
        judge2: Any = None,
        embedding: Any = None,
        single_judge: bool = False,
        cache: Any = True,
        timeout: float | None = None,
        max_retries: int | None = None,
        prices: Any = None,
        allow_degraded: bool = False,
    ) -> None:
        self._required_columns = {}
        self.name, self.metric, self.backend = name, metric, backend
        self.judge, self.judge2, self.embedding, self.single_judge = judge, judge2, embedding, single_judge
        self.cache, self.timeout, self.max_retries, self.prices = cache, timeout, max_retries, prices
        self.allow_degraded = allow_degraded
        self._scorer = None
        self.__post_init__()

    def __post_init__(self) -> None:
        self._scorer = IntegrationScorer(
            self.metric,
            self.backend,
            allow_degraded=self.allow_degraded,
            judge=self.judge,
            judge2=self.judge2,
            embedding=self.embedding,
            single_judge=self.single_judge,
            cache=self.cache,
            timeout=self.timeout,
            max_retries=self.max_retries,
            prices=self.prices,
        )
        if not self.name:
            self.name = self._scorer.default_name()
        self._required_columns = {MetricType.SINGLE_TURN: _columns(self._scorer)}

    def init(self, run_config: RunConfig) -> None:
        """Nothing to set up: the judges come from our configuration, per sample."""

    async def _single_turn_ascore(self, sample: Any, callbacks: Any) -> float:
        """Our value for ``sample`` on 0–1; raises ``IntegrationError`` when it has none."""
        assert self._scorer is not None
        outcome = await self._scorer.ascore(sample)
        return outcome.score01

    # ragas 0.4's collections style (``await metric.ascore(user_input=..., ...)``, as in
    # its ``@experiment`` functions): the same value, with our reason
    async def ascore(self, **fields: Any) -> MetricResult:
        """Score one sample given as ragas fields; ``MetricResult(value / 10, reason)``."""
        assert self._scorer is not None
        outcome = await self._scorer.ascore(SingleTurnSample(**fields))
        return MetricResult(value=outcome.score01, reason=outcome.reason)

    def score(self, **fields: Any) -> MetricResult:
        """Synchronous ``ascore``."""
        assert self._scorer is not None
        outcome = self._scorer.score(SingleTurnSample(**fields))
        return MetricResult(value=outcome.score01, reason=outcome.reason)


def _columns(scorer: IntegrationScorer) -> set[str]:
    """The ragas columns: our required fields as required, every other mapped field
    optional (``name:optional`` is ragas's own marker)."""
    required = set(scorer.ref.spec.required)
    return {_RAGAS_FIELDS[f] if f in required else f"{_RAGAS_FIELDS[f]}:optional" for f in _RAGAS_FIELDS}
