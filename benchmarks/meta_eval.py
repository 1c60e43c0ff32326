"""Meta-evaluation: which evaluator agrees with people on a labelled set?

    python benchmarks/meta_eval.py --backends embedding [--tune] [--data FILE.jsonl]
    python benchmarks/meta_eval.py --backends embedding,native --base-url URL --model NAME

Reads any JSONL whose rows hold a sample (any framework's field names) and a ``labels``
object of binary human labels. Label names map to metrics: ``faithfulness`` →
faithfulness, ``context_relevance`` → context_relevancy, ``answer_relevance`` →
answer_relevancy (canonical metric names are accepted too). A label given as a list
(``[1, 0]``) holds one vote per annotator: the first vote is the label, and the
human-vs-human ceiling (agreement and Cohen's κ of annotators 1 and 2) is printed.

Rows are split deterministically into a TUNE half and a TEST half by the parity of the
first byte of sha256(row id) — stable across runs and machines, independent of row order.
For each (backend, metric, half) it prints: ROC AUC of the 0–10 score against the human
label with a seeded 95 % percentile bootstrap interval, and the balanced accuracy of
``score ≥ threshold`` (the metric's pass bound).

``--tune`` (embedding backend only): on the TUNE half, grid-searches each heuristic's
similarity parameter by AUC, then the pass bound by balanced accuracy; both halves are
reported with the tuned values, so the TEST half is the honest figure.

With an LLM backend the judge comes from ``--base-url/--model`` or the environment
(``UNIFIED_JUDGE_BASE_URL``...). A judge on 127.0.0.1 is taken to be the loopback fake:
its figures then only prove the plumbing, and the output says so.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse

import numpy as np

for _k, _v in {"RAGAS_DO_NOT_TRACK": "true", "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
               "DEEPEVAL_DISABLE_DOTENV": "1", "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
               "DEEPEVAL_FILE_SYSTEM": "READ_ONLY"}.items():
    os.environ.setdefault(_k, _v)

from unified.judge.base import Embedder, Judges  # noqa: E402
from unified.metrics import MetricRef, parse_metric  # noqa: E402
from unified.sample import Sample, SampleError  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared/data/ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl"
LABEL_TO_METRIC = {"faithfulness": "faithfulness", "context_relevance": "context_relevancy",
                   "answer_relevance": "answer_relevancy", "context_relevancy": "context_relevancy",
                   "answer_relevancy": "answer_relevancy"}
# similarity parameter searched per embedding metric (name, grid)
TUNE_GRID: dict[str, tuple[str, Sequence[float]]] = {
    "faithfulness": ("t", [round(x, 2) for x in np.arange(0.40, 1.001, 0.05)]),
    "context_relevancy": ("t", [round(x, 2) for x in np.arange(0.30, 1.001, 0.05)]),
    "answer_relevancy": ("n", [round(x, 2) for x in np.arange(0.10, 1.001, 0.1)]),
}
SENTENCE_VARIANT = "context_relevancy[variant=sentence]"
TUNE_GRID[SENTENCE_VARIANT] = ("t", [round(x, 2) for x in np.arange(0.20, 0.751, 0.05)])
THRESHOLD_GRID = [x / 2 for x in range(0, 21)]


# ---------------------------------------------------------------- data

class LabelledRow:
    def __init__(self, sample: Sample, labels: dict[str, int], second: dict[str, int]):
        self.sample, self.labels, self.second = sample, labels, second
        self.half = "tune" if hashlib.sha256(sample.id.encode()).digest()[0] % 2 == 0 else "test"


def label(row: "LabelledRow", key: str) -> int | None:
    """The human label for a metric key; a variant (``context_relevancy[variant=sentence]``)
    is judged against its metric's label."""
    return row.labels.get(key.split("[", 1)[0])


