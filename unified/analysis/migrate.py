"""What flips if we migrate: the migration report from one backend to another.

On the samples both backends scored, per metric: the name each framework gives it (from
the metric registry's aliases), the threshold that matters translated onto the new
backend's scale (``unified.analysis.translate``, quantile matching), the pass agreement, and every
sample whose pass/fail changes sides, with both backends' reasons.

Which threshold: the bound of the ``--fail-under`` gate for the metric when one is given,
else the old backend's own pass threshold. A gate bound is read here as a per-sample pass
threshold (a sample passes when its value ≥ the bound); the gate's own verdict on the mean
is reported beside it (``gate``): both means against the bound as given — what the run's
``--fail-under`` decides, and so the exit code — and the new mean against the translated
bound, what the gate would say if you moved it (translating a bound on a mean through a
per-sample map is an approximation, and said so in the notes).

The translated bound is shortened *before* the flips are counted (``short_bound``: the
fewest decimals, from 2, that pass the same samples of the new backend as the exact
midpoint): the bound printed is the bound used, so a user who copies it into
``--fail-under`` gets the same verdicts. Values are printed with as many decimals as it takes for the printed value to be
on the same side of the printed bound as the value itself (``value_text``): 9.9996 against
a bound of 10 reads ``9.9996``, never ``10.00``.

A translation from few samples is fragile: with n paired samples one sample moves a pass
rate by 1/n, so below ``STEADY_N`` a note says the translated bound is a rough guide.

Flips are counted at the translated threshold: the migration this report recommends is
"switch backend and gate at the translated bound", and the flips are what still changes
then. ``flips_at_same_threshold`` counts what changes when the bound is carried over
unchanged. When the translation is undefined (fewer than 3 paired samples, a constant
side) the flips are counted at the unchanged bound and a note says so.

``flips_exceed(report, max_flips)`` guards a migration in CI: True when a gated metric
(every metric, when no gate was given) flips for more than ``max_flips`` samples, or has
no sample both backends scored (nothing checked must not pass).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from unified.analysis.gates import gate_matches
from unified.analysis.stats import MIN_N, Undefined, is_undefined, note_undefined, rounded
from unified.analysis.translate import translate_threshold
from unified.analysis.verdict import backend_threshold, canonical
from unified.metrics import UnknownMetricError, parse_metric
from unified.sample import Sample
from unified.scores import Score

#: paired samples under which a translated bound gets a "rough guide" note: at n = 30 one
#: sample moves the pass rate by 3 percentage points, about the spread of a rater's verdicts
STEADY_N = 30
APPROX_GATE = (
    "the gate bound on the new backend is the per-sample translation of the old "
    "bound; for a bound on the mean this is an approximation"
)


def framework_name(metric: str, backend: str) -> str:
    """The name ``backend``'s framework gives ``metric`` (registry alias: ``faithfulness``
    is ``FaithfulnessMetric`` in deepeval, ``Faithfulness`` in ragas); our own name for
    backends without an alias (native, embedding, jury) and for metrics with a cutoff. A
    framework at a version (``ragas@0.3.9``, an isolated backend) has its framework's names."""
    try:
        ref = parse_metric(metric)
    except UnknownMetricError:
        return metric
    if ref.k is not None or ref.params:
        return ref.name
    return ref.spec.aliases.get(backend.partition("@")[0], ref.name)


def _collect(scores: Iterable[Score], backends: tuple[str, str]) -> dict[str, dict[str, dict[str, Score]]]:
    """{metric: {backend: {sample_id: Score}}} for the two backends, last line winning."""
    table: dict[str, dict[str, dict[str, Score]]] = defaultdict(lambda: {b: {} for b in backends})
    for s in scores:
        if not s.row_error and s.backend in backends:
            table[s.metric][s.backend][s.sample_id] = s
    return table


def _side(s: Score, t: float) -> dict[str, Any]:
    """One backend's side of a flip; the value rounded for the report unless rounding would
    carry it across the bound (9.99996 against 10 stays 9.99996)."""
    v = float(s.value)  # type: ignore[arg-type]
    shown = rounded(v)
    return {"value": shown if (shown >= t) == (v >= t) else v, "passed": v >= t, "reason": s.reason}


def _flip(sid: str, a: Score, b: Score, t_a: float, t_b: float, samples: Mapping[str, Sample] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"sample_id": sid, "from": _side(a, t_a), "to": _side(b, t_b)}
    row["direction"] = "pass → fail" if row["from"]["passed"] else "fail → pass"
    if samples and sid in samples:
        row["question"] = samples[sid].user_input
    return row


