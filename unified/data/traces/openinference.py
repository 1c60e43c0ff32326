"""OpenInference spans: the attribute names of the OpenInference semantic conventions
(package ``openinference-semantic-conventions``; Phoenix, Arize and many
instrumentations write them), and the span records that carry them one per line.

Attributes read (``SpanAttributes`` / ``DocumentAttributes`` / ``MessageAttributes``):

* ``openinference.span.kind`` — ``RETRIEVER``, ``LLM``, ``CHAIN``, …; a span without a
  kind that carries ``retrieval.documents.N.…`` is a retriever (an attribute limit drops
  the oldest attributes, the kind first);
* ``input.value`` / ``input.mime_type`` and ``output.value`` / ``output.mime_type``
  (``text/plain`` or ``application/json``; see ``values``);
* ``retrieval.documents.N.document.content`` / ``.id`` / ``.score`` / ``.metadata`` (JSON
  text, or ``.metadata.<key>`` as Phoenix's span JSON flattens it; a document without an
  id is named by its metadata's ``id`` / ``source`` …, ``values.document_id``) — flattened,
  N from 0, as OpenTelemetry attributes must be; a list of document objects under
  ``retrieval.documents`` (Phoenix's span DataFrame, numpy arrays once read back from
  Parquet) is read too. An index written otherwise (``01``, other digits, whitespace in
  the key) is an error (``_elements``);
* an LLM span's answer: its last ``llm.output_messages.N.message.content`` when it has
  output messages, else its ``output.value``.

A retriever span whose document indices have a gap, or that dropped attributes
(OpenTelemetry keeps 128 per span unless ``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`` says more),
is an error: its contexts would be silently incomplete.

Span records (``span_record``): the OpenTelemetry SDK's ``ReadableSpan.to_json()`` —
what ``ConsoleSpanExporter`` prints, pretty-printed or one per line — with
``context.trace_id`` / ``context.span_id`` / ``parent_id`` / ``start_time`` /
``attributes`` (Phoenix's span JSON too: its kind in a top-level ``span_kind``,
``UNKNOWN`` meaning none); and Phoenix's flattened span rows (``context.trace_id``,
``attributes.input.value``, …).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from unified.data.cells import is_missing, plain
from unified.data.traces.fields import hex_id, ns_of
from unified.data.traces.model import LLM, NO_TRACE_ID, RETRIEVER, UNKNOWN, Doc, Span, TraceProblem
from unified.data.traces.values import document_id

SPAN_KIND = "openinference.span.kind"
DOCUMENTS = "retrieval.documents"
OUTPUT_MESSAGES = "llm.output_messages"
#: ``<list>.<index>.<rest>``: the flattened element of a list attribute
_ELEMENT = re.compile(r"^(retrieval\.documents|llm\.output_messages)\.([^.]*)\.(.*)$", re.S)
_INDEX = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_DOC_FIELD = re.compile(r"document\.(content|id|score|metadata)(?:\.(.+))?", re.ASCII | re.S)


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
    kind = "" if kind == UNKNOWN else kind
    if not kind and any(k.startswith(DOCUMENTS + ".") for k in attrs):
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
    try:
        elements = _elements(attrs)
        if kind == LLM:
            _last_output_message(span, attrs, elements.get(OUTPUT_MESSAGES, {}))
        if kind == RETRIEVER:
            span.documents = _documents(attrs, elements.get(DOCUMENTS, {}), dropped)
    except TraceProblem as p:
        span.documents, span.problem = [] if kind == RETRIEVER else None, TraceProblem(p.field, p.reason, span)
    return span


def _elements(attrs: Mapping[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """The flattened list attributes (``retrieval.documents.N.…``,
    ``llm.output_messages.N.…``): list name → index → {rest of the key: value}. An index
    must be written as OpenTelemetry writes one — ASCII digits without a leading zero —
    and a key must hold no whitespace: ``01``, ``١`` or a key ending in a newline would
    otherwise name the same element as another key, and the last written would silently
    replace it."""
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attrs.items():
        m = _ELEMENT.match(key)
        if m is None:
            continue
        name, index, rest = m.groups()
        if not _INDEX.fullmatch(index) or any(c.isspace() for c in key):
            shown = key.encode("unicode_escape").decode("ascii")
            raise TraceProblem(
                shown,
                f"attribute '{shown}' is not an element key as OpenTelemetry writes one (an index of ASCII digits "
                "without a leading zero, no whitespace): it may name the same element as another key, and which "
                "value is right cannot be told",
            )
        found.setdefault(name, {}).setdefault(int(index), {})[rest] = value
    return found


def _last_output_message(span: Span, attrs: Mapping[str, Any], messages: dict[int, dict[str, Any]]) -> None:
    """An LLM span's answer: its last output message's text, when it has output messages
    (``llm.output_messages.N.message.content``, or a list of them under
    ``llm.output_messages``, as Phoenix's DataFrame holds them). They are the convention's
    own record of the reply; ``output.value`` is the framework's serialisation of its
    result (LangChain writes its whole ``LLMResult`` there)."""
    if messages:
        i = max(messages)
        content = messages[i].get("message.content")
        key = f"{OUTPUT_MESSAGES}.{i}.message.content"
    else:
        listed = plain_cells(attrs.get(OUTPUT_MESSAGES))
        if not isinstance(listed, list) or not listed or not isinstance(listed[-1], Mapping):
            return
        content, key = listed[-1].get("message.content"), f"{OUTPUT_MESSAGES}[{len(listed) - 1}].message.content"
    if isinstance(content, str) and content.strip():
        span.output, span.output_mime, span.output_key = content, "text/plain", key


def _documents(attrs: Mapping[str, Any], found: dict[int, dict[str, Any]], dropped: int) -> list[Doc]:
    if dropped:
        raise TraceProblem(
            DOCUMENTS,
            f"the span dropped {dropped} attribute(s) (OpenTelemetry's limit is 128 "
            f"per span unless OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT is raised): its "
            f"documents may be incomplete",
        )
    docs = {i: _flat_doc(d) for i, d in found.items()}
    listed = plain_cells(attrs.get(DOCUMENTS))
    if not docs and isinstance(listed, list):
        docs = {i: _nested_doc(d, i) for i, d in enumerate(listed)}
    indices = sorted(docs)
    if indices != list(range(len(indices))):
        missing = _gaps(indices)
        raise TraceProblem(
            f"{DOCUMENTS}.{missing[0]}",
            f"documents {missing} are missing between indices 0 and {indices[-1]}: the retrieval is incomplete",
        )
    out = []
    for i in indices:
        d = docs[i]
        where = f"{DOCUMENTS}.{i}.document.content"
        if d.get("content") is None:
            raise TraceProblem(where, "missing: a retrieved document without text")
        out.append(Doc(d["content"], document_id(d), d.get("score"), where))
    return out


def _flat_doc(fields: dict[str, Any]) -> dict[str, Any]:
    """One document's flattened fields (``document.content``, ``document.metadata`` — a
    JSON text — or ``document.metadata.<key>``, as Phoenix's span JSON writes it) as a
    document object: ``content``, ``id``, ``score``, ``metadata``."""
    doc: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for rest, value in fields.items():
        m = _DOC_FIELD.fullmatch(rest)
        if m is None:
            continue  # a field the convention does not define: not read
        if m.group(1) == "metadata":
            if m.group(2):
                meta[m.group(2)] = value
            else:
                meta.update(_metadata(value))
        else:
            doc[m.group(1)] = value
    if meta:
        doc["metadata"] = meta
    return doc


def _metadata(value: Any) -> dict[str, Any]:
    """A document's metadata: an object, or the JSON text OpenInference writes."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, Mapping) else {}


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
    doc = {f: item.get(f"document.{f}", inner.get(f)) for f in ("content", "id", "score")}
    doc["metadata"] = _metadata(item.get("document.metadata", inner.get("metadata")))
    return doc


def plain_cells(value: Any) -> Any:
    """A DataFrame cell as plain Python, deeply: numpy arrays (what Parquet gives back for
    a list column) → lists, numpy scalars → numbers; dicts and lists walked."""
    value = plain(value) if hasattr(value, "tolist") else value
    if isinstance(value, list):
        return [plain_cells(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain_cells(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- span records


def is_span_record(rec: Any) -> bool:
    """A span as the SDK's ``to_json()`` or Phoenix's span rows write it."""
    if not isinstance(rec, Mapping):
        return False
    if "context.trace_id" in rec:
        return True
    ctx = rec.get("context")
    # a span that lost its trace id is still a span record (its trace is found by its ids)
    ids = isinstance(ctx, Mapping) and ("trace_id" in ctx or "span_id" in ctx)
    return ids and isinstance(rec.get("attributes"), Mapping)


def spans_of(value: Any) -> list[tuple[str, Span]]:
    """(trace id, Span) for one span record or a list of them."""
    out = []
    for item in value if isinstance(value, list) else [value]:
        if not is_span_record(item):
            raise TraceProblem("context.trace_id", "not an OpenTelemetry span record (no context.trace_id)")
        out.append(span_record(item))
    return out


def span_record(rec: Mapping[str, Any]) -> tuple[str, Span]:
    """(trace id, Span) of one span record (module docstring). A record without a trace
    id is filed under ``NO_TRACE_ID`` with its problem: ``model.group`` finds the trace
    it belongs to through its span ids."""
    if "context.trace_id" in rec:  # Phoenix's flattened rows
        # a DataFrame row holds NaN where the span has no such attribute (pandas fills the
        # column): absent, never a value — a NaN parent made every root a child of "nan"
        rec = {k: plain_cells(v) for k, v in rec.items() if not is_missing(v)}
        attrs = {k[len("attributes.") :]: v for k, v in rec.items() if k.startswith("attributes.")}
        trace_id, span_id = rec.get("context.trace_id"), rec.get("context.span_id")
    else:
        attrs, trace_id, span_id = (
            dict(rec["attributes"]),
            rec["context"].get("trace_id"),
            rec["context"].get("span_id"),
        )
    # Phoenix's span JSON and DataFrame keep the kind beside the attributes, not among them
    top_kind = str(rec.get("span_kind") or "").upper()
    if top_kind and top_kind != UNKNOWN and not attrs.get(SPAN_KIND):
        attrs[SPAN_KIND] = top_kind
    span = span_from_attributes(
        attrs,
        span_id=hex_id(span_id) or "",
        parent_id=hex_id(rec.get("parent_id")),
        name=str(rec.get("name") or ""),
        start=ns_of(rec.get("start_time")),
        end=ns_of(rec.get("end_time")),
    )
    tid = hex_id(trace_id)
    if tid is None:
        span.problem = TraceProblem("context.trace_id", "has no trace id", span)
        return NO_TRACE_ID, span
    return tid, span
