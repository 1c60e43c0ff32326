"""Our metrics as Phoenix evaluators: ``UnifiedEvaluator`` for ``phoenix.evals`` (3.x).

    from phoenix.evals import evaluate_dataframe
    from unified.integrations.phoenix import UnifiedEvaluator

    out = evaluate_dataframe(df, [UnifiedEvaluator("faithfulness")])
    out["unified_faithfulness_score"]        # {"score": value / 10, "label": "pass", ...}

An evaluator declares its inputs with a pydantic ``input_schema``; ours has Phoenix's
usual names (those of its own faithfulness and correctness evaluators) for the Sample
fields (``PHOENIX_FIELDS``):

==================  ==================================================
Phoenix input       Sample field
==================  ==================================================
input               user_input
output              response
context             retrieved_contexts (a string is one context)
expected            reference
reference_contexts  reference_contexts
retrieved_ids       retrieved_ids
relevant_ids        relevant_ids
id                  id (optional; else the content hash)
==================  ==================================================

The metric's required fields are required inputs (Phoenix refuses a row without them);
the others are read when the row has them. Other column names: ``bind(...)`` or
``bind_evaluator(evaluator, {"input": "question", ...})``, as for any Phoenix evaluator.

The scoring is ``IntegrationScorer`` (``unified.integrations.scoring``): the same judge
config, cache and call counting as ``evaluate``. One ``Score`` per row: ``score`` = our
value / 10, ``label`` ``pass``/``fail`` by our threshold, ``explanation`` our reason (with
several backends: the jury's value, each backend's value and reason), ``metadata``
``Outcome.metadata()`` (every backend's value on 0–10, judge calls, ...),
``direction="maximize"``.

Errors: a row that cannot be scored raises ``UnifiedEvaluationError``, a
``PhoenixException`` — so Phoenix records it in the row's ``<name>_execution_details``
(status ``FAILED``, the exception) with no score, and does not retry it (our judge layer
has already retried each call; Phoenix's own retries would pay again).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Sequence, Union

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()

from phoenix.evals import Evaluator, Score  # noqa: E402
from phoenix.evals.exceptions import PhoenixException  # noqa: E402
from pydantic import BaseModel, BeforeValidator, create_model  # noqa: E402

from unified.integrations.scoring import IntegrationError, IntegrationScorer, Outcome  # noqa: E402

__all__ = ["PHOENIX_FIELDS", "UnifiedEvaluationError", "UnifiedEvaluator"]

#: Phoenix input name -> (Sample field, type)
PHOENIX_FIELDS: dict[str, tuple[str, Any]] = {
    "input": ("user_input", str),
    "output": ("response", str),
    "context": ("retrieved_contexts", Union[str, list[str]]),
    "expected": ("reference", str),
    "reference_contexts": ("reference_contexts", list[str]),
    "retrieved_ids": ("retrieved_ids", list[str]),
    "relevant_ids": ("relevant_ids", list[str]),
    "id": ("id", str),
}


class UnifiedEvaluationError(IntegrationError, PhoenixException):
    """A row our metric could not score; Phoenix records it and does not retry it."""


class UnifiedEvaluator(Evaluator):
    """A unified-rag-eval metric as a Phoenix evaluator (module docstring).

    ``metric``: our metric name; ``backend``: ``"native"``, a list (a median jury) or
    ``"jury:METHOD"``; ``name``: ``unified_<metric>`` unless given; ``run_options``:
    ``judge``/``judge2``/``embedding``/``single_judge``/``cache``/``timeout``/
    ``max_retries``/``prices`` as ``evaluate`` takes them (None: the environment, then
    the run file); ``allow_degraded``: accept a value from fewer judges or backends than
    asked."""

    def __init__(
        self,
        metric: str,
        backend: str | Sequence[str] = "native",
        *,
        name: str | None = None,
        allow_degraded: bool = False,
        **run_options: Any,
    ):
        self._scorer = IntegrationScorer(metric, backend, allow_degraded=allow_degraded, **run_options)
        kind = "code" if self._scorer.ref.spec.kind == "retrieval" else "llm"
        super().__init__(
            name=name or self._scorer.default_name(),
            kind=kind,
            direction="maximize",
            input_schema=_schema(self._scorer),
        )
        self.bind({})

    def bind(self, input_mapping: Any) -> None:
        """Phoenix's ``bind``; the optional inputs not named keep their own names (Phoenix
        would otherwise read only the required ones)."""
        super().bind({**{k: k for k in PHOENIX_FIELDS}, **dict(input_mapping)})

    def _evaluate(self, eval_input: dict[str, Any]) -> list[Score]:
        return [self._score(self._run(lambda: self._scorer.score(_record(eval_input))))]

    async def _async_evaluate(self, eval_input: dict[str, Any]) -> list[Score]:
        try:
            outcome = await self._scorer.ascore(_record(eval_input))
        except IntegrationError as exc:
            raise UnifiedEvaluationError(str(exc)) from exc
        return [self._score(outcome)]

    @staticmethod
    def _run(call: Any) -> Outcome:
        try:
            return call()
        except IntegrationError as exc:
            raise UnifiedEvaluationError(str(exc)) from exc

    def _score(self, o: Outcome) -> Score:
        label = None if o.passed is None else ("pass" if o.passed else "fail")
        return Score(
            name=self.name,
            score=o.score01,
            label=label,
            explanation=o.reason,
            metadata=o.metadata(),
            kind=self.kind,
            direction="maximize",
        )


def _schema(scorer: IntegrationScorer) -> type[BaseModel]:
    """The input model: the metric's required fields required, the rest optional."""
    required = set(scorer.ref.spec.required)
    fields: dict[str, Any] = {}
    for name, (ours, typ) in PHOENIX_FIELDS.items():
        # the validator wraps the Optional: an empty cell must become None before the union
        if ours in required:
            fields[name] = (Annotated[typ, BeforeValidator(_cell)], ...)
        else:
            fields[name] = (Annotated[Optional[typ], BeforeValidator(_cell)], None)
    return create_model(f"Unified_{scorer.metric}_Input", **fields)


def _cell(value: Any) -> Any:
    """A DataFrame cell as pydantic should see it: an empty cell (NaN, None) is missing,
    an array or tuple (Parquet list columns) a list."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, tuple) or type(value).__name__ == "ndarray":
        return list(value)
    return value


def _record(eval_input: dict[str, Any]) -> dict[str, Any]:
    """Our sample record from the validated Phoenix input (None values left out)."""
    record = {PHOENIX_FIELDS[k][0]: v for k, v in eval_input.items() if k in PHOENIX_FIELDS and v is not None}
    if isinstance(record.get("retrieved_contexts"), str):
        record["retrieved_contexts"] = [record["retrieved_contexts"]]
    return record
