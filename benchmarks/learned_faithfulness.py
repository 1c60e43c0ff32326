"""Measure a LEARNED sentence-pair signal for the offline faithfulness (issue 27): a
regularised logistic regression over the MiniLM vectors the backend already computes.

    python benchmarks/learned_faithfulness.py --data /path/to/shared/data --sources 100 \\
        [--vectors old_vectors.pkl] [--rows /tmp/learned_rows.pkl] [--C 0.003,0.01,0.03,0.1]

Same data, ``--sources`` selection and loading as ``benchmarks/fit_offline_judge.py``
(its functions are imported), same vectors (``unified.judge.minilm.encode_both``, or a
``--vectors`` pickle of them, trimmed as that script trims), same signal code
(``unified/adapters/embedding/signals.py``).

Per response sentence s (unit sentence vector u) against the context sentences (unit
vectors v_j, each context's sentences in order):

    c      = v_{j*},  j* = argmax_j u·v_j                     best-aligned context sentence
    w_j    = (v_{j-1} + v_j + v_{j+1}) / ||…||                3-sentence window of one context
    w      = w_{k*},  k* = argmax_k u·w_k                     best-aligned window
    x(s)   = [|u − c|, u ⊙ c, |u − w|, u ⊙ w]                 (4 × 384 = 1536 numbers)
             (+ with ``+scalars``: u·c, u·w, token precision, idf_unsupported,
              unsupported share, unsupported numbers > 0, novel bigrams)

``--kinds`` picks the rows: ``pairs`` (x), ``pair768`` (its best-sentence half),
``pairs+scalars``, ``scalars`` (the seven alone), ``pcaN`` (x projected on its top N
principal directions of the training rows: a low-rank model).

Sentence label: RAGTruth — 0 when the sentence overlaps an annotated hallucination
span (character offsets in the response; sentences are located in the
whitespace-normalised response), else 1; ARES — its response label (no spans).

Sentence model: ``LogisticRegression`` (L2, strength 1/C) on standardised x; each
training set weighs the same, each sentence class half of its set. Response score:
``min`` or ``mean`` over its sentences of P(faithful | x(s)), times ``answered`` (the
backend's non-answer factor), so every AUC here is of the value the backend would report.

Printed, ROC AUC per set against the human response label:

- held-out: fitted on the other two sets, scored on the third;
- in-domain: 5 folds grouped by source, each fitted on the other two sets + 4 folds;
- (a) the shipped model (``idf_unsupported`` + ``unsupported_numbers``, response level,
  ``fit_offline_judge.fit``); (b) the learned signal alone, per C and aggregation;
  (c) (b)'s response score stacked with (a)'s two features in a response-level logistic
  regression, the learned score of a training response taken out of fold (grouped
  5-fold inside the training data) so the stack does not trust an overfitted score.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fit_offline_judge as fj  # noqa: E402

from unified.adapters.embedding.signals import ContextEvidence, response_features, sentence_signals  # noqa: E402
from unified.text import split_sentences  # noqa: E402

SETS = fj.SETS
SHIPPED = ("idf_unsupported", "unsupported_numbers")
SCALARS = (
    "cos_c",
    "cos_w",
    "token_precision",
    "idf_unsupported",
    "unsupported_share",
    "bad_number",
    "novel_bigrams",
)


def _spans(labels: Any) -> list[tuple[int, int]]:
    labels = json.loads(labels or "[]") if isinstance(labels, str) else (labels or [])
    return [(int(x["start"]), int(x["end"])) for x in labels]


def sentence_offsets(response: str, sentences: list[str]) -> list[tuple[int, int] | None]:
    """Each sentence's (start, end) in ``response``: the sentences are whitespace-
    normalised (``split_sentences``), so they are found in the normalised response and
    mapped back through its index map; None for a sentence not found."""
    norm, index = [], []
    for m in re.finditer(r"\S+", response):
        if norm:
            norm.append(" ")
            index.append(m.start())
        norm.append(m.group(0))
        index.extend(range(m.start(), m.end()))
    text = "".join(norm)
    out: list[tuple[int, int] | None] = []
    pos = 0
    for s in sentences:
        i = text.find(s, pos)
        if i < 0:
            out.append(None)
            continue
        out.append((index[i], index[i + len(s) - 1] + 1))
        pos = i + len(s)
    return out


def sentence_labels(r: dict[str, Any], sentences: list[str]) -> tuple[list[int], int]:
    """Each sentence's label and how many sentences could not be located. With spans
    (RAGTruth): 0 when the sentence's characters overlap a span, else 1; a sentence not
    found in the response takes the response's label. Without (ARES): the response's."""
    if "spans" not in r:
        return [r["y"]] * len(sentences), 0
    offs = sentence_offsets(r["response"], sentences)
    ys = [r["y"] if o is None else int(not any(a < o[1] and o[0] < b for a, b in r["spans"])) for o in offs]
    return ys, sum(o is None for o in offs)


def load_rows(data: Path, sources: int | None) -> dict[str, list[dict[str, Any]]]:
    """``fit_offline_judge.load_sets`` plus each RAGTruth response's spans."""
    sets = fj.load_sets(data, sources)
    for name, file in (("summary", "ragtruth_summary.jsonl"), ("data2txt", "ragtruth_data2txt.jsonl")):
        spans = {}
        for line in (data / "labelled/ragtruth" / file).read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                for x in r["responses"]:
                    spans[(str(r["source_id"]), x["response"])] = _spans(x["labels"])
        for row in sets[name]:
            row["spans"] = spans[(row["group"], row["response"])]
    return sets


