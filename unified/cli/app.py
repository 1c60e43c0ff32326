"""The ``unified-eval`` command line (typer + rich).

Commands: ``metrics``, ``validate``, ``run``, ``compare``, ``convert``, ``report``, ``diff``.
A user error (unknown metric, missing file, missing extra, bad flag value) is one line on
stderr and exit code 2 — never a traceback. ``--fail-under`` and ``validate`` problems
exit 1; Ctrl-C exits 130 after leaving the run folder resumable.

The judge comes from flags, else the environment (``UNIFIED_JUDGE_*``), else the
``[judge]`` section of ``--config run.toml``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from unified.cli import benchmark as cli_benchmark
from unified.cli import run as cli_run
from unified.cli.common import (
    App,
    UserError,
    err_console,
    out_console,
    parse_mapping_flags,
    plain_warnings,
    read_options,
    user_errors,
)

app = App(
    add_completion=False,
    no_args_is_help=True,
    help=cli_run.app_help(),
)
# ---------------------------------------------------------------- metrics


@app.command("metrics")
def metrics_cmd(
    name: Optional[str] = typer.Argument(
        None, help="one metric (any framework's name for it): its formula, fields, thresholds and names"
    ),
) -> None:
    """The metric × backend matrix (which backend implements what, fields, kind, pass bound),
    or everything about one metric."""
    from unified.adapters import describe_metric, metric_matrix

    with user_errors():
        if name:
            _print_metric(describe_metric(name))
            return
        m = metric_matrix()
    for chunk in _backend_chunks(m, out_console.width):
        out_console.print(_backend_matrix(m, chunk))
    out_console.print(_metric_facts(m))
    for b in m["backends"]:
        if not b["available"]:
            err_console.print(f"note: {b['hint']}", highlight=False, markup=False)


def _backend_chunks(m: dict[str, Any], width: int) -> list[list[dict[str, Any]]]:
    """The backends in runs that fit ``width`` beside the metric column (a table of each):
    a backend's name is never cut, however narrow the terminal."""
    used = max(len(r["label"]) for r in m["rows"]) + 4
    chunks: list[list[dict[str, Any]]] = [[]]
    for b in m["backends"]:
        need = max(len(b["name"]), 15 if not b["available"] else 0) + 3
        if chunks[-1] and used + need > width:
            chunks.append([])
            used = max(len(r["label"]) for r in m["rows"]) + 4
        chunks[-1].append(b)
        used += need
    return chunks


def _backend_matrix(m: dict[str, Any], backends: list[dict[str, Any]]) -> Table:
    """Which of ``backends`` implements which metric: a ✓ per cell."""
    names = [b["name"] for b in backends]
    t = Table(title="metrics × backends (✓ implemented, · not) — `unified-eval metrics NAME` for one")
    t.add_column("metric", no_wrap=True, min_width=max(len(r["label"]) for r in m["rows"]))
    for b in backends:
        header = b["name"] if b["available"] else f"{b['name']}\n(extra missing)"
        t.add_column(header, justify="center", no_wrap=True, min_width=len(b["name"]))
    for row in m["rows"]:
        t.add_row(row["label"], *["✓" if row["implemented"].get(b) else "·" for b in names])
    return t


def _metric_facts(m: dict[str, Any]) -> Table:
    """Each metric's fields, kind and pass bounds (the most common, then the backends
    that apply another)."""
    t = Table(title="metrics: what they need and when they pass (on 0–10)")
    t.add_column("metric", no_wrap=True, min_width=max(len(r["label"]) for r in m["rows"]))
    t.add_column("required fields")  # the one column that wraps
    for col in ("kind", "pass ≥"):
        t.add_column(col, no_wrap=True)
    for row in m["rows"]:
        t.add_row(row["label"], row["required"], row["kind"], _pass_bounds(row["thresholds"]))
    return t


def _pass_bounds(thresholds: dict[str, float | None]) -> str:
    """The most common bound, then each backend that applies another: ``5 (embedding 4)``."""
    bounds = [v for v in thresholds.values() if v is not None]
    if not bounds:
        return "—"
    common = max(set(bounds), key=bounds.count)
    others = [f"{b} {v:g}" for b, v in thresholds.items() if v is not None and v != common]
    return f"{common:g}" + (f" ({', '.join(others)})" if others else "")


