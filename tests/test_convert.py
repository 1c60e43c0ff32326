"""Migration round trips: ours -> framework format -> ours, through records, files,
DataFrames and the real ragas / deepeval objects."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from pathlib import Path

import pytest

from unified.adapters.catalog import metric_name_table
from unified.data.convert import (
    FORMATS,
    FRAMEWORK_FORMATS,
    LAYOUTS,
    convert_file,
    export_records,
    from_pandas,
    from_ragas_v1,
    import_records,
    to_deepeval_goldens,
    to_pandas,
    to_ragas_v1,
)
from unified.data.io import load_samples, write_samples
from unified.sample import Sample

DOC = Path(__file__).resolve().parents[1] / "docs" / "metric_names.md"
HAS_RAGAS = importlib.util.find_spec("ragas") is not None
HAS_DEEPEVAL = importlib.util.find_spec("deepeval") is not None


def _samples() -> list[Sample]:
    return [
        Sample(
            id="full-1",
            user_input="Who wrote Dune?",
            response="Frank Herbert wrote Dune.",
            retrieved_contexts=["Dune is a 1965 novel by Frank Herbert.", "Arrakis is a desert."],
            reference="Frank Herbert",
            reference_contexts=["Dune (1965), Frank Herbert."],
            retrieved_ids=["d1", "d7"],
            relevant_ids=["d1"],
            graded_relevance={"d1": 2.0},
            metadata={"topic": "books", "labels": {"faithfulness": 1}},
        ),
        Sample(
            id="short-2",
            user_input="Capital of France?",
            response="Paris.",
            retrieved_contexts=["Paris is the capital of France."],
        ),
        Sample(user_input="Unanswered question with no retrieval?"),
    ]


def _fields_of(s: Sample, keep: set[str]) -> dict:
    return {k: v for k, v in s.model_dump(exclude_none=True).items() if k in keep}


def _dump(items) -> list[dict]:
    return [s.model_dump() for s in items]


@pytest.mark.parametrize("fmt", FRAMEWORK_FORMATS)
def test_records_round_trip(fmt):
    # issue 11: every layout has an id and a metadata slot, so nothing is lost, ids included
    originals = _samples()
    records, notes = export_records(originals, fmt)
    back, errors = import_records(records, fmt)
    assert errors == []
    assert _dump(back) == _dump(originals)
    lay = LAYOUTS[fmt]
    # the framework's own names are used, and every field without a column has a note
    assert lay.fields["user_input"] in records[0] and records[0][lay.id_field] == "full-1"
    assert not any("dropped" in n for n in notes)
    no_column = sorted(
        {"reference", "retrieved_ids", "relevant_ids", "graded_relevance", "reference_contexts"} - set(lay.fields)
    )
    assert sorted(n.split("'")[1] for n in notes) == no_column


def test_deepeval_context_is_the_reference_context_not_the_retrieved_one():
    (rec,), _ = export_records(_samples()[:1], "deepeval")
    assert rec["retrieval_context"] == _samples()[0].retrieved_contexts
    assert rec["context"] == _samples()[0].reference_contexts
    assert rec["name"] == "full-1"
    assert rec["additional_metadata"]["unified"]["retrieved_ids"] == ["d1", "d7"]


def test_moved_fields_are_logged_one_line_per_field(caplog):
    with caplog.at_level(logging.WARNING, logger="unified.data.convert"):
        to_ragas_v1(_samples())
    lines = [r.getMessage() for r in caplog.records]
    moved = sorted(l.split("'")[1] for l in lines)
    assert moved == sorted({"retrieved_ids", "relevant_ids", "graded_relevance", "reference_contexts"})
    assert all("kept in metadata['unified'] (1 rows)" in l for l in lines)


@pytest.mark.parametrize("to", FORMATS)
def test_convert_file_round_trip(tmp_path, to):
    src = tmp_path / "ours.jsonl"
    write_samples(_samples(), src)
    suffix = {"csv": ".csv", "tsv": ".tsv", "parquet": ".parquet", "json": ".json"}.get(to, ".jsonl")
    dst = tmp_path / f"out_{to}{suffix}"
    n, errors = convert_file(src, dst, to)
    assert (n, errors) == (3, [])
    # issue 11: read back without flags (the layout is recognised), ids and all
    back, errs = load_samples(dst)
    assert errs == [] and _dump(back) == _dump(_samples())
    if to in FRAMEWORK_FORMATS:
        forced, errs = load_samples(dst, layout=to)  # --from gives the same
        assert errs == [] and _dump(forced) == _dump(_samples())
        again = tmp_path / "again.jsonl"  # and back to ours through convert_file itself
        assert convert_file(dst, again, "jsonl", src_format=to) == (3, [])
        assert _dump(load_samples(again)[0]) == _dump(_samples())


def test_convert_file_skips_and_reports_bad_rows(tmp_path):
    src = tmp_path / "mixed.jsonl"
    src.write_text(
        json.dumps({"question": "ok?", "answer": "yes"})
        + "\n"
        + json.dumps({"question": "bad", "contexts": "not a list"})
        + "\n",
        encoding="utf-8",
    )
    n, errors = convert_file(src, tmp_path / "out.jsonl", "dingo")
    assert n == 1 and len(errors) == 1
    assert errors[0].row == 2 and errors[0].field == "retrieved_contexts"


def test_framework_file_bad_row_names_row_and_field(tmp_path):
    src = tmp_path / "goldens.json"
    src.write_text(
        json.dumps(
            [
                {"input": "q1", "actual_output": "a"},
                {"input": "q2", "retrieval_context": "one string"},
                {"actual_output": "no input"},
            ]
        ),
        encoding="utf-8",
    )
    n, errors = convert_file(src, tmp_path / "ours.jsonl", "jsonl", src_format="deepeval")
    assert n == 2  # a golden without input is a sample without a question (issue 23)
    assert [(e.row, e.field) for e in errors] == [(2, "retrieval_context")]
    kept = [json.loads(line) for line in (tmp_path / "ours.jsonl").read_text().splitlines()]
    assert "user_input" not in kept[1] and kept[1]["response"] == "no input"


@pytest.mark.parametrize("fmt", ["ragas_v1", "deepeval", "dingo"])
def test_pandas_round_trip_in_framework_layout(fmt):
    df = to_pandas(_samples(), fmt)
    assert LAYOUTS[fmt].fields["response"] in df.columns
    back, errors = from_pandas(df, fmt)
    assert errors == []
    assert _dump(back) == _dump(_samples())


def test_pandas_round_trip_in_our_columns():
    back, errors = from_pandas(to_pandas(_samples()))
    assert errors == [] and back == _samples()


def test_ragas_v1_as_hf_dataset_round_trip():
    ds = to_ragas_v1(_samples(), as_dataset=True)
    assert {"question", "answer", "contexts", "ground_truth", "id"} <= set(ds.column_names)
    back = from_ragas_v1(ds)
    assert _dump(back) == _dump(_samples())


@pytest.fixture
def quiet_frameworks(tmp_path_factory, monkeypatch):
    # ragas writes $XDG_DATA_HOME/ragas/uuid.json even with tracking off: keep it in tmp
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg")))
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))  # deepeval must write nothing here


@pytest.mark.ragas
@pytest.mark.skipif(not HAS_RAGAS, reason="ragas not installed")
def test_ragas_evaluation_dataset_round_trip(quiet_frameworks, tmp_path):
    from ragas import EvaluationDataset, SingleTurnSample

    from unified.adapters.ragas.objects import from_ragas_dataset, to_ragas_dataset

    ds = to_ragas_dataset(_samples())
    assert isinstance(ds, EvaluationDataset) and isinstance(ds.samples[0], SingleTurnSample)
    first = ds.samples[0]
    assert first.retrieved_context_ids == ["d1", "d7"] and first.reference == "Frank Herbert"
    back = from_ragas_dataset(ds)
    # a SingleTurnSample has no id, metadata or graded relevance: the rest comes back
    keep = set(LAYOUTS["ragas"].fields)
    assert [_fields_of(s, keep) for s in back] == [_fields_of(s, keep) for s in _samples()]
    # ragas reads the file convert_file writes
    path = tmp_path / "ragas.jsonl"
    convert_file(_write(tmp_path), path, "ragas")
    loaded = EvaluationDataset.from_jsonl(path)
    assert [s.to_dict() for s in loaded.samples] == [s.to_dict() for s in ds.samples]
    assert os.listdir(Path.cwd()) == []


@pytest.mark.deepeval
@pytest.mark.skipif(not HAS_DEEPEVAL, reason="deepeval not installed")
def test_deepeval_test_cases_and_goldens_round_trip(quiet_frameworks, tmp_path):
    from deepeval.dataset import EvaluationDataset
    from deepeval.test_case import LLMTestCase

    from unified.adapters.deepeval.objects import from_deepeval_test_cases, to_deepeval_test_cases

    cases = to_deepeval_test_cases(_samples())
    assert all(isinstance(c, LLMTestCase) for c in cases)
    assert cases[0].context == ["Dune (1965), Frank Herbert."] and cases[0].name == "full-1"
    back = from_deepeval_test_cases(cases)
    assert [s.model_dump() for s in back] == [s.model_dump() for s in _samples()]

    path = tmp_path / "goldens.json"
    convert_file(_write(tmp_path), path, "deepeval")
    assert json.loads(path.read_text()) == to_deepeval_goldens(_samples())
    ds = EvaluationDataset()
    ds.add_goldens_from_json_file(str(path))  # deepeval's own reader, default key names
    assert len(ds.goldens) == 3
    assert [s.model_dump() for s in from_deepeval_test_cases(ds.goldens)] == [s.model_dump() for s in _samples()]
    assert not (Path.cwd() / ".deepeval").exists()


def _write(tmp_path: Path) -> Path:
    src = tmp_path / "src.jsonl"
    write_samples(_samples(), src)
    return src


def test_metric_name_doc_matches_the_registry():
    table = metric_name_table()
    assert DOC.read_text(encoding="utf-8").endswith("\n\n" + table)
    # the metrics page carries the same table; neither copy may drift from the registry
    assert table in (DOC.parent / "metrics.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().split(" ")[0].strip("`"): line for line in table.splitlines()[2:]}
    assert "`FaithfulnessMetric`" in rows["faithfulness"]
    assert "`ContextRelevance`" in rows["context_relevancy"]


@pytest.mark.parametrize(
    "to,name",
    [
        ("ragas", "out.csv"),
        ("dingo", "out.parquet"),
        ("csv", "out.jsonl"),
        ("jsonl", "out.csv"),
        ("parquet", "out.json"),
    ],
)
def test_convert_refuses_a_suffix_of_another_data_format(tmp_path, to, name):
    # `--to ragas out.csv` used to write JSONL into a file named .csv
    src = tmp_path / "src.jsonl"
    src.write_text(json.dumps({"id": "a", "user_input": "q", "response": "r"}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="name the output"):
        convert_file(src, tmp_path / name, to)
    assert not (tmp_path / name).exists()


@pytest.mark.deepeval
@pytest.mark.skipif(not HAS_DEEPEVAL, reason="deepeval not installed")
def test_convert_file_takes_framework_objects(quiet_frameworks, tmp_path):
    from unified.adapters.deepeval.objects import to_deepeval_test_cases

    cases = to_deepeval_test_cases(_samples())
    n, errors = convert_file(cases, tmp_path / "ragas.jsonl", "ragas")
    assert (n, errors) == (3, [])
    assert _dump(load_samples(tmp_path / "ragas.jsonl")[0]) == _dump(_samples())
