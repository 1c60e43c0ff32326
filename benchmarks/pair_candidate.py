"""Co-occurrence support of content-word pairs as a candidate for the offline faithfulness
fit: does "a wrong relation between two words the source does contain" separate RAGTruth's
hallucinated responses from the faithful ones? (Measured, not shipped: the figures and the
verdict are in docs/offline-judge.md, "What was tried".)

"Curie won the Nobel Prize in Chemistry in 1903" against "… Physics in 1903 … Chemistry
in 1911": every word occurs in the context, so word overlap calls the sentence supported,
but "chemistry" and "1903" never occur in one context sentence. Per response sentence:

    P         = the unordered pairs {a, b} of its distinct content words
                (``unified.text.content_words``' rule) at most ``window`` words apart
    gap(a, b) = the fewest sentences apart that a and b occur in one context
                (0: one sentence; ∞: never in one context); "occurs in a sentence" is
                the backend's rule, ``unified.text.Vocabulary`` of that sentence
    a pair is supported when gap(a, b) < span (span = 1: one context sentence)

    unsupported_pairs = Σ_{p ∈ P'} weight(p) · [p unsupported] / Σ_{p ∈ P'} weight(p)

over P' = the pairs both of whose words occur in some context (a word found nowhere is
``idf_unsupported``'s already; ``missing`` counts such pairs as unsupported too),
optionally only the pairs with a key term (``unified.text.key_terms``: a number, a name, an
identifier: ``keyed``); weight(p) = idf(a) · idf(b) with the backend's idf
(``ContextEvidence.idf``), or 1; 0 without pairs. Sentences are the backend's
(``split_sentences``). The pairs are found once per sentence and every variant is a
filter over them.

    python benchmarks/pair_candidate.py --data /path/to/shared/data --cache /tmp/candidates.json \\
        [--out /tmp/pairs.json] [--top 12]
    python benchmarks/pair_candidate.py --data /path/to/shared/data --sentences
    python benchmarks/pair_candidate.py --data … --cache … --compare pairs_s5_wall_miss_idf_pool

``--cache``: ``fit_offline_judge.py``'s feature cache, filled for every source
(``fit_offline_judge.py --data … --cache …`` without ``--sources``), for the shipped
features the pairs are fitted next to. Every variant of the pair signal (above) is
computed from the backend's own text rules, per response as the mean and the max over its
sentences and pooled over all its pairs:

    span     1, 2, 3, 5    context sentences within which the two words must co-occur
    window   all, 4, 8     the pair's words at most this many words apart in the sentence
    keyed    no / yes      only pairs with a number, name or identifier
    missing  no / yes      pairs with a word found in no context count as unsupported
    weighted no / yes      idf(a) · idf(b) per pair

Two-stage protocol, so that choosing among 288 variants does not inflate the figure:
the variants are ranked on the **design** sources (RAGTruth sources 101–150 of
``fit_offline_judge``'s seeded order, disjoint from the shipped fit's 100; ARES whole),
by the worst set's held-out AUC of each model of ``MODELS`` (the shipped two plus the
variant; the variant alone; the variant in ``idf_unsupported``'s place, with
``unsupported_numbers``); each model's ``--top`` by worst set and ``--top`` by summary are then measured on the **confirm**
sources (the shipped 100), the table the docs report.
``--out`` writes every variant for ``fit_offline_judge.py --merge``.

``--compare a,b``: the model over features a,b against the shipped two on every source
(150 per RAGTruth file), each set's held-out scores, and a paired bootstrap over sources
(1,000 resamples, seed 0) of the difference in AUC: its 95% interval and how often it is ≤ 0.

``--sentences``: the same question one level down, on RAGTruth's 100 shipped sources,
where a sentence is hallucinated when it overlaps an annotated span
(``learned_faithfulness.sentence_labels``): each sentence's AUC for ``idf_unsupported``
(the backend's, denied words included) and the pair share (span 1, whole sentence, with
and without missing words); a sentence-level logistic regression on idf + pairs (5 folds
grouped by source), and the response score it gives (the mean of its sentences'
P(faithful)), fitted in-domain and on the other RAGTruth set.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fit_offline_judge as fit  # noqa: E402

from unified.adapters.embedding.signals import ContextEvidence  # noqa: E402
from unified.text import STOPWORDS, Vocabulary, key_terms, split_sentences, words  # noqa: E402

SHIPPED = ("idf_unsupported", "unsupported_numbers")
GRID = list(itertools.product((1, 2, 3, 5), (None, 4, 8), (False, True), (False, True), (False, True)))


class WordPair(NamedTuple):
    """Two content words of one response sentence and where the contexts hold them."""

    a: str
    b: str
    distance: int  # fewest words apart in the sentence
    keyed: bool  # a or b is a key term (number, name, identifier)
    supported_words: bool  # both occur in some context
    gap: float  # fewest context sentences apart within one context; math.inf: never together
    weight: float  # idf(a) · idf(b)


class PairEvidence:
    """Each context sentence's vocabulary, with its (context, sentence) position."""

    def __init__(self, contexts: Sequence[str]):
        self.sentences = [
            (c, i, Vocabulary([s])) for c, text in enumerate(contexts) for i, s in enumerate(split_sentences(text))
        ]

    def places(self, word: str) -> dict[int, list[int]]:
        """The sentence numbers at which ``word`` occurs, by context."""
        out: dict[int, list[int]] = {}
        for c, i, vocabulary in self.sentences:
            if word in vocabulary:
                out.setdefault(c, []).append(i)
        return out

    def pairs(self, sentence: str, idf: Callable[[str], float]) -> list[WordPair]:
        """Every pair of the sentence's distinct content words, with its gap."""
        pos: dict[str, list[int]] = {}
        for n, w in enumerate(words(sentence)):
            if w not in STOPWORDS and (len(w) > 1 or w.isdigit()):  # content_words' rule, with positions
                pos.setdefault(w, []).append(n)
        keys = key_terms(sentence)
        where = {w: self.places(w) for w in pos}
        terms = sorted(pos)
        return [
            WordPair(
                a,
                b,
                min(abs(x - y) for x in pos[a] for y in pos[b]),
                a in keys or b in keys,
                bool(where[a]) and bool(where[b]),
                _gap(where[a], where[b]),
                idf(a) * idf(b),
            )
            for i, a in enumerate(terms)
            for b in terms[i + 1 :]
        ]


