"""OTLP JSON: ``{"resourceSpans": [{"resource": …, "scopeSpans": [{"spans": [...]}]}]}``,
as the OpenTelemetry Collector's file exporter writes it (one such object per line) or
as one document.

Both spellings of the protobuf JSON mapping are read: camelCase (``resourceSpans``,
``scopeSpans``, ``traceId``, ``stringValue`` — the OTLP/JSON spec) and the proto field
names (``resource_spans``, ``scope_spans``, ``trace_id``, ``string_value`` — what
``MessageToJson(..., preserving_proto_field_name=True)`` writes); old exports'
``instrumentationLibrarySpans`` too. Ids: hex or base64 (``fields.hex_id``).
Attribute values (``AnyValue``): string, bool, int (JSON string or number), double,
bytes (kept as base64 text), array and key-value list, decoded to Python values; the
span's attributes are then read as OpenInference attributes (``openinference``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unified.data.traces.fields import hex_id, ns_of
from unified.data.traces.model import NO_TRACE_ID, Span, TraceProblem
from unified.data.traces.openinference import span_from_attributes

_SCALARS = ("stringvalue", "boolvalue", "doublevalue", "bytesvalue")


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """``obj[camel]`` or its proto-name spelling (``traceId`` → ``trace_id``)."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake)


def is_otlp(value: Any) -> bool:
    return isinstance(value, Mapping) and _get(value, "resourceSpans") is not None


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if not isinstance(v, Mapping) or not v:
        return None
    key, inner = next(iter(v.items()))
    kind = key.replace("_", "").lower()
    if kind in _SCALARS:
        return inner
    if kind == "intvalue":
        return int(inner)
    if kind == "arrayvalue":
        return [any_value(x) for x in (inner or {}).get("values") or []]
    if kind == "kvlistvalue":
        return attributes((inner or {}).get("values") or [])
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP's ``[{"key": k, "value": AnyValue}, ...]`` as a flat dict."""
    return {str(kv.get("key")): any_value(kv.get("value")) for kv in items or [] if isinstance(kv, Mapping)}


def spans_of(doc: Any) -> list[tuple[str, Span]]:
    """(trace id, Span) for every span of one OTLP document (or a list of them)."""
    if isinstance(doc, list):
        return [pair for d in doc for pair in spans_of(d)]
    if not is_otlp(doc):
        keys = ", ".join(map(str, list(doc)[:5])) if isinstance(doc, Mapping) else type(doc).__name__
        raise TraceProblem("resourceSpans", f"not an OTLP JSON document (found {keys})")
    out = []
    for rs in _get(doc, "resourceSpans") or []:
        scopes = _get(rs, "scopeSpans") or _get(rs, "instrumentationLibrarySpans") or []
        for ss in scopes:
            for raw in _get(ss, "spans") or []:
                out.append(_guarded(raw))
    return out


def _guarded(raw: Any) -> tuple[str, Span]:
    """``_span(raw)``, or — for a span that cannot be read — a span carrying the problem,
    so that only its own trace becomes a row error (one OTLP document often holds every
    trace of a file: one bad span must not cost the others). A span without a readable
    trace id is filed under ``NO_TRACE_ID``."""
    try:
        return _span(raw)
    except TraceProblem as p:
        problem = p
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        problem = TraceProblem(None, f"cannot read this span ({type(e).__name__}: {e})")
    ok = isinstance(raw, Mapping)
    trace_id = (hex_id(_get(raw, "traceId")) if ok else None) or NO_TRACE_ID
    name = str(raw.get("name") or "") if ok else f"<{type(raw).__name__}>"
    span_id = str(hex_id(_get(raw, "spanId")) or "") if ok else ""
    span = Span(span_id, None, name, "", problem=problem)
    span.problem = TraceProblem(problem.field, problem.reason, span)
    return trace_id, span


def _span(raw: Mapping[str, Any]) -> tuple[str, Span]:
    trace_id = hex_id(_get(raw, "traceId"))
    if trace_id is None:
        raise TraceProblem("traceId", f"span '{raw.get('name')}' has no trace id")
    span = span_from_attributes(
        attributes(raw.get("attributes")),
        span_id=hex_id(_get(raw, "spanId")) or "",
        parent_id=hex_id(_get(raw, "parentSpanId")),
        name=str(raw.get("name") or ""),
        start=ns_of(_get(raw, "startTimeUnixNano")),
        end=ns_of(_get(raw, "endTimeUnixNano")),
        dropped=int(_get(raw, "droppedAttributesCount") or 0),
    )
    return trace_id, span
