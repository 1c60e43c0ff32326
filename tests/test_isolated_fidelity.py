"""Fidelity of an isolated backend: ``ragas@0.3.9``'s raw score equals what ragas 0.3.9
itself computes, called directly in its own environment through its documented API
(``await Faithfulness(llm=…).ascore(...)`` with an ``InstructorBaseRagasLLM`` of the
caller's), on the same judge answers.

Method (as tests/test_deepeval_fidelity.py): score through the backend (worker, bridge,
judge layer) against the loopback judge with a SQLite judge cache; then open a bridge
route on a second judge bundle over the SAME cache, in the same task scope, and run a
script with the isolated environment's Python that calls ragas directly — its LLM is
written here, not the worker's — and check that the judge server saw zero new requests
and that the raw values are equal. Loopback answers are schema-valid but synthetic:
plumbing, not judgment quality.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from judge_server import JudgeServer

from unified.adapters import get_backend
from unified.adapters.isolated.envs import env_python
from unified.adapters.ragas import FACTS
from unified.judge import JudgeConfig, bridge, build_judges
from unified.judge.base import task_scope
from unified.metrics import parse_metric
from unified.sample import Sample

pytestmark = pytest.mark.slow

ENVS = Path(os.environ["UNIFIED_ENVS_DIR"])  # the machine's (tests/conftest.py)
SAMPLE = Sample(
    id="s1",
    user_input="What is the capital of France, and which river runs through it?",
    response="Paris is the capital of France. The Seine runs through Paris.",
    retrieved_contexts=[
        "Paris is the capital and largest city of France.",
        "The Seine flows through Paris before reaching the English Channel.",
    ],
    reference="Paris; the Seine.",
)

#: ragas 0.3.9 called by hand: the caller's own LLM and embeddings over the bridge URL
DIRECT = textwrap.dedent(
    """
    import asyncio, json, os, sys, urllib.request
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.llms.base import InstructorBaseRagasLLM
    import ragas.metrics.collections as rc

    url, route, verdicts, metric, fields = json.loads(sys.stdin.read())
    verdicts = {(c, f): v for c, f, v in verdicts}

    def post(path, body):
        req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-Unified-Route": route})
        return json.loads(urllib.request.urlopen(req).read())

    class LLM(InstructorBaseRagasLLM):
        is_async = True
        async def agenerate(self, prompt, response_model):
            return self.generate(prompt, response_model)
        def generate(self, prompt, response_model):
            schema = response_model.model_json_schema()
            for sub in [schema, *schema.get("$defs", {}).values()]:   # the prompts' allowed verdicts
                for name, prop in sub.get("properties", {}).items():
                    if (sub.get("title"), name) in verdicts:
                        prop["enum"] = verdicts[(sub.get("title"), name)]
            body = {"model": "fake", "messages": [{"role": "user", "content": prompt}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}}
            text = post("/chat/completions", body)["choices"][0]["message"]["content"]
            return response_model.model_validate_json(text)

    class Emb(BaseRagasEmbedding):
        def embed_text(self, text, **kw):
            return post("/embeddings", {"model": "fake", "input": [text]})["data"][0]["embedding"]
        async def aembed_text(self, text, **kw):
            return self.embed_text(text)
        async def aembed_texts(self, texts, **kw):
            return [d["embedding"] for d in post("/embeddings", {"model": "fake", "input": list(texts)})["data"]]

    cls = getattr(rc, metric)
    kwargs = {"llm": LLM()}
    if "embeddings" in cls.__init__.__code__.co_varnames:
        kwargs["embeddings"] = Emb()
    print(json.dumps(asyncio.run(cls(**kwargs).ascore(**fields)).value))
    """
)


def _judges(srv: JudgeServer, cache: Path):
    return build_judges(
        JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0), embedding=srv.base_url, cache_path=cache
    )


def _direct(python: Path, url: str, route: str, metric: str, fields: dict) -> float:
    verdicts = [[c, f, list(v)] for (c, f), v in FACTS.verdicts.items()]
    done = subprocess.run(
        [str(python), "-I", "-c", DIRECT],
        input=json.dumps([url, route, verdicts, metric, fields]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


async def test_isolated_ragas_equals_ragas_called_directly_in_its_environment(tmp_path):
    """faithfulness (chat only) and answer_relevancy (chat and embeddings), one worker and
    one direct interpreter for both."""
    metrics = ["faithfulness", "answer_relevancy"]
    cache = tmp_path / "c.sqlite"
    with JudgeServer() as srv:
        judges_a = _judges(srv, cache)
        backend = get_backend("ragas@0.3.9", judges_a)
        try:
            scores = await backend.score(SAMPLE, [parse_metric(m) for m in metrics])
            python = env_python(Path(backend.worker.python).parents[1])  # type: ignore[attr-defined]
        finally:
            await backend.aclose()
            await judges_a.aclose()
        assert all(s.ok for s in scores), [s.error for s in scores]
        assert srv.request_count > 0 and all(s.cost.calls > 0 for s in scores)

        srv.reset_counts()
        judges_b = _judges(srv, cache)
        b = bridge.acquire()
        direct = {}
        try:
            for metric in metrics:
                row = FACTS.metrics[metric]  # type: ignore[index]
                # the same task scope: the cache counts repeated identical requests per task
                with task_scope("ragas@0.3.9", metric, SAMPLE.id), b.route(judges_b) as headers:
                    direct[metric] = await asyncio.to_thread(
                        _direct, python, b.base_url, headers[bridge.ROUTE_HEADER], row.cls, row.fields(SAMPLE)
                    )
        finally:
            bridge.release()
            await judges_b.aclose()
        assert srv.request_count == 0, "the direct calls must replay the cache, not ask again"
    for score in scores:
        assert score.details["ragas_version"] == "0.3.9" and score.details["verdicts"]
        assert abs(score.raw - direct[score.metric]) <= 1e-12
        assert abs(score.value - 10 * max(0.0, min(1.0, direct[score.metric]))) <= 1e-9
