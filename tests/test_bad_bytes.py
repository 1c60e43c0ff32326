"""Bad bytes are bad rows (issue 10, item 6): undecodable bytes, lone surrogates, over-deep
nesting and numbers out of range become one-line RowErrors with file, line and field; the
rest of the file is read; `validate` reports exactly what a run rejects. And CSV written
here never carries a live spreadsheet formula (item 8), yet reads back exactly."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from support import as_read
from typer.testing import CliRunner

from unified.cli.app import app
from unified.data.io import RowError, load_samples, read_samples, validate_source, write_samples
from unified.sample import MAX_DEPTH, MAX_GRADE, Sample, SampleError

runner = CliRunner()


def _row(i: int, **extra) -> dict:
    return {
        "id": f"r{i}",
        "user_input": f"question {i}?",
        "retrieved_ids": ["d1", "d2"],
        "relevant_ids": ["d2"],
        **extra,
    }


def _jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _good(i: int, **extra) -> bytes:
    return json.dumps(_row(i, **extra)).encode()


def _run_rejects(tmp_path: Path, path: Path) -> tuple[list[dict], int]:
    """The row-error lines and the number of scored tasks of a real `run` on ``path``."""
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(path), "--metrics", "mrr", "--out", str(out), "-q"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    lines = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    bad = [d for d in lines if d["error"] and d["sample_id"].startswith("row:")]
    (out / "samples.jsonl").read_text(encoding="utf-8")  # written, and valid UTF-8
    return bad, sum(1 for d in lines if d["error"] is None)


def _only_error(errors: list[RowError]) -> RowError:
    assert len(errors) == 1, errors
    assert "\n" not in str(errors[0])
    return errors[0]


# ---------------------------------------------------------------- lone surrogates


@pytest.mark.parametrize(
    "where,field",
    [
        ('"metadata": {"note": "bad \\ud800 text"}', "metadata.note"),
        ('"response": "\\udfff"', "response"),
        ('"retrieved_contexts": ["ok", "x\\ud834"]', "retrieved_contexts[1]"),
        ('"metadata": {"k\\ud800": 1}', "metadata.k\\ud800"),
    ],
)
def test_lone_surrogate_is_a_row_error_in_validate_and_run(tmp_path, where, field):
    bad_line = ('{"id": "r3", "user_input": "question 3?", ' + where + "}").encode()
    path = _jsonl(tmp_path / "s.jsonl", [_good(1), _good(2), bad_line, _good(4)])
    ok, errors, _ = validate_source(path)
    e = _only_error(errors)
    assert (ok, e.source, e.row, e.field) == (3, "s.jsonl", 3, field)
    assert "lone surrogate" in e.reason
    json.dumps(str(e)).encode("utf-8")  # the error itself is writable
    bad, scored = _run_rejects(tmp_path, path)
    assert [d["sample_id"] for d in bad] == ["row:3"] and scored == 3


def test_a_sample_cannot_hold_a_lone_surrogate():
    with pytest.raises(SampleError) as ei:
        Sample.model_validate({"user_input": "q?", "metadata": {"a": ["\ud800"]}})
    assert ei.value.field == "metadata.a[0]"
    (err,) = list(read_samples([{"question": "q\udc80?"}]))
    assert isinstance(err, RowError) and err.field == "user_input"


# ---------------------------------------------------------------- undecodable bytes


def test_latin1_byte_in_row_11_of_20_jsonl(tmp_path):
    lines = [_good(i) for i in range(1, 21)]
    lines[10] = _good(11).replace(b"question 11?", b"caf\xe9 11?")
    path = _jsonl(tmp_path / "latin.jsonl", lines)
    good, errors = load_samples(path)
    e = _only_error(errors)
    assert len(good) == 19 and (e.source, e.row, e.field) == ("latin.jsonl", 11, "user_input")
    assert "byte 0xE9" in e.reason and "not UTF-8" in e.reason
    assert validate_source(path)[1] == errors
    bad, scored = _run_rejects(tmp_path, path)
    assert [d["sample_id"] for d in bad] == ["row:11"] and scored == 19


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_latin1_byte_in_a_table(tmp_path, fmt):
    sep = "," if fmt == "csv" else "\t"
    rows = [sep.join(["id", "question", "answer"])] + [sep.join([f"r{i}", f"q{i}?", f"a{i}"]) for i in range(1, 21)]
    data = ("\n".join(rows) + "\n").encode().replace(b"a11", b"r\xe9ponse")
    path = tmp_path / f"t.{fmt}"
    path.write_bytes(data)
    good, errors = load_samples(path)
    e = _only_error(errors)
    assert len(good) == 19 and (e.row, e.field) == (12, "answer")  # line 12: the header is line 1
    assert "byte 0xE9" in e.reason


def test_latin1_byte_in_a_json_list(tmp_path):
    rows = [json.dumps(_row(i)) for i in range(1, 6)]
    rows[2] = rows[2].replace("question 3?", "na\u00efve 3?")
    path = tmp_path / "l.json"
    path.write_bytes(("[" + ",\n".join(rows) + "]").encode("latin-1"))
    good, errors = load_samples(path)
    e = _only_error(errors)
    assert len(good) == 4 and (e.row, e.field) == (3, "user_input") and "byte 0xEF" in e.reason


# ---------------------------------------------------------------- over-deep nesting


def _deep(n: int) -> bytes:
    return ('{"id": "deep", "user_input": "q?", "metadata": {"x": ' + "[" * n + "]" * n + "}}").encode()


@pytest.mark.parametrize("depth", [100_000, 2 * MAX_DEPTH])
def test_deep_nesting_jsonl(tmp_path, depth):
    lines = [_good(1), _good(2), _good(3), _deep(depth), _good(5), _good(6), _good(7)]
    path = _jsonl(tmp_path / "deep.jsonl", lines)
    good, errors = load_samples(path)
    e = _only_error(errors)
    assert len(good) == 6 and e.row == 4 and e.field.startswith("metadata")
    assert f"nested more than {MAX_DEPTH} levels deep" in e.reason
    r = runner.invoke(app, ["validate", str(path)])
    assert r.exit_code == 1 and "deep.jsonl:4: field 'metadata" in r.output and "Traceback" not in r.output
    bad, scored = _run_rejects(tmp_path, path)
    assert [d["sample_id"] for d in bad] == ["row:4"] and scored == 6


def test_deep_nesting_in_a_json_list_and_a_csv_cell(tmp_path):
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" + _good(1) + b",\n" + _deep(100_000) + b",\n" + _good(3) + b"]")
    good, errors = load_samples(path)
    e = _only_error(errors)
    assert [s.id for s in good] == ["r1", "r3"] and (e.row, e.field) == (2, "metadata")
    cell = "{" + '"a": ' * 0 + '"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    table = tmp_path / "deep.csv"
    with table.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["question", "metadata"])
        w.writerows([["q1?", "{}"], ["q2?", cell], ["q3?", ""]])
    good, errors = load_samples(table)
    e = _only_error(errors)
    assert len(good) == 2 and (e.row, e.field) == (3, "metadata") and "too deep" in e.reason


# ---------------------------------------------------------------- numbers out of range


@pytest.mark.parametrize(
    "grade,word",
    [("1e308", "out of range"), ("1e999", "finite"), ("-101", "out of range"), ("1" + "0" * 400, "out of range")],
)
def test_graded_relevance_out_of_range(tmp_path, grade, word):
    bad = (
        '{"id": "g", "user_input": "q?", "retrieved_ids": ["d1"], "graded_relevance": {"d1": ' + grade + "}}"
    ).encode()
    path = _jsonl(tmp_path / "g.jsonl", [_good(1), bad, _good(3)])
    good, errors = load_samples(path)
    e = _only_error(errors)
    assert len(good) == 2 and (e.row, e.field) == (2, "graded_relevance.d1") and word in e.reason
    assert validate_source(path)[1] == errors


def test_grades_at_the_limit_keep_ndcg_finite():
    from unified.adapters.native.retrieval import ndcg_at_k

    s = Sample(user_input="q?", retrieved_ids=["a", "b"], graded_relevance={"a": MAX_GRADE, "b": -MAX_GRADE})
    value = ndcg_at_k(s.retrieved_ids, s.graded_relevance)
    assert math.isfinite(value) and value == pytest.approx(1.0)
    with pytest.raises(Exception, match="out of range"):
        Sample(user_input="q?", graded_relevance={"a": 1e308})  # direct construction too


def test_non_finite_numbers_anywhere_are_row_errors(tmp_path):
    path = _jsonl(
        tmp_path / "n.jsonl",
        [
            _good(1),
            b'{"user_input": "q?", "metadata": {"score": NaN}}',
            b'{"user_input": "q?", "metadata": {"w": [1, Infinity]}}',
        ],
    )
    good, errors = load_samples(path)
    assert len(good) == 1 and [(e.row, e.field) for e in errors] == [(2, "metadata.score"), (3, "metadata.w[1]")]


# ---------------------------------------------------------------- CSV formulas

FORMULAS = [
    '=HYPERLINK("http://evil","click")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\tTAB first",
    "\rCR first",
    "'=literal quote then equals",
    "''double quote",
    "'plain quote",
    "=",
    "safe text",
]


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_written_tables_carry_no_live_formula_and_read_back_exactly(tmp_path, fmt):
    samples = [
        Sample(
            id=text if i % 2 else f"-{i}",
            user_input=f"q{i}?",
            response=text,
            reference=text,
            retrieved_contexts=[text],
            metadata={"note": text},
        )
        for i, text in enumerate(FORMULAS)
    ]
    path = tmp_path / f"f.{fmt}"
    write_samples(samples, path)
    with path.open(newline="", encoding="utf-8") as f:
        cells = [c for row in csv.reader(f, delimiter="," if fmt == "csv" else "\t") for c in row]
    live = [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert live == []
    assert '\'=HYPERLINK("http://evil","click")' in cells and "''=literal quote then equals" in cells
    assert "'plain quote" in cells  # nothing to neutralise: written as is
    back, errors = load_samples(path)
    assert errors == [] and [s.model_dump() for s in back] == [s.model_dump() for s in samples]
