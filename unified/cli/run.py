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

import contextlib
import inspect
import signal
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import typer

if TYPE_CHECKING:
    from unified.run.options import RunOptions

EXIT_OK, EXIT_GATES, EXIT_USAGE, EXIT_ERRORS = 0, 1, 2, 3
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
EXIT_CODES_HELP = (
    "Exit codes: 0 all scored and gates passed; 1 a gate failed; 2 usage error; "
    "3 tasks failed (unless --allow-errors); 130 Ctrl-C; 143 SIGTERM."
)

_INPUT, _JUDGE, _FOLDER, _GATES, _OUTPUT = "Input", "Judge", "Run folder", "Gates and exit code", "Output"
_COMPARE, _MIGRATE = "Comparing", "Migrating"


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
    commands: tuple[str, ...] = ("run", "compare", "migrate")
    min: int | None = None
    hidden: bool = False


FLAGS: tuple[Flag, ...] = (
    Flag(
        "metrics",
        ("--metrics", "-m"),
        list[str],
        ...,
        "comma list, e.g. faithfulness,mrr,precision@3 (repeatable)",
        _INPUT,
    ),
    Flag(
        "backend",
        ("--backend", "--backends", "-b"),
        Optional[list[str]],
        None,
        "backend or comma list (run: native; compare: native,ragas,deepeval; repeatable)",
        _INPUT,
        commands=("run", "compare"),
    ),
    # --from is the file layout on every command (run, compare, validate, convert, migrate):
    # migrate's backends have their own names, so one flag never means two things
    Flag(
        "from_backend",
        ("--from-backend",),
        str,
        ...,
        "the backend you use now, e.g. deepeval",
        _MIGRATE,
        commands=("migrate",),
    ),
    Flag(
        "to_backend",
        ("--to-backend",),
        str,
        ...,
        "the backend you move to, e.g. ragas",
        _MIGRATE,
        commands=("migrate",),
    ),
    # the old spelling of --to-backend, kept only to point at the new one (exit 2)
    Flag(
        "to_old", ("--to",), Optional[str], None, "renamed --to-backend", _MIGRATE, commands=("migrate",), hidden=True
    ),
    Flag(
        "max_flips",
        ("--max-flips",),
        int,
        0,
        "exit 1 when a gated metric flips pass/fail for more samples than this (default 0: any flip fails)",
        _MIGRATE,
        commands=("migrate",),
        min=0,
    ),
    Flag("map_", ("--map",), Optional[list[str]], None, "rename a field: question=user_input (repeatable)", _INPUT),
    Flag(
        "layout",
        ("--from", "--layout"),
        Optional[str],
        None,
        "layout or format of FILE: deepeval, dingo, "
        "patronus, ragas, ragas_v1, embedchain, jsonl, csv, tsv, ...; traces: otlp, openinference, "
        "mlflow-traces, langfuse (default: detected)",
        _INPUT,
    ),
    Flag(
        "label",
        ("--label",),
        Optional[list[str]],
        None,
        "a column of human labels for a metric, e.g. faithfulness=Label (repeatable)",
        _INPUT,
    ),
    Flag(
        "label_cut",
        ("--label-cut",),
        Optional[list[str]],
        None,
        "METRIC=CUT: graded human labels from CUT up count as a pass, e.g. faithfulness=4 for 1–5 ratings "
        "(default: the metric's bound on 0–1 or 0–10 labels; repeatable)",
        _INPUT,
        commands=("compare",),
    ),
    Flag(
        "labels",
        ("--labels",),
        Optional[Path],
        None,
        "people's labels by sample id from a labels file (labels.jsonl, as `unified-eval review` writes it), "
        "for the agreement with people",
        _INPUT,
        commands=("compare",),
    ),
    Flag(
        "list_sep",
        ("--list-sep",),
        Optional[str],
        None,
        "separator of list cells in CSV/TSV (default: JSON arrays, else | or ;; none = never split)",
        _INPUT,
    ),
    Flag("max_samples", ("--max-samples",), Optional[int], None, "score only the first N rows", _INPUT, min=1),
    Flag(
        "plugins",
        ("--plugins",),
        Optional[list[str]],
        None,
        "modules registering custom metrics (comma list; repeatable)",
        _INPUT,
    ),
    Flag("base_url", ("--base-url",), Optional[str], None, "OpenAI-compatible judge URL", _JUDGE),
    Flag("model", ("--model",), Optional[str], None, "judge model name", _JUDGE),
    Flag(
        "api_key_env",
        ("--api-key-env",),
        Optional[str],
        None,
        "NAME of the environment variable holding the key (default OPENAI_API_KEY)",
        _JUDGE,
    ),
    Flag("judge2_model", ("--judge2-model",), Optional[str], None, "second judge model (native judge B)", _JUDGE),
    Flag(
        "judge2_base_url", ("--judge2-base-url",), Optional[str], None, "second judge URL (default: --base-url)", _JUDGE
    ),
    Flag("single_judge", ("--single-judge",), bool, False, "native: one judge per item (half the calls)", _JUDGE),
    Flag("embedding", ("--embedding",), Optional[str], None, "embeddings: local (offline MiniLM) or a URL", _JUDGE),
    Flag("embedding_model", ("--embedding-model",), Optional[str], None, "model name at the embeddings URL", _JUDGE),
    Flag(
        "structured_output",
        ("--structured-output",),
        Optional[str],
        None,
        "auto | json_schema | llama_cpp | prompt",
        _JUDGE,
    ),
    Flag("concurrency", ("--concurrency",), Optional[int], None, "judge calls in flight (default 8)", _JUDGE, min=1),
    Flag(
        "timeout",
        ("--timeout",),
        Optional[float],
        None,
        "seconds per judge call before it counts as failed (default 60)",
        _JUDGE,
    ),
    Flag(
        "max_retries",
        ("--max-retries",),
        Optional[int],
        None,
        "retries per judge call on 429/5xx/timeouts (default 4)",
        _JUDGE,
        min=0,
    ),
    Flag(
        "price",
        ("--price",),
        Optional[list[str]],
        None,
        "USD per 1M tokens of a model, e.g. gpt-4o-mini=0.15/0.60 (repeatable; also \\[prices] in --config)",
        _JUDGE,
    ),
    Flag(
        "executor", ("--executor",), Optional[str], None, "local (default) or ray: score on a Ray cluster", "Execution"
    ),
    Flag(
        "ray_address",
        ("--ray-address",),
        Optional[str],
        None,
        "with --executor ray: auto (the running cluster) or host:port (default: a local Ray for the run)",
        "Execution",
    ),
    Flag(
        "config",
        ("--config",),
        Optional[Path],
        None,
        "run.toml / run.yaml with \\[judge], \\[judge2], \\[embedding] sections",
        _JUDGE,
    ),
    Flag("out", ("--out", "-o"), Optional[Path], None, "run folder (default runs/<timestamp>)", _FOLDER),
    Flag(
        "resume",
        ("--resume/--no-resume",),
        bool,
        True,
        "skip tasks already in OUT/scores.jsonl (only when sample and configuration match)",
        _FOLDER,
    ),
    Flag("fresh", ("--fresh",), bool, False, "start over in OUT (its scores are removed; the cache stays)", _FOLDER),
    Flag("retry_errors", ("--retry-errors",), bool, False, "score the failed tasks in OUT again", _FOLDER),
    Flag(
        "cache",
        ("--cache",),
        Optional[Path],
        None,
        "judge cache file (default: the shared one in the user cache folder; see `unified-eval cache info`)",
        _FOLDER,
    ),
    Flag("no_cache", ("--no-cache",), bool, False, "do not cache judge calls", _FOLDER),
    Flag(
        "fail_under",
        ("--fail-under",),
        Optional[list[str]],
        None,
        "gates on means, e.g. faithfulness=7,mrr=6 (repeatable; every gate applies)",
        _GATES,
    ),
    Flag(
        "max_error_rate",
        ("--max-error-rate",),
        float,
        0.0,
        "a gated metric fails when more than this share of its tasks failed",
        _GATES,
    ),
    Flag("allow_errors", ("--allow-errors",), bool, False, "exit 0 even when some tasks failed", _GATES),
    Flag(
        "jury",
        ("--jury",),
        Optional[str],
        None,
        "also pool the backends into a backend 'jury': median | mean | majority",
        _COMPARE,
        commands=("compare",),
    ),
    Flag(
        "calibration",
        ("--calibration",),
        Optional[Path],
        None,
        "add `calibrated` (0–10, fitted on people's labels by `unified-eval calibrate`) beside each value",
        _OUTPUT,
        commands=("run", "compare"),
    ),
    Flag(
        "repeats",
        ("--repeats",),
        int,
        1,
        "score each judge-using task N times with seeds 0 to N-1 (test–retest: spread, flips, ICC); "
        "a score is the mean of its repeats",
        _JUDGE,
        commands=("run", "compare"),
        min=1,
    ),
    Flag(
        "batch",
        ("--batch",),
        bool,
        False,
        "send judge calls as Batch API jobs (OpenAI-compatible judges; half price, answers within "
        "the provider's 24 h window); the jobs are kept in OUT/batches.jsonl and picked up on resume",
        _JUDGE,
        commands=("run", "compare"),
    ),
    Flag(
        "batch_poll",
        ("--batch-poll",),
        Optional[float],
        None,
        "--batch: the longest wait between two status checks of a job (default 30; checks start at 1 s)",
        _JUDGE,
        commands=("run", "compare"),
    ),
    Flag(
        "batch_window",
        ("--batch-window",),
        Optional[float],
        None,
        "--batch: seconds without a new judge request before the waiting ones go out as one job (default 1)",
        _JUDGE,
        commands=("run", "compare"),
    ),
    Flag(
        "verbose",
        ("--verbose", "-v"),
        bool,
        False,
        "also print threshold translations and agreement with people (default: summary, agreement, disagreements)",
        _OUTPUT,
        commands=("compare",),
    ),
    Flag("quiet", ("--quiet", "-q"), bool, False, "print nothing but errors (stderr) and gate results", _OUTPUT),
    Flag("dry_run", ("--dry-run",), bool, False, "count tasks and estimate calls; call nothing", _OUTPUT),
    Flag(
        "mlflow",
        ("--mlflow",),
        Optional[str],
        None,
        "log the run to MLflow at TRACKING_URI: a folder or file:///... "
        "(offline file store) or a server URL (extra mlflow)",
        _OUTPUT,
    ),
    Flag(
        "mlflow_timeout",
        ("--mlflow-timeout",),
        Optional[float],
        None,
        "seconds the whole MLflow log may take "
        "(default $UNIFIED_MLFLOW_TIMEOUT, else 60); past it: one error line, exit 2",
        _OUTPUT,
    ),
)


