"""The Ray executor end to end, against the loopback judge server and a real local Ray
(num_cpus=2, one session for the module): the same results as a local run, an actor
killed mid-run, a real `unified-eval run --executor ray` killed with -9 and resumed, a
caller's own judge shipped with cloudpickle, and the one-line stops: a judge key missing
on the workers, a backend that cannot be built there.

Each run is 60 samples x 3 metrics = 180 tasks (two LLM metrics in one group, one
deterministic), so the module stays within a minute or so on two shared cores.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'unified-rag-eval[ray]'")

from judge_server import JudgeServer
from support import as_read

from unified.api import aevaluate, evaluate
from unified.judge import JudgeConfig, OpenAIChatJudge, build_judges
from unified.judge.base import ChatJudge, Judges
from unified.platforms.ray_executor import RayExecutor, connect

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).parent / "unified-eval"
METRICS = "faithfulness,context_relevancy,precision@3"
N_SAMPLES = 60
TASKS = N_SAMPLES * 3
KEY = "sk-test-not-a-real-key"


@pytest.fixture(scope="module")
def server():
    with JudgeServer(latency=0.02) as srv:
        yield srv


@pytest.fixture(scope="module")
def ray_session():
    os.environ.pop("RAY_ADDRESS", None)
    os.environ.setdefault("OPENAI_API_KEY", KEY)  # before Ray starts: its workers inherit it
    ray, started = connect(num_cpus=2)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """60 distinct samples (the 28 examples, varied so every prompt differs)."""
    rows = [json.loads(x) for x in (ROOT / "examples" / "data" / "rag_examples.jsonl").read_text().splitlines()]
    out = tmp_path_factory.mktemp("data") / "samples.jsonl"
    with open(out, "w") as f:
        for i in range(N_SAMPLES):
            row = dict(rows[i % len(rows)])
            row["id"] = f"{row['id']}-{i}"
            row["user_input"] = f"{row['user_input']} (variant {i})"
            f.write(json.dumps(row) + "\n")
    return out


def _judge(server: JudgeServer, **kw: Any) -> JudgeConfig:
    return JudgeConfig(base_url=server.base_url, model="loopback", **kw)


def _lines(out: Path) -> list[dict]:
    path = out / "scores.jsonl"
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rows.append(as_read(json.loads(line)))
        except ValueError:
            pass  # a line being written as we peek
    return rows


def _values(rows: list[dict]) -> dict[tuple[str, str, str], float | None]:
    return {(d["sample_id"], d["metric"], d["backend"]): d["value"] for d in rows}


def _exactly_once(rows: list[dict]) -> None:
    keys = [(d["sample_id"], d["metric"], d["backend"]) for d in rows]
    assert len(keys) == len(set(keys)) == TASKS
    assert [d for d in rows if d.get("error")] == []


@pytest.fixture(scope="module")
def reference(server, data, tmp_path_factory) -> dict[str, Any]:
    """A cold local run: the values and judge calls every Ray run must reproduce."""
    out = tmp_path_factory.mktemp("local")
    server.reset_counts()
    evaluate(str(data), METRICS, judge=_judge(server), out=out, quiet=True, concurrency=8)
    rows = _lines(out)
    _exactly_once(rows)
    summary = json.loads((out / "summary.json").read_text())
    return {
        "values": _values(rows),
        "calls": server.chat_count,
        "summary": summary,
        "hashes": {(d["sample_id"], d["metric"]): (d["sample_hash"], d["config_hash"]) for d in rows},
    }


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parents[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
    except OSError:
        return b""


def _alive(pids: set[int]) -> set[int]:
    out = set()
    for p in pids:
        try:
            state = (Path("/proc") / str(p) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(p)
    return out


def _cli(data: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [
        str(CLI),
        "run",
        str(data),
        "--metrics",
        METRICS,
        "--out",
        str(out),
        "--base-url",
        url,
        "--model",
        "loopback",
        "--concurrency",
        "4",
        "--quiet",
        "--executor",
        "ray",
        *extra,
    ]


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL", "UNIFIED_EMBEDDING", "RAY_ADDRESS")
    }
    env["OPENAI_API_KEY"] = KEY
    return env


def test_cli_ray_run_killed_with_9_then_resumed_on_ray_is_exactly_once(server, ray_session, data, reference, tmp_path):
    out = tmp_path / "run"
    # the killed run starts its own local Ray (the default); the resume joins the module's
    server.reset_counts()
    proc = subprocess.Popen(
        _cli(data, out, server.base_url), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    end = time.monotonic() + 180
    while time.monotonic() < end and proc.poll() is None and len(_lines(out)) < 40:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before the kill: " + proc.stderr.read().decode()[-2000:]
    family = _descendants(proc.pid)
    assert any(b"raylet" in _cmdline(p) for p in family), "the run did not start its own Ray"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    before = len(_lines(out))
    assert 40 <= before < TASKS
    # the driver's own Ray goes with it (Ray's reaper); only its two idle agents outlive it,
    # by about a minute (they time out reporting to the dead GCS, then exit)
    agents = {p for p in family if _cmdline(p).startswith((b"ray::DashboardAgent", b"ray::RuntimeEnvAgent"))}
    end = time.monotonic() + 30
    while _alive(family - agents) and time.monotonic() < end:
        time.sleep(0.2)
    assert not _alive(family - agents), f"the killed run's Ray still runs: {[_cmdline(p) for p in _alive(family)]}"

    address = ray_session.get_runtime_context().gcs_address
    res = subprocess.run(
        _cli(data, out, server.base_url, "--ray-address", address),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    rows = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]  # every line parses
    _exactly_once(rows)
    assert _values(rows) == reference["values"]
    # answers that reached the shared cache are not paid again: at most the calls in flight
    assert server.chat_count <= reference["calls"] + 4, (server.chat_count, reference["calls"])
    assert KEY not in (out / "summary.json").read_text() + (out / "run.json").read_text()
    assert "--executor ray" in " ".join(json.loads((out / "run.json").read_text())["invocations"][-1]["command"])


def test_a_ray_run_writes_what_a_local_run_writes_with_limits_divided(server, ray_session, data, reference, tmp_path):
    out = tmp_path / "ray"
    ex = RayExecutor(num_actors=2)
    server.reset_counts()
    evaluate(
        str(data),
        METRICS,
        judge=_judge(server, concurrency=5, requests_per_minute=60000),
        out=out,
        quiet=True,
        concurrency=7,
        executor=ex,
    )
    rows = _lines(out)
    _exactly_once(rows)
    assert _values(rows) == reference["values"]
    # same fingerprints (resume works across executors), same calls, same summary counts
    assert {(d["sample_id"], d["metric"]): (d["sample_hash"], d["config_hash"]) for d in rows} == reference["hashes"]
    assert server.chat_count == reference["calls"]
    summary = json.loads((out / "summary.json").read_text())
    for key in ("rows_read", "rows_scored", "n_errors"):
        assert summary.get(key) == reference["summary"].get(key), key
    assert summary["timings"]["judge_calls"] == reference["summary"]["timings"]["judge_calls"] == reference["calls"]
    # limits: the two actors' shares add up to the run's, never more
    limits = [info["limits"] for info in ex.pool.info]
    assert sorted(x["window"] for x in limits) == [3, 4]
    assert sorted(x["native.chat"]["concurrency"] for x in limits) == [2, 3]
    assert [x["native.chat"]["requests_per_minute"] for x in limits] == [30000, 30000]
    assert ex.stats["duplicates_dropped"] == ex.stats["deaths"] == 0
    # and the folder resumes locally with nothing left to do
    server.reset_counts()
    evaluate(str(data), METRICS, judge=_judge(server), out=out, quiet=True)
    assert server.chat_count == 0 and len(_lines(out)) == TASKS


async def test_killing_an_actor_mid_run_loses_and_doubles_nothing(server, ray_session, data, reference, tmp_path):
    out = tmp_path / "run"
    ex = RayExecutor(num_actors=2)
    killed: list[int] = []

    async def kill_one() -> None:
        while len(_lines(out)) < 20 or not ex.actors:
            await asyncio.sleep(0.005)
        killed.append(len(_lines(out)))
        ray_session.kill(ex.actors[0])

    killer = asyncio.create_task(kill_one())
    await aevaluate(str(data), METRICS, judge=_judge(server), out=out, quiet=True, concurrency=4, executor=ex)
    await asyncio.wait_for(killer, 1)
    rows = _lines(out)
    _exactly_once(rows)
    assert _values(rows) == reference["values"]
    assert killed and killed[0] < TASKS
    assert ex.stats["deaths"] >= 1 and ex.stats["replaced"] >= 1 and ex.stats["resent_groups"] >= 1, ex.stats
    assert ex.stats["failed_groups"] == 0


class OwnJudge(ChatJudge):
    """A caller's own judge (no JudgeConfig on it): shipped to the actors with cloudpickle;
    its HTTP client is made where it is used."""

    def __init__(self, url: str):
        self.url, self.model = url, "loopback"
        self._inner: OpenAIChatJudge | None = None

    def _judge(self) -> OpenAIChatJudge:
        if self._inner is None:
            self._inner = OpenAIChatJudge(JudgeConfig(base_url=self.url, model="loopback"))
        return self._inner

    async def ask(self, messages, schema, **params):
        return await self._judge().ask(messages, schema, **params)

    def __getstate__(self) -> dict:
        return {"url": self.url, "model": self.model, "_inner": None}


def test_a_callers_own_judge_is_shipped_with_cloudpickle(server, ray_session, data, reference, tmp_path):
    from ray import cloudpickle

    from unified.judge.cache import CachedChatJudge, JudgeCache

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests/
    try:
        store = JudgeCache(tmp_path / "cache.sqlite")
        judges = Judges(chat=CachedChatJudge(OwnJudge(server.base_url), store))
        out = tmp_path / "run"
        evaluate(
            str(data),
            METRICS,
            judges=judges,
            out=out,
            quiet=True,
            concurrency=4,
            max_samples=20,
            executor=RayExecutor(num_actors=2),
        )
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    rows = _lines(out)
    assert len(rows) == 60 and not [d for d in rows if d.get("error")]
    assert {k: v for k, v in _values(rows).items()} == {
        k: v for k, v in reference["values"].items() if k in _values(rows)
    }
    assert store.stats()["chat"] > 0  # the actors wrote their answers to the caller's cache file


def test_a_judge_key_missing_on_the_workers_stops_the_run_with_one_line(
    server, ray_session, data, tmp_path, monkeypatch
):
    # set only now, after Ray started: its workers do not have it, as on a node where nobody exported it
    monkeypatch.setenv("UNIFIED_TEST_DRIVER_ONLY_KEY", "sk-test-driver-only-key")
    judge = _judge(server, api_key_env="UNIFIED_TEST_DRIVER_ONLY_KEY")
    with pytest.raises(ValueError) as e:
        evaluate(str(data), METRICS, judge=judge, out=tmp_path / "run", quiet=True, executor=RayExecutor(num_actors=1))
    msg = str(e.value)
    assert "\n" not in msg and "has no $UNIFIED_TEST_DRIVER_ONLY_KEY" in msg and "runtime_env" in msg
    assert "sk-test-driver-only-key" not in msg
    assert not (tmp_path / "run" / "scores.jsonl").read_text().strip()


def test_a_backend_that_cannot_be_built_in_an_actor_stops_the_run_with_one_line(server, ray_session, data, tmp_path):
    from ray import cloudpickle

    from unified.adapters.native import NativeBackend

    class DriverOnly(NativeBackend):
        def __init__(self, judges=None, **options):
            if os.getpid() != options["driver_pid"]:
                raise RuntimeError("this backend needs a device the worker lacks")
            super().__init__(judges, **options)

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        judges = build_judges(_judge(server), cache=False)
        with pytest.raises(ValueError) as e:
            evaluate(
                str(data),
                METRICS,
                [DriverOnly(judges, driver_pid=os.getpid())],
                judges=judges,
                out=tmp_path / "run",
                quiet=True,
                executor=RayExecutor(num_actors=1),
            )
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert str(e.value) == (
        "a Ray actor could not build the run's backends: RuntimeError: this backend needs a device the worker lacks"
    )


def test_retry_errors_on_ray_rescores_only_the_failed_tasks(server, ray_session, data, reference, tmp_path):
    out = tmp_path / "run"
    judge = _judge(server, max_retries=0)
    server.force_fault("500", 12)
    evaluate(str(data), METRICS, judge=judge, out=out, quiet=True, concurrency=4, executor=RayExecutor(num_actors=2))
    first = _lines(out)
    # failed, or degraded (a dual-judge metric that lost one judge to a fault): both are redone
    failed = {(d["sample_id"], d["metric"]) for d in first if d.get("error") or d.get("degraded")}
    assert failed and len(first) == TASKS
    server.reset_counts()
    evaluate(
        str(data),
        METRICS,
        judge=judge,
        out=out,
        quiet=True,
        concurrency=4,
        retry_errors=True,
        executor=RayExecutor(num_actors=2),
    )
    rows = _lines(out)
    _exactly_once(rows)
    new = _values(rows)
    # the redone tasks now hold what a healthy judge gives; the others are untouched
    assert all(new[(sid, m, "native")] == reference["values"][(sid, m, "native")] for sid, m in failed)
    kept = {(d["sample_id"], d["metric"]): d["value"] for d in first if not d.get("error") and not d.get("degraded")}
    assert all(new[(sid, m, "native")] == v for (sid, m), v in kept.items())
    assert 0 < server.chat_count < reference["calls"] / 2  # only the failed groups went to the judge again
