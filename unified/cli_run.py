"""``unified-eval run`` and ``unified-eval compare``: one table of flags, one flow.

Every flag is declared once in ``FLAGS`` (its help text, its panel in ``--help``, the
commands that take it); the commands' signatures are generated from that table, so
``run`` and ``compare`` can never drift apart. ``--backend`` and ``--backends`` are the
same flag.

Exit codes (also in ``--help`` and the README):

    0    every task scored and every gate passed
    1    a gate failed (--fail-under, or a gated metric's error rate above --max-error-rate)
    2    usage or setup error (bad flag, file, metric, config; run folder busy or unwritable)
    3    tasks failed and --allow-errors was not given (the grouped causes are on stderr)
    130  interrupted by Ctrl-C, 143 by SIGTERM (the folder is consistent; the hint resumes it)
"""

from __future__ import annotations

import inspect
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import typer

EXIT_OK, EXIT_GATES, EXIT_USAGE, EXIT_ERRORS = 0, 1, 2, 3
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
EXIT_CODES_HELP = ("Exit codes: 0 all scored and gates passed; 1 a gate failed; 2 usage error; "
                   "3 tasks failed (unless --allow-errors); 130 Ctrl-C; 143 SIGTERM.")

_INPUT, _JUDGE, _FOLDER, _GATES, _OUTPUT = "Input", "Judge", "Run folder", "Gates and exit code", "Output"


@dataclass(frozen=True)
class Flag:
    """One command-line flag of run/compare: parameter name, declarations, type, default,
    help, help panel, and the commands that take it."""

    name: str
    decls: tuple[str, ...]
    type: Any
    default: Any
    help: str
    panel: str
    commands: tuple[str, ...] = ("run", "compare")
    min: int | None = None


FLAGS: tuple[Flag, ...] = (
    Flag("metrics", ("--metrics", "-m"), str, ..., "comma list, e.g. faithfulness,mrr,precision@3", _INPUT),
    Flag("backend", ("--backend", "--backends", "-b"), Optional[str], None,
         "backend or comma list (run: native; compare: native,ragas,deepeval)", _INPUT),
    Flag("map_", ("--map",), Optional[list[str]], None, "rename a field: question=user_input (repeatable)", _INPUT),
    Flag("layout", ("--from",), Optional[str], None, "layout of FILE: ragas, ragas_v1, deepeval, dingo, ... "
         "(default: detected from its field names)", _INPUT),
    Flag("label", ("--label",), Optional[list[str]], None,
         "a column of human labels for a metric, e.g. faithfulness=Label (repeatable)", _INPUT),
    Flag("list_sep", ("--list-sep",), Optional[str], None, "separator of list cells in CSV/TSV (default: | or ;)", _INPUT),
    Flag("max_samples", ("--max-samples",), Optional[int], None, "score only the first N rows", _INPUT, min=1),
    Flag("plugins", ("--plugins",), Optional[str], None, "modules registering custom metrics (comma list)", _INPUT),
    Flag("base_url", ("--base-url",), Optional[str], None, "OpenAI-compatible judge URL", _JUDGE),
    Flag("model", ("--model",), Optional[str], None, "judge model name", _JUDGE),
    Flag("api_key_env", ("--api-key-env",), Optional[str], None,
         "NAME of the environment variable holding the key (default OPENAI_API_KEY)", _JUDGE),
    Flag("judge2_model", ("--judge2-model",), Optional[str], None, "second judge model (native judge B)", _JUDGE),
    Flag("judge2_base_url", ("--judge2-base-url",), Optional[str], None, "second judge URL (default: --base-url)", _JUDGE),
    Flag("single_judge", ("--single-judge",), bool, False, "native: one judge per item (half the calls)", _JUDGE),
    Flag("embedding", ("--embedding",), Optional[str], None, "embeddings: local (offline MiniLM) or a URL", _JUDGE),
    Flag("embedding_model", ("--embedding-model",), Optional[str], None, "model name at the embeddings URL", _JUDGE),
    Flag("structured_output", ("--structured-output",), Optional[str], None,
         "auto | json_schema | llama_cpp | prompt", _JUDGE),
    Flag("concurrency", ("--concurrency",), Optional[int], None, "judge calls in flight (default 8)", _JUDGE, min=1),
    Flag("timeout", ("--timeout",), Optional[float], None, "seconds per judge call before it counts as failed", _JUDGE),
    Flag("max_retries", ("--max-retries",), Optional[int], None, "retries per judge call (429/5xx/timeouts)", _JUDGE, min=0),
    Flag("executor", ("--executor",), Optional[str], None, "local (default) or ray: score on a Ray cluster",
         "Execution"),
    Flag("ray_address", ("--ray-address",), Optional[str], None,
         "with --executor ray: auto (the running cluster) or host:port (default: a local Ray for the run)",
         "Execution"),
    Flag("config", ("--config",), Optional[Path], None, "run.toml / run.yaml with \\[judge], \\[judge2], "
         "\\[embedding] sections", _JUDGE),
    Flag("out", ("--out", "-o"), Optional[Path], None, "run folder (default runs/<timestamp>)", _FOLDER),
    Flag("resume", ("--resume/--no-resume",), bool, True,
         "skip tasks already in OUT/scores.jsonl (only when sample and configuration match)", _FOLDER),
    Flag("fresh", ("--fresh",), bool, False, "start over in OUT (its scores are removed; the cache stays)", _FOLDER),
    Flag("retry_errors", ("--retry-errors",), bool, False, "score the failed tasks in OUT again", _FOLDER),
    Flag("cache", ("--cache",), Optional[Path], None, "judge cache file (default: OUT/judge_cache.sqlite)", _FOLDER),
    Flag("no_cache", ("--no-cache",), bool, False, "do not cache judge calls", _FOLDER),
    Flag("fail_under", ("--fail-under",), Optional[str], None, "gates on means, e.g. faithfulness=7,mrr=6", _GATES),
    Flag("max_error_rate", ("--max-error-rate",), float, 0.0,
         "a gated metric fails when more than this share of its tasks failed", _GATES),
    Flag("allow_errors", ("--allow-errors",), bool, False, "exit 0 even when some tasks failed", _GATES),
    Flag("quiet", ("--quiet", "-q"), bool, False, "no progress, no table (errors still go to stderr)", _OUTPUT),
    Flag("dry_run", ("--dry-run",), bool, False, "count tasks and estimate calls; call nothing", _OUTPUT),
)


