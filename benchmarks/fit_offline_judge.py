"""Fit the offline judge's faithfulness model and write ``unified/adapters/embedding/offline_judge.json``.

    python benchmarks/fit_offline_judge.py --data /work/shared/data [--sources N]
           [--cache /tmp/candidates.json] [--features a,b,c] [--candidates]
           [--out unified/adapters/embedding/offline_judge.json] [--dry-run] [--ignore-answered]
           [--merge more_candidates.json]

Data (human labels; none of it is in the repository):

- ``labelled/ragtruth/ragtruth_summary.jsonl`` and ``ragtruth_data2txt.jsonl`` (RAGTruth,
  Niu et al. 2024, MIT): a response is faithful when annotators marked no hallucination
  span. The source is the one context; a data-to-text source (a JSON record) is rendered
  one leaf per paragraph, ``path key (Split Key): value``. ``--sources N`` keeps N sources
  per file (6 responses each), chosen by a seeded shuffle of the source ids, so the
  subset is the same on every machine.
- ``ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl`` (ARES, 111 rows,
  ``labels.faithfulness``).

Signals and features are computed by the backend's own code
(``unified.adapters.embedding.signals``) from the packaged MiniLM's sentence and
word-piece vectors, one forward pass per distinct sentence; ``--cache`` keeps every
response's candidate features between runs (``--candidates`` prints each one's AUC alone,
``--features`` picks the ones to fit). ``--merge`` adds candidates computed elsewhere, by
response (``benchmarks/nli_candidate.py``: an entailment model's).

The fit: scikit-learn ``LogisticRegression`` (L2, C = 1) on standardised
``FEATURES``. Each set weighs the same in the loss, and within a set each class weighs
half, so the 111 ARES rows count as much as 300 RAGTruth responses, and a set's
hallucination rate does not move the intercept. Printed and stored:

- held-out AUC per set: fit on the other two sets, score the third ("fit on two, test
  on the third": the set was never seen);
- in-domain AUC per set: 5-fold cross-validation grouped by source (all responses to one
  news story or record stay in one fold), each fold fitted on the other two sets plus
  the other four folds;
- the shipped model: fitted on all three; its pass bound on p maximises the
  set-weighted balanced accuracy on that data.

AUC is ROC AUC of the score against the human label (faithful = 1), computed after the
non-answer rule (``p · answered``), i.e. of the value the backend reports;
``--ignore-answered`` prints the same table for p alone, to weigh that rule.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

# one BLAS and one torch thread: the products here are small, and on a loaded machine a
# second thread spends its time spinning at barriers, not computing (measured: MiniLM took
# ~60 ms of CPU per sentence with two threads at load average 14)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unified.adapters.embedding.signals import (  # noqa: E402
    FEATURES,
    ContextEvidence,
    response_features,
    sentence_signals,
)
from unified.judge.minilm import encode_both  # noqa: E402
from unified.text import split_sentences  # noqa: E402

SETS = ("ares", "summary", "data2txt")
ARES = "ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl"


def _camel(s: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", s)


def render_record(obj: Any, prefix: str = "") -> list[str]:
    """A data-to-text JSON record as readable lines, one per leaf: ``hours Monday: 9-17``;
    a camelCase key also appears split (``OutdoorSeating (Outdoor Seating)``) so its words
    can be found by the lexical signals."""
    if isinstance(obj, dict):
        out: list[str] = []
        for k, v in obj.items():
            key = k if _camel(k) == k else f"{k} ({_camel(k)})"
            out += render_record(v, f"{prefix} {key}".strip())
        return out
    if isinstance(obj, list):
        return [line for v in obj for line in render_record(v, prefix)]
    return [f"{prefix}: {obj}"]


def load_ragtruth(path: Path, sources: int | None) -> list[dict[str, Any]]:
    """One row per response: contexts, response, y (1 = no hallucination span), group."""
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = sorted(str(r["source_id"]) for r in recs)
    random.Random(0).shuffle(ids)
    keep = set(ids[:sources]) if sources else set(ids)
    rows = []
    for r in recs:
        if str(r["source_id"]) not in keep:
            continue
        src = r["source"] if isinstance(r["source"], str) else "\n\n".join(render_record(r["source"]))
        for x in r["responses"]:
            labels = json.loads(x["labels"] or "[]") if isinstance(x["labels"], str) else x["labels"]
            rows.append(
                {"contexts": [src], "response": x["response"], "y": int(not labels), "group": str(r["source_id"])}
            )
    return rows


def load_ares(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rows.append(
            {
                "contexts": r["retrieved_contexts"],
                "response": r["response"],
                "y": int(r["labels"]["faithfulness"]),
                "group": r["id"],
            }
        )
    return rows


def load_sets(data: Path, sources: int | None) -> dict[str, list[dict[str, Any]]]:
    rt = data / "labelled/ragtruth"
    return {
        "ares": load_ares(data / ARES),
        "summary": load_ragtruth(rt / "ragtruth_summary.jsonl", sources),
        "data2txt": load_ragtruth(rt / "ragtruth_data2txt.jsonl", sources),
    }


def trim(text: str, pair: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A preloaded pair with its word-piece vectors cut to the text's own pieces: an
    earlier version of this script kept the batch padding (``encode_both`` explains)."""
    from unified.judge.minilm import get_sentence_model

    ids = get_sentence_model().tokenizer(text, truncation=True, max_length=256)["input_ids"]
    n = max(len(ids) - 2, 1) if len(ids) > 2 else len(ids)
    return pair[0], pair[1][:n]


