"""What a run promises (README "What a run promises"), one test per broken promise of
issue 10: no stale, doubled, lost or silently failed score, and every fault ends in one
line with the right exit code.

In-process runs go through typer's CliRunner; locks, signals and disks use real
subprocesses of `unified-eval`. The loopback judge server is plumbing only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_server import JudgeServer
from support import as_read, cli_env
from typer.testing import CliRunner

from unified.cli.app import app
from unified.report import Report

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
CLI = Path(sys.executable).parent / "unified-eval"


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def lines(path: Path) -> list[dict]:
    """A JSONL file\'s lines; score lines in the full shape every reader sees (full_line)."""
    return [as_read(json.loads(x)) for x in path.read_text().splitlines() if x.strip()]


def keys(path: Path) -> list[tuple]:
    return [(d.get("row_error", False), d["sample_id"], d["metric"], d["backend"]) for d in lines(path)]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def ir_rows(n: int = 4) -> list[dict]:
    return [
        {"id": f"s{i}", "user_input": f"question {i}?", "retrieved_ids": ["a", "b", "c"], "relevant_ids": ["a"]}
        for i in range(n)
    ]


# ---------------------------------------------------------------- a score belongs to what produced it


def test_edited_data_is_rescored_not_reused(tmp_path):
    data = write_rows(tmp_path / "d.jsonl", ir_rows())
    out = tmp_path / "o"
    assert invoke("run", data, "--metrics", "precision@3", "--out", out, "--quiet").exit_code == 0
    before = {d["sample_id"]: d["value"] for d in lines(out / "scores.jsonl")}
    rows = ir_rows()
    rows[1]["retrieved_ids"] = ["x", "y", "z"]  # same id, new content
    write_rows(data, rows)
    r = invoke("run", data, "--metrics", "precision@3", "--out", out)
    assert r.exit_code == 0, r.output
    assert "1 sample(s) changed" in r.output
    after = {d["sample_id"]: d["value"] for d in lines(out / "scores.jsonl")}
    assert len(keys(out / "scores.jsonl")) == 4 == len(set(keys(out / "scores.jsonl")))
    assert before["s1"] > 0 and after["s1"] == 0.0  # the new retrieval, not the old score
    assert {k: v for k, v in after.items() if k != "s1"} == {k: v for k, v in before.items() if k != "s1"}
    assert json.loads((out / "summary.json").read_text())["counts"]["samples_changed"] == 1


def test_rows_removed_from_the_input_leave_the_folder(tmp_path):
    data = write_rows(tmp_path / "d.jsonl", ir_rows(4))
    out = tmp_path / "o"
    invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet")
    write_rows(data, ir_rows(2))
    assert invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet").exit_code == 0
    assert sorted(d["sample_id"] for d in lines(out / "scores.jsonl")) == ["s0", "s1"]
    summary = json.loads((out / "summary.json").read_text())
    assert [a["count"] for a in summary["aggregates"]] == [2]


def test_metrics_not_asked_this_time_lose_their_stale_and_orphaned_lines(tmp_path):
    """A run that asks for fewer metrics still owns the folder's truth: a precision@3 line
    of content that changed, or of a row that left the input, is dropped, not reported as
    current (found by a hostile-input pass: it stayed, in the table and the summary)."""
    data = write_rows(tmp_path / "d.jsonl", ir_rows(4))
    out = tmp_path / "o"
    assert invoke("run", data, "--metrics", "precision@3,mrr", "--out", out, "--quiet").exit_code == 0
    rows = ir_rows(3)  # s3 leaves the input
    rows[1]["retrieved_ids"] = ["x", "y", "z"]  # s1 changes
    write_rows(data, rows)
    r = invoke("run", data, "--metrics", "mrr", "--out", out)
    assert r.exit_code == 0, r.output
    got = {(d["sample_id"], d["metric"]) for d in lines(out / "scores.jsonl")}
    assert got == {("s0", "mrr"), ("s1", "mrr"), ("s2", "mrr"), ("s0", "precision@3"), ("s2", "precision@3")}
    summary = json.loads((out / "summary.json").read_text())
    assert {a["metric"]: a["count"] for a in summary["aggregates"]}.get("precision@3", 0) == 2
    assert "precision@3 (native): 2 line(s) of changed or removed samples dropped and not scored again" in r.output


