"""Calibration against people: how well each backend's verdicts agree with human labels,
at which threshold they would agree best, and what the labels say about the true pass rate
of the whole dataset.

For one backend, on the samples it scored without error that carry a label (binary, or
graded and binarised as ``unified.analysis.verdict`` says):

- ``auc`` (Mann–Whitney) and ``balanced_accuracy`` at the backend's own threshold, each
  with a seeded percentile bootstrap 95 % interval (``unified.analysis.stats.bootstrap_ci``);
- ``best_threshold``: the threshold that maximises balanced accuracy on these labels, with
  its balanced accuracy and a bootstrap interval of the threshold;
- ``ppi``: the prediction-powered estimate (Angelopoulos et al. 2023, "Prediction-powered
  inference", Science 382; the estimator ARES uses) of the share of *all* scored samples
  that people would pass, from the backend's verdicts on every sample and the labels of
  the labelled subset (formula in ``ppi_mean``).

PPI assumes the labelled rows are a random subset of the rows (labels missing at random);
labels chosen for being hard cases bias it, as they bias any estimate from them.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np

from unified.analysis.stats import (
    MIN_N,
    Numbers,
    Undefined,
    auc,
    balanced_accuracy,
    bootstrap_ci,
    brier,
    ece,
    note_undefined,
    reliability_bins,
    rounded,
    spearman,
    undefined_reason,
)
from unified.analysis.verdict import is_binary, label_cut, label_for, label_value
from unified.sample import Sample
from unified.scores import Score


def _z(level: float) -> float:
    """Two-sided normal quantile: z = Φ⁻¹((1 + level)/2), 1.96 for 95 %."""
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def best_threshold(scores: Numbers, labels: Numbers, prefer: float = 5.0) -> tuple[float, float] | Undefined:
    """(t*, BA(t*)): the threshold maximising balanced accuracy of "pass = score ≥ t"
    against binary ``labels``,

        BA(t) = ½ ( #{s ≥ t, y = 1} / #{y = 1}  +  #{s < t, y = 0} / #{y = 0} )

    over the midpoints between consecutive distinct scores (every other t gives the same
    verdicts as one of them, or passes/fails everything, which scores 0.5). Several maxima:
    the one nearest ``prefer`` (the backend's own threshold: the smallest change that does
    as well), then the lower. In-sample, so BA(t*) is optimistic; its interval comes from
    ``calibrate``. Undefined when n < 3, the labels hold one class or the scores one value —
    and when no threshold beats chance (best BA ≤ 0.5, what passing or failing everything
    scores): the scores then rank against the labels, and no cut of them is a calibration.
    """
    why = undefined_reason(scores, labels, ("scores", "labels"))
    if why:
        return Undefined(why)
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float) > 0.5
    u = np.unique(s)
    cuts = (u[:-1] + u[1:]) / 2.0
    pos, neg = np.sort(s[y]), np.sort(s[~y])
    tpr = (len(pos) - np.searchsorted(pos, cuts, side="left")) / len(pos)
    tnr = np.searchsorted(neg, cuts, side="left") / len(neg)
    ba = (tpr + tnr) / 2.0
    if ba.max() <= 0.5 + 1e-12:
        return Undefined(
            f"no threshold beats chance (best balanced accuracy {ba.max():.3f}; passing "
            "or failing everything scores 0.5): the scores rank against the labels"
        )
    top = cuts[ba >= ba.max() - 1e-12]
    t = float(top[np.argmin(np.abs(top - prefer))])  # argmin keeps the first: the lower
    return t, float(ba.max())


def ppi_mean(f_all: Numbers, f_labelled: Numbers, y_labelled: Numbers, level: float = 0.95) -> dict[str, Any]:
    """Prediction-powered estimate of the mean of Y (here: the true pass rate) with its
    CLT interval (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic 2023).

    N rows carry a prediction fᵢ ∈ {0, 1} (the backend's verdict), n of them also a label
    yᵢ (the people's). With L the labelled rows::

        θ̂ = (1/N) Σ_{i ≤ N} fᵢ  −  (1/n) Σ_{i ∈ L} (fᵢ − yᵢ)

    the mean prediction over every row, minus the rectifier: the backend's mean error on
    the labelled rows. Unbiased for E[Y] when labels are missing at random. The labelled
    rows enter both means, so θ̂ is split into independent parts — unlabelled rows U
    (N − n of them) and labelled rows with gᵢ = fᵢ/N − (fᵢ − yᵢ)/n::

        θ̂ = (1/N) Σ_{i ∈ U} fᵢ + Σ_{i ∈ L} gᵢ
        Var̂(θ̂) = (N − n)/N² · s²(f)  +  n · s²(g)        (the two variances)
        CI = θ̂ ± z · √Var̂(θ̂),   z = Φ⁻¹((1 + level)/2)

    with s²(f) the sample variance of f over all N rows, s²(g) that of g over L (ddof 1).
    With every row labelled (n = N) this is the classical mean(y) ± z·s(y)/√n; a good
    predictor makes s²(g) small and the interval narrower than the labels alone give.
    Estimate and bounds are clipped to [0, 1] (a rate). Undefined with a reason when
    n < 3 or N < n.
    """
    f = np.asarray(f_all, dtype=float)
    fl, yl = np.asarray(f_labelled, dtype=float), np.asarray(y_labelled, dtype=float)
    big_n, n = len(f), len(yl)
    out: dict[str, Any] = {"n_labelled": n, "n_total": big_n, "level": level}
    why = (
        f"n_labelled={n} < {MIN_N}"
        if n < MIN_N
        else f"n_total={big_n} < n_labelled={n}"
        if big_n < n
        else None
        if len(fl) == n
        else f"{len(fl)} predictions for {n} labels"
    )
    if why:
        out.update(estimate=Undefined(why), ci_low=Undefined(why), ci_high=Undefined(why))
        return out
    theta = float(f.mean() - (fl - yl).mean())
    g = fl / big_n - (fl - yl) / n
    var = (big_n - n) / big_n**2 * (float(f.var(ddof=1)) if big_n > 1 else 0.0) + n * float(g.var(ddof=1))
    half = _z(level) * math.sqrt(max(var, 0.0))
    clip = lambda x: min(1.0, max(0.0, x))
    out.update(estimate=clip(theta), ci_low=clip(theta - half), ci_high=clip(theta + half))
    if var <= 0.0:  # one class everywhere: the normal interval has no width, which is no certainty
        out.update(ci_low=_NO_SPREAD, ci_high=_NO_SPREAD)
    return out


# a rate from verdicts and labels of one class: s² = 0, and a normal interval [p, p] reads as
# certainty (Agresti & Coull 1998: the Wald interval fails at 0 and 1)
_NO_SPREAD = Undefined("every verdict and label is of one class: a normal interval would have no width")


def mean_ci(y: Numbers, level: float = 0.95) -> dict[str, Any]:
    """The labels alone: mean(y) ± z·s(y)/√n (normal interval, clipped to [0, 1]), the
    figure PPI should beat. Undefined when n < 3."""
    ys = np.asarray(y, dtype=float)
    if len(ys) < MIN_N:
        why = Undefined(f"n={len(ys)} < {MIN_N}")
        return {"n": len(ys), "estimate": why, "ci_low": why, "ci_high": why}
    m, half = float(ys.mean()), _z(level) * float(ys.std(ddof=1)) / math.sqrt(len(ys))
    if half <= 0.0:
        return {"n": len(ys), "estimate": m, "ci_low": _NO_SPREAD, "ci_high": _NO_SPREAD}
    return {"n": len(ys), "estimate": m, "ci_low": max(0.0, m - half), "ci_high": min(1.0, m + half)}


def _best_t(prefer: float):
    def stat(s: np.ndarray, y: np.ndarray) -> float | Undefined:
        r = best_threshold(s, y, prefer)
        return r if isinstance(r, str) else r[0]

    return stat


def calibrate(
    values: Numbers, labels: Numbers, threshold: float, *, bootstrap: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """One backend against binary labels on the same samples (``values[i]`` on 0–10,
    ``labels[i]`` 0/1): n, positives, auc and auc_ci95, balanced_accuracy (pass = value ≥
    ``threshold``) and balanced_accuracy_ci95, best_threshold {threshold,
    balanced_accuracy, ci95}, and notes for every ``"undefined"``."""
    notes: list[str] = []
    vals, ys = np.asarray(values, dtype=float), np.asarray(labels, dtype=float)
    entry: dict[str, Any] = {"n": len(ys), "positives": int(ys.sum())}
    ci = lambda fn: bootstrap_ci(fn, vals, ys, n=bootstrap, seed=seed)
    entry["auc"] = note_undefined(notes, "auc", rounded(auc(vals, ys)))
    entry["auc_ci95"] = rounded(ci(auc)) if not isinstance(entry["auc"], str) else entry["auc"]
    ba_at = lambda s, y: balanced_accuracy(s >= threshold, y)
    entry["balanced_accuracy"] = note_undefined(notes, "balanced_accuracy", rounded(ba_at(vals, ys)))
    entry["balanced_accuracy_ci95"] = (
        rounded(ci(ba_at)) if not isinstance(entry["balanced_accuracy"], str) else entry["balanced_accuracy"]
    )
    best = best_threshold(vals, ys, threshold)
    if isinstance(best, str):
        note_undefined(notes, "best_threshold", best)
        entry["best_threshold"] = {"threshold": best, "balanced_accuracy": best, "ci95": best}
    else:
        entry["best_threshold"] = {
            "threshold": rounded(best[0]),
            "balanced_accuracy": rounded(best[1]),
            "ci95": note_undefined(notes, "best_threshold ci95", rounded(ci(_best_t(threshold)))),
        }
    entry["notes"] = notes
    return entry


def _labels_of(sample: Sample) -> Mapping[str, Any]:
    labels = sample.metadata.get("labels") if sample.metadata else None
    return labels if isinstance(labels, Mapping) else {}


def human_labels(metric: str, samples: Mapping[str, Sample]) -> tuple[str | None, dict[str, float]]:
    """(the label key that judges ``metric``, {sample_id: label as a number}) over the
    samples that carry a usable one; (None, {}) when no sample has a label for it. Each
    sample's key is found in its own labels (``label_for``): rows may spell the metric
    differently (``faithfulness``, ``FaithfulnessMetric``); the key returned is the first
    spelling seen. Taking the first sample's key for all dropped the others' labels."""
    first, out, found = None, {}, {}
    for sid, s in samples.items():
        labels = _labels_of(s)
        if not labels:
            continue
        spelled = tuple(labels)
        if spelled not in found:  # rows share a handful of key sets
            found[spelled] = label_for(metric, labels)
        key = found[spelled]
        if key is None:
            continue
        first = first or key
        v = label_value(labels.get(key))
        if v is not None:
            out[sid] = v
    return first, out


def people_pass(
    metric: str, samples: Mapping[str, Sample], cut: float | None = None
) -> tuple[str | None, dict[str, float], Any]:
    """(label key, {sample_id: 1.0 when people pass it, else 0.0}, the cut or None) over
    the samples labelled for ``metric`` (``human_labels``): binary labels as they are,
    graded ones binarised at ``cut`` (``--label-cut``), else at ``label_cut``'s; when no
    cut can be told, no verdicts and the cut's ``Undefined`` (its reason)."""
    key, raw = human_labels(metric, samples)
    if key is None or not raw:
        return key, {}, None
    if is_binary(raw.values()):
        return key, {sid: float(v >= 0.5) for sid, v in raw.items()}, None
    bound = label_cut(metric, raw.values(), cut)
    if isinstance(bound, str):
        return key, {}, bound
    return key, {sid: float(v >= bound) for sid, v in raw.items()}, bound


def human_calibration(
    metric: str,
    per_backend: Mapping[str, Mapping[str, Score]],
    thresholds: Mapping[str, float],
    samples: Mapping[str, Sample],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    cut: float | None = None,
) -> dict[str, Any] | None:
    """Each backend (the jury too, when its lines are among the scores) against the human
    labels of ``metric``, or None when no sample is labelled for it.

    ``label``, ``kind`` (binary|graded), ``labelled``, ``binarised_at`` (graded: the cut,
    ``unified.analysis.verdict.label_cut``), ``labelled_pass_rate`` (labels alone, ``mean_ci``) and
    per backend: ``calibrate``'s entry, ``spearman`` against the raw labels, and ``ppi``
    (``ppi_mean`` with f = the backend's verdict value ≥ its threshold on every sample it
    scored, so N = its scored samples and n = those of them labelled)."""
    key, raw = human_labels(metric, samples)
    if key is None:
        return None
    binary = is_binary(raw.values())
    notes: list[str] = []
    out: dict[str, Any] = {
        "label": key,
        "kind": "binary" if binary else "graded",
        "labelled": len(raw),
        "backends": {},
        "notes": notes,
    }
    bound = label_cut(metric, raw.values(), cut) if not binary and raw else 0.5
    if not binary:
        out["binarised_at"] = note_undefined(notes, "binarised labels", bound)
    passed = {} if isinstance(bound, str) else {sid: float(v >= bound) for sid, v in raw.items()}
    out["labelled_pass_rate"] = rounded_dict(mean_ci(list(passed.values())))
    for b, scores in per_backend.items():
        out["backends"][b] = _backend_vs_people(scores, raw, passed, thresholds[b], bootstrap, seed)
    return out


def _backend_vs_people(
    scores: Mapping[str, Score],
    raw: Mapping[str, float],
    passed: Mapping[str, float],
    threshold: float,
    bootstrap: int,
    seed: int,
) -> dict[str, Any]:
    ok = {sid: float(s.value) for sid, s in scores.items() if s.ok}  # type: ignore[arg-type]
    ids = sorted(sid for sid in ok if sid in raw)
    vals, grades = [ok[sid] for sid in ids], [raw[sid] for sid in ids]
    if passed:
        entry = calibrate(vals, [passed[sid] for sid in ids], threshold, bootstrap=bootstrap, seed=seed)
        f_all = [float(v >= threshold) for v in ok.values()]
        f_lab = [float(ok[sid] >= threshold) for sid in ids]
        entry["ppi"] = rounded_dict(ppi_mean(f_all, f_lab, [passed[sid] for sid in ids]))
        note_undefined(entry["notes"], "ppi", entry["ppi"]["estimate"])
        entry.update(probability_fit(vals, [passed[sid] for sid in ids], entry["notes"]))
    else:
        entry = {"n": len(ids), "notes": []}
    entry["spearman"] = note_undefined(entry["notes"], "spearman", rounded(spearman(vals, grades)))
    return entry


def probability_fit(values: Sequence[float], labels: Numbers, notes: list[str]) -> dict[str, Any]:
    """A backend's value read as a probability, p = value / 10, against the people's
    verdicts: ``brier`` and ``ece`` (``unified.analysis.stats``), the reliability
    diagram's ``reliability`` bins, and ``collapse`` (``collapse_flag``)."""
    probs = [v / 10.0 for v in values]
    return {
        "brier": note_undefined(notes, "brier", rounded(brier(probs, labels))),
        "ece": note_undefined(notes, "ece", rounded(ece(probs, labels))),
        "reliability": [rounded_dict(b) for b in reliability_bins(probs, labels)],
        "collapse": collapse_flag(values, labels, notes),
    }


COLLAPSE_END = 0.5  # "at an end of the scale": within 0.5 of 0 or of 10 (the outer 5 % each side)
COLLAPSE_SHARE = 0.9
MIXED_MINORITY = 0.1


def collapse_flag(values: Sequence[float], labels: Numbers, notes: list[str]) -> dict[str, Any]:
    """Has the backend collapsed — given the same few answers whatever the sample — on a
    set where people's verdicts are mixed?

        mixed     = the minority verdict is ≥ 10 % of the labelled samples (and n ≥ 3)
        collapsed = mixed and (≤ 2 distinct values, or ≥ 90 % of the values within 0.5 of
                    one end of the 0–10 scale)

    A small judge that calls everything "supported" scores 10 on every row: it passes
    every gate and says nothing. ``flag`` is True/False, or ``"undefined"`` (with a note)
    when the labels are not mixed — a backend that passes everything on a set people pass
    entirely has not collapsed."""
    v, y = np.asarray(values, dtype=float), np.asarray(labels, dtype=float)
    n = len(v)
    out: dict[str, Any] = {"n": n, "distinct_values": int(len(np.unique(v))) if n else 0}
    low = float(np.mean(v <= COLLAPSE_END)) if n else 0.0
    high = float(np.mean(v >= 10.0 - COLLAPSE_END)) if n else 0.0
    out["share_at_end"] = rounded(max(low, high))
    out["end"] = 0 if low > high else 10
    minority = float(min(y.mean(), 1 - y.mean())) if n else 0.0
    if n < MIN_N or minority < MIXED_MINORITY - 1e-9:  # 2 of 20 is 10 %, whatever the float says
        why = (
            f"n={n} < {MIN_N}"
            if n < MIN_N
            else f"the labels are not mixed (minority verdict {minority:.0%} < {MIXED_MINORITY:.0%})"
        )
        out["flag"] = note_undefined(notes, "collapse", Undefined(why))
        return out
    out["flag"] = bool(out["distinct_values"] <= 2 or max(low, high) >= COLLAPSE_SHARE)
    if out["flag"]:
        notes.append(
            f"collapse: {out['distinct_values']} distinct value(s), {max(low, high):.0%} at "
            f"{out['end']} while people pass {float(y.mean()):.0%}"
        )
    return out


def rounded_dict(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: rounded(v) for k, v in d.items()}
