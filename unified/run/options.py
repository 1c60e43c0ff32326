"""``RunOptions``: every option of a run, in one place, shared by ``evaluate``,
``unified-eval run`` and ``unified-eval compare``.

The CLI turns its flags into these fields and Python callers pass them as keyword
arguments to ``evaluate``; a misspelt keyword is a ``TypeError`` naming the closest
option, never silently ignored.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Sequence


@dataclass
class RunOptions:
    """What a run does besides *which* samples and metrics (those are arguments).

    Judges: ``judges`` (a ready ``Judges``) or ``judge``/``judge2``/``embedding`` (a
    config, a dict of its fields or a string — see ``unified.judge``), ``single_judge``,
    ``timeout``/``max_retries`` (per judge call). Folder: ``out`` (None: nothing is
    written, the Report lives in memory), ``resume`` (skip tasks already done), ``fresh``
    (start over in ``out``), ``retry_errors`` (score failed tasks again). Input:
    ``mapping``, ``labels``, ``list_sep``, ``layout``, ``fmt`` (see ``unified.data.io.read_samples``),
    ``max_samples``. Output: ``progress`` ("auto" | True | "lines" | False), ``quiet``
    (print nothing), ``show_summary`` (print the table at the end), ``write_report``.
    Cost: ``cache`` (True = the shared judge cache, a path, or False), ``prices``
    (``{model: (usd_in, usd_out)}`` per 1M tokens, or ``["MODEL=IN/OUT"]``: Scores then
    carry ``cost.usd``). Logging the run to MLflow (``mlflow=``) is ``unified.api``'s, after
    the run: the run path knows no place a run goes but its folder.
    Where: ``executor`` ("local", "ray", or an Executor object), ``ray_address`` (None: a
    local Ray for the run; "auto": the running cluster; or an address — see
    ``unified.platforms.ray_executor``). Test–retest: ``repeats`` (N > 1 scores every
    judge-using task N times with seeds 0…N−1 and keeps their mean; ``unified.run.repeats``).
    Batch: ``batch`` (True, or a dict of ``unified.judge.batch.BatchSettings`` fields such as
    ``{"poll_max": 10}``) sends uncached judge calls as Batch API jobs at the batch price;
    every task is in flight at once and the jobs are recorded in the folder's ``batches.jsonl``.
    """

    backends: Sequence[Any] = ("native",)
    judges: Any = None
    judge: Any = None
    judge2: Any = None
    embedding: Any = None
    single_judge: bool = False
    timeout: float | None = None
    max_retries: int | None = None
    out: str | Path | None = None
    resume: bool = True
    fresh: bool = False
    retry_errors: bool = False
    concurrency: int = 16
    progress: bool | str = "auto"
    quiet: bool = False
    show_summary: bool = False
    write_report: bool = True
    mapping: Mapping[str, str] | None = None
    labels: Mapping[str, str] | None = None
    list_sep: str | None = None
    layout: str | None = None
    fmt: str | None = None
    max_samples: int | None = None
    cache: bool | str | Path = True
    prices: Any = None  # {model: (usd_in, usd_out) per 1M tokens} or ["MODEL=IN/OUT", ...]
    executor: Any = "local"
    ray_address: str | None = None
    jury: str | None = None
    calibration: str | Path | None = None  # calibration.json: adds Score.calibrated (unified.analysis.calibrated)
    batch: Any = False  # True / {setting: value}: judge calls through the Batch API (unified.judge.batch)
    repeats: int = 1  # test–retest: judge-using tasks scored this many times (unified.run.repeats)
    run_config: dict[str, Any] = field(default_factory=dict)
    command: list[str] | None = None
    resume_hint: str | None = None
    on_interrupt: Any = None  # called with the RunInterrupted details before cancellation propagates

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> "RunOptions":
        """Build from keyword arguments; an unknown name is a TypeError with a suggestion.
        ``use_cache=False`` (the old spelling) means ``cache=False``."""
        if "use_cache" in kwargs:
            kwargs["cache"] = kwargs.pop("use_cache") and kwargs.get("cache", True)
        known = {f.name for f in fields(cls)}
        for name in kwargs:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise TypeError(f"evaluate() got an unexpected option '{name}'{hint}")
        opts = cls(**kwargs)
        if isinstance(opts.backends, str):
            opts.backends = [b.strip() for b in opts.backends.split(",") if b.strip()]
        if opts.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {opts.concurrency}")
        if not isinstance(opts.repeats, int) or opts.repeats < 1:
            raise ValueError(f"repeats must be a whole number of at least 1, got {opts.repeats!r}")
        if opts.max_samples is not None and opts.max_samples < 1:
            raise ValueError(f"max_samples must be at least 1, got {opts.max_samples}")
        return opts

    def keywords(self) -> dict[str, Any]:
        """These options as the keyword arguments that build them again
        (``unified.api.evaluate(samples, metrics, **opts.keywords())``): the CLI builds
        its ``RunOptions`` once from the flags and runs through the API."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
