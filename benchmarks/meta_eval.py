"""Meta-evaluation: which evaluator agrees with people on human-labelled data?

    python benchmarks/meta_eval.py --data ../shared/data --backends embedding [--tune]
    python benchmarks/meta_eval.py --data FILE.jsonl --backends embedding,native --base-url URL --model NAME

Data it needs — human-labelled RAG rows, NOT in this repository. ``--data PATH`` is either

- a folder laid out like the project's shared data folder (``benchmarks/labelled_sets.py``
  lists the files): ``ares/LLM_Judge_…Filtered.jsonl`` is the in-domain set, split into a
  TUNE and a TEST half by sha256(row id); the files under ``interop/`` (ARES few-shot
  NQ/FEVER, TruLens golden sets, Dingo's hallucination rows) are the unseen sets, each
  evaluated whole and never used for tuning; or
- one JSONL whose rows hold a sample (any framework's field names) and a ``labels``
  object (split into halves like the ARES set).

Without ``--data`` the script looks for ``../shared/data`` next to the repository and,
when it is absent, says so and exits with status 2: it never reads it silently from
anywhere else.

Label names map to metrics: ``faithfulness`` → faithfulness, ``context_relevance`` →
context_relevancy, ``answer_relevance`` → answer_relevancy (canonical names too). A label
given as a list (``[1, 0]``) holds one vote per annotator: the first vote is the label,
and the human-vs-human ceiling (agreement and Cohen's κ of annotators 1 and 2) is printed.

For each (backend, metric, group) it prints n, the negatives, ROC AUC of the 0–10 score
against the human label with a seeded 95 % percentile bootstrap interval, and the
balanced accuracy of ``score ≥ threshold`` (the metric's pass bound). Groups: ``tune``
and ``test`` (the in-domain halves), each unseen set by name, and ``unseen`` (all unseen
rows pooled). For the embedding backend faithfulness is scored twice: ``faithfulness``
(the backend's parameters, including the lexical weight ``w``) and ``faithfulness[w=0]``
(embedding similarity alone); the paired difference of their AUCs on the same rows is
printed with a paired bootstrap interval.

``--tune`` (embedding backend only): on the TUNE half only, each heuristic's parameters
are searched on a grid one at a time, in a fixed order (coordinate search, one pass;
faithfulness: ``t``, then ``w`` at that ``t``), by AUC (ties: the value closest to the
current one), then the pass bound by balanced accuracy. Every group is reported with the
tuned values, so ``test`` and the unseen sets are the honest figures.

With an LLM backend the judge comes from ``--base-url/--model`` or the environment
(``UNIFIED_JUDGE_BASE_URL``...). A judge on 127.0.0.1 is taken to be the loopback fake:
its figures then only prove the plumbing, and the output says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse

import numpy as np

for _k, _v in {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
}.items():
    os.environ.setdefault(_k, _v)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labelled_sets import LabelledRow, find_sets, load_labelled  # noqa: E402

from unified.judge.base import Embedder, Judges  # noqa: E402
from unified.metrics import MetricRef, parse_metric  # noqa: E402
from unified.sample import Sample  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data"
IN_DOMAIN = ("tune", "test")
POOLED = "unseen"
SENTENCE_VARIANT = "context_relevancy[variant=sentence]"
SIMILARITY_ONLY = "faithfulness[w=0]"
#: paired AUC differences printed: (with the lexical signal) − (similarity alone)
COMPARE = {"faithfulness": SIMILARITY_ONLY}
_T_FAITH = [round(x, 2) for x in np.arange(0.40, 1.001, 0.05)]
#: parameters searched per metric key, in this order (name, grid)
TUNE_GRID: dict[str, list[tuple[str, Sequence[float]]]] = {
    "faithfulness": [("t", _T_FAITH), ("w", [round(x, 2) for x in np.arange(0.0, 1.001, 0.1)])],
    SIMILARITY_ONLY: [("t", _T_FAITH)],
    "context_relevancy": [("t", [round(x, 2) for x in np.arange(0.30, 1.001, 0.05)])],
    "answer_relevancy": [("n", [round(x, 2) for x in np.arange(0.10, 1.001, 0.1)])],
    SENTENCE_VARIANT: [("t", [round(x, 2) for x in np.arange(0.20, 0.751, 0.05)])],
}
THRESHOLD_GRID = [x / 2 for x in range(0, 21)]


def label(row: LabelledRow, key: str) -> int | None:
    """The human label for a metric key; a variant (``context_relevancy[variant=sentence]``)
    is judged against its metric's label."""
    return row.labels.get(key.split("[", 1)[0])


