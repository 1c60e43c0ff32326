"""The benchmark table as printed: one row per (set, metric, backend), best AUC first, the
winner of a set starred only where the paired interval clears the runner-up; a pair that
cannot be measured shows its one-line note instead of numbers; then the averages over sets
and how the dev split is made."""

from __future__ import annotations

from typing import Any

from rich.table import Table

HEAD = (
    "set",
    "metric",
    "backend",
    "n",
    "AUC [95% CI]",
    "BA@bound",
    "BA@tuned",
    "ECE cal",
    "failed",
    "calls",
    "tokens in/out",
    "USD",
    "s/sample",
)


def _f(v: Any, digits: int = 3) -> str:
    if isinstance(v, bool) or v is None:
        return "—"
    if isinstance(v, (int, float)):
        return f"{v:.{digits}f}"
    return "—"  # undefined: its reason is in benchmark.json


def _auc(e: dict[str, Any]) -> str:
    ci = e.get("auc_ci")
    if isinstance(e.get("auc"), str):  # undefined: say why (constant scores, ...)
        return f"— ({e.get('auc_why') or e['auc']})"
    shown = _f(e.get("auc"))
    if isinstance(ci, list) and len(ci) == 2:
        shown += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return shown + (" ★" if e.get("winner") else "")


def _usd(v: Any) -> str:
    return "?" if v is None else f"{v:.4f}"


def row(e: dict[str, Any]) -> list[str]:
    """One printed row of an entry of ``benchmark.json``."""
    cost = [
        str(e.get("judge_calls", 0)),
        f"{e.get('input_tokens', 0)}/{e.get('output_tokens', 0)}",
        _usd(e.get("usd")),
        _f(e.get("seconds_per_sample"), 2),
    ]
    failed = _f(e.get("failed"), 2)
    if "note" in e:
        return [e["set"], e["metric"], e["backend"], str(e.get("n", 0)), e["note"], "", "", "", failed, *cost]
    return [
        e["set"],
        e["metric"],
        e["backend"],
        str(e["n"]),
        _auc(e),
        _f(e.get("ba_default")),
        _f(e.get("ba_tuned")),
        _f(e.get("ece")),
        failed,
        *cost,
    ]


def render(table: dict[str, Any]) -> list[Any]:
    """What to print: the per-set table, the averages, the split and the notes."""
    per_set = Table(title="agreement with people, per set (★: the interval of its AUC gap to the runner-up excludes 0)")
    for i, h in enumerate(HEAD):
        per_set.add_column(h, justify="left" if i < 3 else "right", overflow="fold")
    for e in table.get("entries", []):
        per_set.add_row(*row(e))
    avg = Table(title="average over sets (unweighted; sets counted where defined)")
    for h in ("metric", "backend", "AUC", "BA@bound", "BA@tuned", "ECE cal", "failed", "sets"):
        avg.add_column(h, justify="right" if h not in ("metric", "backend") else "left")
    for a in table.get("averages", []):
        avg.add_row(
            a["metric"],
            a["backend"],
            _f(a.get("auc")),
            _f(a.get("ba_default")),
            _f(a.get("ba_tuned")),
            _f(a.get("ece")),
            _f(a.get("failed"), 2),
            str(a.get("auc_sets", 0)),
        )
    lines: list[Any] = [per_set, leaderboard(table), avg, f"BA@tuned: {table.get('split', '')}"]
    if isinstance(table.get("wall_seconds"), (int, float)):  # backends run side by side: the run's wall
        lines.append(
            f"wall: {table['wall_seconds']:.1f} s for {table.get('samples')} rows "
            f"({_f(table.get('wall_per_sample'), 2)} s per row; s/sample above is task time, which overlaps)"
        )
    return lines + [f"note: {n}" for n in table.get("notes", [])]


def leaderboard(table: dict[str, Any], key: str = "ba_tuned") -> Table:
    """LLM-AggreFact's layout: one row per (backend, metric), one column per set, then the
    average — here balanced accuracy at the tuned bound (``—`` where a set has none)."""
    entries = table.get("entries", [])
    sets = sorted({e["set"] for e in entries})
    cell = {(e["backend"], e["metric"], e["set"]): e.get(key) for e in entries}
    titles = {"ba_tuned": "balanced accuracy at the tuned bound", "auc": "ROC AUC"}
    board = Table(title=f"{titles.get(key, key)} per set (LLM-AggreFact layout)")
    for h in ("metric", "backend", *sets, "avg"):
        board.add_column(h, justify="left" if h in ("metric", "backend") else "right", overflow="fold")
    for a in table.get("averages", []):
        row = [_f(cell.get((a["backend"], a["metric"], s))) for s in sets]
        board.add_row(a["metric"], a["backend"], *row, _f(a.get(key)))
    return board