def _gap(pa: dict[int, list[int]], pb: dict[int, list[int]]) -> float:
    """min |i − j| over sentences i of a and j of b in one context; ∞ when none shares one."""
    gaps = [abs(i - j) for c in pa.keys() & pb.keys() for i in pa[c] for j in pb[c]]
    return float(min(gaps)) if gaps else math.inf


def unsupported_pairs(
    pairs: Sequence[WordPair],
    *,
    span: int = 1,
    window: int | None = None,
    keyed: bool = False,
    with_missing: bool = False,
    weighted: bool = False,
) -> tuple[float, list[WordPair]]:
    """The (weighted) share of the considered pairs that are unsupported, and those pairs
    (formula in the module docstring); (0.0, []) when no pair is considered."""
    kept = [
        p
        for p in pairs
        if (window is None or p.distance <= window) and (p.keyed or not keyed) and (p.supported_words or with_missing)
    ]
    bad = [p for p in kept if p.gap >= span]
    total = sum(p.weight if weighted else 1.0 for p in kept)
    miss = sum(p.weight if weighted else 1.0 for p in bad)
    return (miss / total if total else 0.0), bad


def variant_name(span: int, window: int | None, keyed: bool, missing: bool, weighted: bool) -> str:
    return f"pairs_s{span}_w{window or 'all'}{'_key' if keyed else ''}{'_miss' if missing else ''}{'_idf' if weighted else ''}"


def response_pairs(r: dict[str, Any]) -> list[list[WordPair]]:
    """Each response sentence's pairs (idf over the context sentences, as the backend's)."""
    cs = [x for c in r["contexts"] for x in split_sentences(c)]
    idf = ContextEvidence(r["contexts"], cs, np.zeros((len(cs), 1)), None).idf
    ev = PairEvidence(r["contexts"])
    return [ev.pairs(s, idf) for s in split_sentences(r["response"]) or [r["response"]]]


def variants(sents: list[list[WordPair]]) -> dict[str, float]:
    """Every variant of one response: mean and max over its sentences, and pooled."""
    out: dict[str, float] = {}
    pooled = [p for s in sents for p in s]
    for span, window, keyed, missing, weighted in GRID:

        def share(ps: Sequence[WordPair]) -> float:
            return unsupported_pairs(
                ps, span=span, window=window, keyed=keyed, with_missing=missing, weighted=weighted
            )[0]

        per = [share(s) for s in sents]
        name = variant_name(span, window, keyed, missing, weighted)
        out[name + "_mean"] = sum(per) / len(per)
        out[name + "_max"] = max(per)
        out[name + "_pool"] = share(pooled)
    return out


#: the models a variant is tried in: next to the shipped two, or in idf_unsupported's place
MODELS = {
    "+ shipped two": lambda v: (*SHIPPED, v),
    "alone": lambda v: (v,),
    "+ unsupported_numbers": lambda v: (v, "unsupported_numbers"),
}


