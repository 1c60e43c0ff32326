"""Results back in the frameworks' own shapes: the DataFrame of RAGAS's
``evaluate(...).to_pandas()`` and DeepEval's per-test-case result records.

Names. A metric's RAGAS column is the name ragas gives the collections metric that ran
(its ``name`` default: the class name in snake case, ``ContextPrecisionWithReference`` ->
``context_precision_with_reference``), taken from the class the ragas backend recorded in
``details['ragas_metric']``, else from the registry alias ``MetricSpec.aliases['ragas']``.
A metric's DeepEval name is the metric's ``__name__`` in deepeval (``FaithfulnessMetric``
-> ``Faithfulness``, ``ContextualRelevancyMetric`` -> ``Contextual Relevancy``; the GEval
correctness rubric of ``unified/adapters/deepeval/__init__.py`` -> ``Correctness [GEval]``), from
``details['deepeval_metric']`` or the alias ``aliases['deepeval']``. A metric the
framework has no name for keeps ours (``precision@3``). tests/test_report_frameworks.py
checks these rules against the installed frameworks; nothing here imports them.

Values. The "raw 0–1" number: the backend's own ``raw`` when its raw range is 0–1 (for
the ragas and deepeval backends, exactly the number the framework returned, even outside
0–1 and lower-is-better ones uninverted), else ``value / 10``. A failed task is NaN in the
RAGAS frame (what ragas writes for a failed metric) and ``score=None`` with ``error`` in
DeepEval's shape. The raw threshold is ``threshold / 10`` on the same scale (``1 −
threshold / 10`` for a lower-is-better raw).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

SAMPLE_COLUMNS = ("user_input", "retrieved_contexts", "response", "reference")
# unified/adapters/deepeval/__init__.py runs answer_correctness as GEval(name="Correctness", ...)
_GEVAL_NAME = "Correctness [GEval]"


def _params_suffix(metric: str) -> str:
    return metric[metric.index("[") :] if "[" in metric else ""


def _alias(metric: str, framework: str) -> str | None:
    from unified.metrics import UnknownMetricError, parse_metric

    try:
        ref = parse_metric(metric)
    except UnknownMetricError:
        return None
    if ref.k is not None:  # an @k cutoff has no framework name
        return None
    return ref.spec.aliases.get(framework)


def ragas_name(metric: str, details: Mapping[str, Any] | None = None) -> str:
    """The DataFrame column ragas would use for ``metric`` (module docstring)."""
    cls = (details or {}).get("ragas_metric") or _alias(metric, "ragas")
    if not cls:
        return metric
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls).lower() + _params_suffix(metric)


def deepeval_name(metric: str, details: Mapping[str, Any] | None = None) -> str:
    """The ``MetricData.name`` deepeval would report for ``metric`` (module docstring)."""
    cls = (details or {}).get("deepeval_metric") or _alias(metric, "deepeval")
    if not cls:
        return metric
    if cls == "GEval":
        return _GEVAL_NAME
    return re.sub(r"(?<!^)(?=[A-Z])", " ", cls.removesuffix("Metric")) + _params_suffix(metric)


def raw01(d: Mapping[str, Any]) -> float | None:
    """The task's number on its framework's 0–1 scale, or None when it failed — a value
    the framework returned outside its own range included (it is not a score; the number
    stays in ``details.raw_out_of_range``)."""
    if d.get("error") is not None or d.get("value") is None:
        return None
    rr = d.get("raw_range")
    raw = d.get("raw")
    if raw is not None and rr is not None and tuple(map(float, rr)) == (0.0, 1.0):
        return float(raw)
    return float(d["value"]) / 10.0


def raw_threshold(d: Mapping[str, Any]) -> float | None:
    """The pass threshold on the scale of ``raw01``."""
    t = d.get("threshold")
    if t is None:
        return None
    rr = d.get("raw_range")
    lower_raw = (
        d.get("raw") is not None
        and rr is not None
        and tuple(map(float, rr)) == (0.0, 1.0)
        and d.get("higher_is_better") is False
    )
    return 1.0 - t / 10.0 if lower_raw else t / 10.0


def collect(
    score_dicts: Iterable[Mapping[str, Any]], backend: str | None
) -> tuple[dict[tuple[str, str], dict[str, Mapping[str, Any]]], list[str]]:
    """(sample_id, backend) -> metric -> score line, for sample tasks (row errors are no
    sample), and the backends seen in order."""
    out: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    backends: list[str] = []
    for d in score_dicts:
        if d.get("row_error") or (backend is not None and d["backend"] != backend):
            continue
        if d["backend"] not in backends:
            backends.append(d["backend"])
        out.setdefault((d["sample_id"], d["backend"]), {})[d["metric"]] = d
    return out, backends


def ragas_rows(
    samples: Iterable[Mapping[str, Any]],
    by_task: Mapping[tuple[str, str], Mapping[str, Any]],
    backends: list[str],
    metrics: list[str],
    with_backend: bool,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of the RAGAS frame: per sample (and backend), the sample columns, then one
    column per metric under its RAGAS name holding ``raw01`` (NaN when failed)."""
    names: dict[str, str] = {}
    for lines in by_task.values():
        for m, d in lines.items():
            names.setdefault(m, ragas_name(m, d.get("details")))
    cols = list(SAMPLE_COLUMNS) + (["backend"] if with_backend else [])
    cols += list(dict.fromkeys(names[m] for m in metrics if m in names))
    rows = []
    for s in samples:
        for b in backends:
            task_lines = by_task.get((s["id"], b))
            if task_lines is None:
                continue
            row: dict[str, Any] = {c: s.get(c) for c in SAMPLE_COLUMNS}
            if with_backend:
                row["backend"] = b
            for m in metrics:
                if m in task_lines:
                    v = raw01(task_lines[m])
                    row[names[m]] = float("nan") if v is None else v
            rows.append(row)
    return rows, cols


def deepeval_record(
    s: Mapping[str, Any], lines: Mapping[str, Mapping[str, Any]], metrics: list[str], backend: str | None
) -> dict[str, Any]:
    """One sample in DeepEval's test-result shape (``deepeval.evaluate.types.TestResult``:
    name, input, actual_output, expected_output, retrieval_context, success,
    metrics_data); ``success`` is true when every metric passed."""
    data = []
    for m in metrics:
        d = lines.get(m)
        if d is None:
            continue
        data.append(
            {
                "name": deepeval_name(m, d.get("details")),
                "score": raw01(d),
                "threshold": raw_threshold(d),
                "success": bool(d.get("passed")),
                "reason": d.get("reason"),
                "error": d.get("error"),
            }
        )
    rec: dict[str, Any] = {
        "name": s["id"],
        "input": s.get("user_input"),
        "actual_output": s.get("response"),
        "expected_output": s.get("reference"),
        "retrieval_context": s.get("retrieved_contexts"),
        "success": bool(data) and all(x["success"] for x in data),
        "metrics_data": data,
    }
    if backend is not None:
        rec["backend"] = backend
    return rec
