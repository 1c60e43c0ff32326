"""Traces as input (``unified.data.traces``): OTLP JSON and OpenInference span records
written by the real OpenTelemetry SDK (``trace_fixtures``), Langfuse exports built from the
``langfuse`` package's own API models, each read into one Sample per trace; bad traces are
row errors naming the trace and the field, and the other traces go on."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("openinference.semconv")

import trace_fixtures as tf
from opentelemetry.trace import format_trace_id

from unified.cli.app import app
from unified.data.io import load_samples, read_samples


def five(tracer) -> None:
    for rag in tf.RAG:
        tf.emit(tracer, rag)


def trace_ids(spans) -> list[str]:
    """The SDK's own trace ids, in the order the traces began."""
    roots = sorted((s for s in spans if s.parent is None), key=lambda s: s.start_time)
    return [format_trace_id(s.context.trace_id) for s in roots]


def check_five(samples, ids) -> None:
    assert [s.id for s in samples] == ids
    for s, rag in zip(samples, tf.RAG):
        assert s.user_input == rag["question"] and s.response == rag["answer"]
        assert s.retrieved_contexts == [text for _, text, _ in rag["docs"]]  # retrieval order, by index N
        assert s.retrieved_ids == [doc_id for doc_id, _, _ in rag["docs"]]
        assert s.metadata["retrieval_scores"] == [score for _, _, score in rag["docs"]]
        prov = s.metadata["provenance"]
        assert prov["trace_id"] == s.id
        assert prov["user_input"]["span"] == "rag" and prov["user_input"]["field"] == "input.value"
        assert prov["response"]["field"] == "output.value"
        assert [c["field"] for c in prov["retrieved_contexts"]] == [
            f"retrieval.documents.{n}.document.content" for n in range(3)
        ]
        assert {c["span"] for c in prov["retrieved_contexts"]} == {"retrieve"}


def test_an_otlp_json_file_of_five_traces_loads_into_five_samples(tmp_path):
    spans = tf.record(five)
    # two export batches, one per line, as the Collector's file exporter writes them: a
    # trace's spans may straddle both lines
    path = tf.write_otlp_json(spans, tmp_path / "traces.jsonl", batches=2)
    assert len(path.read_text().splitlines()) == 2 and "resourceSpans" in path.read_text()
    good, bad = load_samples(path)  # recognised by content
    assert bad == []
    check_five(good, trace_ids(spans))
    assert good[0].metadata["provenance"]["format"] == "otlp"
    assert load_samples(path, layout="otlp")[0] == good


def test_an_openinference_span_jsonl_loads_into_the_same_five_samples(tmp_path):
    spans = tf.record(five)
    jsonl = tf.write_console(spans, tmp_path / "spans.jsonl")
    assert len(jsonl.read_text().splitlines()) == len(spans)  # one span per line
    good, bad = load_samples(jsonl)
    assert bad == []
    check_five(good, trace_ids(spans))
    assert good[0].metadata["provenance"]["format"] == "openinference"
    # ConsoleSpanExporter's default output: pretty-printed spans one after another
    pretty = tf.write_console(spans, tmp_path / "console.txt", pretty=True)
    again, bad = load_samples(pretty, layout="openinference")
    assert bad == [] and [s.model_dump() for s in again] == [s.model_dump() for s in good]
    otlp, _ = load_samples(tf.write_otlp_json(spans, tmp_path / "o.json"))
    assert [s.content_hash() for s in otlp] == [s.content_hash() for s in good]


def test_two_retrievers_give_their_documents_in_start_order(tmp_path):
    spans = tf.record(lambda t: tf.emit(t, tf.RAG[0], second_retriever=True))
    [s], _ = load_samples(tf.write_otlp_json(spans, tmp_path / "t.jsonl"))
    assert s.retrieved_contexts == [text for _, text, _ in tf.RAG[0]["docs"]] + ["A web page."]
    assert [c["span"] for c in s.metadata["provenance"]["retrieved_contexts"]] == ["retrieve"] * 3 + ["web-search"]


