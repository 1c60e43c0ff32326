"""OpenInference spans: the attribute names of the OpenInference semantic conventions
(package ``openinference-semantic-conventions``; Phoenix, Arize and many
instrumentations write them), and the span records that carry them one per line.

Attributes read (``SpanAttributes`` / ``DocumentAttributes`` / ``MessageAttributes``):

* ``openinference.span.kind`` — ``RETRIEVER``, ``LLM``, ``CHAIN``, …; a span without a
  kind that carries ``retrieval.documents.N.…`` is a retriever (an attribute limit drops
  the oldest attributes, the kind first);
* ``input.value`` / ``input.mime_type`` and ``output.value`` / ``output.mime_type``
  (``text/plain`` or ``application/json``; see ``values``);
* ``retrieval.documents.N.document.content`` / ``.id`` / ``.score`` — flattened, N from 0,
  as OpenTelemetry attributes must be; a list of document objects under
  ``retrieval.documents`` (Phoenix's span DataFrame) is read too;
* an LLM span without ``output.value``: its last ``llm.output_messages.N.message.content``.

A retriever span whose document indices have a gap, or that dropped attributes
(OpenTelemetry keeps 128 per span unless ``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`` says more),
is an error: its contexts would be silently incomplete.

Span records (``span_record``): the OpenTelemetry SDK's ``ReadableSpan.to_json()`` —
what ``ConsoleSpanExporter`` prints, pretty-printed or one per line — with
``context.trace_id`` / ``context.span_id`` / ``parent_id`` / ``start_time`` /
``attributes``; and Phoenix's flattened span rows (``context.trace_id``,
``attributes.input.value``, …).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from unified.data.cells import is_missing
from unified.data.traces.fields import hex_id, ns_of
from unified.data.traces.model import LLM, RETRIEVER, Doc, Span, TraceProblem

SPAN_KIND = "openinference.span.kind"
DOCUMENTS = "retrieval.documents"
_DOC_ATTR = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(content|id|score)$")
_OUT_MSG = re.compile(r"^llm\.output_messages\.(\d+)\.message\.content$")


def span_from_attributes(
    attrs: Mapping[str, Any],
    *,
    span_id: str,
    parent_id: str | None,
    name: str,
    start: int = 0,
    end: int = 0,
    dropped: int = 0,
) -> Span:
    """A ``Span`` from OpenInference attributes (flat names, decoded values)."""
    kind = str(attrs.get(SPAN_KIND) or "").upper()
    if not kind and any(_DOC_ATTR.match(k) for k in attrs):
        kind = RETRIEVER  # its kind was dropped (OpenTelemetry drops the oldest attributes first)
    span = Span(
        span_id,
        parent_id,
        name,
        kind,
        start,
        end,
        input=attrs.get("input.value"),
        input_mime=attrs.get("input.mime_type"),
        input_key="input.value",
        output=attrs.get("output.value"),
        output_mime=attrs.get("output.mime_type"),
        output_key="output.value",
        dropped=dropped,
    )
    if span.output is None and kind == LLM:
        _last_output_message(span, attrs)
    if kind == RETRIEVER:
        try:
            span.documents = _documents(attrs, dropped)
        except TraceProblem as p:
            span.documents, span.problem = [], TraceProblem(p.field, p.reason, span)
    return span


def _last_output_message(span: Span, attrs: Mapping[str, Any]) -> None:
    found = sorted((int(m.group(1)), k) for k in attrs if (m := _OUT_MSG.match(k)))
    if found:
        key = found[-1][1]
        span.output, span.output_mime, span.output_key = attrs[key], "text/plain", key


def _documents(attrs: Mapping[str, Any], dropped: int) -> list[Doc]:
    if dropped:
        raise TraceProblem(
            DOCUMENTS,
            f"the span dropped {dropped} attribute(s) (OpenTelemetry's limit is 128 "
            f"per span unless OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT is raised): its "
            f"documents may be incomplete",
        )
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _DOC_ATTR.match(key)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    if not found and isinstance(attrs.get(DOCUMENTS), list):
        found = {i: _nested_doc(d, i) for i, d in enumerate(attrs[DOCUMENTS])}
    indices = sorted(found)
    if indices != list(range(len(indices))):
        missing = _gaps(indices)
        raise TraceProblem(
            f"{DOCUMENTS}.{missing[0]}",
            f"documents {missing} are missing between indices 0 and {indices[-1]}: the retrieval is incomplete",
        )
    docs = []
    for i in indices:
        d = found[i]
        where = f"{DOCUMENTS}.{i}.document.content"
        if d.get("content") is None:
            raise TraceProblem(where, "missing: a retrieved document without text")
        docs.append(Doc(d["content"], d.get("id"), d.get("score"), where))
    return docs


def _gaps(indices: list[int], show: int = 5) -> list[int]:
    """The first ``show`` indices missing from sorted ``indices`` counted from 0, found
    without building ``range(max + 1)`` (an index such as 10**11 in a broken trace must
    not hang the reader)."""
    missing: list[int] = []
    expect = 0
    for i in indices:
        while expect < i and len(missing) < show:
            missing.append(expect)
            expect += 1
        if len(missing) >= show:
            break
        expect = i + 1
    return missing


def _nested_doc(item: Any, i: int) -> dict[str, Any]:
    """One element of a ``retrieval.documents`` list: ``{"document.content": …}`` or
    ``{"document": {"content": …}}``."""
    if not isinstance(item, Mapping):
        raise TraceProblem(f"{DOCUMENTS}.{i}", f"expected a document object, got {type(item).__name__}")
    inner: Mapping[str, Any] = item["document"] if isinstance(item.get("document"), Mapping) else {}
    return {f: item.get(f"document.{f}", inner.get(f)) for f in ("content", "id", "score")}


# ---------------------------------------------------------------- span records


def is_span_record(rec: Any) -> bool:
    """A span as the SDK's ``to_json()`` or Phoenix's span rows write it."""
    if not isinstance(rec, Mapping):
        return False
    if "context.trace_id" in rec:
        return True
    ctx = rec.get("context")
    return isinstance(ctx, Mapping) and "trace_id" in ctx and isinstance(rec.get("attributes"), Mapping)


def spans_of(value: Any) -> list[tuple[str, Span]]:
    """(trace id, Span) for one span record or a list of them."""
    out = []
    for item in value if isinstance(value, list) else [value]:
        if not is_span_record(item):
            raise TraceProblem("context.trace_id", "not an OpenTelemetry span record (no context.trace_id)")
        out.append(span_record(item))
    return out


def span_record(rec: Mapping[str, Any]) -> tuple[str, Span]:
    """(trace id, Span) of one span record (module docstring)."""
    if "context.trace_id" in rec:  # Phoenix's flattened rows
        # a DataFrame row holds NaN where the span has no such attribute (pandas fills the
        # column): absent, never a value — a NaN parent made every root a child of "nan"
        rec = {k: v for k, v in rec.items() if not is_missing(v)}
        attrs = {k[len("attributes.") :]: v for k, v in rec.items() if k.startswith("attributes.")}
        if rec.get("span_kind") and SPAN_KIND not in attrs:
            attrs[SPAN_KIND] = rec["span_kind"]
        trace_id, span_id = rec["context.trace_id"], rec.get("context.span_id")
    else:
        attrs, trace_id, span_id = dict(rec["attributes"]), rec["context"]["trace_id"], rec["context"].get("span_id")
    span = span_from_attributes(
        attrs,
        span_id=hex_id(span_id) or "",
        parent_id=hex_id(rec.get("parent_id")),
        name=str(rec.get("name") or ""),
        start=ns_of(rec.get("start_time")),
        end=ns_of(rec.get("end_time")),
    )
    return hex_id(trace_id) or str(trace_id), span