# what --help shows after each flag that takes a value
_METAVARS = {
    "metrics": "NAMES",
    "backend": "NAMES",
    "map_": "SRC=FIELD",
    "layout": "LAYOUT",
    "label": "METRIC=COLUMN",
    "labels": "FILE",
    "list_sep": "SEP",
    "max_samples": "N",
    "batch_poll": "SECONDS",
    "batch_window": "SECONDS",
    "plugins": "MODULES",
    "base_url": "URL",
    "model": "NAME",
    "api_key_env": "VAR",
    "judge2_model": "NAME",
    "judge2_base_url": "URL",
    "embedding": "local|URL",
    "embedding_model": "NAME",
    "structured_output": "MODE",
    "concurrency": "N",
    "timeout": "SECONDS",
    "max_retries": "N",
    "price": "MODEL=IN/OUT",
    "config": "FILE",
    "out": "DIR",
    "cache": "FILE",
    "fail_under": "GATES",
    "max_error_rate": "RATE",
    "jury": "METHOD",
    "repeats": "N",
    "calibration": "FILE",
    "from_backend": "BACKEND",
    "to_backend": "BACKEND",
    "to_old": "BACKEND",
    "max_flips": "N",
    "mlflow": "TRACKING_URI",
    "mlflow_timeout": "SECONDS",
    "executor": "local|ray",
    "ray_address": "ADDR",
}