@pytest.mark.parametrize("writer", [tf.write_otlp_json, tf.write_console])
def test_a_hybrid_retrievers_parts_add_no_documents(tmp_path, writer):
    """An ensemble retriever's span returns its parts' results merged, and the parts are
    retriever spans of their own: reading every retriever span gave 7 contexts for 3
    (each document twice or three times), and the MLflow scorer, which reads only the
    outermost ones, another value for the same trace."""
    spans = tf.record(lambda t: tf.emit(t, tf.RAG[0], ensemble=True))
    [s], bad = load_samples(
        writer(spans, tmp_path / "t.jsonl"), layout=None if writer is tf.write_otlp_json else "openinference"
    )
    assert not bad
    assert s.retrieved_contexts == [text for _, text, _ in tf.RAG[0]["docs"]]
    assert s.retrieved_ids == [doc_id for doc_id, _, _ in tf.RAG[0]["docs"]]
    assert s.metadata["nested_retriever_spans"] == 2
    assert {c["span"] for c in s.metadata["provenance"]["retrieved_contexts"]} == {"retrieve"}


def test_a_retriever_wrapper_without_documents_gives_way_to_its_parts(tmp_path):
    """A span typed RETRIEVER that returned nothing of its own around the retriever that
    did: reading only the outermost span gave no contexts ("retrieved_ids is missing")."""

    def build(tracer) -> None:
        rag = tf.RAG[0]
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(tf.KIND, "CHAIN")
            root.set_attribute(tf.SpanAttributes.INPUT_VALUE, rag["question"])
            root.set_attribute(tf.SpanAttributes.OUTPUT_VALUE, rag["answer"])
            with tracer.start_as_current_span("retrieval-step") as wrapper:
                wrapper.set_attribute(tf.KIND, "RETRIEVER")
                with tracer.start_as_current_span("vector-search") as span:
                    span.set_attribute(tf.KIND, "RETRIEVER")
                    span.set_attributes(tf._doc_attrs(rag["docs"]))

    [s], bad = load_samples(tf.write_otlp_json(tf.record(build), tmp_path / "t.jsonl"))
    assert not bad and s.retrieved_ids == [d for d, _, _ in tf.RAG[0]["docs"]]
    assert s.metadata["nested_retriever_spans"] == 1 and "empty_retriever_spans" not in s.metadata


def test_a_json_input_value_gives_its_question_by_mime_type(tmp_path):
    spans = tf.record(lambda t: tf.emit(t, tf.RAG[1], json_input=True, llm_output_only=True))
    [s], bad = load_samples(tf.write_otlp_json(spans, tmp_path / "t.jsonl"))
    assert bad == [] and s.user_input == tf.RAG[1]["question"]
    assert s.metadata["provenance"]["user_input"] == {
        "span": "rag",
        "span_id": s.metadata["provenance"]["user_input"]["span_id"],
        "field": "input.value",
        "key": "query",
        "decoded": "json",
    }
    # no output on the root: the answer is the last LLM span's
    assert s.response == tf.RAG[1]["answer"] and s.metadata["provenance"]["response"]["span"] == "generate"


@pytest.mark.parametrize(
    "payload, question",
    [
        (
            {
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Q1?"},
                    {"role": "assistant", "content": "A1."},
                    {"role": "user", "content": "Q2?"},
                ]
            },
            "Q2?",
        ),
        ({"input": "Q3?", "chat_history": []}, "Q3?"),
        ({"inputs": {"question": "Q4?"}}, "Q4?"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "Q5?"}]}]}, "Q5?"),
    ],
)
def test_the_question_is_told_from_common_json_inputs(tmp_path, payload, question):
    spans = tf.record(lambda t: tf.emit(t, tf.RAG[0], root_input=payload))
    [s], bad = load_samples(tf.write_otlp_json(spans, tmp_path / "t.jsonl"))
    assert bad == [] and s.user_input == question


def test_json_the_question_cannot_be_told_from_is_a_row_error_naming_its_keys(tmp_path):
    spans = tf.record(lambda t: tf.emit(t, tf.RAG[0], root_input={"foo": "x", "bar": 2}))
    good, [bad] = load_samples(tf.write_otlp_json(spans, tmp_path / "t.jsonl"))
    assert good == [] and bad.field == "input.value"
    assert (
        "span 'rag'" in bad.reason and "cannot tell the question from a JSON object with keys [foo, bar]" in bad.reason
    )