def evaluate(C: dict[str, list[dict[str, float]]], Y: fit.Table, names: list[str], model: str) -> list[tuple[Any, ...]]:
    """Per variant: AUC alone per set (raw value), and held-out AUC of ``MODELS[model]``."""
    rows = []
    for v in names:
        alone = {k: fit._auc(Y[k], -np.array([c[v] for c in C[k]])) for k in fit.SETS}
        trial = MODELS[model](v)
        held = fit.held_out({k: fit.matrix(C[k], trial) for k in fit.SETS}, Y, trial)
        rows.append((min(held.values()), v, alone, held))
    return sorted(rows, key=lambda r: r[0], reverse=True)


def show(title: str, rows: list[tuple[Any, ...]], model: str) -> None:
    print(title)
    print(f"  {'variant':34s} {'alone: ares summary d2t':>26s}   {model + ', held out':>26s}")
    for worst, v, alone, held in rows:
        a = " ".join(f"{alone[k]:.3f}" for k in fit.SETS)
        h = " ".join(f"{held[k]:.3f}" for k in fit.SETS)
        print(f"  {v:34s} {a:>26s}   {h:>26s}  worst {worst:.3f}")


def compare(C: dict[str, list[dict[str, float]]], Y: fit.Table, G: fit.Table, names: tuple[str, ...]) -> None:
    """Print the ``--compare`` table (module docstring)."""
    from sklearn.metrics import roc_auc_score

    def held(features: tuple[str, ...]) -> dict[str, np.ndarray]:
        X = {k: fit.matrix(C[k], features) for k in fit.SETS}
        return {k: fit.score(fit.fit([(X[o], Y[o]) for o in fit.SETS if o != k], features), X[k]) for k in fit.SETS}

    base, new, rng = held(SHIPPED), held(names), np.random.default_rng(0)
    print(f"{', '.join(names)} against {', '.join(SHIPPED)}, held out, every source")
    for k in fit.SETS:
        diff = roc_auc_score(Y[k], new[k]) - roc_auc_score(Y[k], base[k])
        groups = {g: np.flatnonzero(G[k] == g) for g in np.unique(G[k])}
        keys, d = list(groups), []
        for _ in range(1000):
            ii = np.concatenate([groups[keys[j]] for j in rng.integers(0, len(keys), len(keys))])
            if 0 < Y[k][ii].sum() < len(ii):
                d.append(roc_auc_score(Y[k][ii], new[k][ii]) - roc_auc_score(Y[k][ii], base[k][ii]))
        lo, hi = np.percentile(d, [2.5, 97.5])
        print(
            f"  {k:9s} {fit._auc(Y[k], base[k]):.3f} -> {fit._auc(Y[k], new[k]):.3f}  difference {diff:+.3f}"
            f"  95% interval [{lo:+.3f}, {hi:+.3f}]  share <= 0: {np.mean(np.array(d) <= 0):.3f}"
        )