def help_of(name: str) -> str:
    """The help text of flag ``name`` (for commands that take the same input flags)."""
    return next(f.help for f in FLAGS if f.name == name)


def flag_names(command: str) -> list[str]:
    return [f.name for f in FLAGS if command in f.commands]


def _param(flag: Flag) -> inspect.Parameter:
    extra: dict[str, Any] = {"help": flag.help, "rich_help_panel": flag.panel}
    if flag.min is not None:
        extra["min"] = flag.min
    if flag.hidden:
        extra["hidden"] = True
    if flag.type is not bool:
        extra["metavar"] = _METAVARS.get(flag.name, "TEXT")
    return inspect.Parameter(
        flag.name,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=flag.type,
        default=typer.Option(flag.default, *flag.decls, **extra),
    )


def make_command(command: str, body: Callable[..., None]) -> Callable[..., None]:
    """A typer command function for ``command`` whose flags are ``FLAGS``; it calls
    ``body(file, **flags)``."""
    file_param = inspect.Parameter(
        "file",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=Path,
        default=typer.Argument(..., help="samples: JSONL, JSON, CSV, TSV or Parquet"),
    )

    def command_fn(file: Path, **kwargs: Any) -> None:
        body(file, **kwargs)

    command_fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [file_param] + [_param(f) for f in FLAGS if command in f.commands]
    )
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


# ---------------------------------------------------------------- the flow

DEFAULT_BACKENDS = {"run": "native", "compare": "native,ragas,deepeval", "benchmark": "native,embedding"}


@dataclass(frozen=True)
class JudgeFlags:
    """Where the run's judges come from, as the flags say it; ``resolve`` applies the one
    rule (``unified.judge.resolve_judges``): the flags, then the environment, then
    ``--config``."""

    base_url: str | None = None
    model: str | None = None
    judge2_model: str | None = None
    judge2_base_url: str | None = None
    embedding: str | None = None
    embedding_model: str | None = None
    single_judge: bool = False
    cache: Path | None = None
    no_cache: bool = False
    config: Path | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    max_retries: int | None = None
    concurrency: int | None = None
    structured_output: str | None = None

    def resolve(self, cached: bool = True) -> tuple[Any, dict[str, Any]]:
        """(judges, their description); ``cached=False``: no cache (a dry run opens none)."""
        from unified.cli import common as cli
        from unified.judge import resolve_judges

        if self.cache is not None and self.cache.is_dir():
            raise cli.UserError(
                f"--cache {self.cache}: is a folder; name the cache file, e.g. {self.cache / 'judge_cache.sqlite'}"
            )
        if self.judge2_model and not (self.model or self.base_url or self.config):
            from unified.judge import JudgeConfig

            if JudgeConfig.from_env() is None:
                raise cli.UserError("--judge2-model needs a first judge (--base-url/--model)")
        judge = {"base_url": self.base_url, "model": self.model} if (self.model or self.base_url) else None
        judge2 = {"model": self.judge2_model, "base_url": self.judge2_base_url} if self.judge2_model else None
        overrides = {
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "structured_output": self.structured_output,
        }
        return resolve_judges(
            judge,
            judge2,
            self.embedding,
            single_judge=self.single_judge,
            cache=False if self.no_cache or not cached else (self.cache or True),
            config_file=self.config,
            api_key_env=self.api_key_env,
            overrides=overrides,
            embedding_model=self.embedding_model,
        )


@dataclass(frozen=True)
class Invocation:
    """One run/compare/migrate invocation, read once from its flags (``read``):
    ``options``, the run's ``RunOptions`` — what ``unified.api.evaluate`` takes (what
    needs the environment or ``--config`` is added by ``_setup``: the judges, the backend
    objects, the prices) — ``judge``, where the judges come from, and what only the
    command decides: the metrics and backends as written, the gates and exit rules, what
    it prints, ``--dry-run``, ``--mlflow``."""

    command: str
    file: Path
    metrics: str
    options: RunOptions
    judge: JudgeFlags
    backend: str | None = None
    from_backend: str | None = None
    to_backend: str | None = None
    to_old: str | None = None
    plugins: str | None = None
    price: list[str] | None = None
    fail_under: list[str] | None = None
    max_error_rate: float = 0.0
    allow_errors: bool = False
    label_cut: list[str] | None = None
    labels: Path | None = None
    max_flips: int = 0
    verbose: bool = False
    quiet: bool = False
    dry_run: bool = False
    mlflow: str | None = None
    mlflow_timeout: float | None = None

    @classmethod
    def read(cls, command: str, file: Path, values: dict[str, Any]) -> "Invocation":
        """The invocation ``values`` (typer's flag values by parameter name) describe; the
        one place the flags are read."""
        own = {f.name for f in fields(cls)} - {"command", "file", "options", "judge"}
        judge = JudgeFlags(**{f.name: values[f.name] for f in fields(JudgeFlags) if values.get(f.name) is not None})
        return cls(
            command=command,
            file=file,
            options=_run_options(command, file, values),
            judge=judge,
            **{k: _one_list(k, values[k]) for k in own if values.get(k) is not None},
        )

    @property
    def out(self) -> Path:
        """The run folder (``--out``, else ``runs/<timestamp>``)."""
        assert self.options.out is not None  # the CLI always names one (_run_options)
        return Path(self.options.out)


