"""Agreement between backends, and between each backend and human labels.

Run the same metric on several backends and this module says where they agree: per
metric, each backend's summary; per pair of backends the correlation, the mean absolute
difference on the 0–10 scale, the pass/fail agreement and Cohen's kappa; the samples on
which they disagree most, reasons side by side; and, when the samples carry human labels
(``metadata.labels.<name>``), each backend's agreement with the humans — so a user can
see which evaluator to trust.

The statistics are written out here (a few lines each, formula in the docstring) rather
than called from scipy, so a reader sees exactly what is reported; the tests check them
against scipy and scikit-learn.

A statistic that cannot be computed is the string ``"undefined"`` with a note saying why —
never NaN, which JSON cannot carry and which silently poisons every mean it touches.
Rules: with n < 3 nothing is reported (two points always lie on a line); a correlation,
a kappa or an AUC needs at least 2 distinct values on each side (it divides by a
variance). The mean absolute difference and the raw pass/fail agreement involve no
variance and stay defined for constant scores.
"""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import combinations
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from unified.metrics import UnknownMetricError, parse_metric
from unified.sample import Sample
from unified.scores import Score, aggregate

UNDEFINED = "undefined"
MIN_N = 3

# Human label names as datasets write them -> canonical metric (ARES uses these three).
LABEL_TO_METRIC: dict[str, str] = {
    "context_relevance": "context_relevancy",
    "answer_relevance": "answer_relevancy",
    "faithfulness": "faithfulness",
}

Stat = float | str  # a number, or UNDEFINED


# ---------------------------------------------------------------- statistics

def undefined_reason(x: Sequence[float], y: Sequence[float] | None = None,
                     names: tuple[str, str] = ("a", "b")) -> str | None:
    """Why a variance-based statistic of ``x`` (and ``y``) is undefined, or None if it is
    defined: n < 3, or fewer than 2 distinct values on either side."""
    n = len(x)
    if n < MIN_N:
        return f"n={n} < {MIN_N}"
    for name, v in zip(names, (x, y)):
        if v is None:
            continue
        arr = np.asarray(v)
        if bool((arr == arr.flat[0]).all()):
            return f"{name} has a single distinct value ({arr.flat[0].item()!r}) on all {n} samples"
    return None


def rankdata(x: Sequence[float]) -> np.ndarray:
    """1-based ranks, ties given the average of the ranks they span
    (the ``average`` method: values 5, 7, 7, 9 rank 1, 2.5, 2.5, 4)."""
    a = np.asarray(x, dtype=float)
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    new_group = np.empty(len(a), dtype=bool)
    new_group[:1] = True
    np.not_equal(sorted_a[1:], sorted_a[:-1], out=new_group[1:])
    group = np.cumsum(new_group) - 1
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], len(a))      # exclusive
    mean_rank = (starts + 1 + ends) / 2.0     # mean of the 1-based ranks start+1 … end
    ranks = np.empty(len(a))
    ranks[order] = mean_rank[group]
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> Stat:
    """Pearson correlation

        r = Σ (xᵢ − x̄)(yᵢ − ȳ) / √( Σ (xᵢ − x̄)² · Σ (yᵢ − ȳ)² )

    ``"undefined"`` when n < 3 or either side is constant."""
    if undefined_reason(x, y):
        return UNDEFINED
    a = np.asarray(x, dtype=float) - np.mean(x)
    b = np.asarray(y, dtype=float) - np.mean(y)
    denom = math.sqrt(float(a @ a) * float(b @ b))
    if denom == 0.0:  # distinct values that cancel in floating point
        return UNDEFINED
    return float(min(1.0, max(-1.0, float(a @ b) / denom)))


def spearman(x: Sequence[float], y: Sequence[float]) -> Stat:
    """Spearman rank correlation: Pearson's r of the average ranks (ties share the mean
    of their ranks), ρ = r(rank(x), rank(y)). ``"undefined"`` as for ``pearson``."""
    if undefined_reason(x, y):
        return UNDEFINED
    return pearson(rankdata(x), rankdata(y))


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> Stat:
    """Cohen's kappa of two raters' pass/fail verdicts

        κ = (p_o − p_e) / (1 − p_e),   p_o = share of equal verdicts,
        p_e = p_a(pass)·p_b(pass) + p_a(fail)·p_b(fail)     (chance agreement)

    (Cohen 1960). ``"undefined"`` when n < 3 or a rater gives one verdict throughout."""
    if undefined_reason(a, b):
        return UNDEFINED
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    p_e = pa * pb + (1 - pa) * (1 - pb)
    if p_e >= 1.0:
        return UNDEFINED
    return (p_o - p_e) / (1 - p_e)


