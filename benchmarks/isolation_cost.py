"""What isolation costs: ragas in this process vs the same ragas release in an isolated
environment behind its worker, on the same loopback judge.

    python benchmarks/isolation_cost.py [--samples 40] [--latency 0.05] [--concurrency 8]
                                        [--repeats 3] [--version 0.4.3]

Two figures:

- start-up: a cached environment found (``ensure_env``) and a worker started until it
  says ``ready`` (its Python up, the framework imported): the price of the first task
  of an isolated backend in every run, measured ``--repeats`` times after one warm-up;
- scoring, after start-up: ``--samples`` samples × 2 metrics (faithfulness,
  answer_relevancy) through ``RagasBackend.score`` (in-process) and through
  ``get_backend("ragas@VERSION").score`` (worker + bridge), the same sample concurrency,
  judge cache OFF so both really call the server; each the median of ``--repeats`` runs
  after one warm-up that also starts the worker.

    ratio = t(isolated) / t(in-process)        (target ≤ 1.15)

The server's request count per run is printed so equal work can be checked (the same
ragas release asks the same questions). Loopback answers are random-but-valid: plumbing
and call patterns only, never judgment quality.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-benchmark")

from backend_speed import bounded, make_samples
from judge_server import JudgeServer

from unified.adapters import get_backend
from unified.adapters.isolated import RECIPES
from unified.adapters.isolated.client import WorkerProcess
from unified.adapters.isolated.envs import EnvSpec, ensure_env, env_python
from unified.judge import JudgeConfig, build_judges
from unified.metrics import parse_metrics

METRICS = "faithfulness,answer_relevancy"


def startup(version: str, repeats: int) -> list[float]:
    """Seconds from nothing to a worker that is ready, with the environment cached."""
    spec = EnvSpec("ragas", version, RECIPES["ragas"].pins)
    ensure_env(spec)  # built once if missing: not part of the figure
    hello = {"framework": "ragas", "bridge": "http://127.0.0.1:9", "model": "m", "verdicts": []}
    out = []
    for i in range(repeats + 1):
        started = time.monotonic()
        worker = WorkerProcess("bench", env_python(ensure_env(spec)), hello)
        worker._ensure()  # what the first task of a run waits for
        took = time.monotonic() - started
        worker.close()
        if i:  # the first one warms the page cache
            out.append(took)
    return out


async def scoring(args: argparse.Namespace) -> dict[str, tuple[float, int]]:
    samples = make_samples(args.samples)
    refs = parse_metrics(METRICS)
    results: dict[str, tuple[float, int]] = {}
    with JudgeServer(latency=args.latency) as srv:
        config = JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0)
        judges = build_judges(config, embedding=srv.base_url, cache=False)
        backends = {
            "in-process": get_backend("ragas", judges),
            "isolated": get_backend(f"ragas@{args.version}", judges),
        }
        times: dict[str, list[float]] = {k: [] for k in backends}
        counts: dict[str, list[int]] = {k: [] for k in backends}
        for round_ in range(args.repeats + 1):
            for name, backend in backends.items():
                srv.reset_counts()
                started = time.monotonic()
                await bounded(samples, args.concurrency, lambda s, b=backend: b.score(s, refs))
                if round_:  # round 0 warms up (imports, the worker, connection pools)
                    times[name].append(time.monotonic() - started)
                    counts[name].append(srv.request_count)
        for name, backend in backends.items():
            results[name] = (statistics.median(times[name]), int(statistics.median(counts[name])))
            await backend.aclose()
        await judges.aclose()
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=40)
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--version", default="0.4.3")
    args = p.parse_args()
    starts = startup(args.version, args.repeats)
    print(f"start-up, cached environment + worker ready (ragas {args.version}):")
    print(f"  median {statistics.median(starts):.2f} s, max {max(starts):.2f} s over {len(starts)} starts")
    got = asyncio.run(scoring(args))
    print(f"{args.samples} samples × 2 metrics ({METRICS}), latency {args.latency} s, concurrency {args.concurrency}:")
    for name, (secs, reqs) in got.items():
        print(f"  {name:<11} {secs:6.2f} s  {reqs} requests")
    print(f"  ratio isolated / in-process = {got['isolated'][0] / got['in-process'][0]:.2f} (target ≤ 1.15)")


if __name__ == "__main__":
    main()
