"""Agreement with people per (set, backend, metric), in the style of LLM-AggreFact: the
table ``unified-eval benchmark`` prints and writes to ``benchmark.json``.

For one set, one backend and one metric, over the rows people labelled and the backend
scored (``n``; the people's verdict ``y`` = 1 when they pass the row,
``calibration.people_pass``; the score ``s`` on 0–10):

auc         ROC AUC of ``s`` against ``y`` (``stats.auc``, Mann–Whitney), with the seeded
            percentile bootstrap interval ``auc_ci`` (``stats.bootstrap_ci``, 1000 draws)
ba_default  balanced accuracy of "pass = s ≥ the backend's own bound" (the bound its
            Scores carry, else the metric's; ``verdict.backend_threshold``)
ba_tuned    balanced accuracy at a bound tuned on a dev split, never on the rows it is
            scored on: the labelled rows are split in two folds, stratified by label — within
            each class, rows sorted by sha256(sample id) and dealt alternately — the bound
            that maximises balanced accuracy on one fold (``calibration.best_threshold``; the
            default bound when none beats chance there) gives the verdicts of the other, and
            ``ba_tuned`` is the balanced accuracy of those out-of-fold verdicts over all rows
            (two-fold cross-fitting: every row is scored once, by a bound that never saw it)
ece         expected calibration error (10 bins, ``stats.ece``) of P(people pass) from an
            isotonic map (``isotonic``) fitted on the other fold, pooled the same way;
            ``ece_raw`` is that of s/10 without calibration
failed      the share of the pair's tasks that failed (no value)

The folds depend on the sample ids only, so every backend of a set is split the same way.
The cost side sums the Scores' ``Cost``: judge calls, input/output tokens, USD (None when
some call has no price), and task seconds per sample.

A pair the table cannot measure — labels of one class only, every task failed, no row
both labelled and scored — is an entry with a one-line ``note`` and no numbers. The
winner of a set (highest AUC) is marked only when the paired bootstrap interval of its
AUC minus the runner-up's, over the rows both scored, lies above 0.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from unified.analysis.calibration import best_threshold, people_pass
from unified.analysis.isotonic import isotonic_fit, isotonic_predict
from unified.analysis.stats import Undefined, auc, balanced_accuracy, bootstrap_ci, ece, rounded
from unified.analysis.verdict import backend_threshold, cut_for
from unified.scores import Score

#: metadata key naming the set a sample belongs to (``unified.data.sets.SET_KEY``)
SET_KEY = "benchmark_set"
BOOTSTRAP = 1000
SPLIT = (
    "two folds stratified by label (within each class, rows sorted by sha256 of the sample id, "
    "dealt alternately); the bound tuned on one fold scores the other (cross-fitting)"
)


def folds(ids: Iterable[str], passed: Mapping[str, float]) -> dict[str, int]:
    """{sample id: 0 or 1}: each class sorted by sha256(id), dealt alternately."""
    out: dict[str, int] = {}
    for cls in (0.0, 1.0):
        members = sorted((i for i in ids if passed[i] == cls), key=lambda i: hashlib.sha256(i.encode()).hexdigest())
        out.update({sid: k % 2 for k, sid in enumerate(members)})
    return out


def cross_fitted(s: np.ndarray, y: np.ndarray, fold: np.ndarray, bound: float) -> dict[str, Any]:
    """Out-of-fold verdicts and probabilities (module docstring): ``ba_tuned``, ``ece``,
    ``ece_raw`` and the bound each fold tuned."""
    verdict = np.zeros(len(s), dtype=bool)
    prob = np.zeros(len(s))
    tuned: list[float] = []
    for k in (0, 1):
        dev, test = fold != k, fold == k
        best = best_threshold(s[dev], y[dev], prefer=bound)
        t = bound if isinstance(best, str) else best[0]
        tuned.append(t)
        verdict[test] = s[test] >= t
        xs, ys = isotonic_fit(s[dev], y[dev]) if dev.any() else ([0.0, 10.0], [0.5, 0.5])
        prob[test] = isotonic_predict(xs, ys, s[test])
    return {
        "ba_tuned": balanced_accuracy(verdict, y),
        "bounds_tuned": tuned,
        "ece": ece(prob, y),
        "ece_raw": ece(s / 10.0, y),
    }


def cost_of(scores: Sequence[Score]) -> dict[str, Any]:
    """The pair's cost: judge calls, tokens, USD (None when a paid call had no price) and
    task seconds per sample."""
    usd: float | None = 0.0
    for sc in scores:
        if sc.cost.usd is None and sc.cost.paid_for_something:
            usd = None
        elif usd is not None:
            usd += sc.cost.usd or 0.0
    n = max(1, len({sc.sample_id for sc in scores}))
    return {
        "judge_calls": sum(sc.cost.calls for sc in scores),
        "input_tokens": sum(sc.cost.input_tokens for sc in scores),
        "output_tokens": sum(sc.cost.output_tokens for sc in scores),
        "usd": usd,
        "seconds_per_sample": sum(sc.cost.seconds for sc in scores) / n,
    }


def entry(name: str, backend: str, metric: str, scores: Sequence[Score], passed: Mapping[str, float]) -> dict[str, Any]:
    """One row of the table (module docstring); ``note`` instead of numbers when the pair
    cannot be measured."""
    out: dict[str, Any] = {"set": name, "backend": backend, "metric": metric, "tasks": len(scores)}
    failed = [sc for sc in scores if not sc.ok]
    out["failed"] = len(failed) / len(scores) if scores else None
    out.update(cost_of(scores))
    usable = {
        sc.sample_id: float(sc.value) for sc in scores if sc.ok and sc.value is not None and sc.sample_id in passed
    }
    ys = [passed[i] for i in usable]
    note = _note(scores, failed, passed, usable, ys)
    out["n"] = len(usable)
    if note:
        return {**out, "note": note}
    ids = sorted(usable)
    s = np.array([usable[i] for i in ids])
    y = np.array([passed[i] for i in ids])
    bound = backend_threshold(metric, scores)
    fold = folds(ids, passed)
    out.update(
        n_pass=int(y.sum()),
        n_fail=int(len(y) - y.sum()),
        auc=auc(s, y),
        auc_ci=bootstrap_ci(auc, s, y, n=BOOTSTRAP),
        bound=bound,
        ba_default=balanced_accuracy(s >= bound, y),
        **cross_fitted(s, y, np.array([fold[i] for i in ids]), bound),
    )
    out["scores"] = dict(zip(ids, s.tolist()))  # kept for the paired winner test; dropped on write
    return out


def _note(
    scores: Sequence[Score],
    failed: Sequence[Score],
    passed: Mapping[str, float],
    usable: Mapping[str, float],
    ys: list[float],
) -> str | None:
    """The one line that replaces the numbers of a pair that cannot be measured."""
    if not passed:
        return "no row of this set carries a label for this metric"
    if len(set(passed.values())) < 2:
        return f"labels are all one class ({len(passed)} rows, all {'pass' if next(iter(passed.values())) else 'fail'})"
    if not scores:
        return "no row of this set can be scored by this metric on this backend"
    if len(failed) == len(scores):
        first = _short((failed[0].error or "no value").splitlines()[0])
        return f"every task failed ({len(failed)}): {first}"
    if len(set(ys)) < 2:
        return f"the {len(usable)} rows scored hold labels of one class only"
    return None


def _short(text: str, most: int = 160) -> str:
    """``text`` cut at a word before ``most`` characters, with an ellipsis when cut."""
    return text if len(text) <= most else text[:most].rsplit(" ", 1)[0] + " …"


def paired_gap(a: Mapping[str, float], b: Mapping[str, float], passed: Mapping[str, float]) -> Any:
    """The bootstrap interval of AUC(a) − AUC(b) over the rows both scored (pairs kept)."""
    ids = sorted(set(a) & set(b))
    sa, sb = np.array([a[i] for i in ids]), np.array([b[i] for i in ids])
    y = np.array([passed[i] for i in ids])

    def gap(x: np.ndarray, z: np.ndarray, lab: np.ndarray) -> Any:
        one, two = auc(x, lab), auc(z, lab)
        return one if isinstance(one, str) else two if isinstance(two, str) else one - two

    return bootstrap_ci(gap, sa, sb, y, n=BOOTSTRAP)


def mark_winners(entries: list[dict[str, Any]], passed_of: Mapping[tuple[str, str], Mapping[str, float]]) -> None:
    """Sort each (set, metric) by AUC, best first (entries with notes last), and set
    ``winner`` on the best when ``paired_gap`` with the runner-up lies above 0."""
    entries.sort(
        key=lambda e: (e["set"], e["metric"], "note" in e or isinstance(e.get("auc"), str), -_num(e.get("auc")))
    )
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        e["winner"] = False
        if "note" not in e and not isinstance(e.get("auc"), str):
            groups[(e["set"], e["metric"])].append(e)
    for key, ranked in groups.items():
        if len(ranked) < 2:
            continue
        gap = paired_gap(ranked[0]["scores"], ranked[1]["scores"], passed_of[key])
        ranked[0]["gap_ci"] = gap
        ranked[0]["winner"] = not isinstance(gap, str) and gap[0] > 0


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) else float("-inf")


def averages(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (backend, metric), the unweighted mean over sets of ``auc``, ``ba_default``,
    ``ba_tuned`` and ``ece`` where defined (LLM-AggreFact averages over datasets), with
    the number of sets each mean covers."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        by[(e["backend"], e["metric"])].append(e)
    out = []
    for (backend, metric), rows in by.items():
        avg: dict[str, Any] = {"backend": backend, "metric": metric}
        for k in ("auc", "ba_default", "ba_tuned", "ece", "failed"):
            vals = [r[k] for r in rows if isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)]
            avg[k] = float(np.mean(vals)) if vals else None
            avg[f"{k}_sets"] = len(vals)
        out.append(avg)
    return sorted(out, key=lambda a: (a["metric"], -_num(a["auc"])))


def benchmark_table(
    scores: Iterable[Score],
    samples: Mapping[str, Any],
    backends: Sequence[str],
    metrics: Sequence[str],
    label_cuts: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """``{"split", "entries", "averages"}``: one entry per (set, backend, metric) asked
    for, a set being the samples' ``metadata.benchmark_set``."""
    sets: dict[str, dict[str, Any]] = defaultdict(dict)
    for sid, sample in samples.items():
        sets[str((getattr(sample, "metadata", None) or {}).get(SET_KEY, "(no set)"))][sid] = sample
    by_pair: dict[tuple[str, str, str], list[Score]] = defaultdict(list)
    set_of = {sid: name for name, members in sets.items() for sid in members}
    for sc in scores:
        if sc.sample_id in set_of:
            by_pair[(set_of[sc.sample_id], sc.backend, sc.metric)].append(sc)
    entries, passed_of = [], {}
    for name in sorted(sets):
        for metric in metrics:
            _, passed, _ = people_pass(metric, sets[name], cut_for(metric, label_cuts))
            passed_of[(name, metric)] = passed
            entries += [entry(name, b, metric, by_pair.get((name, b, metric), []), passed) for b in backends]
    mark_winners(entries, passed_of)
    for e in entries:
        e.pop("scores", None)
    return {
        "split": SPLIT,
        "entries": [_rounded(e) for e in entries],
        "averages": [_rounded(a) for a in averages(entries)],
    }


