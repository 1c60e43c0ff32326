"""Everything the HTML page shows, computed once from the report model: aggregates, money,
pair statistics, disagreements, error and degraded groups and the drill-down's samples and lines.

Reads: the model (one pass over the score lines, already made), one pass over the samples
for the drill-down's ids, and the few score lines the page shows in full, by position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from unified.analysis.errorgroups import group_errors
from unified.report import agreement
from unified.report.model import RunModel
from unified.run.runfolder import SAMPLES_FILE, parse_line
from unified.scores import Aggregate

if TYPE_CHECKING:
    from unified.report.core import Report

DISAGREEMENTS_PER_METRIC = 5


@dataclass
class View:
    model: RunModel
    title: str
    aggregates: list[Aggregate]
    money: dict[tuple[str, str], tuple[float, int]]  # (metric, backend) -> (usd, tasks priced)
    pairs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    error_groups: list[dict[str, Any]] = field(default_factory=list)
    degraded_groups: list[dict[str, Any]] = field(default_factory=list)
    drill: list[str] = field(default_factory=list)
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    n_samples: int = 0
    lines: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def multi(self) -> bool:
        return len(self.model.backends) >= 2

    def line(self, metric: str, backend: str, sample_id: str) -> dict[str, Any] | None:
        t = self.model.task(metric, backend, sample_id)
        return None if t is None else self.lines.get(t.pos)


def money(model: RunModel) -> dict[tuple[str, str], tuple[float, int]]:
    """Σ cost.usd per (metric, backend) over the tasks that carry a price, and how many do
    (none: the run had no price table, and the page shows tokens only)."""
    out: dict[tuple[str, str], tuple[float, int]] = {}
    for m in model.metrics:  # iter_tasks' order: the same sums
        for b in model.backends:
            col = model.tasks.get(m, {}).get(b)
            priced = None if col is None else col.priced()
            if priced is not None and priced[1]:
                out[(m, b)] = priced
    for (_sid, m, b), t in model.row_tasks.items():
        if t.usd is not None:
            total, n = out.get((m, b), (0.0, 0))
            out[(m, b)] = (total + t.usd, n + 1)
    return out


def _pick_samples(
    report: "Report", model: RunModel, wanted: list[str], max_drilldown: int
) -> tuple[list[str], dict[str, dict[str, Any]], int]:
    """The drill-down: the disagreeing samples first, then the first ``max_drilldown`` in
    run order (samples.jsonl; the scores' order when there are no samples), with their
    sample dicts and the total sample count — one pass over the samples."""
    want = set(wanted)
    first: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    n = 0
    for d in _samples_for_page(report, want, max_drilldown):
        n += 1
        if d is None:  # a sample past the first ones and not wanted: counted, never parsed
            continue
        if len(first) < max_drilldown:
            first.append(d["id"])
            found[d["id"]] = d
        elif d["id"] in want:
            found[d["id"]] = d
    if n == 0:
        ids = dict.fromkeys(sid for per_b in model.tasks.values() for s in per_b.values() for sid in s)
        first = list(ids)[:max_drilldown]
        n = len(ids)
    return list(dict.fromkeys(wanted + first)), found, n


def _samples_for_page(report: "Report", want: set[str], max_drilldown: int) -> Iterator[dict[str, Any] | None]:
    """Every sample in run order: parsed while the drill-down fills, then only the lines
    that can be a wanted sample (its JSON-encoded id appears in the line) — None for the
    rest, so a million-sample folder costs one byte search per line, not one parse."""
    path = report.run_dir / SAMPLES_FILE if report.run_dir is not None and report.samples_given() is None else None
    if path is None or not path.exists():
        yield from report.iter_samples()
        return
    # the id as JSON escapes it, and as it is (a writer escaping otherwise still matches)
    needles = [json.dumps(i, ensure_ascii=False).encode()[1:-1] for i in want] + [
        i.encode(errors="surrogatepass") for i in want
    ]
    parsed = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.strip():
                continue
            if parsed >= max_drilldown and not any(x in raw for x in needles):
                yield None
                continue
            d = parse_line(raw)  # None for a torn last line (a killed run): not a sample
            if isinstance(d, dict) and "id" in d:
                parsed += 1
                yield d


def build_view(report: "Report", max_drilldown: int = 200) -> View:
    model = report.model()
    name = report.run_dir.name if report.run_dir is not None else "in-memory run"
    view = View(model=model, title=f"unified-eval report — {name}", aggregates=model.aggregates(), money=money(model))
    if view.multi:
        for m in model.metrics:
            view.pairs[m] = agreement.pairs(model, m)
            view.disagreements += agreement.disagreements(model, m, DISAGREEMENTS_PER_METRIC)
    view.error_groups = group_errors(model.failed())
    view.degraded_groups = group_errors(model.degraded())
    wanted = list(dict.fromkeys(r["sample_id"] for r in view.disagreements))
    view.drill, view.samples, view.n_samples = _pick_samples(report, model, wanted, max_drilldown)
    positions = [  # the drill-down's tasks, in its order (a list: no hash-seeded order)
        t.pos
        for per_b in model.tasks.values()
        for s in per_b.values()
        for sid in dict.fromkeys(view.drill)
        if (t := s.get(sid)) is not None
    ]
    view.lines = report.source().fetch(positions)
    return view
