"""The paired diff of two runs with a bootstrap confidence interval.

Diff of runs A and B, per (metric, backend), over the samples both scored without error
(paired by sample id)::

    d_i = value_B(i) − value_A(i),   Δ = mean(d)
    95 % CI: percentiles 2.5 and 97.5 of mean(d*) over ``n_boot`` resamples d* of d drawn
    with replacement (``unified.analysis.stats.bootstrap_ci``, the one bootstrap: seeded, so the
    same runs always give the same interval).

Pairing removes between-sample variance: a small real change shows up even when the
per-run spreads are wide. A figure that cannot be computed (no paired sample; one paired
sample for the interval) is ``"undefined"`` with the reason in the row's ``notes``, as
everywhere (``unified.analysis.stats``). The gates (``--fail-under``) are
``unified.analysis.gates``; their names are re-exported here for older imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from unified.analysis.gates import GateError, check_gates, gate_matches, parse_gates
from unified.analysis.stats import Undefined, bootstrap_ci, is_undefined, note_undefined

__all__ = ["GateError", "check_gates", "diff_runs", "format_diff", "gate_matches", "parse_gates"]


# ---------------------------------------------------------------- diff

Values = dict[tuple[str, str], dict[str, tuple[float | None, str | None]]]


def _values(run_dir: Path) -> Values:
    """(metric, backend) -> sample id -> (value or None when failed, sample hash)."""
    from unified.report import Report

    out: Values = {}
    for d in Report.from_dir(run_dir).iter_score_dicts():
        if d.get("row_error"):
            continue  # an input row that never became a sample has nothing to pair
        ok = d.get("error") is None and d.get("value") is not None
        out.setdefault((d["metric"], d["backend"]), {})[d["sample_id"]] = (
            float(d["value"]) if ok else None,
            d.get("sample_hash"),
        )
    return out


def _changed(a: dict[str, tuple[float | None, str | None]], b: dict[str, tuple[float | None, str | None]]) -> set[str]:
    """Samples of both runs whose content differs (both fingerprinted, the hashes unequal):
    a change in their score is a change of the data, not of the evaluator."""
    return {sid for sid in a if sid in b and a[sid][1] and b[sid][1] and a[sid][1] != b[sid][1]}


def _paired_row(
    metric: str,
    backend: str,
    a_in: dict[str, tuple[float | None, str | None]],
    b_in: dict[str, tuple[float | None, str | None]],
    n_boot: int,
    seed: int,
    top: int,
) -> dict[str, Any]:
    """One diff row: counts, means over the paired samples, Δ, its CI and the movers.
    Samples whose content changed between the runs are not paired (``changed``)."""
    changed = _changed(a_in, b_in)
    a = {sid: v for sid, (v, _) in a_in.items() if sid not in changed}
    b = {sid: v for sid, (v, _) in b_in.items() if sid not in changed}
    paired = [sid for sid in a if sid in b and a[sid] is not None and b[sid] is not None]
    diffs = [b[s] - a[s] for s in paired]  # type: ignore[operator]
    notes: list[str] = [f"{len(changed)} sample(s) changed content between the runs: not paired"] if changed else []
    row: dict[str, Any] = {
        "metric": metric,
        "backend": backend,
        "n_paired": len(paired),
        "only_a": sum(1 for s in a if s not in b),
        "only_b": sum(1 for s in b if s not in a),
        "failed": sum(1 for s in a if s in b and (a[s] is None or b[s] is None)),
        "changed": len(changed),
    }
    if not paired:
        why = Undefined(
            f"no paired samples (only in A {row['only_a']}, only in B {row['only_b']}, "
            f"failed on either {row['failed']})"
        )
        note_undefined(notes, "delta", why)
        row.update(mean_a=why, mean_b=why, delta=why, ci95=why, movers=[], notes=notes)
        return row
    row["mean_a"] = float(np.mean([a[s] for s in paired]))
    row["mean_b"] = float(np.mean([b[s] for s in paired]))
    row["delta"] = float(np.mean(diffs))
    ci = bootstrap_ci(np.mean, diffs, n=n_boot, seed=seed)
    row["ci95"] = note_undefined(notes, "ci95", ci if is_undefined(ci) else list(ci))
    # a sample that did not move is no "mover" (a rerun on the cache moves nothing)
    movers = sorted(((s, d) for s, d in zip(paired, diffs) if d != 0), key=lambda t: (-abs(t[1]), t[0]))[:top]
    row["movers"] = [{"sample_id": s, "a": a[s], "b": b[s], "delta": d} for s, d in movers]
    row["notes"] = notes
    return row


def diff_runs(
    run_a: str | Path, run_b: str | Path, *, n_boot: int = 2000, seed: int = 0, top: int = 5
) -> list[dict[str, Any]]:
    """Per (metric, backend) in either run: n paired, mean A, mean B (over the paired
    samples), Δ = mean(B − A), its bootstrap CI, the ``top`` samples that moved most, and
    ``notes`` for every ``"undefined"``."""
    va, vb = _values(Path(run_a)), _values(Path(run_b))
    keys = list(va) + [k for k in vb if k not in va]  # metrics of either run; unpaired ones say so
    return [_paired_row(m, be, va.get((m, be), {}), vb.get((m, be), {}), n_boot, seed, top) for m, be in keys]


def format_diff(rows: list[dict[str, Any]]) -> Any:
    """A rich Table of ``diff_runs`` rows (Δ with CI; ✱ marks a CI that excludes 0)."""
    from rich.table import Table

    t = Table(title="B − A per metric and backend (paired samples; 95% bootstrap CI)")
    for col in ("metric", "backend", "n", "mean A", "mean B", "Δ", "95% CI", "moved most"):
        t.add_column(col, justify="left" if col in ("metric", "backend", "moved most") else "right")
    for r in rows:
        if is_undefined(r["delta"]):
            t.add_row(
                r["metric"],
                r["backend"],
                "0",
                "—",
                "—",
                "—",
                "—",
                f"no paired samples (only A {r['only_a']}, only B {r['only_b']})",
            )
            continue
        ci = None if is_undefined(r["ci95"]) else r["ci95"]
        sig = ci is not None and (ci[0] > 0 or ci[1] < 0)
        movers = ", ".join(f"{m['sample_id']} {m['delta']:+.1f}" for m in r["movers"][:3])
        t.add_row(
            r["metric"],
            r["backend"],
            str(r["n_paired"]),
            f"{r['mean_a']:.2f}",
            f"{r['mean_b']:.2f}",
            f"{r['delta']:+.2f}{' ✱' if sig else ''}",
            "—" if ci is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]",
            movers,
        )
    return t
