"""Who disagrees, where, and why: agreement between backends computed on the report model.

The statistics are ``unified.analysis.crosscheck``'s (``pair_stats``, ``undefined_reason``), fed
from the model's light records, so the page and ``crosscheck.json`` report the same
numbers; only the notes are worded with the backends' names ("ragas has a single distinct
value", not "b has …").

Odd one out. For a sample scored by k ≥ 3 backends with values vᵢ (0–10), backend j is
the odd one out when it stands apart from all the others by more than they spread:

    gapⱼ    = min over i ≠ j of |vⱼ − vᵢ|       (distance to the nearest other backend)
    spreadⱼ = max over i ≠ j of vᵢ − min over i ≠ j of vᵢ
    odd     = j  with  gapⱼ > spreadⱼ  and  gapⱼ ≥ 1  (a tenth of the scale)

At most one backend can satisfy it (any other backend's own spread includes j). With two
backends nobody is singled out: either could be the one that is wrong.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from unified.analysis.crosscheck import MIN_N, pair_stats, undefined_reason
from unified.analysis.jury import JURY
from unified.analysis.verdict import backend_threshold
from unified.report.model import RunModel

ODD_MIN_GAP = 1.0


def threshold_of(model: RunModel, metric: str, backend: str) -> float:
    """The pass bound a backend used: its tasks' own, else the metric's (the one rule of
    ``unified.analysis.verdict.backend_threshold``, as ``crosscheck`` applies it)."""
    return backend_threshold(metric, model.tasks.get(metric, {}).get(backend, {}).values())


def pair_notes(a: str, b: str, va: list[float], vb: list[float], ta: float, tb: float) -> list[str]:
    """Why a pair statistic is undefined, naming the backends."""
    if len(va) < MIN_N:
        return [f"every statistic undefined: n={len(va)} < {MIN_N} samples scored by both"]
    notes = []
    why = undefined_reason(va, vb, (a, b))
    if why:
        notes.append(f"pearson/spearman undefined: {why}")
    why = undefined_reason([v >= ta for v in va], [v >= tb for v in vb], (a, b))
    if why:
        notes.append(f"cohen_kappa undefined: pass/fail of {why} (threshold {a}={ta:g}, {b}={tb:g})")
    return notes


def pairs(model: RunModel, metric: str) -> list[dict[str, Any]]:
    """``pair_stats`` for every pair of backends that scored ``metric``, in backend order,
    with ``a``, ``b``, ``excluded`` (samples either side failed), the points of the
    scatter plot (``xs``, ``ys``) and notes that name the backends. The jury is left out:
    a run pools it from every other backend of the run, so it would only be paired with
    its own members (it has its own section)."""
    per_b = model.tasks.get(metric, {})
    backends = [b for b in model.backends if b in per_b and b != JURY]
    out = []
    for a, b in combinations(backends, 2):
        common = [sid for sid in per_b[a] if sid in per_b[b]]
        ok = [sid for sid in common if per_b[a][sid].ok and per_b[b][sid].ok]
        va = [float(per_b[a][sid].value) for sid in ok]  # type: ignore[arg-type]
        vb = [float(per_b[b][sid].value) for sid in ok]  # type: ignore[arg-type]
        ta, tb = threshold_of(model, metric, a), threshold_of(model, metric, b)
        st = pair_stats(va, vb, ta, tb)
        st.update(a=a, b=b, excluded=len(common) - len(ok), xs=va, ys=vb, notes=pair_notes(a, b, va, vb, ta, tb))
        out.append(st)
    return out


def odd_one_out(values: dict[str, float]) -> str | None:
    """The backend that stands against all the others (module docstring), or None."""
    if len(values) < 3:
        return None
    for j, vj in values.items():
        others = [v for b, v in values.items() if b != j]
        gap = min(abs(vj - v) for v in others)
        if gap > max(others) - min(others) and gap >= ODD_MIN_GAP:
            return j
    return None


def disagreements(model: RunModel, metric: str, top: int = 5) -> list[dict[str, Any]]:
    """The ``top`` samples of ``metric`` whose backends differ most (|Δ| = max − min of
    the successful values; ties by sample id), each with its values, the odd one out and
    the task positions of every backend's line (for its reason)."""
    per_b = model.tasks.get(metric, {})
    backends = [b for b in model.backends if b in per_b]
    if len(backends) < 2:
        return []
    rows: list[dict[str, Any]] = []
    ids = dict.fromkeys(sid for b in backends for sid in per_b[b])
    for sid in ids:
        tasks = {b: per_b[b][sid] for b in backends if sid in per_b[b]}
        vals = {b: float(t.value) for b, t in tasks.items() if t.ok}  # type: ignore[arg-type]
        if len(vals) < 2:
            continue
        diff = max(vals.values()) - min(vals.values())
        if diff <= 0:
            continue
        rows.append(
            {"metric": metric, "sample_id": sid, "diff": diff, "values": vals, "tasks": tasks, "odd": odd_one_out(vals)}
        )
    rows.sort(key=lambda r: (-float(r["diff"]), str(r["sample_id"])))
    return rows[:top]
