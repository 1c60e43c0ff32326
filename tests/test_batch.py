"""Batch mode (``--batch``, ``evaluate(batch=...)``; unified.judge.batch) against the
loopback server's Batch API (tests/judge_batch_server.py) with the real openai client:
plumbing only — the answers are synthetic, so these tests check that a batch run gets
the same answers as an online run, pays each call once across a kill -9, and turns an
unanswered request into a task error that --retry-errors redoes; never judgment quality."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_batch_server import BatchEndpoints
from judge_server import JudgeServer, binary_answer_fn
from support import cli_env

from unified.api import evaluate
from unified.judge import JudgeConfig
from unified.judge.base import CallRecord
from unified.judge.batch import BatchSettings, batch_settings, progress_line
from unified.judge.batch_ledger import BatchLedger
from unified.judge.prices import batch_price, parse_prices, usd_cost

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
CLI = Path(sys.executable).parent / "unified-eval"
KEY = "sk-batch-secret-0123456789abcdef"
PRICES = {"fake": (1.0, 4.0)}
FAST = {"window": 0.2, "poll_first": 0.05, "poll_max": 0.2}


def _values(report) -> list[tuple]:
    return sorted((s.backend, s.metric, s.sample_id, s.value, bool(s.error)) for s in report.iter_scores())


def _run(srv, out, *, batch, cache, backends=("native",), metrics="faithfulness", n=4, **kw):
    return evaluate(
        str(DATA),
        metrics,
        list(backends),
        judge=JudgeConfig(base_url=srv.base_url, model="fake", max_retries=1),
        out=out,
        batch=batch,
        cache=cache,
        max_samples=n,
        progress=False,
        **kw,
    )


def test_batch_values_equal_online_values_and_enter_the_cache(tmp_path, monkeypatch):
    """Native faithfulness (extraction → verification, two judges): one job per step over
    all samples, no online chat call, the same values as an online run on the same
    judge; a rerun on the same cache asks nothing."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = BatchEndpoints(delay=0.2)
    with JudgeServer(batch=be) as srv:
        batch = _run(srv, tmp_path / "b", batch=FAST, cache=tmp_path / "b.sqlite", prices=PRICES)
        assert srv.chat_count == 0  # nothing went online
        assert len(be.jobs) == 2, [len(j.lines) for j in be.jobs.values()]  # one job per step
        assert be.submitted and max(be.submitted.values()) == 1 and max(be.answered.values()) == 1
        online = _run(srv, tmp_path / "o", batch=False, cache=tmp_path / "o.sqlite", prices=PRICES)
        assert srv.chat_count == sum(be.answered.values())  # the same requests, asked online
        # the same tokens, at the batch price (half of OpenAI's online price)
        usd = [sum(s.cost.usd for s in r.iter_scores()) for r in (batch, online)]
        assert usd[0] == pytest.approx(usd[1] / 2) and usd[0] > 0
        # a rerun into a new folder on the batch run's cache (same judge): every answer is cached
        calls, jobs = srv.request_count, len(be.jobs)
        again = _run(srv, tmp_path / "b2", batch=FAST, cache=tmp_path / "b.sqlite")
        assert srv.request_count == calls and len(be.jobs) == jobs
    assert _values(batch) == _values(online) == _values(again)
    assert not any(err for *_, err in _values(batch))
    ledger = (tmp_path / "b" / "batches.jsonl").read_text()
    assert [json.loads(x)["event"] for x in ledger.splitlines()] == ["upload", "batch", "end"] * 2
    assert KEY not in ledger and "127.0.0.1" in ledger  # the endpoint, never the key