# what --help shows after each flag that takes a value
_METAVARS = {"metrics": "NAMES", "backend": "NAMES", "map_": "SRC=FIELD", "layout": "LAYOUT",
             "label": "METRIC=COLUMN", "list_sep": "SEP", "max_samples": "N", "plugins": "MODULES",
             "base_url": "URL", "model": "NAME", "api_key_env": "VAR", "judge2_model": "NAME",
             "judge2_base_url": "URL", "embedding": "local|URL", "embedding_model": "NAME",
             "structured_output": "MODE", "concurrency": "N", "timeout": "SECONDS", "max_retries": "N",
             "executor": "local|ray", "ray_address": "ADDR",
             "config": "FILE", "out": "DIR", "cache": "FILE", "fail_under": "GATES", "max_error_rate": "RATE"}


def flag_names(command: str) -> list[str]:
    return [f.name for f in FLAGS if command in f.commands]


def _param(flag: Flag) -> inspect.Parameter:
    extra: dict[str, Any] = {"help": flag.help, "rich_help_panel": flag.panel}
    if flag.min is not None:
        extra["min"] = flag.min
    if flag.type is not bool:
        extra["metavar"] = _METAVARS.get(flag.name, "TEXT")
    return inspect.Parameter(flag.name, inspect.Parameter.KEYWORD_ONLY, annotation=flag.type,
                             default=typer.Option(flag.default, *flag.decls, **extra))


def make_command(command: str, body: Callable[..., None]) -> Callable[..., None]:
    """A typer command function for ``command`` whose flags are ``FLAGS``; it calls
    ``body(file, **flags)``."""
    file_param = inspect.Parameter("file", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Path,
                                   default=typer.Argument(..., help="samples: JSONL, JSON, CSV, TSV or Parquet"))

    def command_fn(file: Path, **kwargs: Any) -> None:
        body(file, **kwargs)

    command_fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [file_param] + [_param(f) for f in FLAGS if command in f.commands])
    command_fn.__name__ = f"{command}_cmd"
    return command_fn