def _rounded(d: Mapping[str, Any]) -> dict[str, Any]:
    """The entry for JSON: numbers rounded; a statistic that cannot be computed is
    ``"undefined"`` with its reason beside it under ``<key>_why``."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        out[k] = rounded(v) if not isinstance(v, str) else str(v)
        if isinstance(v, Undefined):
            out[f"{k}_why"] = v.reason
    return out


def agreement_change(
    scores_a: Iterable[Score],
    scores_b: Iterable[Score],
    samples: Mapping[str, Any],
    label_cuts: Mapping[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Two benchmarks of the same rows (two judges, say), per (set, backend, metric) both
    scored: AUC of A and of B over the rows both scored, ``gap`` = AUC(B) − AUC(A) and the
    paired bootstrap interval of that gap (``paired_gap``: the same resampled rows for
    both, so the rows' own difficulty cancels). Rows are matched by sample id."""
    sets: dict[str, dict[str, Any]] = defaultdict(dict)
    for sid, sample in samples.items():
        sets[str((getattr(sample, "metadata", None) or {}).get(SET_KEY, "(no set)"))][sid] = sample
    set_of = {sid: name for name, members in sets.items() for sid in members}

    def values(scores: Iterable[Score]) -> dict[tuple[str, str, str], dict[str, float]]:
        out: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
        for sc in scores:
            if sc.ok and sc.value is not None and sc.sample_id in set_of:
                out[(set_of[sc.sample_id], sc.backend, sc.metric)][sc.sample_id] = float(sc.value)
        return out

    va, vb = values(scores_a), values(scores_b)
    rows = []
    for key in sorted(set(va) & set(vb)):
        name, backend, metric = key
        _, passed, _ = people_pass(metric, sets[name], cut_for(metric, label_cuts))
        ids = sorted(set(va[key]) & set(vb[key]) & set(passed))
        row: dict[str, Any] = {"set": name, "backend": backend, "metric": metric, "n": len(ids)}
        a = np.array([va[key][i] for i in ids])
        b = np.array([vb[key][i] for i in ids])
        y = np.array([passed[i] for i in ids])
        row.update(auc_a=auc(a, y), auc_b=auc(b, y))
        row["gap"] = (
            row["auc_b"] - row["auc_a"]
            if not any(isinstance(row[k], str) for k in ("auc_a", "auc_b"))
            else Undefined("an AUC is undefined")
        )
        row["gap_ci"] = paired_gap({i: vb[key][i] for i in ids}, {i: va[key][i] for i in ids}, passed)
        rows.append(_rounded(row))
    return rows
