"""Samples per second of the offline ``embedding`` backend on the five core metrics.

    python benchmarks/offline_speed.py [--data examples/data/rag_examples.jsonl]
                                       [--rows N] [--repeats 3] [--metrics faithfulness,...]
                                       [--concurrency 16] [--copies N]

Scores every sample of ``--data`` (the first ``--rows``) with the five core metrics
(faithfulness, answer_relevancy, context_relevancy, context_recall, context_precision)
through ``EmbeddingBackend.score``, up to ``--concurrency`` samples in flight as the
runner does (16 by default, the runner's default; 1 scores one at a time), after one
warm-up pass that loads the model. Each repeat starts cold: the local model's vector
cache is emptied and every text changed (a numbered suffix), so nothing is served from an
earlier pass; a context that several samples of the file retrieve is encoded once per
pass, as in a real run. Prints samples/s = samples / wall seconds, the median over
``--repeats``, and the machine's load average, because on a shared machine the figure
is only as good as the idle CPU it got; the CPU time per sample (all threads) is the figure
that does not depend on the load. It also prints how many cores the scoring kept busy
(CPU seconds / wall seconds): on an idle 2-core machine, 2.0 is the ceiling.

``--copies N`` scores the rows N times over, every sentence of every text of each copy
changed (a tag before its end), so no copy shares a text with another: a bigger input
whose ramp-up and tail (the first and last samples of the concurrency window) weigh less.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unified.adapters import get_backend  # noqa: E402
from unified.judge.minilm import clear_vector_cache  # noqa: E402
from unified.metrics import parse_metrics  # noqa: E402
from unified.sample import Sample  # noqa: E402
from unified.text import split_sentences  # noqa: E402

CORE = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision"


def records(path: Path, rows: int | None) -> list[dict]:
    """The first ``rows`` records of the JSONL file, without metadata and labels."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[:rows]:
        if line.strip():
            rec = json.loads(line)
            for k in ("metadata", "labels"):
                rec.pop(k, None)
            out.append(rec)
    return out


def load(path: Path, tag: str, rows: int | None) -> list[Sample]:
    out = []
    for rec in records(path, rows):
        rec["response"] = f"{rec.get('response') or ''} ({tag})"
        rec["retrieved_contexts"] = [f"{c} ({tag})" for c in rec.get("retrieved_contexts") or []]
        out.append(Sample.from_record(rec, warn_unknown=False))
    return out


def tag_sentences(text: str | None, tag: str) -> str | None:
    """``text`` with `` <tag>`` before the end of each of its sentences (``split_sentences``
    finds the same sentences, each now distinct from every other copy's)."""
    if not text:
        return text
    out = []
    for s in split_sentences(text):
        end = len(s.rstrip(".!?"))
        out.append(f"{s[:end]} {tag}{s[end:]}")
    return " ".join(out)


def load_copies(path: Path, tag: str, rows: int | None, copies: int) -> list[Sample]:
    """The rows ``copies`` times, every sentence of every text tagged per copy (``--copies``)."""
    out = []
    for c in range(copies):
        mark = f"{tag.replace(' ', '')}x{c}"
        for n, rec in enumerate(records(path, rows)):
            for k in ("user_input", "response", "reference"):
                rec[k] = tag_sentences(rec.get(k), mark)
            rec["retrieved_contexts"] = [tag_sentences(x, mark) for x in rec.get("retrieved_contexts") or []]
            rec["id"] = f"{rec.get('id') or n}-{mark}"
            out.append(Sample.from_record(rec, warn_unknown=False))
    return out


async def one_pass(samples: list[Sample], metrics: str, concurrency: int = 1) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, every thread) to score ``samples``,
    at most ``concurrency`` samples in flight (the runner's window; 1: one at a time)."""
    backend = get_backend("embedding")
    refs = parse_metrics(metrics)
    window = asyncio.Semaphore(max(1, concurrency))

    async def one(s: Sample) -> None:
        async with window:
            scores = await backend.score(s, refs)
        bad = [x.error for x in scores if not x.ok]
        if bad:
            raise SystemExit(f"sample {s.id}: {bad[0]}")

    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(s) for s in samples))
    return time.perf_counter() - t0, time.process_time() - c0


def samples_for(args: argparse.Namespace, tag: str) -> list[Sample]:
    if args.copies > 1:
        return load_copies(args.data, tag, args.rows, args.copies)
    return load(args.data, tag, args.rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "examples/data/rag_examples.jsonl")
    ap.add_argument("--rows", type=int, default=None, help="the first N rows only")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--metrics", default=CORE)
    ap.add_argument(
        "--concurrency",
        type=int,
        default=16,
        help="samples in flight at once, as the runner's --concurrency (default 16, its default); 1: one at a time",
    )
    ap.add_argument("--copies", type=int, default=1, help="score the rows N times, each copy's texts changed")
    args = ap.parse_args(argv)
    asyncio.run(one_pass(load(args.data, "warm-up", args.rows), args.metrics, args.concurrency))
    rates, cpu, cores = [], [], []
    for r in range(args.repeats):
        clear_vector_cache()
        samples = samples_for(args, f"run {r}")
        wall, busy = asyncio.run(one_pass(samples, args.metrics, args.concurrency))
        rates.append(len(samples) / wall)
        cpu.append(busy / len(samples))
        cores.append(busy / wall)
    load1, load5, _ = os.getloadavg()
    print(
        f"embedding backend, {args.metrics}, concurrency {args.concurrency}: "
        f"{statistics.median(rates):.1f} samples/s "
        f"(median of {args.repeats}: {', '.join(f'{x:.1f}' for x in rates)}; {len(samples)} samples; "
        f"{os.cpu_count()} cores, load average {load1:.1f}/{load5:.1f}); "
        f"CPU {1000 * statistics.median(cpu):.0f} ms per sample (all threads; the load-independent figure); "
        f"cores kept busy {statistics.median(cores):.2f} (CPU s / wall s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
