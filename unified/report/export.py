"""A run folder's per-sample scores as a file another tool reads, and the worst samples.

``export_scores(report, path, fmt)`` writes one row per task (``Report.to_pandas``: metric,
backend, sample_id, value, raw, threshold, passed, reason, error, row, …, cost_*) with the
sample's question, response and reference, as CSV, Parquet or JSON Lines. ``details`` (a
dict per task: the judges' claims, verdicts, …) is written as JSON text in CSV and Parquet,
never as a Python repr (``{'a': 1}`` is no format any other tool reads); JSON Lines keeps it
an object. A CSV cell that a spreadsheet would run as a formula (``=…``, ``+…``) is written
neutralised, as ``convert`` writes them.

``worst_samples(report, n)`` is, per (metric, backend), the ``n`` scored tasks with the
lowest value (ties by sample id), then the failed tasks are counted, not ranked: a failure
has no value to be worst by.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

EXPORT_FORMATS = ("csv", "parquet", "jsonl")


def export_frame(report: Any) -> Any:
    """The per-task table with the sample's text and ``details`` as JSON text."""
    df = report.to_pandas(samples=True)
    if "details" in df.columns:
        df["details"] = [json.dumps(d or {}, ensure_ascii=False, sort_keys=True, default=str) for d in df["details"]]
    return df


def export_scores(report: Any, path: Path, fmt: str | None = None) -> tuple[Path, int]:
    """Write the per-task table to ``path`` (``fmt`` from its suffix when None); returns
    (path, rows). Written through a temporary file and a rename, so a failed export leaves
    no half file."""
    from unified.data.cells import neutralise_formula
    from unified.data.files import atomic_path

    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"--format {fmt or '(none)'}: choose one of {', '.join(EXPORT_FORMATS)}")
    df = export_frame(report)
    with atomic_path(path) as tmp:
        if fmt == "csv":
            safe = df.copy()
            for c in safe.columns:  # any column that holds text (object or pandas' string dtype)
                if any(isinstance(v, str) for v in safe[c]):
                    safe[c] = [neutralise_formula(v) if isinstance(v, str) else v for v in safe[c]]
            safe.to_csv(tmp, index=False)
        elif fmt == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            df["details"] = [json.loads(d) for d in df["details"]]
            df.to_json(tmp, orient="records", lines=True, force_ascii=False)
    return path, len(df)


def worst_samples(report: Any, n: int) -> list[dict[str, Any]]:
    """Per (metric, backend) in the report's order: ``metric``, ``backend``, ``worst`` (the
    ``n`` lowest values: sample_id, row, value, threshold, passed, reason) and ``failed``
    (tasks with no value)."""
    df = report.to_pandas()
    out = []
    for (metric, backend), g in df.groupby(["metric", "backend"], sort=False):
        scored = g[g["value"].notna()].sort_values(["value", "sample_id"], kind="mergesort")
        rows = [
            {k: _plain(r[k]) for k in ("sample_id", "row", "value", "threshold", "passed", "reason")}
            for _, r in scored.head(n).iterrows()
        ]
        out.append({"metric": metric, "backend": backend, "worst": rows, "failed": int(g["value"].isna().sum())})
    return out


def _plain(v: Any) -> Any:
    """numpy scalars and NaN as plain Python (None for a missing value)."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v


def input_name(report: Any) -> str | None:
    """The input file a run read, as ``summary.json`` names it; None when it was no file
    (a DataFrame, a list: ``config.source`` is then a type name without a suffix)."""
    source = (report.run_summary().get("config") or {}).get("source")
    return source if isinstance(source, str) and Path(source).suffix else None


def print_worst(groups: list[dict[str, Any]], source: str | None = None, width: int = 70) -> None:
    """The worst samples as one table per (metric, backend) on stdout."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from unified.console import console_width

    console = Console(width=console_width(sys.stdout))
    for g in groups:
        t = Table(title=f"{g['metric']} ({g['backend']}) — lowest {len(g['worst'])}", title_justify="left")
        for col in ("row", "sample", "value", "pass ≥", "reason"):
            t.add_column(col, overflow="fold")
        for r in g["worst"]:
            place = f"{source}:{r['row']}" if source and r["row"] is not None else str(r["row"] or "—")
            t.add_row(
                place,
                Text(str(r["sample_id"])),
                f"{r['value']:.2f}",
                "—" if r["threshold"] is None else f"{r['threshold']:g}",
                Text((r["reason"] or "")[:width]),
            )
        if g["failed"]:
            t.caption = f"{g['failed']} failed task(s) not ranked (no value)"
        console.print(t)
