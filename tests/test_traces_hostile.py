"""Hostile variants of real traces: each used to pass silently — a wrong sample, or an
error naming no trace — and is now a row error naming the trace it harms (or a rule of
its own, tested here). The traces are OTLP JSON as the Collector writes it and span
records as the SDK's console exporter prints them, edited the one way each test says."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from unified.data.io import load_samples

CORPUS = Path(__file__).parent / "fixtures" / "traces"
TID = "5c0a03a688c45eb7b4df030a1f1f5847"


def _attr(key, value):
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if isinstance(value, int) else value}}


def _span(tid, sid, parent, name, attrs, start):
    d = {
        "traceId": tid,
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 9),
    }
    d["attributes"] = [_attr(k, v) for k, v in attrs.items()]
    if parent:
        d["parentSpanId"] = parent
    return d


def rag(i: int, *, retrievers: int = 1) -> list[dict]:
    """One RAG trace (root CHAIN, ``retrievers`` RETRIEVER spans of two documents each)."""
    tid, root = f"{i:032x}", f"{i:08x}00000001"
    spans = [
        _span(
            tid,
            root,
            None,
            "rag",
            {"openinference.span.kind": "CHAIN", "input.value": f"Q{i}?", "output.value": "A."},
            1,
        )
    ]
    for r in range(retrievers):
        docs = {f"retrieval.documents.{n}.document.content": f"P{i}.{r}.{n}" for n in range(2)}
        attrs = {"openinference.span.kind": "RETRIEVER", **docs}
        spans.append(_span(tid, f"{i:08x}0000010{r}", root, f"retrieve-{r}", attrs, 10 + r))
    return spans


def otlp_file(tmp_path: Path, spans: list[dict]) -> Path:
    path = tmp_path / "t.json"
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def read(path: Path):
    good, bad = load_samples(path)
    return {s.id: s for s in good}, {e.sample_id: e for e in bad}


def test_a_retriever_span_without_a_span_id_delivered_twice_is_its_traces_error(tmp_path):
    """With an id, a repeated delivery counts once; without one it doubled the contexts."""
    spans = rag(1) + rag(2)
    del spans[1]["spanId"]
    good, bad = read(otlp_file(tmp_path, spans + [copy.deepcopy(spans[1])]))
    assert list(good) == [f"{2:032x}"]
    assert bad[f"{1:032x}"].field == "span_id" and "has no span id" in bad[f"{1:032x}"].reason


def test_a_span_that_lost_its_trace_id_makes_its_own_trace_the_error(tmp_path):
    """A second retriever lost its traceId: its trace was scored on half its contexts,
    and the error named "(no trace id)", never the trace."""
    spans = rag(1, retrievers=2) + rag(2)
    del spans[2]["traceId"]
    good, bad = read(otlp_file(tmp_path, spans))
    assert list(good) == [f"{2:032x}"] and list(bad) == [f"{1:032x}"]
    assert bad[f"{1:032x}"].field == "traceId" and "span 'retrieve-1'" in bad[f"{1:032x}"].reason


def test_a_span_record_that_lost_its_trace_id_makes_its_own_trace_the_error(tmp_path):
    """The same in the console exporter's span records (LangChain's, from the corpus)."""
    lines = (CORPUS / "sdk" / "langchain-console.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    [hit] = [r for r in records if r["name"] == "VectorStoreRetriever" and r["context"]["trace_id"] == "0x" + TID]
    del hit["context"]["trace_id"]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    good, bad = read(path)
    assert TID not in good and len(good) == 3
    assert bad[TID].field == "context.trace_id" and "span 'VectorStoreRetriever'" in bad[TID].reason


@pytest.mark.parametrize(
    "key",
    [
        "retrieval.documents.01.document.content",  # leading zero: document 1 again
        "retrieval.documents.\u0661.document.content",  # ARABIC-INDIC DIGIT ONE: int() reads 1
        "retrieval.documents.1.document.content\n",  # a key ending in a newline
    ],
)
def test_a_document_index_spelled_another_way_is_an_error_not_a_replacement(tmp_path, key):
    spans = rag(1) + rag(2)
    spans[1]["attributes"].append(_attr(key, "a replacement"))
    good, bad = read(otlp_file(tmp_path, spans))
    assert list(good) == [f"{2:032x}"]
    err = bad[f"{1:032x}"]
    assert (
        err.field == key.encode("unicode_escape").decode("ascii")
        and "it may name the same element as another key" in err.reason
    )
    assert "\n" not in str(err)


def test_a_repeated_attribute_key_is_an_error_not_the_last_value(tmp_path):
    spans = rag(1) + rag(2)
    spans[1]["attributes"].append(_attr("retrieval.documents.0.document.content", "a replacement"))
    good, bad = read(otlp_file(tmp_path, spans))
    assert list(good) == [f"{2:032x}"]
    assert "is given twice" in bad[f"{1:032x}"].reason


def test_a_5000_digit_int_value_is_named_without_pythons_advice(tmp_path):
    spans = rag(1) + rag(2)
    spans[0]["attributes"].append({"key": "app.count", "value": {"intValue": "9" * 5000}})
    good, bad = read(otlp_file(tmp_path, spans))
    reason = bad[f"{1:032x}"].reason
    assert list(good) == [f"{2:032x}"] and "is not a 64-bit integer" in reason and "(5000 characters)" in reason
    assert "set_int_max_str_digits" not in reason and len(reason) < 300


def test_an_any_value_with_two_fields_set_is_an_error(tmp_path):
    """The one field set is the value (Phoenix writes the others as null); two set: which?"""
    spans = rag(1)
    spans[0]["attributes"][1]["value"] = {"stringValue": "Q1?", "intValue": "7"}
    _, bad = read(otlp_file(tmp_path, spans))
    assert "2 values set" in bad[f"{1:032x}"].reason


def test_an_all_zero_span_id_is_no_id_and_an_all_zero_parent_is_a_root(tmp_path):
    """OTLP: an all-zero id is invalid, which means none. A span whose own id is all
    zeros is its trace's error (its children cannot be linked to it); was: "3 root spans"."""
    spans = rag(1, retrievers=2) + rag(2)
    for s in spans[:3]:
        if s["name"] == "rag":
            s["spanId"] = "0" * 16
        else:
            s["parentSpanId"] = "0" * 16
    spans[3]["parentSpanId"] = "0" * 16  # trace 2's root: all zeros as parent = no parent
    good, bad = read(otlp_file(tmp_path, spans))
    assert list(good) == [f"{2:032x}"] and bad[f"{1:032x}"].field == "span_id"
    assert "all zeros" in bad[f"{1:032x}"].reason


