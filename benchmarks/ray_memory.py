"""Does the Ray driver's memory grow with the input? Driver RSS at two input sizes.

For each size N (default 20,000 and 200,000 synthetic samples, a JSONL file read as a
stream) × 2 deterministic native retrieval metrics (precision@5, ndcg@10; no judge), one
child process runs ``evaluate(..., executor=RayExecutor(num_actors=2))`` on a local Ray
of 2 CPUs — and, with ``--local``, the same run on the local executor, to separate what
the run path itself keeps per sample (the same on both executors) from what the Ray
executor keeps.

Per run it prints the driver's peak RSS (``VmHWM`` of the driver process only; Ray's own
processes are not counted), its RSS at the end (``VmRSS``), the wall and CPU seconds
(user + sys of the driver process) and samples/s, then the peak's growth per sample
between the first two sizes, per executor.
The Ray executor holds at most ``actors × 2`` blocks of ``block_size`` groups at a time
(groups are pulled from the reader only when an actor has room), so its share is flat.
Measured (docs/scaling.md, "The driver's memory"): Ray adds a constant ~70–75 MB, and
the driver grows by 0.52 KB of peak RSS per sample on Ray and 0.62 KB on the local
executor (20k → 60k): the run path's own record of each sample, the same on both. The
peak is read before the script counts the score lines, which it streams.

    python benchmarks/ray_memory.py [--sizes 20000,200000] [--concurrency 256] [--local]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRICS = "precision@5,ndcg@10"


def write_samples(path: Path, n: int, seed: int = 7) -> None:
    """``n`` rows with retrieval ids and short texts (deterministic for a seed)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            docs = [f"d{rng.randrange(200)}" for _ in range(10)]
            row = {
                "id": f"s{i}",
                "user_input": f"question {i} about sync",
                "response": "an answer",
                "retrieved_ids": docs,
                "relevant_ids": rng.sample(docs, k=rng.randint(1, 3)),
            }
            f.write(json.dumps(row) + "\n")


def _status(field: str) -> float:
    """MB of ``field`` (VmHWM, VmRSS) of this process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def child(data: str, executor: str, concurrency: int) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    sys.path.insert(0, str(ROOT))
    from unified.api import evaluate

    ex: object = "local"
    if executor == "ray":
        from unified.platforms.ray_executor import RayExecutor

        ex = RayExecutor(num_actors=2, num_cpus=2)
    out = tempfile.mkdtemp(prefix="ray-mem-")
    t0 = time.perf_counter()
    evaluate(data, METRICS, out=out, quiet=True, concurrency=concurrency, executor=ex, write_report=False)
    seconds = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    # the run's memory is read before this script checks the lines, and the check streams
    # them: a list of every parsed line (~6 KB a sample) once counted as the driver's peak
    memory = {
        "hwm_mb": _status("VmHWM"),
        "rss_mb": _status("VmRSS"),
        "anon_mb": _status("RssAnon"),  # the driver's own heap
        "shmem_mb": _status("RssShmem"),  # pages of Ray's shared object store it touched
    }
    lines = errors = 0
    with open(Path(out) / "scores.jsonl", encoding="utf-8") as f:
        for x in f:
            lines += 1
            errors += bool(json.loads(x).get("error"))
    print(
        json.dumps(
            {"errors": errors, **memory, "seconds": seconds, "cpu_seconds": ru.ru_utime + ru.ru_stime, "lines": lines}
        )
    )


def _growth(rows: list[tuple[int, str, dict]]) -> None:
    """Peak RSS growth per sample between the first two sizes, per executor."""
    for executor in dict.fromkeys(e for _, e, _ in rows):
        runs = [(n, got["hwm_mb"]) for n, e, got in rows if e == executor][:2]
        if len(runs) == 2 and runs[1][0] != runs[0][0]:
            (n0, m0), (n1, m1) = runs
            per = (m1 - m0) * 1024 * 1024 / (n1 - n0)
            print(f"{executor}: peak RSS grows {per:.0f} bytes per sample between {n0} and {n1} samples")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20000,200000")
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--local", action="store_true", help="also run the local executor at each size")
    ap.add_argument("--child", nargs=2, metavar=("DATA", "EXECUTOR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.concurrency)
        return 0
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            data = Path(tmp) / f"samples_{n}.jsonl"
            write_samples(data, n)
            for executor in ("ray", "local") if args.local else ("ray",):
                cmd = [sys.executable, __file__, "--concurrency", str(args.concurrency), "--child", str(data), executor]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    print(res.stderr[-2000:], file=sys.stderr)
                    return 1
                got = json.loads(res.stdout.strip().splitlines()[-1])
                assert got["lines"] == 2 * n and got["errors"] == 0, got
                rows.append((n, executor, got))
                print(
                    f"{n:>7} samples  {executor:<5}  driver peak RSS {got['hwm_mb']:7.1f} MB  "
                    f"end RSS {got['rss_mb']:7.1f} MB (anon {got['anon_mb']:.1f}, shmem {got['shmem_mb']:.1f})  "
                    f"{got['seconds']:6.1f} s ({got['cpu_seconds']:.1f} s CPU)  "
                    f"{n / got['seconds']:7.0f} samples/s",
                    flush=True,
                )
    _growth(rows)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