def load_labelled(path: Path) -> list[LabelledRow]:
    """Rows with a ``labels`` object; a bad row is reported on one line and skipped."""
    rows: list[LabelledRow] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                raw_labels = rec.pop("labels")
                sample = Sample.from_record(rec, warn_unknown=False)
            except (ValueError, KeyError, SampleError) as e:
                print(f"{path}:{n}: skipped: {e}", file=sys.stderr)
                continue
            if not sample.id or sample.id == sample.content_hash():
                sample.id = f"{path.stem}:{n}"
            first, second = {}, {}
            for name, v in (raw_labels or {}).items():
                metric = LABEL_TO_METRIC.get(name)
                if metric is None or v is None:
                    continue
                votes = v if isinstance(v, list) else [v]
                first[metric] = int(votes[0])
                if len(votes) > 1 and votes[1] is not None:
                    second[metric] = int(votes[1])
            rows.append(LabelledRow(sample, first, second))
    return rows


class MemoEmbedder(Embedder):
    """Remembers every vector, so a parameter grid re-runs the heuristics without
    re-encoding (the heuristics are cheap; the model is not)."""

    def __init__(self, inner: Embedder):
        self.inner, self.model, self.memo = inner, inner.model, {}

    def load(self, path: Path) -> None:
        data = np.load(path, allow_pickle=False)
        self.memo.update(zip(json.loads(str(data["texts"])), data["vectors"].tolist()))

    def save(self, path: Path) -> None:
        texts = list(self.memo)
        np.savez_compressed(path, texts=np.array(json.dumps(texts)),
                            vectors=np.array([self.memo[t] for t in texts], dtype=np.float32))

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            self.memo.update(zip(todo, await self.inner.embed(todo)))
        return [self.memo[t] for t in texts]


# ---------------------------------------------------------------- statistics

def _stats():
    try:  # the project's own implementations, when present
        from unified.crosscheck import auc, balanced_accuracy, bootstrap_ci
        return auc, balanced_accuracy, bootstrap_ci
    except ImportError as e:  # pragma: no cover - crosscheck ships with the package
        raise SystemExit(f"unified.crosscheck is needed for the statistics: {e}")


def _num(x: Any) -> float | None:
    return None if isinstance(x, str) or x is None else float(x)


def evaluate_half(values: list[float | None], labels: list[int], threshold: float,
                  n_boot: int, seed: int) -> dict[str, Any]:
    auc, bacc, boot = _stats()
    keep = [(v, y) for v, y in zip(values, labels) if v is not None]
    failed = len(values) - len(keep)
    v = np.array([k[0] for k in keep], dtype=float)
    y = np.array([k[1] for k in keep], dtype=int)
    a = _num(auc(v, y))
    ci = boot(auc, v, y, n=n_boot, seed=seed)
    return {"n": len(keep), "negatives": int((y == 0).sum()), "failed": failed, "auc": a,
            "auc_ci": None if isinstance(ci, str) else [float(ci[0]), float(ci[1])],
            "balanced_accuracy": _num(bacc(v >= threshold, y)), "threshold": threshold}


def best_threshold(values: list[float | None], labels: list[int]) -> float:
    _, bacc, _ = _stats()
    pairs = [(v, y) for v, y in zip(values, labels) if v is not None]
    v = np.array([p[0] for p in pairs]); y = np.array([p[1] for p in pairs])
    scored = [(_num(bacc(v >= t, y)) or 0.0, -abs(t - 5.0), t) for t in THRESHOLD_GRID]
    return max(scored)[2]


def human_ceiling(rows: list[LabelledRow], metric: str) -> dict[str, Any] | None:
    from unified.crosscheck import cohen_kappa
    pairs = [(r.labels[metric], r.second[metric]) for r in rows if metric in r.second and metric in r.labels]
    if len(pairs) < 3:
        return None
    a = np.array([p[0] for p in pairs], dtype=bool); b = np.array([p[1] for p in pairs], dtype=bool)
    return {"n": len(pairs), "agreement": float((a == b).mean()), "kappa": _num(cohen_kappa(a, b))}


# ---------------------------------------------------------------- running

