"""Traces as their producers really write them (tests/fixtures/traces/, sources in its
README.md): every file of the corpus becomes the samples a person reading the trace
expects — question, answer and contexts from the right spans, in retrieval order — or
is refused with one line per trace saying why.

``expected.json`` holds, per file, the format it is recognised as, its samples' ids and
its refusals; per producer run, each trace's fields and the spans they come from. One
run is exported up to five ways (the SDK's console JSON and OTLP encoding, Phoenix's
span JSON, OTLP JSON and Parquet DataFrame): every export must give the same samples.
The producers' own facts (the questions asked, the knowledge base, the upstream caller)
are checked on their own, so that ``expected.json`` cannot simply echo the reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified.cli.app import app
from unified.data.io import load_samples
from unified.data.traces import detect_file

CORPUS = Path(__file__).parent / "fixtures" / "traces"
EXPECTED = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
FILES = sorted(EXPECTED["files"])
# the producers' facts (tests/fixtures/traces/producers/*.py)
QUESTIONS = {
    "How tall is the Eiffel Tower?",
    "Which river flows through the most countries?",
    "How many hearts does an octopus have?",
    "What is the highest mountain in Africa?",
}
FACTS = {
    "The Eiffel Tower is 330 metres tall and stands in Paris.",
    "Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa.",
    "The Danube flows through ten countries, more than any other river.",
    "Honey kept sealed does not spoil; edible honey was found in ancient tombs.",
    "Octopuses have three hearts and blue blood.",
}
MLFLOW_QUESTIONS = {"How tall is the Eiffel Tower?", "Which river flows through the most countries?"}
# the upstream callers' span ids (openinference_rag.UPSTREAM): remote parents
UPSTREAM = {"llamaindex": "00f067aa0ba902b7", "langchain": "10f067aa0ba902b7", "langgraph": "20f067aa0ba902b7"}


def test_the_corpus_is_every_file_and_each_format_has_two_producers():
    on_disk = sorted(
        str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*") if p.suffix in (".json", ".jsonl", ".parquet")
    )
    assert FILES == on_disk
    producers: dict[str, set[str]] = {}
    for rel, entry in EXPECTED["files"].items():
        producers.setdefault(entry["format"], set()).add(rel.split("/")[0] + ":" + rel.split("/")[1].split("-")[0])
    assert set(producers) == {"otlp", "openinference", "mlflow-traces", "langfuse"}
    assert all(len(p) >= 2 for p in producers.values()), producers


@pytest.mark.parametrize("rel", FILES)
def test_each_file_gives_the_samples_a_reader_of_the_trace_expects(rel):
    entry = EXPECTED["files"][rel]
    path = CORPUS / rel
    assert detect_file(path) == entry["format"]  # recognised by content, without --from
    good, bad = load_samples(path)
    assert [s.id for s in good] == entry["samples"]
    for s in good:
        want = EXPECTED["runs"][entry["run"]][s.id]
        prov = s.metadata["provenance"]
        assert prov["format"] == entry["format"] and prov["trace_id"] == s.id
        assert s.user_input == want["user_input"] and prov["user_input"]["span"] == want["spans"]["user_input"]
        assert s.response == want["response"] and prov["response"]["span"] == want["spans"]["response"]
        assert s.retrieved_contexts == want["retrieved_contexts"]
        assert s.retrieved_ids == want["retrieved_ids"]
        assert sorted({c["span"] for c in prov["retrieved_contexts"]}) == want["spans"]["retrieved_contexts"]
        assert s.metadata.get("remote_parent") == want.get("remote_parent")
    assert [(e.sample_id, e.field) for e in bad] == [(x["id"], x["field"]) for x in entry["errors"]]
    for e, x in zip(bad, entry["errors"]):
        assert x["says"] in e.reason and "\n" not in str(e)  # one line, saying why


@pytest.mark.parametrize("run", sorted(EXPECTED["runs"]))
def test_the_samples_are_the_producers_own_questions_and_documents(run):
    """Checked against what the producer scripts asked and indexed, not against the
    reader: a question is one asked, each context a document of the knowledge base,
    every trace's answer a text, and the exports of one run name the same traces."""
    traces = EXPECTED["runs"][run]
    assert {t["user_input"] for t in traces.values()} == (QUESTIONS if run in UPSTREAM else MLFLOW_QUESTIONS)
    for t in traces.values():
        assert t["retrieved_contexts"] and set(t["retrieved_contexts"]) <= FACTS
        assert len(t["retrieved_contexts"]) == 2  # the retrievers' top k
        assert isinstance(t["response"], str) and t["response"].strip()
    if run in UPSTREAM:  # the question asked under a remote parent keeps its upstream caller
        [remote] = [t for t in traces.values() if t.get("remote_parent")]
        assert remote["user_input"] == "What is the highest mountain in Africa?"
        assert remote["remote_parent"] == UPSTREAM[run]
    exports = [rel for rel, e in EXPECTED["files"].items() if e.get("run") == run]
    assert len(exports) >= 2 and all(set(EXPECTED["files"][r]["samples"]) == set(traces) for r in exports)


