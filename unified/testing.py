"""Assertions for test suites: score samples through the normal runner and fail loudly.

``assert_scores(samples, metrics)`` runs ``unified.api.evaluate`` (the same plan,
fingerprints, judge cache and error handling as ``unified-eval run``) and raises an
``AssertionError`` listing every failing check, one (sample, metric, backend) a row::

    assert_scores: 2 of 6 checks failed
      sample       metric        backend  value  threshold  reason
      bad-answer   faithfulness  native   2.50   7.00       1 of 4 claims supported
      no-response  faithfulness  native   error  7.00       sample 'no-response': field 'response' ...

A check passes when its score has a value and ``value >= threshold`` (0–10 scale; the
threshold is ``thresholds[metric]`` when given, else the backend's own verdict with its
default bound — the registry's unless the backend sets one). Never a silent pass:

* a task that errored fails with its error (a row that never became a sample too);
* a requested (metric, backend) pair that could not run fails (``not run: <why>``), except
  "not implemented" on one backend when another chosen backend scored that metric; an
  empty input fails the same way (no score came back);
* a score without a threshold fails (pass ``thresholds=`` for it);
* when *no* requested pair can run at all, the runner's ``ValueError`` ("nothing to run:
  ...", with the reasons) propagates.

``assert_gates(report, {"faithfulness": 7})`` is ``--fail-under`` for a Report: the same
gate rules (``unified.analysis.gates``) and the same error-rate rule as the CLI (a gated metric
with a failed task fails at the default ``max_error_rate=0``).

Defaults: ``backend=None`` means the pytest plugin's ``--unified-backend`` (see
``unified.integrations.pytest_plugin``), else ``native``. Precedence, highest first: the call's own
arguments, ``@pytest.mark.unified(...)`` on the test, the plugin's command-line options.
This module imports nothing heavy until a function is called: the pytest plugin imports it
in every session.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from unified.bounds import passed

__all__ = ["assert_gates", "assert_scores", "configure", "drain_records"]

# set by the pytest plugin: its command-line options (session) and the running test's marker
_session_defaults: dict[str, Any] = {}
_test_defaults: dict[str, Any] = {}
# one dict per (metric, backend) per assert_scores call; the plugin's terminal summary drains it
_records: list[dict[str, Any]] = []


def configure(**defaults: Any) -> None:
    """Session defaults for ``assert_scores`` (the pytest plugin passes its options):
    ``backend``, ``judge``, ``cache`` and any other ``evaluate`` option."""
    _session_defaults.clear()
    _session_defaults.update(_normalised(defaults))


def set_test_defaults(**defaults: Any) -> None:
    """Defaults for the running test only (``@pytest.mark.unified(...)``: ``backend``,
    ``thresholds`` and ``evaluate`` options); ``set_test_defaults()`` clears them."""
    _test_defaults.clear()
    _test_defaults.update(_normalised(defaults))


def _normalised(defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Drop unset values; ``backend`` (assert_scores's spelling) is ``backends``."""
    out = {k: v for k, v in defaults.items() if v is not None}
    if "backend" in out:
        out["backends"] = out.pop("backend")
    return out


def drain_records() -> list[dict[str, Any]]:
    """The per-(metric, backend) tallies recorded since the last drain."""
    out = list(_records)
    _records.clear()
    return out


@dataclass
class _Check:
    """One row of the failure table."""

    sample: str
    metric: str
    backend: str
    value: str
    threshold: str
    reason: str


@dataclass
class _Tally:
    """Checks of one (metric, backend) in one call, and what its scores cost."""

    metric: str
    backend: str
    checks: int = 0
    passed: int = 0
    errors: int = 0
    cost: dict[str, Any] = field(default_factory=dict)

    def as_record(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "backend": self.backend,
            "checks": self.checks,
            "passed": self.passed,
            "failed": self.checks - self.passed,
            "errors": self.errors,
            "cost": self.cost,
        }


# ---------------------------------------------------------------- assert_scores