def _gate_verdict(va: np.ndarray, vb: np.ndarray, bound: float, t_b: Any) -> dict[str, Any]:
    """The mean gate: mean_from ≥ bound and mean_to ≥ bound (``passed_to_at_bound``: what
    the run's ``--fail-under`` decides), and mean_to ≥ the translated bound (``passed_to``,
    undefined when the translation is)."""
    mean_a, mean_b = float(va.mean()), float(vb.mean())
    out = {
        "bound_from": bound,
        "mean_from": rounded(mean_a),
        "passed_from": mean_a >= bound,
        "passed_to_at_bound": mean_b >= bound,
        "bound_to": t_b,
        "mean_to": rounded(mean_b),
    }
    out["passed_to"] = t_b if is_undefined(t_b) else mean_b >= t_b
    return out


def short_bound(t: float, values: np.ndarray) -> float:
    """``t`` with the fewest decimals (2 to 6) that passes the same ``values`` as ``t``:
    #{v ≥ round(t, d)} = #{v ≥ t}. The translated bound is a midpoint between two of the
    new backend's values, so 2 decimals almost always do; ``t`` itself when none does."""
    passes = int(np.sum(values >= t))
    for digits in range(2, 7):
        r = round(t, digits)
        if int(np.sum(values >= r)) == passes:
            return r
    return t


def few_samples_note(n: int, dst: str) -> str:
    """The "rough guide" note of a translation from fewer than ``STEADY_N`` samples."""
    return (
        f"translated from only {n} samples scored by both: one sample moves the pass rate by "
        f"{100 / n:.0f} percentage points, so the bound on {dst} is a rough guide (score {STEADY_N} "
        "or more samples for a steadier one)"
    )


def _metric_report(
    metric: str,
    per: Mapping[str, Mapping[str, Score]],
    src: str,
    dst: str,
    gate: float | None,
    samples: Mapping[str, Sample] | None,
) -> dict[str, Any]:
    """One metric's block of the migration report (module docstring)."""
    a, b = per[src], per[dst]
    ids = sorted(sid for sid in set(a) & set(b) if a[sid].ok and b[sid].ok)
    va = np.array([float(a[s].value) for s in ids])  # type: ignore[arg-type]
    vb = np.array([float(b[s].value) for s in ids])  # type: ignore[arg-type]
    notes: list[str] = []
    t_a = gate if gate is not None else backend_threshold(metric, a.values())
    # shortened before use: the bound printed is the bound the flips are counted at
    translated = note_undefined(notes, "translated threshold", translate_threshold(va, vb, t_a, (src, dst)))
    translated = translated if is_undefined(translated) else short_bound(float(translated), vb)
    t_b = t_a if is_undefined(translated) else float(translated)
    if is_undefined(translated):
        notes.append(f"flips counted at the unchanged bound {bound_text(t_a)}")
    elif MIN_N <= len(ids) < STEADY_N:
        notes.append(few_samples_note(len(ids), dst))
    none = Undefined(f"no sample scored by both {src} and {dst} without error")
    agree = (lambda t: rounded(float(np.mean((va >= t_a) == (vb >= t))))) if ids else (lambda t: none)
    flips = [_flip(s, a[s], b[s], t_a, t_b, samples) for s, x, y in zip(ids, va, vb) if (x >= t_a) != (y >= t_b)]
    m: dict[str, Any] = {
        "metric": metric,
        "canonical": canonical(metric),
        "names": {src: framework_name(metric, src), dst: framework_name(metric, dst)},
        "n": len(ids),
        "excluded": len(set(a) & set(b)) - len(ids),
        "tasks": {src: len(a), dst: len(b)},
        "errors": {src: sum(not s.ok for s in a.values()), dst: sum(not s.ok for s in b.values())},
        "only_from": len(set(a) - set(b)),
        "only_to": len(set(b) - set(a)),
        "threshold_source": "gate" if gate is not None else "default",
        "threshold_from": t_a,
        "threshold_to": translated,
        "threshold_used": t_b,
        "threshold_to_default": backend_threshold(metric, b.values()),
        "pass_agreement_at_translated": agree(t_b),
        "pass_agreement_at_same": agree(t_a),
        "n_flips": len(flips),
        "flips": flips,
        "flips_at_same_threshold": int(np.sum((va >= t_a) != (vb >= t_a))),
    }
    note_undefined(notes, "pass agreement", m["pass_agreement_at_translated"])
    if gate is not None and ids:
        m["gate"] = _gate_verdict(va, vb, gate, translated)
        notes.append(APPROX_GATE)
    m["notes"] = notes
    return m