def bad_traces(tracer) -> None:
    tf.emit(tracer, tf.RAG[0])
    tf.emit(tracer, tf.RAG[1], retriever=False)
    tf.emit(tracer, tf.RAG[2], skip_text=1)
    tf.emit(tracer, tf.RAG[3])


@pytest.mark.parametrize("writer", ["otlp", "console"])
def test_bad_traces_are_row_errors_naming_the_trace_and_the_field(tmp_path, writer):
    spans = tf.record(bad_traces)
    ids = trace_ids(spans)
    path = (
        tf.write_otlp_json(spans, tmp_path / "t.jsonl")
        if writer == "otlp"
        else tf.write_console(spans, tmp_path / "t.jsonl")
    )
    good, bad = load_samples(path)
    assert [s.id for s in good] == [ids[0], ids[3]]  # the run goes on
    assert [(e.row, e.sample_id, e.field) for e in bad] == [
        (2, ids[1], "retrieved_contexts"),
        (3, ids[2], "retrieval.documents.1.document.content"),
    ]
    assert f"trace {ids[1]}: has no RETRIEVER span" in bad[0].reason
    assert "span 'retrieve'" in bad[1].reason and "without text" in bad[1].reason
    assert f"(id {ids[1]})" in str(bad[0])


def test_a_retriever_that_dropped_attributes_is_an_error_not_fewer_contexts(tmp_path):
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    # 8 attributes kept, 11 set on the retriever: the SDK drops the oldest — the kind first
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=8))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tf.emit(provider.get_tracer("t"), tf.RAG[0])
    provider.shutdown()
    good, bad = load_samples(tf.write_otlp_json(list(memory.get_finished_spans()), tmp_path / "t.jsonl"))
    assert good == [] and bad[0].field == "retrieval.documents"
    assert "dropped" in bad[0].reason and "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT" in bad[0].reason


def test_a_root_that_dropped_its_question_is_an_error_not_a_sample_without_one(tmp_path):
    """A root span over the SDK's attribute limit lost its ``input.value`` (the oldest
    attribute goes first) and read as a sample without a question, "1 ok"."""
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    def build(tracer) -> None:
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(tf.KIND, "CHAIN")
            root.set_attribute(tf.SpanAttributes.INPUT_VALUE, tf.RAG[0]["question"])
            for n in range(4):  # past the limit of 4: the question, set first, is dropped
                root.set_attribute(f"app.tag.{n}", n)
            with tracer.start_as_current_span("retrieve") as span:
                span.set_attribute(tf.KIND, "RETRIEVER")
                span.set_attribute(f"{tf.DOCS}.0.document.content", "A passage.")

    memory = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=4))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    build(provider.get_tracer("t"))
    provider.shutdown()
    good, bad = load_samples(tf.write_otlp_json(list(memory.get_finished_spans()), tmp_path / "t.jsonl"))
    assert good == [] and bad[0].field == "input.value"
    assert "dropped 2 attribute(s)" in bad[0].reason and "question may be among them" in bad[0].reason


def test_text_that_is_not_json_is_one_row_error_and_the_rest_is_read(tmp_path):
    spans = tf.record(five)
    path = tf.write_console(spans, tmp_path / "spans.jsonl")
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n")
    good, bad = load_samples(path)
    assert len(good) == 5 and len(bad) == 1 and bad[0].row == 3 and "not JSON" in bad[0].reason
    assert bad[0].reason.endswith("(column 2)")  # where on the line the parser stopped


def test_a_file_of_samples_is_not_taken_for_traces(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"user_input": "q", "retrieved_contexts": ["c"], "data": [{"a": 1}]}) + "\n")
    [s], bad = load_samples(path)
    assert bad == [] and s.user_input == "q" and "provenance" not in s.metadata


# ---------------------------------------------------------------- Langfuse