def windows(contexts: list[str], vecs: dict[str, np.ndarray]) -> np.ndarray:
    """The unit 3-sentence windows (a sentence and its neighbours in the same context)."""
    out = []
    for c in contexts:
        v = np.array([vecs[s] for s in split_sentences(c)])
        if not len(v):
            continue
        pad = np.vstack([np.zeros((1, v.shape[1])), v, np.zeros((1, v.shape[1]))])
        w = pad[:-2] + pad[1:-1] + pad[2:]
        out.append(w / np.linalg.norm(w, axis=1, keepdims=True))
    return np.vstack(out)


def response_rows(r: dict[str, Any], vectors: fj.Vectors, is_rare: Any) -> dict[str, Any]:
    """One response: its sentences' pair features and labels, and its shipped features."""
    rs = split_sentences(r["response"]) or [r["response"]]
    cs = [x for c in r["contexts"] for x in split_sentences(c)]
    vectors.ensure(rs + cs)
    vc = vectors.cache
    ctx = ContextEvidence(r["contexts"], cs, np.array([vc[t][0] for t in cs]), np.concatenate([vc[t][1] for t in cs]))
    sig = [sentence_signals(s, vc[s][0], vc[s][1], ctx, is_rare) for s in rs]
    W = windows(r["contexts"], {t: vc[t][0] for t in cs})
    pairs, scalars = [], []
    for s, g in zip(rs, sig):
        u = vc[s][0]
        c = ctx.vectors[int((ctx.vectors @ u).argmax())]
        w = W[int((W @ u).argmax())]
        pairs.append(np.concatenate([np.abs(u - c), u * c, np.abs(u - w), u * w]).astype(np.float32))
        scalars.append(
            [
                float(u @ c),
                float(u @ w),
                g.token_precision,
                g.idf_unsupported,
                g.unsupported_share,
                float(bool(g.unsupported_numbers)),
                g.novel_bigrams,
            ]
        )
    ys, missed = sentence_labels(r, rs)
    feats = response_features(sig, ctx.n_words)
    return {
        "pairs": np.array(pairs),
        "scalars": np.array(scalars, dtype=np.float32),
        "ys": np.array(ys),
        "missed": missed,
        "shipped": [feats[k] for k in SHIPPED],
        "answered": feats["answered"],
        "y": r["y"],
        "group": r["group"],
    }