def test_a_row_still_in_error_keeps_its_failure_for_metrics_not_asked(tmp_path):
    """A row that fails in both runs, for another reason the second time: the metric not
    asked for again must still count its failure (its line's text hash changed)."""
    rows = ir_rows(3)
    rows[1]["retrieved_ids"] = "a"  # a string, not a list: a row error
    data = write_rows(tmp_path / "d.jsonl", rows)
    out = tmp_path / "o"
    assert invoke("run", data, "--metrics", "precision@3,mrr", "--out", out, "--quiet").exit_code == 3
    rows[1]["retrieved_ids"] = ["a"]
    rows[1]["relevant_ids"] = "a"  # now another field fails
    write_rows(data, rows)
    assert invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet").exit_code == 3
    errors = {d["metric"] for d in lines(out / "scores.jsonl") if d.get("error")}
    assert errors == {"mrr", "precision@3"}


def test_changed_judge_configuration_is_refused_naming_what_changed(tmp_path, judge_server):
    out = tmp_path / "o"
    base = [
        "run",
        DATA,
        "--metrics",
        "faithfulness,mrr",
        "--base-url",
        judge_server.base_url,
        "--max-samples",
        "2",
        "--out",
        out,
        "--quiet",
    ]
    assert invoke(*base, "--model", "judge-A").exit_code == 0
    r = invoke(*base, "--model", "judge-B", "--single-judge")
    assert r.exit_code == 2
    err = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(err) == 1 and "judge.model: judge-A → judge-B" in err[0] and "--fresh" in err[0]
    assert "single_judge: False → True" in err[0]
    assert {d["config_hash"] for d in lines(out / "scores.jsonl") if d["metric"] == "faithfulness"}.__len__() == 1
    # deterministic metrics do not depend on the judge: only faithfulness is in conflict
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "mrr",
        "--model",
        "judge-B",
        "--base-url",
        judge_server.base_url,
        "--max-samples",
        "2",
        "--out",
        out,
        "--quiet",
    )
    assert r.exit_code == 0, r.output
    r = invoke(*base, "--model", "judge-B", "--single-judge", "--fresh")
    assert r.exit_code == 0, r.output
    rows = lines(out / "scores.jsonl")
    assert len(rows) == 4 and len({d["config_hash"] for d in rows if d["metric"] == "faithfulness"}) == 1


def test_resume_hint_reproduces_every_option(tmp_path, judge_server):
    cfg = tmp_path / "run.toml"
    cfg.write_text('[judge]\nmodel = "m-from-config"\n')
    out = tmp_path / "o"
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "faithfulness",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--single-judge",
        "--map",
        "question=user_input",
        "--config",
        cfg,
        "--embedding-model",
        "e5",
        "--judge2-base-url",
        judge_server.base_url,
        "--structured-output",
        "prompt",
        "--max-samples",
        "2",
        "--max-retries",
        "0",
        "--timeout",
        "2",
        "--out",
        out,
        "--quiet",
    )
    assert r.exit_code == 3
    hint = next(x for x in r.output.splitlines() if x.startswith("score them again once fixed:"))
    for part in (
        "--single-judge",
        "--map question=user_input",
        f"--config {cfg}",
        "--embedding-model e5",
        f"--judge2-base-url {judge_server.base_url}",
        "--structured-output prompt",
        "--max-samples 2",
        f"--out {out}",
        "--retry-errors",
        "--max-retries 0",
        "--timeout 2.0",
    ):
        assert part in hint, part


# ---------------------------------------------------------------- every input row is accounted for


def test_a_real_sample_named_like_a_row_error_is_still_scored(tmp_path):
    rows = [json.dumps(r) for r in ir_rows(3)]
    rows[1] = '{"user_input": '  # row 2 is malformed
    rows.append(json.dumps({"id": "row:2", "user_input": "real?", "retrieved_ids": ["a"], "relevant_ids": ["a"]}))
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "o"
    r = invoke("run", data, "--metrics", "mrr", "--out", out)
    assert r.exit_code == 3  # the malformed row is a failed task
    got = {(d["row_error"], d["sample_id"]): d for d in lines(out / "scores.jsonl")}
    assert got[(False, "row:2")]["value"] == 10.0
    assert got[(True, "row:2")]["error"] and len(got) == 4
    assert "rows read 4 = 3 scored + 1 rejected" in r.output
    # and a rerun neither rescores nor drops either of them
    r = invoke("run", data, "--metrics", "mrr", "--out", out, "--allow-errors")
    assert r.exit_code == 0 and len(lines(out / "scores.jsonl")) == 4


# ---------------------------------------------------------------- failures are loud


