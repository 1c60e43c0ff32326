"""``unified.benchmark`` / ``unified-eval benchmark``: which backend agrees with people, with
your judge, on public human-labelled sets and on your own labels.

One ordinary run, not a scoring loop of its own:

1. every ``--set FORMAT:PATH`` is read by its format's reader (``unified.data.sets``) and
   every ``--labels FILE`` as a ``jsonl`` set; each sample carries its people's verdict
   (``metadata.labels``) and its set (``metadata.benchmark_set``);
2. ``limit`` (``--limit N``) keeps at most N rows per set, label-balanced and
   deterministic (``choose``);
3. the chosen rows go to ``OUT/benchmark_input.jsonl`` (rewritten only when they change)
   and through ``unified.api.evaluate`` into the run folder — so the run is resumable,
   cached, dry-runnable, ``--batch`` and Ray work, and ``diff`` compares two benchmarks;
4. ``finish`` reads the run back (``Report``) and computes the table
   (``unified.analysis.benchmark``), written to ``OUT/benchmark.json``; the report page
   shows it (``unified.report.html_benchmark``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from unified.analysis.benchmark import agreement_change, benchmark_table
from unified.analysis.calibration import people_pass
from unified.api import evaluate
from unified.data.files import write_json
from unified.data.io import write_samples
from unified.data.rowerror import RowError
from unified.data.sets import SetSpec, parse_set, read_set
from unified.metrics import parse_metrics
from unified.run.runfolder import BENCHMARK_FILE, BENCHMARK_INPUT, REPORT_FILE
from unified.run.runindex import stamp_lines
from unified.sample import Sample

__all__ = ["Benchmark", "benchmark", "choose", "diff_benchmarks", "finish", "read_sets"]


@dataclass
class SetsRead:
    """The rows of every set, chosen (``limit``), and one line per thing said about them:
    row errors (counted, the first named), rows left out by the limit."""

    samples: list[Sample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    row_errors: int = 0


@dataclass
class Benchmark:
    """What ``benchmark`` returns: the run's ``Report`` and the table (``benchmark.json``)."""

    report: Any
    table: dict[str, Any]


def _spec(s: str | SetSpec) -> SetSpec:
    return s if isinstance(s, SetSpec) else parse_set(s)


def read_sets(
    sets: Sequence[str | SetSpec],
    labels: Sequence[str | Path] = (),
    limit: int | None = None,
    metrics: Sequence[str] = ("faithfulness",),
) -> SetsRead:
    """Every set's samples (module docstring) that people labelled for one of ``metrics``
    (a row without such a label would be paid for and never read), ``limit`` applied per
    set by the first metric's labels. Raises ``ValueError`` / ``FileNotFoundError`` (one line) for a set that is
    not there or not of its format, and for two sets of one name."""
    specs = [_spec(s) for s in sets] + [parse_set(f"jsonl:{p}") for p in labels]
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"two sets are named {twice[0]!r}: name one NAME=FORMAT:PATH")
    out = SetsRead()
    for spec in specs:
        rows: dict[str, list[Sample]] = {}  # a file may hold several sets (LLM-AggreFact)
        for item in read_set(spec):
            if isinstance(item, RowError):
                out.row_errors += 1
                if out.row_errors == 1:
                    out.notes.append(f"{spec.name}: a row was left out: {item}")
                continue
            rows.setdefault(str(item.metadata.get("benchmark_set", spec.name)), []).append(item)
        for name, members in rows.items():
            out.samples += _kept(name, members, limit, metrics, out.notes)
    if out.row_errors > 1:
        out.notes.append(f"{out.row_errors} rows in all were left out as unreadable")
    return out


def _kept(
    name: str, members: list[Sample], limit: int | None, metrics: Sequence[str], notes: list[str]
) -> list[Sample]:
    """The rows of one set the run scores (``read_sets``), each leaving-out said once."""
    labelled = set().union(*(people_pass(m, {s.id: s for s in members})[1] for m in metrics))
    kept = [s for s in members if s.id in labelled]
    if len(kept) < len(members):
        notes.append(f"{name}: {len(members) - len(kept)} rows carry no label for {', '.join(metrics)}; left out")
    chosen = choose(kept, limit, metrics[0]) if limit else kept
    if len(chosen) < len(kept):
        notes.append(f"{name}: {len(chosen)} of {len(kept)} rows (--limit {limit}, label-balanced)")
    return chosen


def _order(sid: str) -> str:
    return hashlib.sha256(sid.encode()).hexdigest()