def load_data(path: Path) -> tuple[list[LabelledRow], list[str]]:
    """The rows of a shared-data folder (in-domain and unseen sets) or of one labelled
    JSONL, and the files read."""
    if path.is_dir():
        rows, read = find_sets(path)
        if not rows:
            raise SystemExit(
                f"{path}: no labelled set found in this folder (see benchmarks/labelled_sets.py for the files it reads)"
            )
        return rows, read
    return load_labelled(path), [str(path)]


def groups_of(rows: list[LabelledRow]) -> dict[str, list[int]]:
    """Row indices per group: the in-domain halves, each unseen set, then all unseen pooled."""
    names = list(IN_DOMAIN) + list(dict.fromkeys(r.group for r in rows if r.group not in IN_DOMAIN))
    out = {g: [i for i, r in enumerate(rows) if r.group == g] for g in names}
    unseen = [i for i, r in enumerate(rows) if r.group not in IN_DOMAIN]
    if unseen and len(names) > len(IN_DOMAIN) + 1:
        out[POOLED] = unseen
    return {g: ix for g, ix in out.items() if ix}


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
        np.savez_compressed(
            path, texts=np.array(json.dumps(texts)), vectors=np.array([self.memo[t] for t in texts], dtype=np.float32)
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            self.memo.update(zip(todo, await self.inner.embed(todo)))
        return [self.memo[t] for t in texts]


# ---------------------------------------------------------------- statistics


def _stats():
    try:  # the project's own implementations, when present
        from unified.analysis.crosscheck import auc, balanced_accuracy, bootstrap_ci

        return auc, balanced_accuracy, bootstrap_ci
    except ImportError as e:  # pragma: no cover - crosscheck ships with the package
        raise SystemExit(f"unified.analysis.crosscheck is needed for the statistics: {e}")


def _num(x: Any) -> float | None:
    return None if isinstance(x, str) or x is None else float(x)


def _ci(ci: Any) -> list[float] | None:
    return None if isinstance(ci, str) else [float(ci[0]), float(ci[1])]


def evaluate_half(
    values: list[float | None], labels: list[int], threshold: float, n_boot: int, seed: int
) -> dict[str, Any]:
    """n, negatives, failed (None values), AUC with its bootstrap CI and the balanced
    accuracy of value ≥ threshold, over the rows of one group."""
    auc, bacc, boot = _stats()
    keep = [(v, y) for v, y in zip(values, labels) if v is not None]
    v = np.array([k[0] for k in keep], dtype=float)
    y = np.array([k[1] for k in keep], dtype=int)
    return {
        "n": len(keep),
        "negatives": int((y == 0).sum()),
        "failed": len(values) - len(keep),
        "auc": _num(auc(v, y)),
        "auc_ci": _ci(boot(auc, v, y, n=n_boot, seed=seed)),
        "balanced_accuracy": _num(bacc(v >= threshold, y)),
        "threshold": threshold,
    }


def paired_auc_difference(
    a: list[float | None], b: list[float | None], labels: list[int], n_boot: int, seed: int
) -> dict[str, Any]:
    """AUC(a) − AUC(b) on the rows both scored, with a paired percentile bootstrap CI
    (the same resampled rows for both)."""
    auc, _, boot = _stats()
    keep = [(x, z, y) for x, z, y in zip(a, b, labels) if x is not None and z is not None]
    xa, xb, y = (np.array([k[i] for k in keep], dtype=float) for i in range(3))

    def diff(p: np.ndarray, q: np.ndarray, lab: np.ndarray) -> float | str:
        s, t = auc(p, lab), auc(q, lab)
        return s if isinstance(s, str) else t if isinstance(t, str) else s - t

    return {"n": len(keep), "delta_auc": _num(diff(xa, xb, y)), "ci": _ci(boot(diff, xa, xb, y, n=n_boot, seed=seed))}


def best_threshold(values: list[float | None], labels: list[int]) -> float:
    _, bacc, _ = _stats()
    pairs = [(v, y) for v, y in zip(values, labels) if v is not None]
    v = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    scored = [(_num(bacc(v >= t, y)) or 0.0, -abs(t - 5.0), t) for t in THRESHOLD_GRID]
    return max(scored)[2]


def human_ceiling(rows: list[LabelledRow], metric: str) -> dict[str, Any] | None:
    from unified.analysis.crosscheck import cohen_kappa

    pairs = [(r.labels[metric], r.second[metric]) for r in rows if metric in r.second and metric in r.labels]
    if len(pairs) < 3:
        return None
    a = np.array([p[0] for p in pairs], dtype=bool)
    b = np.array([p[1] for p in pairs], dtype=bool)
    return {"n": len(pairs), "agreement": float((a == b).mean()), "kappa": _num(cohen_kappa(a, b))}


# ---------------------------------------------------------------- running

FIRST_ERRORS: dict[str, str] = {}  # metric key -> first failure seen, shown under the table


async def score_all(
    backend: Any, rows: list[LabelledRow], refs: dict[str, MetricRef], concurrency: int = 4
) -> dict[str, list[float | None]]:
    """0–10 value per metric key per row (None for a failed score or no label)."""
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


def _fixed(key: str) -> set[str]:
    """Parameter names a key fixes in its brackets (``faithfulness[w=0]`` → {"w"})."""
    given = key.partition("[")[2].rstrip("]")
    return {x.split("=", 1)[0].strip() for x in given.split(",") if x}


def _ref(key: str, params: dict[str, Any]) -> MetricRef:
    base, _, given = key.partition("[")
    items = [x for x in given.rstrip("]").split(",") if x] + [f"{k}={v}" for k, v in params.items()]
    if base == "faithfulness" and any(x.split("=")[0] in ("t", "w") for x in items):
        # t and w are the similarity heuristic's; the fitted default is measured by
        # benchmarks/fit_offline_judge.py (docs/offline-judge.md)
        items.append("variant=similarity")
    return parse_metric(f"{base}[{','.join(items)}]" if items else base)


def _scoring_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "threshold"}


