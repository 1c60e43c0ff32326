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