_COMMA_LISTS = ("metrics", "backend", "plugins")  # repeatable flags whose items are comma lists


def _one_list(name: str, value: Any) -> Any:
    """A repeatable comma-list flag as one comma list (``-m a,b -m c`` is ``a,b,c``)."""
    return ",".join(value) if name in _COMMA_LISTS else value


def _run_options(command: str, file: Path, v: dict[str, Any]) -> RunOptions:
    """The run's ``RunOptions`` from the flags (the judges, backends and prices come later)."""
    from datetime import datetime

    from unified.cli import common as cli
    from unified.run.options import RunOptions

    quiet = bool(v.get("quiet"))
    return RunOptions(
        out=v.get("out") or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S"),
        resume=v.get("resume", True),
        fresh=bool(v.get("fresh")),
        retry_errors=bool(v.get("retry_errors")),
        concurrency=v.get("concurrency") or 16,
        progress=False if quiet else "auto",
        show_summary=not quiet,
        **cli.read_options(v.get("map_"), v.get("layout"), v.get("label"), v.get("list_sep")),
        max_samples=v.get("max_samples"),
        single_judge=bool(v.get("single_judge")),
        jury=v.get("jury"),
        repeats=v.get("repeats") or 1,
        calibration=v.get("calibration"),
        executor=v.get("executor") or "local",
        ray_address=v.get("ray_address"),
        batch=_batch(v.get("batch"), v.get("batch_poll"), v.get("batch_window")),
        run_config={"command": command},
        command=command_line(command, file, v),
    )


def run_command(command: str, file: Path, values: dict[str, Any], argv: list[str] | None = None) -> None:
    """What ``run`` and ``compare`` do: check the arguments, run, report, exit. ``argv``:
    the command line that resumes the run, when FILE is not what the user typed
    (``benchmark`` writes its input)."""
    from dataclasses import replace

    from unified.cli import common as cli
    from unified.run.interrupts import RunInterrupted

    with cli.plain_warnings(), _sigterm_deferred() as terminated:
        with cli.user_errors():
            inv = Invocation.read(command, file, values)
            if argv is not None:
                inv = replace(inv, options=replace(inv.options, command=argv))
            setup = _setup(inv)
            if setup is None:
                return
        if terminated:  # SIGTERM while plugins, judges and backends loaded: nothing scored yet
            cli.err_console.print("interrupted by SIGTERM before the run started", highlight=False)
            raise typer.Exit(EXIT_SIGTERM)
        try:
            with cli.user_errors():
                report = _evaluate(inv, setup)
        except RunInterrupted as e:
            if e.complete:  # every task scored and the folder written: compare's files too, then exit
                from unified.report import Report

                with cli.user_errors():
                    _after(inv, setup, Report.from_dir(inv.out))
            raise typer.Exit(EXIT_SIGTERM if e.signal == "SIGTERM" else EXIT_SIGINT) from None
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_SIGINT) from None
        with cli.user_errors():  # a report or cross-check that cannot be written: one line, exit 2
            code = _after(inv, setup, report)
        if terminated:  # SIGTERM while the cross-check or report was written: they are whole now
            cli.err_console.print(
                f"interrupted by SIGTERM after the run; its folder is complete: {inv.out}", highlight=False
            )
            code = EXIT_SIGTERM
        raise typer.Exit(code)


@contextlib.contextmanager
def _sigterm_deferred() -> Iterator[list[int]]:
    """Outside the run itself (which handles SIGTERM like Ctrl-C) a SIGTERM is remembered,
    not obeyed at once, so the files being written end whole; the command exits 143 after."""
    got: list[int] = []
    try:
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    except ValueError:  # not the main thread (an embedding application): nothing to defer
        yield got
        return
    try:
        yield got
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


@dataclass
class _Setup:
    """What the checks before the run decided: the metrics, the backends (names and
    objects), the gates, the judges, the prices and the MLflow logging."""

    refs: list[Any]
    backends: list[str]
    backend_objs: list[Any]
    gates: dict[str, float]
    judges: Any
    judge_desc: dict[str, Any]
    label_cuts: dict[str, float]  # --label-cut, by canonical metric (compare)
    people: Any = None  # --labels: the labels file's history (unified.data.labelfile), compare
    mlflow: Any = None  # --mlflow: unified.api's MLflow logging, checked before any judge is paid
    prices: Any = None  # --price and --config's [prices]


def _setup(inv: Invocation) -> _Setup | None:
    """Every check that can fail before a judge is paid, in the order a user fixes them;
    None after a dry run."""
    from unified.analysis.gates import parse_gates
    from unified.api import mlflow_logging
    from unified.cli import common as cli
    from unified.metrics import load_plugins, parse_metrics

    cli.load_plugins(load_plugins, inv.plugins)
    refs = parse_metrics(inv.metrics)
    if not refs:
        raise cli.UserError("--metrics is empty; name at least one, e.g. --metrics precision@3")
    backends = _backends(inv)
    gates = parse_gates(inv.fail_under)
    _check_gates_name_metrics(gates, refs)
    cuts = _label_cuts(inv.label_cut, refs)  # a bad --label-cut is said before any judge is paid
    people = _people(inv.labels)  # so is a --labels file that is missing or holds no label
    # a missing piece, a URI that cannot work or a bad budget: said before any judge is paid
    mlflow = mlflow_logging(inv.mlflow, inv.mlflow_timeout)
    if not inv.file.exists():
        raise cli.UserError(f"no such file: {inv.file}")
    if inv.dry_run:
        dry_run(inv, refs, backends)
        return None
    if inv.out.exists() and not inv.out.is_dir():
        raise cli.UserError(f"--out {inv.out}: is a file, not a folder")
    judges, desc = inv.judge.resolve()
    from unified.adapters import get_backend

    # run_dir: framework backends put their stray files (ragas's uuid) in the run folder
    objs = [get_backend(b, judges, run_dir=inv.out) for b in backends]
    _check_parameters(refs, objs)
    return _Setup(refs, backends, objs, gates, judges, desc, cuts, people, mlflow, _prices(inv.price, inv.judge.config))