def embedding_params(metrics: list[str], lexical_w: float | None) -> dict[str, dict[str, Any]]:
    """The embedding backend's defaults per metric key, plus the side-by-side keys:
    faithfulness with similarity alone, context relevancy's sentence variant."""
    from unified.adapters.embedding import DEFAULTS

    params: dict[str, dict[str, Any]] = {}
    for m in metrics:
        params[m] = {k: v for k, v in DEFAULTS[m].items() if k in ("t", "n", "w", "threshold")}
        if m == "faithfulness":
            if lexical_w is not None:
                params[m]["w"] = lexical_w
            params[SIMILARITY_ONLY] = {k: v for k, v in params[m].items() if k != "w"}
        if m == "context_relevancy":
            params[SENTENCE_VARIANT] = {"t": DEFAULTS[m]["t_sentence"], "threshold": DEFAULTS[m]["threshold_sentence"]}
    return params


def _embedding_backend(judges: Judges, cache: str | None) -> tuple[Any, MemoEmbedder]:
    from unified.adapters import get_backend
    from unified.judge.minilm import LocalEmbedder

    memo = MemoEmbedder(judges.embedder or LocalEmbedder())
    if cache and Path(cache).exists():
        memo.load(Path(cache))
    return get_backend("embedding", Judges(embedder=memo)), memo