def test_the_folder_reports_what_its_jobs_were_billed_after_the_lines_lost_it(tmp_path, monkeypatch, capsys):
    """A job's answers read into the cache by a run whose tasks wrote no line (killed;
    here: --fresh, which keeps batches.jsonl and the cache) are cache hits at $0 in the
    next run's lines; batches.jsonl still knows what the folder was billed."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out, cache = tmp_path / "b", tmp_path / "b.sqlite"
    with JudgeServer(batch=BatchEndpoints(delay=0.1)) as srv:
        first = _run(srv, out, batch=FAST, cache=cache, prices=PRICES)
        billed = json.loads((out / "summary.json").read_text())["batches"]
        lines_usd = sum(s.cost.usd or 0.0 for s in first.iter_scores())
        assert billed["jobs"] == 2 and billed["usd"] == pytest.approx(lines_usd) and lines_usd > 0
        capsys.readouterr()
        again = _run(srv, out, batch=FAST, cache=cache, prices=PRICES, fresh=True)
    assert sum(s.cost.usd or 0.0 for s in again.iter_scores()) == 0.0  # every answer a cache hit
    assert json.loads((out / "summary.json").read_text())["batches"] == billed
    err = capsys.readouterr().err
    assert f"were billed ${billed['usd']:.4f}; its score lines count $0.0000" in " ".join(err.split())


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ragas", "deepeval"])
def test_framework_batch_values_equal_online_values(backend, tmp_path, monkeypatch):
    """RAGAS and DeepEval chains through batch jobs: the same values as online."""
    pytest.importorskip(backend)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    metrics = "faithfulness,context_recall"
    be = BatchEndpoints(delay=0.1)
    with JudgeServer(batch=be, answer_fn=binary_answer_fn(max_items=3)) as srv:
        batch = _run(
            srv, tmp_path / "b", batch=FAST, cache=tmp_path / "b.sqlite", backends=(backend,), metrics=metrics, n=3
        )
        assert srv.chat_count == 0 and be.jobs
        online = _run(
            srv, tmp_path / "o", batch=False, cache=tmp_path / "o.sqlite", backends=(backend,), metrics=metrics, n=3
        )
    assert _values(batch) == _values(online)
    assert any(v is not None for *_, v, _e in _values(batch))


@pytest.mark.parametrize("outcome", ["cancelled", "expired", "failed", "error-lines"])
def test_unanswered_requests_are_task_errors_that_retry_errors_redoes(outcome, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    if outcome == "error-lines":
        # the first line of the first job fails: custom ids hash the judge's URL, whose port
        # changes from run to run, so a rule on the id's value (id % 3) failed none at times
        chosen: set[str] = set()
        be = BatchEndpoints(fail_ids=lambda cid: chosen.add(cid) or cid in chosen if not chosen else cid in chosen)
    else:
        be = BatchEndpoints(outcome=outcome, partial=0.5)
    out, cache = tmp_path / "run", tmp_path / "c.sqlite"
    with JudgeServer(batch=be) as srv:
        first = _run(srv, out, batch=FAST, cache=cache)
        errors = [s.error for s in first.iter_scores() if s.error]
        assert errors, "an unanswered request must fail its task"
        want = {
            "error-lines": "(completed): request failed (HTTP 500",
            # a job that fails validation answers no line: its own errors say why
            "failed": "ended failed without answering this request (model_not_found: no model 'x' (loopback))",
        }.get(outcome, f"({outcome}): request failed")
        assert all("batch batch_" in e for e in errors) and any(want in e for e in errors), errors
        assert all(s.value is None for s in first.iter_scores() if s.error)  # never a silent value
        answered_before = dict(be.answered)
        be.outcome, be.fail_ids = "completed", None
        second = _run(srv, out, batch=FAST, cache=cache, retry_errors=True)
        assert srv.chat_count == 0
    assert not [s.error for s in second.iter_scores() if s.error]
    assert len(list(second.iter_scores())) == len(list(first.iter_scores()))
    # what a job answered was never asked again (it came from the cache)
    assert all(be.answered[c] == 1 for c in answered_before), be.answered


def _wait_for(pred, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_kill_9_while_a_job_runs_then_the_same_command_pays_each_call_once(tmp_path):
    """The CLI is killed (SIGKILL) while its first job is in flight; the same command
    finds the job in batches.jsonl and polls it: every request submitted and answered
    once, no online call, the run completes, and the key is nowhere in the folder or
    the output."""
    out = tmp_path / "run"
    env = {**cli_env(), "OPENAI_API_KEY": KEY}
    be = BatchEndpoints(delay=3.0)
    with JudgeServer(batch=be) as srv:
        cmd = [str(CLI), "run", str(DATA), "-m", "faithfulness", "--base-url", srv.base_url, "--model", "fake"]
        cmd += ["--max-samples", "4", "--out", str(out), "--cache", str(tmp_path / "c.sqlite")]
        cmd += ["--batch", "--batch-poll", "0.2", "--batch-window", "0.2"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ledger = out / "batches.jsonl"
            _wait_for(lambda: ledger.exists() and '"event":"batch"' in ledger.read_text(), 120, "the first job")
            assert be.polls == 0 or all(j.status == "in_progress" for j in be.jobs.values())
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(30)
        first_out, first_err = proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        assert len(be.jobs) == 1 and not any(be.answered.values())
        job_id = next(iter(be.jobs))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr[-3000:]
        assert f"batch {job_id}:" in r.stderr  # the same job was polled, not sent again
        assert srv.chat_count == 0
        assert len(be.jobs) == 2  # the killed step's job, then the verification step's
        assert max(be.submitted.values()) == 1 and set(be.answered) == set(be.submitted)
        assert max(be.answered.values()) == 1
    for text in (first_out, first_err, r.stdout, r.stderr):
        assert KEY not in text
    for f in out.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f
    assert f"Bearer {KEY}" in be.auth_headers  # the key was really sent, to the server only
    scores = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert len(scores) == 4 and all(s["value"] is not None for s in scores)


def test_an_upload_whose_job_line_was_cut_off_is_found_by_its_input_file(tmp_path, monkeypatch):
    """Killed between POST /v1/batches and writing its line: the ledger has the upload
    only. The rerun finds the job by its input file id (GET /v1/batches) and polls it."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out, cache = tmp_path / "run", tmp_path / "c.sqlite"
    be = BatchEndpoints()
    with JudgeServer(batch=be) as srv:
        _run(srv, out, batch=FAST, cache=tmp_path / "first.sqlite", n=2)
        lines = (out / "batches.jsonl").read_text().splitlines()
        # keep the first upload, drop its job line and everything after it
        (out / "batches.jsonl").write_text(lines[0] + "\n")
        jobs_before = len(be.jobs)
        again = _run(srv, out, batch=FAST, cache=cache, n=2, fresh=True)
        assert not [s.error for s in again.iter_scores() if s.error]
        first_job = next(iter(be.jobs))
        assert be.jobs[first_job].input_file_id == json.loads(lines[0])["file_id"]
        # the extraction step was found, not resubmitted; only verification went out again
        assert len(be.jobs) == jobs_before + 1
        assert max(be.submitted.values()) <= 2 and srv.chat_count == 0
    assert '"event":"batch"' in (out / "batches.jsonl").read_text().splitlines()[1]


