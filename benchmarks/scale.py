"""Scale benchmark: does a big run stream, and what does it cost in time and memory?

Part 1: 100,000 synthetic samples (a JSONL file, read as a stream) × 2 deterministic
native retrieval metrics (precision@5, ndcg@10) — no judge.
Part 2: 2,000 synthetic samples × 2 native LLM metrics (faithfulness, context_relevancy)
against the loopback judge server (tests/judge_server.py, started in this process unless
--base-url names one).

Prints samples/s for each part and the peak RSS of the process
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, KiB on Linux) and exits 1 if the peak
is at or above --max-rss-mb (500 by default). No embedding metric is used: loading the
local embedding model alone takes about 600 MB.

    python benchmarks/scale.py [--n-det 100000] [--n-llm 2000] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

for _k, _v in {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
}.items():
    os.environ.setdefault(_k, _v)

WORDS = (
    "sync offline notebook device attachment conflict version export backup plan "
    "storage limit share team folder search index tag reminder calendar encryption"
).split()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_synthetic(path: Path, n: int, seed: int) -> None:
    """n rows with retrieval ids (for the deterministic part) and short texts (LLM part)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            docs = [f"d{rng.randrange(200)}" for _ in range(10)]
            relevant = rng.sample(docs, k=rng.randint(1, 3)) if rng.random() < 0.9 else ["d999"]
            words = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))
            f.write(
                json.dumps(
                    {
                        "id": f"syn{i:06d}",
                        "user_input": f"How does {words(3)} work?",
                        "response": f"It {words(8)}. Also {words(6)}.",
                        "retrieved_contexts": [f"{words(20)}." for _ in range(2)],
                        "reference": f"It {words(8)}.",
                        "retrieved_ids": docs,
                        "relevant_ids": relevant,
                    }
                )
                + "\n"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-det", type=int, default=100_000)
    ap.add_argument("--n-llm", type=int, default=2_000)
    ap.add_argument("--out", type=Path, default=None, help="folder for the data and runs (default: a temp dir)")
    ap.add_argument("--base-url", default=None, help="an already running judge server (default: loopback)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--max-rss-mb", type=float, default=500.0)
    args = ap.parse_args(argv)

    from unified.judge import JudgeConfig, build_judges
    from unified.run.runner import evaluate

    work = args.out or Path(tempfile.mkdtemp(prefix="unified-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}

    data = work / "det.jsonl"
    write_synthetic(data, args.n_det, seed=1)
    t = time.perf_counter()
    rep = evaluate(
        data,
        "precision@5,ndcg@10",
        ["native"],
        out=work / "run_det",
        resume=False,
        concurrency=args.concurrency,
        progress=False,
        quiet=True,
    )
    dt = time.perf_counter() - t
    n_lines = sum(1 for _ in open(work / "run_det" / "scores.jsonl"))
    results["deterministic"] = {
        "samples": args.n_det,
        "scores": n_lines,
        "seconds": round(dt, 1),
        "samples_per_s": round(args.n_det / dt, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "means": {a.metric: round(a.mean or 0, 3) for a in rep.summary()},
    }
    print(
        f"deterministic: {args.n_det} samples × 2 metrics in {dt:.1f}s = {args.n_det / dt:.0f} samples/s; "
        f"peak RSS so far {peak_rss_mb():.0f} MB",
        flush=True,
    )

    server = None
    base_url = args.base_url
    if base_url is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from judge_server import JudgeServer

        server = JudgeServer().start()
        base_url = server.base_url
    try:
        data_llm = work / "llm.jsonl"
        write_synthetic(data_llm, args.n_llm, seed=2)
        out_llm = work / "run_llm"
        judges = build_judges(
            JudgeConfig(base_url=base_url, model="loopback", concurrency=args.concurrency),
            cache_path=out_llm / "judge_cache.sqlite",
        )
        os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-not-a-key")
        t = time.perf_counter()
        rep = evaluate(
            data_llm,
            "faithfulness,context_relevancy",
            ["native"],
            judges=judges,
            out=out_llm,
            resume=False,
            concurrency=args.concurrency,
            progress=False,
            quiet=True,
        )
        dt = time.perf_counter() - t
        summary = json.loads((out_llm / "summary.json").read_text())
        calls = summary["timings"]["judge_calls"]
        results["llm"] = {
            "samples": args.n_llm,
            "seconds": round(dt, 1),
            "samples_per_s": round(args.n_llm / dt, 1),
            "judge_calls": calls,
            "calls_per_s": round(calls / dt, 1),
            "errors": summary["n_errors"],
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }
        print(
            f"llm: {args.n_llm} samples × 2 metrics in {dt:.1f}s = {args.n_llm / dt:.1f} samples/s, "
            f"{calls} judge calls ({calls / dt:.0f}/s), {summary['n_errors']} errors; "
            f"peak RSS so far {peak_rss_mb():.0f} MB",
            flush=True,
        )
    finally:
        if server is not None:
            server.stop()

    peak = peak_rss_mb()
    results["peak_rss_mb"] = round(peak, 1)
    (work / "scale_results.json").write_text(json.dumps(results, indent=2))
    verdict = "OK" if peak < args.max_rss_mb else "FAIL"
    print(f"{verdict}: peak RSS {peak:.0f} MB (limit {args.max_rss_mb:.0f} MB); results in {work}/scale_results.json")
    return 0 if verdict == "OK" else 1


if __name__ == "__main__":
    sys.exit(main())
