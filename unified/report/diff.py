"""The paired diff of two runs with a bootstrap confidence interval.

Diff of runs A and B, per (metric, backend), over the samples both scored without error
(paired by sample id)::

    d_i = value_B(i) − value_A(i),   Δ = mean(d)
    95 % CI: percentiles 2.5 and 97.5 of mean(d*) over ``n_boot`` resamples d* of d drawn
    with replacement (``unified.analysis.stats.bootstrap_ci``, the one bootstrap: seeded, so the
    same runs always give the same interval).

    p: two-sided paired sign-flip test of mean(d) = 0 (``unified.analysis.stats.sign_flip_p``),
       then Holm-adjusted over every (metric, backend) row of the diff (``stats.holm``):
       the family-wise error stays ≤ α however many metrics are compared
    n for 80 % power: ⌈((z_{0.975} + z_{0.8}) · s_d / |Δ|)²⌉ (``stats.n_for_power``): the
       paired samples a rerun needs to detect a difference as large as the observed one

Configuration first: before any number, ``config_differences`` names what differs between
the runs' configurations of each (metric, backend) — judge endpoint, model, sampling,
backend, framework version, repeats — from their manifests (``run.json``). A Δ between
two judges is a comparison of judges, not a regression; a Δ of 0 between two runs that
used different judges and the same cache is worth a second look.

Pairing removes between-sample variance: a small real change shows up even when the
per-run spreads are wide. A figure that cannot be computed (no paired sample; one paired
sample for the interval) is ``"undefined"`` with the reason in the row's ``notes``, as
everywhere (``unified.analysis.stats``). The gates (``--fail-under``) are
``unified.analysis.gates``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from unified.analysis.configdiff import diff_configs
from unified.analysis.stats import (
    Undefined,
    bootstrap_ci,
    holm,
    is_undefined,
    n_for_power,
    note_undefined,
    sign_flip_p,
)
from unified.report.core import Report
from unified.run.runfolder import MANIFEST_FILE
from unified.scores import is_ok

__all__ = ["config_differences", "describe_config_changes", "diff_runs", "format_diff", "unpaired_note"]


# ---------------------------------------------------------------- diff

Values = dict[tuple[str, str], dict[str, tuple[float | None, str | None]]]


def _values(run_dir: Path) -> Values:
    """(metric, backend) -> sample id -> (value or None when failed, sample hash)."""
    out: Values = {}
    for d in Report.from_dir(run_dir).iter_score_fields(("value", "error", "sample_hash", "row_error")):
        if d.get("row_error"):
            continue  # an input row that never became a sample has nothing to pair
        ok = is_ok(d.get("error"), d.get("value"))
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
    if unverified := sum(1 for s in paired if not (a_in[s][1] and b_in[s][1])):
        notes.append(
            f"{unverified} pair(s) matched by sample id only: a run without content hashes "
            "(an older run) cannot show that the sample is the same in both"
        )
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
        row.update(mean_a=why, mean_b=why, delta=why, ci95=why, p=why, n_for_80_power=why, movers=[], notes=notes)
        return row
    row["mean_a"] = float(np.mean([a[s] for s in paired]))
    row["mean_b"] = float(np.mean([b[s] for s in paired]))
    row["delta"] = float(np.mean(diffs))
    ci = bootstrap_ci(np.mean, diffs, n=n_boot, seed=seed)
    row["ci95"] = note_undefined(notes, "ci95", ci if is_undefined(ci) else list(ci))
    row["p"] = note_undefined(notes, "p", sign_flip_p(diffs, seed=seed))
    row["n_for_80_power"] = note_undefined(notes, "n_for_80_power", n_for_power(diffs))
    # a sample that did not move is no "mover" (a rerun on the cache moves nothing)
    movers = sorted(((s, d) for s, d in zip(paired, diffs) if d != 0), key=lambda t: (-abs(t[1]), t[0]))[:top]
    row["movers"] = [{"sample_id": s, "a": a[s], "b": b[s], "delta": d} for s, d in movers]
    row["notes"] = notes
    return row


def diff_runs(
    run_a: str | Path, run_b: str | Path, *, n_boot: int = 2000, seed: int = 0, top: int = 5
) -> list[dict[str, Any]]:
    """Per (metric, backend) in either run: ``config_changes`` (what differs in its
    configuration, ``config_differences``), n paired, mean A, mean B (over the paired
    samples), Δ = mean(B − A), its bootstrap CI, ``p`` and ``p_holm`` (sign-flip test,
    Holm-adjusted over the rows), ``n_for_80_power``, the ``top`` samples that moved most,
    and ``notes`` for every ``"undefined"``. A folder that does not exist is a
    ``FileNotFoundError`` saying so."""
    a_dir, b_dir = _existing(run_a), _existing(run_b)
    va, vb = _values(a_dir), _values(b_dir)
    changes = config_differences(a_dir, b_dir)
    keys = _table_order(list(va) + [k for k in vb if k not in va])  # either run's; unpaired ones say so
    rows = [_paired_row(m, be, va.get((m, be), {}), vb.get((m, be), {}), n_boot, seed, top) for m, be in keys]
    for r, adjusted in zip(rows, holm([r["p"] for r in rows])):
        r["p_holm"] = adjusted
        r["config_changes"] = changes.get((r["metric"], r["backend"]), changes.get(ANY_PAIR, []))
    return rows


def _table_order(keys: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(metric, backend) pairs in the report's one stable order: metrics by
    ``metric_order`` (registry order, cutoff and parameters breaking ties), backends as
    first seen — not in the order the lines happened to be written."""
    from unified.report.model import metric_order

    rank = {m: i for i, m in enumerate(metric_order(list(dict.fromkeys(m for m, _ in keys))))}
    seen = {b: i for i, b in enumerate(dict.fromkeys(b for _, b in keys))}
    return sorted(keys, key=lambda k: (rank[k[0]], seen[k[1]]))