def _describe(rows: list[LabelledRow], read: list[str], groups: dict[str, list[int]]) -> list[str]:
    metrics = sorted({m for r in rows for m in r.labels})
    out = [
        f"{len(rows)} labelled rows from {', '.join(read)}",
        "groups: "
        + ", ".join(f"{g} {len(ix)}" for g, ix in groups.items())
        + " (tune/test: the in-domain set split by sha256(id); the others: unseen, never tuned on)",
    ]
    for m in metrics:
        ceil = human_ceiling(rows, m)
        out.append(
            f"  human-vs-human ceiling for {m}: "
            + (
                f"agreement {ceil['agreement']:.2f}, kappa {ceil['kappa']}"
                if ceil
                else "not available (one annotator per row in this set)"
            )
        )
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rows, read = load_data(Path(args.data))
    if args.limit:
        rows = rows[: args.limit]
    metrics = sorted({m for r in rows for m in r.labels})
    if not rows or not metrics:
        raise SystemExit(f"{args.data}: no rows with usable labels (faithfulness, context_relevance, answer_relevance)")
    groups = groups_of(rows)
    print("\n".join(_describe(rows, read, groups)))
    judges, loopback = _judges(args)
    results: dict[str, Any] = {
        "data": read,
        "rows": len(rows),
        "groups": {g: len(ix) for g, ix in groups.items()},
        "backends": {},
        "deltas": {},
    }
    for bname in [b.strip() for b in args.backends.split(",") if b.strip()]:
        per_metric, deltas = await run_backend(bname, args, rows, groups, metrics, judges)
        if bname != "embedding" and loopback:
            print(
                f"[{bname}] NOTE: the judge is on loopback ({args.base_url or os.environ.get('UNIFIED_JUDGE_BASE_URL')}); "
                "if it is the test suite's fake server its answers are synthesised, so these figures only "
                "prove the plumbing, not judgment quality."
            )
        results["backends"][bname], results["deltas"][bname] = per_metric, deltas
    return results