def test_dead_judge_is_a_grouped_failure_summary_and_exit_3(tmp_path):
    out = tmp_path / "o"
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "faithfulness,context_relevancy,precision@3",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--max-retries",
        "0",
        "--max-samples",
        "6",
        "--out",
        out,
        "--quiet",
    )
    assert r.exit_code == 3, r.output
    assert "12 task(s) failed:" in r.output
    cause = [x for x in r.output.splitlines() if x.strip().startswith("12 ×")]
    assert len(cause) == 1 and "127.0.0.1:9" in cause[0], r.output
    assert "--retry-errors" in r.output
    by_metric = {}
    for d in lines(out / "scores.jsonl"):
        by_metric.setdefault(d["metric"], []).append(d)
    assert all(d["value"] is not None for d in by_metric["precision@3"])  # the rest still scored


def test_allow_errors_is_the_only_way_to_exit_0_with_failures(tmp_path):
    out = tmp_path / "o"
    args = [
        "run",
        DATA,
        "--metrics",
        "faithfulness,mrr",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--max-retries",
        "0",
        "--max-samples",
        "2",
        "--out",
        out,
        "--quiet",
    ]
    assert invoke(*args).exit_code == 3
    assert invoke(*args, "--allow-errors").exit_code == 0


def test_gate_on_a_metric_with_failures_fails(tmp_path):
    """A gate is not a pass on the mean of the few tasks that scored."""
    with JudgeServer(fault_rate=0.5, faults=("500",), seed=3) as srv:
        args = [
            "run",
            DATA,
            "--metrics",
            "context_relevancy",
            "--base-url",
            srv.base_url,
            "--model",
            "m",
            "--max-retries",
            "0",
            "--single-judge",
            "--out",
            tmp_path / "o",
            "--quiet",
            "--fail-under",
            "context_relevancy=0",
        ]
        r = invoke(*args)
        summary = json.loads((tmp_path / "o" / "summary.json").read_text())
        agg = summary["aggregates"][0]
        assert 0 < agg["errors"] < agg["count"]
        assert r.exit_code == 1, r.output
        assert "tasks failed" in r.output and "--max-error-rate" in r.output
        # the same folder, errors accepted explicitly: the gate judges the mean of the rest
        r = invoke(*args, "--max-error-rate", "1", "--allow-errors")
        assert r.exit_code == 0, r.output


# ---------------------------------------------------------------- secrets


def test_credentials_in_urls_never_reach_an_artefact(tmp_path):
    out = tmp_path / "o"
    secret = "SUPERSECRETKEY123"
    url = f"http://user:{secret}@127.0.0.1:9/v1?api_key={secret}2"
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "faithfulness,mrr",
        "--base-url",
        url,
        "--model",
        "m",
        "--max-retries",
        "0",
        "--max-samples",
        "2",
        "--out",
        out,
    )
    assert r.exit_code == 3
    assert secret not in r.output
    for f in out.iterdir():
        if f.is_file() and f.suffix in (".json", ".jsonl", ".html"):
            assert secret not in f.read_text(encoding="utf-8"), f.name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["judges"]["judge"]["max_tokens"] == 2048  # a count, not a secret


# ---------------------------------------------------------------- one writer, signals, disks


