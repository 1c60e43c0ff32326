"""Malformed trace files found in review: each gives row errors naming the trace and the
field, never a hang, and never costs the other traces of the same document."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from unified.data.io import load_samples


def _attr(k, v):
    return {"key": k, "value": {"stringValue": v}}


def _span(tid, sid, parent, name, kind, attrs):
    d = {
        "traceId": tid,
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [_attr("openinference.span.kind", kind)] + [_attr(k, v) for k, v in attrs.items()],
    }
    if parent:
        d["parentSpanId"] = parent
    return d


def _trace(i):
    tid, root, ret = f"{i:032x}", f"{i:08x}00000001", f"{i:08x}00000002"
    return [
        _span(tid, root, None, "rag", "CHAIN", {"input.value": f"What is fact {i}?", "output.value": f"Fact {i}."}),
        _span(
            tid,
            ret,
            root,
            "retrieve",
            "RETRIEVER",
            {"retrieval.documents.0.document.content": f"Passage {i}.", "retrieval.documents.0.document.id": f"d{i}"},
        ),
    ]


def _doc(spans):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}


def test_a_document_index_far_out_of_range_is_a_row_error_not_a_hang(tmp_path):
    spans = _trace(1)
    spans[1]["attributes"].append(_attr("retrieval.documents.99999999999.document.content", "far"))
    path = tmp_path / "sparse.json"
    path.write_text(json.dumps(_doc(spans + _trace(2))))
    # in a child with a time limit: before the fix this built range(10**11) and never returned
    code = (
        "import sys; from unified.data.io import load_samples;"
        f"s, e = load_samples({str(path)!r}, layout='otlp');"
        "print(len(s), len(e)); print(e[0])"
    )
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - t0 < 60
    assert out.returncode == 0, out.stderr
    first, err = out.stdout.splitlines()[:2]
    assert first == "1 1"
    assert "retrieval.documents.1" in err and "missing" in err


def test_one_unreadable_span_costs_only_its_own_trace_not_the_whole_document(tmp_path):
    spans = [s for i in range(1, 5) for s in _trace(i)]
    spans[2]["attributes"].append({"key": "x", "value": {"intValue": "abc"}})  # trace 2: bad int
    del spans[4]["traceId"]  # trace 3's root: no trace id
    spans.append("garbage")  # not a span at all
    path = tmp_path / "one_doc.json"
    path.write_text(json.dumps(_doc(spans)))
    samples, errors = load_samples(str(path), layout="otlp")
    # trace 1 and 4 are whole; before the fix one bad span made the whole document one error
    assert sorted(s.id for s in samples) == [f"{1:032x}", f"{4:032x}"]
    text = "\n".join(map(str, errors))
    assert f"field 'x': trace {2:032x}: span 'rag' ({2:08x}00000001): attribute 'x': intValue 'abc'" in text
    # trace 3 lost its root's trace id: the error is trace 3's, found by the root's span id
    [lost] = [e for e in errors if e.sample_id == f"{3:032x}"]
    assert lost.field == "traceId" and "has no trace id (this trace's span, by its ids" in lost.reason
    assert "cannot read this span (AttributeError" in text  # the garbage, a row error of its own


def _record(tid, sid, parent, name, attrs):
    return {"name": name, "context": {"trace_id": tid, "span_id": sid}, "parent_id": parent, "attributes": attrs}


def test_one_bad_element_of_a_json_array_of_spans_costs_only_itself(tmp_path):
    records = []
    for i in (1, 2):
        tid, root = f"0x{i:032x}", f"0x{i:08x}00000001"
        records.append(_record(tid, root, None, "rag", {"openinference.span.kind": "CHAIN", "input.value": f"Q{i}?"}))
        records.append(
            _record(
                tid,
                f"0x{i:08x}00000002",
                root,
                "retrieve",
                {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.content": f"P{i}"},
            )
        )
    records.insert(2, {"name": "not a span record"})
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(records))
    samples, errors = load_samples(str(path), layout="openinference")
    assert sorted(s.user_input for s in samples) == ["Q1?", "Q2?"]
    assert len(errors) == 1 and "element 2 of the list" in str(errors[0]) and "context.trace_id" in str(errors[0])
