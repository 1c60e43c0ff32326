"""Scores on one 0–10 scale, and aggregation that never sees NaN.

A failure is ``value=None`` with ``error`` set — never NaN, never 0. Aggregates skip
failures and say how many there were.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, Field
from pydantic_core import to_json

from unified.bounds import passed

SCALE = 10.0


class Cost(BaseModel):
    """What producing one Score cost. ``tokens_estimated`` is true when a server gave no
    ``usage`` and tokens were estimated from text length (4 characters ≈ 1 token).

    ``usd``: money, from a price table per model (``unified.judge.prices``), or None when
    no price is known. ``add`` keeps "unknown" honest: a side that used tokens but has no
    ``usd`` makes the sum None; a side that used no tokens (no calls, cache hits) adds 0.
    """

    calls: int = 0
    cache_hits: int = 0
    embedding_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    retries: int = 0
    seconds: float = 0.0
    usd: float | None = None

    @classmethod
    def lenient(cls, obj: Any) -> "Cost":
        """A Cost from a stored object that may be hand-edited: fields that do not read
        as their type are left out (``usd: "x"`` leaves the dollars unknown, not the
        calls); anything but an object is no cost."""
        if not isinstance(obj, dict):
            return cls()
        try:
            return cls.model_validate(obj)
        except ValueError as e:  # pydantic's ValidationError
            bad = {err["loc"][0] for err in getattr(e, "errors", list)() if err.get("loc")}
            try:
                return cls.model_validate({k: v for k, v in obj.items() if k not in bad})
            except ValueError:
                return cls()

    @property
    def paid_for_something(self) -> bool:
        """It made a call or used tokens (a cache hit, a deterministic score: no)."""
        return bool(self.calls or self.embedding_calls or self.input_tokens or self.output_tokens)

    def _usd_unknown(self) -> bool:
        return self.usd is None and bool(self.input_tokens or self.output_tokens)

    def _add_usd(self, other: "Cost") -> float | None:
        if self._usd_unknown() or other._usd_unknown():
            return None
        if self.usd is None and other.usd is None:
            return None
        return (self.usd or 0.0) + (other.usd or 0.0)

    def add(self, other: "Cost") -> "Cost":
        return Cost(
            calls=self.calls + other.calls,
            cache_hits=self.cache_hits + other.cache_hits,
            embedding_calls=self.embedding_calls + other.embedding_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            tokens_estimated=self.tokens_estimated or other.tokens_estimated,
            retries=self.retries + other.retries,
            seconds=self.seconds + other.seconds,
            usd=self._add_usd(other),
        )


def is_ok(error: str | None, value: float | None) -> bool:
    """A result counts (in means, pass rates and gates) when it has a value and no error.

    The one spelling of the rule, for ``Score``, the report's ``Task`` and the runner's
    field dicts alike: a value beside an error (a partial answer) does not count."""
    return error is None and value is not None


def judged_update(fields: Mapping[str, Any], bound: float) -> dict[str, Any]:
    """The fields that give a Score — or a Score's field dict, as a computed block writes
    it — its task's pass bound (``Score.judged_against``): {} when it already has it."""
    details = fields.get("details") or {}
    if fields.get("threshold") == bound or details.get("threshold_base") == bound:
        return {}
    ok = is_ok(fields.get("error"), fields.get("value"))
    return {"threshold": bound, "passed": passed(fields["value"], bound) if ok else None}