class Vectors:
    """Sentence and word-piece unit vectors of the packaged MiniLM, one forward pass per
    distinct text; ``forget()`` drops them (between sources, to bound memory)."""

    def __init__(self, preload: Path | None = None) -> None:
        self.cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.kept: frozenset[str] = frozenset()
        if preload:  # {text: (sentence vector, word-piece vectors)} written by an earlier run
            self.cache = {t: trim(t, v) for t, v in pickle.loads(preload.read_bytes()).items()}
            self.kept = frozenset(self.cache)

    def ensure(self, texts: list[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:  # the backend's own encoder: same vectors, same trimming
            self.cache.update(zip(todo, encode_both(todo)))

    def forget(self) -> None:
        """Drop the vectors computed here (the preloaded ones stay)."""
        self.cache = {t: v for t, v in self.cache.items() if t in self.kept} if self.kept else {}


def rare_words() -> Any:
    from unified.adapters.embedding.backend import is_rare_word

    return is_rare_word


def _key(r: dict[str, Any]) -> str:
    """A response's cache key: its source group and a digest of its texts."""
    text = "\x1f".join([r["response"], *r["contexts"]])
    return f"{r['group']}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def candidates(rows: list[dict[str, Any]], vectors: Vectors, cache: "FeatureCache") -> list[dict[str, float]]:
    """Every candidate feature (``response_features``) of each response, computed by the
    backend's own signal code from the model's vectors (or taken from ``cache``)."""
    is_rare = rare_words()
    out, group = [], None
    for n, r in enumerate(rows):
        hit = cache.get(_key(r))
        if hit is not None:
            out.append(hit)
            continue
        if r["group"] != group:
            vectors.forget()
            group = r["group"]
        rs = split_sentences(r["response"]) or [r["response"]]
        cs = [x for c in r["contexts"] for x in split_sentences(c)]
        vectors.ensure(rs + cs)
        ctx = ContextEvidence(
            r["contexts"],
            cs,
            np.array([vectors.cache[t][0] for t in cs]),
            np.concatenate([vectors.cache[t][1] for t in cs]),
        )
        sig = [sentence_signals(s, vectors.cache[s][0], vectors.cache[s][1], ctx, is_rare) for s in rs]
        out.append(cache.put(_key(r), response_features(sig, ctx.n_words)))
        if n % 50 == 49:
            cache.save()
            print(f"  {n + 1}/{len(rows)}", file=sys.stderr, flush=True)
    cache.save()
    return out


class FeatureCache:
    """Every computed response's candidate features, by ``_key``, in a JSON file that is
    rewritten as the work goes (an interrupted run resumes; a subset of sources reuses a
    larger run's rows). In memory only without a path."""

    def __init__(self, path: Path | None):
        self.path = path
        self.rows: dict[str, dict[str, float]] = {}
        if path and path.exists():
            self.rows = json.loads(path.read_text(encoding="utf-8"))

    def get(self, key: str) -> dict[str, float] | None:
        return self.rows.get(key)

    def put(self, key: str, features: dict[str, float]) -> dict[str, float]:
        self.rows[key] = features
        return features

    def save(self) -> None:
        if self.path:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.rows), encoding="utf-8")
            tmp.replace(self.path)


def matrix(cands: list[dict[str, float]], names: tuple[str, ...]) -> np.ndarray:
    """The columns ``names`` + ``answered`` (last) of the candidate dicts."""
    return np.array([[c[k] for k in names] + [c["answered"]] for c in cands])


def _weights(y: np.ndarray) -> np.ndarray:
    # each class half of its set's weight: a set's hallucination rate does not move the fit
    return np.where(y == 1, 0.5 / max(int(y.sum()), 1), 0.5 / max(int((1 - y).sum()), 1))


