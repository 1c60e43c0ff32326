"""A trace → one Sample record (or a RowError naming the trace): the one assembly every
trace reader shares.

* ``id``: the trace id.
* ``user_input``: the entry span's input (``values.text_of``, role question); absent when
  it has no input or an empty one (a summariser answers no question; metrics that
  need one then say so), an error when it has one that cannot be read. The root is
  the one span without a parent in the source (``root_of``: a remote parent — the
  caller in another service — is no parent here); none or several is an error (a trace
  cut across files), and so is a loop. The entry span is the root, or the span below a
  transport root (an HTTP server span: no kind, no input, no output) that holds the
  whole retrieval (``entry_of``).
* ``retrieved_contexts``: the documents of every outermost retriever span, spans in start
  order (ties: source order), documents in their index order within a span — retrieval
  order. A retriever span inside another (a hybrid or ensemble retriever's parts, whose
  results the enclosing span returns merged) adds nothing: its documents are already
  there, and counting them too doubled contexts. A retriever span that returned nothing
  around retriever spans that did (a wrapper typed RETRIEVER) gives way to them.
  ``metadata["nested_retriever_spans"]`` counts the spans not read. This is MLflow's rule (its top-level RETRIEVER spans), which our
  MLflow scorer reads, so one trace gives the same contexts through either path.
  ``retrieved_ids`` when every document has an id; the retriever's scores, aligned with
  the contexts, in ``metadata["retrieval_scores"]`` (None where a document has none). A
  trace without a retriever span is an error: contexts cannot be told. A retriever span
  that returned no document is legitimate (nothing matched) and is no error, but it is
  said: ``metadata["empty_retriever_spans"]`` counts such spans (the reader's notes count
  the traces), so a metric over no contexts (``[]``: an error Score for every metric that
  judges contexts) or over fewer of them is no surprise.
* ``response``: the entry span's output when it has one, else the output of the last LLM
  span (by end time); absent when neither exists (metrics that need it then say so).
* ``metadata["provenance"]``: for each field, the span (name and id) and the source's
  field it came from, plus the JSON key inside the value and ``json`` / ``guessed json``
  when the value was JSON; ``format`` and ``trace_id``.
"""

from __future__ import annotations

import math
from typing import Any

from unified.data.rowerror import RowError
from unified.data.traces.model import LLM, RETRIEVER, Doc, Span, Trace, TraceProblem
from unified.data.traces.values import decode, text_of

#: ``metadata`` key: the number of the trace's retriever spans that returned no document
EMPTY_RETRIEVERS = "empty_retriever_spans"
#: ``metadata`` key: the retriever spans not read — inside one that returned documents, or a
#: wrapper that returned none around the ones read
NESTED_RETRIEVERS = "nested_retriever_spans"


def assemble(trace: Trace, source: str) -> dict[str, Any] | RowError:
    """The Sample record of ``trace``, or a RowError (``source``, the trace's row, the
    field, a reason naming the trace and the span; ``sample_id`` = the trace id)."""
    try:
        return _record(trace)
    except TraceProblem as p:
        where = f"{p.span.label()}: " if p.span is not None else ""
        return RowError(
            source, trace.row, p.field, f"trace {trace.trace_id}: {where}{p.reason}", sample_id=trace.trace_id
        )


def _record(trace: Trace) -> dict[str, Any]:
    broken = [s.problem for s in trace.spans if s.problem is not None]
    if broken:  # a span its reader could not read: the trace cannot be trusted
        more = f" (and {len(broken) - 1} more span(s) with a problem)" if len(broken) > 1 else ""
        raise TraceProblem(broken[0].field, broken[0].reason + more, broken[0].span)
    root = root_of(trace)
    retrievers, not_read = _retrievers(trace, root)
    docs = _documents(trace, retrievers)
    root = entry_of(trace, root, retrievers)
    # a root span without input (or with an empty one) is a trace that answered no
    # question (a summariser): the sample has none; an input it cannot read is an error
    question, q_prov = _text(root, "input", "question", optional=True)
    if question is None and root.dropped:  # no question, or one the SDK dropped: cannot be told
        raise TraceProblem(
            "input.value",
            f"the root span has no input and dropped {root.dropped} attribute(s) (OpenTelemetry's limit is 128 per "
            "span unless OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT is raised): its question may be among them",
            root,
        )
    record: dict[str, Any] = {"id": trace.trace_id, "retrieved_contexts": [d.content for _, d in docs]}
    if question is not None:
        record["user_input"] = question
    if docs and all(d.id not in (None, "") for _, d in docs):
        record["retrieved_ids"] = [str(d.id) for _, d in docs]
    provenance: dict[str, Any] = {
        "format": trace.source,
        "trace_id": trace.trace_id,
        "user_input": q_prov or None,
        "retrieved_contexts": [_where(s, d.where) for s, d in docs],
    }
    answer = _answer_span(trace, root)
    if answer is not None:
        record["response"], provenance["response"] = _text(answer, "output", "answer")
    meta: dict[str, Any] = {**trace.metadata, "trace_name": root.name, "provenance": provenance}
    # how many read retriever spans returned no document (after a repeated copy was dropped)
    empty = sum(1 for s in retrievers if not s.documents)
    if empty:  # legitimate (the retriever found nothing), but a score over nothing must not surprise
        meta[EMPTY_RETRIEVERS] = empty
    if not_read:  # their documents are an enclosing retriever's, already read (or a wrapper's parts were)
        meta[NESTED_RETRIEVERS] = not_read
    if any(d.score is not None for _, d in docs):
        meta["retrieval_scores"] = [_score(d.score) for _, d in docs]
    record["metadata"] = meta
    return record


