"""Runner: streaming, checkpoint/resume, sample-level errors, skipped pairs — with tiny
in-test backends (plumbing only; no judgment quality is claimed here) and real files."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
from support import as_read

from unified.adapters import Backend
from unified.api import aevaluate, evaluate
from unified.data.io import RowError
from unified.judge.base import ChatJudge, Judges
from unified.report import Report, RunningAggregates
from unified.run.runfolder import RunFolder, repair_jsonl
from unified.sample import Sample
from unified.scores import Score, aggregate_by


class CountingBackend(Backend):
    """Deterministic raw = (len(question) mod 10) / 10; counts score() calls."""

    name = "countb"
    metrics = frozenset({"precision_at_k", "recall_at_k", "mrr", "context_recall", "faithfulness"})

    def __init__(self, judges=None, **options):
        super().__init__(judges, **options)
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    async def score(self, sample, metrics):
        self.calls.append((sample.id, tuple(m.name for m in metrics)))
        return [
            Score.from_raw(
                m.name,
                self.name,
                sample.id,
                (len(sample.user_input) % 10) / 10,
                threshold=5.0,
                reason=f"len {len(sample.user_input)}",
            )
            for m in metrics
        ]


class FlakyBackend(CountingBackend):
    name = "flaky"

    async def score(self, sample, metrics):
        if sample.user_input.startswith("boom"):
            raise RuntimeError("backend exploded on this one")
        return await super().score(sample, metrics)


class WrongCountBackend(CountingBackend):
    name = "wrongcount"

    async def score(self, sample, metrics):
        return []


class NullJudge(ChatJudge):
    model = "null"

    async def ask(self, messages, schema, **params):  # never called by these backends
        raise AssertionError("not used")


def make_samples(n: int, start: int = 0) -> list[Sample]:
    return [
        Sample(
            id=f"s{i:05d}",
            user_input=f"question number {i}" + "?" * (i % 7),
            retrieved_ids=["a", "b", "c"],
            relevant_ids=["a"],
            response="an answer",
            retrieved_contexts=["ctx"],
            reference="the reference",
        )
        for i in range(start, start + n)
    ]


def lines(path: Path) -> list[dict]:
    """A JSONL file\'s lines; score lines in the full shape every reader sees (full_line)."""
    return [as_read(json.loads(x)) for x in path.read_text().splitlines() if x.strip()]


def triples(path: Path) -> list[tuple[str, str, str]]:
    return [(d["sample_id"], d["metric"], d["backend"]) for d in lines(path)]


def test_run_writes_scores_samples_summary_and_report(tmp_path):
    b = CountingBackend()
    rep = evaluate(make_samples(12), "precision@3,mrr", [b], out=tmp_path, quiet=True)
    t = triples(tmp_path / "scores.jsonl")
    assert len(t) == 24 and len(set(t)) == 24
    # one backend call per sample with both metrics (shared judge calls are possible)
    assert len(b.calls) == 12 and all(c[1] == ("precision@3", "mrr") for c in b.calls)
    assert len(lines(tmp_path / "samples.jsonl")) == 12
    summary = json.loads((tmp_path / "summary.json").read_text())
    means = {a["metric"]: a["mean"] for a in summary["aggregates"]}
    expected = sum((len(s.user_input) % 10) for s in make_samples(12)) / 12  # raw/10*10
    assert means["precision@3"] == pytest.approx(expected)
    assert summary["counts"]["rows_scored"] == 12 and summary["n_errors"] == 0
    assert "<svg" in (tmp_path / "report.html").read_text()
    assert {a.metric for a in rep.summary()} == {"precision@3", "mrr"}


def test_streaming_bounded_window_and_incremental_disk(tmp_path):
    """20k samples from a generator: never more than `concurrency` samples read ahead of
    the scored ones, and the score file grows while the run is going."""
    produced = 0
    scored = 0
    max_ahead = 0
    sizes_seen: list[int] = []
    scores_path = tmp_path / "scores.jsonl"

    def gen():
        nonlocal produced
        for s in make_samples(20_000):
            produced += 1
            yield s

    class Watching(CountingBackend):
        async def score(self, sample, metrics):
            nonlocal scored, max_ahead
            max_ahead = max(max_ahead, produced - scored)
            scored += 1
            if scored % 5000 == 0:
                sizes_seen.append(scores_path.stat().st_size)
            return [Score.from_raw(m.name, self.name, sample.id, 0.5) for m in metrics]

    evaluate(gen(), "precision@3", [Watching()], out=tmp_path, quiet=True, concurrency=8, write_report=False)
    assert produced == 20_000 and scored == 20_000
    assert max_ahead <= 8 + 1
    assert sizes_seen == sorted(sizes_seen) and sizes_seen[0] > 0  # written as they finish
    assert len(scores_path.read_text().splitlines()) == 20_000