def assert_scores(
    samples: Any, metrics: Any, backend: Any = None, thresholds: Mapping[str, float] | None = None, **run_options: Any
) -> Any:
    """Score ``samples`` on ``metrics`` with ``backend`` (a name, comma list, list of names
    or Backend instances; None: the session default, else ``native``) and raise
    ``AssertionError`` naming every failing (sample, metric, backend) — see the module
    docstring. ``thresholds``: ``{metric: bound on 0–10}``, overriding the backend's default
    bound (``faithfulness`` covers every ``faithfulness[...]``; ``precision`` every ``@k``).
    ``run_options``: any ``evaluate`` keyword (``judge=``, ``embedding=``, ``cache=``,
    ``out=`` to keep the run folder, ...). Returns the run's ``Report``."""
    __tracebackhide__ = True  # pytest: show the caller's line, not this frame
    from unified.run.runner import as_metric_refs

    opts = _merged_options(backend, run_options)
    names = [r.name for r in as_metric_refs(metrics)]
    backends = [getattr(b, "name", b) for b in opts["backends"]]
    bounds = _bounds(thresholds, names)
    report, skipped = _score(samples, names, opts)
    failures, tallies = _checks(report, names, backends, bounds)
    order = {sid: i for i, sid in enumerate(d["id"] for d in report.iter_samples())}
    failures.sort(key=lambda f: (order.get(f.sample, len(order)), names.index(f.metric), backends.index(f.backend)))
    failures += _not_run(names, backends, skipped, tallies)
    _records.extend(t.as_record() for t in tallies.values())
    if failures:
        total = sum(t.checks for t in tallies.values()) + sum(1 for f in failures if f.value == "not run")
        raise AssertionError(format_failures(failures, total))
    return report


def _merged_options(backend: Any, run_options: Mapping[str, Any]) -> dict[str, Any]:
    """evaluate() keywords: built-in < session (plugin options) < marker < this call."""
    opts: dict[str, Any] = {
        "backends": "native",
        "quiet": True,
        "progress": False,
        **_session_defaults,
        **_test_defaults,
        **run_options,
    }
    opts.pop("thresholds", None)  # a marker's thresholds are read by _bounds, not evaluate
    if backend is not None:
        opts["backends"] = backend
    if isinstance(opts["backends"], str):
        opts["backends"] = [x.strip() for x in opts["backends"].split(",") if x.strip()]
    elif not isinstance(opts["backends"], (list, tuple)):
        opts["backends"] = [opts["backends"]]
    return opts


def _bounds(thresholds: Mapping[str, float] | None, names: list[str]) -> dict[str, float]:
    """``thresholds`` (this call's, else the marker's) checked: each key a known metric
    among ``names``, each bound on 0–10. A typo must not silently keep the default."""
    from unified.analysis.gates import gate_matches, parse_gates

    given = (
        thresholds if thresholds is not None else _test_defaults.get("thresholds", _session_defaults.get("thresholds"))
    )
    bounds = parse_gates(dict(given)) if given else {}
    for key in bounds:
        if not any(gate_matches(key, n) for n in names):
            raise ValueError(f"thresholds: '{key}' is not among the metrics scored ({', '.join(names)})")
    return bounds


def _score(samples: Any, names: list[str], opts: dict[str, Any]) -> tuple[Any, list[dict[str, str]]]:
    """(Report, skipped pairs with their reasons). Without ``out=`` the run goes to a
    temporary folder (for its summary's skipped pairs) and the Report lives in memory."""
    from unified.api import evaluate
    from unified.report import Report

    if opts.get("out") is not None:
        report = evaluate(samples, names, **opts)
        return report, report.run_summary().get("skipped_pairs", [])
    with tempfile.TemporaryDirectory(prefix="unified-assert-") as tmp:
        report = evaluate(samples, names, **{"write_report": False, **opts, "out": Path(tmp)})
        skipped = report.run_summary().get("skipped_pairs", [])
        return Report(list(report.iter_scores()), list(report.iter_samples())), skipped


def _checks(
    report: Any, names: list[str], backends: list[str], bounds: Mapping[str, float]
) -> tuple[list[_Check], dict[tuple[str, str], _Tally]]:
    """A failing row per score that errored or fell short, and a tally per pair."""
    from unified.analysis.gates import gate_matches
    from unified.scores import Cost

    failures: list[_Check] = []
    tallies: dict[tuple[str, str], _Tally] = {}
    costs: dict[tuple[str, str], Cost] = {}
    for s in report.iter_scores():
        if s.metric not in names or s.backend not in backends:
            continue
        key = (s.metric, s.backend)
        t = tallies.setdefault(key, _Tally(s.metric, s.backend))
        costs[key] = costs.get(key, Cost()).add(s.cost)
        t.checks += 1
        bound = next((b for g, b in bounds.items() if gate_matches(g, s.metric)), None)
        row = _verdict(s, bound)
        if row is None:
            t.passed += 1
            continue
        t.errors += row.value == "error"
        failures.append(row)
    for key, c in costs.items():
        tallies[key].cost = c.model_dump()
    return failures, tallies


