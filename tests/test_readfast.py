"""The reader's fast path (``SampleReader._plain`` → ``Sample.trusted``) gives exactly what
the full path (canonicalize, cells, layouts, pydantic validation) gives: the same samples
(fields, fields set, the validation-time hash), the same content hashes, the same row
errors and notes, on odd rows. Each source is read twice — as the reader reads it, and with
the fast path switched off — and every item is compared."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest

from unified.data.io import SampleReader, read_samples
from unified.data.rowerror import RowError
from unified.sample import Sample, SampleError, plain_fields

NFC, NFD = "caf\u00e9", "cafe\u0301"
BASE = {"user_input": "q?", "response": "r.", "retrieved_ids": ["d1", "d2"], "relevant_ids": ["d2"]}

ODD_ROWS: list[Any] = [
    {**BASE, "id": "plain"},
    {"id": NFC, "user_input": "ünïcödé ✓ 中文", "response": "😀", "retrieved_contexts": ["ĉ", "ĉ2"]},
    {"id": NFD, "user_input": "ünïcödé ✓ 中文", "response": "😀 other", "retrieved_contexts": ["ĉ"]},
    {"id": "only-id"},  # no content field
    {"id": "blankq", "user_input": "   ", "response": "r"},
    {"id": "empty-q", "user_input": "", "response": "r"},
    {"id": "", "response": "id from hash"},
    {"response": "no id key", "metadata": {}},
    {"id": "ids-str", "retrieved_ids": "d1"},
    {"id": "ids-json-str", "retrieved_ids": '["d1", "d2"]'},
    {"id": "ids-int", "retrieved_ids": [1, 2], "relevant_ids": [2]},
    {"id": 5, "response": "number id"},
    {"id": "q-int", "user_input": 3, "response": "r"},
    {"id": "q-bool", "response": True},
    {"id": "extra", "response": "x", "foo": 1, "bar": {"b": [1]}},
    {"id": "nested", "response": "x", "metadata": {"a": {"b": [1, {"c": 2.5}]}, "t": None}},
    {"id": "meta-ours", "response": "x", "metadata": {"unified": {"reference": "kept"}}},
    {"id": "meta-str", "response": "x", "metadata": '{"a": 1}'},
    {"id": "meta-list", "response": "x", "metadata": [1]},
    {"id": "grades-str", "relevant_ids": ["d1"], "graded_relevance": {"d1": "2"}},
    {"id": "grades-ok", "relevant_ids": ["d1"], "graded_relevance": {"d1": 2, "d2": 0.5, "d3": None}},
    {"id": "grades-empty", "response": "x", "graded_relevance": {}},
    {"id": "grades-huge", "graded_relevance": {"d1": 10**30}},
    {"id": "grades-big-float", "graded_relevance": {"d1": 1e300}},
    {"id": "grades-neg", "graded_relevance": {"d1": -101}},
    {"id": "grades-bool", "graded_relevance": {"d1": True}},
    # two faults: the full path names the field it checks first, and so must the short road
    {"id": "grades-then-ctx", "graded_relevance": {"d": "x"}, "retrieved_contexts": ["c", 1]},
    {"id": "grades-then-meta", "graded_relevance": {"d": "x"}, "response": "r", "metadata": [1]},
    {"id": "grades-then-ref", "graded_relevance": {"d": "x"}, "reference": [1]},
    {"id": "meta-huge-int", "response": "x", "metadata": {"n": 10**4000}},
    # a blank context is a row error naming it, on both roads (unified.sample.blank_context)
    {"id": "ctx-blank", "response": "r", "retrieved_contexts": [""]},
    {"id": "ctx-space", "response": "r", "retrieved_contexts": ["  "]},
    {"id": "ctx-blank-among", "response": "r", "retrieved_contexts": ["a", "\t\n", "b"]},
    {"id": "refctx-blank", "response": "r", "reference_contexts": ["a", ""]},
    {"id": "ctx-obj-blank", "response": "r", "retrieved_contexts": [{"doc_id": "x", "text": " "}]},
    {"id": "ctx-alias-blank", "answer": "r", "contexts": ["a", ""]},
    {"id": "ctx-none-found", "response": "r", "retrieved_contexts": [], "retrieved_ids": []},
    {"id": "ctx-unicode-space", "response": "r", "retrieved_contexts": ["\u3000\u00a0"]},
    {"id": "grades-then-blank", "graded_relevance": {"d": "x"}, "retrieved_contexts": [""]},
    {"id": "blank-then-surrogate", "response": "bad \udc9c", "retrieved_contexts": [""]},
    {"question": "alias q", "answer": "alias a", "contexts": ["c"], "ground_truth": "g", "sample_id": "aliases"},
    {"id": "twice-same", "question": "q", "user_input": "q", "response": "r"},
    {"id": "twice-diff", "question": "q1", "user_input": "q2", "response": "r"},
    {"id": "dingo-ctx", "context": ["a"], "response": "r"},
    {"id": "ctx-objects", "retrieved_contexts": [{"doc_id": "x", "text": "t"}], "response": "r"},
    {"id": "ref-list", "reference": ["a", "b"], "response": "r"},
    {"id": "nulls", "user_input": None, "response": "r", "reference": None, "retrieved_ids": None},
    {"response": "r.", "user_input": "q?", "retrieved_ids": ["d1", "d2"], "relevant_ids": ["d2"], "id": "reordered"},
    {**BASE, "id": "plain"},  # a repeated row: plain#2
    {**BASE, "id": "plain", "response": "other"},  # a repeated id with other content
    {**BASE},  # no id, twice: the hash, then hash#2
    {**BASE},
    {"id": "plain#2", **{k: v for k, v in BASE.items() if k != "id"}},
    {"id": "lone\ud800", "response": "r"},
    {"id": "sur-text", "response": "bad \udc9c byte"},
    {"id": "sur-meta-key", "response": "r", "metadata": {"k\ud801": 1}},
    {"id": "deep", "response": "r", "metadata": {"a": json.loads("[" * 70 + "]" * 70)}},
    {"id": "nan-meta", "response": "r", "metadata": {"x": math.nan}},
    {"id": "nan-grade", "graded_relevance": {"d1": math.nan}},
    [1, 2],
    "a string row",
    {"id": "last", "retrieval_context": ["a"], "context": ["b"], "response": "r"},
]

# rows a file cannot hold (JSON has no tuples, int keys or bytes): only for in-memory sources
MEMORY_ONLY: list[Any] = [
    {"id": "tuple-ids", "retrieved_ids": ("d1",), "response": "r"},
    {"id": "meta-int-key", "response": "r", "metadata": {1: "a"}},
    {"id": "bytes", "response": b"r"},
    {"id": "huge-meta", "response": "r", "metadata": {"n": 2**20_000}},
    {"id": "inf-grade", "graded_relevance": {"d1": math.inf}},
]


def _read(source: Any, fast: bool, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[list[Any], SampleReader]:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(SampleReader, "_plain", lambda self, raw: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            reader = read_samples(source, **options)
            items = []
            for item in reader:
                hashed = reader.content_hash(item) if isinstance(item, Sample) else None
                items.append((item, hashed))
    return items, reader


def _same(fast: list[Any], slow: list[Any]) -> None:
    assert len(fast) == len(slow)
    for (a, ha), (b, hb) in zip(fast, slow):
        assert type(a) is type(b), (a, b)
        if isinstance(a, RowError):
            assert a == b
            continue
        assert a.__dict__ == b.__dict__
        assert list(a.__dict__) == list(b.__dict__)  # the field order a dump follows
        assert a.model_fields_set == b.model_fields_set
        assert a.__pydantic_private__ == b.__pydantic_private__
        assert ha == hb == a.content_hash()
        assert a.model_dump_json() == b.model_dump_json()


def _compare(source: Any, monkeypatch: pytest.MonkeyPatch, **options: Any) -> list[Any]:
    fast, fast_reader = _read(source, True, monkeypatch, **options)
    slow, slow_reader = _read(source, False, monkeypatch, **options)
    _same(fast, slow)
    assert fast_reader.counts == slow_reader.counts
    assert fast_reader.notes == slow_reader.notes
    return [item for item, _ in fast]


def _jsonl(path: Path, rows: list[Any]) -> Path:
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        f.write("{not json\n")
    return path


def test_odd_rows_in_a_file_read_alike(tmp_path, monkeypatch):
    items = _compare(_jsonl(tmp_path / "odd.jsonl", ODD_ROWS), monkeypatch)
    errors = [i for i in items if isinstance(i, RowError)]
    samples = [i for i in items if isinstance(i, Sample)]
    # the comparison is no tautology: both kinds of rows are there, and the fast path ran
    assert len(errors) >= 15 and len(samples) >= 20
    assert {s.id for s in samples} >= {"plain", "plain#2", NFC, NFD, "aliases", "ctx-none-found"}
    blank = {e.field for e in errors if e.field and "a blank context" in e.reason}
    assert blank == {"retrieved_contexts[0]", "retrieved_contexts[1]", "reference_contexts[1]"}
    # 7 of the 9 blank-context rows: grades are checked first (on both roads), and a file
    # line with a bad byte is refused before it is a record
    assert sum("a blank context" in e.reason for e in errors) == 7


def test_odd_rows_in_memory_read_alike(monkeypatch):
    _compare(ODD_ROWS + MEMORY_ONLY, monkeypatch)


def test_a_detected_layout_stays_for_the_rows_after_it(tmp_path, monkeypatch):
    deepeval = {"input": "q", "actual_output": "a", "retrieval_context": ["c"], "name": "n1"}
    rows = [{**BASE, "id": "before"}, deepeval, {**BASE, "id": "after", "name": "n"}, {"name": "n1", **BASE}]
    _compare(_jsonl(tmp_path / "layout.jsonl", rows), monkeypatch)


@pytest.mark.parametrize(
    "options",
    [{"mapping": "q=user_input"}, {"labels": "faithfulness=ok"}, {"layout": "unified"}, {"layout": "ragas"}],
)
def test_options_read_alike(tmp_path, monkeypatch, options):
    rows = [{**BASE, "id": "a", "q": "mapped?", "ok": 1}, {**BASE, "id": "b"}, {"id": "c", "q": "", "response": "r"}]
    _compare(_jsonl(tmp_path / "opts.jsonl", rows), monkeypatch, **options)


def test_the_fast_path_is_taken_for_plain_rows_only(monkeypatch):
    calls: list[bool] = []
    real = Sample.trusted.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Sample], fields: dict[str, Any]) -> Sample:
        calls.append(True)
        return real(cls, fields)

    monkeypatch.setattr(Sample, "trusted", classmethod(spy))
    list(read_samples([{**BASE, "id": "a"}, {**BASE, "id": "b", "extra": 1}, {**BASE, "id": 3}]))
    assert len(calls) == 1


def test_plain_fields_refuses_what_it_cannot_copy():
    targets = {"id": "id", "retrieved_ids": "retrieved_ids", "metadata": "metadata"}
    assert plain_fields({"id": "a", "retrieved_ids": ["d"]}, targets) == {"id": "a", "retrieved_ids": ["d"]}
    assert plain_fields({"id": "a", "retrieved_ids": ["d", 1]}, targets) is None
    assert plain_fields({"id": 1}, targets) is None
    assert plain_fields({"id": "a", "metadata": {}}, targets) == {"id": "a"}
    with pytest.raises(SampleError, match="graded_relevance.d"):
        plain_fields({"g": {"d": 1000}}, {"g": "graded_relevance"})