def _people(path: Path | None) -> Any:
    """The labels file ``--labels`` names, read (``unified.data.labelfile``), or None."""
    if path is None:
        return None
    from unified.data.labelfile import read_people_labels

    return read_people_labels(path)


def dry_run(inv: Invocation, refs: list[Any], backends: list[str]) -> None:
    """Count tasks and estimate judge calls, tokens and (with prices) dollars per (backend,
    metric) without calling anything or importing a framework: the registry knows what a
    backend implements and what a metric costs; the run plan's own rule (``why_not``) says
    which pairs the run would skip for want of a judge."""
    from unified.adapters import backend_names, estimate_calls, is_backend
    from unified.cli import common as cli

    o = inv.options
    for b in backends:
        if not is_backend(b):
            raise cli.UserError(f"unknown backend '{b}'; known: {', '.join(sorted(backend_names()))}")
    judges, _ = inv.judge.resolve(cached=False)
    served = _dry_plan(refs, backends, judges)
    if not any(served.values()):
        raise cli.UserError("nothing to run: no requested metric is available on the chosen backends")
    samples, n_bad = _dry_samples(inv)
    single = o.single_judge
    held = _held_tasks(inv)
    rows: list[dict[str, Any]] = []
    for b in (b for b in backends if served[b]):
        done = None if held is None else held.done_on(b)
        est = estimate_calls(b, samples, served[b], single_judge=single, done=done)
        once = est if single else estimate_calls(b, samples, served[b], single_judge=True, done=done)
        rows += [_with_judge_b_share(r, one, show=judges.chat2 is not None) for r, one in zip(est, once)]
    model_a = getattr(judges.chat, "model", None)
    prices = _prices(inv.price, inv.judge.config)
    unpriced = _price_rows(rows, prices, model_a, getattr(judges.chat2, "model", None) or model_a)
    for line in judges.where():  # where the calls would go
        cli.out_console.print(line, highlight=False, soft_wrap=True)
    _print_rows(rows, f"dry run: {len(samples)} samples ({n_bad} bad rows), nothing called")
    cli.out_console.print(
        "a step that several metrics share is counted once, on the first metric that needs it", highlight=False
    )
    _dry_notes(o, held, unpriced)


def _dry_notes(o: RunOptions, held: "_HeldTasks | None", unpriced: list[str]) -> None:
    """What the dry run's table leaves out: tasks ``--out`` holds, the repeats, unpriced models."""
    from unified.cli import common as cli

    if held is not None and held.skipped:
        cli.out_console.print(
            f"--out {o.out}: {held.skipped} task(s) already there are left out (a run into it skips them"
            + ("" if o.retry_errors else ", failed ones too unless --retry-errors")
            + "; if its configuration changed, the run refuses the folder and --fresh scores every task)"
            + (" — the repeats of unfinished tasks already there are counted again" if o.repeats > 1 else ""),
            highlight=False,
            soft_wrap=True,
        )
    if o.repeats > 1:  # the table is one repeat's worth
        cli.out_console.print(
            f"--repeats {o.repeats}: every judge call, token and dollar above is paid {o.repeats} times "
            "(once per repeat; deterministic and embedding-only metrics are scored once)",
            highlight=False,
            soft_wrap=True,
        )
    for model in unpriced:
        cli.out_console.print(
            f"no price for model {model!r}: the cost of its calls is unknown (—); "
            f"add --price '{model}=IN/OUT' (USD per 1M tokens)",
            highlight=False,
            soft_wrap=True,
        )


def _dry_plan(refs: list[Any], backends: list[str], judges: Any) -> dict[str, list[Any]]:
    """backend -> the refs a run would score there; the others warned about, as a run does."""
    from types import SimpleNamespace

    from unified.adapters import backend_info, implements
    from unified.adapters.catalog import declared_requirements
    from unified.cli import common as cli
    from unified.run.runplan import Skipped, skip_warnings, why_not

    skipped: list[Skipped] = []
    served: dict[str, list[Any]] = {}
    for b in backends:
        # a stand-in the plan's rule can ask without importing the backend's framework
        proxy = SimpleNamespace(
            name=b,
            uses_judges=backend_info(b).uses_judges,
            implements=lambda r, b=b: implements(b, r),
            requirements=lambda r, b=b: declared_requirements(b, r),  # native's answer_relevancy embeds
        )
        served[b] = []
        for r in refs:
            reason = why_not(r, proxy, judges)
            (skipped.append(Skipped(r.name, b, reason)) if reason else served[b].append(r))
    for w in skip_warnings(skipped, {r.name for rs in served.values() for r in rs}):
        cli.err_console.print(f"warning: {w}", highlight=False, soft_wrap=True)
    return served


