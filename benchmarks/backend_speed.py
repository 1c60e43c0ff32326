"""Wall time of our framework backends against the frameworks called directly, and native
against each — one run against the loopback judge server with fixed latency.

    python benchmarks/backend_speed.py [--samples 20] [--latency 0.02] [--concurrency 8]
                                       [--repeats 3]

What is compared, at the same sample concurrency (``--concurrency`` samples in flight, the
same judge client settings, judge cache OFF so every run really calls the server):

- ragas backend vs ragas direct: ``RagasBackend.score`` vs ``await metric.ascore(...)`` on
  the same ragas metric objects with the same LLM/embedding wrappers (so the ratio is
  the adapter's overhead: task scopes, Score building, field checks);
- deepeval backend vs deepeval direct: ``DeepEvalBackend.score`` vs a fresh deepeval
  metric per case and ``await metric.a_measure(case)`` with the same model wrapper;
- native vs each backend (if ``get_backend("native")`` is importable): speed ratio
  ``framework seconds / native seconds``.

    overhead ratio = t(backend) / t(direct)        (1.00 = no overhead)
    speed ratio    = t(framework backend) / t(native)   (> 1: native is faster)

Each figure is the median of ``--repeats`` runs after one warm-up run; the server's
request count per run is printed so equal work can be checked. Loopback answers are
random-but-valid: this measures plumbing and call patterns, never judgment quality.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-benchmark")

from judge_server import JudgeServer

from unified.adapters import get_backend
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.metrics import parse_metrics
from unified.sample import Sample

CORE = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision"


def make_samples(n: int, k: int = 3) -> list[Sample]:
    return [
        Sample(
            user_input=f"What is fact number {i} about the city?",
            response=f"Fact {i}: the city has {i + 2} bridges and a river.",
            retrieved_contexts=[f"Passage {i}.{j}: the city has bridges." for j in range(k)],
            reference=f"The city has {i + 2} bridges.",
            id=f"s{i}",
        )
        for i in range(n)
    ]


async def bounded(samples: list[Sample], concurrency: int, fn: Callable[[Sample], Awaitable[Any]]) -> None:
    sem = asyncio.Semaphore(concurrency)

    async def one(s: Sample) -> None:
        async with sem:
            await fn(s)

    await asyncio.gather(*(one(s) for s in samples))


async def measure(
    srv: JudgeServer, repeats: int, runs: dict[str, Callable[[], Awaitable[None]]]
) -> dict[str, tuple[float, int]]:
    """Median wall seconds and requests per run for each named run.

    One warm-up of every run first (imports, connection pools, lazy metric objects), then
    the runs interleaved round by round, so drift in a shared machine's load hits all of
    them alike instead of whichever ran last.
    """
    for run in runs.values():
        await run()
    times: dict[str, list[float]] = {k: [] for k in runs}
    counts: dict[str, list[int]] = {k: [] for k in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            srv.reset_counts()
            t0 = time.perf_counter()
            await run()
            times[name].append(time.perf_counter() - t0)
            counts[name].append(srv.request_count)
    return {k: (statistics.median(times[k]), int(statistics.median(counts[k]))) for k in runs}


def main(argv: list[str] | None = None) -> None:
    asyncio.run(amain(argv))


async def amain(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--metrics", default=CORE)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")

    samples = make_samples(args.samples)
    refs = parse_metrics(args.metrics)
    with JudgeServer(latency=args.latency) as srv:
        cfg = JudgeConfig(base_url=srv.base_url, model="fake", concurrency=64, max_retries=0)
        emb = EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed", concurrency=64, max_retries=0)

        def judges():
            return build_judges(cfg, judge2=cfg, embedding=emb, cache=False)

        def backend_run(name: str) -> Callable[[], Awaitable[None]]:
            backend = get_backend(name, judges(), concurrency=64)
            usable = [r for r in refs if backend.implements(r)]
            return lambda: bounded(samples, args.concurrency, lambda s: backend.score(s, usable))

        runs: dict[str, Callable[[], Awaitable[None]]] = {}
        try:
            from unified.adapters.ragas import RAGAS_METRICS

            runs["ragas backend"] = backend_run("ragas")
            rb = get_backend("ragas", judges())
            r_refs = [r for r in refs if rb.implements(r)]

            async def ragas_direct_one(s: Sample) -> None:
                # the same ragas metric objects and LLM/embedding wrappers, no adapter
                await asyncio.gather(
                    *(rb.ragas_metric(r.canonical).ascore(**RAGAS_METRICS[r.canonical].fields(s)) for r in r_refs),
                    return_exceptions=True,
                )

            runs["ragas direct"] = lambda: bounded(samples, args.concurrency, ragas_direct_one)
        except ImportError as e:
            print(f"ragas skipped: {e}")

        try:
            from unified.adapters.deepeval import DEEPEVAL_METRICS

            runs["deepeval backend"] = backend_run("deepeval")
            db = get_backend("deepeval", judges())
            d_refs = [r for r in refs if db.implements(r)]

            async def deepeval_direct_one(s: Sample) -> None:
                # a fresh deepeval metric per case with the same model wrapper, no adapter
                await asyncio.gather(
                    *(
                        db.new_metric(r.canonical).a_measure(
                            DEEPEVAL_METRICS[r.canonical].case(s), _show_indicator=False
                        )
                        for r in d_refs
                    ),
                    return_exceptions=True,
                )

            runs["deepeval direct"] = lambda: bounded(samples, args.concurrency, deepeval_direct_one)
        except ImportError as e:
            print(f"deepeval skipped: {e}")

        try:  # native is another engineer's backend: optional here
            runs["native backend"] = backend_run("native")
            await runs["native backend"]()
        except Exception as e:  # not there yet, or fails: say so and go on
            runs.pop("native backend", None)
            print(f"native skipped: {type(e).__name__}: {e}")

        results = await measure(srv, args.repeats, runs)

    print(
        f"\n{args.samples} samples x [{args.metrics}], latency {args.latency * 1000:.0f} ms, "
        f"{args.concurrency} samples in flight, cache off, median of {args.repeats}"
    )
    print(f"{'run':<18}{'seconds':>9}{'requests':>10}")
    for name, (sec, n) in results.items():
        print(f"{name:<18}{sec:>9.3f}{n:>10}")
    print()
    for fw in ("ragas", "deepeval"):
        if f"{fw} backend" in results and f"{fw} direct" in results:
            ratio = results[f"{fw} backend"][0] / results[f"{fw} direct"][0]
            print(f"overhead ratio {fw} backend / {fw} direct = {ratio:.3f}")
    if "native backend" in results:
        for fw in ("ragas", "deepeval"):
            if f"{fw} backend" in results:
                ratio = results[f"{fw} backend"][0] / results["native backend"][0]
                print(f"speed ratio {fw} backend / native = {ratio:.3f}")


if __name__ == "__main__":
    main()
