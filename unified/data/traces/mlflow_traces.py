"""MLflow traces: ``Trace.to_json()`` / ``to_dict()`` exports (``{"info": …, "data":
{"spans": [...]}}``, one per line, a list, or ``{"traces": [...]}``), the DataFrame
``mlflow.search_traces()`` returns (columns ``trace_id`` and ``trace`` — the trace's JSON —
or ``spans``), and ``mlflow.entities.Trace`` objects (through their ``to_dict``; mlflow
itself is never imported here).

The sample id is MLflow's trace id (``info.trace_id``, ``tr-…``; ``info.request_id`` in
MLflow 2 exports; else the spans' ``mlflow.traceRequestId``). Span attributes hold
JSON-encoded values: ``mlflow.spanType`` (``RETRIEVER``; ``LLM`` and ``CHAT_MODEL`` are
LLM spans), ``mlflow.spanInputs`` (the function's arguments: the root's give the
question) and ``mlflow.spanOutputs`` (a retriever's documents — MLflow's ``Document``:
``page_content``, ``metadata``, ``id`` — or the answer). Both the v3 span dict
(``span_id``, ``parent_span_id``, ``start_time_unix_nano``) and the v2 one (``context``,
``parent_id``, ``start_time``) are read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from unified.data.traces.fields import hex_id, ns_of
from unified.data.traces.model import LLM, RETRIEVER, Span, TraceProblem
from unified.data.traces.values import documents_of, mlflow_document_id

SPAN_TYPE, INPUTS, OUTPUTS, REQUEST_ID = (
    "mlflow.spanType",
    "mlflow.spanInputs",
    "mlflow.spanOutputs",
    "mlflow.traceRequestId",
)
_KINDS = {"RETRIEVER": RETRIEVER, "LLM": LLM, "CHAT_MODEL": LLM}


def is_mlflow_trace(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    data = value.get("data")
    return isinstance(value.get("info"), Mapping) and isinstance(data, Mapping) and "spans" in data


def is_search_traces_row(value: Any) -> bool:
    """A row of ``mlflow.search_traces()``'s DataFrame, as a dict."""
    return isinstance(value, Mapping) and "trace_id" in value and ("trace" in value or "spans" in value)


def is_trace_object(value: Any) -> bool:
    """An ``mlflow.entities.Trace`` (by name: mlflow is not imported here)."""
    return type(value).__name__ == "Trace" and type(value).__module__.startswith("mlflow") and hasattr(value, "to_dict")


def as_trace_dict(value: Any) -> Any:
    """A Trace object, a search_traces row or a JSON string → the trace dict."""
    if is_trace_object(value):
        return value.to_dict()
    if isinstance(value, str):
        return json.loads(value)
    if is_search_traces_row(value) and not is_mlflow_trace(value):
        if isinstance(value.get("trace"), str):
            return json.loads(value["trace"])
        return {"info": {"trace_id": value["trace_id"]}, "data": {"spans": list(value.get("spans") or [])}}
    return value


def spans_of(value: Any) -> list[tuple[str, Span]]:
    """(trace id, Span) for each span of one MLflow trace (or a list / ``{"traces"}``)."""
    if isinstance(value, Mapping) and isinstance(value.get("traces"), list):
        value = value["traces"]
    if isinstance(value, list):
        return [pair for v in value for pair in spans_of(v)]
    trace = as_trace_dict(value)
    if not is_mlflow_trace(trace):
        keys = ", ".join(map(str, list(trace)[:5])) if isinstance(trace, Mapping) else type(trace).__name__
        raise TraceProblem("info", f"not an MLflow trace (expected info and data.spans; found {keys})")
    raw_spans = trace["data"].get("spans") or []
    trace_id = _trace_id(trace["info"], raw_spans)
    return [(trace_id, _span(raw)) for raw in raw_spans]


def _trace_id(info: Mapping[str, Any], spans: list[Any]) -> str:
    tid = info.get("trace_id") or info.get("request_id")
    if not tid and spans and isinstance(spans[0], Mapping):
        tid = _attr((spans[0].get("attributes") or {}), REQUEST_ID)
    if not tid:
        raise TraceProblem("info.trace_id", "an MLflow trace without a trace id")
    return str(tid)


def _attr(attrs: Mapping[str, Any], key: str) -> Any:
    """An MLflow span attribute: stored JSON-encoded; a value that is not JSON is kept."""
    raw = attrs.get(key)
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _span(raw: Any) -> Span:
    if not isinstance(raw, Mapping):
        raise TraceProblem("data.spans", f"a span must be an object, got {type(raw).__name__}")
    attrs = raw.get("attributes") or {}
    ctx: Mapping[str, Any] = raw["context"] if isinstance(raw.get("context"), Mapping) else {}
    kind = _KINDS.get(str(_attr(attrs, SPAN_TYPE) or "").upper(), str(_attr(attrs, SPAN_TYPE) or "").upper())
    span = Span(
        hex_id(raw.get("span_id") or ctx.get("span_id")) or "",
        hex_id(raw.get("parent_span_id") or raw.get("parent_id")),
        str(raw.get("name") or ""),
        kind,
        ns_of(raw.get("start_time_unix_nano") or raw.get("start_time")),
        ns_of(raw.get("end_time_unix_nano") or raw.get("end_time")),
        input=_attr(attrs, INPUTS),
        input_key=INPUTS,
        output=_attr(attrs, OUTPUTS),
        output_key=OUTPUTS,
    )
    # the attribute was JSON: a string inside it is text, not more JSON
    span.input_mime = span.output_mime = "text/plain"
    if kind == RETRIEVER:
        try:
            span.documents = documents_of(span.output if span.output is not None else [], OUTPUTS, mlflow_document_id)
        except TraceProblem as p:
            span.documents, span.problem = [], TraceProblem(p.field, p.reason, span)
    return span