class _HeldTasks:
    """The tasks a run into ``--out`` would skip, from its ``scores.jsonl``: a line of the
    same sample (same content hash) for the same metric and backend — a failed or degraded
    one too, unless ``--retry-errors`` (the runner's rule: ``RunFolder.scan`` and
    ``drop_errors``). ``skipped`` counts the tasks the estimate left out."""

    def __init__(self, scores: Path, retry_errors: bool):
        from unified.run.runfolder import is_score_line, iter_lines, line_key, retried

        self.lines: dict[tuple[bool, str, str, str], Any] = {}
        for d in iter_lines(scores):
            if is_score_line(d) and not (retry_errors and retried(d)):
                self.lines[line_key(d)] = d.get("sample_hash")
        self.hashes: dict[int, str] = {}
        self.left_out: set[tuple[str, str, str]] = set()

    @property
    def skipped(self) -> int:
        return len(self.left_out)

    def done_on(self, backend: str) -> Any:
        def done(sample: Any, ref: Any) -> bool:
            stored = self.lines.get((False, sample.id, ref.name, backend))
            if stored is None or stored != self.hashes.setdefault(id(sample), sample.content_hash()):
                return False
            self.left_out.add((sample.id, ref.name, backend))
            return True

        return done


def _held_tasks(inv: Invocation) -> _HeldTasks | None:
    """What ``--out`` already holds, when a run would resume it (not ``--fresh`` or
    ``--no-resume``: either clears the folder)."""
    from unified.run.runfolder import SCORES_FILE

    o, scores = inv.options, inv.out / SCORES_FILE
    if o.fresh or not o.resume or not scores.is_file():
        return None
    return _HeldTasks(scores, o.retry_errors)


def _dry_samples(inv: Invocation) -> tuple[list[Any], int]:
    from unified.data.io import read_samples

    o = inv.options
    samples, n_bad = [], 0
    reader = read_samples(str(inv.file), o.mapping, fmt=o.fmt, layout=o.layout, labels=o.labels, list_sep=o.list_sep)
    for i, item in enumerate(reader):
        if o.max_samples is not None and i >= o.max_samples:
            break
        if hasattr(item, "user_input"):
            samples.append(item)
        else:
            n_bad += 1
    return samples, n_bad


def _with_judge_b_share(row: dict[str, Any], once: dict[str, Any], *, show: bool) -> dict[str, Any]:
    """``row`` with judge B's share kept aside for pricing (and shown as ``judge_b_calls``
    when judge B is a model of its own): a dual-judge step asks judge A and judge B once
    each and every other call goes to judge A, so B's share is exactly what judging once
    (``single_judge``) saves, ``B = estimate(dual) − estimate(single)`` — 0 for backends
    that judge once."""
    if row.get("calls") is None:
        return row
    share = {k: row[k] - once[k] for k in ("calls", "input_tokens", "output_tokens")}
    return {**row, **({"judge_b_calls": share["calls"]} if show else {}), "_judge_b": share}


def _price_rows(rows: list[dict[str, Any]], prices: Any, model_a: str | None, model_b: str | None) -> list[str]:
    """Add ``usd`` to each row (USD per 1M tokens): judge B's share of the tokens at judge
    B's price, the rest at judge A's; rows of a backend that calls no LLM cost 0, and a
    row with calls for a model the table has no price for costs ``—`` (unknown). Returns
    the models that had calls and no price."""
    from unified.judge.prices import batch_price

    unpriced: dict[str, None] = {}
    for r in rows:
        share = r.pop("_judge_b", None) or {"input_tokens": 0, "output_tokens": 0}
        if not prices:
            continue
        if not r.get("calls"):
            r["usd"] = r["usd_batch"] = 0.0 if r.get("calls") == 0 else None
            continue
        b_in, b_out = share["input_tokens"], share["output_tokens"]
        parts = [(model_a, r["input_tokens"] - b_in, r["output_tokens"] - b_out), (model_b, b_in, b_out)]
        missing = [m or "?" for m, t_in, t_out in parts if (t_in or t_out) and (prices.get(m) if m else None) is None]
        unpriced.update(dict.fromkeys(missing))
        r["usd"] = None if missing else _usd(parts, lambda m: prices[m])
        # the same calls through the Batch API (--batch): the batch price (unified.judge.prices)
        r["usd_batch"] = None if missing else _usd(parts, lambda m: batch_price(prices, m))
    return list(unpriced)


def _usd(parts: list[tuple[Any, int, int]], price: Any) -> float:
    """Σ (tokens_in · in + tokens_out · out) / 1e6 over ``(model, tokens_in, tokens_out)``."""
    return round(sum((t_in * price(m)[0] + t_out * price(m)[1]) / 1e6 for m, t_in, t_out in parts if t_in or t_out), 6)


def _print_rows(rows: list[dict[str, Any]], title: str) -> None:
    from rich.table import Table

    from unified.cli import common as cli

    t = Table(title=title)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    for k in keys:
        t.add_column(k)
    for r in rows:
        t.add_row(*["—" if r.get(k) is None else str(r.get(k, "")) for k in keys])
    cli.out_console.print(t)


def _check_parameters(refs: list[Any], backends: list[Any]) -> None:
    """A bracket parameter that no chosen backend able to run the metric reads is a usage
    error (a typo, a parameter of another backend), found before any judge is paid."""
    from unified.cli import common as cli

    for r in refs:
        able = [b for b in backends if b.implements(r)]
        problems = [p for b in able if (p := b.param_error(r))]
        if able and len(problems) == len(able):
            raise cli.UserError(problems[0])


def _check_gates_name_metrics(gates: dict[str, float], refs: list[Any]) -> None:
    """A gate on a metric the run does not score is a usage error, found before any judge
    is paid (after the run it could only fail)."""
    from unified.analysis.gates import gate_matches
    from unified.cli import common as cli

    for gate in gates:
        if not any(gate_matches(gate, r.name) for r in refs):
            raise cli.UserError(
                f"--fail-under {gate}: not among --metrics "
                f"({', '.join(r.name for r in refs)}); add it there or drop the gate"
            )


