"""The report model: a run's tasks read in one pass, light enough for a 100k-sample run.

``build_model`` reads the score lines once and keeps, per task, what a ``Task`` holds:
value, verdict, error, threshold, cost in money and the position of the line it came
from — never the Score itself — in typed arrays per (metric, backend)
(``unified.report.columns``: about 33 bytes a task, each sample id once). Reasons and judges' details are fetched by position for the few
tasks a page shows (``ScoreSource.fetch``).

Last wins (CONTRACTS.md): the task key is (row_error, sample_id, metric, backend); a later
line for the same key replaces the earlier one, so a folder read after a kill -9 or two
writers never counts a task twice. Lines with ``row_error`` are input rows that never
became samples: they live in ``RunModel.row_tasks`` and are never joined to a sample.

Order (one order on every table and plot): metrics as the user asked for them
(``summary.json`` ``config.metrics``, else first seen), then the rest in registry order;
backends as asked, then first seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from unified.report.columns import SampleIds, Task, TaskColumn, cost_of
from unified.run import columnar
from unified.run.runfolder import iter_lines
from unified.scores import (
    Aggregate,
    Cost,
    RunningAggregates,
    Score,
    degraded_reason,
    full_line,
    invalid_line,
    line_problem,
    value_problem,
)

COST_FIELDS = tuple(Cost.model_fields)
_NO_COST = tuple(Cost().model_dump().values())  # a task that cost nothing: adds nothing to a sum


@dataclass
class RunModel:
    """Every task of a run, deduplicated, with the run's stable metric/backend order.

    ``tasks[metric][backend][sample_id]``: sample tasks. ``row_tasks[(sample_id, metric,
    backend)]``: input-row failures. ``superseded``: lines replaced by a later line for
    the same key; ``unreadable``: lines skipped as torn or not JSON.
    """

    tasks: dict[str, dict[str, TaskColumn]] = field(default_factory=dict)
    row_tasks: dict[tuple[str, str, str], Task] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    superseded: int = 0
    unreadable: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    written: dict[tuple[str, str], None] = field(default_factory=dict)  # (metric, backend) as first written
    seen: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))  # metrics, backends as first read
    ids: SampleIds = field(default_factory=SampleIds)  # every sample id once, for the columns
    # aggregates() by (stable, metrics, backends): the sums over every task, done once
    _aggregates: dict[tuple[bool | None, tuple[str, ...], tuple[str, ...]], list[Aggregate]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def column(self, metric: str, backend: str) -> TaskColumn:
        """The tasks of (metric, backend), created empty on first use."""
        per_b = self.tasks.setdefault(metric, {})
        col = per_b.get(backend)
        if col is None:
            col = per_b[backend] = TaskColumn(self.ids, _NO_COST)
        return col

    def task(self, metric: str, backend: str, sample_id: str) -> Task | None:
        """The task of (metric, backend, sample), or None when the run has no such task."""
        col = self.tasks.get(metric, {}).get(backend)
        return None if col is None else col.get(sample_id)

    def iter_tasks(self) -> Iterator[tuple[str, str, str, Task, bool]]:
        """(metric, backend, sample_id, task, is_row_error) for every task, in order."""
        for m in self.metrics:
            for b in self.backends:
                for sid, t in self.tasks.get(m, {}).get(b, {}).items():
                    yield m, b, sid, t, False
        for (sid, m, b), t in self.row_tasks.items():
            yield m, b, sid, t, True

    def positions(self) -> set[int]:
        """Positions of the winning lines (one per task key)."""
        return {t.pos for *_, t, _ in self.iter_tasks()}

    def aggregates(self, stable: bool = True) -> list[Aggregate]:
        """One Aggregate per (metric, backend) — in the stable order, or (``stable=False``)
        in the order the lines were first written, as the runner's ``RunningAggregates``
        lists them. Row-error lines count as failed tasks of their (metric, backend), as
        the runner counts them.

        Kept per (order, metric and backend order): the model's tasks do not change once
        built, and the end of a run asks for the same list three to four times (the table,
        ``index.json`` both ways, the caller); each is a fresh copy."""
        key = (stable, tuple(self.metrics), tuple(self.backends))
        if key not in self._aggregates:
            self._aggregates[key] = self._ordered(self._aggregate(), stable)
        return [a.model_copy(deep=True) for a in self._aggregates[key]]

    def _ordered(self, results: list[Aggregate], stable: bool) -> list[Aggregate]:
        pairs = [(m, b) for m in self.metrics for b in self.backends] if stable else list(self.written)
        order = {p: i for i, p in enumerate(pairs)}
        return sorted(results, key=lambda a: order.get((a.metric, a.backend), len(order)))

    def _aggregate(self) -> list[Aggregate]:
        """The aggregates in the sums' order, computed once per metric and backend order
        (both orders of ``aggregates`` sort the same sums)."""
        key = (None, tuple(self.metrics), tuple(self.backends))
        if key in self._aggregates:
            return self._aggregates[key]
        acc = RunningAggregates()
        for m in self.metrics:  # the order of iter_tasks: every sum adds in the same order
            for b in self.backends:
                col = self.tasks.get(m, {}).get(b)
                for value, passed, cost in col.outcomes() if col is not None else ():
                    # a zero cost (every deterministic task) is the sum's identity: no Cost is built
                    acc.add_value(m, b, value, passed, None if cost is None else cost_of(cost))
        for (_sid, m, b), t in self.row_tasks.items():
            acc.add_value(m, b, t.value if t.ok else None, t.passed, None if t.cost == _NO_COST else t.cost_model())
        self._aggregates[key] = acc.results()
        return self._aggregates[key]

    def values(self, metric: str, backend: str) -> dict[str, float]:
        """sample_id -> 0–10 value of the successful tasks of (metric, backend)."""
        col = self.tasks.get(metric, {}).get(backend)
        return {} if col is None else col.ok_values()

    def n_tasks(self) -> int:
        return sum(len(s) for per_b in self.tasks.values() for s in per_b.values()) + len(self.row_tasks)

    def _some_tasks(self, which: str) -> Iterator[tuple[str, str, str, Task, bool]]:
        """``iter_tasks()`` restricted to the columns' ``failed_items`` or
        ``degraded_items`` (the same order; the row-error tasks are few and all read)."""
        for m in self.metrics:
            for b in self.backends:
                col = self.tasks.get(m, {}).get(b)
                for sid, t in getattr(col, which)() if col is not None else ():
                    yield m, b, sid, t, False
        for (sid, m, b), t in self.row_tasks.items():
            yield m, b, sid, t, True

    def failed(self) -> Iterator[dict[str, Any]]:
        """Failed tasks as small dicts (sample_id, metric, backend, error, row_error, pos: the
        line's position in its source, for ``ScoreSource.fetch``)."""
        for m, b, sid, t, row in self._some_tasks("failed_items"):
            if not t.ok:
                yield {
                    "sample_id": sid,
                    "metric": m,
                    "backend": b,
                    "error": t.error or "no value",
                    "row_error": row,
                    "pos": t.pos,
                }

    def degraded(self) -> Iterator[dict[str, Any]]:
        """Degraded tasks (a value, from fewer judges than asked) in ``failed()``'s shape,
        the reason as the error, so they group the same way."""
        for m, b, sid, t, row in self._some_tasks("degraded_items"):
            if t.ok and t.degraded is not None:
                yield {"sample_id": sid, "metric": m, "backend": b, "error": t.degraded, "row_error": row, "pos": t.pos}


# ---------------------------------------------------------------- sources


class ScoreSource:
    """Where score lines come from: ``lines()`` yields (position, dict) in order,
    ``fetch(positions)`` returns the full dicts of a few lines by position."""

    def lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        raise NotImplementedError

    def fetch(self, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
        raise NotImplementedError

    def model_lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """What ``build_model`` reads: (position, a dict with at least the fields
        ``task_of`` uses, as ``lines()`` gives them). A source may give less than the
        whole line (``ParquetSource`` reads only those columns)."""
        return self.lines()

    def field_lines(self, fields: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(position, a dict with at least the task key and ``fields``, as ``lines()``
        gives them, the 0–10 rule applied). A source may give only those."""
        return self.lines()


class FileSource(ScoreSource):
    """``scores.jsonl``; a position is the byte offset of a line. A torn or non-JSON line
    (a killed run; the runner repairs it on resume) is skipped and counted."""

    def __init__(self, path: Path):
        self.path = path
        self.unreadable = 0

    def lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self.unreadable = 0
        if not self.path.exists():
            return
        pos = 0
        with open(self.path, "rb") as f:
            for raw in f:
                at, pos = pos, pos + len(raw)
                d = _parse(raw)
                if d is None:
                    self.unreadable += bool(raw.strip())
                    continue
                yield at, d

    def fetch(self, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        with open(self.path, "rb") as f:
            for p in sorted(set(positions)):
                f.seek(p)
                d = _parse(f.readline())
                if d is not None:
                    out[p] = d
        return out


class MemorySource(ScoreSource):
    """Scores held in memory; a position is the index in the list."""

    def __init__(self, scores: Sequence[Score]):
        self.scores = scores

    def lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for i, s in enumerate(self.scores):
            yield i, s.model_dump(mode="json")

    def fetch(self, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
        return {p: self.scores[p].model_dump(mode="json") for p in set(positions)}


class ParquetSource(ScoreSource):
    """``scores.parquet`` while it describes ``scores.jsonl`` (``unified.run.columnar``);
    a position is a row number. Each row reads back as its line's JSON object and goes
    through the same ``_finish`` as a line, so both sources give the same dicts."""

    def __init__(self, path: Path, meta: dict[str, Any]):
        self.path = path
        self.unreadable = int(meta.get("unreadable") or 0)  # what FileSource would count

    def lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for pos, d in columnar.iter_raw(self.path):
            yield pos, _finish(d)

    def fetch(self, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
        return {p: _finish(d) for p, d in columnar.fetch_raw(self.path, positions).items()}

    def model_batches(self) -> Iterator[tuple[int, dict[str, list[Any]]]]:
        """What ``build_model`` reads of this source: the model's columns a batch at a time."""
        return columnar.iter_model_columns(self.path)

    def field_lines(self, fields: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        # value and error too: the 0–10 rule reads them (``_finish``)
        for pos, d in columnar.iter_fields(self.path, (*fields, "value", "error")):
            problem = line_problem(d)
            yield pos, (d if problem is None else invalid_line(d, problem))

    def model_lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for pos, d in columnar.iter_model_fields(self.path):
            # the 0–10 rule as ``_finish`` applies it (it reads only value and error;
            # a missing field reads as ``full_line``'s default, None)
            problem = line_problem(d)
            yield pos, (d if problem is None else invalid_line(d, problem))


def _parse(raw: bytes) -> dict[str, Any] | None:
    d = columnar.raw_line(raw)  # the one rule of which lines a reader keys
    return None if d is None else _finish(d)


def _finish(d: dict[str, Any]) -> dict[str, Any]:
    d = full_line(d)  # a short line (``score_line``) reads as a full one
    problem = line_problem(d)  # a value that breaks the 0–10 rule is a failed task, not a score
    return d if problem is None else invalid_line(d, problem)


iter_jsonl = iter_lines  # the one reader of a run folder's JSONL files (unified.run.runfolder)


# ---------------------------------------------------------------- the one pass


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def task_of(d: dict[str, Any], pos: int) -> Task:
    """The light record of one score line."""
    cost = d.get("cost")
    cost = cost if isinstance(cost, dict) else {}
    values = tuple(cost.get(k, v) for k, v in zip(COST_FIELDS, _NO_COST))
    error = d.get("error")
    return Task(
        value=_number(d.get("value")),
        passed=d.get("passed") if isinstance(d.get("passed"), bool) else None,
        error=str(error) if error is not None else None,
        threshold=_number(d.get("threshold")),
        cost=values,
        usd=_number(cost.get("usd")),
        pos=pos,
        degraded=degraded_reason(d),
    )


def build_model(
    source: ScoreSource, summary: dict[str, Any] | None = None, requested: Sequence[str] | None = None
) -> RunModel:
    """Read every line of ``source`` once into a ``RunModel`` (last line per key wins):
    a batch of columns at a time when the source has them (``ParquetSource``), else a
    line at a time; both apply ``_read_line``'s rules (``tests/test_columnar.py``)."""
    model = RunModel(summary=summary or {})
    batches = getattr(source, "model_batches", None)
    if batches is not None:
        columns: dict[tuple[str, str], TaskColumn] = {}
        for start, cols in batches():
            _read_batch(model, columns, start, cols)
    else:
        for pos, d in source.model_lines():
            _read_line(model, pos, d)
    model.unreadable = getattr(source, "unreadable", 0)
    return order_model(model, model.summary, requested)


def _key_seen(model: RunModel, m: str, b: str) -> None:
    """Record (metric, backend) as read: first-seen metric and backend order, first written pairs."""
    if m not in model.tasks:
        model.tasks[m] = {}
        model.seen[0].append(m)
    if b not in model.seen[1]:
        model.seen[1].append(b)
    model.written[(m, b)] = None


def _read_line(model: RunModel, pos: int, d: dict[str, Any]) -> None:
    """One line (a dict with at least ``task_of``'s fields) into the model."""
    m, b, sid = d["metric"], d["backend"], d["sample_id"]
    _key_seen(model, m, b)
    if d.get("row_error"):
        model.superseded += (sid, m, b) in model.row_tasks
        model.row_tasks[(sid, m, b)] = task_of(d, pos)
    else:
        model.superseded += model.column(m, b).put(sid, task_of(d, pos))


def _read_batch(
    model: RunModel, columns: dict[tuple[str, str], TaskColumn], start: int, cols: dict[str, list[Any]]
) -> None:
    """A batch of ``columnar.iter_model_columns`` into the model. A row with nothing but
    a key, a value that keeps the 0–10 rule (``line_problem``), a verdict, an error and a
    threshold — every line of a deterministic run — is put in its column as is; any
    other (a cost, ``extra``, degraded, a row error, a broken value) is built as its
    line's dict (``columnar.model_row``) and read by ``_read_line``, as a line is.
    ``columns``: the column of each (metric, backend) already recorded by ``_key_seen``."""
    rows = zip(
        *(cols[k] for k in ("metric", "backend", "sample_id", "value", "passed", "error", "threshold")),
        *(cols[k] for k in ("extra", "cost", "degraded", "row_error")),
    )
    for i, (m, b, sid, v, p, e, th, extra, cost, deg, row_error) in enumerate(rows, start=start):
        if extra is not None or cost is not None or deg or row_error or value_problem(v, e):
            d = columnar.model_row(cols, i - start)
            problem = line_problem(d)
            _read_line(model, i, d if problem is None else invalid_line(d, problem))
            continue
        col = columns.get((m, b))
        if col is None:
            _key_seen(model, m, b)
            col = columns[(m, b)] = model.column(m, b)
        model.superseded += col.put_plain(sid, v, p, e, _number(th), i)


def order_model(model: RunModel, summary: dict[str, Any], requested: Sequence[str] | None = None) -> RunModel:
    """Set the model's metric and backend order from ``summary``'s config (as asked, then
    the one stable order); a summary written after the lines were read reorders the model
    without reading them again."""
    model.summary = summary or {}
    seen_metrics, seen_backends = model.seen
    config = model.summary.get("config")
    config = config if isinstance(config, dict) else {}
    asked = list(requested or config.get("metrics") or [])
    model.metrics = metric_order(seen_metrics, asked)
    asked_b = [b for b in (config.get("backends") or []) if b in seen_backends]
    model.backends = asked_b + [b for b in seen_backends if b not in asked_b]
    return model


def metric_order(seen: Sequence[str], asked: Sequence[str] = ()) -> list[str]:
    """``seen`` metrics in the one stable order: those the user asked for, in the order
    asked; then the rest in registry order (the order ``unified.metrics`` registers its
    built-ins), cutoff and parameters breaking ties; unknown names last, as seen."""
    from unified.metrics import UnknownMetricError, parse_metric, registry_order

    rank = {name: i for i, name in enumerate(registry_order())}
    first = [m for m in dict.fromkeys(asked) if m in seen]

    def key(item: tuple[int, str]) -> tuple[int, int, str, int]:
        i, name = item
        try:
            ref = parse_metric(name)
        except UnknownMetricError:
            return (len(rank) + 1, 0, "", i)
        return (rank.get(ref.canonical, len(rank)), ref.k or 0, name, i)

    rest = sorted(((i, m) for i, m in enumerate(seen) if m not in first), key=key)
    return first + [m for _, m in rest]


def unlisted_note(n: int, first: str, run_dir: Path | None) -> str:
    """What ``n`` scored samples without a sample (first: ``first``) mean to a table of them."""
    where = f"line in {run_dir / 'samples.jsonl'}" if run_dir is not None else "sample among those given"
    fix = " (deleted or edited since the run; the same run command writes them again)" if run_dir is not None else ""
    return (
        f"{n} scored sample(s) (first: '{first}') have no {where}: their question, answer and contexts are "
        f"missing from this table{fix}"
    )


def unreadable_note(n: int, run_dir: Path | None) -> str:
    """What ``n`` skipped lines of a scores file mean to the reader of its figures."""
    where = f"{run_dir / 'scores.jsonl'}" if run_dir is not None else "the scores file"
    return (
        f"{n} line(s) of {where} are not score lines (not JSON, or no metric, backend and "
        "sample id) and were skipped: their tasks are missing from "
        "these figures (a run killed mid-line, a hand edit, or a run still writing that line); "
        "the same run command scores them again"
    )