def test_resume_skips_finished_triples_and_never_duplicates(tmp_path):
    first = CountingBackend()
    evaluate(make_samples(30), "precision@3,mrr", [first], out=tmp_path, quiet=True, max_samples=20)
    assert len(first.calls) == 20
    second = CountingBackend()
    evaluate(make_samples(30), "precision@3,mrr", [second], out=tmp_path, quiet=True)
    assert sorted(c[0] for c in second.calls) == [f"s{i:05d}" for i in range(20, 30)]
    t = triples(tmp_path / "scores.jsonl")
    assert len(t) == 60 and len(set(t)) == 60
    # adding a metric to the same folder runs only the new metric
    third = CountingBackend()
    evaluate(make_samples(30), "precision@3,mrr,recall@2", [third], out=tmp_path, quiet=True)
    assert len(third.calls) == 30 and all(c[1] == ("recall@2",) for c in third.calls)
    assert len(set(triples(tmp_path / "scores.jsonl"))) == 90 == len(triples(tmp_path / "scores.jsonl"))
    assert len(lines(tmp_path / "samples.jsonl")) == 30  # samples written once


def test_no_resume_starts_over(tmp_path):
    evaluate(make_samples(5), "mrr", [CountingBackend()], out=tmp_path, quiet=True)
    b = CountingBackend()
    evaluate(make_samples(5), "mrr", [b], out=tmp_path, quiet=True, resume=False)
    assert len(b.calls) == 5 and len(triples(tmp_path / "scores.jsonl")) == 5