def langfuse_observations() -> list:
    """Five RAG traces as Langfuse's v2 observations API returns them: the ``langfuse``
    package's own API models (``ObservationV2``), three observations per trace."""
    import datetime as dt

    from langfuse.api import ObservationV2

    t0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.timezone.utc)
    out = []
    for i, rag in enumerate(tf.RAG):
        tid, at = f"lf-trace-{i}", t0 + dt.timedelta(minutes=i)
        docs = [
            {"page_content": text, "metadata": {"id": doc_id, "score": score}} for doc_id, text, score in rag["docs"]
        ]
        out += [
            ObservationV2(
                id=f"{tid}-root",
                trace_id=tid,
                start_time=at,
                project_id="p",
                type="SPAN",
                name="rag",
                input={"question": rag["question"]},
                output={"answer": rag["answer"]},
            ),
            ObservationV2(
                id=f"{tid}-ret",
                trace_id=tid,
                start_time=at + dt.timedelta(seconds=1),
                project_id="p",
                type="RETRIEVER",
                name="retrieve",
                parent_observation_id=f"{tid}-root",
                input={"query": rag["question"]},
                output=docs,
            ),
            ObservationV2(
                id=f"{tid}-gen",
                trace_id=tid,
                start_time=at + dt.timedelta(seconds=2),
                project_id="p",
                type="GENERATION",
                name="llm",
                parent_observation_id=f"{tid}-root",
                output={"role": "assistant", "content": rag["answer"]},
            ),
        ]
    return out


def test_a_langfuse_observations_export_loads_into_five_samples(tmp_path):
    pytest.importorskip("langfuse")
    from langfuse.api import ObservationsV2Meta, ObservationsV2Response

    page = ObservationsV2Response(data=langfuse_observations(), meta=ObservationsV2Meta(cursor=None))
    path = tmp_path / "observations.json"
    path.write_text(page.json())  # the API's JSON: {"data": [...], "meta": {...}}, camelCase
    good, bad = load_samples(path)
    assert bad == [] and [s.id for s in good] == [f"lf-trace-{i}" for i in range(5)]
    for s, rag in zip(good, tf.RAG):
        assert (s.user_input, s.response) == (rag["question"], rag["answer"])
        assert s.retrieved_contexts == [text for _, text, _ in rag["docs"]]
        assert s.retrieved_ids == [doc_id for doc_id, _, _ in rag["docs"]]
        assert s.metadata["provenance"]["format"] == "langfuse"
        assert s.metadata["provenance"]["retrieved_contexts"][1]["field"] == "observation.output[1].page_content"


def test_a_langfuse_trace_export_with_observations_loads(tmp_path):
    """Langfuse's trace objects (the public API's trace with its observations): the
    trace's own input and output are the question and the answer."""
    pytest.importorskip("langfuse")
    observations = [json.loads(o.json()) for o in langfuse_observations()]
    traces = []
    for i, rag in enumerate(tf.RAG):
        mine = [o for o in observations if o["traceId"] == f"lf-trace-{i}" and not o["id"].endswith("-root")]
        for o in mine:
            o.pop("parentObservationId")
        traces.append(
            {
                "id": f"lf-trace-{i}",
                "name": "rag",
                "timestamp": mine[0]["startTime"],
                "input": rag["question"],
                "output": rag["answer"],
                "observations": mine,
            }
        )
    traces[2]["observations"] = [o for o in traces[2]["observations"] if o["type"] != "RETRIEVER"]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    good, bad = load_samples(path, layout="langfuse")
    assert [s.id for s in good] == ["lf-trace-0", "lf-trace-1", "lf-trace-3", "lf-trace-4"]
    assert good[0].metadata["provenance"]["user_input"]["field"] == "trace.input"
    assert [(e.sample_id, e.field) for e in bad] == [("lf-trace-2", "retrieved_contexts")]
    # the same traces in one {"data": [...]} document, one of them with its observations
    # as id strings (the traces-list endpoint's shape): that trace is the one row error
    traces[2]["observations"] = [o["id"] for o in traces[2]["observations"]]
    doc = tmp_path / "traces.json"
    doc.write_text(json.dumps({"data": traces, "meta": {"page": 1}}))
    good, bad = load_samples(doc, layout="langfuse")
    assert [s.id for s in good] == ["lf-trace-0", "lf-trace-1", "lf-trace-3", "lf-trace-4"]
    assert [(e.sample_id, e.field) for e in bad] == [("lf-trace-2", "observations")]
    assert "an observation must be an object, got str" in bad[0].reason


# ---------------------------------------------------------------- CLI