def _print_metric(d: dict[str, Any]) -> None:
    out_console.print(f"{d['label']} ({d['kind']})", highlight=False)
    out_console.print(d["description"], highlight=False, soft_wrap=True)
    if d.get("formula"):
        out_console.print("\n" + d["formula"].strip() + "\n", highlight=False, soft_wrap=True)
    needs = ", ".join(d["required"]) + (f" + {d['also_needs']}" if d.get("also_needs") else "")
    out_console.print(f"needs: {needs}", highlight=False, soft_wrap=True)
    if d.get("judges_line"):
        out_console.print(d["judges_line"], highlight=False, soft_wrap=True)
    scales = d.get("scales", {})
    t = Table(title="backends")
    for col in ("backend", "pass ≥", "name in that framework") + (("raw value → 0–10",) if scales else ()):
        t.add_column(col, overflow="fold")
    for b in d["backends"]:
        bound = d["thresholds"].get(b)
        # a declared scale reads "<the framework's name>: <raw value and its mapping>"
        own, _, scale = scales.get(b, "").partition(": ")
        # native and embedding are ours: the metric's own label is their name for it
        name = ", ".join(d["aliases"].get(b, [])) or own or d["label"]
        t.add_row(b, "—" if bound is None else f"{bound:g}", name, *((scale,) if scales else ()))
    out_console.print(t)
    for fw, names_ in d["aliases"].items():
        if fw not in d["backends"] and fw != "other":
            out_console.print(f"also called {', '.join(names_)} in {fw}", highlight=False)
    if d["aliases"].get("other"):
        out_console.print(f"also accepted: {', '.join(d['aliases']['other'])}", highlight=False)


# ---------------------------------------------------------------- validate

# the input flags read the same everywhere: run/compare/migrate declare them in cli_run.FLAGS
_MAP_HELP = cli_run.help_of("map_")
_FROM_HELP = cli_run.help_of("layout")
_LABEL_HELP = cli_run.help_of("label")
_LIST_SEP_HELP = cli_run.help_of("list_sep")