def fit(parts: list[tuple[np.ndarray, np.ndarray]], names: tuple[str, ...]) -> dict[str, Any]:
    """Logistic regression on standardised features; every part (set) weighs the same."""
    from sklearn.linear_model import LogisticRegression

    X = np.vstack([x[:, : len(names)] for x, _ in parts])
    y = np.concatenate([y for _, y in parts])
    w = np.concatenate([_weights(y) for _, y in parts]) * len(y)
    mu, sd = X.mean(axis=0), X.std(axis=0) + 1e-9
    m = LogisticRegression(C=1.0, max_iter=1000).fit((X - mu) / sd, y, sample_weight=w)
    return {
        "features": list(names),
        "mean": mu.tolist(),
        "scale": sd.tolist(),
        "coef": m.coef_[0].tolist(),
        "intercept": float(m.intercept_[0]),
    }


def score(model: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """The backend's value on 0–1: sigmoid(b + Σ w·(x−μ)/σ) · answered (x's last column)."""
    k = len(model["features"])
    z = model["intercept"] + ((x[:, :k] - model["mean"]) / model["scale"]) @ np.array(model["coef"])
    return 1.0 / (1.0 + np.exp(-z)) * x[:, -1]


def _auc(y: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return round(float(roc_auc_score(y, p)), 3)


Table = dict[str, np.ndarray]


def held_out(X: Table, Y: Table, names: tuple[str, ...]) -> dict[str, float]:
    """AUC on each set of a model fitted on the other two."""
    return {k: _auc(Y[k], score(fit([(X[o], Y[o]) for o in SETS if o != k], names), X[k])) for k in SETS}


def in_domain(k: str, X: Table, Y: Table, G: Table, names: tuple[str, ...]) -> float:
    """Grouped 5-fold AUC on set k, each fold fitted on the other sets + k's other folds."""
    from sklearn.model_selection import GroupKFold

    p = np.zeros(len(Y[k]))
    for tr, te in GroupKFold(5).split(X[k], Y[k], G[k]):
        model = fit([(X[o], Y[o]) for o in SETS if o != k] + [(X[k][tr], Y[k][tr])], names)
        p[te] = score(model, X[k][te])
    return _auc(Y[k], p)


def best_bound(model: dict[str, Any], X: Table, Y: Table) -> float:
    """The bound on 0–1 maximising the mean over sets of balanced accuracy (0.01 grid)."""

    def bacc(t: float) -> float:
        accs = []
        for k in SETS:
            v = score(model, X[k]) >= t
            accs.append(0.5 * (v[Y[k] == 1].mean() + (~v[Y[k] == 0]).mean()))
        return float(np.mean(accs))

    return max(np.round(np.arange(0.05, 0.96, 0.01), 2), key=bacc)


def single_feature_table(C: dict[str, list[dict[str, float]]], Y: Table) -> None:
    """Each candidate's AUC alone, per set (sign as it comes: < 0.5 means "lower is
    more faithful")."""
    print(f"{'candidate':22s} " + " ".join(f"{k:>9s}" for k in SETS))
    for name in C["ares"][0]:
        aucs = [_auc(Y[k], np.array([c[name] for c in C[k]])) for k in SETS]
        print(f"{name:22s} " + " ".join(f"{a:9.3f}" for a in aucs))


def search(C: dict[str, list[dict[str, float]]], Y: Table, start: tuple[str, ...], steps: int) -> None:
    """Greedy forward selection, printed: from ``start``, each step adds the candidate
    whose fit gives the best worst-set held-out AUC, and every candidate's held-out AUC on
    all three sets is shown, so a feature that helps one set and hurts another is seen.
    (It selects on the held-out sets themselves: treat its winner as a design choice to
    confirm, not as an unbiased estimate.)"""
    pool = [k for k in C["ares"][0] if k != "answered"]
    names = start
    for _ in range(steps):
        rows = []
        for cand in [c for c in pool if c not in names]:
            trial = (*names, cand)
            held = held_out({k: matrix(C[k], trial) for k in SETS}, Y, trial)
            rows.append((min(held.values()), cand, held))
        rows.sort(reverse=True)
        print(f"after {', '.join(names) or '(none)'}:")
        for worst, cand, held in rows:
            print(f"  + {cand:22s} worst {worst:.3f}  " + "  ".join(f"{k} {held[k]:.3f}" for k in SETS))
        names = (*names, rows[0][1])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (ares/, labelled/)")
    ap.add_argument("--sources", type=int, default=None, help="RAGTruth sources per file (default: all 150)")
    ap.add_argument(
        "--cache", type=Path, default=None, help="JSON cache of the responses' candidate features (resumable)"
    )
    ap.add_argument(
        "--vectors", type=Path, default=None, help="a pickle {text: (sentence, word-piece vectors)} to start from"
    )
    ap.add_argument(
        "--merge",
        type=Path,
        action="append",
        default=[],
        help="a JSON {rows: {key: {feature: value}}} of more candidates (benchmarks/nli_candidate.py writes one)",
    )
    ap.add_argument("--features", default=",".join(FEATURES), help="the features to fit, comma-separated")
    ap.add_argument("--candidates", action="store_true", help="print every candidate's AUC alone, then stop")
    ap.add_argument("--search", type=int, default=0, help="greedy forward selection: N steps from --features")
    ap.add_argument("--out", type=Path, default=ROOT / "unified/adapters/embedding/offline_judge.json")
    ap.add_argument("--dry-run", action="store_true", help="print the table, write nothing")
    ap.add_argument(
        "--ignore-answered",
        action="store_true",
        help="score p alone, without the backend's non-answer factor (a comparison: implies --dry-run)",
    )
    args = ap.parse_args(argv)
    args.dry_run = args.dry_run or args.ignore_answered  # the backend always applies the factor
    return args


def load_candidates(
    args: argparse.Namespace, sets: dict[str, list[dict[str, Any]]]
) -> dict[str, list[dict[str, float]]]:
    """Every response's candidate features, computed or from ``--cache``."""
    vectors, cache = Vectors(args.vectors), FeatureCache(args.cache)
    return {k: candidates(rows, vectors, cache) for k, rows in sets.items()}


def merge_candidates(
    C: dict[str, list[dict[str, float]]], sets: dict[str, list[dict[str, Any]]], path: Path
) -> dict[str, list[dict[str, float]]]:
    """``C`` with each response's features from ``path`` added (joined by ``_key``, so the
    file must come from the same data and ``--sources``); a response the file lacks stops
    the run with the set, the count and the first key, rather than fit on a subset."""
    extra = json.loads(path.read_text(encoding="utf-8"))["rows"]
    out = {}
    for k, rows in sets.items():
        missing = [_key(r) for r in rows if _key(r) not in extra]
        if missing:
            raise SystemExit(f"{path}: {len(missing)} of {len(rows)} {k} responses missing (first: {missing[0]})")
        out[k] = [{**c, **extra[_key(r)]} for c, r in zip(C[k], rows)]
    return out


def report(names: tuple[str, ...], X: Table, Y: Table, G: Table, args: argparse.Namespace, t0: float) -> None:
    """Print the per-set table and, unless ``--dry-run``, write the shipped model."""
    held = held_out(X, Y, names)
    ind = {k: in_domain(k, X, Y, G, names) for k in SETS}
    model = fit([(X[k], Y[k]) for k in SETS], names)
    model["bound"] = float(best_bound(model, X, Y))
    fitted = {k: _auc(Y[k], score(model, X[k])) for k in SETS}
    print(f"features: {', '.join(names)}")
    print(f"{'set':10s} {'n':>5s} {'faithful':>8s} {'held-out':>9s} {'in-domain':>10s} {'fitted':>7s}")
    for k in SETS:
        print(f"{k:10s} {len(Y[k]):5d} {int(Y[k].sum()):8d} {held[k]:9.3f} {ind[k]:10.3f} {fitted[k]:7.3f}")
    coef = {f: round(c, 3) for f, c in zip(names, model["coef"])}
    print(
        f"coefficients: {coef} intercept {model['intercept']:.3f} bound {model['bound']} ({time.perf_counter() - t0:.0f} s)"
    )
    if not args.dry_run:
        model["fitted_on"] = {k: {"rows": len(Y[k]), "faithful": int(Y[k].sum())} for k in SETS}
        model["auc"] = {"held_out": held, "in_domain": ind, "fitted": fitted}
        spec = {
            "version": 1,
            "embedder": "all-MiniLM-L6-v2",
            "script": "benchmarks/fit_offline_judge.py",
            "ragtruth_sources_per_file": args.sources or 150,
            "models": {"faithfulness": model},
        }
        args.out.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    sets = load_sets(args.data, args.sources)
    C = load_candidates(args, sets)
    for path in args.merge:
        C = merge_candidates(C, sets, path)
    Y = {k: np.array([r["y"] for r in rows]) for k, rows in sets.items()}
    G = {k: np.array([r["group"] for r in rows]) for k, rows in sets.items()}
    if args.candidates:
        single_feature_table(C, Y)
        return 0
    names = tuple(x.strip() for x in args.features.split(",") if x.strip())
    if args.search:
        search(C, Y, names, args.search)
        return 0
    X = {k: matrix(C[k], names) for k in SETS}
    if args.ignore_answered:
        for x in X.values():
            x[:, -1] = 1.0
    report(names, X, Y, G, args, t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