def _backends(inv: Invocation) -> list[str]:
    from unified.cli import common as cli

    if inv.command == "migrate":
        if inv.to_old:
            raise cli.UserError(
                "--to is now --to-backend on migrate (and --from is FILE's layout on every command): "
                "migrate FILE --from-backend deepeval --to-backend ragas"
            )
        if inv.from_backend == inv.to_backend:
            raise cli.UserError(f"--from-backend and --to-backend are both '{inv.from_backend}'; name two backends")
        return [str(inv.from_backend), str(inv.to_backend)]
    backends = list(dict.fromkeys(cli.split_list(inv.backend or DEFAULT_BACKENDS[inv.command])))
    if inv.command == "compare" and len(backends) < 2:
        raise cli.UserError("compare needs at least two backends, e.g. --backends native,embedding")
    return backends


def _evaluate(inv: Invocation, s: _Setup) -> Any:
    """The run, through ``unified.api.evaluate`` (the one path every caller takes)."""
    from dataclasses import replace

    from unified.api import evaluate

    opts = replace(
        inv.options,
        backends=s.backend_objs,
        judges=s.judges,
        prices=s.prices,
        run_config={"judges": s.judge_desc, **inv.options.run_config},
    )
    return evaluate(str(inv.file), s.refs, **opts.keywords())


def _batch(batch: bool | None, poll: float | None, window: float | None) -> Any:
    """``--batch`` (with ``--batch-poll`` / ``--batch-window``) as ``RunOptions.batch``."""
    from unified.cli import common as cli

    given = {k: v for k, v in (("batch_poll", poll), ("batch_window", window)) if v is not None}
    if not batch:
        if given:
            raise cli.UserError(f"--{next(iter(given)).replace('_', '-')} needs --batch")
        return False
    settings: dict[str, float] = {}
    if poll is not None:
        settings["poll_max"] = float(poll)
        settings["poll_first"] = min(1.0, float(poll))
    if window is not None:
        settings["window"] = float(window)
    return settings or True


def _prices(price: list[str] | None, config: Path | None) -> Any:
    """``--price`` and the ``[prices]`` of ``--config`` as one table (None: no prices)."""
    from unified.judge.prices import parse_prices

    return parse_prices(price, config_file=config) or None


def _after(inv: Invocation, s: _Setup, report: Any) -> int:
    """Cross-check (compare), gates, and the exit code; prints what it decides."""
    from unified.analysis.gates import check_gates
    from unified.cli import common as cli
    from unified.run.runfolder import CROSSCHECK_FILE, MIGRATION_FILE, PARQUET_FILE, REPORT_FILE

    out = inv.out
    if inv.command == "compare":
        _crosscheck(
            report, out, inv.quiet, inv.verbose, cuts=s.label_cuts, calibration=inv.options.calibration, people=s.people
        )
    flips_ok = _migration(report, inv, s) if inv.command == "migrate" else True
    if inv.command in ("compare", "migrate"):  # the page shows what those files say
        report.write_html(out / REPORT_FILE)
    extra = "".join(f", {name}" for name in (PARQUET_FILE, CROSSCHECK_FILE, MIGRATION_FILE) if (out / name).exists())
    if not inv.quiet and not (getattr(report, "unchanged", False) and inv.command == "run"):  # -q: errors and gates
        cli.out_console.print(f"wrote {out}/scores.jsonl, summary.json, report.html{extra}", highlight=False)
    summary = report.summary()
    written = report.run_summary()
    n_failed = _unscored(report, summary, written, out)
    gates_ok = True
    if s.gates:  # --fail-under gates the means on every command (migrate also translates them, above)
        degraded = report.degraded_counts() if written.get("n_degraded") else None  # a 1M no-op reads no lines
        gates_ok, lines = check_gates(summary, s.gates, inv.max_error_rate, degraded)
        for line in lines:
            (cli.out_console if line.startswith("PASS") else cli.err_console).print(line, highlight=False)
    code = exit_code(n_failed, gates_ok and flips_ok, inv.allow_errors)
    if s.mlflow is not None:  # last: the MLflow run records the exit code and the cross-check
        code = log_cli_run(report, s.mlflow, code, "none" if not s.gates else "passed" if gates_ok else "failed")
    return code


def _unscored(report: Any, summary: list[Any], written: dict[str, Any], out: Path) -> int:
    """The failures the exit code counts — failed and degraded tasks, metrics asked for
    and never scored, an input without rows — each said on stderr."""
    from unified.cli import common as cli

    n_failed = sum(a.errors for a in summary) + int(written.get("n_degraded") or 0)
    for u in written.get("unserved_metrics") or []:
        n_failed += 1  # asked for, never scored: not a pass
        cli.err_console.print(f"error: {u['metric']} was not scored: {u['reason']}", highlight=False, soft_wrap=True)
    if not summary and (written.get("counts") or {}).get("rows_read") == 0:
        n_failed += 1  # an empty export is a broken pipeline upstream, not a passing run
        cli.err_console.print("error: the input has no rows: nothing was scored", highlight=False, soft_wrap=True)
    if summary and not any(a.scored for a in summary):
        cli.err_console.print(
            f"error: no task produced a score; fix the cause above and rerun with --retry-errors --out {out}",
            highlight=False,
            soft_wrap=True,
        )
    return n_failed


