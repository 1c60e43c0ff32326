"""The public run API: ``evaluate`` / ``aevaluate`` (and ``evaluate_pipeline``) — the run
path, the end of the run, and the places a run can go that the caller asks for by keyword.

One path for every caller (Python, the CLI, ``unified.testing``, the framework wrappers):

1. ``mlflow=URI`` (or True: ``$MLFLOW_TRACKING_URI``, else ``./mlruns``) is checked first
   — the extra installed, the URI workable, the budget (``mlflow_timeout``, default
   ``$UNIFIED_MLFLOW_TIMEOUT``, else 60 s) a positive number — before any judge is paid;
2. ``unified.run.runner.scored_run`` scores every pending task into the run folder;
3. ``unified.report.run_end.finish_run`` writes its end (``summary.json``,
   ``report.html``, ``index.json``, the lines on stderr) and builds the ``Report``, while
   the run still holds the folder;
4. a complete run is logged as one MLflow run (``unified.platforms.mlflow_log``).

Every other keyword is ``unified.run.options.RunOptions``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from unified.platforms.mlflow_log import MlflowLogging
from unified.report.run_end import finish_run
from unified.run.blocking import run_blocking
from unified.run.options import RunOptions
from unified.run.runner import scored_run

if TYPE_CHECKING:
    from unified.judge.base import Judges
    from unified.report import Report

__all__ = ["aevaluate", "aevaluate_pipeline", "evaluate", "evaluate_pipeline", "mlflow_logging"]


def mlflow_logging(tracking: Any, timeout: float | None = None) -> MlflowLogging | None:
    """The MLflow logging asked for by ``mlflow=`` / ``--mlflow`` (None: not asked),
    checked now (``MlflowLogging``): before any judge is paid."""
    if tracking is None or tracking is False:
        return None
    return MlflowLogging(tracking, timeout)


async def aevaluate(
    samples: Any,
    metrics: Any,
    backends: Sequence[Any] | str = ("native",),
    judges: Judges | None = None,
    out: str | Path | None = None,
    resume: bool = True,
    concurrency: int = 16,
    progress: bool | str = "auto",
    quiet: bool = False,
    *,
    mlflow: Any = None,
    mlflow_timeout: float | None = None,
    **options: Any,
) -> Report:
    """Run every (sample, metric, backend) task once and return the run's ``Report``.

    ``samples``: anything ``unified.data.io.read_samples`` reads (a path, DataFrame, Dataset,
    framework objects, an iterable of Sample | dict), consumed as a stream. ``metrics``:
    ``"faithfulness,precision@3"`` or a list of names / MetricRefs. ``backends``: names or
    Backend instances. ``out``: the run folder; None writes nothing (the Report lives in
    memory). ``mlflow``: a tracking URI or path (or True) to log the finished run to;
    ``mlflow_timeout``: the seconds that log may take in all. Every other option:
    ``unified.run.options.RunOptions``.
    """
    logging = mlflow_logging(mlflow, mlflow_timeout)
    opts = RunOptions.from_kwargs(
        backends=backends,
        judges=judges,
        out=out,
        resume=resume,
        concurrency=concurrency,
        progress=progress,
        quiet=quiet,
        **options,
    )
    async with scored_run(samples, metrics, opts) as result:
        report = finish_run(result)
        if logging is not None and result.interruption() is None:  # once the run is complete
            await asyncio.to_thread(logging.log, report, summary=result.summary, folder=result.folder)
    return report


def evaluate(
    samples: Any,
    metrics: Any,
    backends: Sequence[Any] | str = ("native",),
    judges: Judges | None = None,
    out: str | Path | None = None,
    resume: bool = True,
    concurrency: int = 16,
    progress: bool | str = "auto",
    quiet: bool = False,
    **options: Any,
) -> Report:
    """Synchronous ``aevaluate`` (see there). Works inside a running event loop (Jupyter):
    the run then goes on a private loop in a worker thread while the caller waits. Ctrl-C
    or SIGTERM raise ``RunInterrupted`` (a ``KeyboardInterrupt``) after leaving the run
    folder consistent, summarised and resumable (``unified.run.blocking``)."""

    own = options.pop("on_interrupt", None)

    def start(record: Callable[[Any], None]) -> Any:
        def on_interrupt(
            why: Any,
        ) -> None:  # the raised RunInterrupted carries the details; a caller's hook hears them too
            record(why)
            if own is not None:
                own(why)

        given = {**options, "on_interrupt": on_interrupt}
        return aevaluate(samples, metrics, backends, judges, out, resume, concurrency, progress, quiet, **given)

    return run_blocking(start, out)


async def aevaluate_pipeline(
    questions: Sequence[str],
    retrieve: Callable[..., Any],
    generate: Callable[..., Any] | None,
    metrics: Any,
    references: Sequence[str | None] | None = None,
    relevant_ids: Sequence[Sequence[str] | None] | None = None,
    backends: Sequence[str] | str = ("native", "embedding"),
    judges: Any = None,
    out: Any = None,
    retrieve_concurrency: int = 8,
    generate_concurrency: int = 4,
    *,
    ids: Sequence[str] | None = None,
    **options: Any,
) -> Report:
    """Async twin of ``evaluate_pipeline``; returns the run's ``Report``."""
    from unified.data.pipeline import build_samples

    samples = await build_samples(
        questions,
        retrieve,
        generate,
        references=references,
        relevant_ids=relevant_ids,
        ids=ids,
        retrieve_concurrency=retrieve_concurrency,
        generate_concurrency=generate_concurrency,
    )
    return await aevaluate(samples, metrics, backends, judges=judges, out=out, **options)


def evaluate_pipeline(
    questions: Sequence[str],
    retrieve: Callable[..., Any],
    generate: Callable[..., Any] | None,
    metrics: Any,
    references: Sequence[str | None] | None = None,
    relevant_ids: Sequence[Sequence[str] | None] | None = None,
    backends: Sequence[str] | str = ("native", "embedding"),
    judges: Any = None,
    out: Any = None,
    retrieve_concurrency: int = 8,
    generate_concurrency: int = 4,
    **options: Any,
) -> Report:
    """Run ``retrieve`` and ``generate`` on every question, build Samples (with
    ``retrieved_ids``, ``reference`` and ``relevant_ids`` when given; ``unified.data.pipeline``)
    and evaluate them with ``metrics`` on ``backends``. A question whose retriever or
    generator raises gets error Scores; the rest complete. Returns the run's ``Report``.
    Use ``aevaluate_pipeline`` inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "evaluate_pipeline() cannot run inside a running event loop; "
            "use `await unified.api.aevaluate_pipeline(...)`"
        )
    return asyncio.run(
        aevaluate_pipeline(
            questions,
            retrieve,
            generate,
            metrics,
            references,
            relevant_ids,
            backends,
            judges,
            out,
            retrieve_concurrency,
            generate_concurrency,
            **options,
        )
    )
