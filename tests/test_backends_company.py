"""A value does not depend on the company it keeps, on every backend (issue 39, item 3).

For each registered backend, on the core metrics it serves (the registry says which): a
metric scored alone has the value — and its judge is asked the requests — it has beside
the backend's other core metrics, on the loopback judge without a judge cache (every
request reaches the server). The framework backends call each metric on its own; the
native backend shares calls between metrics and holds this by its canonical plan
(``tests/test_native_company.py`` checks it per step, with and without a reference).
Plumbing only: the server's answers are a pure function of the request (the frameworks'
answer modules keep their values in range), never evidence of judgment quality."""

from __future__ import annotations

import json
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
from judge_server import JudgeServer, framework_answers

from unified.adapters import backend_info, backend_names, get_backend, implemented_metrics
from unified.data.io import read_samples
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.metrics import parse_metrics

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "rag_examples.jsonl"
CORE = ("faithfulness", "answer_relevancy", "context_relevancy", "context_recall", "context_precision")
#: a backend's tests carry the marker named for its pip extra; MLflow's judges have their own
MARKER_OF_EXTRA = {"mlflow": "mlflow_judges"}


def _cases():
    for name in backend_names():
        served = [m for m in CORE if m in implemented_metrics(name)]
        if not served:
            continue
        extra = backend_info(name).extra
        marks = [getattr(pytest.mark, MARKER_OF_EXTRA.get(extra, extra))] if extra else []
        yield pytest.param(name, served, id=name, marks=marks)


def _samples():
    """One example row with every field, and the same without its reference."""
    row = next(iter(read_samples(DATA)))
    assert row.has("reference") and row.has("user_input") and row.has("response")
    return [row, row.model_copy(update={"reference": None, "id": f"{row.id}-no-reference"})]


def _judges(srv, uses_judges: bool):
    if not uses_judges:
        return None
    return build_judges(
        JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
        embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed", max_retries=0),
        cache=False,
    )


@contextmanager
def _service(name: str, judge_srv):
    """(backend options, a function giving the requests sent so far): a backend that
    answers from its own hosted service gets a loopback one; the others ask our judge."""
    if name != "patronus":
        yield {}, lambda: list(judge_srv.requests)
        return
    from patronus_server import IDS, PatronusServer

    with PatronusServer() as srv:
        options = {"api_key": "pk-loopback-company", "api_url": srv.url}
        yield options, lambda: [{k: v for k, v in b.items() if k not in IDS} for b in srv.posts()]


async def _score(sent, backend, sample, names):
    before = len(sent())
    scores = await backend.score(sample, parse_metrics(",".join(names)))
    return scores, Counter(json.dumps(body, sort_keys=True) for body in sent()[before:])


@pytest.mark.parametrize("name, served", list(_cases()))
async def test_a_value_alone_is_its_value_beside_the_other_core_metrics(name, served, tmp_path, monkeypatch):
    info = backend_info(name)
    if not info.available:
        pytest.skip(info.hint)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-company")
    monkeypatch.chdir(tmp_path)  # a framework that writes beside the run writes here
    values = []
    with JudgeServer(answer_fn=framework_answers) as srv, _service(name, srv) as (options, sent):
        judges = _judges(srv, info.uses_judges)
        backend = get_backend(name, judges, **options)
        try:
            for sample in _samples():
                beside, asked_beside = await _score(sent, backend, sample, served)
                for metric, want in zip(served, beside):
                    (got,), asked = await _score(sent, backend, sample, [metric])
                    assert (got.value, got.error) == (want.value, want.error), (name, sample.id, metric)
                    assert not asked - asked_beside, (name, sample.id, metric)  # no request of its own
                    values.append(got.value)
        finally:
            await backend.aclose()
            if judges is not None:
                await judges.aclose()
    assert any(v is not None for v in values), values  # the row with every field scores
