"""UnifiedScorer inside ``mlflow.genai.evaluate`` (MLflow 3, a sqlite store in tmp): static
rows, and traces of a traced RAG app as ``mlflow.search_traces()`` returns them; our value
/ 10 in MLflow's Feedback and metrics, every backend's value in the metadata, a failed task
as the Feedback's error.

The loopback judge is scripted (``judge_answers_integrations``): a grounded answer scores
10, one about zebras 0, one mentioning ``brokenjudge`` fails.
"""

from __future__ import annotations

import pytest

mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
pytest.importorskip("sqlalchemy", reason="a sqlite store needs the full mlflow package, not mlflow-skinny")

from judge_answers_integrations import grounding_judge  # noqa: E402
from judge_server import JudgeServer  # noqa: E402
from mlflow.entities import Document, SpanType  # noqa: E402

from unified.api import evaluate  # noqa: E402
from unified.integrations.mlflow_scorer import UnifiedScorer, to_record  # noqa: E402

ROWS = [
    {
        "inputs": {"question": "What is the capital of France?"},
        "outputs": {
            "answer": "Paris is the capital of France.",
            "contexts": ["Paris is the capital of France.", "The Seine flows through Paris."],
        },
    },
    {
        "inputs": {"question": "What do zebras eat?"},
        "outputs": {"answer": "The moon is made of cheese.", "contexts": ["Zebras graze on grass."]},
    },
]
DOCS = {
    "France": ["Paris is the capital of France.", "The Seine flows through Paris."],
    "zebras": ["Zebras graze on grass."],
}


@pytest.fixture
def judge(monkeypatch):
    with JudgeServer(answer_fn=grounding_judge) as srv:
        monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "loopback")
        yield srv


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """One sqlite store for the module (creating its tables takes seconds)."""
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}")
    yield
    mlflow.flush_trace_async_logging()  # else traces still queued go to ./mlruns once the URI is reset
    mlflow.set_tracking_uri(None)