def auc(scores: Sequence[float], labels: Sequence[int | bool]) -> Stat:
    """ROC AUC of ``scores`` against binary ``labels`` (1 = positive), by Mann–Whitney:

        AUC = P(s⁺ > s⁻) + ½ P(s⁺ = s⁻)
            = (R⁺ − n⁺(n⁺ + 1)/2) / (n⁺ · n⁻)

    where R⁺ is the sum of the average ranks of the positives (a tie counts ½).
    ``"undefined"`` when n < 3, when one class is missing, or when the scores are constant."""
    if undefined_reason(scores, labels, ("scores", "labels")):
        return UNDEFINED
    y = np.asarray(labels, dtype=float) > 0.5
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    r_pos = float(rankdata(scores)[y].sum())
    return (r_pos - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def balanced_accuracy(predicted: Sequence[bool], labels: Sequence[int | bool]) -> Stat:
    """Mean of the recall on each class: ½ (TP/(TP+FN) + TN/(TN+FP)); 0.5 is chance.

    ``"undefined"`` when n < 3 or the labels hold one class only (a constant prediction is
    fine: it scores 0.5)."""
    if undefined_reason(labels, None, ("labels", "")):
        return UNDEFINED
    y = np.asarray(labels, dtype=float) > 0.5
    p = np.asarray(predicted, dtype=bool)
    tpr = float((p & y).sum()) / float(y.sum())
    tnr = float((~p & ~y).sum()) / float((~y).sum())
    return (tpr + tnr) / 2.0


def bootstrap_ci(fn: Callable[..., Stat], *arrays: Sequence[Any], n: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float] | str:
    """Percentile bootstrap interval of ``fn(*arrays)``: resample the rows (the same
    indices in every array) with replacement ``n`` times, seeded, and take the
    (1−level)/2 and (1+level)/2 quantiles of the statistic. Resamples where ``fn`` is
    undefined (e.g. one class drawn only) are skipped; ``"undefined"`` if fewer than half
    of them are usable."""
    cols = [np.asarray(a) for a in arrays]
    size = len(cols[0])
    if size == 0 or any(len(c) != size for c in cols):
        return UNDEFINED
    rng = np.random.default_rng(seed)
    stats: list[float] = []
    for _ in range(n):
        idx = rng.integers(0, size, size)
        value = fn(*(c[idx] for c in cols))
        if not isinstance(value, str):
            stats.append(float(value))
    if len(stats) < n / 2:
        return UNDEFINED
    lo, hi = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def pair_stats(a: Sequence[float], b: Sequence[float], threshold_a: float,
               threshold_b: float) -> dict[str, Any]:
    """Agreement of two backends' 0–10 values on the same samples (``a[i]``, ``b[i]`` score
    sample i). Pass means value ≥ that backend's threshold.

    Returns n, pearson, spearman, mean_abs_diff (= mean |aᵢ − bᵢ|, on 0–10),
    pass_agreement (share of samples with the same verdict), cohen_kappa, and ``notes``
    explaining every ``"undefined"``."""
    if len(a) != len(b):
        raise ValueError(f"pair_stats needs equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    notes: list[str] = []
    pass_a = [v >= threshold_a for v in a]
    pass_b = [v >= threshold_b for v in b]
    out: dict[str, Any] = {"n": n}
    if n < MIN_N:
        notes.append(f"every statistic undefined: n={n} < {MIN_N} samples scored by both")
        out.update(pearson=UNDEFINED, spearman=UNDEFINED, mean_abs_diff=UNDEFINED,
                   pass_agreement=UNDEFINED, cohen_kappa=UNDEFINED, notes=notes)
        return out
    why = undefined_reason(a, b)
    if why:
        notes.append(f"pearson/spearman undefined: {why}")
    out["pearson"] = pearson(a, b)
    out["spearman"] = spearman(a, b)
    out["mean_abs_diff"] = float(np.mean(np.abs(np.asarray(a, float) - np.asarray(b, float))))
    out["pass_agreement"] = sum(x == y for x, y in zip(pass_a, pass_b)) / n
    why = undefined_reason(pass_a, pass_b)
    if why:
        notes.append(f"cohen_kappa undefined: pass/fail of {why} (threshold a={threshold_a}, "
                     f"b={threshold_b})")
    out["cohen_kappa"] = cohen_kappa(pass_a, pass_b)
    out["notes"] = notes
    return out


# ---------------------------------------------------------------- cross-check

def _canonical(metric: str) -> str:
    try:
        return parse_metric(metric).canonical
    except UnknownMetricError:
        return metric


def _threshold(metric: str, scores: Iterable[Score]) -> float:
    """The pass bound a backend used (the Score's own), else the metric's default, else 5."""
    for s in scores:
        if s.threshold is not None:
            return float(s.threshold)
    try:
        return float(parse_metric(metric).spec.threshold)
    except UnknownMetricError:
        return 5.0


def label_for(metric: str, labels: Mapping[str, Any]) -> str | None:
    """The key of ``labels`` that judges ``metric`` (ARES names or canonical names)."""
    canonical = _canonical(metric)
    for key in labels:
        if key == metric or key == canonical or LABEL_TO_METRIC.get(key) == canonical:
            return key
        if _canonical(key) == canonical:
            return key
    return None


def _labels_of(sample: Sample) -> Mapping[str, Any]:
    labels = sample.metadata.get("labels") if sample.metadata else None
    return labels if isinstance(labels, Mapping) else {}


def _r(x: Any, digits: int = 4) -> Any:
    """Round numbers for a readable JSON report; leave strings/None as they are."""
    if isinstance(x, float):
        return round(x, digits)
    if isinstance(x, tuple):
        return [_r(v, digits) for v in x]
    return x


def crosscheck(scores: Iterable[Score], samples: Mapping[str, Sample] | None = None,
               top_n: int = 10, *, bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Cross-check several backends' Scores of the same samples (JSON-serialisable result).

    Per metric (as the user named it): ``backends`` — each backend's count, scored,
    errors, mean, median, stdev, pass_rate (from ``unified.scores.aggregate``);
    ``pairs`` — ``pair_stats`` on the samples both backends scored without error, with
    ``excluded`` counting the samples dropped because either side failed;
    ``agreement_matrix`` — backend × backend Spearman and mean absolute difference;
    ``disagreements`` — the ``top_n`` samples with the largest |difference| between any
    two backends, each backend's value and reason side by side (and the question, when
    ``samples`` are given); ``human`` — when samples carry ``metadata.labels``, each
    backend's AUC (binary labels, with a seeded bootstrap 95 % interval), Spearman
    (graded labels) and balanced accuracy at its pass threshold.
    """
    by_metric: dict[str, dict[str, dict[str, Score]]] = defaultdict(lambda: defaultdict(dict))
    duplicates = 0
    for s in scores:
        slot = by_metric[s.metric][s.backend]
        if s.sample_id in slot:
            duplicates += 1  # a resumed run can repeat a task; the latest result wins
        slot[s.sample_id] = s
    notes: list[str] = []
    if duplicates:
        notes.append(f"{duplicates} repeated (metric, backend, sample) scores: the last one was used")
    result: dict[str, Any] = {"backends": sorted({b for m in by_metric.values() for b in m}),
                              "metrics": {}, "notes": notes}
    for metric, per_backend in by_metric.items():
        result["metrics"][metric] = _crosscheck_metric(metric, per_backend, samples, top_n,
                                                       bootstrap, seed)
    return result


def _crosscheck_metric(metric: str, per_backend: dict[str, dict[str, Score]],
                       samples: Mapping[str, Sample] | None, top_n: int, bootstrap: int,
                       seed: int) -> dict[str, Any]:
    backends = sorted(per_backend)
    thresholds = {b: _threshold(metric, per_backend[b].values()) for b in backends}
    summary = {}
    for b in backends:
        agg = aggregate(per_backend[b].values(), metric, b)
        pass_rate = agg.pass_rate
        if pass_rate is None and agg.scored:
            # Scores written without a threshold carry no verdict: judge them at the same
            # bound the pair statistics use, so the two tables agree
            ok = [s.value for s in per_backend[b].values() if s.ok]
            pass_rate = sum(v >= thresholds[b] for v in ok) / len(ok)  # type: ignore[operator]
        summary[b] = {"count": agg.count, "scored": agg.scored, "errors": agg.errors,
                      "mean": _r(agg.mean), "median": _r(agg.median), "stdev": _r(agg.stdev),
                      "pass_rate": _r(pass_rate), "threshold": thresholds[b]}

    pairs = []
    spearman_m = {b: {c: (1.0 if b == c else UNDEFINED) for c in backends} for b in backends}
    mad_m = {b: {c: (0.0 if b == c else UNDEFINED) for c in backends} for b in backends}
    for a, b in combinations(backends, 2):
        common = sorted(set(per_backend[a]) & set(per_backend[b]))
        ok = [sid for sid in common if per_backend[a][sid].ok and per_backend[b][sid].ok]
        va = [float(per_backend[a][sid].value) for sid in ok]  # type: ignore[arg-type]
        vb = [float(per_backend[b][sid].value) for sid in ok]  # type: ignore[arg-type]
        st = pair_stats(va, vb, thresholds[a], thresholds[b])
        st = {k: _r(v) for k, v in st.items()}
        st.update(a=a, b=b, excluded=len(common) - len(ok),
                  only_one_backend=len(set(per_backend[a]) ^ set(per_backend[b])))
        pairs.append(st)
        spearman_m[a][b] = spearman_m[b][a] = st["spearman"]
        mad_m[a][b] = mad_m[b][a] = st["mean_abs_diff"]

    out: dict[str, Any] = {
        "canonical": _canonical(metric),
        "backends": summary,
        "pairs": pairs,
        "agreement_matrix": {"backends": backends, "spearman": spearman_m, "mean_abs_diff": mad_m},
        "disagreements": _top_disagreements(per_backend, backends, samples, top_n),
    }
    if samples:
        human = _human_agreement(metric, per_backend, backends, thresholds, samples, bootstrap, seed)
        if human:
            out["human"] = human
    return out


def _top_disagreements(per_backend: dict[str, dict[str, Score]], backends: list[str],
                       samples: Mapping[str, Sample] | None, top_n: int) -> list[dict[str, Any]]:
    """Samples ordered by the largest |value_a − value_b| over backend pairs that both
    scored them (ties broken by sample id, so the report is stable)."""
    rows = []
    all_ids = sorted({sid for b in backends for sid in per_backend[b]})
    for sid in all_ids:
        ok = {b: per_backend[b][sid] for b in backends
              if sid in per_backend[b] and per_backend[b][sid].ok}
        best: tuple[float, str, str] | None = None
        for a, b in combinations(sorted(ok), 2):
            d = abs(float(ok[a].value) - float(ok[b].value))  # type: ignore[arg-type]
            if best is None or d > best[0]:
                best = (d, a, b)
        if best is None:
            continue
        row: dict[str, Any] = {
            "sample_id": sid, "diff": round(best[0], 4), "between": [best[1], best[2]],
            "values": {b: (_r(per_backend[b][sid].value) if sid in per_backend[b] else None)
                       for b in backends},
            "reasons": {b: (per_backend[b][sid].reason or per_backend[b][sid].error)
                        if sid in per_backend[b] else None for b in backends},
        }
        if samples and sid in samples:
            row["question"] = samples[sid].user_input
        rows.append(row)
    rows.sort(key=lambda r: (-r["diff"], r["sample_id"]))
    return rows[:top_n]


def _human_agreement(metric: str, per_backend: dict[str, dict[str, Score]], backends: list[str],
                     thresholds: dict[str, float], samples: Mapping[str, Sample],
                     bootstrap: int, seed: int) -> dict[str, Any] | None:
    """Each backend against the human labels of the samples it scored without error."""
    label_key = None
    for s in samples.values():
        label_key = label_for(metric, _labels_of(s))
        if label_key:
            break
    if label_key is None:
        return None
    labels: dict[str, float] = {}
    for sid, s in samples.items():
        v = _labels_of(s).get(label_key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            labels[sid] = float(v)
        elif isinstance(v, bool):
            labels[sid] = float(v)
    binary = set(labels.values()) <= {0.0, 1.0}
    out: dict[str, Any] = {"label": label_key, "kind": "binary" if binary else "graded",
                           "labelled": len(labels), "backends": {}}
    for b in backends:
        ids = sorted(sid for sid, s in per_backend[b].items() if s.ok and sid in labels)
        vals = [float(per_backend[b][sid].value) for sid in ids]  # type: ignore[arg-type]
        ys = [labels[sid] for sid in ids]
        notes: list[str] = []
        entry: dict[str, Any] = {"n": len(ids)}
        if binary:
            entry["positives"] = int(sum(ys))
            why = undefined_reason(vals, ys, ("scores", "labels"))
            if why:
                notes.append(f"auc undefined: {why}")
            entry["auc"] = _r(auc(vals, ys))
            entry["auc_ci95"] = (_r(bootstrap_ci(auc, vals, ys, n=bootstrap, seed=seed))
                                 if not why else UNDEFINED)
            ba = balanced_accuracy([v >= thresholds[b] for v in vals], ys)
            if isinstance(ba, str):
                notes.append(f"balanced_accuracy undefined: {undefined_reason(ys, None, ('labels', ''))}")
            entry["balanced_accuracy"] = _r(ba)
        why = undefined_reason(vals, ys, ("scores", "labels"))
        if why and not binary:
            notes.append(f"spearman undefined: {why}")
        entry["spearman"] = _r(spearman(vals, ys))
        entry["notes"] = notes
        out["backends"][b] = entry
    return out


# ---------------------------------------------------------------- terminal output

def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, float) for x in v):
        return f"[{v[0]:.2f}, {v[1]:.2f}]"
    return str(v)


def format_crosscheck(result: Mapping[str, Any], *, reason_width: int = 60) -> Any:
    """A rich renderable (``Group`` of tables) of a ``crosscheck`` result, for the CLI:
    per metric a summary table, a pair table, the human-agreement table when labels were
    present, and the top disagreements. ``render_crosscheck`` gives it as plain text."""
    from rich.console import Group
    from rich.table import Table

    parts: list[Any] = []
    for metric, m in result.get("metrics", {}).items():
        t = Table(title=f"{metric} — per backend", title_justify="left")
        for col in ("backend", "mean", "median", "pass rate", "scored", "errors"):
            t.add_column(col, justify="left" if col == "backend" else "right")
        for b, s in m["backends"].items():
            t.add_row(b, _fmt(s["mean"]), _fmt(s["median"]), _fmt(s["pass_rate"]),
                      str(s["scored"]), str(s["errors"]))
        parts.append(t)
        if m["pairs"]:
            p = Table(title=f"{metric} — agreement between backends", title_justify="left")
            for col in ("pair", "n", "excluded", "pearson", "spearman", "mean |diff|",
                        "pass agree", "kappa"):
                p.add_column(col, justify="left" if col == "pair" else "right")
            for st in m["pairs"]:
                p.add_row(f"{st['a']} × {st['b']}", str(st["n"]), str(st["excluded"]),
                          _fmt(st["pearson"]), _fmt(st["spearman"]), _fmt(st["mean_abs_diff"]),
                          _fmt(st["pass_agreement"]), _fmt(st["cohen_kappa"]))
            parts.append(p)
        if "human" in m:
            h = m["human"]
            ht = Table(title=f"{metric} — agreement with human labels '{h['label']}' ({h['kind']})",
                       title_justify="left")
            for col in ("backend", "n", "AUC", "AUC 95% CI", "spearman", "balanced acc"):
                ht.add_column(col, justify="left" if col == "backend" else "right")
            for b, e in h["backends"].items():
                ht.add_row(b, str(e["n"]), _fmt(e.get("auc")), _fmt(e.get("auc_ci95")),
                           _fmt(e["spearman"]), _fmt(e.get("balanced_accuracy")))
            parts.append(ht)
        if m["disagreements"] and len(m["backends"]) > 1:
            d = Table(title=f"{metric} — largest disagreements", title_justify="left")
            d.add_column("sample")
            d.add_column("|diff|", justify="right")
            for b in m["backends"]:
                d.add_column(b)
            for row in m["disagreements"]:
                cells = []
                for b in m["backends"]:
                    reason = (row["reasons"].get(b) or "")[:reason_width]
                    cells.append(f"{_fmt(row['values'].get(b))} {reason}".strip())
                label = row["sample_id"] + (f"\n{row['question'][:reason_width]}" if row.get("question") else "")
                d.add_row(label, _fmt(row["diff"]), *cells)
            parts.append(d)
    for note in result.get("notes", []):
        parts.append(f"note: {note}")
    return Group(*parts)


def render_crosscheck(result: Mapping[str, Any], width: int = 120) -> str:
    """``format_crosscheck`` rendered to plain text (no colour), e.g. for a log or a test."""
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False).print(
        format_crosscheck(result))
    return buf.getvalue()