def build(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Every response's rows, computed (and pickled to ``--rows``) or read from it."""
    if args.rows and args.rows.exists():
        return pickle.loads(args.rows.read_bytes())
    sets = load_rows(args.data, args.sources)
    vectors, is_rare = fj.Vectors(args.vectors), fj.rare_words()
    out: dict[str, list[dict[str, Any]]] = {}
    for k in SETS:
        out[k] = []
        group = None
        for n, r in enumerate(sets[k]):
            if r["group"] != group:
                vectors.forget()
                group = r["group"]
            out[k].append(response_rows(r, vectors, is_rare))
            if n % 100 == 99:
                print(f"  {k} {n + 1}/{len(sets[k])}", file=sys.stderr, flush=True)
    if args.rows:
        args.rows.write_bytes(pickle.dumps(out))
    return out


# ---- the sentence model -------------------------------------------------------------


def sentence_matrix(resp: list[dict[str, Any]], kind: str) -> np.ndarray:
    """The sentence rows of ``kind``: ``pairs`` (1536), ``pair768`` (best sentence only),
    ``pairs+scalars``, ``scalars``; ``pcaN`` is ``pairs`` (projected in ``fit_sentences``)."""
    parts = []
    for r in resp:
        x = r["pairs"] if kind != "scalars" else np.zeros((len(r["ys"]), 0), np.float32)
        if kind == "pair768":
            x = np.hstack([x[:, :768]])
        if kind in ("scalars", "pairs+scalars"):
            x = np.hstack([x, r["scalars"]])
        parts.append(x)
    return np.vstack(parts)


def fit_sentences(train: list[list[dict[str, Any]]], kind: str, C: float) -> Any:
    """L2 logistic regression on standardised sentence features; every training set
    weighs the same, each sentence class half of its set."""
    from sklearn.linear_model import LogisticRegression

    X = np.vstack([sentence_matrix(t, kind) for t in train])
    ys = [np.concatenate([r["ys"] for r in t]) for t in train]
    w = np.concatenate([fj._weights(y) for y in ys])
    y = np.concatenate(ys)
    w = w * len(y) / w.sum()
    mu, sd = X.mean(axis=0), X.std(axis=0) + 1e-6
    proj = None
    if kind.startswith("pca"):  # a low-rank projection: the top principal directions
        _, _, vt = np.linalg.svd((X - mu) / sd, full_matrices=False)
        proj = vt[: int(kind[3:])].T
    Z = (X - mu) / sd if proj is None else ((X - mu) / sd) @ proj
    m = LogisticRegression(C=C, max_iter=2000).fit(Z, y, sample_weight=w)
    return (m, mu, sd, proj)


def response_scores(model: Any, resp: list[dict[str, Any]], kind: str, agg: str) -> np.ndarray:
    """min or mean over each response's sentences of P(faithful), times ``answered``."""
    m, mu, sd, proj = model
    X = (sentence_matrix(resp, kind) - mu) / sd
    p = m.predict_proba(X if proj is None else X @ proj)[:, 1]
    out, i = [], 0
    for r in resp:
        n = len(r["ys"])
        q = p[i : i + n]
        out.append((q.min() if agg == "min" else q.mean()) * r["answered"])
        i += n
    return np.array(out)


def y_of(resp: list[dict[str, Any]]) -> np.ndarray:
    return np.array([r["y"] for r in resp])


def folds(resp: list[dict[str, Any]], k: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import GroupKFold

    g = np.array([r["group"] for r in resp])
    return list(GroupKFold(k).split(np.zeros(len(resp)), groups=g))


def sub(resp: list[dict[str, Any]], idx: np.ndarray) -> list[dict[str, Any]]:
    return [resp[i] for i in idx]


def shipped_matrix(resp: list[dict[str, Any]], extra: np.ndarray | None = None) -> np.ndarray:
    """``fit_offline_judge.matrix``'s layout: the features, then ``answered`` last."""
    cols = [r["shipped"] for r in resp]
    x = np.array(cols)
    if extra is not None:
        x = np.hstack([extra[:, None], x])
    return np.hstack([x, np.array([[r["answered"]] for r in resp])])


def oof_scores(train: list[list[dict[str, Any]]], kind: str, C: float, agg: str) -> list[np.ndarray]:
    """Each training response's learned score from a sentence model that did not see its
    source (grouped 5 folds over every training set at once)."""
    out = [np.zeros(len(t)) for t in train]
    fs = [folds(t) for t in train]
    for f in range(5):
        model = fit_sentences([sub(t, fs[i][f][0]) for i, t in enumerate(train)], kind, C)
        for i, t in enumerate(train):
            te = fs[i][f][1]
            out[i][te] = response_scores(model, sub(t, te), kind, agg)
    return out


def evaluate(train: list[list[dict[str, Any]]], test: list[dict[str, Any]], how: dict[str, Any]) -> np.ndarray:
    """The test responses' scores of one model design fitted on ``train``."""
    names = SHIPPED if how["model"] == "shipped" else ("learned", *SHIPPED)
    if how["model"] == "shipped":
        m = fj.fit([(shipped_matrix(t), y_of(t)) for t in train], names)
        return fj.score(m, shipped_matrix(test))
    model = fit_sentences(train, how["kind"], how["C"])
    learned = response_scores(model, test, how["kind"], how["agg"])
    if how["model"] == "learned":
        return learned
    oof = oof_scores(train, how["kind"], how["C"], how["agg"])
    m = fj.fit([(shipped_matrix(t, o), y_of(t)) for t, o in zip(train, oof)], names)
    return fj.score(m, shipped_matrix(test, learned))


def table(data: dict[str, list[dict[str, Any]]], how: dict[str, Any], domain: bool) -> dict[str, tuple[float, float]]:
    """{set: (held-out AUC, in-domain AUC)} of one design."""
    out = {}
    for k in SETS:
        others = [data[o] for o in SETS if o != k]
        held = fj._auc(y_of(data[k]), evaluate(others, data[k], how))
        ind = float("nan")
        if domain:
            p = np.zeros(len(data[k]))
            for tr, te in folds(data[k]):
                p[te] = evaluate([*others, sub(data[k], tr)], sub(data[k], te), how)
            ind = fj._auc(y_of(data[k]), p)
        out[k] = (held, ind)
    return out


def show(label: str, res: dict[str, tuple[float, float]], t0: float) -> None:
    cells = "  ".join(f"{k} {res[k][0]:.3f}/{res[k][1]:.3f}" for k in SETS)
    worst = min(v[0] for v in res.values())
    print(f"{label:44s} {cells}  worst held-out {worst:.3f}  ({time.perf_counter() - t0:.0f} s)", flush=True)


def sentence_auc(data: dict[str, list[dict[str, Any]]], kind: str, C: float) -> dict[str, float]:
    """Held-out AUC at the sentence level: P(faithful) of each sentence against its own
    label (RAGTruth: does it overlap a span), the learned model fitted on the other sets."""
    out = {}
    for k in SETS:
        m, mu, sd, proj = fit_sentences([data[o] for o in SETS if o != k], kind, C)
        X = (sentence_matrix(data[k], kind) - mu) / sd
        p = m.predict_proba(X if proj is None else X @ proj)[:, 1]
        out[k] = fj._auc(np.concatenate([r["ys"] for r in data[k]]), p)
    return out


def describe(data: dict[str, list[dict[str, Any]]]) -> None:
    for k in SETS:
        ys = np.concatenate([r["ys"] for r in data[k]])
        missed = sum(r["missed"] for r in data[k])
        print(
            f"{k:9s} responses {len(data[k])}  sentences {len(ys)}  unfaithful sentences {int((ys == 0).sum())}"
            f"  not located {missed}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--sources", type=int, default=100)
    ap.add_argument("--vectors", type=Path, default=None, help="fit_offline_judge's --vectors pickle")
    ap.add_argument("--rows", type=Path, default=None, help="pickle of the computed rows (read if present)")
    ap.add_argument("--C", default="0.003,0.01,0.03,0.1", help="L2 strengths 1/C to try for the learned model")
    ap.add_argument("--kinds", default="pairs,pair768,pairs+scalars,scalars")
    ap.add_argument("--stack", default="", help="'kind:C:agg' designs to stack with the shipped two (in-domain too)")
    ap.add_argument("--sentence-level", default="", help="'kind:C' designs: sentence-level held-out AUC")
    ap.add_argument("--in-domain", action="store_true", help="also the grouped in-domain folds for (b)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    data = build(args)
    describe(data)
    print("AUC held-out/in-domain")
    show("(a) shipped", table(data, {"model": "shipped"}, True), t0)
    for kind in filter(None, args.kinds.split(",")):
        for C in (float(c) for c in args.C.split(",")):
            for agg in ("min", "mean"):
                how = {"model": "learned", "kind": kind, "C": C, "agg": agg}
                show(f"(b) learned {kind} C={C} {agg}", table(data, how, args.in_domain), t0)
    for spec in filter(None, args.sentence_level.split(",")):
        kind, C = spec.split(":")
        print(f"sentence-level held-out AUC, {kind} C={C}: {sentence_auc(data, kind, float(C))}", flush=True)
    for spec in filter(None, args.stack.split(",")):
        kind, C, agg = spec.split(":")
        how = {"model": "stack", "kind": kind, "C": float(C), "agg": agg}
        show(f"(c) learned {kind} C={C} {agg} + shipped two", table(data, how, True), t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
