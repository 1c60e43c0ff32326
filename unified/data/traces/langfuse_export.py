"""Langfuse exports: traces with their observations (the public API's trace object —
``id``, ``name``, ``input``, ``output``, ``timestamp``, ``observations`` as full objects —
one per line, a list, or ``{"data": [...]}``), or flat observations grouped by their
``traceId`` (the v2 observations API: ``{"data": [observation, ...], "meta": …}``).

Observation fields read (camelCase as the API writes them; snake_case too): ``id``,
``traceId``, ``type`` (``RETRIEVER`` is a retriever, ``GENERATION`` an LLM call),
``name``, ``startTime``, ``endTime``, ``parentObservationId`` (ignored when
``isRootObservation`` is true), ``input``, ``output``. Langfuse's own one-trace export
wraps the trace: ``{"trace": {…}, "observations": [...]}`` (read the same way). Inputs
and outputs that are JSON text — Langfuse's exports encode a trace's input as a JSON
string, sometimes twice — are decoded (``values.decode``). A retriever's ``output`` holds its
documents (``values.documents_of``). When the trace object has an ``input``, it is the
root (a span named after the trace, ``trace.input`` / ``trace.output``) and the
observations without a parent hang below it; otherwise the observation without a parent
is the root.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unified.data.traces.fields import ns_of
from unified.data.traces.model import LLM, RETRIEVER, Span, TraceProblem
from unified.data.traces.values import documents_of

_KINDS = {"RETRIEVER": RETRIEVER, "GENERATION": LLM}
_WRAPPERS = ("data", "traces", "observations")


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    if camel in obj:
        return obj[camel]
    return obj.get("".join("_" + c.lower() if c.isupper() else c for c in camel))


def is_trace(value: Any) -> bool:
    return isinstance(value, Mapping) and "id" in value and isinstance(value.get("observations"), list)


def is_wrapped_trace(value: Any) -> bool:
    """Langfuse's own export of one trace: ``{"trace": {trace without observations},
    "observations": [...]}`` (the UI's download merged with its observations, as in
    Langfuse's framework-trace fixtures)."""
    if not isinstance(value, Mapping) or not isinstance(value.get("observations"), list):
        return False
    trace = value.get("trace")
    return isinstance(trace, Mapping) and "id" in trace


def unwrap(value: Mapping[str, Any]) -> dict[str, Any]:
    """A wrapped trace (``is_wrapped_trace``) as a trace object with its observations."""
    return {**value["trace"], "observations": value["observations"]}


def is_observation(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "id" in value
        and _get(value, "traceId") is not None
        and "type" in value
        and _get(value, "startTime") is not None
    )


def spans_of(value: Any) -> list[tuple[str, Span]]:
    """(trace id, Span) for a trace object (or a wrapped one), an observation, or a list /
    wrapper of them."""
    if is_wrapped_trace(value):
        value = unwrap(value)
    if isinstance(value, Mapping) and not is_trace(value) and not is_observation(value):
        key = next((k for k in _WRAPPERS if isinstance(value.get(k), list)), None)
        if key is None:
            raise TraceProblem(
                "observations", f"not a Langfuse trace or observation (found {', '.join(map(str, list(value)[:5]))})"
            )
        value = value[key]
    if isinstance(value, list):
        return [pair for v in value for pair in spans_of(v)]
    if is_trace(value):
        return _trace(value)
    if is_observation(value):
        return [(str(_get(value, "traceId")), _observation(value, None))]
    raise TraceProblem("observations", f"not a Langfuse trace or observation: {type(value).__name__}")


def _trace(trace: Mapping[str, Any]) -> list[tuple[str, Span]]:
    tid = str(trace["id"])
    out: list[tuple[str, Span]] = []
    root_id = None
    if trace.get("input") is not None:
        root_id = f"trace:{tid}"
        out.append(
            (
                tid,
                Span(
                    root_id,
                    None,
                    str(trace.get("name") or "trace"),
                    "TRACE",
                    ns_of(trace.get("timestamp")),
                    input=trace.get("input"),
                    input_key="trace.input",
                    output=trace.get("output"),
                    output_key="trace.output",
                ),
            )
        )
    for i, obs in enumerate(trace["observations"]):
        if not isinstance(obs, Mapping):
            # this trace's error alone: raised here, it cost every other trace of the document
            # (the traces-list endpoint gives observations as id strings)
            bad = Span(f"unreadable:{i}", root_id, "?", "?")
            bad.problem = TraceProblem(
                "observations", f"an observation must be an object, got {type(obs).__name__} (observation {i + 1})"
            )
            out.append((tid, bad))
            continue
        out.append((tid, _observation(obs, root_id)))
    return out


def _observation(obs: Mapping[str, Any], root_id: str | None) -> Span:
    kind = str(obs.get("type") or "").upper()
    parent = None if _get(obs, "isRootObservation") else _get(obs, "parentObservationId")
    span = Span(
        str(obs["id"]),
        str(parent) if parent else root_id,
        str(obs.get("name") or ""),
        _KINDS.get(kind, kind),
        ns_of(_get(obs, "startTime")),
        ns_of(_get(obs, "endTime")),
        input=obs.get("input"),
        input_key="observation.input",
        output=obs.get("output"),
        output_key="observation.output",
    )
    if span.kind == RETRIEVER:
        try:
            span.documents = documents_of(span.output if span.output is not None else [], "observation.output")
        except TraceProblem as p:
            span.documents, span.problem = [], TraceProblem(p.field, p.reason, span)
    return span
