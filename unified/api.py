"""The public run API: ``evaluate`` / ``aevaluate`` — the run path plus the integrations a
caller asks for by keyword.

``unified.run.runner`` scores; it knows no integration. This layer turns
``mlflow=URI`` (or True: ``$MLFLOW_TRACKING_URI``, else ``./mlruns``) into an ``after_run``
hook — the finished run is logged as one MLflow run, within ``mlflow_timeout`` seconds
(default ``$UNIFIED_MLFLOW_TIMEOUT``, else 60) — and checks the extra is installed
before any judge is paid. Every other keyword is ``unified.run.options.RunOptions``.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from unified.run import runner

if TYPE_CHECKING:
    from unified.report import Report


def _with_integrations(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with ``mlflow=`` replaced by its ``after_run`` hook."""
    tracking = options.pop("mlflow", None)
    timeout = options.pop("mlflow_timeout", None)
    if tracking in (None, False):
        return options
    from unified.platforms.mlflow_log import logging_timeout, require_mlflow

    require_mlflow(
        tracking
    )  # a missing piece, a URI that cannot work or a bad budget is found before any judge is paid
    budget = logging_timeout(timeout)
    options["after_run"] = [*options.get("after_run", []), partial(_log_to_mlflow, tracking, budget)]
    return options


def _log_to_mlflow(tracking: Any, budget: float, report: Report, summary: Any, folder: Path | None) -> None:
    from unified.platforms.mlflow_log import log_run

    log_run(report, tracking, summary=summary, folder=folder, timeout=budget)


async def aevaluate(samples: Any, metrics: Any, backends: Sequence[Any] | str = ("native",), **options: Any) -> Report:
    """Score every (sample, metric, backend) task once; see ``unified.run.runner.aevaluate``.
    ``mlflow``: a tracking URI or path (or True) to log the finished run to; ``mlflow_timeout``:
    the seconds that log may take in all."""
    return await runner.aevaluate(samples, metrics, backends, **_with_integrations(options))


def evaluate(samples: Any, metrics: Any, backends: Sequence[Any] | str = ("native",), **options: Any) -> Report:
    """Synchronous ``aevaluate``; see ``unified.run.runner.evaluate`` (works in Jupyter,
    Ctrl-C raises ``RunInterrupted`` with the folder resumable). ``mlflow``: a tracking URI
    or path (or True) to log the finished run to."""
    return runner.evaluate(samples, metrics, backends, **_with_integrations(options))