def test_torn_last_line_is_truncated_and_task_redone(tmp_path):
    evaluate(make_samples(10), "mrr", [CountingBackend()], out=tmp_path, quiet=True)
    p = tmp_path / "scores.jsonl"
    text = p.read_text().splitlines(keepends=True)
    # simulate kill -9 in the middle of writing the 8th line
    p.write_text("".join(text[:7]) + text[7][: len(text[7]) // 2])
    b = CountingBackend()
    evaluate(make_samples(10), "mrr", [b], out=tmp_path, quiet=True)
    assert sorted(c[0] for c in b.calls) == ["s00007", "s00008", "s00009"]
    t = triples(p)  # every line parses (json.loads above) ...
    assert len(t) == 10 and len(set(t)) == 10  # ... and each task exactly once


def test_repair_jsonl_and_scan(tmp_path):
    p = tmp_path / "scores.jsonl"
    p.write_text(
        '{"metric":"m","backend":"b","sample_id":"1","value":10.0,"sample_hash":"h1","config_hash":"c1"}\n'
        '{"metric":"m","backend":"b","sample_id":"2","value":10.0}\n{"metric":"m","backe'
    )
    assert repair_jsonl(p) == len('{"metric":"m","backe')
    assert p.read_text().endswith("\n")
    res = RunFolder(tmp_path).scan({"m|b": 0, "m2|b": 1}, {"m|b": "c1", "m2|b": "c2"})
    assert res.lines == 2 and res.mask((False, "1"), "h1") == 1
    # a line with no fingerprint (an older version wrote it) is never counted as done
    assert res.mask((False, "2"), "h2") == 0 and res.unfingerprinted == 1
    assert repair_jsonl(p) == 0  # idempotent
    q = tmp_path / "torn_only.jsonl"
    q.write_text('{"half')
    repair_jsonl(q)
    assert q.read_text() == ""


def test_missing_field_is_an_error_score_naming_field_and_metric(tmp_path):
    s = Sample(id="noref", user_input="q?", response="a", retrieved_contexts=["c"])
    judges = Judges(chat=NullJudge())
    b = CountingBackend(judges)
    evaluate([s], "context_recall,faithfulness", [b], judges=judges, out=tmp_path, quiet=True)
    by_metric = {d["metric"]: d for d in lines(tmp_path / "scores.jsonl")}
    assert by_metric["context_recall"]["value"] is None
    assert by_metric["context_recall"]["error"] == (
        "sample 'noref': field 'reference' is missing or empty (needed by context_recall)"
    )
    assert by_metric["faithfulness"]["error"] is None  # the other metric still ran
    assert b.calls == [("noref", ("faithfulness",))]


def test_row_errors_become_one_error_score_per_pair(tmp_path):
    bad = RowError("data.jsonl", 5, "user_input", "missing (required)")
    items = [make_samples(1)[0], bad, make_samples(1, start=1)[0]]
    b1, b2 = CountingBackend(), FlakyBackend()
    evaluate(items, "mrr,precision@2", [b1, b2], out=tmp_path, quiet=True)
    rows = [d for d in lines(tmp_path / "scores.jsonl") if d["sample_id"] == "row:5"]
    assert len(rows) == 4
    assert {(d["metric"], d["backend"]) for d in rows} == {
        ("mrr", "countb"),
        ("precision@2", "countb"),
        ("mrr", "flaky"),
        ("precision@2", "flaky"),
    }
    assert all(d["error"] == str(bad) and d["value"] is None for d in rows)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["rows_rejected"] == 1 and summary["n_errors"] == 4
    assert any(e["sample_id"] == "row:5" for e in summary["errors"])


def test_backend_exception_gives_error_scores_and_run_goes_on(tmp_path):
    samples = make_samples(3) + [Sample(id="bad", user_input="boom please", retrieved_ids=["a"])] + make_samples(3, 3)
    evaluate(samples, "mrr,recall@2", [FlakyBackend()], out=tmp_path, quiet=True)
    rows = lines(tmp_path / "scores.jsonl")
    assert len(rows) == 14
    bad = [d for d in rows if d["sample_id"] == "bad"]
    assert len(bad) == 2 and all(d["error"] == "RuntimeError: backend exploded on this one" for d in bad)
    assert sum(1 for d in rows if d["error"] is None) == 12


def test_backend_returning_wrong_count_is_caught(tmp_path):
    evaluate(make_samples(2), "mrr", [WrongCountBackend()], out=tmp_path, quiet=True)
    rows = lines(tmp_path / "scores.jsonl")
    assert len(rows) == 2 and all("returned list of length 0 for 1 metric" in d["error"] for d in rows)


def test_llm_metric_without_judge_is_skipped_with_one_warning(tmp_path, capsys):
    evaluate(make_samples(50), "faithfulness,mrr", [CountingBackend()], judges=Judges(), out=tmp_path, progress=False)
    err = capsys.readouterr().err
    assert err.count("warning: skipping faithfulness (countb): no LLM judge configured") == 1
    t = triples(tmp_path / "scores.jsonl")
    assert len(t) == 50 and {m for _, m, _ in t} == {"mrr"}
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["skipped_pairs"][0]["metric"] == "faithfulness"


def test_nothing_to_run_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="nothing to run"):
        evaluate(make_samples(2), "faithfulness", [CountingBackend()], judges=Judges(), out=tmp_path, quiet=True)


def test_every_input_row_is_scored_even_a_repeated_one(tmp_path):
    """Issue 10: a row that repeats another is scored too (under a stable id with an
    occurrence suffix), and summary.json accounts for every row read."""
    s = make_samples(3)
    b = CountingBackend()
    evaluate(s + [s[1]], "mrr", [b], out=tmp_path, quiet=True)
    assert sorted(c[0] for c in b.calls) == ["s00000", "s00001", "s00001#2", "s00002"]
    counts = json.loads((tmp_path / "summary.json").read_text())["counts"]
    assert counts["rows_read"] == 4 == counts["rows_scored"] + counts["rows_rejected"]
    # rerun: the repeated row keeps its id, nothing is scored twice
    again = CountingBackend()
    evaluate(s + [s[1]], "mrr", [again], out=tmp_path, quiet=True)
    assert again.calls == [] and len(triples(tmp_path / "scores.jsonl")) == 4


async def test_evaluate_works_inside_running_loop(tmp_path):
    # Jupyter runs cells inside an event loop: evaluate() used to refuse with a RuntimeError
    rep = evaluate(make_samples(3), "mrr", [CountingBackend()], out=tmp_path / "a", quiet=True)
    assert len(rep.scores) == 3
    rep = await aevaluate(make_samples(2), "mrr", [CountingBackend()], out=tmp_path / "b", quiet=True)
    assert len(rep.scores) == 2


def test_quiet_prints_nothing_and_out_none_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rep = evaluate(make_samples(4), "mrr,faithfulness", [CountingBackend()], judges=Judges(), quiet=True)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert list(tmp_path.iterdir()) == []  # no runs/<timestamp>, no cache, nothing
    assert len(rep.scores) == 4 and {s.metric for s in rep.scores} == {"mrr"}
    assert len(rep.samples()) == 4


async def test_cancellation_leaves_consistent_file_and_message(tmp_path, capsys):
    class Slow(CountingBackend):
        async def score(self, sample, metrics):
            if sample.id >= "s00010":
                await asyncio.sleep(30)
            return await super().score(sample, metrics)

    task = asyncio.create_task(
        aevaluate(
            make_samples(40),
            "mrr",
            [Slow()],
            out=tmp_path,
            quiet=True,
            concurrency=4,
            resume_hint="unified-eval run X --out D",
        )
    )
    for _ in range(200):
        await asyncio.sleep(0.01)
        p = tmp_path / "scores.jsonl"
        if p.exists() and len(p.read_text().splitlines()) >= 10:
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    err = capsys.readouterr().err
    assert "interrupted: 10 of 40 scored; resume with: unified-eval run X --out D" in err
    t = triples(tmp_path / "scores.jsonl")
    assert len(t) == 10 == len(set(t))
    # resume finishes exactly the rest
    b = CountingBackend()
    await aevaluate(make_samples(40), "mrr", [b], out=tmp_path, quiet=True)
    assert len(b.calls) == 30 and len(set(triples(tmp_path / "scores.jsonl"))) == 40


def test_running_aggregates_match_aggregate_by():
    rng = random.Random(7)
    scores = []
    for i in range(300):
        m, b = rng.choice(["a", "b"]), rng.choice(["x", "y"])
        if rng.random() < 0.1:
            scores.append(Score.failure(m, b, str(i), "nope"))
        else:
            scores.append(Score.from_raw(m, b, str(i), rng.random(), threshold=rng.choice([None, 5.0])))
    ra = RunningAggregates()
    for s in scores:
        ra.add(s)
    got = {(a.metric, a.backend): a for a in ra.results()}
    for want in aggregate_by(scores):
        g = got[(want.metric, want.backend)]
        assert g.count == want.count and g.errors == want.errors and g.scored == want.scored
        assert g.mean == pytest.approx(want.mean) and g.median == pytest.approx(want.median)
        assert g.pass_rate == pytest.approx(want.pass_rate) if want.pass_rate is not None else g.pass_rate is None
    # the streamed file summary agrees with the in-memory one
    assert [a.model_dump() for a in Report(scores).summary()] == [a.model_dump() for a in ra.results()]


def test_default_judges_honour_unified_embedding(tmp_path, monkeypatch):
    # evaluate() without judges= read only UNIFIED_JUDGE_*: UNIFIED_EMBEDDING (which the CLI
    # honours) was ignored, so native semantic_similarity was skipped as "no embedder"
    from unified.judge import resolve_judges

    monkeypatch.delenv("UNIFIED_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("UNIFIED_EMBEDDING", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("UNIFIED_EMBEDDING_MODEL", "emb-model")
    judges, _ = resolve_judges(cache=False)
    assert judges.chat is None and judges.embedder is not None


def test_repeated_metric_or_backend_is_scored_once(tmp_path):
    # `--metrics mrr,mrr` or `--backend x,x` wrote every score twice into scores.jsonl
    b = CountingBackend()
    evaluate(make_samples(5), "mrr,mrr", [b, b], judges=Judges(), out=tmp_path, quiet=True)
    t = triples(tmp_path / "scores.jsonl")
    assert len(t) == 5 and len(set(t)) == 5


def test_two_input_errors_that_name_the_same_sample_get_one_line_each(tmp_path):
    # a pipeline whose two questions with id "a" both fail: two tasks, two keys, two lines
    errs = [
        RowError("pipeline", 1, None, "retrieval failed", sample_id="a"),
        RowError("pipeline", 2, None, "retrieval failed", sample_id="a"),
    ]
    evaluate(errs + make_samples(1), "mrr", [CountingBackend()], out=tmp_path, quiet=True)
    rows = lines(tmp_path / "scores.jsonl")
    keys = [(d["row_error"], d["sample_id"], d["metric"], d["backend"]) for d in rows]
    assert len(keys) == len(set(keys)) == 3
    assert {d["sample_id"] for d in rows if d["row_error"]} == {"a", "a#2"}


def test_scan_counts_a_line_off_the_0_10_scale_as_not_done(tmp_path):
    """A line whose value breaks the 0–10 rule (hand-edited: 11, NaN, a string, or no value
    and no error) is not done, however well it is fingerprinted: the task is scored again."""
    rows = [
        '{"metric":"m","backend":"b","sample_id":"%d","value":%s,"sample_hash":"h","config_hash":"c"}' % (i, v)
        for i, v in enumerate(["10.0", "11", "NaN", '"7"', "null", "0"])
    ]
    (tmp_path / "scores.jsonl").write_text("\n".join(rows) + "\n")
    res = RunFolder(tmp_path).scan({"m|b": 0}, {"m|b": "c"})
    assert [res.mask((False, str(i)), "h") for i in range(6)] == [1, 0, 0, 0, 0, 1]