def test_a_gguf_judge_refuses_batch_with_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"--batch needs an OpenAI-compatible HTTP judge.*in-process \.gguf"):
        evaluate(
            str(DATA),
            "faithfulness",
            ["native"],
            judge=JudgeConfig(model=str(tmp_path / "m.gguf")),
            out=tmp_path / "run",
            batch=True,
            progress=False,
        )
    assert not (tmp_path / "run").exists()  # refused before the folder was touched


def test_batch_on_ray_is_refused_before_the_folder_is_touched(tmp_path, judge_server):
    with pytest.raises(ValueError, match="--batch runs on the local executor"):
        _run(judge_server, tmp_path / "run", batch=True, cache=False, executor="ray")
    assert not (tmp_path / "run").exists()


def test_batch_settings_and_cli_flags_are_checked(tmp_path):
    assert batch_settings(True) == BatchSettings()
    assert batch_settings({"poll_max": 5}).poll_max == 5
    with pytest.raises(ValueError, match="unknown setting"):
        batch_settings({"pol_max": 5})
    with pytest.raises(ValueError, match="poll_first <= poll_max"):
        BatchSettings(poll_first=10, poll_max=1)
    r = subprocess.run(
        [str(CLI), "run", str(DATA), "-m", "mrr", "--batch-poll", "3", "--out", str(tmp_path / "x")],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--batch-poll needs --batch" in r.stderr


def test_batch_calls_are_priced_at_the_batch_rate():
    prices = parse_prices(["fake=1/4", "other=1/4", "other@batch=0.2/0.8"])
    assert batch_price(prices, "fake") == (0.5, 2.0) and batch_price(prices, "other") == (0.2, 0.8)

    def rec(model: str, batch: bool) -> CallRecord:
        return CallRecord(
            "chat", "", "", "", model, False, input_tokens=1_000_000, output_tokens=1_000_000, batch=batch
        )

    assert usd_cost([rec("fake", False)], prices) == pytest.approx(5.0)
    assert usd_cost([rec("fake", True)], prices) == pytest.approx(2.5)
    assert usd_cost([rec("other", True)], prices) == pytest.approx(1.0)
    assert usd_cost([rec("nameless", True)], prices) is None  # unknown, never a partial sum


def test_progress_line_and_ledger_resume_rule(tmp_path):
    from types import SimpleNamespace

    job = SimpleNamespace(
        id="b_12",
        status="in_progress",
        created_at=time.time() - 190,
        request_counts=SimpleNamespace(completed=140, failed=2, total=200),
    )
    assert progress_line(job) == "batch b_12: 140/200 done, 2 failed, in_progress, 3m"
    ledger = BatchLedger(tmp_path / "batches.jsonl")
    ledger.uploaded("f1", "http://h/v1", ["a", "b"])
    ledger.created("b1", "f1", "http://h/v1", 2)
    ledger.ended("b1", "expired", {"completed": 1, "failed": 1, "total": 2}, ["b"])
    with (tmp_path / "batches.jsonl").open("a") as fh:
        fh.write('{"event": "upl')  # a torn last line after a kill -9
    again = BatchLedger(tmp_path / "batches.jsonl")
    assert again.skipped_lines == 1
    assert again.find("http://h/v1", "a") == ("f1", "b1")  # answered: read from the job again
    assert again.find("http://h/v1", "b") is None  # unanswered: send again
    assert again.find("http://other/v1", "a") is None  # another endpoint's job is not ours


def test_a_job_whose_create_answer_was_lost_is_not_created_twice(tmp_path, monkeypatch):
    """POST /v1/batches made the job but its answer was lost (a 502, a timeout): the retry
    must find that job by its input file, not create a second one that is paid again."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = BatchEndpoints(lose_creates=1)
    with JudgeServer(batch=be) as srv:
        report = _run(srv, tmp_path / "run", batch=FAST, cache=tmp_path / "c.sqlite", n=2)
        assert not [s.error for s in report.iter_scores() if s.error]
        assert len(be.jobs) == 2, [j.input_file_id for j in be.jobs.values()]  # one per step
        assert max(be.submitted.values()) == 1 and max(be.answered.values()) == 1
    ledger = [json.loads(x) for x in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()]
    assert [r["event"] for r in ledger] == ["upload", "batch", "end"] * 2


def test_retry_errors_asks_again_what_a_job_answered_unusably(tmp_path, monkeypatch):
    """A job answered with HTTP 200 but text that is no JSON (even after the repair turn):
    the task fails. --retry-errors must ask the judge again, as an online run does, not
    replay the same unusable answers from batches.jsonl (a failure no retry could fix)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    broken = {"on": True}
    be = BatchEndpoints()
    with JudgeServer(batch=be, answer_fn=lambda body: "no json at all" if broken["on"] else None) as srv:
        out, cache = tmp_path / "run", tmp_path / "c.sqlite"
        first = _run(srv, out, batch=FAST, cache=cache, n=2)
        assert [s.error for s in first.iter_scores() if s.error], "an unusable answer must fail its task"
        broken["on"] = False
        second = _run(srv, out, batch=FAST, cache=cache, n=2, retry_errors=True)
        assert srv.chat_count == 0
    assert not [s.error for s in second.iter_scores() if s.error]
    assert all(s.value is not None for s in second.iter_scores())


def test_a_job_whose_result_files_are_gone_is_ended_and_retry_errors_sends_again(tmp_path, monkeypatch):
    """The job completed but its output file answers 404 (deleted, or past the provider's
    retention): the tasks fail naming the cause, batches.jsonl records the job as ended, and
    --retry-errors sends the requests again — before, every rerun polled the same job and
    failed the same way, so no retry could ever fix the tasks."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = BatchEndpoints()
    be.results_gone = True
    out, cache = tmp_path / "run", tmp_path / "c.sqlite"
    with JudgeServer(batch=be) as srv:
        first = _run(srv, out, batch=FAST, cache=cache, n=2)
        errors = [s.error for s in first.iter_scores() if s.error]
        assert errors and all("can no longer be read (HTTP 404" in e and "--retry-errors" in e for e in errors), errors
        assert all(s.value is None for s in first.iter_scores() if s.error)
        ledger = BatchLedger(out / "batches.jsonl")
        assert ledger.ended_jobs() and all("results unreadable" in ledger.ended_status(j) for j in ledger.ended_jobs())
        be.results_gone = False  # the provider is fine again; the lost answers stay lost
        second = _run(srv, out, batch=FAST, cache=cache, n=2, retry_errors=True)
        assert srv.chat_count == 0
    assert not [s.error for s in second.iter_scores() if s.error]
    assert all(s.value is not None for s in second.iter_scores())
    assert len(list(second.iter_scores())) == len(list(first.iter_scores()))


# ---------------------------------------------------------------- output files as real servers write them

#: what each hostile output line must be called in its task's error
HOSTILE_REASONS = {
    "not_json": "is not JSON",
    "non_object": "is not a JSON object",
    "duplicate": "appears 2 times in the job's results",
    "usage_string": "usage.prompt_tokens is 'many', not a whole number",
    "response_not_object": "its response is not an object",
}


def _bounded(srv, out, *, seconds: float = 60, batch=FAST, n: int = 4, **kw):
    """A batch run through ``unified.api.aevaluate`` under a deadline: a poller that dies
    or a job that never ends fails the test (TimeoutError) instead of hanging it."""
    from unified.api import aevaluate

    async def main():
        run = aevaluate(
            str(DATA),
            "faithfulness",
            ["native"],
            judge=JudgeConfig(base_url=srv.base_url, model="fake", max_retries=1),
            out=out,
            batch=batch,
            max_samples=n,
            progress=False,
            **kw,
        )
        return await asyncio.wait_for(run, seconds)

    return asyncio.run(main())


@pytest.mark.parametrize("kind", sorted(HOSTILE_REASONS))
def test_a_bad_output_line_fails_its_task_only_and_retry_errors_resends_only_it(kind, tmp_path, monkeypatch):
    """One line of a finished job's output is hostile (not JSON, not an object, a repeated
    custom_id, a usage count that is no number, a response that is no object): that
    request's task fails with one line naming why; every other task scores; the job is
    recorded as ended, so --retry-errors sends exactly that request again and completes.
    Before, the job's whole output was refused (or the poller died and the run hung at
    0/N), and every rerun read the same file and failed the same way."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = BatchEndpoints()
    be.hostile = kind
    out, cache = tmp_path / "run", tmp_path / "c.sqlite"
    with JudgeServer(batch=be) as srv:
        first = _bounded(srv, out, cache=cache)
        assert len(be.hurt) == 1
        errors = [s.error for s in first.iter_scores() if s.error]
        assert len(errors) == 1, errors  # only the hurt line's task
        assert HOSTILE_REASONS[kind] in errors[0] and "batch batch_" in errors[0] and "\n" not in errors[0], errors
        assert all(s.value is not None for s in first.iter_scores() if not s.error)
        assert len(list(first.iter_scores())) == 4
        ledger = BatchLedger(out / "batches.jsonl")
        assert ledger.ended_jobs() == set(be.jobs)  # every job closed, none left to poll forever
        assert ledger.find(ledger_endpoint(srv), be.hurt[0]) is None  # its request is the one to send again
        before = dict(be.submitted)
        second = _bounded(srv, out, cache=cache, retry_errors=True)
        assert srv.chat_count == 0
    assert not [s.error for s in second.iter_scores() if s.error]
    assert len(list(second.iter_scores())) == 4
    assert be.submitted[be.hurt[0]] == 2  # the hurt request, sent again once
    assert all(be.submitted[c] == 1 for c in before if c != be.hurt[0]), be.submitted


