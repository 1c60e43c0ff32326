"""Faithfulness without a question (issue 23 part 4): RAGTruth's summaries and
data-to-text responses answer no user question. A metric that does not need one
(faithfulness, hallucination) runs without it on every backend that can; a backend whose
framework needs it (ragas's Faithfulness puts the question into its prompt) fails that
one task with the row and the field named; a metric that needs it (answer_relevancy)
fails with the row and ``user_input`` named; everything else of the run goes on.

The loopback judge's answers are synthetic: plumbing, never judgment quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import as_read
from typer.testing import CliRunner

from unified.adapters import Backend, missing_field_error, registered_backend
from unified.adapters.native import NativeBackend
from unified.adapters.native.prompts import claims as claims_prompts
from unified.cli.app import app
from unified.data.io import read_samples
from unified.judge import JudgeConfig, build_judges
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample
from unified.scores import Score

# RAGTruth-style rows (Niu et al., 2024; MIT), shortened: a news summary and a
# data-to-text overview, neither with a question; and one question-answering row
SOURCE = (
    "The city council of Springfield voted 7 to 2 on Tuesday to build a new public library on "
    "Main Street. Construction starts in March and is expected to cost 12 million dollars."
)
ROWS = [
    {"id": "summary", "retrieved_contexts": [SOURCE], "response": "Springfield's council approved a library."},
    {
        "id": "data2txt",
        "user_input": "",  # an empty question is no question
        "retrieved_contexts": [json.dumps({"name": "Blue Fig", "city": "Austin", "rating": 4.5})],
        "response": "Blue Fig is a restaurant in Austin rated 4.5.",
    },
    {
        "id": "qa",
        "user_input": "Where will the library be built?",
        "retrieved_contexts": [SOURCE],
        "response": "On Main Street.",
    },
]


def _write(tmp_path: Path, rows=ROWS) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def invoke(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_every_reader_takes_a_row_without_a_question(tmp_path):
    jsonl = _write(tmp_path)
    csv = tmp_path / "rows.csv"
    csv.write_text('id,retrieved_contexts,response\nsummary,"[""A.""]",B.\n', encoding="utf-8")
    deepeval_layout = [{"actual_output": "B.", "retrieval_context": ["A."], "name": "golden"}]
    for source in (jsonl, csv, deepeval_layout):
        items = list(read_samples(source))
        assert items and all(isinstance(s, Sample) for s in items), items
        assert items[0].user_input is None


def test_every_framework_layout_round_trips_a_sample_without_a_question():
    from unified.data.convert import export_records, import_records
    from unified.data.layouts import LAYOUTS

    s = Sample.from_record(ROWS[0])
    for fmt in LAYOUTS:
        records, _ = export_records([s], fmt)
        good, bad = import_records(records, fmt)
        assert not bad and good[0].user_input is None and good[0].id == "summary", fmt
        assert good[0].content_hash() == s.content_hash(), fmt


def test_the_extraction_prompt_shows_no_empty_question():
    with_q = claims_prompts.extraction("What was decided?", "The council voted.")
    without = claims_prompts.extraction(None, "The council voted.")
    assert "Question: What was decided?" in with_q.messages[-1]["content"]
    assert "Question" not in without.messages[-1]["content"]
    assert without.messages[-1]["content"].startswith("Text: The council voted.")


async def test_native_scores_faithfulness_and_hallucination_without_a_question(judge_server, tmp_path):
    judges = build_judges(JudgeConfig(base_url=judge_server.base_url, model="fake"), cache_path=tmp_path / "c.sqlite")
    sample = Sample.from_record(ROWS[0])
    out = await NativeBackend(judges).score(sample, parse_metrics("faithfulness,hallucination,answer_relevancy"))
    faith, hallu, relevancy = out
    assert faith.ok and hallu.ok and faith.value is not None and 0 <= faith.value <= 10, (faith.error, hallu.error)
    assert relevancy.value is None
    assert relevancy.error == "sample 'summary': field 'user_input' is missing or empty (needed by answer_relevancy)"
    users = [b["messages"][-1]["content"] for b in judge_server.requests if "messages" in b]
    assert len(users) >= 3 and all("Question:" not in u for u in users)  # claims, verification A, B, ...


class NeedsQuestion(Backend):
    """A backend whose faithfulness, like ragas's, reads the question."""

    name = "needsq"
    metrics = frozenset({"faithfulness"})
    uses_judges = False

    def needs_fields(self, ref):
        return ("user_input",)

    async def score(self, sample, metrics):
        return [Score.from_raw(m.name, self.name, sample.id, 1.0, threshold=7.0) for m in metrics]


