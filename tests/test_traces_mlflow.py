"""MLflow traces as input: traces logged by a test with the real ``mlflow`` package to a
sqlite store in tmp, read back as ``mlflow.search_traces()`` returns them (a DataFrame, or
``Trace`` objects) and as trace JSON exports, into one Sample per trace."""

from __future__ import annotations

import json

import pytest

mlflow = pytest.importorskip("mlflow")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

import trace_fixtures as tf  # noqa: E402

from unified.data.io import load_samples  # noqa: E402


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """Five RAG calls traced by ``@mlflow.trace`` (a RETRIEVER returning MLflow
    ``Document``s, an LLM span), plus one without a retriever; (experiment id, store)."""
    from mlflow.entities import Document, SpanType

    folder = tmp_path_factory.mktemp("mlflow")
    store = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(store)
    exp_id = mlflow.create_experiment("unified-traces", artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp_id)

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def retrieve(query: str, k: int = 3) -> list:
        rag = next(r for r in tf.RAG if r["question"] == query)
        return [
            Document(page_content=text, metadata={"score": score, "doc_uri": f"kb://{doc_id}"}, id=doc_id)
            for doc_id, text, score in rag["docs"][:k]
        ]

    @mlflow.trace(span_type=SpanType.LLM)
    def generate(question: str, contexts: list) -> str:
        return next(r["answer"] for r in tf.RAG if r["question"] == question)

    @mlflow.trace(name="rag")
    def rag(question: str, use_retriever: bool = True) -> str:
        docs = retrieve(question) if use_retriever else []
        return generate(question, [d.page_content for d in docs])

    for r in tf.RAG:
        rag(r["question"])
    rag("What is fact 0?", use_retriever=False)
    yield exp_id, store
    mlflow.set_tracking_uri(None)


def check(good, bad) -> None:
    by_question = {s.user_input: s for s in good}
    assert len(good) == 5 and set(by_question) == {r["question"] for r in tf.RAG}
    for r in tf.RAG:
        s = by_question[r["question"]]
        assert s.id.startswith("tr-") and s.response == r["answer"]
        assert s.retrieved_contexts == [text for _, text, _ in r["docs"]]
        # MLflow names a document by its doc_uri (its expectations and the scorer do), not its id
        assert s.retrieved_ids == [f"kb://{doc_id}" for doc_id, _, _ in r["docs"]]
        assert s.metadata["retrieval_scores"] == [score for _, _, score in r["docs"]]
        prov = s.metadata["provenance"]
        assert prov["format"] == "mlflow-traces"
        assert prov["user_input"] == {
            "span": "rag",
            "span_id": prov["user_input"]["span_id"],
            "field": "mlflow.spanInputs",
            "key": "question",
        }
        assert [c["field"] for c in prov["retrieved_contexts"]] == [
            f"mlflow.spanOutputs[{n}].page_content" for n in range(3)
        ]
    assert len(bad) == 1 and bad[0].field == "retrieved_contexts" and bad[0].sample_id.startswith("tr-")
    assert f"trace {bad[0].sample_id}: has no RETRIEVER span" in bad[0].reason


def test_a_search_traces_dataframe_loads_into_one_sample_per_trace(logged):
    exp_id, _ = logged
    df = mlflow.search_traces(locations=[exp_id], flush=True)
    assert len(df) == 6
    good, bad = load_samples(df)  # recognised by its columns
    check(good, bad)
    assert {s.id for s in good} | {bad[0].sample_id} == set(df["trace_id"])


def test_trace_objects_and_a_trace_json_export_load_the_same_way(logged, tmp_path):
    exp_id, _ = logged
    traces = mlflow.search_traces(locations=[exp_id], return_type="list", flush=True)  # alone, it must flush too
    good, bad = load_samples(traces)
    check(good, bad)
    export = tmp_path / "traces.jsonl"
    export.write_text("".join(t.to_json() + "\n" for t in traces))
    again, bad_again = load_samples(export)
    assert [s.model_dump() for s in again] == [s.model_dump() for s in good] and len(bad_again) == 1
    pretty = tmp_path / "one.json"
    pretty.write_text(traces[0].to_json(pretty=True))
    assert len(load_samples(pretty, layout="mlflow-traces")[0] + load_samples(pretty)[1]) == 1
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([t.to_dict() for t in traces], default=str))
    assert len(load_samples(listed)[0]) == 5
