"""A name given twice in one header or one JSON object: the last used to win without a
word (the first column's or key's value never read). A header is the whole file's fault
(one line, exit 2, as an unreadable file); a JSON object is its row's (a row error naming
the key, the other rows read)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from unified.cli.app import app
from unified.data.io import load_samples, read_samples

runner = CliRunner()


def _csv(path, sep=","):
    path.write_text(
        sep.join(["id", "user_input", "response", "response"]) + "\n" + sep.join(["1", "q?", "a", "b"]) + "\n"
    )
    return path


@pytest.mark.parametrize("name, sep", [("dup.csv", ","), ("dup.tsv", "\t")])
def test_a_header_naming_a_column_twice_is_a_file_error(tmp_path, name, sep):
    path = _csv(tmp_path / name, sep)
    with pytest.raises(
        ValueError, match=rf"{name}:1: column 'response' appears twice in the header \(columns 3 and 4\)"
    ):
        load_samples(path)
    for args in (["validate", str(path)], ["run", str(path), "--metrics", "mrr", "--out", str(tmp_path / "r")]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, r.output
        assert "column 'response' appears twice" in r.output and "Traceback" not in r.output
    scores = tmp_path / "r" / "scores.jsonl"
    assert not scores.exists() or not scores.read_text().strip()  # nothing scored from half a header


def test_a_parquet_schema_or_dataframe_naming_a_column_twice_is_an_error(tmp_path):
    table = pa.table([pa.array(["a"]), pa.array(["b"]), pa.array(["q?"])], names=["response", "response", "user_input"])
    pq.write_table(table, tmp_path / "dup.parquet")
    with pytest.raises(ValueError, match=r"dup.parquet: column 'response' appears twice \(?"):
        load_samples(tmp_path / "dup.parquet")
    df = pd.DataFrame([["q?", "a", "b"]], columns=["user_input", "response", "response"])
    with pytest.raises(
        ValueError, match=r"DataFrame: column 'response' appears twice in the header \(columns 2 and 3\)"
    ):
        load_samples(df)


def test_blank_header_names_are_no_duplicates(tmp_path):
    # spreadsheets export trailing empty columns: "a,b,," is a header with two blank names
    path = tmp_path / "trailing.csv"
    path.write_text("id,response,,\n1,a,,\n")
    samples, errors = load_samples(path)
    assert [s.response for s in samples] == ["a"] and not errors


def test_a_json_object_naming_a_key_twice_is_a_row_error(tmp_path):
    jsonl = tmp_path / "dup.jsonl"
    jsonl.write_text(
        '{"id": "1", "user_input": "q?", "response": "a", "response": "b"}\n'
        '{"id": "2", "response": "r", "metadata": {"k": 1, "k": 2}}\n'
        '{"id": "3", "response": "fine"}\n'
    )
    listed = tmp_path / "dup.json"
    listed.write_text('[{"id": "1", "response": "a", "response": "b"},\n {"id": "3", "response": "fine"}]')
    for path, bad_keys in ((jsonl, ["response", "k"]), (listed, ["response"])):
        reader = read_samples(path)
        items = list(reader)
        assert [s.id for s in items if not hasattr(s, "reason")] == ["3"]  # the others are read
        errors = [e for e in items if hasattr(e, "reason")]
        assert [e.field for e in errors] == bad_keys
        assert "appears twice in one object; the last would silently win" in errors[0].reason
    r = runner.invoke(app, ["validate", str(jsonl)])
    assert r.exit_code == 1 and "dup.jsonl:1: field 'response': key 'response' appears twice" in r.output