def _missing_fields(
    samples: list[tuple[int, Any]], metrics: str, source: str, names: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """metric -> one line per sample that lacks a field the metric needs (as a run would
    record it: ``unified.adapters.missing_field_error``)."""
    from unified.adapters import missing_field_error
    from unified.metrics import parse_metrics

    out: dict[str, list[str]] = {}
    for ref in parse_metrics(metrics):
        lines = [
            f"{source}:{row}: {msg}"
            for row, s in samples
            if (msg := missing_field_error(s, ref, names=names)) is not None
        ]
        out[ref.name] = lines
    return out


def _print_missing(missing: dict[str, list[str]], n_samples: int, show: int = 10) -> None:
    for metric, lines in missing.items():
        if not lines:
            out_console.print(f"{metric}: all {n_samples} sample(s) have the fields it needs", highlight=False)
            continue
        out_console.print(
            f"MISSING {metric}: {len(lines)} of {n_samples} sample(s) lack a field it needs",
            highlight=False,
            soft_wrap=True,
        )
        for line in lines[:show]:
            out_console.print(f"  {line}", highlight=False, soft_wrap=True)
        if len(lines) > show:
            out_console.print(f"  ... and {len(lines) - show} more", highlight=False)


@app.command("validate")
def validate_cmd(
    file: Path = typer.Argument(..., help="JSONL, JSON, CSV, TSV or Parquet file of samples"),
    map_: Optional[list[str]] = typer.Option(None, "--map", help=_MAP_HELP, metavar="SRC=FIELD"),
    metrics: Optional[list[str]] = typer.Option(
        None,
        "--metrics",
        "-m",
        metavar="NAMES",
        help="also list, per metric, the rows missing a field it needs (comma list; repeatable)",
    ),
    src_format: Optional[str] = typer.Option(None, "--from", help=_FROM_HELP, metavar="LAYOUT"),
    label: Optional[list[str]] = typer.Option(None, "--label", help=_LABEL_HELP, metavar="METRIC=COLUMN"),
    list_sep: Optional[str] = typer.Option(None, "--list-sep", help=_LIST_SEP_HELP, metavar="SEP"),
) -> None:
    """Check every row exactly as a run reads it; list each problem on one line; exit 1 if
    there is any (a bad row, a sample missing a field one of --metrics needs, or no rows)."""
    import warnings

    from unified.data.io import RowError, read_samples

    samples: list[tuple[int, Any]] = []
    errors: list[Any] = []
    with user_errors():
        reader = read_samples(file, **read_options(map_, src_format, label, list_sep))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # listed once each in reader.notes
            for row, item in reader.rows():
                (errors.append(item) if isinstance(item, RowError) else samples.append((row, item)))
        missing = _missing_fields(samples, ",".join(metrics), reader.source, reader.field_names) if metrics else {}
    for e in errors:
        out_console.print(f"ERROR {e}", highlight=False, soft_wrap=True)
    for w in reader.notes:
        out_console.print(f"warning: {w}", highlight=False, soft_wrap=True)
    from unified.data.traces.provenance import shape_lines  # samples read from traces: where each field came from

    for line in shape_lines(samples, reader.source):
        out_console.print(line, highlight=False, soft_wrap=True)
    if samples:
        _print_missing(missing, len(samples))
    out_console.print(
        f"{len(samples)} ok, {len(errors)} bad row(s) in {file} ({reader.counts.line()})",
        highlight=False,
        soft_wrap=True,
    )
    if not samples and not errors:
        # an empty file is a problem to the run it is meant for (that run exits 3)
        err_console.print(f"error: {file} has no rows", highlight=False, soft_wrap=True)
    if errors or any(missing.values()) or not samples:
        raise typer.Exit(1)


# ---------------------------------------------------------------- run / compare

cli_run.register(app)  # run, compare, migrate: one table of flags
cli_benchmark.register(app)  # benchmark: run and compare's flags over labelled sets


# ---------------------------------------------------------------- convert / report / diff


@app.command("convert")
def convert_cmd(
    src: Path = typer.Argument(..., help="the samples to convert (any format run reads)"),
    dst: Path = typer.Argument(..., help="the file to write"),
    to: str = typer.Option(
        ...,
        "--to",
        metavar="FORMAT",
        help="ragas, ragas_v1, deepeval, dingo, patronus, embedchain, or one of ours: jsonl, json, csv, tsv, parquet",
    ),
    map_: Optional[list[str]] = typer.Option(None, "--map", help=_MAP_HELP, metavar="SRC=FIELD"),
    src_format: Optional[str] = typer.Option(None, "--from", help=_FROM_HELP, metavar="LAYOUT"),
    label: Optional[list[str]] = typer.Option(None, "--label", help=_LABEL_HELP, metavar="METRIC=COLUMN"),
    list_sep: Optional[str] = typer.Option(None, "--list-sep", help=_LIST_SEP_HELP, metavar="SEP"),
) -> None:
    """Convert a sample file to another framework's field names or file format."""
    with user_errors():
        from unified.data.convert import convert_file

        if not src.exists():
            raise UserError(f"no such file: {src}")
        with plain_warnings():
            n, errors = convert_file(
                src, dst, to, parse_mapping_flags(map_), src_format=src_format, labels=label or None, list_sep=list_sep
            )
    for e in errors:
        err_console.print(f"ERROR {e}", highlight=False, soft_wrap=True)
    out_console.print(
        f"wrote {n} sample(s) to {dst}" + (f"; skipped {len(errors)} bad row(s)" if errors else ""), highlight=False
    )
    if errors:
        raise typer.Exit(1)


@app.command("report")
def report_cmd(
    run_dir: Path = typer.Argument(..., help="a run folder (has scores.jsonl)"),
    max_samples: int = typer.Option(200, "--max-samples", help="samples in the drill-down"),
    worst: int = typer.Option(0, "--worst", metavar="N", help="also list the N lowest-scoring samples per metric"),
) -> None:
    """(Re)write RUN_DIR/report.html and print the summary table (and, with --worst N, the
    N lowest-scoring samples of each metric and backend, by file and row)."""
    from unified.report import Report
    from unified.report.export import input_name, print_worst, worst_samples
    from unified.run.runfolder import REPORT_FILE
    from unified.run.runsummary import print_table

    with user_errors(), plain_warnings():  # skipped unreadable lines are said, not hidden
        report = Report.from_dir(run_dir)
        path = report.write_html(run_dir / REPORT_FILE, max_drilldown=max_samples)
        print_table(report.summary())
        if worst > 0:
            print_worst(worst_samples(report, worst), input_name(report))
    out_console.print(f"wrote {path}", highlight=False)


@app.command("export")
def export_cmd(
    run_dir: Path = typer.Argument(..., help="a run folder (has scores.jsonl)"),
    out: Path = typer.Option(..., "--out", "-o", help="the file to write (.csv, .parquet or .jsonl)"),
    fmt: Optional[str] = typer.Option(None, "--format", help="csv, parquet or jsonl (default: from --out's suffix)"),
) -> None:
    """Write RUN_DIR's per-sample scores (one row per task, with the sample's text; details as
    JSON) to a CSV, Parquet or JSON Lines file."""
    from unified.report import Report
    from unified.report.export import export_scores

    with user_errors(), plain_warnings():
        path, n = export_scores(Report.from_dir(run_dir), out, fmt)
    out_console.print(f"wrote {n} row(s) to {path}", highlight=False)


@app.command("calibrate")
def calibrate_cmd(
    run_dir: Path = typer.Argument(..., help="a run folder whose samples carry human labels (--label)"),
    out: Path = typer.Option(Path("calibration.json"), "--out", "-o", help="the calibration file to write"),
    label_cut: Optional[list[str]] = typer.Option(
        None,
        "--label-cut",
        metavar="METRIC=CUT",
        help="graded human labels from CUT up count as a pass, e.g. faithfulness=4 for 1–5 ratings (repeatable)",
    ),
    labels: Optional[Path] = typer.Option(
        None,
        "--labels",
        metavar="FILE",
        help="people's labels by sample id from a labels file (labels.jsonl, as `unified-eval review` writes it)",
    ),
) -> None:
    """Fit, per metric and backend, an isotonic map from the 0–10 value to the share of people who
    pass (labels in RUN_DIR's samples, or --labels FILE); use it with run/compare --calibration FILE."""
    from unified.analysis.calibrated import describe_fit, fit_run
    from unified.cli.common import label_cuts
    from unified.data.labelfile import read_people_labels
    from unified.report import Report

    with user_errors():
        cuts = label_cuts(label_cut)
        if not run_dir.exists():
            raise FileNotFoundError(f"{run_dir} does not exist")
        report = Report.from_dir(run_dir)
        for note in report.use_labels(read_people_labels(labels)) if labels is not None else ():
            err_console.print(f"note: --labels: {note}", highlight=False, soft_wrap=True)
        data = fit_run(report, cuts)
    for line in describe_fit(data):
        out_console.print(line, highlight=False, soft_wrap=True, markup=False)
    if not data["entries"]:
        err_console.print(f"error: nothing to calibrate in {run_dir}: no (metric, backend) with usable labels")
        raise typer.Exit(2)
    out.write_text(json.dumps(data, indent=2), encoding="utf-8")
    out_console.print(f"wrote {out} ({len(data['entries'])} map(s))", highlight=False)


@app.command("diff")
def diff_cmd(
    run_a: Path = typer.Argument(..., help="the earlier run folder"),
    run_b: Path = typer.Argument(..., help="the later run folder"),
    n_boot: int = typer.Option(2000, "--n-boot", min=100, help="bootstrap resamples for the 95% CI"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed (same seed, same interval)"),
    top: int = typer.Option(5, "--top", help="samples that moved most, per metric"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="also write the diff as JSON"),
) -> None:
    """Change in mean per metric and backend from RUN_A to RUN_B: configuration differences
    first, then Δ with a bootstrap 95% CI, a Holm-adjusted p and the samples needed for 80% power."""
    from unified.report.diff import describe_config_changes, diff_runs, format_diff, unpaired_note

    with user_errors(), plain_warnings():
        rows = diff_runs(run_a, run_b, n_boot=n_boot, seed=seed, top=top)
    if not rows:
        err_console.print("error: the two runs share no (metric, backend)")
        raise typer.Exit(2)
    changes = describe_config_changes(rows)
    if changes:  # before any number: a Δ between two judges is no regression of one
        out_console.print("the runs' configurations differ:", highlight=False)
        for line in changes:
            out_console.print(f"  {line}", highlight=False, soft_wrap=True, markup=False)
    else:
        out_console.print("same configuration for every (metric, backend) both runs scored", highlight=False)
    out_console.print(format_diff(rows))
    for r in rows:
        if r["movers"]:
            out_console.print(
                f"moved most — {r['metric']} ({r['backend']}): "
                + "; ".join(f"{m['sample_id']} {m['a']:.1f}→{m['b']:.1f}" for m in r["movers"]),
                highlight=False,
                soft_wrap=True,
            )
        if note := unpaired_note(r):
            err_console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    with user_errors():  # two benchmark folders: how agreement with people changed too
        cli_benchmark.print_agreement_change(run_a, run_b)
    if json_out:
        from unified.data.files import write_text

        write_text(json_out, json.dumps(rows, indent=2))


from unified.cli.review import review_cmd  # noqa: E402 - its own module, so the app grows by a line

app.command("review")(review_cmd)


# ---------------------------------------------------------------- cache

cache_app = App(no_args_is_help=True, help="Inspect or clear the judge cache shared by all runs.")
app.add_typer(cache_app, name="cache")
_CACHE_HELP = "cache file (default: the shared cache in the user cache directory)"


def _cache_path(cache: Path | None) -> Path:
    from unified.judge.cache import default_cache_path

    return cache if cache is not None else default_cache_path()


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


@cache_app.command("info")
def cache_info_cmd(cache: Optional[Path] = typer.Option(None, "--cache", help=_CACHE_HELP)) -> None:
    """Where the judge cache is, its size, and its entries per table and per model."""
    path = _cache_path(cache)
    if not path.exists():
        out_console.print(
            f"no judge cache at {path} (it is created by the first run that calls a judge)",
            highlight=False,
            soft_wrap=True,
        )
        return
    with user_errors():
        from unified.judge.cache import JudgeCache

        store = JudgeCache(path)
        info = store.info()
        store.close()
    out_console.print(
        f"{info['path']}: {_size(info['bytes'])}, {info['chat']} chat and {info['embedding']} embedding entries",
        highlight=False,
        soft_wrap=True,
    )
    t = Table(title="entries per model")
    for col in ("table", "model", "entries"):
        t.add_column(col, justify="right" if col == "entries" else "left")
    for table, models in info["models"].items():
        for model, n in models.items():
            t.add_row(table, model, str(n))
    if t.row_count:
        out_console.print(t)


@cache_app.command("clear")
def cache_clear_cmd(
    cache: Optional[Path] = typer.Option(None, "--cache", help=_CACHE_HELP),
    model: Optional[str] = typer.Option(None, "--model", help="clear only this model's entries"),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask for confirmation"),
) -> None:
    """Delete the cached answers and vectors (all, or one model's); the next run pays again."""
    path = _cache_path(cache)
    if not path.exists():
        out_console.print(f"no judge cache at {path}: nothing to clear", highlight=False, soft_wrap=True)
        return
    what = f"the entries of model {model!r}" if model else "every entry"
    if not yes and not typer.confirm(f"delete {what} from {path}?", default=False):
        err_console.print("nothing deleted (pass --yes to skip this question)", highlight=False)
        raise typer.Exit(1)
    with user_errors():
        from unified.judge.cache import JudgeCache

        store = JudgeCache(path)
        removed = store.clear(model)
        store.close()
    out_console.print(
        f"removed {removed['chat']} chat and {removed['embedding']} embedding entries from {path}",
        highlight=False,
        soft_wrap=True,
    )


# ---------------------------------------------------------------- env

from unified.cli.envs import env_app  # noqa: E402

app.add_typer(env_app, name="env")


def main() -> None:  # pragma: no cover - console-script entry when not using typer's app directly
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
