"""Local vs Ray executors on the loopback judge server, and what one judge call costs.

Part 1 — the same run (native ``faithfulness``, cache off, every call reaches the
server) on the local executor and on Ray with 1 and 2 actors, at equal *total*
concurrency ``c`` (Ray divides it among the actors). Printed per executor::

    calls/s  = judge calls / wall seconds of evaluate()
    vs local = calls/s / calls/s of the local run
    start    = seconds to start the actors (Ray itself is started once, before timing)
    steady   = calls / (wall seconds - start): the rate once the actors are up
    driver   = CPU of this process (the driver) per judge call, µs
    actors   = CPU of all actors per judge call once they were up, µs

Part 2 — the CPU one judge call costs in one process at concurrency ``c``: a bare
``openai.AsyncOpenAI`` loop (same request, no validation) against our
``OpenAIChatJudge`` (schema, validation, retries bookkeeping, accounting), and the whole
local run (backend, prompts, parsing, writing) per call::

    µs/call = process CPU seconds / calls * 1e6;   one core's ceiling ≈ 1e6 / µs/call calls/s

Past that ceiling one process cannot go faster, whatever the judge pool can take: that
is when to scale out. On two shared cores Ray cannot speed anything up (the server, the
driver and the actors share them); the figures show its overhead and that throughput
grows with actors up to the cores.

At ``c`` = 32 the run is bound by the judge's latency (calls wait for calls), at 96 by
one process's CPU: there a second actor adds throughput.

Run: ``python benchmarks/executors.py [--latency 0.05] [--concurrency 32,96] [--samples 1200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from judge_overhead import Verdicts, start_server  # noqa: E402

from unified.api import evaluate  # noqa: E402
from unified.judge import JudgeConfig, OpenAIChatJudge, task_scope  # noqa: E402


def write_samples(path: Path, n: int) -> None:
    rows = [json.loads(x) for x in (ROOT / "examples" / "data" / "rag_examples.jsonl").read_text().splitlines()]
    with open(path, "w") as f:
        for i in range(n):
            row = dict(rows[i % len(rows)], id=f"s{i}")
            row["user_input"] = f"{row['user_input']} (variant {i})"
            f.write(json.dumps(row) + "\n")


def run_once(data: Path, url: str, c: int, executor: Any) -> dict[str, float]:
    judge = JudgeConfig(base_url=url, model="bench", concurrency=c, max_retries=0, timeout=60)
    with tempfile.TemporaryDirectory(prefix="bench-exec-") as out:
        cpu, t0 = time.process_time(), time.perf_counter()
        evaluate(
            str(data),
            "faithfulness",
            judge=judge,
            out=out,
            cache=False,
            quiet=True,
            concurrency=c,
            executor=executor,
            write_report=False,
        )
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu
        summary = json.loads((Path(out) / "summary.json").read_text())
    calls = summary["timings"]["judge_calls"]
    assert summary["n_errors"] == 0, summary["errors"][:3]
    return {"calls": calls, "seconds": seconds, "rate": calls / seconds, "cpu_us": cpu / calls * 1e6}


async def client_cost(url: str, c: int, n: int, ours: bool) -> tuple[float, float]:
    """(CPU µs per call, calls/s) of ``n`` calls at concurrency ``c``."""
    import openai

    from unified.judge.openai_client import schema_json

    sem = asyncio.Semaphore(c)
    judge = OpenAIChatJudge(JudgeConfig(base_url=url, model="bench", concurrency=c, max_retries=0, timeout=60))
    bare = openai.AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0, timeout=60)
    rf = {"type": "json_schema", "json_schema": {"name": "Verdicts", "schema": schema_json(Verdicts), "strict": False}}

    async def one(i: int) -> None:
        messages = [{"role": "user", "content": f"claim number {i}"}]
        if ours:
            with task_scope("bench", "cost", str(i)):
                await judge.ask(messages, Verdicts)
        else:
            async with sem:
                await bare.chat.completions.create(
                    model="bench", messages=messages, response_format=rf, temperature=0.0, max_tokens=2048
                )

    await asyncio.gather(*(one(-i - 1) for i in range(c)))  # warm the pools
    cpu, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu
    await judge.aclose()
    await bare.close()
    return cpu / n * 1e6, n / seconds


def part1(data: Path, url: str, levels: list[int]) -> None:
    from unified.platforms.ray_executor import RayExecutor, connect

    t0 = time.perf_counter()
    ray, started = connect(num_cpus=os.cpu_count())
    print(f"Ray started in {time.perf_counter() - t0:.1f}s (once; a run that starts its own pays this too)")
    print(
        f"\n{'c':>4} {'executor':<8} {'actors':>6} {'calls':>6} {'seconds':>8} {'calls/s':>8} {'vs local':>8} "
        f"{'start s':>7} {'steady/s':>8} {'vs local':>8} {'driver µs':>9} {'actors µs':>9}"
    )
    for c in levels:
        local = run_once(data, url, c, "local")
        print(
            f"{c:>4} {'local':<8} {'-':>6} {local['calls']:>6} {local['seconds']:>8.2f} {local['rate']:>8.1f} "
            f"{1:>8.2f} {'-':>7} {local['rate']:>8.1f} {1:>8.2f} {local['cpu_us']:>9.0f} {'-':>9}"
        )
        for n in range(1, (os.cpu_count() or 1) + 1):
            ex = RayExecutor(num_actors=n)
            r = run_once(data, url, c, ex)
            start = ex.stats["start_ms"] / 1000
            steady = r["calls"] / (r["seconds"] - start)
            actors_us = (ex.stats.get("actor_cpu_ms") or 0) * 1000 / r["calls"]
            print(
                f"{c:>4} {'ray':<8} {n:>6} {r['calls']:>6} {r['seconds']:>8.2f} {r['rate']:>8.1f} "
                f"{r['rate'] / local['rate']:>8.2f} {start:>7.2f} {steady:>8.1f} {steady / local['rate']:>8.2f} "
                f"{r['cpu_us']:>9.0f} {actors_us:>9.0f}"
            )
    if started:
        ray.shutdown()


def part2(url: str, c: int, n: int) -> None:
    print(f"\none process, concurrency {c}, {n} calls: CPU per judge call")
    print(f"{'client':<34} {'µs/call':>8} {'calls/s':>8} {'1-core ceiling':>15}")
    for label, ours in (("openai.AsyncOpenAI (bare loop)", False), ("unified OpenAIChatJudge", True)):
        us, rate = asyncio.run(client_cost(url, c, n, ours))
        print(f"{label:<34} {us:>8.0f} {rate:>8.1f} {1e6 / us:>13.0f}/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", default="32,96", help="total concurrency levels (comma list)")
    ap.add_argument("--samples", type=int, default=1200)
    ap.add_argument("--calls", type=int, default=2000, help="calls for the client cost (part 2)")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    proc, url = start_server(args.latency)
    try:
        print(
            f"loopback server {url}, latency {args.latency * 1000:.0f} ms, cache off, "
            f"{args.samples} samples x faithfulness (native), {os.cpu_count()} cores"
        )
        with tempfile.TemporaryDirectory(prefix="bench-data-") as tmp:
            data = Path(tmp) / "samples.jsonl"
            write_samples(data, args.samples)
            part1(data, url, levels)
        part2(url, levels[0], args.calls)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