def root_of(trace: Trace) -> Span:
    """The head of this source's part of the trace: the one span without a parent here —
    no parent at all, or a parent that is not in the source. A service's entry span
    whose parent lives in another service (a remote parent: distributed tracing's
    normal case) is such a head; so is a span whose parent was lost, which cannot be
    told apart unless OTLP's flags say the parent is not remote (then it is an error).
    None or several heads is an error (a trace cut across files), and so is a loop."""
    if not trace.spans:
        raise TraceProblem(None, "has no spans")
    ids = {s.span_id for s in trace.spans}
    heads = [s for s in trace.spans if not s.parent_id or s.parent_id not in ids]
    cut = [s for s in heads if s.parent_id and s.remote_parent is False]
    if len(heads) == 1 and not cut:
        _check_tree(trace)
        if heads[0].parent_id:  # this service's entry span; its caller is in another source
            trace.metadata["remote_parent"] = heads[0].parent_id
        return heads[0]
    if not heads:
        raise TraceProblem("parent_id", "its parent ids form a loop that never reaches a root", trace.spans[0])
    dangling = cut or [s for s in heads if s.parent_id]
    if dangling and len(heads) > 1 or cut:
        s = dangling[0]
        more = f" ({len(heads)} spans have no parent in the source)" if len(heads) > 1 else ""
        raise TraceProblem(
            "parent_id", f"its parent {s.parent_id} is not in the source; is the trace cut across files?{more}", s
        )
    names = ", ".join(s.label() for s in heads[:3])
    raise TraceProblem("parent_id", f"has {len(heads)} root spans ({names}); one trace needs one root")


def _check_tree(trace: Trace) -> None:
    """Every span must reach the root through its parents (called once the root is the
    only head): a loop of parents means spans are mislinked, and their documents would
    otherwise be read as this trace's contexts without a word."""
    by_id = {s.span_id: s for s in trace.spans}
    rooted: set[str] = set()  # spans already shown to reach the root: each chain is walked once
    for span in trace.spans:
        seen: set[str] = set()
        cur: Span | None = span
        while cur is not None and cur.parent_id and cur.span_id not in rooted:
            if cur.span_id in seen:
                raise TraceProblem("parent_id", "its parent ids form a loop that never reaches the root", cur)
            seen.add(cur.span_id)
            cur = by_id.get(cur.parent_id)
        rooted |= seen


def entry_of(trace: Trace, root: Span, retrievers: list[Span]) -> Span:
    """The span the question and the answer are read from: the root, or — when the root
    is a transport span (no kind, no input, no output: a web framework's HTTP server
    span above the RAG chain, a service's entry span) — the span below it that holds the
    whole retrieval, descending while that span is such a transport span too. Where the
    retrieval is split over several children, the root stays: its input is the only
    one that is the whole question's."""
    children: dict[str | None, list[Span]] = {}
    for s in trace.spans:
        children.setdefault(s.parent_id, []).append(s)
    parent = {s.span_id: s.parent_id for s in trace.spans}
    # every ancestor of a read retriever span: the spans on the retrieval's paths
    on_path: set[str] = set()
    for r in retrievers:
        cur: str | None = r.span_id
        while cur and cur not in on_path:
            on_path.add(cur)
            cur = parent.get(cur)
    entry = root
    while not entry.kind and entry.input is None and entry.output is None:
        below = [c for c in children.get(entry.span_id, []) if c.span_id in on_path]
        if len(below) != 1 or below[0].kind == RETRIEVER:
            break
        entry = below[0]
    return entry


