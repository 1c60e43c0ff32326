"""Agreement between people who labelled the same samples (``unified-eval review``).

Handed, per metric, each annotator's last label per sample (``{annotator: {sample_id:
label}}``, ``unified.data.labelfile.LabelHistory.by_annotator``)::

    verdict      = label ≥ cut          cut = ½ for pass/fail labels (1/0), the metric's
                                        bound for 0–10 grades (unified.analysis.verdict)
    κ(a, b)      = Cohen's kappa of a's and b's verdicts over the samples both labelled
                   (unified.analysis.stats.cohen_kappa), for every pair of annotators
    α (nominal)  = Krippendorff's alpha of every annotator's verdicts
    α (interval) = Krippendorff's alpha of the grades themselves (0–10 grades only)
                   (unified.analysis.reliability.krippendorff_alpha)
    n            = samples labelled by at least two people

A statistic that cannot be computed is ``"undefined"`` with its reason in ``notes`` — the
one rule of ``unified.analysis.stats``: one person, fewer than 3 shared samples, a verdict
that never changes (κ and α divide by the chance disagreement, which is then 0).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Mapping

from unified.analysis.reliability import alpha_for
from unified.analysis.stats import Undefined, cohen_kappa, note_undefined, rounded
from unified.analysis.verdict import default_threshold, is_binary


def graded(labels: Mapping[str, Mapping[str, float]]) -> bool:
    """True when the labels are 0–10 grades, not pass/fail (1/0)."""
    return not is_binary(v for per in labels.values() for v in per.values())


def pair_kappa(a: Mapping[str, float], b: Mapping[str, float], cut: float) -> tuple[Any, int]:
    """(κ of two annotators' verdicts on the samples both labelled, how many those are)."""
    shared = sorted(set(a) & set(b))
    return cohen_kappa([a[s] >= cut for s in shared], [b[s] >= cut for s in shared]), len(shared)


def annotator_agreement(metric: str, labels: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """The agreement of ``labels`` ({annotator: {sample_id: label}}) on ``metric``
    (module docstring): ``annotators``, ``n``, ``cut``, ``pairs`` ([{a, b, n, kappa}]),
    ``alpha_nominal``, ``alpha_interval`` (grades only) and ``notes``."""
    notes: list[str] = []
    names = sorted(labels)
    grades = graded(labels)
    cut = default_threshold(metric) if grades else 0.5
    pairs = []
    for a, b in combinations(names, 2):
        kappa, n = pair_kappa(labels[a], labels[b], cut)
        pairs.append({"a": a, "b": b, "n": n, "kappa": note_undefined(notes, f"κ ({a}, {b})", rounded(kappa))})
    verdicts = {name: {sid: v >= cut for sid, v in per.items()} for name, per in labels.items()}
    nominal, n = alpha_for(verdicts, "nominal", coders="people")
    if len(names) < 2:
        nominal = Undefined(f"one person labelled {metric}: agreement needs two")
    out: dict[str, Any] = {
        "metric": metric,
        "annotators": names,
        "n": n,
        "cut": cut,
        "pairs": pairs,
        "alpha_nominal": note_undefined(notes, "α (nominal, pass/fail)", rounded(nominal)),
    }
    if grades:
        interval, _ = alpha_for(labels, "interval", coders="people")
        if len(names) < 2:
            interval = nominal
        out["alpha_interval"] = note_undefined(notes, "α (interval, grades)", rounded(interval))
    out["notes"] = notes
    return out
