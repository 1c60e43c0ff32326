"""The Phoenix backend: our Sample and judge inside arize-phoenix-evals 3.x evaluators.

Phoenix does the judging, unchanged; this module only translates:

- our judge -> Phoenix's documented LLM extension point: a provider named ``unified``
  registered in ``phoenix.evals.llm.registries.PROVIDER_REGISTRY`` whose adapter
  (``JudgePhoenixAdapter``, a ``BaseLLMAdapter``) answers ``generate_object`` /
  ``generate_text`` with our ``ChatJudge``. ``LLM(provider="unified", model=...,
  judges=...)`` is then an ordinary Phoenix ``LLM``: every prompt an evaluator renders goes
  through ``unified.judge`` (cache, retries, breaker, counting, prices). No OpenAI client
  is built, no key is read, no rate limiter of Phoenix's is added (the judge layer limits);
- ``Sample`` -> the evaluator's ``eval_input`` dict (``input``, ``output``, ``context``);
- Phoenix's label -> ``Score``. Every mapped evaluator is a ``ClassificationEvaluator``
  whose ``choices`` map a label to 1.0 or 0.0; the raw value is that number and

      value = 10 · raw                       (faithful / correct / relevant = 10)

  ``context_relevancy`` asks once per retrieved context (Phoenix's per-document usage of
  ``RetrievalRelevanceEvaluator``) and averages: raw = (relevant contexts) / K, so
  value = 10 · relevant / K. The evaluator's ``explanation`` is the Score's ``reason``;
  labels are kept in ``details``.

A Phoenix error (an invalid label, a judge failure) becomes ``value=None`` with
``error="phoenix <Evaluator>: <what Phoenix said>"`` on one line.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before phoenix is imported

import phoenix.evals as phoenix_evals  # noqa: E402
from phoenix.evals import metrics as phoenix_metrics  # noqa: E402
from phoenix.evals.llm import LLM  # noqa: E402
from phoenix.evals.llm.registries import PROVIDER_REGISTRY  # noqa: E402
from phoenix.evals.llm.types import BaseLLMAdapter, ObjectGenerationMethod  # noqa: E402
from pydantic import BaseModel, Field, create_model  # noqa: E402

from unified.adapters.framework import FrameworkBackend, Outcome, run_blocking  # noqa: E402
from unified.adapters.phoenix import FACTS, PHOENIX_METRICS, PhoenixMetric  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402

PROVIDER = "unified"
VERSION = phoenix_evals.__version__


# ---------------------------------------------------------------- our judge as a Phoenix LLM


def _messages(prompt: Any) -> list[dict[str, str]]:
    """Phoenix's ``PromptLike`` (a string, or messages whose role may be an enum and whose
    content may be a list of text parts) -> our chat messages."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    out = []
    for msg in prompt:
        role = getattr(msg["role"], "value", msg["role"])
        content = msg["content"]
        if not isinstance(content, str):
            content = "".join(part.get("text", "") for part in content)
        out.append({"role": str(role), "content": content})
    return out


_JSON_TYPES: dict[str, Any] = {"string": str, "number": float, "integer": int, "boolean": bool}


def _field_type(prop: dict[str, Any]) -> Any:
    """One JSON-schema property -> a Python type; labels (``enum`` or ``oneOf`` of
    ``const``) become a ``Literal`` so the judge can only answer a valid label."""
    labels = prop.get("enum") or [c["const"] for c in prop.get("oneOf", []) if "const" in c]
    if labels:
        return Literal[tuple(labels)]
    if prop.get("type") in _JSON_TYPES:
        return _JSON_TYPES[prop["type"]]
    raise TypeError(f"phoenix asked for a JSON schema property this adapter cannot express: {prop}")


_models: dict[str, type[BaseModel]] = {}


def schema_model(schema: dict[str, Any]) -> type[BaseModel]:
    """Phoenix's flat object schema (``generate_classification_schema``: ``explanation``
    and ``label``) -> a pydantic model for ``ChatJudge.ask``, built once per schema."""
    import json

    key = json.dumps(schema, sort_keys=True)
    if key not in _models:
        required = set(schema.get("required", []))
        fields: dict[str, Any] = {}
        for name, prop in schema.get("properties", {}).items():
            typ = _field_type(prop)
            default = ... if name in required else None
            fields[name] = (
                typ if name in required else typ | None,
                Field(default, description=prop.get("description")),
            )
        _models[key] = create_model("PhoenixAnswer", **fields)
    return _models[key]