def migration_report(
    scores: Iterable[Score],
    samples: Mapping[str, Sample] | None,
    from_backend: str,
    to_backend: str,
    metrics: Sequence[str] | None = None,
    gates: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The migration report (JSON-serialisable) from ``from_backend`` to ``to_backend``.

    ``metrics``: the metrics to report (names as in the scores; default: every metric
    both backends scored). ``gates``: {metric: bound} as ``unified.analysis.gates.parse_gates``
    gives them; a gate applies to the metrics ``unified.analysis.gates.gate_matches`` says.
    Per metric (module docstring): names, n, excluded, threshold_source, threshold_from,
    threshold_to (translated), threshold_used (the bound the flips are counted at: the
    translated one, or threshold_from when that is undefined), threshold_to_default, pass_agreement_at_translated,
    pass_agreement_at_same, n_flips, flips [{sample_id, question, direction, from/to:
    {value, passed, reason}}], flips_at_same_threshold, gate (when gated), notes.
    """
    table = _collect(scores, (from_backend, to_backend))
    names = (
        [_name(x) for x in metrics]
        if metrics is not None
        else [m for m, per in table.items() if per[from_backend] and per[to_backend]]
    )
    gates = dict(gates or {})
    out: dict[str, Any] = {"from": from_backend, "to": to_backend, "gates": gates, "metrics": {}}
    for metric in names:
        per = table.get(metric, {from_backend: {}, to_backend: {}})
        gate = next((bound for g, bound in gates.items() if gate_matches(g, metric)), None)
        out["metrics"][metric] = _metric_report(metric, per, from_backend, to_backend, gate, samples)
    return out


def _name(metric: str) -> str:
    """The name Scores carry for ``metric`` (``FaithfulnessMetric`` -> ``faithfulness``)."""
    try:
        return parse_metric(metric).name
    except UnknownMetricError:
        return metric


def _guarded(m: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The metrics a CI guard checks: the gated ones, or all when no gate was given."""
    items = list(m["metrics"].items())
    gated = [(k, v) for k, v in items if v["threshold_source"] == "gate"]
    return gated if m.get("gates") else items


def migration_verdicts(m: Mapping[str, Any], max_flips: int = 0, max_error_rate: float = 0.0) -> list[str]:
    """One ``PASS``/``FAIL`` line per guarded metric (``_guarded``). A metric whose tasks
    failed on either backend at a rate above ``max_error_rate`` fails whatever its flips:
    flips counted on the few samples that scored say nothing about the rest."""
    lines = []
    for metric, r in _guarded(m):
        if r["n"] == 0:
            lines.append(f"FAIL {metric}: no sample scored by both {m['from']} and {m['to']}")
            continue
        failed = _error_rate_line(metric, r, max_error_rate)
        if failed:
            lines.append(failed)
            continue
        verdict = "FAIL" if r["n_flips"] > max_flips else "PASS"
        unchanged = " (unchanged: no translation)" if is_undefined(r["threshold_to"]) else ""
        lines.append(
            f"{verdict} {metric}: {r['n_flips']} of {r['n']} samples flip at "
            f"{bound_text(r['threshold_from'])} → {bound_text(used_bound(r))}{unchanged} (max {max_flips})"
        )
    return lines


def _error_rate_line(metric: str, r: Mapping[str, Any], max_error_rate: float) -> str | None:
    """The FAIL line of a metric whose tasks failed too often on a backend, else None.

    rate(backend) = errors / tasks      fails when rate > max_error_rate
    """
    for backend, tasks in (r.get("tasks") or {}).items():
        errors = (r.get("errors") or {}).get(backend, 0)
        if tasks and errors / tasks > max_error_rate:
            return (
                f"FAIL {metric}: {errors} of {tasks} {backend} tasks failed ({errors / tasks:.0%} > "
                f"--max-error-rate {max_error_rate:g}); the flips of the {r['n']} samples that scored "
                "on both do not count"
            )
    return None


def flips_exceed(m: Mapping[str, Any], max_flips: int = 0, max_error_rate: float = 0.0) -> bool:
    """True when the migration should not go ahead: a guarded metric flips for more than
    ``max_flips`` samples, has no sample both backends scored, or failed on either backend
    at a rate above ``max_error_rate``."""
    return any(line.startswith("FAIL") for line in migration_verdicts(m, max_flips, max_error_rate))


def num_text(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "—" if v is None else ("yes" if v else "no")
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def bound_text(t: Any) -> str:
    """A bound exactly as it is used, every digit it has (``short_bound`` keeps them few):
    7, 5.83, 9.9995; "undefined" as itself."""
    if is_undefined(t) or not isinstance(t, (int, float)):
        return str(t)
    return repr(float(t)).removesuffix(".0")


def value_text(v: Any, t: Any) -> str:
    """``v`` with 2 decimals, or as many more as it takes for the printed value to fall on
    the same side of the printed bound ``t`` as ``v`` does (v ≥ t ⇔ printed v ≥ t)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not isinstance(t, (int, float)):
        return num_text(v)
    for digits in range(2, 10):
        text = f"{v:.{digits}f}"
        if (float(text) >= t) == (v >= t):
            return text
    return repr(float(v))


def used_bound(r: Mapping[str, Any]) -> Any:
    """The bound a metric's flips were counted at (reports written before 0.3.0 lack it)."""
    return r.get("threshold_used", r["threshold_from"] if is_undefined(r["threshold_to"]) else r["threshold_to"])


def format_migration(m: Mapping[str, Any], *, max_listed: int = 10, reason_width: int = 60) -> Any:
    """A rich renderable of a migration report: one summary table over the metrics, then
    per metric the first ``max_listed`` flipped samples with both reasons."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    src, dst = m["from"], m["to"]
    t = Table(title=f"migration {src} → {dst}", title_justify="left")
    for col in ("metric", f"{src} name", f"{dst} name", "n", "threshold", f"on {dst}", "agree", "flips", "flips @same"):
        t.add_column(col, justify="left" if col in ("metric", f"{src} name", f"{dst} name") else "right")
    parts: list[Any] = [t]
    for metric, r in m["metrics"].items():
        t.add_row(
            metric,
            r["names"][src],
            r["names"][dst],
            str(r["n"]),
            f"{bound_text(r['threshold_from'])}{' (gate)' if r['threshold_source'] == 'gate' else ''}",
            bound_text(r["threshold_to"]),
            num_text(r["pass_agreement_at_translated"]),
            str(r["n_flips"]),
            str(r["flips_at_same_threshold"]),
        )
        if r["flips"]:
            parts.append(_flips_table(metric, r, src, dst, max_listed, reason_width))
        if "gate" in r:
            parts.append(Text(gate_text(metric, r["gate"], src, dst)))
        parts += [Text(f"note ({metric}): {n}") for n in r["notes"] if n != APPROX_GATE]
    return Group(*parts)


def gate_text(metric: str, g: Mapping[str, Any], src: str, dst: str) -> str:
    """The gate's verdict on the means: at the bound as given (what the run's --fail-under
    decides), then at the translated bound when there is one."""
    bound = bound_text(g["bound_from"])
    at_bound = g.get("passed_to_at_bound", g["mean_to"] >= g["bound_from"])
    text = (
        f"gate {metric} on the mean (--fail-under, the same bound on both): "
        f"{src} {value_text(g['mean_from'], g['bound_from'])} ≥ {bound}? {num_text(g['passed_from'])}; "
        f"{dst} {value_text(g['mean_to'], g['bound_from'])} ≥ {bound}? {num_text(at_bound)}"
    )
    if is_undefined(g["bound_to"]):
        return text + f"; no translated bound for {dst} (see the note)"
    return (
        text + f"; at the translated bound {dst} {value_text(g['mean_to'], g['bound_to'])} ≥ "
        f"{bound_text(g['bound_to'])}? {num_text(g['passed_to'])}"
    )


def _flips_table(metric: str, r: Mapping[str, Any], src: str, dst: str, max_listed: int, reason_width: int) -> Any:
    """The first ``max_listed`` flipped samples, each side's value and reason (as plain
    text: a reason's brackets are no markup)."""
    from rich.table import Table
    from rich.text import Text

    ft = Table(title=f"{metric} — samples that flip ({r['n_flips']})", title_justify="left")
    # the bound the flips were counted at: translated, or the unchanged one when that is undefined
    t_a, used = r["threshold_from"], used_bound(r)
    for col in ("sample", "direction", f"{src} (pass ≥ {bound_text(t_a)})", f"{dst} (pass ≥ {bound_text(used)})"):
        ft.add_column(col)
    cell = lambda side, t: Text(f"{value_text(side['value'], t)} {(side['reason'] or '')[:reason_width]}")
    for f in r["flips"][:max_listed]:
        ft.add_row(Text(f["sample_id"]), f["direction"], cell(f["from"], t_a), cell(f["to"], used))
    if r["n_flips"] > max_listed:
        ft.caption = f"… and {r['n_flips'] - max_listed} more in migration.json"
    return ft


def render_migration(m: Mapping[str, Any], width: int = 120, max_flips: int = 0, max_error_rate: float = 0.0) -> str:
    """``format_migration`` and the verdict lines as plain text (a log, a test, the docs)."""
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    console.print(format_migration(m))
    for line in migration_verdicts(m, max_flips, max_error_rate):
        console.print(line)
    return buf.getvalue()