@pytest.fixture
def store(db, request, tmp_path):
    """An experiment of the test's own, in the module's store; its artifacts (trace data)
    in tmp too (a sqlite store's default artifact root is ./mlruns in the cwd)."""
    exp = mlflow.create_experiment(request.node.name, artifact_location=(tmp_path / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp)


def feedback_by_question(result, name):
    """question -> (value, rationale, metadata, error) of the scorer's Feedback per row."""
    out = {}
    for trace in mlflow.search_traces(run_id=result.run_id, return_type="list"):
        question = trace.data.spans[0].inputs
        question = question.get("question") if isinstance(question, dict) else question
        fb = next(a for a in trace.info.assessments if a.name == name)
        out[str(question)] = (fb.value, fb.rationale, fb.metadata, fb.error)
    return out


def test_static_rows_give_our_values_over_ten(judge, store):
    ours = [
        s.value
        for s in evaluate(
            [to_record(r["inputs"], r["outputs"], None, None) for r in ROWS],
            ["faithfulness"],
            quiet=True,
            progress=False,
            cache=False,
        ).iter_scores()
    ]
    result = mlflow.genai.evaluate(data=ROWS, scorers=[UnifiedScorer("faithfulness", cache=False)])
    assert result.metrics["unified_faithfulness/mean"] == sum(ours) / 20 == 0.5
    fb = feedback_by_question(result, "unified_faithfulness")
    value, rationale, meta, error = fb["What is the capital of France?"]
    assert (value, error) == (1.0, None) and rationale
    assert meta["value_0_10"] == "10.0000" and meta["value.native"] == "1.0000" and meta["passed"] == "true"
    assert fb["What do zebras eat?"][0] == 0.0


def test_a_jury_puts_every_backend_in_the_metadata(judge, store):
    scorer = UnifiedScorer("faithfulness", backend=["native", "ragas"], cache=False)
    result = mlflow.genai.evaluate(data=ROWS[:1], scorers=[scorer])
    assert scorer.name == "unified_faithfulness_jury_median_native_ragas"  # not native's name: no shared key
    value, rationale, meta, _ = feedback_by_question(result, scorer.name)["What is the capital of France?"]
    assert value == 1.0 and meta["backend"] == "jury"
    assert (meta["value.native"], meta["value.ragas"]) == ("1.0000", "1.0000")
    assert rationale.startswith("jury median 10.00/10 of native 10.00, ragas 10.00")
    assert int(meta["judge_calls"]) == judge.chat_count  # every call the server answered, counted


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve(question: str) -> list[Document]:
    key = "France" if "France" in question else "zebras"
    return [Document(page_content=t, metadata={"doc_uri": f"{key}-{i}"}) for i, t in enumerate(DOCS[key])]


@mlflow.trace
def rag_app(question: str) -> str:
    retrieve(question)
    return "Paris is the capital of France." if "France" in question else "The moon is made of cheese."


def test_traces_as_mlflow_passes_them(judge, store):
    for q in ("What is the capital of France?", "What do zebras eat?"):
        rag_app(q)
    mlflow.flush_trace_async_logging()
    traces = mlflow.search_traces()
    assert len(traces) == 2
    result = mlflow.genai.evaluate(data=traces, scorers=[UnifiedScorer("faithfulness", cache=False)])
    fb = feedback_by_question(result, "unified_faithfulness")
    assert fb["What is the capital of France?"][0] == 1.0 and fb["What do zebras eat?"][0] == 0.0
    trace = mlflow.search_traces(return_type="list", filter_string="")[0]
    record = to_record({"question": "q"}, "a", None, trace)
    assert record["id"] == trace.info.trace_id
    assert record["metadata"]["provenance"]["retrieved_contexts"].startswith("trace RETRIEVER span ")
    assert record["retrieved_ids"][0].endswith("-0")  # documents in retrieval order, with their ids
    # the trace alone, as MLflow's own scorers are called: question and answer from its root span
    alone = to_record(None, None, None, trace)
    asked = trace.data.spans[0].inputs["question"]
    answer = "Paris is the capital of France." if "France" in asked else "The moon is made of cheese."
    assert alone["user_input"] == asked and alone["response"] == answer
    assert alone["metadata"]["provenance"]["user_input"] == "trace root span inputs.question"
    assert alone["metadata"]["provenance"]["response"] == "trace root span outputs"
    fb = UnifiedScorer("faithfulness", cache=False)(trace=trace)
    assert fb.value == (1.0 if "France" in asked else 0.0)


def test_a_failed_task_is_the_feedbacks_error(judge, store):
    rows = [{"inputs": {"question": "brokenjudge?"}, "outputs": {"answer": "x", "contexts": ["t"]}}]
    result = mlflow.genai.evaluate(data=rows, scorers=[UnifiedScorer("faithfulness", cache=False, max_retries=0)])
    value, _, _, error = feedback_by_question(result, "unified_faithfulness")["brokenjudge?"]
    assert value is None and error is not None
    assert "faithfulness on native" in error.error_message and error.error_code == "SCORER_ERROR"


def test_mlflow_telemetry_is_off_once_the_scorer_is_imported():
    import os

    from mlflow.telemetry.client import get_telemetry_client

    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "true" and get_telemetry_client() is None


def test_expectations_fill_reference_and_relevant_ids():
    rec = to_record(
        {"query": "q"},
        "a",
        {
            "expected_response": "r",
            "expected_retrieved_context": [{"doc_uri": "d1", "content": "c1"}, {"doc_uri": "d2", "content": "c2"}],
        },
        None,
    )
    assert (rec["user_input"], rec["response"], rec["reference"]) == ("q", "a", "r")
    assert rec["relevant_ids"] == ["d1", "d2"] and rec["reference_contexts"] == ["c1", "c2"]
    assert rec["metadata"]["provenance"]["user_input"] == "inputs.query"


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_with_a_hole(question):
    return [
        {"page_content": "Paris is the capital of France.", "metadata": {"doc_uri": "kb://a"}},
        {"page_content": None, "metadata": {"doc_uri": "https://alice:s3cret@kb.example/none"}},
        {"page_content": "The Seine flows through Paris.", "metadata": {"doc_uri": "kb://c"}},
    ]


@mlflow.trace
def rag_with_a_hole(question):
    retrieve_with_a_hole(question)
    return "Paris is the capital of France."


def test_a_retrieved_document_without_text_is_an_error_not_a_dropped_rank(store):
    # the document was dropped: kb://c moved from rank 3 to 2, and mrr / precision@k moved
    # with it; the trace reader refuses such a trace, and so does the scorer now
    from unified.integrations.mlflow_scorer import IntegrationError

    rag_with_a_hole("What is the capital of France?")
    mlflow.flush_trace_async_logging()
    trace = mlflow.search_traces(return_type="list")[0]
    with pytest.raises(IntegrationError, match=r"document 2 \(https://\*\*\*@kb.example/none\) has no text") as e:
        to_record({"question": "q"}, "a", None, trace)
    assert "s3cret" not in str(e.value)  # the URI's credential is masked


def test_the_default_name_is_a_valid_mlflow_metric_name(store):
    # `unified_precision@2/mean` was refused by mlflow.genai.evaluate after every scorer ran
    docs = [{"page_content": t, "metadata": {"doc_uri": d}} for t, d in (("x", "d2"), ("y", "d1"))]
    rows = [
        {
            "inputs": {"question": "q"},
            "outputs": {"answer": "a", "documents": docs},
            "expectations": {"expected_retrieved_context": [{"doc_uri": "d1"}]},
        }
    ]
    scorer = UnifiedScorer("precision@2")
    assert scorer.name == "unified_precision_at_2"
    result = mlflow.genai.evaluate(data=rows, scorers=[scorer])
    assert result.metrics["unified_precision_at_2/mean"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("contexts", "where"),
    [
        ([{"id": "d1", "score": 0.3}], r"outputs\.contexts\[0\] \(id d1\)"),
        (
            ["Paris.", {"metadata": {"doc_uri": "https://alice:s3cret@kb.example/x"}}],
            r"outputs\.contexts\[1\] \(id https://\*\*\*@kb\.example/x\)",
        ),
        ([{"page_content": None, "metadata": {"doc_uri": "kb://n"}}], r"outputs\.contexts\[0\] \(id kb://n\)"),
    ],
)
def test_a_context_object_without_text_is_an_error_not_its_json(contexts, where):
    # it was scored as its JSON text ('{"id": "d1", "score": 0.3}' judged as a passage);
    # the trace path refuses such a document, and the outputs path now reads it by the same rule
    from unified.integrations.mlflow_scorer import IntegrationError

    with pytest.raises(IntegrationError, match=where + r": a document without text") as e:
        to_record({"question": "q"}, {"answer": "a", "contexts": contexts}, None, None)
    assert "s3cret" not in str(e.value) and "{" not in str(e.value)


def test_context_documents_in_outputs_keep_their_text_and_ids():
    rec = to_record(
        "q",
        {
            "answer": "a",
            "documents": [Document(page_content="x", metadata={"doc_uri": "kb://1"}), {"text": "y", "id": 7}],
        },
        None,
        None,
    )
    assert rec["retrieved_contexts"] == ["x", "y"] and rec["retrieved_ids"] == ["kb://1", "7"]


def test_a_documents_doc_uri_is_its_id_even_beside_a_chunk_id(store):
    # a Databricks/MLflow retriever's metadata carries both; the expectations name doc_uris, so
    # an id taken from chunk_id never matched and precision@k was 0 without a word
    docs = [
        {"page_content": "Paris.", "metadata": {"doc_uri": "https://docs/a", "chunk_id": "c17"}},
        Document(page_content="Lyon.", metadata={"chunk_id": "c18", "doc_uri": "https://docs/b"}),
    ]
    rec = to_record("q", {"answer": "a", "documents": docs}, None, None)
    assert rec["retrieved_ids"] == ["https://docs/a", "https://docs/b"]
    rows = [
        {
            "inputs": {"question": "q"},
            "outputs": {"answer": "a", "documents": docs},
            "expectations": {"expected_retrieved_context": [{"doc_uri": "https://docs/a"}]},
        }
    ]
    result = mlflow.genai.evaluate(data=rows, scorers=[UnifiedScorer("precision@2")])
    assert result.metrics["unified_precision_at_2/mean"] == pytest.approx(0.5)


def test_two_backends_of_one_metric_log_two_metrics(judge, store):
    """The default name was ``unified_<metric>`` whatever the backend: two scorers of one
    metric on two backends logged one MLflow metric, the mean of both (0.5 for a 1.0 and
    a 0.0 that neither backend gave)."""
    scorers = [UnifiedScorer("faithfulness", cache=False), UnifiedScorer("faithfulness", backend="ragas", cache=False)]
    assert [s.name for s in scorers] == ["unified_faithfulness", "unified_faithfulness_ragas"]
    result = mlflow.genai.evaluate(data=ROWS[:1], scorers=scorers)
    assert {"unified_faithfulness/mean", "unified_faithfulness_ragas/mean"} <= set(result.metrics)
