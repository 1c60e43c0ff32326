"""Interop at first contact: the frameworks' own files (../shared/data/interop, read as they
are) load through the CLI with the flags a user would write, and the frameworks' own
objects (real RAGAS and DeepEval classes) load and evaluate."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from support import as_read
from typer.testing import CliRunner

from unified.cli.app import app
from unified.data.io import RowError, load_samples, read_samples, write_samples
from unified.sample import Sample

INTEROP = Path(__file__).resolve().parents[2] / "shared" / "data" / "interop"
if not INTEROP.is_dir():  # a worktree sits one level deeper than the main checkout
    INTEROP = Path("/work/shared/data/interop")
HAS_RAGAS = importlib.util.find_spec("ragas") is not None
HAS_DEEPEVAL = importlib.util.find_spec("deepeval") is not None
runner = CliRunner()
pytestmark = pytest.mark.filterwarnings("ignore:unknown field")

ARES = [
    "--map",
    "Query=user_input,Document=retrieved_contexts,Answer=response",
    "--label",
    "context_relevancy=Context_Relevance_Label",
    "--label",
    "answer_relevancy=Answer_Relevance_Label",
    "--label",
    "faithfulness=Answer_Faithfulness_Label",
]

# file (source named in INTEROP/README.md), flags a user would write, rows, (row index, path, value)
FILES = [
    # stanford-futuredata/ARES few-shot judge-scoring TSVs: Query/Document/Answer + [[Yes]]/[[No]]
    (
        "ares/nq_few_shot_prompt_for_judge_scoring.tsv",
        ARES,
        7,
        (3, "metadata.labels", {"context_relevancy": 1, "answer_relevancy": 0, "faithfulness": 0}),
    ),
    ("ares/fever_few_shot_prompt_for_judge_scoring.tsv", ARES, 7, (0, "response", "REFUTES")),
    # confident-ai/deepeval test goldens: `|`-joined list cells in the CSV; `name` is the id
    ("deepeval/goldens.csv", [], 15, (0, "retrieved_contexts", ["Mountain heights list", "Moutain list"])),
    ("deepeval/goldens.json", [], 15, (14, "id", "Name 15")),
    # MigoXLab/dingo test data: RAGAS 0.2 names with `reference` a one-element list; Dingo names
    ("dingo/fiqa.jsonl", [], 30, (0, "reference", "Have the check reissued to the proper payee.")),
    ("dingo/hallucination_test.jsonl", [], 3, (0, "id", "1")),
    ("dingo/ragflow_eval_data_50.jsonl", [], 50, (0, "metadata.status", "success")),
    # explodinggradients/ragas examples: question/expected_answer and a blank trailing column
    (
        "ragas/hf_doc_qa_eval.csv",
        ["--map", "expected_answer=reference"],
        66,
        (0, "reference", "x86_64-unknown-linux-musl"),
    ),
    (
        "ragas/sample_fiqa_data.json",
        [],
        3,
        (1, "user_input", "What is the difference between a mutual fund and an ETF?"),
    ),
    # truera/trulens benchmark golden sets: query / expected_response / expected_score (0-1)
    (
        "trulens/context_relevance_golden_set.json",
        ["--map", "expected_response=retrieved_contexts", "--label", "context_relevancy=expected_score"],
        15,
        (1, "metadata.labels.context_relevancy", 0.4),
    ),
    (
        "trulens/answer_relevance_golden_set.json",
        ["--map", "expected_response=response", "--label", "answer_relevancy=expected_score"],
        17,
        (9, "metadata.labels.answer_relevancy", 1),
    ),
]

needs_interop = pytest.mark.skipif(not INTEROP.is_dir(), reason="../shared/data/interop is absent")


def _get(record: dict, path: str):
    for part in path.split("."):
        record = record[part]
    return record


@needs_interop
@pytest.mark.parametrize("name,flags,rows,check", FILES, ids=[f[0] for f in FILES])
def test_interop_file_loads_through_the_cli(tmp_path, name, flags, rows, check):
    path = INTEROP / name
    r = runner.invoke(app, ["validate", str(path), *flags])
    assert r.exit_code == 0, r.output
    assert f"{rows} ok, 0 bad row(s)" in r.output
    assert f"{rows} row(s) read = {rows} sample(s) + 0 rejected" in r.output
    # the same flags through `convert`: the rows as a run reads them, one field checked
    out = tmp_path / "ours.jsonl"
    r = runner.invoke(app, ["convert", str(path), str(out), "--to", "jsonl", *flags])
    assert r.exit_code == 0, r.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == rows
    index, field, value = check
    got = _get(records[index], field)
    assert got == value or (isinstance(got, str) and got.startswith(value))


@needs_interop
def test_interop_details_that_matter():
    # fiqa: the one-element `reference` list becomes its string; the list is kept
    fiqa, _ = load_samples(INTEROP / "dingo/fiqa.jsonl")
    assert fiqa[0].reference == fiqa[0].metadata["reference_list"][0]
    # DeepEval: `context` is the ideal context; rows 10 and 15 share content, not names
    goldens, _ = load_samples(INTEROP / "deepeval/goldens.json")
    assert goldens[0].reference_contexts == ["Geography", "Mountains"]
    assert goldens[9].content_hash() == goldens[14].content_hash()
    assert (goldens[9].id, goldens[14].id) == ("Name 10", "Name 15")
    csv_goldens, _ = load_samples(INTEROP / "deepeval/goldens.csv")
    assert [s.model_dump(exclude={"metadata"}) for s in csv_goldens] == [
        s.model_dump(exclude={"metadata"}) for s in goldens
    ]
    # TruLens read with no --map: rows 12/14, 13/15 and 16/17 have the same question and
    # nothing else a Sample knows; every row is kept, the repeats under <id>#2
    reader = read_samples(
        INTEROP / "trulens/answer_relevance_golden_set.json", labels="answer_relevancy=expected_score"
    )
    items = list(reader)
    assert items[14].id == items[12].id + "#2" and items[16].id == items[15].id + "#2"
    assert [items[12].metadata["labels"], items[14].metadata["labels"]] == [
        {"answer_relevancy": 0.8},
        {"answer_relevancy": 0.5},
    ]
    assert (reader.counts.rows, reader.counts.samples, reader.counts.renamed) == (17, 17, 3)
    assert reader.notes[-1].endswith("read as id '" + items[16].id + "'")


# ---------------------------------------------------------------- convert --to X, read back


def _ours() -> list[Sample]:
    return [
        Sample(
            id="q-1",
            user_input="Who wrote Dune?",
            response="Frank Herbert.",
            retrieved_contexts=["Dune is by Frank Herbert."],
            retrieved_ids=["d1"],
            relevant_ids=["d1"],
            reference="Frank Herbert",
            metadata={"team": "books"},
        ),
        Sample(
            id="q-2",
            user_input="Capital of France?",
            response="Paris.",
            retrieved_contexts=["Paris is the capital."],
            retrieved_ids=["d4"],
            relevant_ids=["d9"],
        ),
    ]


def test_convert_to_deepeval_then_validate_and_run_keep_ids(tmp_path):
    src, dst = tmp_path / "ours.jsonl", tmp_path / "goldens.json"
    write_samples(_ours(), src)
    assert runner.invoke(app, ["convert", str(src), str(dst), "--to", "deepeval"]).exit_code == 0
    assert [g["name"] for g in json.loads(dst.read_text())] == ["q-1", "q-2"]
    r = runner.invoke(app, ["validate", str(dst)])  # no --from: the layout is recognised
    assert r.exit_code == 0 and "2 ok, 0 bad row(s)" in r.output and "warning" not in r.output, r.output
    assert [s.model_dump() for s in load_samples(dst)[0]] == [s.model_dump() for s in _ours()]
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(dst), "--metrics", "mrr,precision@1", "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    scores = [as_read(json.loads(line)) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert sorted((d["sample_id"], d["metric"], d["value"]) for d in scores) == [
        ("q-1", "mrr", 10.0),
        ("q-1", "precision@1", 10.0),
        ("q-2", "mrr", 0.0),
        ("q-2", "precision@1", 0.0),
    ]


def test_from_flag_forces_a_layout(tmp_path):
    # a DeepEval file with none of DeepEval's tell-tale keys: `context` reads as Dingo's
    # retrieved context unless --from deepeval says otherwise
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"input": "q?", "context": ["ideal"], "name": "g1"}) + "\n", encoding="utf-8")
    (plain,), _ = load_samples(path)
    assert plain.retrieved_contexts == ["ideal"] and plain.id != "g1"
    (forced,), _ = load_samples(path, layout="deepeval")
    assert forced.reference_contexts == ["ideal"] and forced.retrieved_contexts is None and forced.id == "g1"
    r = runner.invoke(app, ["validate", str(path), "--from", "deepeval", "--metrics", "faithfulness"])
    # named as the file's layout names it, with ours beside it
    assert "field 'actual_output' (response) is missing" in " ".join(r.output.split()) and r.exit_code == 1
    r = runner.invoke(app, ["validate", str(path), "--from", "nosuch"])
    assert r.exit_code == 2 and "not a layout" in r.output


def test_list_sep_flag(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("question,contexts,relevant_ids\nq?,a;b|c,d1 ; d2\n", encoding="utf-8")
    (auto,), _ = load_samples(path)
    assert auto.retrieved_contexts == ["a;b", "c"] and auto.relevant_ids == ["d1 ; d2"]
    (semi,), _ = load_samples(path, list_sep=";")
    assert semi.retrieved_contexts == ["a", "b|c"] and semi.relevant_ids == ["d1", "d2"]
    (whole,), _ = load_samples(path, list_sep="none")
    assert whole.retrieved_contexts == ["a;b|c"]
    out = tmp_path / "o.jsonl"
    r = runner.invoke(app, ["convert", str(path), str(out), "--to", "jsonl", "--list-sep", ";"])
    assert r.exit_code == 0 and json.loads(out.read_text())["relevant_ids"] == ["d1", "d2"]


# ---------------------------------------------------------------- labels


@pytest.mark.parametrize(
    "value,label",
    [
        ("1", 1),
        ("0", 0),
        (1, 1),
        (0, 0),
        (True, 1),
        ("true", 1),
        ("False", 0),
        ("yes", 1),
        ("No", 0),
        ("pass", 1),
        ("FAIL", 0),
        ("[[Yes]]", 1),
        ("[[No]]", 0),
        (0.4, 0.4),
        ("0.75", 0.75),
        ("3", 3),
    ],
)
def test_label_values(value, label):
    (s,), errors = load_samples([{"question": "q?", "grade": value}], labels={"faithfulness": "grade"})
    assert errors == [] and s.metadata == {"labels": {"faithfulness": label}}
    assert type(s.metadata["labels"]["faithfulness"]) is type(label)


def test_bad_label_is_a_row_error_naming_row_column_and_value():
    rows = [{"question": "a?", "ok": "[[Yes]]"}, {"question": "b?", "ok": "maybe"}, {"question": "c?"}]
    good, bad = load_samples(rows, labels=["FaithfulnessMetric=ok"])  # a framework's metric name works
    assert [s.metadata.get("labels") for s in good] == [{"faithfulness": 1}, None]
    assert [(e.row, e.field) for e in bad] == [(2, "labels.faithfulness")]
    assert "column 'ok'" in bad[0].reason and "'maybe'" in bad[0].reason
    with pytest.raises(KeyError, match="unknown metric 'faithfulnes'"):
        load_samples(rows, labels="faithfulnes=ok")


def test_a_rows_own_labels_are_read_by_the_label_rule_and_merged_not_overwritten():
    """A row's ``labels`` object was never checked ("maybe", ``[1]`` and a misspelt key all
    read as "ok", the rows then silently unlabelled), and beside ``--label`` or
    ``metadata.labels`` one overwrote the other: a label vanished without a word."""
    rows = [
        {"question": "a?", "labels": {"faithfulness": "maybe"}},
        {"question": "b?", "labels": {"faithfulness": "yes", "fathfulness": "no"}},
        {"question": "c?", "labels": {"faithfulness": [1]}},
        {"question": "d?", "labels": "yes"},
        {"question": "e?", "labels": {"faithfulness": 1}, "cr": 0},
        {"question": "f?", "labels": {"context_relevancy": 1}, "cr": 0},
        {"question": "g?", "metadata": {"labels": {"faithfulness": 0}}, "labels": {"context_relevancy": 1}},
        {"question": "h?", "metadata": {"labels": {"faithfulness": 0}}, "labels": {"faithfulness": 1}},
        {"question": "i?", "metadata": {"source": "wiki"}, "source": "web"},
    ]
    reader = read_samples(rows, labels={"context_relevancy": "cr"})
    items = list(reader)
    errors = {e.row: (e.field, e.reason) for e in items if isinstance(e, RowError)}
    assert errors[1] == ("labels.faithfulness", errors[1][1]) and "cannot read label 'maybe'" in errors[1][1]
    assert errors[3][0] == "labels.faithfulness" and "a list is not a label" in errors[3][1]
    assert 4 not in errors  # a labels that is no object (RAGTruth's spans) is another dataset's: kept, noted
    assert errors[6] == ("labels.context_relevancy", "given twice, 1 in labels and 0 in its --label column")
    assert (
        errors[8][0] == "labels.faithfulness" and "given twice, 0 in metadata.labels and 1 in 'labels'" in errors[8][1]
    )
    assert errors[9][0] == "source" and "given twice, 'wiki' in metadata and 'web'" in errors[9][1]
    good = {s.user_input: s.metadata["labels"] for s in items if isinstance(s, Sample)}
    assert good == {
        "b?": {"faithfulness": "yes", "fathfulness": "no"},
        "d?": "yes",
        "e?": {"faithfulness": 1, "context_relevancy": 0},
        "g?": {"faithfulness": 0, "context_relevancy": 1},
    }
    notes = " ".join(reader.notes).replace(reader.source, "<rows>")
    assert "labels: 'fathfulness' names no metric, so no comparison reads it (first at <rows>:2)" in notes
    assert "labels: a str, not an object of metric: label (first at <rows>:4); kept in metadata" in notes
    # a key that names no metric holds whatever its dataset put there (spans): not read as a label
    (s,), errors = load_samples([{"question": "q?", "labels": {"faithfulness": 1, "spans": [[0, 3]]}}])
    assert errors == [] and s.metadata["labels"]["spans"] == [[0, 3]]


def test_label_column_never_seen_is_noted():
    reader = read_samples([{"question": "a?"}], labels="faithfulness=Answer_Faithfulness_Label")
    list(reader)
    assert reader.notes == [
        "--label faithfulness=Answer_Faithfulness_Label: no row has a column 'Answer_Faithfulness_Label'"
    ]


# ---------------------------------------------------------------- shapes seen elsewhere


def test_shapes_seen_elsewhere(tmp_path):
    # RAGChecker: {"results": [...]} with contexts as {doc_id, text} objects
    rc = tmp_path / "ragchecker.json"
    rc.write_text(
        json.dumps(
            {
                "results": [
                    {
                        "query_id": "0",
                        "query": "q?",
                        "gt_answer": "a",
                        "response": "r",
                        "retrieved_context": [{"doc_id": "d1", "text": "t1"}, {"doc_id": "d2", "text": "t2"}],
                    }
                ]
            }
        )
    )
    (s,), _ = load_samples(rc)
    assert (s.id, s.reference, s.retrieved_contexts, s.retrieved_ids) == ("0", "a", ["t1", "t2"], ["d1", "d2"])
    # HaluEval: JSON Lines in a .json file
    halu = tmp_path / "qa_data.json"
    halu.write_text('{"question": "q1?", "answer": "a1"}\n{"question": "q2?", "answer": "a2"}\n')
    assert [x.user_input for x in load_samples(halu)[0]] == ["q1?", "q2?"]
    # Patronus' current SDK names; task_context a string holding a JSON list
    (p,), _ = load_samples(
        [
            {
                "task_input": "q?",
                "task_output": "r",
                "task_context": '["c1", "c2"]',
                "gold_answer": "g",
                "sid": "p-1",
                "task_metadata": {"k": 1},
            }
        ]
    )
    assert (p.id, p.response, p.retrieved_contexts, p.reference, p.metadata) == (
        "p-1",
        "r",
        ["c1", "c2"],
        "g",
        {"k": 1},
    )
    # LangChain-style contexts: {page_content, metadata} dicts
    (lc,), _ = load_samples(
        [
            {
                "question": "q?",
                "contexts": [
                    {"page_content": "one", "metadata": {"source": "a.txt"}},
                    {"page_content": "two", "metadata": {"id": "b"}},
                ],
            }
        ]
    )
    assert lc.retrieved_contexts == ["one", "two"] and lc.retrieved_ids == ["a.txt", "b"]
    # a BOM before JSON Lines
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps({"question": "q?"}).encode() + b"\n")
    assert len(load_samples(bom)[0]) == 1


def test_langchain_documents_as_contexts():
    documents = pytest.importorskip("langchain_core.documents")
    docs = [
        documents.Document(page_content="Paris is the capital.", metadata={"id": "d1"}),
        documents.Document(page_content="Lyon is a city.", metadata={"id": "d2"}),
    ]
    (s,), errors = load_samples([{"question": "Capital of France?", "contexts": docs}])
    assert errors == [] and s.retrieved_contexts == [d.page_content for d in docs]
    assert s.retrieved_ids == ["d1", "d2"]


def test_an_object_that_is_no_sample_is_a_one_line_row_error():
    class Strange:
        pass

    good, bad = load_samples([{"question": "q?"}, Strange(), 42])
    assert len(good) == 1 and [(e.row, e.field) for e in bad] == [(2, None), (3, None)]
    assert "cannot read a sample from a" in bad[0].reason and "Strange" in bad[0].reason
    assert "must be an object, got int" in bad[1].reason
    # one odd object as the whole source: one bad row, not a traceback
    assert [e.row for e in load_samples(Strange())[1]] == [1]


# ---------------------------------------------------------------- real framework objects


@pytest.fixture
def quiet_cwd(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg")))  # ragas's uuid.json
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))  # deepeval must write nothing here


def _retrieval_rows():
    return [
        dict(
            q=f"question {i}?",
            ctx=[f"passage {i}a", f"passage {i}b"],
            ids=[f"d{i}", f"d{i + 1}"],
            rel=[f"d{i + 1}"],
            a=f"answer {i}",
            ref=f"reference {i}",
        )
        for i in range(4)
    ]


def _ragas_dataset():
    from ragas import EvaluationDataset, SingleTurnSample

    return EvaluationDataset(
        samples=[
            SingleTurnSample(
                user_input=r["q"],
                retrieved_contexts=r["ctx"],
                retrieved_context_ids=r["ids"],
                reference_context_ids=r["rel"],
                response=r["a"],
                reference=r["ref"],
            )
            for r in _retrieval_rows()
        ]
    )


def _deepeval_cases():
    from deepeval.test_case import LLMTestCase

    return [
        LLMTestCase(
            input=r["q"],
            actual_output=r["a"],
            expected_output=r["ref"],
            retrieval_context=r["ctx"],
            context=["ideal"],
            name=f"case-{i}",
            metadata={"retrieved_ids": r["ids"]},
        )
        for i, r in enumerate(_retrieval_rows())
    ]


@pytest.mark.ragas
@pytest.mark.skipif(not HAS_RAGAS, reason="ragas not installed")
def test_ragas_objects_load(quiet_cwd):
    from ragas import MultiTurnSample
    from ragas.messages import HumanMessage

    ds = _ragas_dataset()
    samples, errors = load_samples(ds)
    assert errors == [] and len(samples) == 4
    s = samples[1]
    assert (s.user_input, s.retrieved_ids, s.relevant_ids, s.reference) == (
        "question 1?",
        ["d1", "d2"],
        ["d2"],
        "reference 1",
    )
    assert [x.model_dump() for x in load_samples(list(ds.samples))[0]] == [x.model_dump() for x in samples]
    multi = MultiTurnSample(user_input=[HumanMessage(content="hi")])
    good, bad = load_samples([ds.samples[0], multi])
    assert len(good) == 1 and bad[0].row == 2 and "MultiTurnSample" in bad[0].reason
    assert "\n" not in str(bad[0])


@pytest.mark.deepeval
@pytest.mark.skipif(not HAS_DEEPEVAL, reason="deepeval not installed")
def test_deepeval_objects_load(quiet_cwd):
    from deepeval.dataset import EvaluationDataset, Golden
    from deepeval.test_case import ConversationalTestCase, Turn

    cases = _deepeval_cases()
    samples, errors = load_samples(cases)
    assert errors == [] and [s.id for s in samples] == ["case-0", "case-1", "case-2", "case-3"]
    assert samples[0].reference_contexts == ["ideal"] and samples[0].retrieved_contexts == ["passage 0a", "passage 0b"]
    assert samples[0].metadata == {"retrieved_ids": ["d0", "d1"]}
    goldens = [
        Golden(input=c.input, expected_output=c.expected_output, name=c.name, additional_metadata={"k": i})
        for i, c in enumerate(cases)
    ]
    from_goldens, errors = load_samples(goldens)
    assert errors == [] and [s.metadata for s in from_goldens] == [{"k": i} for i in range(4)]
    # a dataset gives its test cases, else its goldens
    assert [s.id for s in load_samples(EvaluationDataset(goldens=goldens))[0]] == [g.name for g in goldens]
    ds = EvaluationDataset()
    for c in cases:
        ds.add_test_case(c)
    assert [s.model_dump() for s in load_samples(ds)[0]] == [s.model_dump() for s in samples]
    conv = ConversationalTestCase(turns=[Turn(role="user", content="hi")])
    good, bad = load_samples([cases[0], conv])
    assert len(good) == 1 and "ConversationalTestCase" in bad[0].reason and "\n" not in str(bad[0])
    assert not (Path.cwd() / ".deepeval").exists()


def _evaluate_through_read_samples(monkeypatch, source, tmp_path):
    # the runner will consume read_samples for every source kind (issue 13): run it so now
    import unified.run.runner
    from unified.api import evaluate

    monkeypatch.setattr(unified.run.runner, "iter_samples", read_samples, raising=False)
    return evaluate(source, "precision@2,recall@2,mrr", ["native"], out=tmp_path / "run", quiet=True, progress=False)


@pytest.mark.ragas
@pytest.mark.deepeval
@pytest.mark.skipif(not (HAS_RAGAS and HAS_DEEPEVAL), reason="ragas and deepeval needed")
def test_framework_objects_evaluate_with_native_deterministic_metrics(monkeypatch, tmp_path, quiet_cwd):
    report = _evaluate_through_read_samples(monkeypatch, _ragas_dataset(), tmp_path / "ragas")
    scores = list(report.iter_scores())
    assert len(scores) == 4 * 3 and all(s.error is None for s in scores)
    assert {s.value for s in scores if s.metric == "mrr"} == {5.0}  # the relevant id is at rank 2
    # DeepEval's test cases carry no retrieved ids of their own: in metadata here, so the
    # retrieval metrics fail with a one-line missing-field error per task, still one per task
    report = _evaluate_through_read_samples(monkeypatch, _deepeval_cases(), tmp_path / "deepeval")
    scores = list(report.iter_scores())
    assert len(scores) == 4 * 3 and {s.sample_id for s in scores} == {f"case-{i}" for i in range(4)}
    assert all("field 'retrieved_ids' is missing" in s.error for s in scores)


@pytest.mark.ragas
@pytest.mark.skipif(not HAS_RAGAS, reason="ragas not installed")
def test_evaluate_takes_a_ragas_dataset_directly(tmp_path, quiet_cwd):
    from unified.api import evaluate

    report = evaluate(_ragas_dataset(), "precision@2,mrr", ["native"], out=tmp_path / "run", quiet=True, progress=False)
    assert len(list(report.iter_scores())) == 4 * 2


def test_row_errors_pass_through_and_are_counted():
    err = RowError("pipeline", 2, "retrieve", "down", sample_id="q2")
    reader = read_samples([Sample(user_input="a?"), err, {"question": ""}])
    items = list(reader)
    assert items[1] is err
    assert (reader.counts.rows, reader.counts.samples, reader.counts.rejected) == (3, 1, 2)


def test_a_mapped_column_in_a_table_is_split_only_on_an_explicit_separator(tmp_path):
    """ARES's TSV mapped with ``--map Document=retrieved_contexts``: a passage holding a
    markdown table was cut at every ``|`` into up to 238 "contexts", without a word, though
    the docs promise a mapped column stays one element unless ``--list-sep`` is given."""
    path = tmp_path / "ares.tsv"
    path.write_text("Q\tDocument\tA\nq?\tCol | Val | X\ta\n", encoding="utf-8")
    mapping = "Q=user_input,Document=retrieved_contexts,A=response"
    (s,), _ = load_samples(path, mapping)
    assert s.retrieved_contexts == ["Col | Val | X"]
    (s,), _ = load_samples(path, mapping, list_sep="|")
    assert s.retrieved_contexts == ["Col", "Val", "X"]
    # a mapped id column keeps the table's separators: ids hold no markdown
    ids = tmp_path / "ids.csv"
    ids.write_text("q,docs,gold\nq?,d1|d2,d2|d3\n", encoding="utf-8")
    (s,), _ = load_samples(ids, "q=user_input,docs=retrieved_ids,gold=relevant_ids")
    assert (s.retrieved_ids, s.relevant_ids) == (["d1", "d2"], ["d2", "d3"])
    ares = INTEROP.parent / "ares" / "LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.tsv"
    if ares.exists():  # the real file: one passage per row, as its .jsonl twin reads
        good, bad = load_samples(ares, "Question=user_input,Document=retrieved_contexts,Answer=response")
        assert not bad and len(good) == 111 and all(len(g.retrieved_contexts or []) == 1 for g in good)


def test_mapped_string_column_is_one_context_in_json_sources():
    rows = [{"q": "q?", "passage": "a | b"}]
    (s,), _ = load_samples(rows, "q=user_input,passage=retrieved_contexts")
    assert s.retrieved_contexts == ["a | b"]  # no guessing outside tables
    (s,), _ = load_samples(rows, "q=user_input,passage=retrieved_contexts", list_sep="|")
    assert s.retrieved_contexts == ["a", "b"]
    # an unmapped alias holding one string stays an error: too often a joined blob
    (err,) = load_samples([{"question": "q?", "contexts": "a | b"}])[1]
    assert err.field == "retrieved_contexts" and "wrap it in a list" in err.reason
