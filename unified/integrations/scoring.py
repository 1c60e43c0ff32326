"""One scoring call under every framework integration: a framework's row in, one outcome out.

The DeepEval metric, the RAGAS metric, the MLflow scorer and the Phoenix evaluator
(``unified.integrations.deepeval`` / ``ragas`` / ``mlflow_scorer`` / ``phoenix``) each turn
the framework's test case or row into something ``unified.data.io.read_samples`` reads (a
framework object, a dict of our fields or a ``Sample``) and call ``IntegrationScorer``. It
runs ``unified.api.evaluate`` on that one sample — the same plan, judge resolution
(``judge=`` / ``UNIFIED_JUDGE_*`` / run file), judge cache, retries, call counting and
error rules as ``evaluate()`` and ``unified-eval run`` — so an integration is never a
second scoring path.

Backends, and the one value a framework gets:

* ``backend="native"`` (any one backend): that backend's Score.
* ``backend=["native", "ragas"]`` (several): every backend scores the sample and the
  value is their **median** jury (``unified.analysis.jury``; for two members, their mean).
* ``backend="jury:METHOD"``: a jury (median, mean or majority) over every judge-backed
  backend that implements the metric (``JURY_CANDIDATES``: native, ragas, deepeval);
  ``["native", "ragas", "jury:mean"]`` names the members.

Scales: our Score is on 0–10 (``unified.scores``); ``Outcome.score01 = value / 10`` is
what the frameworks (all on 0–1) receive.

Run rules (``docs/architecture.md``): a task that failed, a row that never became a
sample, a missing field, a jury with a failed or missing member, a value from fewer judges
than asked (``degraded``; unless ``allow_degraded=True``) — each raises
``IntegrationError`` (one line: sample, metric, backend, cause). Never a 0 or a NaN in its place: the framework records the exception as
its own error (DeepEval's ``metric.error``, RAGAS's failed job, MLflow's
``Feedback.error``, Phoenix's execution details).

Threads: the async entry point (``ascore``) runs each scoring call in a worker thread with
a private event loop. Frameworks score many rows concurrently on one loop, and a run on
the main thread installs a SIGTERM handler (``unified.run.interrupts``); overlapping runs
on one thread would restore each other's handlers out of order.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["IntegrationError", "IntegrationScorer", "Outcome", "parse_backends"]

#: the backends a bare ``jury:METHOD`` pools, when they implement the metric and are installed
JURY_CANDIDATES = ("native", "ragas", "deepeval")
#: ``evaluate`` options an integration may pass through (everything else is the integration's)
RUN_OPTIONS = ("judge", "judge2", "embedding", "single_judge", "cache", "timeout", "max_retries", "prices")


class IntegrationError(RuntimeError):
    """A (sample, metric) an integration could not score, in one line. A RuntimeError on
    purpose: DeepEval re-runs a metric that raises ``TypeError`` (doubling the calls)."""

    def __init__(
        self, message: str, *, sample_id: str | None = None, metric: str | None = None, backend: str | None = None
    ):
        super().__init__(message)
        self.sample_id, self.metric, self.backend = sample_id, metric, backend


@dataclass
class Outcome:
    """One scored (sample, metric): ``value`` on 0–10, ``score01`` on 0–1.

    ``backend`` is the backend whose value this is (``jury`` when pooled); ``members``
    every backend's own value on 0–10 and ``member_reasons`` their reasons (one entry for
    a single backend). ``threshold`` and ``passed`` are ours (0–10). ``calls`` counts the
    judge calls this sample cost (0 when the judge cache answered), ``tokens`` their
    tokens, ``usd`` their price when prices are known (else None). ``bound_scale``: the
    share of the metric's pass bound that applies to this sample — precision@k and
    recall@k pass relative to the best value the sample allows (``best_achievable`` in
    the Score's details: bound = base · best), every other metric at 1."""

    metric: str
    sample_id: str
    value: float
    backend: str
    reason: str
    threshold: float | None = None
    passed: bool | None = None
    members: dict[str, float] = field(default_factory=dict)
    member_reasons: dict[str, str] = field(default_factory=dict)
    degraded: bool = False
    calls: int = 0
    embedding_calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    usd: float | None = None
    bound_scale: float = 1.0

    @property
    def score01(self) -> float:
        """The value on the frameworks' 0–1 scale: ``value / 10``."""
        return self.value / 10.0

    def metadata(self) -> dict[str, Any]:
        """Plain-JSON facts for a framework's metadata slot."""
        return {
            "metric": self.metric,
            "sample_id": self.sample_id,
            "backend": self.backend,
            "value_0_10": self.value,
            "threshold_0_10": self.threshold,
            "passed": self.passed,
            "degraded": self.degraded,
            "backend_values_0_10": dict(self.members),
            "judge_calls": self.calls,
            "embedding_calls": self.embedding_calls,
            "cache_hits": self.cache_hits,
            "tokens": self.tokens,
            "usd": self.usd,
        }


def parse_backends(metric: str, backend: str | Sequence[str]) -> tuple[list[str], str | None]:
    """(member backends, jury method or None) from an integration's ``backend`` argument
    (see the module docstring). A comma string counts as a list. Raises ``ValueError``
    naming the fix for an unknown jury method, a backend that does not implement the
    metric, or a jury of fewer than two members."""
    from unified.analysis.jury import METHODS

    items = [b.strip() for b in backend.split(",")] if isinstance(backend, str) else list(backend)
    items = [b for b in items if b]
    if not items or not all(isinstance(b, str) for b in items):
        raise ValueError(f"backend: give a backend name, a list of names or 'jury:METHOD', got {backend!r}")
    juries = [b for b in items if b.startswith("jury")]
    members = [b for b in items if not b.startswith("jury")]
    if len(juries) > 1:
        raise ValueError(f"backend: one jury at most, got {', '.join(juries)}")
    method = (juries[0].partition(":")[2] or "median") if juries else ("median" if len(members) > 1 else None)
    if method is not None and method not in METHODS:
        raise ValueError(f"backend: unknown jury method '{method}'; use one of {', '.join(METHODS)}")
    if juries and not members:
        members = _jury_candidates(metric)
    _check_members(metric, members)
    if method is not None and len(members) < 2:
        raise ValueError(
            f"backend: a jury needs two backends that implement '{metric}', got "
            f"{', '.join(members) or 'none'}; name them, e.g. ['native', 'ragas', 'jury:median']"
        )
    return members, method


def _jury_candidates(metric: str) -> list[str]:
    """The installed judge-backed backends that implement ``metric``."""
    import importlib.util

    from unified.adapters.registry import backend_info, implements

    out = []
    for name in JURY_CANDIDATES:
        package = backend_info(name).package
        if implements(name, metric) and (package is None or importlib.util.find_spec(package)):
            out.append(name)
    return out


def _check_members(metric: str, members: list[str]) -> None:
    from unified.adapters.registry import backend_names, implements

    known = backend_names()
    for name in members:
        if name not in known:
            raise ValueError(f"backend: unknown backend '{name}'; known: {', '.join(known)}")
        if not implements(name, metric):
            raise ValueError(f"backend '{name}' does not implement '{metric}' (see `unified-eval metrics {metric}`)")
    if len(set(members)) != len(members):
        raise ValueError(f"backend: a backend is named twice in {members}")


def _bound_scale(details: Any) -> float:
    """``Outcome.bound_scale`` from a Score's details (``best_achievable``, a number in (0, 1])."""
    best = details.get("best_achievable") if isinstance(details, Mapping) else None
    if isinstance(best, (int, float)) and not isinstance(best, bool) and 0.0 < best <= 1.0:
        return float(best)
    return 1.0


class IntegrationScorer:
    """Scores one framework row at a time through ``evaluate`` (module docstring).

    ``metric``: any spelling the registry knows (``faithfulness``, ``precision@3``).
    ``backend``: see ``parse_backends``. ``run_options``: the ``evaluate`` options of
    ``RUN_OPTIONS`` — ``judge``/``judge2``/``embedding`` (a config, a dict of its fields or
    a model name; None: ``UNIFIED_JUDGE_*``, then the run file, exactly as ``evaluate``),
    ``single_judge``, ``cache`` (True: the shared judge cache), ``timeout``,
    ``max_retries``, ``prices``. ``allow_degraded``: accept a half-result (a jury member
    that failed, a dual-judge value from one judge) instead of raising; the Outcome then
    says so (``degraded``)."""

    def __init__(
        self, metric: str, backend: str | Sequence[str] = "native", *, allow_degraded: bool = False, **run_options: Any
    ):
        from unified.metrics import parse_metric

        unknown = sorted(set(run_options) - set(RUN_OPTIONS))
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(unknown)}; integrations take {', '.join(RUN_OPTIONS)}")
        self.ref = parse_metric(metric)
        self.metric = self.ref.name
        self.members, self.jury = parse_backends(self.metric, backend)
        self.run_options = {k: v for k, v in run_options.items() if v is not None}
        self.allow_degraded = allow_degraded

    @property
    def backend_label(self) -> str:
        """``native``, or ``jury:median(native,ragas)``."""
        if self.jury is None:
            return self.members[0]
        return f"jury:{self.jury}({','.join(self.members)})"

    def default_name(self) -> str:
        """The name a framework shows this metric under when the user gives none:
        ``unified_<metric>`` on the native backend, ``unified_<metric>_<backend>`` on any
        other (``unified_faithfulness_ragas``, ``unified_faithfulness_jury_median_native_ragas``),
        so two backends' scorers of one metric never share a column, a key or an MLflow
        metric — shared, one value replaced the other, or MLflow averaged the two."""
        label = self.backend_label
        suffix = "" if label == "native" else "_" + re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_")
        return f"unified_{self.metric}{suffix}"

    def threshold(self) -> float | None:
        """Our default pass bound on 0–10 for this metric and backend (the jury uses the
        metric's own bound, ``unified.analysis.verdict``)."""
        from unified.adapters.registry import default_threshold, threshold_for

        if self.jury is not None:
            return default_threshold(self.ref)
        return threshold_for(self.members[0], self.ref)

    # ------------------------------------------------------------ scoring
    def score(self, row: Any) -> Outcome:
        """Score one row (a framework object, a dict of our fields or a ``Sample``);
        ``IntegrationError`` when it cannot be scored."""
        from unified.api import evaluate

        try:
            report = evaluate(
                [row],
                [self.ref],
                backends=list(self.members),
                jury=self.jury,
                quiet=True,
                progress=False,
                write_report=False,
                **self.run_options,
            )
        except IntegrationError:
            raise
        except Exception as exc:  # the run's own errors are one line and scrubbed at their source
            from unified.redact import one_line

            raise IntegrationError(
                f"{self.metric} on {self.backend_label}: {type(exc).__name__}: {one_line(str(exc), 400)}",
                metric=self.metric,
                backend=self.backend_label,
            ) from exc
        return self.outcome(list(report.iter_scores()))

    async def ascore(self, row: Any) -> Outcome:
        """``score`` in a worker thread with its own event loop (module docstring)."""
        return await asyncio.to_thread(self.score, row)

    def outcome(self, scores: list[Any]) -> Outcome:
        """The Outcome of one sample's Scores, or ``IntegrationError`` (run rules)."""
        mine = [s for s in scores if s.metric == self.metric]
        final = self._final(mine)
        by_backend = {s.backend: s for s in mine}
        members = {b: by_backend[b] for b in self.members if b in by_backend}  # in the order asked
        self._check(final, members)
        return Outcome(
            metric=self.metric,
            sample_id=final.sample_id,
            value=float(final.value),
            backend=final.backend,
            reason=self._reason(final, members),
            threshold=final.threshold,
            passed=final.passed,
            members={b: float(s.value) for b, s in members.items() if s.ok},
            member_reasons={b: s.reason or "" for b, s in members.items()},
            degraded=bool(
                final.degraded
                or any(s.degraded or s.error for s in members.values())
                or len(members) < len(self.members)
            ),
            bound_scale=_bound_scale(final.details),
            **_cost(members.values()),
        )

    def _final(self, mine: list[Any]) -> Any:
        want = "jury" if self.jury is not None else self.members[0]
        for s in mine:
            if s.backend == want:
                return s
        errors = [s for s in mine if s.error]
        if errors:  # a row error or a failure of every member leaves no jury line
            s = errors[0]
            raise IntegrationError(
                _failure_text(s, self.backend_label), sample_id=s.sample_id, metric=self.metric, backend=s.backend
            )
        raise IntegrationError(
            f"{self.metric} on {self.backend_label}: no score came back", metric=self.metric, backend=self.backend_label
        )

    def _check(self, final: Any, members: Mapping[str, Any]) -> None:
        """Raise for an error; and, unless ``allow_degraded``, for a half-result: a jury
        member that failed or is missing, or a value from fewer judges than asked."""
        if final.error or final.value is None:
            raise IntegrationError(
                _failure_text(final, self.backend_label),
                sample_id=final.sample_id,
                metric=self.metric,
                backend=final.backend,
            )
        problems = [f"{b}: {s.error}" for b, s in members.items() if s.error]
        problems += [f"{b}: no score" for b in self.members if b not in members]
        problems += [
            f"{b}: degraded ({(s.details or {}).get('degraded_reason') or 'one judge failed'})"
            for b, s in members.items()
            if s.degraded
        ]
        if problems and not self.allow_degraded:
            raise IntegrationError(
                f"sample '{final.sample_id}', {self.metric} on {self.backend_label}: a "
                f"half-result (a value from fewer judges or backends than asked) — "
                f"{'; '.join(problems)}; pass allow_degraded=True to accept it",
                sample_id=final.sample_id,
                metric=self.metric,
                backend=final.backend,
            )

    def _reason(self, final: Any, members: Mapping[str, Any]) -> str:
        """The backend's reason; for a jury, the pooled value, each member's value and
        each member's reason."""
        if self.jury is None:
            return final.reason or ""
        values = ", ".join(f"{b} {s.value:.2f}" if s.ok else f"{b} error" for b, s in members.items())
        head = f"jury {self.jury} {final.value:.2f}/10 of {values}"
        tails = [f"{b}: {s.reason}" for b, s in members.items() if s.reason]
        return "; ".join([head, *tails])


def _failure_text(s: Any, label: str) -> str:
    from unified.redact import one_line

    what = "input row" if s.row_error else "sample"
    return f"{what} '{s.sample_id}', {s.metric} on {label}: {one_line(s.error or 'no value', 400)}"


def _cost(scores: Any) -> dict[str, Any]:
    """Judge calls, embedding calls, cache hits, tokens and usd summed over the members'
    Scores (``Cost.add``: an unknown price on either side keeps the sum unknown)."""
    from unified.scores import Cost

    total = Cost()
    for s in scores:
        total = total.add(s.cost)
    return {
        "calls": total.calls,
        "embedding_calls": total.embedding_calls,
        "cache_hits": total.cache_hits,
        "tokens": total.input_tokens + total.output_tokens,
        "usd": total.usd,
    }
