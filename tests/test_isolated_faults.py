"""An isolated backend's worker under real faults: a real CLI process, a real worker
process (ragas 0.3.9 in its own environment), real signals.

- kill -9 of the worker mid-run: the tasks it was running are errors naming how it died,
  the run goes on and ends (exit 3); the same command with ``--retry-errors`` completes
  with one line per task;
- a worker stuck on a judge that never answers: SIGTERM to the run ends it (143) within
  seconds, and the worker with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_server import JudgeServer
from support import cli_env

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
CLI = Path(sys.executable).parent / "unified-eval"
ENVS = Path(os.environ["UNIFIED_ENVS_DIR"])  # the machine's (tests/conftest.py)
KEY = "sk-test-not-a-real-key"

pytestmark = pytest.mark.slow


def workers_of(pid: int) -> list[int]:
    """The isolated workers whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"isolated/worker.py" in cmdline:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def command(srv: JudgeServer, out: Path, n: int) -> list[str]:
    return [
        str(CLI), "run", str(DATA), "--backend", "ragas@0.3.9", "--metrics", "faithfulness",
        "--base-url", srv.base_url, "--model", "m", "--max-samples", str(n), "--out", str(out),
        "--cache", str(out.parent / "cache.sqlite"),
    ]  # fmt: skip


def test_kill_9_of_the_worker_is_a_task_error_and_the_same_command_completes(tmp_path):
    out = tmp_path / "run"
    env = {**cli_env(), "UNIFIED_ENVS_DIR": str(ENVS)}
    with JudgeServer(latency=1.0) as srv:
        cmd = command(srv, out, 6)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            (worker,) = wait_for(lambda: workers_of(proc.pid), 120, "the worker")
            wait_for(lambda: srv.request_count > 0, 60, "a judge request from the worker")
            os.kill(worker, signal.SIGKILL)
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill() if proc.poll() is None else None
        assert proc.returncode == 3, err[-2000:]
        first = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
        assert len({d["sample_id"] for d in first}) == len(first) == 6
        died = [d for d in first if d["value"] is None]
        assert died and all("worker died (killed by signal SIGKILL)" in d["error"] for d in died)
        again = subprocess.run([*cmd, "--retry-errors"], env=env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stderr[-2000:]
    lines = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert sorted(d["sample_id"] for d in lines) == sorted(d["sample_id"] for d in first)
    assert all(d["value"] is not None for d in lines)
    for text in (err, again.stderr, again.stdout):
        assert KEY not in text


def test_sigterm_ends_a_run_whose_worker_is_stuck_and_the_worker_with_it(tmp_path):
    out = tmp_path / "run"
    env = {**cli_env(), "UNIFIED_ENVS_DIR": str(ENVS)}
    with JudgeServer(latency=120.0) as srv:  # a judge that does not answer within the test
        proc = subprocess.Popen(
            command(srv, out, 2), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            (worker,) = wait_for(lambda: workers_of(proc.pid), 120, "the worker")
            wait_for(lambda: srv.request_count > 0, 60, "a judge request from the worker")
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
            took = time.monotonic() - sent
        finally:
            proc.kill() if proc.poll() is None else None
    assert proc.returncode == 143
    assert took < 15, took
    assert wait_for(lambda: not alive(worker), 10, "the worker to end")