class Score(BaseModel):
    """One (sample, metric, backend) result.

    ``metric`` is the name as the user wrote it, cutoff included (``precision@3``).
    ``value`` is on 0–10, higher is better, or None when ``error`` is set. ``raw`` is the
    backend's own number on ``raw_range``; ``details`` holds claims, verdicts and each
    judge's ratings; ``degraded`` marks a value computed from fewer judges than asked.

    Provenance (set by the runner, checked on resume): ``sample_hash`` fingerprints the
    sample content the score was computed from, ``config_hash`` the task's configuration
    (backend, metric and parameters, judge models and sampling, ...; see
    ``unified.run.fingerprint``). ``row_error`` marks the line of an input row that never
    became a sample: its ``sample_id`` (``row:<n>``) lives in a namespace of its own and
    never matches a real sample.

    ``calibrated``: with ``--calibration FILE``, ``value`` mapped through the isotonic map
    fitted on people's labels (``unified.analysis.calibrated``): 10 × the share of people
    who would pass a sample scored ``value``; None otherwise.

    Where the sample came from, so scores join back to your rows even when the sample's id
    is a content hash: ``row`` is the 1-based position of its row in the input (the line of
    a JSONL file, the position in a list, a DataFrame or a Dataset) and ``input_index`` a
    DataFrame's index label for that row. Both are those of the run that scored the task
    (a resumed run keeps the lines of tasks already done, whose content is unchanged).
    """

    metric: str
    backend: str
    sample_id: str
    value: float | None = None
    raw: float | None = None
    raw_range: tuple[float, float] | None = None
    higher_is_better: bool = True
    threshold: float | None = None
    passed: bool | None = None
    reason: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    degraded: bool = False
    cost: Cost = Field(default_factory=Cost)
    sample_hash: str | None = None
    config_hash: str | None = None
    row_error: bool = False
    calibrated: float | None = None
    row: int | None = None
    input_index: int | float | str | None = None

    @property
    def ok(self) -> bool:
        return is_ok(self.error, self.value)

    def judged_against(self, bound: float) -> "Score":
        """This Score with its task's pass bound: ``threshold`` = ``bound`` and ``passed``
        by the one test (``unified.bounds.passed``). A per-sample bound a metric derived
        from the task's (precision@k and recall@k scale it by the best achievable value;
        ``details.threshold_base`` is the task's bound) is kept as the metric applied it."""
        update = judged_update(self.model_dump(include={"value", "error", "threshold", "details"}), bound)
        return self.model_copy(update=update) if update else self

    @classmethod
    def failure(cls, metric: str, backend: str, sample_id: str, error: str, **kw: Any) -> "Score":
        return cls(**failure_fields(metric, backend, sample_id, error), **kw)

    @classmethod
    def from_raw(
        cls,
        metric: str,
        backend: str,
        sample_id: str,
        raw: float | None,
        *,
        raw_range: tuple[float, float] = (0.0, 1.0),
        higher_is_better: bool = True,
        threshold: float | None = None,
        **kw: Any,
    ) -> "Score":
        """Normalise ``raw`` to 0–10 and set ``passed`` (``raw_fields``)."""
        return cls(
            **raw_fields(
                metric,
                backend,
                sample_id,
                raw,
                raw_range=raw_range,
                higher_is_better=higher_is_better,
                threshold=threshold,
                **kw,
            )
        )


def failure_fields(metric: str, backend: str, sample_id: str, error: str) -> dict[str, Any]:
    """The fields of ``Score.failure``'s Score: no value, ``error`` says why."""
    return {"metric": metric, "backend": backend, "sample_id": sample_id, "value": None, "error": error}


