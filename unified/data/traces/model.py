"""The neutral shape every trace reader produces: a ``Trace`` of ``Span``s, each span
reduced to what one Sample needs (its kind, its input and output, its documents) plus
the attribute names they came from, for provenance.

A reader (``otlp``, ``openinference``, ``mlflow_traces``, ``langfuse_export``) knows its
source's keys; ``assemble`` knows only this module. ``TraceProblem`` is a fault inside one
trace (a field that cannot be read): it becomes a ``RowError`` naming the trace, the span
and the field, and the other traces go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: span kinds as the assembly understands them (OpenInference's names; MLflow's and
#: Langfuse's are mapped onto them by their readers)
RETRIEVER = "RETRIEVER"
LLM = "LLM"
#: the kind a producer writes for a span it did not type (Phoenix's ``span_kind``): no kind
UNKNOWN = "UNKNOWN"
#: the trace id under which a reader files spans whose own trace id cannot be read
NO_TRACE_ID = "(no trace id)"
NO_SPAN_ID = (
    "has no span id (none, or all zeros: OTLP's invalid id, which means none): a repeated delivery "
    "of it could not be told from a second span, nor its children linked to it"
)


class TraceProblem(ValueError):
    """One field of one trace cannot be read. ``field`` is the source's own name for it
    (``input.value``, ``retrieval.documents.2.document.content``, ``mlflow.spanOutputs``…),
    ``span`` the span's name and id when the fault is inside a span."""

    def __init__(self, field: str | None, reason: str, span: "Span | None" = None):
        self.field = field
        self.reason = reason
        self.span = span
        super().__init__(reason)


@dataclass
class Doc:
    """One retrieved document: its text, its id and its retriever score (None when the
    source has none). ``where`` is the source's name for the text (for provenance)."""

    content: Any
    id: Any = None
    score: Any = None
    where: str = ""


@dataclass
class Span:
    """One span, reduced. ``start``/``end`` are nanoseconds since the epoch (0 when
    unknown); ``order`` its position in the source, the tie-break. ``input``/``output``
    are the raw values (text, or already-decoded JSON) with their MIME type when the
    source states one; ``input_key``/``output_key`` the attribute they came from.
    ``documents`` is set on retriever spans (``None`` elsewhere); ``problem`` is a fault
    found while reading the span, raised only if the assembly needs that span."""

    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start: int = 0
    end: int = 0
    order: int = 0
    input: Any = None
    input_mime: str | None = None
    input_key: str = ""
    output: Any = None
    output_mime: str | None = None
    output_key: str = ""
    documents: list[Doc] | None = None
    problem: TraceProblem | None = None
    dropped: int = 0  # attributes the SDK dropped (its per-span limit): any of them may be missing
    #: OTLP's flags say whether the parent is in another process: True / False, None when unsaid
    remote_parent: bool | None = None

    def label(self) -> str:
        return f"span '{self.name}' ({self.span_id})"


@dataclass
class Trace:
    """The spans of one trace, in source order. ``row``: the trace's 1-based position in
    the source (order of first appearance), the row number of its Sample or RowError.
    ``source``: the format name recorded in provenance (``otlp``, ``mlflow-traces``…)."""

    trace_id: str
    row: int
    source: str
    spans: list[Span] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


def group(spans: "list[tuple[str, Span]]", source: str) -> list[Trace]:
    """(trace id, span) pairs → traces in order of first appearance; a span keeps its
    position in the source as ``order`` (spans of one trace may be spread over several
    lines or batches).

    * A span delivered twice (the same span id, the same content) counts once
      (``metadata["repeated_spans"]``); two spans under one id with other content, and a
      span without a span id (a second delivery of it could not be told from a second
      span, nor its children linked to it), are problems of their trace.
    * A span without a trace id (filed under ``NO_TRACE_ID``) belongs to the trace whose
      spans it is linked to, by its parent or as a parent: that trace becomes the row
      error (read without the span, it would be scored with part of its contexts). One
      linked to no trace stays a row error of its own."""
    traces: dict[str, Trace] = {}
    seen: dict[tuple[str, str], Span] = {}
    lost: list[Span] = []
    for order, (trace_id, span) in enumerate(spans):
        span.order = order
        if trace_id == NO_TRACE_ID and span.span_id:
            lost.append(span)
            continue
        trace = traces.get(trace_id)
        if trace is None:
            trace = traces[trace_id] = Trace(trace_id, len(traces) + 1, source)
        if not span.span_id and span.problem is None:
            span.problem = TraceProblem("span_id", NO_SPAN_ID, span)
        first = seen.setdefault((trace_id, span.span_id), span) if span.span_id else span
        if first is not span and _same_span(first, span):
            # an exporter that retries delivers a span twice: its documents counted twice
            # would double the contexts; the copy is dropped and counted in the metadata
            trace.metadata["repeated_spans"] = trace.metadata.get("repeated_spans", 0) + 1
            continue
        if first is not span and span.problem is None:  # raised for the whole trace (assemble._record)
            span.problem = TraceProblem(
                "span_id",
                f"its span id is also {first.label()}'s, with other content: which one is right cannot be told",
                span,
            )
        trace.spans.append(span)
    _place_lost(lost, traces, source)
    return list(traces.values())


def _place_lost(lost: list[Span], traces: dict[str, Trace], source: str) -> None:
    """Each span without a trace id into the trace it is linked to (``group``)."""
    owner: dict[str, Trace] = {}
    parents: dict[str, Trace] = {}
    for trace in traces.values():
        for s in trace.spans:
            if s.span_id:
                owner.setdefault(s.span_id, trace)
            if s.parent_id:
                parents.setdefault(s.parent_id, trace)
    for span in lost:
        found = (owner.get(span.parent_id) if span.parent_id else None) or parents.get(span.span_id)
        if found is not None and span.problem is not None:
            span.problem.reason += " (this trace's span, by its ids: the trace cannot be read without it)"
        trace = found or traces.setdefault(NO_TRACE_ID, Trace(NO_TRACE_ID, len(traces) + 1, source))
        trace.spans.append(span)


def _same_span(a: Span, b: Span) -> bool:
    """The same span delivered twice: every field equal but the position in the source (and
    the read fault, an exception object that never compares equal)."""
    fields = [f for f in a.__dataclass_fields__ if f not in ("order", "problem")]
    return all(getattr(a, f) == getattr(b, f) for f in fields) and (a.problem is None) == (b.problem is None)