def _text(span: Span, side: str, role: str, *, optional: bool = False) -> tuple[Any, dict[str, Any]]:
    """(text, provenance) of a span's input or output; ``optional``: (None, {}) when
    the span has none or an empty one, instead of a ``TraceProblem``."""
    value, mime, key = (
        (span.input, span.input_mime, span.input_key)
        if side == "input"
        else (span.output, span.output_mime, span.output_key)
    )
    if value is None:
        if optional:
            return None, {}
        raise TraceProblem(key or f"{side}.value", f"the {role} is missing ({side} of the root span)", span)
    try:
        decoded, how = decode(value, mime)
        text, inner = text_of(decoded, role)
    except TraceProblem as p:
        raise TraceProblem(key, p.reason, span) from None
    if not text.strip():
        if optional:
            return None, {}
        raise TraceProblem(key, f"the {role} is empty", span)
    prov = _where(span, key)
    prov.update({k: v for k, v in (("key", inner), ("decoded", how)) if v})
    return text, prov


def _retrievers(trace: Trace, root: Span) -> tuple[list[Span], int]:
    """(the retriever spans whose documents are read, in start order — ties: source
    order; how many retriever spans are left out). A retriever span inside another adds
    nothing when the enclosing one returned documents (they are its merged result); when
    the enclosing one returned none (a wrapper typed RETRIEVER), its nearest retrievers
    inside are read instead, as the outermost ones that did return documents. Called
    after ``root_of``: every parent chain reaches the root."""
    children: dict[str | None, list[Span]] = {}
    for s in trace.spans:
        children.setdefault(s.parent_id, []).append(s)

    def below(span: Span) -> list[Span]:
        """The nearest retriever spans under ``span`` (not itself), walked iteratively
        as ``_check_tree`` walks: a deep trace cannot overflow the stack."""
        found, todo = [], list(children.get(span.span_id, []))
        while todo:
            s = todo.pop()
            if s.kind == RETRIEVER:
                found.append(s)
            else:
                todo.extend(children.get(s.span_id, []))
        return found

    chosen: list[Span] = []
    todo = [root]
    while todo:  # from the root down: a retriever with documents ends its branch
        s = todo.pop()
        if s.kind != RETRIEVER:
            todo.extend(children.get(s.span_id, []))
            continue
        inner = below(s)
        if s.documents or not inner:
            chosen.append(s)
        else:  # a wrapper that returned nothing of its own: its parts are the retrieval
            todo.extend(inner)
    every = sum(1 for s in trace.spans if s.kind == RETRIEVER)
    return sorted(chosen, key=lambda s: (s.start, s.order)), every - len(chosen)


def _documents(trace: Trace, retrievers: list[Span]) -> list[tuple[Span, Doc]]:
    """The documents of ``retrievers`` (``_retrievers``' choice), in retrieval order."""
    if not retrievers:
        kinds = sorted({s.kind or "?" for s in trace.spans})
        why = (
            "no span has a kind (OpenInference's openinference.span.kind, MLflow's span type, Langfuse's "
            "observation type): written under another convention, whose retrievals this reader cannot tell"
            if kinds == ["?"]
            else f"kinds: {', '.join(kinds)}"
        )
        raise TraceProblem(
            "retrieved_contexts",
            f"has no RETRIEVER span among its {len(trace.spans)} span(s) ({why}); its contexts cannot be told",
        )
    out: list[tuple[Span, Doc]] = []
    for span in retrievers:
        if span.problem is not None:
            raise span.problem
        for doc in span.documents or []:
            if not isinstance(doc.content, str):
                raise TraceProblem(
                    doc.where, f"a document's text must be a string, got {type(doc.content).__name__}", span
                )
            out.append((span, doc))
    return out


def _answer_span(trace: Trace, root: Span) -> Span | None:
    if root.output is not None:
        return root
    llms = [s for s in trace.spans if s.kind == LLM and s.output is not None]
    return max(llms, key=lambda s: (s.end or s.start, s.order)) if llms else None


def _where(span: Span, field: str) -> dict[str, Any]:
    return {"span": span.name, "span_id": span.span_id, "field": field}


def _score(value: Any) -> float | None:
    """A retriever score as a finite float, else None (a score is shown, never scored)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