ANY_PAIR = ("*", "*")


def _existing(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p} does not exist")
    if not p.is_dir():
        raise FileNotFoundError(f"{p} is not a run folder (a file, not a folder)")
    return p


def _manifest(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def config_differences(run_a: str | Path, run_b: str | Path) -> dict[tuple[str, str], list[str]]:
    """{(metric, backend): ["judge.model: a → b", …]} for every pair both runs' manifests
    name with different configurations (``unified.analysis.configdiff.diff_configs``), and
    ``{ANY_PAIR: ["configuration unknown: A has no run.json"]}`` when a manifest is missing. Pairs in
    one run only are not listed (their rows say "no paired samples")."""
    ma, mb = _manifest(Path(run_a)), _manifest(Path(run_b))
    missing = [f"configuration unknown: {n} has no {MANIFEST_FILE}" for n, m in (("A", ma), ("B", mb)) if not m]
    if missing:  # nothing to compare: every pair says so
        return {ANY_PAIR: missing}
    pa, pb = ma.get("pairs") or {}, mb.get("pairs") or {}
    out: dict[tuple[str, str], list[str]] = {}
    for pair in list(pa) + [p for p in pb if p not in pa]:
        metric, _, backend = pair.partition("|")
        ha, hb = pa.get(pair), pb.get(pair)
        if ha is None or hb is None or ha == hb:
            continue
        ca, cb = (ma.get("configs") or {}).get(ha), (mb.get("configs") or {}).get(hb)
        out[(metric, backend)] = diff_configs(ca, cb) if ca and cb else ["configuration (not recorded)"]
    return out


def unpaired_note(row: dict[str, Any]) -> str | None:
    """What a diff row's n leaves out, in one line, or None when every sample of either
    run is paired: samples failed in either run, scored by one run only, or whose content
    changed. The row's means and Δ cover its paired samples only, so a run that failed
    on a third of them can show Δ = 0 — the line says so."""
    parts = [
        f"{n} {what}"
        for n, what in (
            (row.get("failed"), "failed in either run"),
            (row.get("only_a"), "only in A"),
            (row.get("only_b"), "only in B"),
            (row.get("changed"), "sample(s) changed content between the runs"),
        )
        if n
    ]
    if not parts:
        return None
    return (
        f"{row['metric']} ({row['backend']}): {', '.join(parts)}: not compared; "
        f"n, the means and Δ cover the {row['n_paired']} paired sample(s)"
    )


def describe_config_changes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per distinct change, naming the (metric, backend) pairs it concerns:
    ``judge.model: judge-A → judge-B — faithfulness (native), answer_relevancy (native)``."""
    by_change: dict[str, list[str]] = {}
    for r in rows:
        for c in r.get("config_changes", []):
            by_change.setdefault(c, []).append(f"{r['metric']} ({r['backend']})")
    return [f"{c} — {', '.join(pairs)}" for c, pairs in by_change.items()]


def _p_text(p: Any) -> str:
    return "—" if is_undefined(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")


def format_diff(rows: list[dict[str, Any]]) -> Any:
    """A rich Table of ``diff_runs`` rows: Δ with its bootstrap CI (✱: the Holm-adjusted p
    is below 0.05), p after Holm, and the samples a rerun needs for 80 % power."""
    from rich.table import Table

    t = Table(title="B − A per metric and backend (paired samples; 95% bootstrap CI; p: sign-flip test, Holm-adjusted)")
    cols = ("metric", "backend", "n", "mean A", "mean B", "Δ", "95% CI", "p (Holm)", "n for 80% power", "moved most")
    for col in cols:
        t.add_column(col, justify="left" if col in ("metric", "backend", "moved most") else "right")
    for r in rows:
        if is_undefined(r["delta"]):
            why = f"no paired samples (only A {r['only_a']}, only B {r['only_b']})"
            t.add_row(r["metric"], r["backend"], "0", "—", "—", "—", "—", "—", "—", why)
            continue
        ci = None if is_undefined(r["ci95"]) else r["ci95"]
        sig = not is_undefined(r["p_holm"]) and r["p_holm"] < 0.05
        movers = ", ".join(f"{m['sample_id']} {m['delta']:+.1f}" for m in r["movers"][:3])
        need = r["n_for_80_power"]
        t.add_row(
            r["metric"],
            r["backend"],
            str(r["n_paired"]),
            f"{r['mean_a']:.2f}",
            f"{r['mean_b']:.2f}",
            f"{r['delta']:+.2f}{' ✱' if sig else ''}",
            "—" if ci is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]",
            _p_text(r["p_holm"]),
            "—" if is_undefined(need) else f"{int(need)}",
            movers,
        )
    return t
