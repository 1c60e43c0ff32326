"""The batch path of deterministic groups (``docs/scale.md``, "Where a first run's CPU
goes"): built-in retrieval formulas are scored by ``compute_group`` in one loop per
executor window and written from field dicts (``unified.scores.line_of``), one write per
block. Each test compares it with the path every other group takes (a Score per task,
``score_line``, a task per group), byte for byte, or checks a run promise with a real
process and a real signal."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from support import cli_env, hostile_retrieval_rows

from unified.adapters.native import NativeBackend
from unified.adapters.native.plan import SamplePlan, compute_fields
from unified.api import evaluate
from unified.judge.base import Judges
from unified.metrics import parse_metric
from unified.run.runfolder import AppendLog
from unified.sample import Sample
from unified.scores import Score, line_of, score_line

CLI = Path(sys.executable).parent / "unified-eval"
METRICS = [
    "precision@5",
    "ndcg@10",
    "recall@3",
    "mrr",
    "hit_rate@2",
    "ndcg",
    "precision@5[threshold=7]",
    "precision@3[threshold=0.5@0-1]",
    "recall@2[foo=1]",
]


def _samples() -> list[Sample]:
    nfd = unicodedata.normalize("NFD", "café")
    return [
        Sample(id="plain", retrieved_ids=["a", "b", "c", "a"], relevant_ids=["a", "c"]),
        Sample(id=f'{nfd} 東京 🚀 "q" \\', retrieved_ids=["x"], relevant_ids=["y"]),
        Sample(id="row:3", retrieved_ids=[], relevant_ids=["a"]),
        Sample(id="no-rel", retrieved_ids=["a"]),
        Sample(id="no-ret", relevant_ids=["a"], response="r"),
        Sample(id="empty-rel", retrieved_ids=["a"], relevant_ids=[]),
        Sample(id="graded", retrieved_ids=["a", "b", "c"], graded_relevance={"a": 0.0001, "c": 100.0, "z": -2}),
        Sample(id="tiny", retrieved_ids=["q"] * 9 + ["a"], graded_relevance={"a": 0.00001, "b": 50.0}),
        Sample(id="all-negative", retrieved_ids=["a"], graded_relevance={"a": -1.0}),
    ]


def test_line_of_writes_score_lines_bytes():
    """``line_of(fields)`` is ``score_line(Score(**fields))``: failures (value null first),
    tiny and huge floats, unicode, every optional field set or left at its default."""
    cases = [
        {"metric": "m", "backend": "native", "sample_id": "s", "value": None, "error": "boom ü"},
        {"metric": "m", "backend": "b", "sample_id": "東京", "value": 0.0, "raw": 0.0, "passed": False},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 1e-05, "raw": 1e-06, "raw_range": (0.0, 1.0)},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 10.0, "threshold": 1e17, "details": {"x": [1, 2.5]}},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 3.3333333333333335, "higher_is_better": False},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 2.0, "degraded": True, "calibrated": 7.5},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 2.0, "row": 7, "input_index": "idx"},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 2.0, "row": 0, "input_index": 1.5},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": None, "error": "e", "row_error": True, "row": 3},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 5.0, "sample_hash": "ab", "config_hash": "cd"},
        {"metric": "m", "backend": "b", "sample_id": "s", "value": 5.0, "details": {}, "reason": "", "passed": None},
    ]
    for fields in cases:
        assert line_of(fields) == score_line(Score(**fields)), fields
    with pytest.raises(ValueError):
        line_of({"metric": "m", "backend": "b", "sample_id": "s", "cost": {"calls": 1}})


def test_compute_fields_are_the_sample_plans_scores():
    """The synchronous formula path gives, for every odd sample and metric (missing
    fields, an empty ranking, undefined metrics, grades, a bad parameter), the same line
    as the asyncio ``SamplePlan`` every other native metric goes through."""
    judges = Judges()
    refs = [parse_metric(m) for m in METRICS]
    backend = NativeBackend(judges)
    assert all(backend.computes(r) for r in refs)
    for sample in _samples():
        slow = asyncio.run(SamplePlan(judges, sample, list(refs), {}).run())
        fast = compute_fields(judges, sample, list(refs))
        assert [line_of(f) for f in fast] == [score_line(s) for s in slow], sample.id
    assert not backend.computes(parse_metric("faithfulness"))

    class Watching(NativeBackend):  # a subclass that overrides score sees every sample
        async def score(self, sample, metrics):
            return await super().score(sample, metrics)

    assert not Watching(judges).computes(refs[0])


@pytest.mark.parametrize("concurrency", [1, 3, 32])
def test_run_through_blocks_writes_the_same_bytes_as_through_tasks(tmp_path, monkeypatch, concurrency):
    """A whole run: the batch path and the task path leave the same scores.jsonl,
    samples.jsonl and summary counts, whatever the window (the block is flushed where
    the tasks ran: row errors and missing-field lines stay where they were)."""
    data = tmp_path / "in.jsonl"
    hostile_retrieval_rows(data, 400)
    metrics = "precision@5,ndcg@10,mrr"
    fast = evaluate(data, metrics, ["native"], out=tmp_path / "fast", concurrency=concurrency, quiet=True)
    monkeypatch.setattr(NativeBackend, "computes", lambda self, ref: False)
    slow = evaluate(data, metrics, ["native"], out=tmp_path / "slow", concurrency=concurrency, quiet=True)
    for name in ("scores.jsonl", "samples.jsonl"):
        a, b = (tmp_path / d / name for d in ("fast", "slow"))
        assert a.read_bytes() == b.read_bytes(), name
    counts = [json.loads((tmp_path / d / "summary.json").read_text())["counts"] for d in ("fast", "slow")]
    assert counts[0] == counts[1] and counts[0]["rows_rejected"] > 0 and counts[0]["tasks_failed"] > 0
    assert [a.model_dump() for a in fast.summary()] == [a.model_dump() for a in slow.summary()]


def test_append_log_holds_lines_in_order_and_writes_them_whole(tmp_path):
    """Held lines are written before a flushed one, and at close; nothing is written
    between (the block is one write)."""
    path = tmp_path / "x.jsonl"
    log = AppendLog(path)
    log.write("1", flush=False)
    log.write("2", flush=False)
    assert path.read_text() == ""
    log.write("3")
    assert path.read_text() == "1\n2\n3\n"
    log.write("4", flush=False)
    log.close()
    assert path.read_text() == "1\n2\n3\n4\n" and log.lines == 4
    samples, scores = tmp_path / "samples.jsonl", tmp_path / "scores.jsonl"
    first = AppendLog(samples)
    log = AppendLog(scores, first=first)
    first.write("s1", flush=False)
    assert samples.read_text() == ""
    log.write("t1")  # the sample's line reaches the disk before its score's
    assert samples.read_text() == "s1\n" and scores.read_text() == "t1\n"
    first.write("s2", flush=False)
    log.close()
    first.close()
    assert samples.read_text() == "s1\ns2\n"


def _big(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            ids = [f"d{(i * 31 + j) % 97}" for j in range(10)]
            f.write(json.dumps({"id": f"q{i}", "retrieved_ids": ids, "relevant_ids": ids[i % 10 :][:2]}) + "\n")


def _lines(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def _run(data: Path, out: Path) -> subprocess.Popen:
    cmd = [str(CLI), "run", str(data), "-m", "precision@5,ndcg@10", "--out", str(out), "--quiet"]
    return subprocess.Popen(cmd, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen) -> None:
    end = time.monotonic() + 120
    while time.monotonic() < end and proc.poll() is None:
        if path.exists() and path.stat().st_size > n * 300:
            return
        time.sleep(0.02)
    pytest.fail(f"the run ended or stalled before {n} lines (exit {proc.poll()})")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill -9", "SIGINT", "SIGTERM"])
def test_a_stopped_deterministic_run_resumes_exactly_once(tmp_path, how):
    """A real CLI process over 20,000 rows, stopped mid-stream: kill -9 leaves only whole
    lines; Ctrl-C and SIGTERM are served between blocks (the run stops within seconds
    with 130/143, not at the end of the input). The same command then completes: one
    line per task, the values of an uninterrupted run."""
    data = tmp_path / "in.jsonl"
    _big(data, 20_000)
    out = tmp_path / "run"
    proc = _run(data, out)
    _wait_for_lines(out / "scores.jsonl", 2_000, proc)
    proc.send_signal({"kill -9": signal.SIGKILL, "SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}[how])
    rc = proc.wait(timeout=60)
    assert rc == {"kill -9": -9, "SIGINT": 130, "SIGTERM": 143}[how]
    first = _lines(out / "scores.jsonl")  # whole lines only: every one parses
    assert 0 < len(first) < 40_000
    assert _run(data, out).wait(timeout=600) == 0
    lines = _lines(out / "scores.jsonl")
    keys = [(d["sample_id"], d["metric"]) for d in lines]
    assert len(keys) == len(set(keys)) == 40_000
    clean = evaluate(data, "precision@5,ndcg@10", ["native"], out=tmp_path / "clean", quiet=True)
    got = {(d["sample_id"], d["metric"]): d["value"] for d in lines}
    assert got == {(s, m): v for s, m, v in clean.to_pandas()[["sample_id", "metric", "value"]].itertuples(index=False)}