def choose(samples: Sequence[Sample], limit: int | None, metric: str = "faithfulness") -> list[Sample]:
    """At most ``limit`` rows of one set, label-balanced and deterministic: the rows people
    labelled for ``metric``, each class in order of sha256(sample id); half the rows from
    each class (the fail class gets the odd one), a class with too few rows gives all it
    has and the other fills the rest. Rows without a label for ``metric`` are not chosen.
    Kept in the set's own order."""
    if limit is None or limit >= len(samples):
        return list(samples)
    _, passed, _ = people_pass(metric, {s.id: s for s in samples})
    classes = [sorted((sid for sid, v in passed.items() if v == c), key=_order) for c in (0.0, 1.0)]
    want_fail = min(len(classes[0]), max(limit - len(classes[1]), (limit + 1) // 2))
    want_pass = min(len(classes[1]), limit - want_fail)
    keep = set(classes[0][:want_fail]) | set(classes[1][:want_pass])
    return [s for s in samples if s.id in keep]


def write_input(samples: Sequence[Sample], out: Path) -> Path:
    """``OUT/benchmark_input.jsonl``, rewritten only when its rows change (a resume reads
    the same file, untouched)."""
    path = out / BENCHMARK_INPUT
    fresh = out / (BENCHMARK_INPUT + ".new.tmp")
    write_samples(samples, fresh, "jsonl")
    if path.is_file() and path.read_bytes() == fresh.read_bytes():
        fresh.unlink()
    else:
        fresh.replace(path)
    return path


def finish(
    report: Any,
    backends: Sequence[str],
    metrics: Sequence[str],
    out: Path | None,
    notes: Sequence[str] = (),
    label_cuts: Any = None,
) -> dict[str, Any]:
    """The table of a finished run (``unified.analysis.benchmark``), with the notes of the
    reading; written to ``OUT/benchmark.json`` and shown in ``OUT/report.html``."""
    table = benchmark_table(report.iter_scores(), report.sample_objects(), backends, metrics, label_cuts)
    table["notes"] = list(notes)
    table.update(run_wall(report.run_summary(), len({e["set"] for e in table["entries"]}), report))
    if out is not None:
        table = stamp_lines(out, table)  # the report shows it only while the score lines are these
        write_json(out / BENCHMARK_FILE, table)
        report.write_html(out / REPORT_FILE)
    return table


def run_wall(summary: dict[str, Any], n_sets: int, report: Any) -> dict[str, Any]:
    """The run's wall-clock seconds (all invocations of the folder) and per sample: the
    backends run side by side, so wall time belongs to the run, not to one backend."""
    timings = summary.get("timings") or {}
    wall = timings.get("wall_seconds_total", timings.get("seconds"))
    n = len(report.samples())
    per = wall / n if isinstance(wall, (int, float)) and n else None
    return {"wall_seconds": wall, "samples": n, "sets": n_sets, "wall_per_sample": per}


def metric_names(metrics: Any) -> list[str]:
    """The metric names as the run's Scores carry them."""
    return [r.name for r in parse_metrics(metrics)]


def benchmark(
    sets: Sequence[str | SetSpec],
    metrics: Any = "faithfulness",
    backends: Sequence[str] | str = ("native", "embedding"),
    labels: Sequence[str | Path] = (),
    limit: int | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> Benchmark:
    """Run ``backends`` × ``metrics`` on every set and return the run's Report and the
    table (module docstring). ``sets``: ``"FORMAT:PATH"`` (or ``NAME=FORMAT:PATH``);
    ``labels``: your own labelled files; ``limit``: rows per set; every other keyword is
    ``unified.api.evaluate``'s (``judges``, ``prices``, ``batch``, ``executor``, ...)."""
    names = metric_names(metrics)
    cuts = options.pop("label_cuts", None)  # --label-cut: graded labels binarised at a given bound
    read = read_sets(sets, labels, limit, names)
    if not read.samples:
        raise ValueError("no labelled rows in the sets given")
    folder = Path(out) if out is not None else None
    given: Any = read.samples
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        given = str(write_input(read.samples, folder))
    chosen = [backends] if isinstance(backends, str) else list(backends)
    backend_list = [b.strip() for c in chosen for b in (c.split(",") if isinstance(c, str) else [c])]
    report = evaluate(given, metrics, backend_list, out=folder, **options)
    shown = [b if isinstance(b, str) else getattr(b, "name", str(b)) for b in backend_list]
    return Benchmark(report, finish(report, shown, names, folder, read.notes, cuts))


def diff_benchmarks(run_a: str | Path, run_b: str | Path) -> list[dict[str, Any]] | None:
    """How agreement with people changed from benchmark A to benchmark B
    (``analysis.benchmark.agreement_change``, rows matched by sample id; labels from A's
    samples); None unless both folders hold a ``benchmark.json``."""
    from unified.report import Report

    if not all((Path(f) / BENCHMARK_FILE).is_file() for f in (run_a, run_b)):
        return None
    a, b = Report.from_dir(run_a), Report.from_dir(run_b)
    return agreement_change(a.iter_scores(), b.iter_scores(), a.sample_objects())


def load_table(out: str | Path) -> dict[str, Any]:
    """``OUT/benchmark.json`` as written."""
    return json.loads((Path(out) / BENCHMARK_FILE).read_text(encoding="utf-8"))
