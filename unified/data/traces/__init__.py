"""Traces as input: production traces become Samples, one trace → one Sample.

Sources (``--from`` names, ``layout=`` in ``read_samples``):

========================  =============================================================
``otlp``                  OTLP JSON (``{"resourceSpans": …}``: the Collector's file
                          exporter, one per line, or one document; Phoenix's bare
                          spans under ``data``) — ``otlp``
``openinference``         span records with OpenInference attributes, one per line or
                          pretty-printed one after another (the OpenTelemetry SDK's
                          ``ConsoleSpanExporter``), Phoenix's span JSON, or Phoenix's
                          span rows (a DataFrame, or its Parquet file) —
                          ``openinference``
``mlflow-traces``         MLflow trace JSON exports, ``mlflow.search_traces()``
                          DataFrames (or their Parquet file), ``mlflow.entities.Trace``
                          objects — ``mlflow_traces``
``langfuse``              Langfuse trace exports (traces with observations, or
                          ``{"trace", "observations"}``) and observation lists —
                          ``langfuse_export``
========================  =============================================================

Each reader turns its source into the neutral ``model.Span``; ``assemble`` makes the
Sample (question, contexts in retrieval order, response, ``metadata["provenance"]``),
the same rules for every source. ``detect`` recognises a source by its content — only
where the shape is unambiguous; ``--from`` forces one. Every trace is read before the
first Sample is made (a trace's spans may be spread over the whole file).

Rows: a Sample's or a trace's RowError's row is the trace's position in the source (the
order its first span appears), its ``sample_id`` the trace id; a value that is no JSON
at all is a RowError at its line. Nothing here imports a tracing package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from unified.data.rowerror import RowError
from unified.data.traces import langfuse_export, mlflow_traces, openinference, otlp
from unified.data.traces.assemble import EMPTY_RETRIEVERS, assemble
from unified.data.traces.files import first_value, next_line_values, values
from unified.data.traces.model import Span, TraceProblem, group

__all__ = ["EMPTY_RETRIEVERS", "TRACE_FORMATS", "detect", "detect_columns", "detect_file", "file_rows", "trace_rows"]

SpanReader = Callable[[Any], "list[tuple[str, Span]]"]
#: the suffixes of a Parquet file (as ``unified.data.readers`` knows them)
PARQUET_SUFFIXES = (".parquet", ".pq")


#: --from name → the reader of one top-level value
TRACE_FORMATS: dict[str, SpanReader] = {
    "otlp": otlp.spans_of,
    "openinference": openinference.spans_of,
    "mlflow-traces": mlflow_traces.spans_of,
    "langfuse": langfuse_export.spans_of,
}


def detect(value: Any) -> str | None:
    """The trace format of a source's first value (a list's first element; a
    ``data``/``traces`` wrapper's first element), or None when it is no trace."""
    if isinstance(value, list):
        value = value[0] if value else None
    if not isinstance(value, Mapping):
        return "mlflow-traces" if mlflow_traces.is_trace_object(value) else None
    if "resourceSpans" in value or "resource_spans" in value or otlp.is_bare_span(value):
        return "otlp"
    if openinference.is_span_record(value):
        return "openinference"
    if mlflow_traces.is_mlflow_trace(value):
        return "mlflow-traces"
    if langfuse_export.is_wrapped_trace(value) or langfuse_export.is_trace(value):
        return "langfuse"
    if langfuse_export.is_observation(value):
        return "langfuse"
    for key in ("data", "traces"):
        inner = value.get(key)
        if isinstance(inner, list) and inner and len(value) <= 3:
            return detect(inner[0])
    return None


def detect_file(path: Path) -> str | None:
    """The trace format of a file, from its first value; when that is no trace (a
    fragment of a rotated log, a span a crash cut or damaged), the format most of its
    first lines that parse share, when at least half of them do; None for a file of
    samples. The first value alone read a whole span file as samples when only its first
    line was broken: each span a "sample" every metric failed."""
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return _detect_parquet(path)
    try:
        found = detect(first_value(path))
        if found is not None:
            return found
        seen = [detect(v) for v in next_line_values(path)]
        formats = [f for f in seen if f is not None]
        if not formats:
            return None
        best = max(set(formats), key=formats.count)
        return best if 2 * formats.count(best) >= len(seen) else None
    except OSError:
        return None


def _detect_parquet(path: Path) -> str | None:
    """A Parquet file's trace format, from its columns (``detect_columns``): Phoenix's
    span DataFrame or ``mlflow.search_traces()``'s, saved with ``to_parquet``."""
    import pyarrow.parquet as pq

    try:
        return detect_columns(pq.read_schema(path).names)
    except (OSError, ValueError):  # not Parquet after all: the samples reader says why
        return None


def detect_columns(columns: Iterable[str]) -> str | None:
    """``mlflow-traces`` for the columns of ``mlflow.search_traces()``, ``openinference``
    for Phoenix's span DataFrame; else None."""
    cols = set(columns)
    if (
        "trace_id" in cols
        and ({"trace", "spans"} & cols)
        and ("request_time" in cols or "state" in cols or "spans" in cols)
    ):
        return "mlflow-traces"
    if "context.trace_id" in cols and "context.span_id" in cols:
        return "openinference"
    return None


def trace_rows(items: Iterable[tuple[int, Any]], fmt: str, source: str) -> Iterator[tuple[int, Any]]:
    """(row, Sample record | RowError) for the traces in ``items`` — ``(position,
    value)`` pairs of format ``fmt``; a value that cannot be read is a RowError at its
    position, and reading goes on."""
    reader = TRACE_FORMATS[fmt]
    pairs: list[tuple[str, Span]] = []
    for pos, value in items:
        if isinstance(value, RowError):
            yield pos, value
            continue
        got = _read(reader, value)
        if isinstance(got, TraceProblem) and isinstance(value, list) and len(value) > 1:
            # a list of traces/spans (a JSON array export): one bad element costs only itself
            for k, item in enumerate(value):
                one = _read(reader, item)
                if isinstance(one, TraceProblem):
                    yield pos, RowError(source, pos, one.field, f"{fmt}: element {k} of the list: {one.reason}")
                else:
                    pairs.extend(one)
        elif isinstance(got, TraceProblem):
            yield pos, RowError(source, pos, got.field, f"{fmt}: {got.reason}")
        else:
            pairs.extend(got)
    for trace in group(pairs, fmt):
        yield trace.row, assemble(trace, source)


def _read(reader: SpanReader, value: Any) -> "list[tuple[str, Span]] | TraceProblem":
    """The reader's spans of ``value``, or the problem that stopped it."""
    try:
        return reader(value)
    except TraceProblem as p:
        return p
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # a malformed value
        return TraceProblem(None, f"cannot read this value ({type(e).__name__}: {e})")


def file_rows(path: Path, fmt: str) -> Iterator[tuple[int, Any]]:
    """``trace_rows`` over the values of a file: JSON values, or a Parquet file's rows
    (a span DataFrame saved with ``to_parquet``: one span, or one MLflow trace, a row)."""
    if path.suffix.lower() in PARQUET_SUFFIXES:
        from unified.data.readers import read_file

        return trace_rows(read_file(path, "parquet"), fmt, path.name)
    return trace_rows(values(path), fmt, path.name)