def raw_fields(
    metric: str,
    backend: str,
    sample_id: str,
    raw: float | None,
    *,
    raw_range: tuple[float, float] = (0.0, 1.0),
    higher_is_better: bool = True,
    threshold: float | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """The fields of ``Score.from_raw``'s Score, as a dict (a batch of deterministic
    scores is written from these without building a Score: ``line_of``).

        value  = normalize(raw, raw_range, higher_is_better)        (0–10)
        passed = value ≥ threshold                                  (None without threshold)

    A None/NaN/inf raw becomes a failure whose error is ``error`` when given (what the
    backend said), else a generic one. ``error`` applies only then: a usable raw never
    yields a Score with an error."""
    error = kw.pop("error", None)
    value = normalize(raw, raw_range, higher_is_better=higher_is_better)
    fields = {
        "metric": metric,
        "backend": backend,
        "sample_id": sample_id,
        "raw_range": raw_range,
        "higher_is_better": higher_is_better,
        "threshold": threshold,
    }
    if value is None or raw is None:
        err = error or f"backend returned no usable score (raw={raw!r})"
        return {**fields, "value": None, "raw": None, "error": err, **kw}
    return {**fields, "value": value, "raw": float(raw), "passed": passed(value, threshold), **kw}


def score_line(score: Score) -> str:
    """The line ``scores.jsonl`` stores for ``score``: its JSON with every field still at
    its default left out (no ``"error": null``, no all-zero ``cost``, no ``"row_error":
    false``). The key (``metric``, ``backend``, ``sample_id``) has no default and is on
    every line; so are ``raw``, the fingerprints and the row when set. A
    deterministic score line is about half as long this way (``docs/scale.md``);
    ``full_line`` gives a reader the full shape back, and ``Score.model_validate`` reads
    either form. ``value`` is on every line, null on a failure's (the one field a reader
    of the file by hand always looks for)."""
    return _value_first(score.model_dump_json(exclude_defaults=True), score.value)


def _value_first(line: str, value: float | None) -> str:
    # a failure's line still says "value": null, first (exclude_defaults left it out)
    return line if value is not None else '{"value":null,' + line[1:]


_FIELD_DEFAULTS: dict[str, Any] = {}
_PRESENT: dict[tuple[str, ...], list[tuple[str, Any]]] = {}


def _present_defaults(fields: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(name, default) of the Score fields ``fields`` holds, in the Score's field order —
    worked out once per key set (a batch's field dicts share a handful), not per line."""
    keys = tuple(fields)
    known = _PRESENT.get(keys)
    if known is None:
        if not _FIELD_DEFAULTS:
            for name, info in Score.model_fields.items():
                _FIELD_DEFAULTS[name] = info.get_default(call_default_factory=True)
        known = [(k, d) for k, d in _FIELD_DEFAULTS.items() if k in fields]
        if len(_PRESENT) < 1024:  # bounded: a caller with ever-new key orders still works
            _PRESENT[keys] = known
    return known


def line_of(fields: Mapping[str, Any]) -> str:
    """``score_line(Score(**fields))``, the same bytes, without building the Score: a
    deterministic batch writes 200k lines this way (``docs/scale.md``). The same rule:
    every field in the Score's field order, those still at their default left out,
    (compared with ``==``, as pydantic's ``exclude_defaults`` does), serialised by
    pydantic's own encoder (``pydantic_core.to_json``: the same float
    spelling). ``fields`` must hold what the Score would (floats for its float fields,
    a ``(lo, hi)`` tuple of floats, plain JSON in ``details``) and no ``cost`` (a cost
    is a model: its line goes through ``score_line``); ``tests/test_detblock.py``
    checks the bytes against ``score_line``."""
    return line_and_object(fields)[0]


def line_and_object(fields: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``line_of(fields)``, and the object it serialises: what ``json.loads`` of the
    line gives back, up to a tuple read back as a list (``raw_range``) — the fields
    ``fields`` holds are of JSON's own types, and ``to_json`` writes even NaN and
    infinity as constants ``json.loads`` reads back. The run's ``scores.parquet`` is
    built from these objects (``unified.run.columnar.StreamCopy``)."""
    if "cost" in fields:
        raise ValueError("line_of: a line with a cost goes through score_line")
    line = {k: v for k, d in _present_defaults(fields) if not (v := fields[k]) == d}
    text = _value_first(to_json(line).decode(), fields.get("value"))
    return text, line if fields.get("value") is not None else {"value": None, **line}


_LINE_DEFAULTS: dict[str, Any] = {}


def full_line(line: Mapping[str, Any]) -> dict[str, Any]:
    """``line`` with every Score field it leaves out (``score_line``) at its default, as a
    line written in full (by this version before lines were short, or by ``Report``'s own
    exports) reads: every reader sees one shape, and a DataFrame has every column."""
    if not _LINE_DEFAULTS:
        _LINE_DEFAULTS.update(Score(metric="", backend="", sample_id="").model_dump(mode="json"))
    out = {**_LINE_DEFAULTS, **line}
    cost = line.get("cost")  # left out whole, or only its fields at their default (a fresh dict per line)
    out["cost"] = {**_LINE_DEFAULTS["cost"], **cost} if isinstance(cost, Mapping) else dict(_LINE_DEFAULTS["cost"])
    if "details" not in line:
        out["details"] = {}
    return out


def degraded_reason(line: Mapping[str, Any]) -> str | None:
    """Why a score line's value is degraded (came from fewer judges than asked), or None
    when it is not: a failed line is an error, not a degraded value."""
    if not line.get("degraded") or line.get("error") is not None or line.get("value") is None:
        return None
    details = line.get("details")
    details = details if isinstance(details, dict) else {}
    return str(details.get("degraded_reason") or line.get("reason") or "degraded")


def line_problem(line: Mapping[str, Any]) -> str | None:
    """Why a score line read back from a file breaks the 0–10 rule, or None when it
    keeps it. The rule, as the runner writes lines: ``value`` is null or a finite number
    (not a bool, not a string) with ``0 ≤ value ≤ 10``, and a null value comes with an
    ``error``. Lines this project wrote always keep it; a foreign or hand-edited line may
    not (``"value": 11``, ``NaN``), and no reader may let such a value into a mean, a
    diff or a resume."""
    return value_problem(line.get("value"), line.get("error"))


def value_problem(value: Any, error: Any) -> str | None:
    """``line_problem`` of a line with this ``value`` and ``error`` (a reader holding the
    two as columns asks without building the line)."""
    if value is None:
        return None if error not in (None, "") else "no value and no error"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"value {str(value)[:40]!r} is not a number"
    if not math.isfinite(value):
        return f"value {value} is not finite"
    if not 0.0 <= value <= SCALE:
        return f"value {value:g} is outside 0–10"
    return None


def invalid_line(line: Mapping[str, Any], problem: str, where: str = "scores.jsonl") -> dict[str, Any]:
    """``line`` as the failed task it is (``line_problem`` said why): no value, no verdict,
    the problem as its error — counted with the errors, redone by a resumed run."""
    return {
        **line,
        "value": None,
        "passed": None,
        "degraded": False,
        "error": f"invalid line in {where}: {problem} (a foreign or hand-edited line; "
        "the next run into this folder scores the task again)",
    }


def normalize(
    raw: float | None, raw_range: tuple[float, float] = (0.0, 1.0), *, higher_is_better: bool = True
) -> float | None:
    """Map a raw score onto 0–10.

        value = 10 · (raw − lo) / (hi − lo)          (higher is better)
        value = 10 · (hi − raw) / (hi − lo)          (lower is better: inverted)

    clipped to [0, 10] (so a cosine similarity below 0 on a [0, 1] range gives 0).
    None, NaN, ±inf or a non-number give None: the caller turns that into an error.
    """
    if raw is None or isinstance(raw, bool):
        return None
    try:
        raw = float(raw)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(raw):
        return None
    lo, hi = raw_range
    if hi <= lo:
        raise ValueError(f"raw range must have hi > lo, got {raw_range}")
    frac = (raw - lo) / (hi - lo) if higher_is_better else (hi - raw) / (hi - lo)
    return min(SCALE, max(0.0, SCALE * frac))


def raw_bound(bound: float, raw_range: tuple[float, float] = (0.0, 1.0), higher_is_better: bool = True) -> float:
    """A pass bound on 0–10 on a framework's own scale: the 0–10 rule inverted, for a
    framework that decides pass/fail itself (DeepEval's ``threshold``).

        raw = lo + (hi − lo) · bound / 10        (higher is better)
        raw = hi − (hi − lo) · bound / 10        (lower is better: the framework passes at raw ≤ it)
    """
    lo, hi = raw_range
    frac = bound / SCALE
    return lo + (hi - lo) * frac if higher_is_better else hi - (hi - lo) * frac


class Aggregate(BaseModel):
    """Summary of the Scores of one (metric, backend). ``mean``/``median``/``pass_rate``
    are None when no score succeeded (never NaN)."""

    metric: str
    backend: str
    count: int
    scored: int
    errors: int
    mean: float | None
    median: float | None
    stdev: float | None
    pass_rate: float | None
    cost: Cost


class RunningAggregates:
    """The one aggregation rule, streamed: one Aggregate per (metric, backend), in
    first-seen order, holding only the successful values (floats, for the median) and
    the summed cost of each group — never the Scores.

        mean      = Σ v / n                 over successful scores (value set, no error)
        median    = middle of the sorted successful values
        stdev     = sample standard deviation (n − 1), None for fewer than 2
        pass rate = passed / scores with a verdict (``passed`` not None), successes only
        errors    = scores with ``error`` set or no value

    ``aggregate`` and ``aggregate_by`` are this class over a list; the runner and the
    report feed it one score at a time. It does not deduplicate: callers that read a run
    folder apply the last-wins rule per task key first (``unified.report``).
    """

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], _Group] = {}

    def add(self, s: Score) -> None:
        self.add_value(s.metric, s.backend, s.value if s.ok else None, s.passed, s.cost)

    def add_value(
        self, metric: str, backend: str, value: float | None, passed: bool | None, cost: Cost | None = None
    ) -> None:
        """One task's outcome: ``value`` None (or not finite) counts as an error."""
        g = self._groups.get((metric, backend))
        if g is None:
            g = self._groups[(metric, backend)] = _Group()
        g.add(value, passed, cost)

    def results(self) -> list[Aggregate]:
        return [g.aggregate(metric, backend) for (metric, backend), g in self._groups.items()]


class _Group:
    """The running state of one (metric, backend)."""

    __slots__ = ("values", "passes", "verdicts", "count", "errors", "cost")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.passes = self.verdicts = self.count = self.errors = 0
        self.cost = Cost()

    def add(self, value: float | None, passed: bool | None, cost: Cost | None) -> None:
        self.count += 1
        if cost is not None:
            self.cost = self.cost.add(cost)
        if value is not None and math.isfinite(value):
            self.values.append(float(value))
            if passed is not None:
                self.verdicts += 1
                self.passes += bool(passed)
        else:
            self.errors += 1

    def aggregate(self, metric: str, backend: str) -> Aggregate:
        v = self.values
        return Aggregate(
            metric=metric,
            backend=backend,
            count=self.count,
            scored=len(v),
            errors=self.errors,
            mean=statistics.fmean(v) if v else None,
            median=statistics.median(v) if v else None,
            stdev=statistics.stdev(v) if len(v) > 1 else None,
            pass_rate=self.passes / self.verdicts if self.verdicts else None,
            cost=self.cost,
        )


def aggregate(scores: Iterable[Score], metric: str = "", backend: str = "") -> Aggregate:
    """mean, median, stdev, pass rate and error count over the successful scores only
    (``RunningAggregates``'s rule for one group). ``metric``/``backend`` label the result;
    when empty, the first score's names are used."""
    g = _Group()
    for s in scores:
        metric = metric or s.metric
        backend = backend or s.backend
        g.add(s.value if s.ok else None, s.passed, s.cost)
    return g.aggregate(metric, backend)


def aggregate_by(scores: Iterable[Score]) -> list[Aggregate]:
    """One Aggregate per (metric, backend), in first-seen order (``RunningAggregates``)."""
    acc = RunningAggregates()
    for s in scores:
        acc.add(s)
    return acc.results()
