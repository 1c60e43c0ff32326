"""What "passed" means, in one place: a backend's verdict, a metric's default bound, and a
human label read as pass/fail.

- A metric's bound, read from its name as asked, is the one rule ``MetricRef.bound``: the
  ``[threshold=…]`` written in the name, else the metric's registry default on 0–10; a
  metric the registry does not know (a custom name from an old run) gets 5, the middle of
  the scale.
- A backend's bound is the one its Scores carry (``Score.threshold``: the run gives every
  task its bound), else the metric's.
- A Score passes when ``Score.passed`` says so; a Score written without a verdict passes
  by the one test, value ≥ its bound (``unified.bounds.passed``).
- A human label is binary when every value is 0 or 1 (booleans are 0/1). A graded label
  (any other number) is binarised at a cut: the one given, else the metric's default
  bound on the labels' own scale — bound/10 when every grade lies in [0, 1] (TruLens'
  ``expected_score``), the bound itself when grades in [0, 10] show that scale: whole
  numbers reaching 10, or fractions on both sides of the bound. Whole numbers below 10
  (1–5, 1–7 ratings) and fractions all on one side of the bound (averaged 1–5 ratings
  such as 2.33 and 4.67: cut at 7, every one a fail) could be another scale, and need an
  explicit cut, as do grades above 10 or negative — ``--label-cut METRIC=CUT``
  (``parse_label_cuts``): a label ≥ CUT passes.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from unified.analysis.stats import Undefined
from unified.bounds import passed
from unified.metrics import UnknownMetricError, parse_metric
from unified.scores import Score

FALLBACK_THRESHOLD = 5.0


def canonical(metric: str) -> str:
    """The registry's canonical name of ``metric`` (``FaithfulnessMetric`` ->
    ``faithfulness``), or the name itself when the registry does not know it."""
    try:
        return parse_metric(metric).canonical
    except UnknownMetricError:
        return metric


def default_threshold(metric: str) -> float:
    """The pass bound of ``metric`` as named (``faithfulness[threshold=8]`` is 8; the one
    rule, ``MetricRef.bound``), else 5 for a metric the registry does not know."""
    try:
        return parse_metric(metric).bound()
    except UnknownMetricError:
        return FALLBACK_THRESHOLD


def backend_threshold(metric: str, scores: Iterable[Any]) -> float:
    """The pass bound a backend used (the first of its Scores or tasks that carries one:
    ``threshold``), else the bound of the metric as named."""
    for s in scores:
        if s.threshold is not None:
            return float(s.threshold)
    return default_threshold(metric)


def score_passed(score: Score, threshold: float | None = None) -> bool | None:
    """The Score's own verdict; else value ≥ (its bound, else ``threshold``, else the
    metric's default). None for a failed Score."""
    if not score.ok:
        return None
    if score.passed is not None:
        return bool(score.passed)
    bound = score.threshold if score.threshold is not None else threshold
    if bound is None:
        bound = default_threshold(score.metric)
    return passed(score.value, bound)


def label_for(metric: str, labels: Mapping[str, Any]) -> str | None:
    """The key of ``labels`` that judges ``metric`` (ARES names or canonical names)."""
    from unified.data.labels import label_metric

    name = canonical(metric)
    for key in labels:
        if key == metric or key == name or label_metric(key) == name:
            return key
    return None


def label_value(v: Any) -> float | None:
    """A usable label as a number, or None (missing, or not a label), read by the one
    rule of ``--label`` (``unified.data.labels.label_value``): a bool or a word such as
    "yes"/"no"/"pass" as 1/0, a number or numeric text as itself. A label written as
    "yes" in ``metadata.labels`` was dropped without a word while ``--label`` read it."""
    from unified.data.labels import label_value as read_label

    try:
        number = read_label(v)
    except ValueError:
        return None
    return None if number is None else float(number)


def label_cut(metric: str, grades: Iterable[float], cut: float | None = None) -> float | Undefined:
    """The cut that binarises graded labels (module docstring): ``cut`` when given, else
    the metric's bound on the grades' scale (0–1 or 0–10), else undefined with the reason."""
    if cut is not None:
        return float(cut)
    values = list(grades)
    lo, hi = min(values), max(values)
    bound = default_threshold(metric)
    if lo >= 0.0 and hi <= 1.0:
        return bound / 10.0
    give = f"give the label from which people pass: --label-cut {metric}=CUT"
    if lo < 0.0 or hi > 10.0:
        return Undefined(f"graded labels span {lo:g}–{hi:g}, neither 0–1 nor 0–10: {give}")
    if hi < 10.0 and all(float(v).is_integer() for v in values):
        return Undefined(
            f"graded labels are whole numbers {lo:g}–{hi:g}: a rating scale (1–5, 1–7, …) or grades on "
            f"0–10? Cut at {bound:g} as 0–10 grades, a 1–5 rating fails every label; {give}"
        )
    if hi < bound or lo >= bound:  # averaged ratings (2.33, 4.67), or every label on one side anyway
        side = "fail" if hi < bound else "pass"
        return Undefined(
            f"graded labels span {lo:g}–{hi:g}: the default cut {bound:g} would {side} every one, "
            f"so they may be on another scale; {give}"
        )
    return bound


def parse_label_cuts(specs: Iterable[str] | None) -> dict[str, float]:
    """``["faithfulness=4", …]`` (``--label-cut``) as {canonical metric name: cut}
    (``Faithfulness=4`` and ``FaithfulnessMetric=4`` name one metric: a key kept as typed
    was never looked up, and the default cut applied without a word); ``ValueError``
    naming a spec that is not METRIC=NUMBER or a metric the registry does not know.
    Look a cut up with ``cut_for``."""
    cuts: dict[str, float] = {}
    for spec in specs or []:
        metric, sep, number = str(spec).partition("=")
        try:
            cut = float(number)
        except ValueError:
            cut = math.nan
        if not sep or not metric.strip() or not math.isfinite(cut):
            raise ValueError(f"--label-cut '{spec}': give METRIC=CUT, e.g. faithfulness=4 (labels ≥ 4 pass)")
        try:
            name = parse_metric(metric.strip()).canonical
        except UnknownMetricError:
            raise ValueError(f"--label-cut '{spec}': unknown metric '{metric.strip()}'") from None
        cuts[name] = cut
    return cuts


def cut_for(metric: str, cuts: Mapping[str, float] | None) -> float | None:
    """The ``--label-cut`` given for ``metric`` (any spelling: looked up by its canonical name)."""
    return (cuts or {}).get(canonical(metric))


def is_binary(values: Iterable[float]) -> bool:
    return set(values) <= {0.0, 1.0}
