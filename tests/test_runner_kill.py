"""Crash safety of a real `unified-eval run` subprocess against the loopback judge server.

What is provable about "no re-billed calls": a judge call whose answer reached the cache
is never paid again. The calls that can be paid twice are those in flight when the
process died (sent, not yet cached) — at most the judge concurrency. So:

    chat_count(killed run) + chat_count(resume) <= chat_count(one cold run) + concurrency

and the resumed folder holds exactly one score line per task, with the same values as
the cold run (the loopback server answers deterministically per prompt).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_server import JudgeServer
from support import as_read, cli_env

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
CLI = Path(sys.executable).parent / "unified-eval"
METRICS = "faithfulness,context_relevancy,precision@3"
CONCURRENCY = 4

pytestmark = pytest.mark.slow


def _cmd(out: Path, url: str) -> list[str]:
    return [
        str(CLI),
        "run",
        str(DATA),
        "--metrics",
        METRICS,
        "--out",
        str(out),
        "--base-url",
        url,
        "--model",
        "loopback",
        "--concurrency",
        str(CONCURRENCY),
        "--quiet",
    ]


def _score_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(as_read(json.loads(line)))
        except ValueError:
            pass  # a torn line at the moment we peek
    return out


def _wait_lines(path: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if len(_score_lines(path)) >= n:
            return
        time.sleep(0.005)


@pytest.fixture(scope="module")
def server():
    with JudgeServer(latency=0.02) as srv:
        yield srv


@pytest.fixture(scope="module")
def cold(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("cold")
    server.reset_counts()
    subprocess.run(_cmd(out, server.base_url), env=cli_env(), check=True, capture_output=True, timeout=300)
    rows = _score_lines(out / "scores.jsonl")
    return {
        "calls": server.chat_count,
        "values": {(d["sample_id"], d["metric"]): d["value"] for d in rows},
        "n": len(rows),
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_then_resume_is_exactly_once_and_not_rebilled(server, cold, tmp_path, seed):
    rng = random.Random(seed)
    out = tmp_path / "run"
    server.reset_counts()
    proc = subprocess.Popen(
        _cmd(out, server.base_url), env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    target = rng.randint(1, cold["n"] - 2)
    _wait_lines(out / "scores.jsonl", target, proc)
    time.sleep(rng.uniform(0, 0.05))
    assert proc.poll() is None, "the run finished before the kill; make the server slower"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = len(_score_lines(out / "scores.jsonl"))
    assert 0 < before < cold["n"]

    res = subprocess.run(_cmd(out, server.base_url), env=cli_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]  # every line parses
    keys = [(d["sample_id"], d["metric"], d["backend"]) for d in rows]
    assert len(keys) == len(set(keys)) == cold["n"]
    assert {(d["sample_id"], d["metric"]): d["value"] for d in rows} == cold["values"]
    print(
        f"seed {seed}: killed at {before}/{cold['n']} lines; paid {server.chat_count} calls over "
        f"both runs vs {cold['calls']} cold"
    )
    assert server.chat_count <= cold["calls"] + CONCURRENCY, (server.chat_count, cold["calls"])
    assert "sk-test" not in (out / "summary.json").read_text()


def test_ctrl_c_stops_cleanly_and_resume_completes(server, cold, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        _cmd(out, server.base_url), env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_lines(out / "scores.jsonl", 10, proc)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    line = next(x for x in err.splitlines() if x.startswith("interrupted: "))
    n_done = int(line.split()[1])
    assert f"of {cold['n']} scored; resume with: unified-eval run" in line and f"--out {out}" in line
    rows = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert len(rows) == n_done == len({(d["sample_id"], d["metric"]) for d in rows})
    res = subprocess.run(_cmd(out, server.base_url), env=cli_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert len((out / "scores.jsonl").read_text().splitlines()) == cold["n"]
