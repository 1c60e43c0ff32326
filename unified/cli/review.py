"""``unified-eval review RUN_DIR``: label, in the browser, where the backends disagree
(``unified.review``; the ``review`` extra)."""

from __future__ import annotations

import getpass
import importlib.util
from pathlib import Path
from typing import Any, Optional

import typer

from unified.cli.common import err_console, out_console, user_errors


def _default_annotator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's uid without a passwd line)
        return "anonymous"


def review_cmd(
    run_dir: Path = typer.Argument(..., help="a run folder (compare's: several backends per metric)"),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="port on 127.0.0.1 (0: any free port)"),
    annotator: Optional[str] = typer.Option(
        None, "--annotator", metavar="NAME", help="whose labels these are (default: your login name)"
    ),
    plugins: Optional[list[str]] = typer.Option(
        None, "--plugins", metavar="MODULES", help="modules registering custom metrics, as for run (rubrics: 0–10)"
    ),
    mlflow: Optional[str] = typer.Option(
        None, "--mlflow", metavar="URI", help="when stopped, push the labels to the samples' MLflow traces"
    ),
) -> None:
    """Serve RUN_DIR's samples in a local web page, the most disputed first, and append each
    label to RUN_DIR/labels.jsonl (read by compare/calibrate --labels). Ctrl-C stops it."""
    with user_errors():
        if not (run_dir / "scores.jsonl").exists():
            raise FileNotFoundError(f"{run_dir}: not a run folder (no scores.jsonl)")
        try:
            from unified.review.server import serve
        except ImportError as e:
            raise ImportError(f"review needs the review extra: pip install 'unified-rag-eval[review]' ({e})") from None
        name = annotator if annotator is not None else _default_annotator()
        if mlflow is not None and importlib.util.find_spec("mlflow") is None:  # said before an hour of labelling
            raise ImportError("--mlflow needs the mlflow extra: pip install 'unified-rag-eval[mlflow]'")
        if plugins:  # a rubric metric a plugin registers asks people for a grade, not pass/fail
            from unified.metrics import load_plugins

            load_plugins(plugins)

        def say(url: str) -> None:
            out_console.print(f"reviewing {run_dir} as {name}: open {url}", highlight=False, soft_wrap=True)
            err_console.print("labels go to labels.jsonl in the run folder as you make them; Ctrl-C stops the server")

        try:
            serve(run_dir, name, port, say=say)
        except OSError as e:
            raise ValueError(f"--port {port}: cannot listen on 127.0.0.1 ({e.strerror or e})") from None
    from unified.data.labelfile import LABELS_FILE, read_history

    history = read_history(run_dir / LABELS_FILE)
    mine = sum(1 for x in history.lines if x.annotator == name and not x.skipped)
    err_console.print(f"stopped; {mine} label line(s) of {name} in {run_dir / LABELS_FILE}", highlight=False)
    if mlflow is not None and not _push(run_dir, history, mlflow):
        raise typer.Exit(1)


def _push(run_dir: Path, history: Any, uri: str) -> bool:
    """--mlflow: every person's labels to the traces (``unified.platforms.mlflow_labels``);
    False when MLflow refused some. The URI is not printed: it may hold credentials."""
    from unified.platforms.mlflow_labels import push_labels
    from unified.report import Report

    current = {sid: s.content_hash() for sid, s in Report.from_dir(run_dir).sample_objects().items()}
    with user_errors():
        done = push_labels(history, uri, current)
    err_console.print(
        f"MLflow: {done.logged} label(s) logged as human feedback, {done.present} already there, "
        f"{done.no_trace} of samples that are no MLflow trace",
        highlight=False,
        soft_wrap=True,
    )
    for line in done.errors:
        err_console.print(f"error: MLflow: {line}", highlight=False, soft_wrap=True, markup=False)
    return not done.errors


__all__ = ["review_cmd"]
