"""Throughput of the judge layer (cache off) against the loopback server.

The server (tests/judge_server.py) runs in its own process and answers every request
after a fixed ``latency`` without serialising them, so with ``c`` requests in flight the
best possible rate is ``c / latency`` calls per second. The printed ratio

    ratio = measured calls per second / (c / latency)

is the share of that bound the layer keeps (1.0 = no overhead); what it loses is our
client work: request building, JSON schema, pydantic validation, retries bookkeeping,
accounting, plus the openai/httpx client and the CPU shared with the server.

Run: ``python benchmarks/judge_overhead.py [--latency 0.05] [--calls 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from unified.judge import JudgeConfig, OpenAIChatJudge, task_scope

ROOT = Path(__file__).resolve().parent.parent


class Verdicts(BaseModel):
    verdicts: list[Literal["yes", "no", "idk"]]
    reason: str


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "judge_server.py"), "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("http"):
        proc.terminate()
        raise SystemExit("loopback server did not start")
    return proc, url


async def measure(url: str, concurrency: int, calls: int) -> float:
    judge = OpenAIChatJudge(
        JudgeConfig(base_url=url, model="bench", concurrency=concurrency, max_retries=0, timeout=30)
    )

    async def one(i: int) -> None:
        with task_scope("bench", "overhead", str(i)):
            await judge.ask([{"role": "user", "content": f"claim number {i}"}], Verdicts)

    await asyncio.gather(*(one(-i - 1) for i in range(concurrency)))  # warm the pool
    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    elapsed = time.perf_counter() - start
    await judge.aclose()
    return calls / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--calls", type=int, default=0, help="calls per level (default 20 x c, >= 40)")
    ap.add_argument("--levels", default="1,8,32")
    args = ap.parse_args()
    proc, url = start_server(args.latency)
    try:
        print(f"loopback server {url}, latency {args.latency * 1000:.0f} ms, cache off")
        print(f"{'concurrency':>11} {'calls':>6} {'calls/s':>9} {'bound':>8} {'ratio':>6}")
        for c in (int(x) for x in args.levels.split(",")):
            n = args.calls or max(40, 20 * c)
            rate = asyncio.run(measure(url, c, n))
            bound = c / args.latency
            print(f"{c:>11} {n:>6} {rate:>9.1f} {bound:>8.1f} {rate / bound:>6.2f}")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