def test_a_missing_parent_the_flags_call_local_is_a_cut_trace(tmp_path):
    """A root whose parent is missing is this service's entry span (its caller is in
    another service) — unless OTLP's flags say the parent is local: then spans are lost."""
    spans = rag(1) + rag(2)
    spans[0]["parentSpanId"] = "00f067aa0ba902b7"
    spans[2]["parentSpanId"] = "00f067aa0ba902b7"
    spans[0]["flags"] = 0x100 | 0x200  # the parent is remote
    spans[2]["flags"] = 0x100  # the parent is known not to be remote
    good, bad = read(otlp_file(tmp_path, spans))
    assert good[f"{1:032x}"].metadata["remote_parent"] == "00f067aa0ba902b7"
    assert bad[f"{2:032x}"].field == "parent_id" and "cut across files" in bad[f"{2:032x}"].reason


def test_a_phoenix_dataframe_read_back_from_parquet_gives_its_contexts():
    """pandas reads a list column back as numpy arrays: the documents were not read and
    the sample said "the retriever returned nothing"."""
    pd = pytest.importorskip("pandas")
    df = pd.read_parquet(CORPUS / "phoenix" / "langchain-spans.parquet")
    assert type(df["attributes.retrieval.documents"].dropna().iloc[0]).__name__ == "ndarray"
    good, bad = load_samples(df)
    assert not bad and len(good) == 4
    assert all(len(s.retrieved_contexts) == 2 and "empty_retriever_spans" not in s.metadata for s in good)