@pytest.mark.parametrize("framework", sorted(UPSTREAM))
def test_the_question_below_an_http_server_span_is_the_chains(framework):
    """The web framework's span (no kind, no input) is the root of the trace asked over
    HTTP; the question and the answer are the chain's below it. Before, LlamaIndex's
    question was silently dropped and LangChain's trace refused."""
    rows = [json.loads(line) for line in (CORPUS / "sdk" / f"{framework}-console.jsonl").read_text().splitlines()]
    [http] = [r for r in rows if r["name"] == "POST /ask" and r["parent_id"] is None]
    trace_id = http["context"]["trace_id"].removeprefix("0x")
    [s] = [s for s in load_samples(CORPUS / "sdk" / f"{framework}-console.jsonl")[0] if s.id == trace_id]
    assert s.user_input == "How many hearts does an octopus have?"
    assert s.metadata["trace_name"] != "POST /ask" and s.response == EXPECTED["runs"][framework][trace_id]["response"]


def test_a_langfuse_export_without_from_is_read_as_langfuse_not_as_samples():
    """Langfuse's own ``{"trace", "observations"}`` export: without --from every
    observation was a "sample" whose question was raw message JSON, and validate said OK."""
    for rel in [r for r in FILES if r.startswith("langfuse/")]:
        good, bad = load_samples(CORPUS / rel)
        assert good == [] and len(bad) == 1 and bad[0].field == "retrieved_contexts"
        assert "has no RETRIEVER span" in bad[0].reason
    r = CliRunner().invoke(app, ["validate", str(CORPUS / "langfuse" / "langgraph-2025-08-22.json")])
    assert r.exit_code == 1 and "0 ok, 1 bad row(s)" in r.output, r.output


def test_langfuse_reads_a_twice_encoded_trace_input_as_its_question():
    """Langfuse's trace ``input`` is JSON text of JSON text (LangGraph's messages): the
    question is the human message's, decoded twice."""
    from unified.data.traces.assemble import root_of
    from unified.data.traces.langfuse_export import spans_of
    from unified.data.traces.model import group
    from unified.data.traces.values import decode, text_of

    doc = json.loads((CORPUS / "langfuse" / "langgraph-2025-08-22.json").read_text())
    [trace] = group(spans_of(doc), "langfuse")
    root = root_of(trace)
    assert root.input_key == "trace.input"
    value, how = decode(root.input, root.input_mime)
    assert how == "guessed json" and text_of(value, "question") == (
        "Search the web for 'example' and summarize.",
        "messages[0].content",
    )


def test_a_phoenix_parquet_export_through_the_cli_gives_its_contexts(tmp_path, judge_server):
    path = CORPUS / "phoenix" / "langchain-spans.parquet"
    r = CliRunner().invoke(app, ["validate", str(path)])
    assert r.exit_code == 0, r.output
    assert "4 ok, 0 bad row(s)" in r.output
    assert "provenance (openinference) of langchain-spans.parquet:1" in r.output
    assert "retrieved_contexts ← span 'VectorStoreRetriever' retrieval.documents.N.document.content ×2" in r.output
    out = tmp_path / "run"
    r = CliRunner().invoke(
        app,
        ["run", str(path), "--metrics", "context_relevancy", "--out", str(out), "--quiet"]
        + ["--base-url", judge_server.base_url, "--model", "loopback", "--single-judge"],
    )
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    want = EXPECTED["runs"]["langchain"]
    assert {row["id"]: row["retrieved_contexts"] for row in rows} == {
        tid: t["retrieved_contexts"] for tid, t in want.items()
    }
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    # scored over the export's two contexts each (before, no context at all: "the retriever returned nothing")
    assert len(scores) == 4 and all(s["value"] is not None and "of 2 contexts" in s["reason"] for s in scores)