def ledger_endpoint(srv) -> str:
    from unified.redact import endpoint_of

    return endpoint_of(srv.base_url)


def test_raw_line_separators_inside_strings_are_one_line(tmp_path, monkeypatch):
    """JSON allows raw U+2028, U+2029 and U+0085 inside strings and real servers write them;
    str.splitlines() cuts a line there. Every task scores, with the values of an online run."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = BatchEndpoints()
    be.hostile = "u2028"
    with JudgeServer(batch=be) as srv:
        batch = _bounded(srv, tmp_path / "b", cache=tmp_path / "b.sqlite")
        assert be.hostile is None  # the job's output was written with the separators
        online = _run(srv, tmp_path / "o", batch=False, cache=tmp_path / "o.sqlite")
    assert not [s.error for s in batch.iter_scores() if s.error]
    assert _values(batch) == _values(online)


def test_a_job_stuck_in_progress_is_cancelled_at_max_wait_and_its_answers_kept(tmp_path, monkeypatch):
    """A job that never leaves in_progress: past max_wait (counted from its creation) the
    run cancels it, keeps what it answered, fails the rest with one line saying how to
    retry, and ends; --retry-errors sends only the unanswered requests and completes."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = BatchEndpoints(partial=0.5)
    be.hostile = "stuck"
    out, cache = tmp_path / "run", tmp_path / "c.sqlite"
    with JudgeServer(batch=be) as srv:
        first = _bounded(srv, out, cache=cache, batch={**FAST, "max_wait": 1.0})
        assert be.cancels == 1
        errors = [s.error for s in first.iter_scores() if s.error]
        # half the stuck job answered before its cancel: a row fails when any of its
        # extractions (the response's, the reference's) is in the unanswered half
        assert 1 <= len(errors) < 4, errors
        assert all("past max_wait" in e and "--retry-errors" in e for e in errors), errors
        assert sum(s.value is not None for s in first.iter_scores()) == 4 - len(errors)
        stuck_job = next(iter(be.jobs))
        unanswered = {c for c in be.submitted if be.answered[c] == 0}
        second = _bounded(srv, out, cache=cache, retry_errors=True)
    assert not [s.error for s in second.iter_scores() if s.error]
    assert be.jobs[stuck_job].status == "cancelled"
    assert all(be.submitted[c] == 2 for c in unanswered)
    assert len(unanswered) == len(be.jobs[stuck_job].lines) - int(len(be.jobs[stuck_job].lines) * be.partial)
    assert all(n == 1 for c, n in be.submitted.items() if c not in unanswered)