def command_line(command: str, file: Path, values: dict[str, Any]) -> list[str]:
    """The argv that reproduces this invocation: every flag whose value differs from its
    default (``--dry-run`` and ``--fresh`` excluded: resuming must not start over)."""
    argv = ["unified-eval", command, str(file)]
    for f in FLAGS:
        v = values.get(f.name, f.default)
        if f.name in ("dry_run", "fresh") or v == f.default or v is None:
            continue
        decl = f.decls[0]
        if "/" in decl:  # --resume/--no-resume
            argv.append(decl.split("/")[0] if v else decl.split("/")[1])
        elif f.type is bool:
            argv.append(decl)
        elif isinstance(v, list):
            for item in v:
                argv += [decl, str(item)]
        else:
            argv += [decl, str(v)]
    return argv


def exit_code(n_failed: int, gates_ok: bool, allow_errors: bool) -> int:
    """The exit-code rule (module docstring): gates first, then failed tasks."""
    if not gates_ok:
        return EXIT_GATES
    if n_failed and not allow_errors:
        return EXIT_ERRORS
    return EXIT_OK


def check_error_rates(aggregates: list[Any], gates: dict[str, float], max_error_rate: float) -> list[str]:
    """One FAIL line per gated metric whose error rate exceeds ``max_error_rate``: a mean
    over the few tasks that scored must never pass a gate silently."""
    from unified.diff import _matches  # the gate-name matching rule lives with the gates

    lines = []
    for a in aggregates:
        if a.count and any(_matches(g, a.metric) for g in gates):
            rate = a.errors / a.count
            if rate > max_error_rate:
                lines.append(f"FAIL {a.metric} ({a.backend}): {a.errors} of {a.count} tasks failed "
                             f"({rate:.0%} > --max-error-rate {max_error_rate:g}); the mean of the rest "
                             "does not count")
    return lines


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")


def stderr_isatty() -> bool:
    return sys.stderr.isatty()


# ---------------------------------------------------------------- the flow

DEFAULT_BACKENDS = {"run": "native", "compare": "native,ragas,deepeval"}


def run_command(command: str, file: Path, values: dict[str, Any]) -> None:
    """What ``run`` and ``compare`` do: check the arguments, run, report, exit."""
    from unified import cli
    from unified.runner import RunInterrupted

    with cli._plain_warnings():
        with cli._user_errors():
            setup = _setup(command, file, values)
            if setup is None:
                return
        try:
            with cli._user_errors():
                report = _evaluate(command, setup, values)
        except RunInterrupted as e:
            raise typer.Exit(EXIT_SIGTERM if e.signal == "SIGTERM" else EXIT_SIGINT) from None
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_SIGINT) from None
        raise typer.Exit(_after(command, setup, report, values))


@dataclass
class _Setup:
    file: Path
    refs: list[Any]
    backends: list[str]
    backend_objs: list[Any]
    gates: dict[str, float]
    out: Path
    judges: Any
    judge_desc: dict[str, Any]


def _setup(command: str, file: Path, v: dict[str, Any]) -> _Setup | None:
    from datetime import datetime

    from unified import cli
    from unified.diff import parse_gates
    from unified.metrics import load_plugins, parse_metrics

    cli._load_plugins(load_plugins, v.get("plugins"))
    refs = parse_metrics(v["metrics"])
    if not refs:
        raise cli.UserError("--metrics is empty; name at least one, e.g. --metrics precision@3")
    backends = list(dict.fromkeys(cli._split(v.get("backend") or DEFAULT_BACKENDS[command])))
    if command == "compare" and len(backends) < 2:
        raise cli.UserError("compare needs at least two backends, e.g. --backends native,embedding")
    gates = parse_gates(v.get("fail_under"))
    if not file.exists():
        raise cli.UserError(f"no such file: {file}")
    if v.get("dry_run"):
        cli._dry_run(file, refs, backends, v)
        return None
    out = v.get("out") or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    if out.exists() and not out.is_dir():
        raise cli.UserError(f"--out {out}: is a file, not a folder")
    judges, desc = _judges(v, out)
    from unified.adapters import get_backend
    # run_dir: framework backends put their stray files (ragas's uuid) in the run folder
    objs = [get_backend(b, judges, run_dir=out) for b in backends]
    return _Setup(file, refs, backends, objs, gates, out, judges, desc)