def _verdict(s: Any, bound: float | None) -> _Check | None:
    """None when score ``s`` passes; else its failing row."""
    from unified.redact import one_line

    threshold = bound if bound is not None else s.threshold
    shown = "—" if threshold is None else f"{threshold:.2f}"
    sample = f"{s.sample_id} (input row)" if s.row_error else s.sample_id
    if not s.ok:
        return _Check(sample, s.metric, s.backend, "error", shown, one_line(s.error or "no value", 240))
    if threshold is None:
        return _Check(
            sample,
            s.metric,
            s.backend,
            f"{s.value:.2f}",
            shown,
            f"no threshold for {s.metric}: pass thresholds={{'{s.metric}': bound}}",
        )
    if passed(s.value, threshold):  # the one test, against the caller's bound or the task's
        return None
    return _Check(
        sample, s.metric, s.backend, f"{s.value:.2f}", shown, one_line(s.reason or "below the threshold", 240)
    )


def _not_run(
    names: list[str], backends: list[str], skipped: list[dict[str, str]], tallies: Mapping[tuple[str, str], _Tally]
) -> list[_Check]:
    """A failing row per requested pair that produced no score, with the planner's reason.
    "Not implemented" is no failure when another chosen backend scored the metric."""
    from unified.run.runplan import NOT_IMPLEMENTED

    why = {(d.get("metric"), d.get("backend")): d.get("reason", "") for d in skipped}
    scored = {m for m, _ in tallies}
    rows = []
    for m in names:
        for b in backends:
            if (m, b) in tallies:
                continue
            reason = why.get((m, b))
            if reason == NOT_IMPLEMENTED and m in scored:
                continue
            text = f"not scored: {reason}" if reason else "not scored: no score came back for this pair"
            rows.append(_Check("—", m, b, "not run", "—", text))
    return rows


def format_failures(rows: list[_Check], total: int) -> str:
    """The readable table of ``assert_scores``'s AssertionError."""
    head = _Check("sample", "metric", "backend", "value", "threshold", "reason")
    cols = ("sample", "metric", "backend", "value", "threshold")
    width = {c: max(len(getattr(r, c)) for r in [head, *rows]) for c in cols}

    def line(r: _Check) -> str:
        return "  " + "  ".join(getattr(r, c).ljust(width[c]) for c in cols) + "  " + r.reason

    noun = "check" if total == 1 else "checks"
    return "\n".join([f"assert_scores: {len(rows)} of {total} {noun} failed", line(head), *map(line, rows)])


# ---------------------------------------------------------------- assert_gates


def assert_gates(
    report: Any, gates: Mapping[str, float] | str | Iterable[str], max_error_rate: float = 0.0
) -> list[str]:
    """``--fail-under`` for a Report (or a run folder path): raise ``AssertionError``
    with the FAIL lines when a gated mean is below its bound, a gated metric has no
    successful score or was not scored, or its error rate exceeds ``max_error_rate``
    (default 0, as the CLI's ``--max-error-rate``). Returns the PASS lines otherwise."""
    __tracebackhide__ = True
    from unified.analysis.gates import check_gates, parse_gates
    from unified.report import Report

    if isinstance(report, (str, Path)):
        report = Report.from_dir(report)
    parsed = parse_gates(gates)
    if not parsed:
        raise ValueError("assert_gates: no gates given, e.g. {'faithfulness': 7}")
    aggregates = report.summary()
    ok, lines = check_gates(aggregates, parsed, max_error_rate, report.degraded_counts())
    if not ok:
        failed = [x for x in lines if not x.startswith("PASS")]
        raise AssertionError(
            "assert_gates: " + "; ".join(failed)
            if len(failed) == 1
            else "assert_gates failed:\n  " + "\n  ".join(failed)
        )
    return lines
