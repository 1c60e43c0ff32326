"""Do two versions of the ``embedding`` backend give the same scores? Dump, then compare.

    python benchmarks/offline_equivalence.py dump  --data FILE [--data FILE …] --out main.json
    python benchmarks/offline_equivalence.py check --data FILE [--data FILE …] --against main.json

Scores every row of every ``--data`` file with the five core metrics (faithfulness,
answer_relevancy, context_relevancy, context_recall, context_precision) through
``EmbeddingBackend.score``, one sample at a time from a cold vector cache, and records per
(file, row, metric) the raw score, the 0–10 value, the error (a row without a reference
cannot have context_recall; a bare verdict label abstains) and every number in
``details``. ``check`` recomputes them with this checkout and compares: raw must agree
within ``--tol`` (1e-6 by default; the 0–10 value within 10 · tol, the same on its
scale), pass/fail and errors must be the same, and every
detail number within ``--tol`` after the 4-decimal rounding the backend applies (so a
difference is either > tol or one rounding step at a boundary, reported apart). Exits 1
on any difference, printing each. Why: a speed change must not move a score without a
word; this is the word.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unified.adapters import get_backend  # noqa: E402
from unified.judge.minilm import clear_vector_cache  # noqa: E402
from unified.metrics import parse_metrics  # noqa: E402
from unified.sample import Sample  # noqa: E402

CORE = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision"


def _numbers(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of ``obj`` (numbers, strings, booleans) keyed by its path."""
    if isinstance(obj, dict):
        return {k: v for key, val in obj.items() for k, v in _numbers(val, f"{prefix}.{key}").items()}
    if isinstance(obj, (list, tuple)):
        return {k: v for i, val in enumerate(obj) for k, v in _numbers(val, f"{prefix}[{i}]").items()}
    return {prefix: obj}


async def _score_file(path: Path, metrics: str, concurrency: int) -> dict[str, Any]:
    backend = get_backend("embedding")
    refs = parse_metrics(metrics)
    window = asyncio.Semaphore(max(1, concurrency))
    out: dict[str, Any] = {}

    async def one(i: int, sample: Sample) -> None:
        async with window:
            scores = await backend.score(sample, refs)
        for s in scores:
            out[f"{path.name}:{i}:{s.metric}"] = {
                "raw": s.raw,
                "value": s.value,
                "passed": s.passed,
                "error": s.error,
                "details": _numbers(s.details or {}),
            }

    rows = [
        (i, json.loads(line)) for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()) if line.strip()
    ]
    for _, rec in rows:
        rec.pop("labels", None)
    await asyncio.gather(*(one(i, Sample.from_record(rec, warn_unknown=False)) for i, rec in rows))
    return out


def dump(files: list[Path], metrics: str, concurrency: int = 1) -> dict[str, Any]:
    clear_vector_cache()
    out: dict[str, Any] = {}
    for f in files:
        out.update(asyncio.run(_score_file(f, metrics, concurrency)))
    return out


def _close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= tol
    return a == b


def compare(old: dict[str, Any], new: dict[str, Any], tol: float) -> list[str]:
    """One line per difference (missing keys, raw/value beyond tol, other error text,
    detail leaves beyond tol; a detail off by exactly one 4th-decimal step is a rounding
    boundary and is listed as such)."""
    problems = []
    for key in sorted(set(old) | set(new)):
        if key not in old or key not in new:
            problems.append(f"{key}: only in {'new' if key in new else 'old'}")
            continue
        a, b = old[key], new[key]
        for field, scale in (("raw", 1.0), ("value", 10.0), ("passed", 1.0), ("error", 1.0)):
            if field in a and field in b and not _close(a[field], b[field], tol * scale):
                problems.append(f"{key}: {field} {a[field]!r} -> {b[field]!r}")
        for leaf in sorted(set(a["details"]) | set(b["details"])):
            x, y = a["details"].get(leaf), b["details"].get(leaf)
            if not _close(x, y, tol):
                step = isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1.0001e-4
                problems.append(
                    f"{key}: details{leaf} {x!r} -> {y!r}" + (" (4th-decimal rounding step)" if step else "")
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("dump", "check"))
    ap.add_argument("--data", type=Path, action="append", required=True)
    ap.add_argument("--metrics", default=CORE)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--against", type=Path)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--concurrency", type=int, default=1, help="samples in flight (16: the runner's default)")
    args = ap.parse_args(argv)
    scores = dump(args.data, args.metrics, args.concurrency)
    if args.mode == "dump":
        if args.out is None:
            ap.error("dump needs --out")
        args.out.write_text(json.dumps(scores, indent=1, sort_keys=True), encoding="utf-8")
        print(f"wrote {len(scores)} scores to {args.out}")
        return 0
    if args.against is None:
        ap.error("check needs --against")
    problems = compare(json.loads(args.against.read_text(encoding="utf-8")), scores, args.tol)
    for p in problems:
        print(p)
    print(f"{len(scores)} scores compared: {len(problems)} difference(s) beyond {args.tol}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
