"""Framework verdicts outside their scale (issue 45): a judge that answers a rating the
framework's prompt does not allow — negative, above the scale, NaN, a word, nothing — must
fail the task with what it said, on every framework backend, never become a confident
score. Before, ragas counted a verdict of −3 as "faithful" (10/10) and a noncommittal of 11
as noncommittal (0/10); TruLens read "-3" as 3 and its own "-1" (could not grade) as 1.

The loopback judge answers every request as usual, then replaces each number in the answer
(structured fields and free text alike) by the hostile value and counts the answers it
altered. A task whose judge answers were altered must be an error."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from judge_server import JudgeServer, _seed_for, _text_of, framework_answers, request_schema, synthesize

from unified.adapters import available, backend_info, builtin_backends, get_backend, implemented_metrics
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.metrics import parse_metric
from unified.sample import Sample

CORE = (
    "faithfulness",
    "answer_relevancy",
    "context_relevancy",
    "context_recall",
    "context_precision",
    "answer_correctness",
    "hallucination",
)
SHAPES: dict[str, Any] = {
    "negative": -3,
    "could not grade": -1,
    "above": 11,
    "nan": float("nan"),
    "word": "many",
    "empty": "",
}
FRAMEWORKS = [b for b in builtin_backends() if backend_info(b).table and available(backend_info(b))]
SAMPLE = Sample(
    id="s",
    user_input="When was the Eiffel Tower built?",
    response="It was built from 1887 to 1889. It is in Paris.",
    retrieved_contexts=["The Eiffel Tower was built from 1887 to 1889.", "Paris is in France."],
    reference="It was built from 1887 to 1889.",
)
#: (backend, metric) whose judge answer holds no verdict: a number there is content
NO_VERDICT = {
    # the judge writes questions the answer would answer; the score is a cosine of embeddings
    ("embedchain", "answer_relevancy"),
    # the judge copies the context sentences it finds useful; the score counts sentences
    ("embedchain", "context_relevancy"),
}
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")


class Hostile:
    """An ``answer_fn`` that puts ``value`` wherever the usual answer has a number."""

    def __init__(self, value: Any):
        self.value, self.altered = value, 0

    def _swap(self, x: Any) -> Any:
        if isinstance(x, dict):
            return {k: self._swap(v) for k, v in x.items()}
        if isinstance(x, list):
            return [self._swap(v) for v in x]
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            self.altered += 1
            return self.value
        return x

    def __call__(self, body: dict) -> Any:
        usual = framework_answers(body)
        if usual is None:
            schema, _ = request_schema(body)
            usual = synthesize(schema, random.Random(_seed_for(_text_of(body), 0))) if schema else "Rating: 2"
        if isinstance(usual, str):
            try:
                usual = json.loads(usual)
            except ValueError:
                swapped, n = _NUMBER.subn(str(self.value), usual)
                self.altered += n
                return swapped
        answer = self._swap(usual)
        return json.dumps(answer) if isinstance(self.value, float) else answer  # NaN as JSON's NaN token


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("backend", FRAMEWORKS)
async def test_an_out_of_scale_verdict_is_an_error_never_a_score(backend, shape):
    for metric in [m for m in CORE if m in implemented_metrics(backend)]:
        hostile = Hostile(SHAPES[shape])
        with JudgeServer(answer_fn=hostile) as srv:
            judges = build_judges(
                JudgeConfig(base_url=srv.base_url, model="m", max_retries=0),
                embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="e", max_retries=0),
            )
            b = get_backend(backend, judges)
            try:
                [score] = await b.score(SAMPLE, [parse_metric(metric)])
            finally:
                await b.aclose()
        if hostile.altered and (backend, metric) not in NO_VERDICT:
            assert score.value is None and score.error, (backend, metric, shape, score.value, score.details)


def test_every_integer_verdict_of_the_ragas_metrics_served_is_held_to_its_scale():
    """ragas's answer models declare their verdicts as plain ``int``; the room lists the
    values each prompt allows (``VERDICTS``). A served metric whose answer model has an
    integer field the list misses would read any number again."""
    pytest.importorskip("ragas")
    import importlib
    import inspect

    from pydantic import BaseModel

    from unified.adapters.ragas import RAGAS_METRICS, VERDICTS

    missing = []
    for row in RAGAS_METRICS.values():
        metric_module = inspect.getmodule(getattr(importlib.import_module("ragas.metrics.collections"), row.cls))
        package = metric_module.__name__.rpartition(".")[0]
        try:
            util = importlib.import_module(package + ".util")
        except ImportError:
            continue
        for model in vars(util).values():
            if isinstance(model, type) and issubclass(model, BaseModel) and model.__module__ == util.__name__:
                for name, info in model.model_fields.items():
                    if info.annotation is int and (model.__name__, name) not in VERDICTS:
                        missing.append((row.cls, model.__name__, name))
    assert missing == []
