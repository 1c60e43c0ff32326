"""``unified-eval benchmark``: the backends' agreement with people on labelled sets.

The sets are read and chosen (``unified.benchmarking.read_sets``), written to
``OUT/benchmark_input.jsonl``, and that file goes through the same run command as
``run``/``compare`` (``cli.run.run_command``: the judge flags, ``--price``, ``--dry-run``,
``--batch``, ``--executor ray``, resume, signals, the exit code); then the table is
computed from the folder, printed, and written to ``OUT/benchmark.json`` and the report.
"""

from __future__ import annotations

import inspect
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from unified.cli import run as cli_run

#: the run flags benchmark does not take: the input is the sets (their own fields and labels);
#: compare's --labels (people's labels of a run's samples by id) is benchmark's own --labels
#: (a file of samples, each with its labels)
NOT_HERE = {
    "map_", "layout", "label", "labels", "list_sep", "max_samples", "verbose", "jury", "from_backend", "to_backend",
}  # fmt: skip
#: a run that ended by a signal: no table (the folder is resumable, the table comes then)
SIGNALLED = (cli_run.EXIT_SIGINT, cli_run.EXIT_SIGTERM)

HELP = (
    "Run --backends × --metrics on human-labelled sets (--set FORMAT:PATH, repeatable; --labels FILE) "
    "and print per set and on average: ROC AUC with a bootstrap interval, balanced accuracy at each "
    "backend's bound and at a bound tuned on a dev split, ECE after calibration, failed share and cost; "
    "write OUT/benchmark.json and the table in OUT/report.html. FORMAT: ragtruth, halueval, aggrefact, "
    "faithbench, summac, wice, begin, ares, jsonl. " + cli_run.EXIT_CODES_HELP
)


def _own_params() -> list[inspect.Parameter]:
    def opt(name: str, annotation: Any, default: Any, *decls: str, help: str, metavar: str) -> inspect.Parameter:
        return inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=annotation,
            default=typer.Option(default, *decls, help=help, metavar=metavar, rich_help_panel="Input"),
        )

    return [
        opt(
            "sets",
            Optional[list[str]],
            None,
            "--set",
            help="a labelled set: FORMAT:PATH or NAME=FORMAT:PATH (repeatable)",
            metavar="FORMAT:PATH",
        ),
        opt(
            "labels",
            Optional[list[str]],
            None,
            "--labels",
            help="your own labelled file: any file run reads, a 'labels' object per row (repeatable)",
            metavar="FILE",
        ),
        opt(
            "limit",
            Optional[int],
            None,
            "--limit",
            help="at most N rows per set: label-balanced, deterministic (sha256 of the ids)",
            metavar="N",
        ),
    ]


def make() -> Callable[..., None]:
    """The typer command function: ``--set``/``--labels``/``--limit`` and the run flags."""

    def benchmark_cmd(**values: Any) -> None:
        run_benchmark(values)

    flags = [cli_run._param(f) for f in cli_run.FLAGS if "compare" in f.commands and f.name not in NOT_HERE]
    benchmark_cmd.__signature__ = inspect.Signature(_own_params() + flags)  # type: ignore[attr-defined]
    return benchmark_cmd


def register(app: typer.Typer) -> None:
    app.command("benchmark", help=HELP)(make())


def _argv(values: dict[str, Any], sets: list[str], labels: list[str], limit: int | None) -> list[str]:
    """The command line that resumes this benchmark (the run's flags as ``run`` writes them)."""
    argv = cli_run.command_line("benchmark", Path("-"), values)
    argv = argv[:2] + argv[3:]  # no FILE: the sets are the input
    for s in sets:
        argv += ["--set", s]
    for f in labels:
        argv += ["--labels", f]
    return argv + (["--limit", str(limit)] if limit else [])


def run_benchmark(values: dict[str, Any]) -> None:
    """Read the sets, run, then print and write the table; exit with the run's code."""
    from unified.benchmarking import finish, metric_names, read_sets, write_input
    from unified.cli import common as cli

    sets, labels, limit = values.pop("sets") or [], values.pop("labels") or [], values.pop("limit")
    values["out"] = values.get("out") or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    values["backend"] = values.get("backend") or [cli_run.DEFAULT_BACKENDS["benchmark"]]
    out = Path(values["out"])
    with cli.user_errors():
        if not sets and not labels:
            raise cli.UserError("name at least one labelled set: --set FORMAT:PATH or --labels FILE")
        if limit is not None and limit < 2:
            raise cli.UserError(f"--limit {limit}: a set needs at least 2 rows (one of each class)")
        names = metric_names(",".join(values["metrics"]))
        read = read_sets(sets, labels, limit, names)
        for note in read.notes:
            cli.err_console.print(note, highlight=False, soft_wrap=True)
        if not read.samples:
            raise cli.UserError("no labelled rows in the sets given")
        out.mkdir(parents=True, exist_ok=True)
        path = write_input(read.samples, out)
    code = 0
    try:
        cli_run.run_command("benchmark", path, values, argv=_argv(values, sets, labels, limit))
    except typer.Exit as e:
        code = e.exit_code
    if values.get("dry_run") or code in SIGNALLED or not (out / "run.json").is_file():
        raise typer.Exit(code)
    from unified.report import Report

    backends = cli.split_list(",".join(values["backend"]))
    with cli.user_errors():
        cuts = cli.label_cuts(values.get("label_cut")) if values.get("label_cut") else None
        table = finish(Report.from_dir(out), backends, names, out, read.notes, cuts)
    if not values.get("quiet"):
        print_table(table)
        cli.out_console.print(f"wrote {out}/benchmark.json", highlight=False)
    raise typer.Exit(code)


def print_table(table: dict[str, Any]) -> None:
    """The table, per set then on average, as ``benchmark_table.render`` lays it out."""
    from unified.cli import common as cli
    from unified.cli.benchmark_table import render

    for t in render(table):
        cli.out_console.print(t, highlight=False, soft_wrap=True)


def print_agreement_change(run_a: Path, run_b: Path) -> None:
    """``diff`` of two benchmark folders: per set, backend and metric, AUC against people
    in A and in B and the paired interval of the change (nothing when either folder is no
    benchmark)."""
    from rich.table import Table

    from unified.benchmarking import diff_benchmarks
    from unified.cli import common as cli

    rows = diff_benchmarks(run_a, run_b)
    if rows is None:
        return
    t = Table(title="agreement with people, B − A (paired bootstrap 95% CI over the rows both scored)")
    for h in ("set", "metric", "backend", "n", "AUC A", "AUC B", "Δ AUC", "95% CI"):
        t.add_column(h, justify="left" if h in ("set", "metric", "backend") else "right")
    for r in rows:
        ci = r.get("gap_ci")
        shown = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if isinstance(ci, list) else f"— ({r.get('gap_ci_why') or ci})"
        cells = [f"{r[k]:.3f}" if isinstance(r[k], float) else "—" for k in ("auc_a", "auc_b")]
        gap = f"{r['gap']:+.3f}" if isinstance(r["gap"], float) else "—"
        t.add_row(r["set"], r["metric"], r["backend"], str(r["n"]), *cells, gap, shown)
    cli.out_console.print(t)
