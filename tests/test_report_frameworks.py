"""Results back in the frameworks' shapes: ``Report.to_ragas()`` against ragas's own
result machinery, ``Report.to_deepeval()`` against deepeval's own metric objects and
result models, and the framework names against the installed frameworks.

The loopback judge answers random-but-valid JSON: these tests check that the numbers and
names travel unchanged, never judgment quality.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("ragas", reason="the ragas extra is not installed")
pytest.importorskip("deepeval", reason="the deepeval extra is not installed")

import ragas.metrics.collections as rc
from deepeval.evaluate.types import TestResult
from deepeval.test_case import LLMTestCase
from deepeval.test_run.api import MetricData
from judge_server import JudgeServer
from ragas.callbacks import RagasTracer
from ragas.dataset_schema import EvaluationDataset, EvaluationResult, SingleTurnSample
from report_runs import two_backend_run

from unified.adapters.deepeval import DEEPEVAL_METRICS
from unified.adapters.deepeval.backend import DeepEvalBackend
from unified.adapters.ragas import RAGAS_METRICS
from unified.adapters.ragas.backend import JudgeRagasEmbedding, JudgeRagasLLM
from unified.api import evaluate
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.judge.base import task_scope
from unified.report import Report
from unified.report.frameworks import deepeval_name, ragas_name
from unified.sample import Sample

pytestmark = [pytest.mark.ragas, pytest.mark.deepeval]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
N = 4


def _judges(srv: JudgeServer, cache):
    return build_judges(
        JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
        embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed", max_retries=0),
        cache_path=cache,
    )


def _samples() -> list[Sample]:
    rows = [json.loads(x) for x in DATA.read_text().splitlines()[:N]]
    return [Sample.model_validate(r) for r in rows]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")


# what each ragas collections metric takes, written out here (not taken from the adapter)
RAGAS_DIRECT = {
    "faithfulness": (rc.Faithfulness, ("llm",), ("user_input", "response", "retrieved_contexts")),
    "context_recall": (rc.ContextRecall, ("llm",), ("user_input", "retrieved_contexts", "reference")),
    "context_precision": (
        rc.ContextPrecisionWithReference,
        ("llm",),
        ("user_input", "reference", "retrieved_contexts"),
    ),
    "context_relevancy": (rc.ContextRelevance, ("llm",), ("user_input", "retrieved_contexts")),
    "answer_relevancy": (rc.AnswerRelevancy, ("llm", "embeddings"), ("user_input", "response")),
}


async def _ragas_direct(judges, samples: list[Sample]) -> pd.DataFrame:
    """What a RAGAS user gets: ragas's collections metrics scored on our judge (the same
    cached answers: ``task_scope`` only gives the cache its per-task occurrence index), the
    per-sample {metric.name: value} dicts fed to ragas's own ``EvaluationResult`` with an
    ``EvaluationDataset`` of the samples, and its ``to_pandas()`` — the steps
    ``ragas.evaluate`` itself ends with."""
    llm, emb = JudgeRagasLLM(judges), JudgeRagasEmbedding(judges)
    metrics = {
        name: cls(**{k: {"llm": llm, "embeddings": emb}[k] for k in uses})
        for name, (cls, uses, _) in RAGAS_DIRECT.items()
    }
    scores = []
    for s in samples:
        row = {}
        for name, m in metrics.items():
            with task_scope("ragas", name, s.id):
                result = await m.ascore(**{f: getattr(s, f) for f in RAGAS_DIRECT[name][2]})
            row[m.name] = result.value
        scores.append(row)
    dataset = EvaluationDataset(
        [
            SingleTurnSample(
                user_input=s.user_input,
                retrieved_contexts=s.retrieved_contexts,
                response=s.response,
                reference=s.reference,
            )
            for s in samples
        ]
    )
    # ragas.evaluate records a root "ragas evaluation" trace with ragas's tracer; the
    # result's constructor needs one (it has no rows here: no per-row traces are compared)
    tracer = RagasTracer()
    tracer.on_chain_start({"name": "ragas evaluation"}, {}, run_id=uuid.uuid4())
    return EvaluationResult(scores=scores, dataset=dataset, ragas_traces=tracer.traces).to_pandas()


@pytest.mark.slow
def test_to_ragas_equals_ragas_own_result_frame_on_the_replayed_cache(tmp_path):
    """The issue's done-when: ``to_ragas()`` on a ragas-backend run equals, column for
    column, what ragas's ``evaluate(...).to_pandas()`` gives on the same samples with the
    judge cache replayed (values to 1e-9).

    ``ragas.evaluate`` itself accepts only the deprecated ``ragas.metrics`` objects, which
    the ragas backend does not use (FRAMEWORK_NOTES: the two stacks do not mix). So the
    expected frame is built the way ``ragas.evaluate`` builds its own: the same
    collections metrics are called directly on the same samples through the judge cache
    the run filled (0 new judge requests, checked), and their values go through ragas's
    ``EvaluationResult(scores, dataset).to_pandas()``."""
    samples = _samples()
    cache = tmp_path / "cache.sqlite"
    with JudgeServer() as srv:
        report = evaluate(
            samples, list(RAGAS_DIRECT), ["ragas"], judges=_judges(srv, cache), out=tmp_path / "run", quiet=True
        )
        srv.reset_counts()
        expected = asyncio.run(_ragas_direct(_judges(srv, cache), samples))
        assert srv.request_count == 0, "the direct calls must replay the cache"
    got = Report.from_dir(tmp_path / "run").to_ragas()
    assert (
        list(got.columns)
        == list(expected.columns)
        == [
            "user_input",
            "retrieved_contexts",
            "response",
            "reference",
            "faithfulness",
            "context_recall",
            "context_precision_with_reference",
            "context_relevance",
            "answer_relevancy",
        ]
    )
    # one deliberate difference: a value ragas computed outside its own 0–1 range (from the
    # synthetic judge's answers) is no score here — NaN, the number kept in the details
    numbers = expected.select_dtypes("number").columns
    for column in numbers:
        for i in expected.index:
            mine, theirs = got.loc[i, column], expected.loc[i, column]
            if pd.isna(mine) and not pd.isna(theirs):
                assert theirs > 1.0 or theirs < 0.0, (column, theirs)  # only what left ragas's range
                expected.loc[i, column] = float("nan")
    assert (expected[numbers] > 1).sum().sum() == 0  # every value above ragas's range became NaN
    pd.testing.assert_frame_equal(got, expected, check_exact=False, atol=1e-9, rtol=0)
    assert report.to_ragas(backend="ragas").equals(got)


def test_ragas_and_deepeval_names_are_the_frameworks_own():
    """The names the report derives (no framework import in unified/) equal the names the
    installed frameworks give: ragas's collections ``name`` default, deepeval's
    ``__name__``, for every metric the adapters map, from the recorded class and from the
    registry alias alike."""
    for canonical, m in RAGAS_METRICS.items():
        own = inspect.signature(getattr(rc, m.cls).__init__).parameters["name"].default
        assert ragas_name(canonical, {"ragas_metric": m.cls}) == own, canonical
        if canonical != "answer_correctness":  # its alias is AnswerCorrectness too, checked above
            assert ragas_name(canonical) == own, canonical
    backend = DeepEvalBackend()
    for canonical, m in DEEPEVAL_METRICS.items():
        own = backend.new_metric(canonical).__name__
        assert deepeval_name(canonical, {"deepeval_metric": m.cls}) == own, canonical
        assert deepeval_name(canonical) == own, canonical
    assert ragas_name("precision@3") == deepeval_name("precision@3") == "precision@3"


@pytest.mark.slow
def test_to_deepeval_matches_deepeval_metric_objects_and_result_models(tmp_path):
    """Each record validates as deepeval's own ``MetricData``/``TestResult``; every
    score, threshold, success and reason equals what the deepeval metric object itself
    holds after measuring the same test case on the replayed judge cache."""
    samples = _samples()[:2]
    cache = tmp_path / "cache.sqlite"
    metrics = ["faithfulness", "context_relevancy"]
    with JudgeServer() as srv:
        evaluate(samples, metrics, ["deepeval"], judges=_judges(srv, cache), out=tmp_path / "run", quiet=True)
        srv.reset_counts()
        backend = DeepEvalBackend(_judges(srv, cache))
        direct = {}
        for s in samples:
            for name in metrics:
                m = backend.new_metric(name, threshold={"faithfulness": 0.7}.get(name, 0.5))
                tc = LLMTestCase(
                    input=s.user_input,
                    actual_output=s.response,
                    expected_output=s.reference,
                    retrieval_context=s.retrieved_contexts,
                )
                with task_scope("deepeval", name, s.id):
                    asyncio.run(m.a_measure(tc, _show_indicator=False))
                direct[(s.id, m.__name__)] = m
        assert srv.request_count == 0
    records = Report.from_dir(tmp_path / "run").to_deepeval()
    assert [r["name"] for r in records] == [s.id for s in samples]
    for rec, s in zip(records, samples):
        assert (rec["input"], rec["actual_output"]) == (s.user_input, s.response)
        TestResult(
            name=rec["name"],
            success=rec["success"],
            conversational=False,
            input=rec["input"],
            actual_output=rec["actual_output"],
            expected_output=rec["expected_output"],
            retrieval_context=rec["retrieval_context"],
            metrics_data=[MetricData(**d) for d in rec["metrics_data"]],
        )
        assert [d["name"] for d in rec["metrics_data"]] == ["Faithfulness", "Contextual Relevancy"]
        for d in rec["metrics_data"]:
            m = direct[(s.id, d["name"])]
            assert d["score"] == pytest.approx(m.score, abs=1e-9)
            assert d["threshold"] == pytest.approx(m.threshold)
            assert (d["success"], d["reason"], d["error"]) == (m.success, m.reason, None)
        assert rec["success"] == all(d["success"] for d in rec["metrics_data"])


def test_several_backends_give_one_row_per_sample_and_backend(tmp_path):
    """Without ``backend=``, a compare run gives a ``backend`` column / field; with it, the
    single-backend shape. A failed task is NaN for ragas users, an error for deepeval's."""
    report = two_backend_run(tmp_path)
    n = len(report.samples())
    df = report.to_ragas()
    assert list(df.columns) == [
        "user_input",
        "retrieved_contexts",
        "response",
        "reference",
        "backend",
        "mrr",
        "precision@3",
    ]
    assert len(df) == 2 * n and list(df["backend"][:2]) == ["native", "lastrel"]
    one = report.to_ragas(backend="lastrel")
    assert "backend" not in one.columns and len(one) == n
    raw = {(d["sample_id"], d["metric"]): d["raw"] for d in report.iter_score_dicts() if d["backend"] == "lastrel"}
    ids = list(report.samples())
    assert [None if v != v else v for v in one["mrr"]] == [raw[(sid, "mrr")] for sid in ids]  # NaN: failed
    recs = report.to_deepeval()
    assert [r["backend"] for r in recs[:2]] == ["native", "lastrel"] and len(recs) == 2 * n
    failed = [d for r in recs for d in r["metrics_data"] if d["error"]]
    # the two samples without retrieved ids fail both metrics on both backends
    assert len(failed) == 8 and all(d["score"] is None and d["success"] is False for d in failed)
    assert "retrieved_ids" in failed[0]["error"] and one["precision@3"].isna().sum() == 2
    with pytest.raises(ValueError, match="not in this run"):
        report.to_ragas(backend="nope")