def test_validate_and_convert_read_traces_with_from(tmp_path):
    spans = tf.record(bad_traces)
    path = tf.write_otlp_json(spans, tmp_path / "export.log")  # a suffix that says nothing
    r = CliRunner().invoke(app, ["validate", str(path), "--from", "otlp"])
    assert r.exit_code == 1, r.output
    errors = [line for line in r.output.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 2 and "field 'retrieved_contexts'" in errors[0]
    assert "2 ok, 2 bad row(s)" in r.output
    out = tmp_path / "samples.jsonl"
    r = CliRunner().invoke(app, ["convert", str(path), str(out), "--from", "otlp", "--to", "ragas"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["retrieved_contexts"] == [t for _, t, _ in tf.RAG[0]["docs"]], r.output


def _relink(path, edits):
    """Rewrite parent ids of a console span file: ``edits`` maps (trace index, span name) to
    the new parent (a span name of the same trace, or a raw id not in the file)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    traces = list(dict.fromkeys(d["context"]["trace_id"] for d in lines))
    ids = {(traces.index(d["context"]["trace_id"]), d["name"]): d["context"]["span_id"] for d in lines}
    for d in lines:
        key = (traces.index(d["context"]["trace_id"]), d["name"])
        if key in edits:
            d["parent_id"] = ids.get((key[0], edits[key]), edits[key])
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return path


def test_a_span_that_does_not_reach_the_root_is_a_row_error_not_a_context(tmp_path):
    spans = tf.record(five)
    ids = trace_ids(spans)
    path = _relink(
        tf.write_console(spans, tmp_path / "spans.jsonl"),
        {(1, "retrieve"): "0xdeadbeefdeadbeef", (2, "retrieve"): "generate", (2, "generate"): "retrieve"},
    )
    good, bad = load_samples(path)
    assert [s.id for s in good] == [ids[0], ids[3], ids[4]]  # the rest is read
    assert [(e.sample_id, e.field) for e in bad] == [(ids[1], "parent_id"), (ids[2], "parent_id")]
    assert "span 'retrieve'" in bad[0].reason and "its parent deadbeefdeadbeef is not in the source" in bad[0].reason
    assert "parent ids form a loop" in bad[1].reason


def test_a_span_delivered_twice_counts_once_and_a_conflicting_copy_is_an_error(tmp_path):
    # an exporter that retries (at-least-once) repeats spans: a repeated retriever doubled
    # the contexts without a word, and a repeated root made "2 root spans"
    spans = tf.record(five)
    ids = trace_ids(spans)
    path = tf.write_console(spans, tmp_path / "spans.jsonl")
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    first = [i for i, d in enumerate(records) if d["context"]["trace_id"] in (ids[0], "0x" + ids[0])]
    clean, _ = load_samples(path)
    conflict = json.loads(lines[first[0]])
    conflict["name"] = "renamed"
    repeated = lines + [lines[i] for i in first] + [json.dumps(conflict)]  # trace 0: every span again, one changed
    path.write_text("\n".join(repeated) + "\n")
    good, bad = load_samples(path)
    assert [s.id for s in good] == [s.id for s in clean[1:]]
    assert [(e.sample_id, e.field) for e in bad] == [(ids[0], "span_id")] and "other content" in bad[0].reason
    path.write_text("\n".join(lines + [lines[i] for i in first]) + "\n")  # identical copies only
    good, bad = load_samples(path)
    assert not bad and [s.retrieved_contexts for s in good] == [s.retrieved_contexts for s in clean]
    assert good[0].metadata["repeated_spans"] == len(first)


@pytest.mark.parametrize("writer", ["otlp", "console"])
def test_a_retriever_that_found_nothing_is_read_and_said(tmp_path, writer):
    # legitimate (nothing matched), so no row error; but it was an empty context list with
    # no word, and a metric over it a surprise: now a count in metadata and one reader note
    def build(tracer):
        tf.emit(tracer, tf.RAG[0])
        tf.emit(tracer, {**tf.RAG[1], "docs": []})
        tf.emit(tracer, tf.RAG[2], second_retriever=True)

    spans = tf.record(build)
    ids = trace_ids(spans)
    write = tf.write_otlp_json if writer == "otlp" else tf.write_console
    reader = read_samples(write(spans, tmp_path / "t.jsonl"))
    samples = list(reader)
    assert [s.id for s in samples] == ids and samples[1].retrieved_contexts == []
    assert [s.metadata.get("empty_retriever_spans") for s in samples] == [None, 1, None]
    [note] = reader.notes
    assert note.startswith("1 trace(s) with a retriever span that returned no document")
    assert f"first: t.jsonl:2, id {ids[1]}" in note and "1 of them have no retrieved context at all" in note


def test_a_retrieved_document_with_blank_text_is_a_row_error_under_the_trace_id(tmp_path):
    # the Sample rule for a blank context (unified.sample.blank_context) reaches traces too
    def build(tracer):
        tf.emit(tracer, tf.RAG[0])
        tf.emit(tracer, {**tf.RAG[1], "docs": [("d1", "Some text.", 0.5), ("d2", " ", 0.4)]})

    spans = tf.record(build)
    ids = trace_ids(spans)
    good, bad = load_samples(tf.write_otlp_json(spans, tmp_path / "t.jsonl"))
    assert [s.id for s in good] == ids[:1]
    assert [(e.row, e.sample_id, e.field) for e in bad] == [(2, ids[1], "retrieved_contexts[1]")]
    assert "a blank context" in bad[0].reason


def test_a_phoenix_span_dataframe_with_nan_cells_loads():
    """Phoenix's span DataFrame holds NaN where a span has no such attribute — a root's
    ``parent_id``, a retriever's ``output.value``: each was read as a value ("the parent
    nan … is not in the source" for every trace), and the whole frame was rejected."""
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    rows = []
    for i, rag in enumerate(tf.RAG[:3]):
        trace, root, ret = f"{i + 1:032x}", f"{i + 1:016x}", f"{i + 100:016x}"
        t0 = pd.Timestamp("2026-12-03T06:00:00Z") + pd.Timedelta(seconds=i)
        docs = [{"document.id": d, "document.content": text, "document.score": score} for d, text, score in rag["docs"]]
        rows.append(
            {
                "name": "rag",
                "span_kind": "CHAIN",
                "parent_id": np.nan,
                "start_time": t0,
                "end_time": t0 + pd.Timedelta("900ms"),
                "context.trace_id": trace,
                "context.span_id": root,
                "attributes.input.value": rag["question"],
                "attributes.output.value": rag["answer"],
                "attributes.retrieval.documents": np.nan,
            }
        )
        rows.append(
            {
                "name": "retrieve",
                "span_kind": "RETRIEVER",
                "parent_id": root,
                "start_time": t0 + pd.Timedelta("100ms"),
                "end_time": t0 + pd.Timedelta("200ms"),
                "context.trace_id": trace,
                "context.span_id": ret,
                "attributes.input.value": rag["question"],
                "attributes.output.value": np.nan,
                "attributes.retrieval.documents": docs,
            }
        )
    samples, bad = load_samples(pd.DataFrame(rows))
    assert not bad and [s.user_input for s in samples] == [r["question"] for r in tf.RAG[:3]]
    assert [s.retrieved_ids for s in samples] == [[d for d, _, _ in r["docs"]] for r in tf.RAG[:3]]
    assert [s.response for s in samples] == [r["answer"] for r in tf.RAG[:3]]


@pytest.mark.parametrize("damage", ["fragment", "attributes"])
def test_a_span_file_whose_first_line_is_broken_is_still_read_as_spans(tmp_path, damage):
    """The format was told from the first value alone: the tail of a rotated log first
    (or a first span whose attributes were mangled) read the whole file as samples, each
    span a "sample" every metric failed, and ``validate`` said "60 ok"."""
    spans = tf.record(five)
    path = tf.write_console(spans, tmp_path / "spans.jsonl")
    lines = path.read_text().splitlines()
    if damage == "fragment":
        lines.insert(0, lines[0][len(lines[0]) // 2 :])  # the second half of a line
    else:
        first = json.loads(lines[0])
        first["attributes"] = json.dumps(first["attributes"])  # a string, not an object
        lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n")
    good, bad = load_samples(path)
    assert len(bad) >= 1 and bad[0].row == 1
    assert all(s.id in trace_ids(spans) for s in good)
    assert len(good) == (5 if damage == "fragment" else 4)  # a mangled first span costs its trace