def _judges(v: dict[str, Any], out: Path) -> tuple[Any, dict[str, Any]]:
    import sqlite3

    from unified import cli
    from unified.runfolder import CACHE_FILE

    cache_path = None if v.get("no_cache") else (v.get("cache") or out / CACHE_FILE)
    if cache_path is not None and cache_path.is_dir():
        raise cli.UserError(f"--cache {cache_path}: is a folder; name the cache file, e.g. {cache_path / CACHE_FILE}")
    try:
        return cli._judges_from(v.get("base_url"), v.get("model"), v.get("api_key_env"), v.get("judge2_model"),
                                v.get("judge2_base_url"), bool(v.get("single_judge")), v.get("embedding"),
                                v.get("embedding_model"), v.get("structured_output"), v.get("concurrency"),
                                v.get("config"), cache_path, timeout=v.get("timeout"),
                                max_retries=v.get("max_retries"))
    except (sqlite3.Error, OSError) as e:  # not a database, locked, unwritable
        raise cli.UserError(f"cannot open the judge cache {cache_path}: {e}") from None


def _evaluate(command: str, s: _Setup, v: dict[str, Any]) -> Any:
    from unified import cli
    from unified.runner import evaluate

    return evaluate(str(s.file), s.refs, s.backend_objs, judges=s.judges, out=s.out,
                    resume=v.get("resume", True), fresh=bool(v.get("fresh")),
                    retry_errors=bool(v.get("retry_errors")), concurrency=v.get("concurrency") or 16,
                    progress=False if v.get("quiet") else "auto", show_summary=not v.get("quiet"), mapping=cli._mapping(v.get("map_")),
                    labels=_labels(v.get("label")), list_sep=v.get("list_sep"), layout=v.get("layout"),
                    max_samples=v.get("max_samples"), executor=v.get("executor") or "local",
                    ray_address=v.get("ray_address"),
                    run_config={"judges": s.judge_desc, "command": command},
                    command=command_line(command, s.file, v))


def _labels(items: list[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    try:
        from unified.io import parse_labels  # type: ignore[attr-defined]
    except ImportError:
        raise ValueError("--label needs a newer unified.io (parse_labels)") from None
    return parse_labels(items)


def _after(command: str, s: _Setup, report: Any, v: dict[str, Any]) -> int:
    """Cross-check (compare), gates, and the exit code; prints what it decides."""
    from unified import cli
    from unified.diff import check_gates
    from unified.runfolder import CROSSCHECK_FILE

    if command == "compare":
        _crosscheck(report, s, quiet=bool(v.get("quiet")))
    cli.out_console.print(f"wrote {s.out}/scores.jsonl, summary.json, report.html"
                          + (f", {CROSSCHECK_FILE}" if command == "compare" else ""), highlight=False)
    summary = report.summary()
    n_failed = sum(a.errors for a in summary)
    if summary and not any(a.scored for a in summary):
        cli.err_console.print(f"error: no task produced a score; fix the cause above and rerun with "
                              f"--retry-errors --out {s.out}", highlight=False, soft_wrap=True)
    gates_ok = True
    if s.gates:
        ok, lines = check_gates(summary, s.gates)
        rate_lines = check_error_rates(summary, s.gates, float(v.get("max_error_rate") or 0.0))
        gates_ok = ok and not rate_lines
        for line in lines + rate_lines:
            (cli.out_console if line.startswith("PASS") else cli.err_console).print(line, highlight=False)
    return exit_code(n_failed, gates_ok, bool(v.get("allow_errors")))


def _crosscheck(report: Any, s: _Setup, quiet: bool) -> None:
    from unified import cli
    from unified.runfolder import CROSSCHECK_FILE

    served: dict[str, set[str]] = {}
    for d in report.iter_score_dicts():
        served.setdefault(d["metric"], set()).add(d["backend"])
    for metric, bs in served.items():
        if len(bs) < 2:
            cli.err_console.print(f"note: only {', '.join(sorted(bs))} scored {metric}: nothing to compare it with",
                                  highlight=False, soft_wrap=True)
    cc = report.crosscheck()
    if cc is None:
        cli.err_console.print("note: fewer than two backends produced scores; no crosscheck.json written",
                              highlight=False)
        return
    write_json(s.out / CROSSCHECK_FILE, cc)
    if not quiet:
        from unified.crosscheck import format_crosscheck
        cli.out_console.print(format_crosscheck(cc))


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``compare`` to the app."""
    def body_for(command: str) -> Callable[..., None]:
        def body(file: Path, **values: Any) -> None:
            run_command(command, file, values)
        return body

    app.command("run", help="Score FILE with --metrics on --backend; write OUT/scores.jsonl, summary.json, "
                            "report.html. " + EXIT_CODES_HELP)(make_command("run", body_for("run")))
    app.command("compare", help="Run the same metrics on several backends; write crosscheck.json and the "
                                "report. " + EXIT_CODES_HELP)(make_command("compare", body_for("compare")))