def test_a_job_that_never_ends_even_when_cancelled_is_given_up_and_closed(tmp_path, monkeypatch):
    """The provider leaves the job 'cancelling' for good: after cancel_wait its requests
    fail, the job is recorded as ended (every request failed), and --retry-errors sends
    them again in a new job."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = BatchEndpoints()
    be.hostile = "stuck_hard"
    out, cache = tmp_path / "run", tmp_path / "c.sqlite"
    with JudgeServer(batch=be) as srv:
        first = _bounded(srv, out, cache=cache, batch={**FAST, "max_wait": 0.5, "cancel_wait": 0.5})
        errors = [s.error for s in first.iter_scores() if s.error]
        assert len(errors) == 4 and all("still not ended" in e and "--retry-errors" in e for e in errors), errors
        assert BatchLedger(out / "batches.jsonl").ended_jobs() == set(be.jobs)
        second = _bounded(srv, out, cache=cache, retry_errors=True)
    assert not [s.error for s in second.iter_scores() if s.error]
    assert len(list(second.iter_scores())) == 4


def test_batch_wait_bound_follows_the_completion_window():
    assert BatchSettings().wait_bound() == 25 * 3600  # OpenAI's 24 h window, and an hour for its own expiry
    assert BatchSettings(max_wait=60).wait_bound() == 60
    with pytest.raises(ValueError, match="completion_window"):
        BatchSettings(completion_window="a day")
    with pytest.raises(ValueError, match="max_wait"):
        BatchSettings(max_wait=0)


def test_parse_results_reads_lines_as_jsonl_is_written():
    from unified.judge.batch import parse_results

    def line(cid, **body):
        return json.dumps(
            {"custom_id": cid, "response": {"status_code": 200, "body": {"s": "x\u2028y\u0085z", **body}}},
            ensure_ascii=False,
        ).encode()

    out = b"\r\n".join([line("a"), b'{"no": "id"}', b"\xff\xfe", line("b"), b""]) + b"\n"
    err = line("b", other=True) + b"\n" + line("c", usage={"prompt_tokens": 3.0, "completion_tokens": -1})
    r = parse_results([("file_1", out), ("file_2", err)])
    assert r.outcome("a")[0]["s"] == "x\u2028y\u0085z"  # one line, separators and \r\n read as JSON allows
    assert r.stray == ["line 2 of file_1 has no custom_id", "line 3 of file_1 is not UTF-8"]
    assert r.outcome("b") == (None, r.bad["b"]) and "line 4 of file_1, line 1 of file_2" in r.bad["b"]
    assert r.outcome("c") == (None, "usage.completion_tokens is -1, not a whole number of tokens")
    assert r.outcome("d") == (None, None)  # no line: the caller says how the job ended


def test_the_cli_ends_a_batch_run_with_a_bad_line_and_retry_errors_completes_it(tmp_path):
    """The same through the command line: exit 3 with the bad line's reason on stderr (and
    no hang), then --retry-errors exits 0 having sent one request again."""
    out = tmp_path / "run"
    env = {**cli_env(), "OPENAI_API_KEY": KEY}
    be = BatchEndpoints()
    be.hostile = "usage_string"
    with JudgeServer(batch=be) as srv:
        cmd = [str(CLI), "run", str(DATA), "-m", "faithfulness", "--base-url", srv.base_url, "--model", "fake"]
        cmd += ["--max-samples", "4", "--out", str(out), "--cache", str(tmp_path / "c.sqlite")]
        cmd += ["--batch", "--batch-poll", "0.2", "--batch-window", "0.2"]
        first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
        assert first.returncode == 3, first.stderr[-3000:]
        # the grouped failures show quoted values as '…'; scores.jsonl keeps the full line
        assert "1 task(s) failed" in first.stderr and "request failed (usage.prompt_tokens is" in first.stderr
        lines = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
        (error,) = [x["error"] for x in lines if x.get("error")]
        assert "batch batch_2 (completed): request failed (usage.prompt_tokens is 'many', not a whole" in error
        assert "\n" not in error
        second = subprocess.run([*cmd, "--retry-errors"], env=env, capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stderr[-3000:]
    assert be.submitted[be.hurt[0]] == 2 and sum(be.submitted.values()) == len(be.submitted) + 1
