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
one field set is the value, the others may be absent or ``null`` (Phoenix writes them
all); the span's attributes are then read as OpenInference attributes
(``openinference``). Bare spans outside the ``resourceSpans`` envelope (Phoenix's OTLP
export: ``{"data": [span, ...]}``) are read too. The span flags' "parent is remote" bit
(OTLP 1.1+) is kept for the root rule (``assemble.root_of``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from unified.data.traces.fields import hex_id, ns_of
from unified.data.traces.model import NO_TRACE_ID, Span, TraceProblem
from unified.data.traces.openinference import span_from_attributes

_SCALARS = ("stringvalue", "boolvalue", "doublevalue", "bytesvalue")
#: an ``intValue``: a signed 64-bit integer, in ASCII digits (JSON string or number)
_INT64 = re.compile(r"-?[0-9]{1,19}", re.ASCII)
#: OTLP's span flags: bit 8 says whether bit 9 is known; bit 9: the parent is remote
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """``obj[camel]`` or its proto-name spelling (``traceId`` → ``trace_id``)."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake)


def is_otlp(value: Any) -> bool:
    return isinstance(value, Mapping) and _get(value, "resourceSpans") is not None


def is_bare_span(value: Any) -> bool:
    """An OTLP span outside its ``resourceSpans`` envelope, as Phoenix's
    ``/v1/projects/{p}/spans/otlpv1`` lists them under ``data``."""
    return (
        isinstance(value, Mapping) and _get(value, "spanId") is not None and isinstance(value.get("attributes"), list)
    )


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value. The value is its one field that is set:
    Phoenix writes the others as ``null``, and an ``AnyValue`` with no field set is no
    value (None). Two fields set, or an ``intValue`` that is no 64-bit integer, is a
    ``TraceProblem``."""
    if not isinstance(v, Mapping):
        return None
    present = [(k, x) for k, x in v.items() if x is not None]
    if not present:
        return None
    if len(present) > 1:
        raise TraceProblem(
            None, f"an attribute value with {len(present)} values set ({', '.join(k for k, _ in present)})"
        )
    key, inner = present[0]
    kind = key.replace("_", "").lower()
    if kind in _SCALARS:
        return inner
    if kind == "intvalue":
        return _int64(inner)
    if kind == "arrayvalue":
        return [any_value(x) for x in (inner or {}).get("values") or []]
    if kind == "kvlistvalue":
        return attributes((inner or {}).get("values") or [])
    return None


def _int64(inner: Any) -> int:
    text = str(inner) if not isinstance(inner, bool) else ""
    if not _INT64.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        shown = text if len(text) <= 24 else f"{text[:12]}…({len(text)} characters)"
        raise TraceProblem(None, f"intValue {shown!r} is not a 64-bit integer in ASCII digits")
    return int(text)


def attributes(items: Any) -> dict[str, Any]:
    """OTLP's ``[{"key": k, "value": AnyValue}, ...]`` as a flat dict. A key given twice
    is a ``TraceProblem`` naming it: the last value would silently win."""
    out: dict[str, Any] = {}
    for kv in items or []:
        if not isinstance(kv, Mapping):
            continue
        key = str(kv.get("key"))
        if key in out:
            shown = key.encode("unicode_escape").decode("ascii")
            raise TraceProblem(shown, f"attribute '{shown}' is given twice; which value is right cannot be told")
        try:
            out[key] = any_value(kv.get("value"))
        except TraceProblem as p:
            raise TraceProblem(key, f"attribute '{key}': {p.reason}") from None
    return out


def spans_of(doc: Any) -> list[tuple[str, Span]]:
    """(trace id, Span) for every span of one OTLP document, a list of them, or a list of
    bare spans (``{"data": [span, ...]}``, Phoenix's OTLP export)."""
    if isinstance(doc, list):
        return [pair for d in doc for pair in (spans_of(d) if not is_bare_span(d) else [_guarded(d)])]
    if isinstance(doc, Mapping) and not is_otlp(doc) and isinstance(doc.get("data"), list):
        return spans_of(doc["data"])
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
    trace id is filed under ``NO_TRACE_ID`` (``model.group`` finds its trace by its ids)."""
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
    parent = hex_id(_get(raw, "parentSpanId")) if ok else None
    span = Span(span_id, parent, name, "", problem=problem)
    span.problem = TraceProblem(problem.field, problem.reason, span)
    return trace_id, span


def _span(raw: Mapping[str, Any]) -> tuple[str, Span]:
    span = span_from_attributes(
        attributes(raw.get("attributes")),
        span_id=hex_id(_get(raw, "spanId")) or "",
        parent_id=hex_id(_get(raw, "parentSpanId")),
        name=str(raw.get("name") or ""),
        start=ns_of(_get(raw, "startTimeUnixNano")),
        end=ns_of(_get(raw, "endTimeUnixNano")),
        dropped=int(_get(raw, "droppedAttributesCount") or 0),
    )
    flags = _get(raw, "flags")
    if isinstance(flags, int) and not isinstance(flags, bool) and flags & _HAS_IS_REMOTE:
        span.remote_parent = bool(flags & _IS_REMOTE)
    trace_id = hex_id(_get(raw, "traceId"))
    if trace_id is None:
        span.problem = TraceProblem("traceId", "has no trace id", span)
        return NO_TRACE_ID, span
    return trace_id, span