async def score_all(backend: Any, rows: list[LabelledRow], refs: dict[str, MetricRef],
                    concurrency: int = 4) -> dict[str, list[float | None]]:
    """0–10 value per metric per row (None for a failed score)."""
    sem = asyncio.Semaphore(concurrency)
    out: dict[str, list[float | None]] = {m: [None] * len(rows) for m in refs}

    async def one(i: int, row: LabelledRow) -> None:
        todo = [m for m in refs if label(row, m) is not None]
        if not todo:
            return
        async with sem:
            scores = await backend.score(row.sample, [refs[m] for m in todo])
        for m, s in zip(todo, scores):
            out[m][i] = s.value if s.ok else None
            if not s.ok:
                FIRST_ERRORS.setdefault(m, f"{row.sample.id}: {s.error}")

    await asyncio.gather(*(one(i, r) for i, r in enumerate(rows)))
    return out


FIRST_ERRORS: dict[str, str] = {}  # metric key -> first failure seen, shown under the table


def _ref(key: str, params: dict[str, Any]) -> MetricRef:
    base, _, given = key.partition("[")
    items = [x for x in given.rstrip("]").split(",") if x] + [f"{k}={v}" for k, v in params.items()]
    return parse_metric(f"{base}[{','.join(items)}]" if items else base)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from unified.adapters import get_backend

    rows = load_labelled(Path(args.data))
    if args.limit:
        rows = rows[:args.limit]
    metrics = sorted({m for r in rows for m in r.labels})
    if not rows or not metrics:
        raise SystemExit(f"{args.data}: no rows with usable labels (faithfulness, context_relevance, answer_relevance)")
    halves = {h: [i for i, r in enumerate(rows) if r.half == h] for h in ("tune", "test")}
    print(f"{args.data}: {len(rows)} labelled rows; split by sha256(id): tune {len(halves['tune'])}, "
          f"test {len(halves['test'])}; metrics: {', '.join(metrics)}")
    for m in metrics:
        ceil = human_ceiling(rows, m)
        print(f"  human-vs-human ceiling for {m}: " + (
            f"agreement {ceil['agreement']:.2f}, kappa {ceil['kappa']}" if ceil else
            "not available (one annotator per row in this set)"))

    judges, loopback = _judges(args)
    results: dict[str, Any] = {"data": str(args.data), "rows": len(rows), "split": {
        h: len(ix) for h, ix in halves.items()}, "backends": {}}
    for bname in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if bname == "embedding":
            from unified.adapters.embedding import DEFAULTS
            from unified.judge.local import LocalEmbedder
            memo = MemoEmbedder(judges.embedder or LocalEmbedder())
            if args.embedding_cache and Path(args.embedding_cache).exists():
                memo.load(Path(args.embedding_cache))
            backend = get_backend(bname, Judges(embedder=memo))
            params = {m: {k: v for k, v in DEFAULTS[m].items() if k in ("t", "n", "threshold")}
                      for m in metrics}
            if "context_relevancy" in metrics:  # Embedchain's sentence-share variant, side by side
                params[SENTENCE_VARIANT] = {"t": DEFAULTS["context_relevancy"]["t_sentence"],
                                            "threshold": DEFAULTS["context_relevancy"]["threshold_sentence"]}
        else:
            backend = get_backend(bname, judges)
            params = {m: {} for m in metrics}
        t0 = time.perf_counter()
        keys = list(params)
        values = await score_all(backend, rows, {m: _ref(m, params[m]) for m in keys}, args.concurrency)
        print(f"\n[{bname}] scored {len(rows)} rows in {time.perf_counter() - t0:.1f}s")
        if bname != "embedding" and loopback:
            print(f"[{bname}] NOTE: the judge is on loopback ({args.base_url or os.environ.get('UNIFIED_JUDGE_BASE_URL')}); "
                  "if it is the test suite's fake server its answers are synthesised, so these figures only "
                  "prove the plumbing, not judgment quality.")
        if bname == "embedding" and args.embedding_cache:
            memo.save(Path(args.embedding_cache))
        if args.tune and bname == "embedding":
            values, params = await tune(backend, rows, keys, halves["tune"], params, values, args.concurrency)
        per_metric: dict[str, Any] = {}
        for m in keys:
            thr = float(params[m].get("threshold", _ref(m, {}).spec.threshold))
            per_metric[m] = {"params": params[m]}
            for h, ix in halves.items():
                lab = [(values[m][i], label(rows[i], m)) for i in ix if label(rows[i], m) is not None]
                per_metric[m][h] = evaluate_half([x[0] for x in lab], [x[1] for x in lab], thr,
                                                 args.n_boot, args.seed)
        results["backends"][bname] = per_metric
        print_table(bname, per_metric)
        if args.tune and bname == "embedding" and args.usefulness_data:
            results["context_usefulness"] = await tune_usefulness(backend, Path(args.usefulness_data),
                                                                  args.n_boot, args.seed)
    return results