class JudgePhoenixAdapter(BaseLLMAdapter):
    """Phoenix's adapter interface answered by our ``ChatJudge``; its ``client`` is the
    ``Judges`` bundle. Phoenix's invocation parameters (temperature, ...) are not passed
    on: the judge's own configuration decides sampling, so all backends share it."""

    @classmethod
    def client_name(cls) -> str:
        return "unified-judge"

    async def async_generate_object(
        self,
        prompt: Any,
        schema: dict[str, Any],
        method: ObjectGenerationMethod = ObjectGenerationMethod.AUTO,
        **kwargs: Any,
    ) -> dict[str, Any]:
        answer = await self.client.require_chat().ask(_messages(prompt), schema_model(schema))
        return answer.model_dump(exclude_none=True)

    async def async_generate_text(self, prompt: Any, **kwargs: Any) -> str:
        return await self.client.require_chat().ask_text(_messages(prompt))

    def generate_object(
        self,
        prompt: Any,
        schema: dict[str, Any],
        method: ObjectGenerationMethod = ObjectGenerationMethod.AUTO,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return run_blocking(lambda: self.async_generate_object(prompt, schema, method))

    def generate_text(self, prompt: Any, **kwargs: Any) -> str:
        return run_blocking(lambda: self.async_generate_text(prompt))


def _client_factory(model: str, is_async: bool, judges: Judges | None = None, **kwargs: Any) -> Judges:
    if judges is None:
        raise ValueError("provider 'unified' needs judges=<unified.judge.base.Judges>")
    return judges


if not PROVIDER_REGISTRY.get_provider_registrations(PROVIDER):
    PROVIDER_REGISTRY.register_provider(
        provider=PROVIDER, adapter_class=JudgePhoenixAdapter, client_factory=_client_factory
    )


def phoenix_llm(judges: Judges) -> LLM:
    """A Phoenix ``LLM`` whose every call goes to ``judges.chat``."""
    model = getattr(judges.chat, "model", "") or "unified-judge"
    return LLM(provider=PROVIDER, model=model, judges=judges)


def _check_labels() -> None:
    """The labels ``unified-eval metrics`` shows (read without importing Phoenix) must be
    the ones this Phoenix declares: a renamed label would otherwise be scored silently."""
    for m in PHOENIX_METRICS.values():
        choices = getattr(phoenix_metrics, m.cls).CHOICES
        if choices != m.labels:
            raise ImportError(
                f"arize-phoenix-evals {VERSION}: {m.cls} declares labels {choices}, unified-rag-eval expects {m.labels}"
            )


_check_labels()


class PhoenixBackend(FrameworkBackend):
    """Run canonical metrics with arize-phoenix-evals 3.x evaluators over our judge.

    Options as ``FrameworkBackend`` (``concurrency``; ``run_dir``). Evaluators keep no
    per-call state, so one instance per metric is shared by all samples.
    """

    FACTS = FACTS
    metric_key = "evaluator"

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self._evaluators: dict[str, Any] = {}

    def version(self) -> str:
        return str(VERSION)

    def evaluator(self, canonical: str) -> Any:
        """The (shared, lazily built) Phoenix evaluator for ``canonical``."""
        if canonical not in self._evaluators:
            cls = getattr(phoenix_metrics, PHOENIX_METRICS[canonical].cls)
            self._evaluators[canonical] = cls(llm=phoenix_llm(self.judges))
        return self._evaluators[canonical]

    async def evaluate(self, sample: Sample, ref: MetricRef, row: PhoenixMetric, details: dict[str, Any]) -> Outcome:
        """``await evaluator.async_evaluate(eval_input)`` per input of the row (one, or one
        per retrieved context), combined (``_combine``). Phoenix evaluators take no
        parameters of ours: every bracket parameter but the bound is refused."""
        evaluator = self.evaluator(ref.canonical)
        results = await asyncio.gather(*(evaluator.async_evaluate(x) for x in row.inputs(sample)))
        raw, reason = self._combine([r[0] for r in results], details)
        return Outcome(raw, f"returned {raw!r}", reason=reason)

    @staticmethod
    def _combine(scores: list[Any], details: dict[str, Any]) -> tuple[Any, str | None]:
        """Phoenix Scores of one task -> (raw, reason): one score as it is, several (one per
        context) as their mean; labels and explanations go to ``details``."""
        details["labels"] = [s.label for s in scores]
        if len(scores) == 1:
            return scores[0].score, scores[0].explanation
        if any(s.score is None for s in scores):
            return None, None
        raw = sum(float(s.score) for s in scores) / len(scores)
        reason = " | ".join(f"[{i + 1}] {s.label}: {s.explanation}" for i, s in enumerate(scores))
        return raw, reason