def _slow_run(out: Path, url: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            str(CLI),
            "run",
            str(DATA),
            "--metrics",
            "faithfulness,context_relevancy",
            "--base-url",
            url,
            "--model",
            "m",
            "--concurrency",
            "2",
            "--out",
            str(out),
            *extra,
        ],
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(pred, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow
def test_second_writer_exits_2_and_kill_9_releases_the_lock(tmp_path):
    out = tmp_path / "o"
    with JudgeServer(latency=0.2) as srv:
        first = _slow_run(out, srv.base_url, "--quiet")
        try:
            assert _wait_for(lambda: (out / "scores.jsonl").exists() and (out / "scores.jsonl").stat().st_size)
            second = subprocess.run(
                [
                    str(CLI),
                    "run",
                    str(DATA),
                    "--metrics",
                    "faithfulness",
                    "--out",
                    str(out),
                    "--base-url",
                    srv.base_url,
                    "--model",
                    "m",
                    "--quiet",
                ],
                env=cli_env(),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert second.returncode == 2
            assert f"{out} is in use by pid {first.pid}" in second.stderr
            assert "Traceback" not in second.stderr
        finally:
            first.kill()
            first.wait()
        # kill -9 released the lock: a resume finishes with one line per task
        r = subprocess.run(
            [
                str(CLI),
                "run",
                str(DATA),
                "--metrics",
                "faithfulness,context_relevancy",
                "--base-url",
                srv.base_url,
                "--model",
                "m",
                "--out",
                str(out),
                "--quiet",
            ],
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert r.returncode == 0, r.stderr
    k = keys(out / "scores.jsonl")
    assert len(k) == len(set(k)) == 2 * len(DATA.read_text().splitlines())


@pytest.mark.slow
def test_sigterm_is_like_ctrl_c(tmp_path):
    out = tmp_path / "o"
    with JudgeServer(latency=0.2) as srv:
        proc = _slow_run(out, srv.base_url, "--quiet")
        assert _wait_for(lambda: (out / "scores.jsonl").exists() and len(lines(out / "scores.jsonl")) >= 3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert "interrupted by SIGTERM" in err and f"--out {out}" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert (out / "report.html").exists()
    k = keys(out / "scores.jsonl")
    assert len(k) == len(set(k))


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    if shutil.which("mount") is None or not _mount_tmpfs(mnt, "96k"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_full_disk_is_one_line_and_keeps_what_was_written(small_disk):
    out = small_disk / "o"
    rows = [
        {"id": f"s{i}", "user_input": "q" * 400 + str(i), "retrieved_ids": ["a"], "relevant_ids": ["a"]}
        for i in range(400)
    ]
    data = write_rows(small_disk.parent / "big.jsonl", rows)
    r = subprocess.run(
        [str(CLI), "run", str(data), "--metrics", "mrr,precision@1", "--out", str(out), "--no-cache", "--quiet"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    err = [x for x in r.stderr.splitlines() if x.strip()]
    assert any(x.startswith("error: cannot write") and "no space left" in x for x in err), r.stderr
    assert "Traceback" not in r.stderr
    got = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines() if x.strip().endswith("}")]
    assert got and all(d["value"] == 10.0 for d in got)  # what was written is intact


def test_read_only_out_is_one_line(small_disk):
    out = small_disk / "o"
    data = write_rows(small_disk.parent / "d.jsonl", ir_rows(3))
    assert invoke("run", data, "--metrics", "mrr", "--out", out, "--no-cache", "--quiet").exit_code == 0
    before = (out / "scores.jsonl").read_text()
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True).returncode == 0
    rows = ir_rows(3)
    rows[0]["retrieved_ids"] = ["b"]
    write_rows(data, rows)
    r = subprocess.run(
        [str(CLI), "run", str(data), "--metrics", "mrr", "--out", str(out), "--no-cache", "--quiet"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    err = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(err) == 1 and "read-only file system" in err[0] and str(out) in err[0], r.stderr
    assert (out / "scores.jsonl").read_text() == before


# ---------------------------------------------------------------- the fault matrix: the rest


def _one_line_per_task(out: Path, n_rows: int, pairs: int) -> None:
    k = keys(out / "scores.jsonl")
    assert len(k) == len(set(k)) == n_rows * pairs


def test_corrupt_cache_is_one_line_exit_2_and_results_intact(tmp_path, judge_server):
    from test_judge_cache_faults import PAGE, filled_cache

    out, cache = tmp_path / "o", tmp_path / "cache.sqlite"
    data = write_rows(tmp_path / "d.jsonl", ir_rows(3))
    assert invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet").exit_code == 0
    before = (out / "scores.jsonl").read_text()
    filled_cache(cache)
    raw = bytearray(cache.read_bytes())
    raw[PAGE : PAGE + 6 * PAGE] = bytes((i * 37 + 11) % 256 for i in range(6 * PAGE))
    cache.write_bytes(bytes(raw))
    r = invoke(
        "run",
        data,
        "--metrics",
        "mrr,faithfulness",
        "--out",
        out,
        "--cache",
        cache,
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
    )
    assert r.exit_code == 2, r.output
    err = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(err) == 1 and str(cache) in err[0] and "--no-cache" in err[0]
    assert "Traceback" not in r.output and (out / "scores.jsonl").read_text() == before


@pytest.mark.slow
def test_judge_killed_mid_run_every_task_ends_once_and_the_exit_code_says_so(tmp_path):
    out = tmp_path / "o"
    n_rows = len(DATA.read_text().splitlines())
    srv = JudgeServer(latency=0.15).start()
    proc = subprocess.Popen(
        [
            str(CLI),
            "run",
            str(DATA),
            "--metrics",
            "faithfulness,precision@3",
            "--base-url",
            srv.base_url,
            "--model",
            "m",
            "--concurrency",
            "2",
            "--max-retries",
            "1",
            "--out",
            str(out),
            "--quiet",
        ],
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _wait_for(
            lambda: (
                (out / "scores.jsonl").exists()
                and sum(d["metric"] == "faithfulness" for d in lines(out / "scores.jsonl")) >= 3
            )
        )
    finally:
        srv.stop()  # the judge dies under the run
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 3, err
    _one_line_per_task(out, n_rows, 2)
    rows = lines(out / "scores.jsonl")
    assert all(d["value"] is not None for d in rows if d["metric"] == "precision@3")
    assert any(d["error"] for d in rows) and "--retry-errors" in err and "task(s) failed" in err


def test_hanging_judge_ends_with_explained_failures_and_deterministic_scores(tmp_path):
    from judge_server import SilentServer

    out = tmp_path / "o"
    with SilentServer() as srv:
        r = invoke(
            "run",
            DATA,
            "--metrics",
            "faithfulness,context_relevancy,precision@3",
            "--base-url",
            srv.base_url,
            "--model",
            "m",
            "--timeout",
            "1",
            "--max-samples",
            "20",
            "--out",
            out,
            "--quiet",
        )
    assert r.exit_code == 3, r.output
    _one_line_per_task(out, 20, 3)
    rows = lines(out / "scores.jsonl")
    assert all(d["value"] is not None for d in rows if d["metric"] == "precision@3")
    assert all("did not answer within 1s" in d["error"] for d in rows if d["metric"] != "precision@3")
    groups = [x for x in r.output.splitlines() if x.strip().startswith("40 ×")]
    assert len(groups) == 1 and "did not answer within 1s" in groups[0], r.output


# ---------------------------------------------------------------- no silent half-results


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scores_from_fewer_judges_than_asked_are_loud_and_retried(tmp_path, judge_server):
    """Judge B down: native still scores on judge A alone (degraded). That is not the dual
    judge the run asked for: exit 3, said on stderr, and --retry-errors redoes them."""
    port = _free_port()
    out = tmp_path / "o"
    args = [
        "run",
        DATA,
        "--metrics",
        "faithfulness",
        "--base-url",
        judge_server.base_url,
        "--model",
        "a",
        "--judge2-model",
        "b",
        "--judge2-base-url",
        f"http://127.0.0.1:{port}/v1",
        "--max-retries",
        "0",
        "--max-samples",
        "4",
        "--out",
        out,
        "--quiet",
    ]
    r = invoke(*args)
    assert r.exit_code == 3, r.output
    assert "4 task(s) scored by fewer judges than asked (degraded):" in r.output
    assert f"judge at http://127.0.0.1:{port}/v1 (model b) refused the connection" in r.output
    assert json.loads((out / "summary.json").read_text())["n_degraded"] == 4
    page = (out / "report.html").read_text()
    assert "4 degraded</a>" in page and "<h3 id='degraded'>Degraded (4)</h3>" in page
    assert f"http://127.0.0.1:{port}/v1 (model b) refused the connection" in page.split("id='degraded'")[1]
    assert "errors=0, degraded=4;" in repr(Report(out))
    # a gate on values from fewer judges than asked: FAIL, even with --allow-errors (it
    # passed on the mean of judge A alone, exit 0)
    from unified.testing import assert_gates

    gated = invoke(*args, "--fail-under", "faithfulness=0", "--allow-errors")
    assert gated.exit_code == 1, gated.output
    assert (
        "FAIL faithfulness (native): 0 of 4 tasks failed and 4 were scored by fewer judges than asked (degraded)"
        in " ".join(gated.output.split())
    )
    with pytest.raises(AssertionError, match="4 were scored by fewer judges than asked"):
        assert_gates(Report(out), {"faithfulness": 0})
    with JudgeServer(port=port):
        r = invoke(*args, "--retry-errors")
    assert r.exit_code == 0, r.output
    rows = lines(out / "scores.jsonl")
    assert len(rows) == 4 and not any(d["degraded"] for d in rows)
    assert "id='degraded'" not in (out / "report.html").read_text() and "degraded=" not in repr(Report(out))


def test_a_metric_asked_for_and_never_scored_fails_the_run(tmp_path, monkeypatch):
    for k in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL"):
        monkeypatch.delenv(k, raising=False)
    r = invoke("run", DATA, "--metrics", "faithfulness,mrr", "--out", tmp_path / "o", "--quiet")
    assert r.exit_code == 3, r.output
    assert "error: faithfulness was not scored: no LLM judge configured" in r.output
    assert (
        invoke(
            "run", DATA, "--metrics", "faithfulness,mrr", "--out", tmp_path / "o", "--quiet", "--allow-errors"
        ).exit_code
        == 0
    )


def test_a_gate_on_a_metric_not_asked_for_is_refused_before_scoring(tmp_path):
    r = invoke("run", DATA, "--metrics", "mrr", "--fail-under", "precision@5=2", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "--fail-under precision@5: not among --metrics" in r.output
    assert not (tmp_path / "o").exists()


def test_wall_time_adds_up_over_resumes(tmp_path):
    data = write_rows(tmp_path / "d.jsonl", ir_rows(4))
    out = tmp_path / "o"
    invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet", "--max-samples", "2")
    first = json.loads((out / "summary.json").read_text())["timings"]
    invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet")
    second = json.loads((out / "summary.json").read_text())["timings"]
    assert second["wall_seconds_total"] == pytest.approx(first["seconds"] + second["seconds"], abs=0.01)


def test_a_base_url_without_a_scheme_is_refused_without_echoing_it(tmp_path):
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "faithfulness",
        "--base-url",
        "user:SECRETKEY9@127.0.0.1:9/v1",
        "--model",
        "x",
        "--out",
        tmp_path / "o",
    )
    assert r.exit_code == 2 and "base_url must start with http:// or https://" in r.output
    assert "SECRETKEY9" not in r.output and not (tmp_path / "o").exists()


# a compare of two backends that needs no judge, on four rows
SMALL_COMPARE = (
    "compare",
    DATA,
    "--metrics",
    "semantic_similarity",
    "--backends",
    "native,embedding",
    "--max-samples",
    "4",
)


def test_sigterm_while_the_comparison_is_written_exits_143_after_the_files_are_whole(tmp_path, monkeypatch):
    """A SIGTERM that lands after the scores, while compare writes crosscheck.json and the
    report, must not kill the process half-way (the default action): the files end whole,
    then the command exits 143."""
    import unified.cli.run as cli_run

    real = cli_run._crosscheck

    def crosscheck_under_sigterm(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # delivered now, in the main thread
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_run, "_crosscheck", crosscheck_under_sigterm)
    before = signal.getsignal(signal.SIGTERM)
    out = tmp_path / "o"
    r = invoke(*SMALL_COMPARE, "--out", out, "--quiet")
    assert r.exit_code == 143, r.output
    assert json.loads((out / "crosscheck.json").read_text())["metrics"]
    assert "</html>" in (out / "report.html").read_text()
    assert signal.getsignal(signal.SIGTERM) is before  # the command put the handler back


def test_sigterm_while_compare_finishes_its_run_still_writes_the_comparison(tmp_path, monkeypatch):
    """A SIGTERM after every task was scored, while the run wrote its folder, ended the
    command before ``crosscheck.json`` was written, under a message that said the folder
    was complete."""
    from unified.run.prepare import IndexRule

    real = IndexRule.write

    def index_under_sigterm(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(IndexRule, "write", index_under_sigterm)
    out = tmp_path / "o"
    r = invoke(*SMALL_COMPARE, "--out", out, "--quiet")
    assert r.exit_code == 143, r.output
    assert "its folder is complete" in r.output and "resume" not in r.output
    assert json.loads((out / "crosscheck.json").read_text())["metrics"]
    assert json.loads((out / "summary.json").read_text())["interrupted"] is False


def test_diff_never_pairs_a_sample_whose_content_changed(tmp_path):
    data = write_rows(tmp_path / "d.jsonl", ir_rows(4))
    invoke("run", data, "--metrics", "precision@3", "--out", tmp_path / "a", "--quiet")
    rows = ir_rows(4)
    rows[0]["retrieved_ids"] = ["x", "y", "z"]  # the data changed, not the evaluator
    write_rows(data, rows)
    invoke("run", data, "--metrics", "precision@3", "--out", tmp_path / "b", "--quiet")
    r = invoke("diff", tmp_path / "a", tmp_path / "b", "--json", tmp_path / "d.json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads((tmp_path / "d.json").read_text())
    assert row["n_paired"] == 3 and row["changed"] == 1 and row["delta"] == 0.0 and not row["movers"]
    assert "1 sample(s) changed content between the runs" in r.output


def test_a_line_that_is_not_json_is_said_not_silently_dropped(tmp_path):
    """One hand-broken line in the middle of scores.jsonl: its task is missing from every
    figure, so every reader says so (before, only report.html did, blaming a killed run)."""
    data = write_rows(tmp_path / "d.jsonl", ir_rows(4))
    out = tmp_path / "o"
    assert invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet").exit_code == 0
    text = (out / "scores.jsonl").read_text().splitlines()
    text[1] = text[1].replace('"value":', '"value":0', 1)  # "value":010.0 is not JSON
    (out / "scores.jsonl").write_text("\n".join(text) + "\n")
    with pytest.warns(
        UserWarning,
        match="1 line\\(s\\) of .*scores.jsonl are not score lines \\(not JSON, or no metric, backend and sample id\\) and were skipped",
    ):
        assert len(Report.from_dir(out).to_pandas()) == 3
    r = invoke("report", out)
    assert r.exit_code == 0 and "warning: 1 line(s) of" in r.output, r.output
    # the same run command scores the task again: whole again, no warning
    assert invoke("run", data, "--metrics", "mrr", "--out", out, "--quiet").exit_code == 0
    assert len(lines(out / "scores.jsonl")) == 4


def test_diff_says_what_its_n_leaves_out(tmp_path):
    # a run that failed on some samples, or scored others, showed n, the means and Δ over
    # the paired samples without a word about the rest
    rows = ir_rows(6)
    invoke("run", write_rows(tmp_path / "a.jsonl", rows[:5]), "--metrics", "precision@3", "--out", tmp_path / "a", "-q")
    # the first sample only in A, the last only in B, s1 failed in B (its line says so)
    invoke("run", write_rows(tmp_path / "b.jsonl", rows[1:]), "--metrics", "precision@3", "--out", tmp_path / "b", "-q")
    lines = [json.loads(x) for x in (tmp_path / "b" / "scores.jsonl").read_text().splitlines()]
    for d in lines:
        if d["sample_id"] == "s1":
            d.update(value=None, passed=None, error="judge failed: HTTP 500")
    (tmp_path / "b" / "scores.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    r = invoke("diff", tmp_path / "a", tmp_path / "b", "--json", tmp_path / "d.json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads((tmp_path / "d.json").read_text())
    assert (row["n_paired"], row["failed"], row["only_a"], row["only_b"]) == (3, 1, 1, 1)
    assert (
        "precision@3 (native): 1 failed in either run, 1 only in A, 1 only in B: not compared; "
        "n, the means and Δ cover the 3 paired sample(s)" in " ".join(r.output.split())
    )


def test_a_judge_url_whose_query_names_another_deployment_is_another_judge(tmp_path, judge_server):
    """``?deployment=small`` and ``?deployment=large`` on one gateway are two judges: the
    query was dropped from the judge's identity, so the second resumed into the first's
    folder (and its cache) and asked nothing."""
    out = tmp_path / "o"
    base = ["run", DATA, "--metrics", "faithfulness", "--model", "m", "--single-judge", "--max-samples", "2"]
    first = invoke(*base, "--base-url", judge_server.base_url + "?deployment=small", "--out", out, "-q")
    assert first.exit_code == 0, first.output
    again = invoke(*base, "--base-url", judge_server.base_url + "?deployment=large", "--out", out, "-q")
    assert again.exit_code == 2 and "judge.endpoint" in again.output
    assert "deployment=small" in again.output and "deployment=large" in again.output


def test_a_price_change_between_runs_into_one_folder_is_said(tmp_path, judge_server):
    """A line's usd is fixed when it is written: a second run with another --price summed
    lines at both prices as one total, without a word."""
    out = tmp_path / "o"
    base = ["run", DATA, "--metrics", "faithfulness", "--base-url", judge_server.base_url, "--model", "m"]
    base += ["--single-judge", "--out", out, "-q"]
    assert invoke(*base, "--max-samples", "2", "--price", "m=1/2").exit_code == 0
    same = invoke(*base, "--max-samples", "3", "--price", "m=1/2")
    assert same.exit_code == 0 and "price tables" not in same.output
    other = invoke(*base, "--max-samples", "4", "--price", "m=100/200")
    assert other.exit_code == 0, other.output
    assert "note: this folder's lines were priced under 2 price tables" in " ".join(other.output.split())
    assert json.loads((out / "summary.json").read_text())["usd_price_tables"] == 2
    tables = json.loads((out / "run.json").read_text())["price_tables"]
    assert tables == [{"m": [1.0, 2.0]}, {"m": [100.0, 200.0]}]


def test_what_retried_attempts_cost_stays_in_the_folders_spend(tmp_path):
    """--retry-errors drops a failed line and writes the retry's: the failed attempt's
    calls were paid, yet the folder's USD counted only the retry (it under-reported)."""
    broken = {"on": True}
    out = tmp_path / "o"
    base = ["run", DATA, "--metrics", "faithfulness", "--model", "m", "--single-judge", "--max-samples", "3"]
    base += ["--price", "m=1000/2000", "--out", out, "-q"]
    with JudgeServer(answer_fn=lambda body: "no verdict here" if broken["on"] else None) as srv:
        first = invoke(*base, "--base-url", srv.base_url)
        assert first.exit_code == 3, first.output
        failed = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
        assert len(failed) == 3 and all(d["error"] and d["cost"]["calls"] > 0 for d in failed)
        paid = sum(d["cost"]["usd"] for d in failed)
        broken["on"] = False
        again = invoke(*base, "--base-url", srv.base_url, "--retry-errors")
        assert again.exit_code == 0, again.output
        once_more = invoke(*base, "--base-url", srv.base_url, "--retry-errors")  # nothing failed: nothing added
    summary = json.loads((out / "summary.json").read_text())
    spent = summary["retried_spend"]
    assert spent["usd"] == pytest.approx(paid) and spent["calls"] == sum(d["cost"]["calls"] for d in failed)
    assert set(spent["by_pair"]) == {"faithfulness|native"}
    lines = sum(a["cost"]["usd"] for a in summary["aggregates"])
    note = " ".join(again.output.split())
    assert f"failed attempts that --retry-errors dropped had cost {spent['calls']} judge call(s)" in note
    assert f"with them, the lines and the dropped attempts cost ${paid + lines:.4f}" in note
    assert once_more.exit_code == 0 and json.loads((out / "run.json").read_text())["retried_spend"] == spent["by_pair"]


def test_a_dropped_repeat_is_counted_once_beside_its_folded_line(tmp_path):
    """A folded line's cost sums its repeats. When they are still on disk (a kill before
    compaction) the retry folds again from the ones that scored, which then count again:
    only the failed repeat is spent and gone. An unfinished task's failed repeat counts."""
    from unified.run.runfolder import RunFolder

    folder = RunFolder(tmp_path)
    folder.create()

    def line(sample: str, calls: int, error: str | None = "judge failed", **kw: object) -> str:
        d = {"sample_id": sample, "metric": "faithfulness", "backend": "native", "sample_hash": "h" + sample}
        return (
            json.dumps({**d, "value": None, "error": error, "cost": {"calls": calls, "usd": calls / 10}, **kw}) + "\n"
        )

    folded = line("s1", 6, error=None, value=5.0, degraded=True)  # repeats 0 and 2 scored, 1 failed: 2 calls each
    folder.scores.write_text(folded + line("s2", 1, error=None, value=7.0))
    folder.repeats.write_text(
        line("s1", 2, error=None, value=5.0) + line("s1", 2) + line("s1", 2, error=None) + line("s3", 3)
    )
    dropped = folder.drop_errors(["faithfulness|native"])
    assert dropped.lines == 1
    assert dropped.spent["faithfulness|native"].calls == 2 + 3
    assert dropped.spent["faithfulness|native"].usd == pytest.approx(0.5)
    assert len(folder.repeats.read_text().splitlines()) == 2 and len(folder.scores.read_text().splitlines()) == 1
    # the same folded line without its repeats on disk (compacted): its whole cost was paid and goes
    folder.scores.write_text(folded)
    folder.repeats.write_text("")
    assert folder.drop_errors(["faithfulness|native"]).spent["faithfulness|native"].calls == 6


def test_retried_spend_is_on_record_before_anything_else_can_fail(tmp_path, monkeypatch):
    """The lines go first: a kill or an error between the drop and the manifest lost what
    the dropped attempts cost for good. A hand-edited entry is read, never a crash."""
    from unified.api import evaluate
    from unified.run.runfolder import RunFolder

    out = tmp_path / "o"
    kw = dict(
        out=str(out), progress=False, quiet=True, prices={"m": (1000.0, 2000.0)}, max_samples=2, single_judge=True
    )
    with JudgeServer(answer_fn=lambda body: "no verdict") as srv:
        kw["judge"] = {"base_url": srv.base_url, "model": "m"}
        evaluate(str(DATA), "faithfulness", ["native"], **kw)
        paid = sum(json.loads(x)["cost"]["calls"] for x in (out / "scores.jsonl").read_text().splitlines())

        def die(*_a: object, **_k: object) -> None:
            raise RuntimeError("killed")

        monkeypatch.setattr(RunFolder, "scan", die)
        with pytest.raises(RuntimeError):
            evaluate(str(DATA), "faithfulness", ["native"], retry_errors=True, **kw)
    assert (out / "scores.jsonl").read_text() == ""
    assert json.loads((out / "run.json").read_text())["retried_spend"]["faithfulness|native"]["calls"] == paid
    monkeypatch.undo()
    manifest = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**manifest, "retried_spend": {"faithfulness|native": "junk"}}))
    with JudgeServer() as srv:
        kw["judge"] = {"base_url": srv.base_url, "model": "m"}
        report = evaluate(str(DATA), "faithfulness", ["native"], **kw)
    assert report is not None and "retried_spend" not in json.loads((out / "summary.json").read_text())