def sentence_rows(r: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """One row per sentence of response ``n``: its span label, idf_unsupported and pair shares."""
    from learned_faithfulness import sentence_labels

    from unified.adapters.embedding.signals import idf_unsupported
    from unified.text import content_words

    cs = [x for c in r["contexts"] for x in split_sentences(c)]
    ctx = ContextEvidence(r["contexts"], cs, np.zeros((len(cs), 1)), None)
    sents = split_sentences(r["response"]) or [r["response"]]
    ev, (ys, _) = PairEvidence(r["contexts"]), sentence_labels(r, sents)
    out = []
    for s, y in zip(sents, ys):
        ps = ev.pairs(s, ctx.idf)
        denied = ctx.polarity.denied(s, content_words(s))
        x = [idf_unsupported(s, ctx, denied), unsupported_pairs(ps)[0], unsupported_pairs(ps, with_missing=True)[0]]
        out.append({"y": y, "x": x, "group": r["group"], "response": n, "label": r["y"]})
    return out


def sentence_study(data: Path) -> None:
    """Print the ``--sentences`` tables (module docstring)."""
    from learned_faithfulness import load_rows
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    sets = {k: v for k, v in load_rows(data, 100).items() if k != "ares"}
    S = {k: [s for n, r in enumerate(rows) for s in sentence_rows(r, n)] for k, rows in sets.items()}
    arr = {k: (np.array([s["x"] for s in v]), np.array([s["y"] for s in v])) for k, v in S.items()}

    def model(X: np.ndarray, y: np.ndarray) -> Any:
        return LogisticRegression(class_weight="balanced").fit(X, y)

    def by_response(k: str, p: np.ndarray) -> float:
        sums: dict[int, list[float]] = {}
        for s, v in zip(S[k], p):
            sums.setdefault(s["response"], []).append(v)
        label = {s["response"]: s["label"] for s in S[k]}
        return fit._auc(np.array([label[r] for r in sums]), np.array([np.mean(v) for v in sums.values()]))

    for k, (X, y) in arr.items():
        other = next(o for o in arr if o != k)
        print(f"{k}: {len(y)} sentences, {int((1 - y).sum())} hallucinated")
        alone = [fit._auc(y, -X[:, j]) for j in range(3)]
        print(
            f"  sentence AUC alone: idf_unsupported {alone[0]:.3f}, pairs {alone[1]:.3f}, pairs+missing {alone[2]:.3f}"
        )
        for name, cols in (("idf_unsupported", [0]), ("idf_unsupported + pairs", [0, 1])):
            p = np.zeros(len(y))
            groups = np.array([s["group"] for s in S[k]])
            for tr, te in GroupKFold(5).split(X, y, groups):
                p[te] = model(X[tr][:, cols], y[tr]).predict_proba(X[te][:, cols])[:, 1]
            q = model(arr[other][0][:, cols], arr[other][1]).predict_proba(X[:, cols])[:, 1]
            print(
                f"  {name:24s} sentence in-domain {fit._auc(y, p):.3f};"
                f" response (mean P) in-domain {by_response(k, p):.3f}, fitted on {other} {by_response(k, q):.3f}"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--cache", type=Path, default=None, help="fit_offline_judge's feature cache (all sources)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--sentences", action="store_true", help="the sentence-level study instead (no cache needed)")
    ap.add_argument("--compare", default="", help="features a,b: against the shipped two, bootstrapped (every source)")
    args = ap.parse_args(argv)
    if args.sentences:
        sentence_study(args.data)
        return 0
    if args.cache is None:
        ap.error("--cache is needed (fit_offline_judge's feature cache)")
    every, confirm = fit.load_sets(args.data, None), fit.load_sets(args.data, 100)
    cache = fit.FeatureCache(args.cache)
    feats: dict[str, dict[str, float]] = {}
    for k, rows in every.items():
        for n, r in enumerate(rows):
            base = cache.get(fit._key(r))
            if base is None:
                raise SystemExit(f"{args.cache}: no features for {k} row {n}; fill it with fit_offline_judge.py")
            feats[fit._key(r)] = {**base, **variants(response_pairs(r))}
        print(f"  {k}: {len(rows)} responses", file=sys.stderr, flush=True)
    if args.out:
        args.out.write_text(json.dumps({"rows": feats}), encoding="utf-8")
    if args.compare:
        C = {k: [feats[fit._key(r)] for r in rows] for k, rows in every.items()}
        Y = {k: np.array([r["y"] for r in rows]) for k, rows in every.items()}
        G = {k: np.array([r["group"] for r in rows]) for k, rows in every.items()}
        compare(C, Y, G, tuple(args.compare.split(",")))
        return 0
    kept = {k: {r["group"] for r in rows} for k, rows in confirm.items()}
    design = {k: [r for r in rows if k == "ares" or r["group"] not in kept[k]] for k, rows in every.items()}
    names = [v for v in next(iter(feats.values())) if v.startswith("pairs_")]
    for model in MODELS:
        ranked = measure("design", design, feats, names, model)
        show(f"design, {model}: the best {args.top} of {len(ranked)} (worst set first)", ranked[: args.top], model)
        by_summary = sorted(ranked, key=lambda r: r[3]["summary"], reverse=True)[: args.top]
        show(f"design, {model}: the best {args.top} by summary held out", by_summary, model)
        top = list(dict.fromkeys(v for _, v, _, _ in ranked[: args.top] + by_summary))
        show(f"confirm (the shipped 100 sources), {model}", measure("confirm", confirm, feats, top, model), model)
    return 0


def measure(
    title: str,
    sets: dict[str, list[dict[str, Any]]],
    feats: dict[str, dict[str, float]],
    names: list[str],
    model: str,
) -> list[tuple[Any, ...]]:
    """``evaluate`` on ``sets``, after printing their sizes and the shipped two's figures."""
    C = {k: [feats[fit._key(r)] for r in rows] for k, rows in sets.items()}
    Y = {k: np.array([r["y"] for r in rows]) for k, rows in sets.items()}
    base = fit.held_out({k: fit.matrix(C[k], SHIPPED) for k in fit.SETS}, Y, SHIPPED)
    print(f"{title}: " + ", ".join(f"{k} {len(Y[k])} rows" for k in fit.SETS))
    print("  shipped two, held out: " + " ".join(f"{base[k]:.3f}" for k in fit.SETS))
    return evaluate(C, Y, names, model)


if __name__ == "__main__":
    raise SystemExit(main())