async def tune_usefulness(backend: Any, path: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """The per-context 'useful' cut of context_precision: ARES has no references, so it
    is chosen on a set with per-context labels instead — a retrieved context counts as
    useful when its id is in ``relevant_ids``; the score is the best sentence cosine
    between the context and the reference (details of the embedding context_precision);
    the cut maximises balanced accuracy."""
    from unified.crosscheck import auc, balanced_accuracy, bootstrap_ci
    sims: list[float] = []
    labels: list[int] = []
    ref = parse_metric("context_precision")
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        s = Sample.from_record(json.loads(line), warn_unknown=False)
        if not (s.reference and s.retrieved_ids and s.relevant_ids and s.retrieved_contexts):
            continue
        (sc,) = await backend.score(s, [ref])
        if sc.ok:
            sims += sc.details["similarity"]
            labels += [int(i in s.relevant_ids) for i in s.retrieved_ids]
    v, y = np.array(sims), np.array(labels)
    grid = [round(x, 2) for x in np.arange(0.30, 0.96, 0.05)]
    bas = {t: _num(balanced_accuracy(v >= t, y)) or 0.0 for t in grid}
    t_best = max(grid, key=lambda t: (bas[t], -t))
    ci = bootstrap_ci(auc, v, y, n=n_boot, seed=seed)
    out = {"data": str(path), "contexts": len(v), "useful": int(y.sum()), "auc": _num(auc(v, y)),
           "auc_ci": None if isinstance(ci, str) else [float(ci[0]), float(ci[1])],
           "t": t_best, "balanced_accuracy": bas[t_best]}
    print(f"\ncontext usefulness (context_precision's cut) on {path.name}: {len(v)} contexts, "
          f"{int(y.sum())} relevant by id; AUC {out['auc']:.3f}; best t = {t_best} "
          f"(balanced accuracy {bas[t_best]:.3f}; the whole set is used: it has no tune/test split)")
    return out


async def tune(backend: Any, rows: list[LabelledRow], metrics: list[str], tune_ix: list[int],
               params: dict[str, dict[str, Any]], values: dict[str, list[float | None]],
               concurrency: int) -> tuple[dict[str, list[float | None]], dict[str, dict[str, Any]]]:
    """Grid-search on the TUNE half only: the similarity parameter by AUC (ties: the
    value closest to the current default), then the pass bound by balanced accuracy."""
    auc = _stats()[0]
    sub = [rows[i] for i in tune_ix]
    params = {m: dict(p) for m, p in params.items()}
    for m in metrics:
        if m in TUNE_GRID:
            key, grid = TUNE_GRID[m]
            best: tuple[float, float, float] | None = None
            seen: list[str] = []
            for g in grid:
                vals = (await score_all(backend, sub, {m: _ref(m, {key: g})}, concurrency))[m]
                pairs = [(v, label(r, m)) for v, r in zip(vals, sub) if v is not None and label(r, m) is not None]
                a = _num(auc([p[0] for p in pairs], [p[1] for p in pairs])) or 0.0
                seen.append(f"{g}:{a:.3f}")
                cand = (round(a, 6), -abs(g - float(params[m].get(key, g))), g)
                best = cand if best is None or cand > best else best
            assert best is not None
            params[m][key] = best[2]
            print(f"  grid {m} {key} -> tune-half AUC: {' '.join(seen)}")
            print(f"  tuned {m}: {key} = {best[2]} (tune-half AUC {best[0]:.3f})")
        full = (await score_all(backend, rows, {m: _ref(m, {k: v for k, v in params[m].items() if k != "threshold"})},
                                concurrency))[m]
        values[m] = full
        labelled = [i for i in tune_ix if label(rows[i], m) is not None]
        params[m]["threshold"] = best_threshold([full[i] for i in labelled], [label(rows[i], m) for i in labelled])
        print(f"  tuned {m}: pass bound = {params[m]['threshold']} on 0-10 (tune-half balanced accuracy)")
    return values, params


def print_table(backend: str, per_metric: dict[str, Any]) -> None:
    def f(x: Any, d: int = 3) -> str:
        return "n/a" if x is None else f"{x:.{d}f}"

    print(f"{'metric':36s} {'half':5s} {'n':>4s} {'neg':>4s} {'AUC':>6s} {'95% CI':>15s} {'bal.acc':>8s} "
          f"{'@thr':>5s}  params")
    for m, r in per_metric.items():
        for h in ("tune", "test"):
            e = r[h]
            ci = "n/a" if e["auc_ci"] is None else f"[{e['auc_ci'][0]:.2f}, {e['auc_ci'][1]:.2f}]"
            extra = "" if not e["failed"] else f"  ({e['failed']} failed)"
            ps = ", ".join(f"{k}={v}" for k, v in r["params"].items() if k != "threshold")
            print(f"{m:36s} {h:5s} {e['n']:4d} {e['negatives']:4d} {f(e['auc']):>6s} {ci:>15s} "
                  f"{f(e['balanced_accuracy']):>8s} {e['threshold']:5.1f}  {ps}{extra}")
    for m in per_metric:
        if m in FIRST_ERRORS:
            print(f"  first failure of {m}: {FIRST_ERRORS[m][:200]}")


def _judges(args: argparse.Namespace) -> tuple[Judges, bool]:
    """Judges for LLM backends from flags/environment, plus whether the judge is on loopback."""
    base_url = args.base_url or os.environ.get("UNIFIED_JUDGE_BASE_URL")
    model = args.model or os.environ.get("UNIFIED_JUDGE_MODEL")
    if not (base_url and model):
        return Judges(), False
    from unified.judge import JudgeConfig, build_judges  # type: ignore[attr-defined]
    judges = build_judges(judge=JudgeConfig(base_url=base_url, model=model), embedding="local")
    host = urlparse(base_url).hostname or ""
    return judges, host in ("127.0.0.1", "localhost", "::1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="labelled JSONL (rows with a `labels` object)")
    ap.add_argument("--backends", default="embedding", help="comma list: embedding,native,ragas,deepeval")
    ap.add_argument("--tune", action="store_true", help="grid-search embedding parameters on the tune half")
    ap.add_argument("--base-url", default=None, help="OpenAI-compatible judge URL (LLM backends)")
    ap.add_argument("--model", default=None, help="judge model name (LLM backends)")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for the 95%% CI")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    ap.add_argument("--limit", type=int, default=0, help="first N rows only (smoke runs)")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--usefulness-data", default=str(REPO / "examples/data/rag_examples.jsonl"),
                    help="with --tune: a JSONL with reference, retrieved_ids and relevant_ids to choose "
                         "context_precision's per-context cut ('' to skip)")
    ap.add_argument("--embedding-cache", default=None,
                    help="npz file of embedding vectors, read if present and written after scoring "
                         "(re-runs of the embedding backend then skip the model)")
    args = ap.parse_args(argv)
    results = asyncio.run(run(args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