async def run_backend(
    bname: str,
    args: argparse.Namespace,
    rows: list[LabelledRow],
    groups: dict[str, list[int]],
    metrics: list[str],
    judges: Judges,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Score every row with one backend, tune when asked, evaluate and print each group."""
    from unified.adapters import get_backend

    embedding = bname == "embedding"
    if embedding:
        backend, memo = _embedding_backend(judges, args.embedding_cache)
        params = embedding_params(metrics, args.lexical_w)
    else:
        backend, params = get_backend(bname, judges), {m: {} for m in metrics}
    t0 = time.perf_counter()
    keys = list(params)
    values = await score_all(backend, rows, {m: _ref(m, _scoring_params(params[m])) for m in keys}, args.concurrency)
    print(f"\n[{bname}] scored {len(rows)} rows in {time.perf_counter() - t0:.1f}s")
    if embedding and args.embedding_cache:
        memo.save(Path(args.embedding_cache))
    if embedding and args.tune:
        values, params = await tune(backend, rows, keys, groups["tune"], params, values, args.concurrency)
    per_metric: dict[str, Any] = {}
    for m in keys:
        thr = float(params[m].get("threshold", _ref(m, {}).spec.threshold))
        per_metric[m] = {"params": params[m]}
        for g, ix in groups.items():
            lab = [(values[m][i], label(rows[i], m)) for i in ix if label(rows[i], m) is not None]
            if lab:
                per_metric[m][g] = evaluate_half([x[0] for x in lab], [x[1] for x in lab], thr, args.n_boot, args.seed)
    deltas = compare_keys(values, rows, groups, args.n_boot, args.seed)
    print_table(bname, per_metric, groups)
    print_deltas(deltas)
    if embedding and args.tune and args.usefulness_data:
        per_metric["context_usefulness"] = await tune_usefulness(
            backend, Path(args.usefulness_data), args.n_boot, args.seed
        )
    return per_metric, deltas


def compare_keys(
    values: dict[str, list[float | None]], rows: list[LabelledRow], groups: dict[str, list[int]], n_boot: int, seed: int
) -> dict[str, Any]:
    """Paired AUC differences for the ``COMPARE`` pairs scored, per group."""
    out: dict[str, Any] = {}
    for a, b in COMPARE.items():
        if a not in values or b not in values:
            continue
        per: dict[str, Any] = {}
        for g, ix in groups.items():
            ix = [i for i in ix if label(rows[i], a) is not None]
            if ix:
                per[g] = paired_auc_difference(
                    [values[a][i] for i in ix],
                    [values[b][i] for i in ix],
                    [label(rows[i], a) for i in ix],
                    n_boot,
                    seed,
                )
        out[f"{a} - {b}"] = per
    return out


async def tune_usefulness(backend: Any, path: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """The per-context 'useful' cut of context_precision: ARES has no references, so it
    is chosen on a set with per-context labels instead — a retrieved context counts as
    useful when its id is in ``relevant_ids``; the score is the best sentence cosine
    between the context and the reference (details of the embedding context_precision);
    the cut maximises balanced accuracy."""
    auc, balanced_accuracy, bootstrap_ci = _stats()
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
    out = {
        "data": str(path),
        "contexts": len(v),
        "useful": int(y.sum()),
        "auc": _num(auc(v, y)),
        "auc_ci": _ci(bootstrap_ci(auc, v, y, n=n_boot, seed=seed)),
        "t": t_best,
        "balanced_accuracy": bas[t_best],
    }
    print(
        f"\ncontext usefulness (context_precision's cut) on {path.name}: {len(v)} contexts, "
        f"{int(y.sum())} relevant by id; AUC {out['auc']:.3f}; best t = {t_best} "
        f"(balanced accuracy {bas[t_best]:.3f}; the whole set is used: it has no tune/test split)"
    )
    return out


async def _grid_search(
    backend: Any,
    sub: list[LabelledRow],
    m: str,
    key: str,
    grid: Sequence[float],
    params: dict[str, Any],
    concurrency: int,
) -> float:
    """The grid value of parameter ``key`` of metric key ``m`` with the best AUC on ``sub``
    (the other parameters as in ``params``; ties: the value closest to the current one)."""
    auc = _stats()[0]
    best: tuple[float, float, float] | None = None
    seen: list[str] = []
    for g in grid:
        ref = _ref(m, {**_scoring_params(params), key: g})
        vals = (await score_all(backend, sub, {m: ref}, concurrency))[m]
        pairs = [(v, label(r, m)) for v, r in zip(vals, sub) if v is not None and label(r, m) is not None]
        a = _num(auc([p[0] for p in pairs], [p[1] for p in pairs])) or 0.0
        seen.append(f"{g}:{a:.3f}")
        cand = (round(a, 6), -abs(g - float(params.get(key, g))), g)
        best = cand if best is None or cand > best else best
    assert best is not None
    print(f"  grid {m} {key} -> tune-half AUC: {' '.join(seen)}")
    print(f"  tuned {m}: {key} = {best[2]} (tune-half AUC {best[0]:.3f})")
    return best[2]


async def tune(
    backend: Any,
    rows: list[LabelledRow],
    metrics: list[str],
    tune_ix: list[int],
    params: dict[str, dict[str, Any]],
    values: dict[str, list[float | None]],
    concurrency: int,
) -> tuple[dict[str, list[float | None]], dict[str, dict[str, Any]]]:
    """Search on the TUNE half only: each parameter of ``TUNE_GRID`` in order by AUC
    (a parameter fixed in the key's brackets is not searched), then the pass bound by
    balanced accuracy; returns every row's values and the parameters."""
    sub = [rows[i] for i in tune_ix]
    params = {m: dict(p) for m, p in params.items()}
    for m in metrics:
        for key, grid in TUNE_GRID.get(m, []):
            if key not in _fixed(m):
                params[m][key] = await _grid_search(backend, sub, m, key, grid, params[m], concurrency)
        full = (await score_all(backend, rows, {m: _ref(m, _scoring_params(params[m]))}, concurrency))[m]
        values[m] = full
        labelled = [i for i in tune_ix if label(rows[i], m) is not None]
        params[m]["threshold"] = best_threshold([full[i] for i in labelled], [label(rows[i], m) for i in labelled])
        print(f"  tuned {m}: pass bound = {params[m]['threshold']} on 0-10 (tune-half balanced accuracy)")
    return values, params


# ---------------------------------------------------------------- output


def _f(x: Any, d: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{d}f}"


def _ci_text(ci: list[float] | None, signed: bool = False) -> str:
    fmt = "+.2f" if signed else ".2f"
    return "n/a" if ci is None else f"[{ci[0]:{fmt}}, {ci[1]:{fmt}}]"


def print_table(backend: str, per_metric: dict[str, Any], groups: dict[str, list[int]]) -> None:
    print(
        f"{'metric':36s} {'group':7s} {'n':>4s} {'neg':>4s} {'AUC':>6s} {'95% CI':>15s} {'bal.acc':>8s} "
        f"{'@thr':>5s}  params"
    )
    for m, r in per_metric.items():
        ps = ", ".join(f"{k}={v}" for k, v in r["params"].items() if k != "threshold")
        for g in groups:
            if g not in r:
                continue
            e = r[g]
            extra = "" if not e["failed"] else f"  ({e['failed']} failed)"
            print(
                f"{m:36s} {g:7s} {e['n']:4d} {e['negatives']:4d} {_f(e['auc']):>6s} {_ci_text(e['auc_ci']):>15s} "
                f"{_f(e['balanced_accuracy']):>8s} {e['threshold']:5.1f}  {ps}{extra}"
            )
    for m in per_metric:
        if m in FIRST_ERRORS:
            print(f"  first failure of {m}: {FIRST_ERRORS[m][:200]}")


def print_deltas(deltas: dict[str, Any]) -> None:
    for pair, per in deltas.items():
        print(f"\nΔ AUC {pair} (same rows, paired bootstrap 95% CI):")
        for g, d in per.items():
            delta = "n/a" if d["delta_auc"] is None else f"{d['delta_auc']:+.3f}"
            print(f"  {g:7s} n={d['n']:4d}  {delta:>7s} {_ci_text(d['ci'], signed=True)}")


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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data",
        default=None,
        help="the shared data folder (ares/ and interop/ inside) or one labelled JSONL; "
        f"default: {DEFAULT_DATA} when it exists",
    )
    ap.add_argument("--backends", default="embedding", help="comma list: embedding,native,ragas,deepeval")
    ap.add_argument("--tune", action="store_true", help="grid-search embedding parameters on the tune half")
    ap.add_argument(
        "--lexical-w",
        type=float,
        default=None,
        help="faithfulness's lexical weight w for the embedding backend (default: the backend's; "
        "with --tune: the start of its search)",
    )
    ap.add_argument("--base-url", default=None, help="OpenAI-compatible judge URL (LLM backends)")
    ap.add_argument("--model", default=None, help="judge model name (LLM backends)")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for the 95%% CI")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    ap.add_argument("--limit", type=int, default=0, help="first N rows only (smoke runs)")
    ap.add_argument("--concurrency", type=int, default=4, help="samples scored at once")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument(
        "--usefulness-data",
        default=str(REPO / "examples/data/rag_examples.jsonl"),
        help="with --tune: a JSONL with reference, retrieved_ids and relevant_ids to choose "
        "context_precision's per-context cut ('' to skip)",
    )
    ap.add_argument(
        "--embedding-cache",
        default=None,
        help="npz file of embedding vectors, read if present and written after scoring "
        "(re-runs of the embedding backend then skip the model)",
    )
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    default = args.data is None
    args.data = str(DEFAULT_DATA if default else Path(args.data))
    if not Path(args.data).exists():
        where = "the default, ../shared/data next to the repository" if default else "given with --data"
        print(
            f"meta_eval: no labelled data at {args.data} ({where}). This benchmark needs human-labelled "
            "RAG data that is not part of the repository: pass --data with the shared data folder "
            "(ares/ and interop/ inside) or with a JSONL whose rows carry a `labels` object.",
            file=sys.stderr,
        )
        return 2
    results = asyncio.run(run(args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
