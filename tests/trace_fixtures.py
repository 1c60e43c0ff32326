"""Traces written by the real OpenTelemetry SDK with OpenInference attribute names, for
the trace-reader tests: nothing here is hand-typed JSON.

``RAG`` holds five interactions; ``emit(tracer, rag)`` records one as a RAG pipeline
would: a root CHAIN span (question in, answer out), a RETRIEVER span with the
documents, an LLM span. Options break one trace on purpose (no retriever, JSON input,
a document without text). Writers: ``write_otlp_json`` (the OTLP protobuf through
``opentelemetry-exporter-otlp-proto-common``, JSON-mapped by ``google.protobuf``; one
document per export batch, one per line, as the Collector's file exporter does) and
``write_console`` (``ConsoleSpanExporter``, pretty-printed or one span per line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS

RAG: list[dict[str, Any]] = [
    {
        "question": f"What is fact {i}?",
        "answer": f"Fact {i} is true.",
        "docs": [(f"doc-{i}-{k}", f"Passage {k} about fact {i}.", round(0.9 - 0.1 * k, 2)) for k in range(3)],
    }
    for i in range(5)
]


def _doc_attrs(docs: list[tuple[str, str, float]], skip_text: int | None = None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    # last document first: the order of the attributes must not be what orders the contexts
    for n, (doc_id, text, score) in reversed(list(enumerate(docs))):
        prefix = f"{DOCS}.{n}."
        attrs[prefix + DocumentAttributes.DOCUMENT_ID] = doc_id
        attrs[prefix + DocumentAttributes.DOCUMENT_SCORE] = score
        if n != skip_text:
            attrs[prefix + DocumentAttributes.DOCUMENT_CONTENT] = text
    return attrs


def emit(
    tracer: Any,
    rag: dict[str, Any],
    *,
    retriever: bool = True,
    json_input: bool = False,
    skip_text: int | None = None,
    llm_output_only: bool = False,
    second_retriever: bool = False,
    root_input: Any = None,
    ensemble: bool = False,
) -> None:
    """One RAG interaction as spans (see the module docstring); ``root_input``: a JSON
    value to send as the root's ``input.value`` (``application/json``); ``ensemble``: the
    retriever span encloses two retriever spans of its own (a hybrid retriever's parts),
    whose results it returns merged."""
    json_input = json_input or root_input is not None
    payload = root_input if root_input is not None else {"query": rag["question"], "top_k": 3}
    root_in = json.dumps(payload) if json_input else rag["question"]
    mime = (OpenInferenceMimeTypeValues.JSON if json_input else OpenInferenceMimeTypeValues.TEXT).value
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.INPUT_VALUE, root_in)
        root.set_attribute(SpanAttributes.INPUT_MIME_TYPE, mime)
        if retriever:
            with tracer.start_as_current_span("retrieve") as span:
                span.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                span.set_attribute(SpanAttributes.INPUT_VALUE, rag["question"])
                for part, docs in enumerate(rag["docs"][:2] if ensemble else []):  # a hybrid's parts
                    with tracer.start_as_current_span(f"part-{part}") as inner:
                        inner.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                        inner.set_attributes(_doc_attrs([docs, rag["docs"][2]]))
                span.set_attributes(_doc_attrs(rag["docs"], skip_text))
            if second_retriever:  # a second retrieval (e.g. a web search) after the first
                with tracer.start_as_current_span("web-search") as span:
                    span.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                    span.set_attributes(_doc_attrs([("web-0", "A web page.", 0.3)]))
        with tracer.start_as_current_span("generate") as span:
            span.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
            span.set_attribute(SpanAttributes.OUTPUT_VALUE, rag["answer"])
        if not llm_output_only:
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, rag["answer"])


def record(build: Any) -> list[Any]:
    """The finished spans of ``build(tracer)``, from the SDK's in-memory exporter."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    build(provider.get_tracer("unified-tests"))
    provider.shutdown()
    return list(memory.get_finished_spans())


def write_otlp_json(spans: list[Any], path: Path, *, batches: int = 1) -> Path:
    """OTLP JSON, ``batches`` export batches one per line (a trace may straddle two)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    size = -(-len(spans) // batches)
    lines = [json.dumps(MessageToDict(encode_spans(spans[i : i + size]))) for i in range(0, len(spans), size)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_console(spans: list[Any], path: Path, *, pretty: bool = False) -> Path:
    """What ``ConsoleSpanExporter`` prints: pretty-printed spans (its default) or one
    span per line."""
    with path.open("w", encoding="utf-8") as out:
        fmt = (lambda s: s.to_json() + "\n") if pretty else (lambda s: s.to_json(indent=None) + "\n")
        ConsoleSpanExporter(out=out, formatter=fmt).export(spans)
    return path