def test_a_backend_that_needs_the_question_fails_that_task_alone(tmp_path):
    s = Sample.from_record(ROWS[0])
    ref = parse_metric("faithfulness")
    assert missing_field_error(s, ref) is None  # the metric itself needs no question
    msg = missing_field_error(s, ref, NeedsQuestion())
    assert msg == (
        "sample 'summary': field 'user_input' is missing or empty; faithfulness does not need it, "
        "but the needsq backend's does (score it on another backend)"
    )
    with registered_backend("needsq", f"{__name__}:NeedsQuestion", metrics={"faithfulness"}, uses_judges=False):
        out = tmp_path / "run"
        r = invoke("run", _write(tmp_path), "--metrics", "faithfulness", "--backend", "needsq", "--out", out, "-q")
    rows = {json.loads(line)["sample_id"]: json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()}
    assert r.exit_code == 3, r.output  # a task that could not run is a failure, said so
    assert rows["qa"]["value"] == 10.0 and rows["summary"]["value"] is None
    assert "field 'user_input' is missing or empty" in rows["summary"]["error"]
    assert "needsq backend" in rows["data2txt"]["error"]
    # the report reads samples without a question: drill-down present, no empty question block
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "data-sid='summary'" in html and "Where will the library be built?" in html
    assert r.output.count("user_input") >= 1  # the grouped failures on stderr name the field


@pytest.mark.slow
@pytest.mark.local
@pytest.mark.ragas
@pytest.mark.deepeval
def test_compare_on_rows_without_a_question(tmp_path, judge_server, monkeypatch):
    """native, embedding and deepeval score faithfulness on the summary rows; ragas says
    why it cannot (its Faithfulness reads the question); answer_relevancy on those rows is
    a clear row error on every backend; the question-answering row is scored throughout."""
    pytest.importorskip("ragas")
    pytest.importorskip("deepeval")
    monkeypatch.chdir(tmp_path)  # deepeval must leave no .deepeval/ in the working folder
    out = tmp_path / "cmp"
    r = invoke(
        "compare",
        _write(tmp_path),
        "--backends",
        "native,embedding,deepeval,ragas",
        "--metrics",
        "faithfulness,answer_relevancy",
        "--base-url",
        judge_server.base_url,
        "--model",
        "fake",
        "--embedding",
        judge_server.base_url,
        "--embedding-model",
        "fake",
        "--out",
        out,
        "--quiet",
    )
    # short lines, filled back as every reader sees them
    rows = [as_read(json.loads(line)) for line in (out / "scores.jsonl").read_text().splitlines()]
    by = {(x["sample_id"], x["metric"], x["backend"]): x for x in rows}
    assert len(rows) == 3 * 2 * 4  # every task has its line: nothing dropped
    assert r.exit_code == 3, r.output
    for sid in ("summary", "data2txt"):
        for backend in ("native", "embedding", "deepeval"):
            x = by[(sid, "faithfulness", backend)]
            assert x["error"] is None and 0 <= x["value"] <= 10, x
        ragas = by[(sid, "faithfulness", "ragas")]
        assert ragas["value"] is None
        assert ragas["error"].startswith(f"sample '{sid}': field 'user_input' is missing or empty;")
        assert "ragas backend" in ragas["error"]
        for backend in ("native", "embedding", "deepeval", "ragas"):
            x = by[(sid, "answer_relevancy", backend)]
            assert x["error"] == f"sample '{sid}': field 'user_input' is missing or empty (needed by answer_relevancy)"
    for backend in ("native", "embedding", "deepeval", "ragas"):
        x = by[("qa", "faithfulness", backend)]
        # the synthetic judge may give ragas an answer outside its range: said, not clipped
        assert x["value"] is not None or "outside its own range" in x["error"], x
    assert "user_input" in r.output  # the grouped failures name the field


def test_opik_hallucination_gets_an_empty_question_not_none():
    """opik prints its input into the prompt ("for context only, not to be used for
    faithfulness evaluation"): an absent question must be "", never the text "None"."""
    pytest.importorskip("opik")
    from unified.adapters.opik import OPIK_METRICS
    from unified.adapters.opik.backend import opik_kwargs

    kw = opik_kwargs(OPIK_METRICS["faithfulness"], Sample.from_record(ROWS[0]))
    assert kw["input"] == "" and kw["output"] == ROWS[0]["response"] and kw["context"] == [SOURCE]
    kw = opik_kwargs(OPIK_METRICS["answer_relevancy"], Sample.from_record(ROWS[0]))
    assert kw["input"] is None  # a metric that needs the question never gets here without one
