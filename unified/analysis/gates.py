"""Gates for CI: ``--fail-under`` bounds on a run's means, and ``--max-error-rate``.

A run fails when, for a gated metric, ``mean < bound`` on any backend that ran it (a metric
with no successful score fails too: an all-error run must not pass CI), or when the share of
its failed and degraded tasks exceeds ``max_error_rate`` (the mean of the rest does not
count then).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from unified.bounds import BoundScaleError, read_bound
from unified.metrics import UnknownMetricError, parse_metric
from unified.scores import Aggregate


class GateError(ValueError):
    """A malformed ``--fail-under`` specification."""


def parse_gates(spec: str | Iterable[str] | Mapping[str, float] | None) -> dict[str, float]:
    """``"faithfulness=7,context_recall=6"`` (or a list of such items, or a dict) ->
    ``{metric: bound on 0–10}`` — every gate applies. Unknown metric names, a metric gated
    twice with two bounds (the same bound twice is one gate), bounds outside 0–10 and
    unmarked bounds in (0, 1] are errors (``unified.bounds.read_bound``: ``0.7@0-1`` means 7)."""
    if not spec:
        return {}
    if isinstance(spec, Mapping):
        pairs = [(f"{k}={v}", str(k), str(v)) for k, v in spec.items()]
    else:
        texts = [spec] if isinstance(spec, str) else list(spec)
        pairs = [_split_gate(item) for t in texts for item in _outside_brackets(t, ",") if item.strip()]
    gates: dict[str, float] = {}
    written: dict[str, str] = {}  # metric -> its gate as first written
    for item, name, bound in pairs:
        name = name.strip()
        try:
            parse_metric(name)
        except UnknownMetricError as e:
            raise GateError(f"gate '{item}': {e}") from None
        try:
            value = read_bound(bound, f"gate '{item}'")
        except BoundScaleError as e:
            raise GateError(str(e)) from None
        if name in gates and gates[name] != value:  # which bound was meant? keeping the last let a laxer one win unseen
            raise GateError(
                f"gate '{item}': {name} is gated twice, '{written[name]}' and '{item}'; give one bound per metric"
            )
        gates[name] = value
        written.setdefault(name, item)
    return gates


def _outside_brackets(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep`` where it is not inside a metric's ``[...]`` parameters:
    ``context_relevancy[variant=mean,t=0.8]=7,mrr=5`` is two gates."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _split_gate(item: str) -> tuple[str, str, str]:
    """(the gate as written, metric, bound): the bound follows the last ``=`` outside the
    metric's brackets (``faithfulness[threshold=8]=9`` gates that metric at 9)."""
    item = item.strip()
    *names, bound = _outside_brackets(item, "=")
    if not names:
        raise GateError(f"gate '{item}' must be metric=bound, like faithfulness=7")
    return item, "=".join(names), bound


def gate_matches(gate: str, metric: str) -> bool:
    """Exact name (``precision@3``), or the same canonical metric when the gate names
    no cutoff (``faithfulness`` gates ``faithfulness``; ``precision_at_k`` gates every k)."""
    if gate == metric:
        return True
    try:
        g, m = parse_metric(gate), parse_metric(metric)
    except UnknownMetricError:
        return False
    return g.k is None and not g.params and g.canonical == m.canonical


def check_gates(
    aggregates: Iterable[Aggregate],
    gates: Mapping[str, float],
    max_error_rate: float = 0.0,
    degraded: Mapping[tuple[str, str], int] | None = None,
) -> tuple[bool, list[str]]:
    """(all passed, one line per gate and backend).

    A gate on (metric, backend) passes when its mean over the successful scores is at
    least the bound **and** its error rate ``(errors + degraded) / tasks`` is at most
    ``max_error_rate`` (default 0): a mean over the few tasks that scored never passes a
    gate silently, nor does one over values from fewer judges than asked. ``degraded``:
    (metric, backend) -> its degraded tasks (``Report.degraded_counts``)."""
    aggs = list(aggregates)
    ok = True
    lines: list[str] = []
    for gate, bound in gates.items():
        hit = [a for a in aggs if gate_matches(gate, a.metric)]
        if not hit:
            ok = False
            lines.append(f"FAIL {gate}: no score in this run (not in --metrics, or no backend could run it)")
            continue
        for a in hit:
            line = _gate_line(a, bound, max_error_rate, (degraded or {}).get((a.metric, a.backend), 0))
            ok = ok and line.startswith("PASS")
            lines.append(line)
    return ok, lines


def _gate_line(a: Aggregate, bound: float, max_error_rate: float, degraded: int = 0) -> str:
    where = f"{a.metric} ({a.backend})"
    rate = (a.errors + degraded) / a.count if a.count else 0.0
    if a.mean is None:
        return f"FAIL {where}: no successful score ({a.errors} errors)"
    if rate > max_error_rate:
        what = (
            f"{a.errors} of {a.count} tasks failed"
            if not degraded
            else (
                f"{a.errors} of {a.count} tasks failed and {degraded} were scored by fewer judges than asked (degraded)"
            )
        )
        return (
            f"FAIL {where}: {what} ({rate:.0%} > --max-error-rate "
            f"{max_error_rate:g}); the mean of the rest ({a.mean:.2f}) does not count"
        )
    if a.mean < bound:
        return f"FAIL {where}: mean {a.mean:.2f} < {bound:.2f} (short by {bound - a.mean:.2f})"
    return f"PASS {where}: mean {a.mean:.2f} >= {bound:.2f}"