def _migration(report: Any, inv: Invocation, s: _Setup) -> bool:
    """Write migration.json, print it and its verdicts; False when too many samples flip."""
    from unified.analysis.migrate import flips_exceed, format_migration, migration_report, migration_verdicts
    from unified.cli import common as cli
    from unified.run.runfolder import MIGRATION_FILE, write_json
    from unified.run.runindex import stamp_lines

    m = migration_report(
        list(report.iter_scores()),
        report.sample_objects(),
        s.backends[0],
        s.backends[1],
        [r.name for r in s.refs],
        s.gates or None,
    )
    write_json(inv.out / MIGRATION_FILE, stamp_lines(inv.out, m))
    if not inv.quiet:
        cli.out_console.print(format_migration(m))
    limits = inv.max_flips, inv.max_error_rate
    for line in migration_verdicts(m, *limits):
        (cli.out_console if line.startswith("PASS") else cli.err_console).print(line, highlight=False, soft_wrap=True)
    return not flips_exceed(m, *limits)


def _label_cuts(label_cut: list[str] | None, refs: Any) -> dict[str, float]:
    """``--label-cut`` as {canonical metric: cut}; a cut for a metric the run does not
    score (``refs``) is refused (it would apply to nothing, the default cut to the rest)."""
    from unified.cli import common as cli

    cuts = cli.label_cuts(label_cut)
    scored = {r.canonical for r in refs}
    for name in cuts:
        if name not in scored:
            raise cli.UserError(
                f"--label-cut names {name}, which this run does not score (it scores {', '.join(sorted(scored))})"
            )
    return cuts


def _crosscheck(
    report: Any,
    out: Path,
    quiet: bool,
    verbose: bool = False,
    cuts: dict[str, float] | None = None,
    calibration: Any = None,
    people: Any = None,
) -> None:
    from unified.cli import common as cli
    from unified.run.runfolder import CROSSCHECK_FILE

    for note in report.use_labels(people) if people is not None else ():  # --labels: before any figure
        cli.err_console.print(f"note: --labels: {note}", highlight=False, soft_wrap=True)
    served: dict[str, set[str]] = {}
    for d in report.iter_score_dicts():
        served.setdefault(d["metric"], set()).add(d["backend"])
    for metric, bs in served.items():
        if len(bs) < 2:
            cli.err_console.print(
                f"note: only {', '.join(sorted(bs))} scored {metric}: nothing to compare it with",
                highlight=False,
                soft_wrap=True,
            )
    cc = report.crosscheck(label_cuts=cuts)
    if cc is None:
        cli.err_console.print(
            "note: fewer than two backends produced scores; no crosscheck.json written", highlight=False
        )
        return
    from unified.run.runfolder import write_json

    if any(d.get("calibrated") is not None for d in report.iter_score_dicts()):
        cc["on_calibrated"] = (report.crosscheck(on="calibrated", label_cuts=cuts) or {}).get("metrics", {})
        if calibration is not None:
            from unified.analysis.calibrated import in_sample_notes

            cc["on_calibrated_notes"] = in_sample_notes(calibration, report, cuts)
            for note in cc["on_calibrated_notes"]:
                cli.err_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    from unified.run.runindex import stamp_lines

    write_json(out / CROSSCHECK_FILE, stamp_lines(out, cc))
    if not quiet:
        from unified.analysis.crosscheck import format_crosscheck

        cli.out_console.print(format_crosscheck(cc, verbose=verbose))


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``compare`` to the app."""

    def body_for(command: str) -> Callable[..., None]:
        def body(file: Path, **values: Any) -> None:
            run_command(command, file, values)

        return body

    app.command(
        "run",
        help="Score FILE with --metrics on --backend; write OUT/scores.jsonl, summary.json, "
        "report.html. " + EXIT_CODES_HELP,
    )(make_command("run", body_for("run")))
    app.command(
        "compare",
        help="Run the same metrics on several backends; write crosscheck.json and the report. " + EXIT_CODES_HELP,
    )(make_command("compare", body_for("compare")))
    app.command(
        "migrate",
        help="Score FILE on --from-backend and --to-backend; show per metric the translated gates, the pass "
        "agreement and the samples whose pass/fail flips; write migration.json. Exit 1 "
        "when a gated metric flips for more than --max-flips samples. " + EXIT_CODES_HELP,
    )(make_command("migrate", body_for("migrate")))


def log_cli_run(report: Any, logging: Any, exit_code: int, gates: str) -> int:
    """``--mlflow`` at the end of ``run``/``compare``: log through ``unified.api``'s MLflow
    logging (``logging``, within its budget), say where, and return the exit code (a failed
    or overdue log turns a 0 into 2: the user asked for it, it did not happen; SIGINT /
    SIGTERM while logging give 130 / 143). The MLflow run records the exit code and the
    gates, so it is logged after them, not by ``evaluate``."""
    import warnings

    from unified.platforms import mlflow_log as ml
    from unified.redact import redact_url

    tags = {"unified.exit_code": str(exit_code), "unified.gates": gates}
    try:
        with warnings.catch_warnings(), ml.signals_interrupt():
            warnings.simplefilter("ignore", FutureWarning)  # the file store's note is printed below, once
            run_id = logging.log(report, tags=tags)
    except ml.MlflowInterrupted as e:
        print(
            f"interrupted by {e.signal} while logging to MLflow; the run folder is complete",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_SIGTERM if e.signal == "SIGTERM" else EXIT_SIGINT
    except (ml.MlflowLogError, ml.MlflowUnavailable, ml.MlflowUriError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return exit_code or EXIT_USAGE
    uri = logging.uri
    print(f"logged MLflow run {run_id} to {redact_url(uri)}", flush=True)
    note = ml.file_store_note(uri)
    if note is not None:
        print(f"note: {note}", file=sys.stderr, flush=True)
    return exit_code


def app_help() -> str:
    """The top-level ``--help`` line, its backends read from the registry (a new room is
    listed without an edit here)."""
    from unified.adapters import backend_names

    return (
        f"Evaluate RAG samples with one metric registry over {len(backend_names())} backends "
        f"({', '.join(backend_names())}), every score on 0–10."
    )
