"""The jury: one Score per (sample, metric) pooled from several backends' Scores.

Several frameworks judging the same sample is the cheapest way to smooth out one
framework's prompt quirks. The jury is a backend of its own (``backend="jury"``), so the
summary, the cross-check and the agreement with people treat it like any other.

Per (sample, metric), over the members that scored it without error:

- ``median``: value = median of the members' values (two middle values averaged);
  passed = value ≥ the metric's default threshold (``unified.analysis.verdict``).
- ``mean``: value = arithmetic mean; passed = value ≥ the threshold.
- ``majority``: passed = more than half of the members pass by their own verdict
  (``Score.passed``, else value ≥ their own bound); an even split is decided by the
  median value against the threshold. value = the median, so the jury's value stays on the
  metric's scale; with an odd number of members sharing the metric's threshold the vote
  and "median ≥ threshold" are the same thing. (The cross-check judges every backend, the
  jury included, by value ≥ threshold; for a majority jury whose members use different
  bounds that can differ from the vote on ``passed``.)

A member that failed is excluded and counted (``details.errors``), never turned into 0; a
member named in ``members`` that has no line for the sample is counted as missing. Either
makes the jury ``degraded`` (a value from fewer members than asked). Every member failed:
the jury line is a failure whose error lists theirs. A metric with fewer than two member
backends gets no jury (a jury of one would only repeat it).

``details``: ``method``, ``threshold``, ``members`` ({backend: {value, passed, dissent}}:
``passed`` is the member's own verdict; ``dissent`` says the member is on the other side
from the jury — for ``median`` and ``mean`` its value against the jury's threshold, for
``majority`` its own vote), ``dissenters``, ``errors`` ({backend: error}), ``missing``,
``n_members``, ``n_errors``.

Fingerprints (so a runner can tell a stale jury line): ``config_hash`` = the first 16 hex
digits of sha256 of the canonical JSON of ``{"backend": "jury", "method", "metric",
"members": [[backend, config_hash, sample_hash, value, ok], …]}`` over the members sorted
by name (a missing member as ``[backend, null, null, null, false]``) — it changes whenever
any member's line changes, configuration or result. ``sample_hash`` = the members' common
``sample_hash`` when they all carry the same one, else None (and
``details.sample_hash_mismatch``): members computed on different sample content make the
jury stale by definition. The jury costs nothing itself; members' costs stay on their
lines, so a summary never counts them twice.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from unified.analysis.verdict import default_threshold, score_passed
from unified.redact import one_line
from unified.scores import Score

JURY = "jury"
METHODS = ("median", "mean", "majority")


class JuryError(ValueError):
    """An unknown pooling method."""


def _as_score(s: Score | Mapping[str, Any]) -> Score:
    return s if isinstance(s, Score) else Score.model_validate(s)


def jury_hashes(metric: str, method: str, members: Mapping[str, Score | None]) -> tuple[str, str | None]:
    """(config_hash, sample_hash) of a jury line from its members' lines (module docstring)."""
    rows = []
    for name in sorted(members):
        s = members[name]
        rows.append(
            [name, None, None, None, False] if s is None else [name, s.config_hash, s.sample_hash, s.value, s.ok]
        )
    blob = json.dumps(
        {"backend": JURY, "method": method, "metric": metric, "members": rows}, sort_keys=True, ensure_ascii=False
    )
    config_hash = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
    seen = {s.sample_hash for s in members.values() if s is not None}
    sample_hash = seen.pop() if len(seen) == 1 else None
    return config_hash, sample_hash


def _pooled(method: str, values: list[float], votes: list[bool], threshold: float) -> tuple[float, bool]:
    """(value, passed) by ``method`` (module docstring)."""
    median = float(np.median(values))
    if method == "mean":
        value = float(np.mean(values))
        return value, value >= threshold
    if method == "majority":
        yes = sum(votes)
        if 2 * yes == len(votes):  # an even split: the median decides
            return median, median >= threshold
        return median, 2 * yes > len(votes)
    return median, median >= threshold


def pool(
    metric: str, sample_id: str, members: Mapping[str, Score | Mapping[str, Any] | None], method: str = "median"
) -> Score:
    """The jury's Score for one (sample, metric) from ``members`` ({backend: its Score, or
    None when it has no line for the sample}). See the module docstring."""
    if method not in METHODS:
        raise JuryError(f"unknown jury method '{method}': use one of {', '.join(METHODS)}")
    scores = {b: (None if s is None else _as_score(s)) for b, s in members.items()}
    threshold = default_threshold(metric)
    config_hash, sample_hash = jury_hashes(metric, method, scores)
    ok = {b: s for b, s in sorted(scores.items()) if s is not None and s.ok}
    errors = {b: (s.error or "no value") for b, s in sorted(scores.items()) if s is not None and not s.ok}
    missing = sorted(b for b, s in scores.items() if s is None)
    details: dict[str, Any] = {
        "method": method,
        "threshold": threshold,
        "n_members": len(scores),
        "n_errors": len(errors),
        "errors": errors,
        "missing": missing,
    }
    if sample_hash is None and any(s is not None and s.sample_hash for s in scores.values()):
        details["sample_hash_mismatch"] = True
    if errors or missing:  # why fewer members than asked: their own causes, so they group
        details["degraded_reason"] = "; ".join(
            [f"member {b} failed: {e}" for b, e in errors.items()] + [f"member {b} has no line" for b in missing]
        )
    common = dict(
        threshold=threshold,
        details=details,
        config_hash=config_hash,
        sample_hash=sample_hash,
        degraded=bool(errors or missing),
    )
    if not ok:
        said = "; ".join(f"{b}: {e}" for b, e in errors.items()) or "no member scored it"
        return Score.failure(
            metric, JURY, sample_id, one_line(f"jury ({method}): every member failed — {said}"), **common
        )
    votes = {b: bool(score_passed(s, threshold)) for b, s in ok.items()}
    values = [float(s.value) for s in ok.values()]  # type: ignore[arg-type]
    value, passed = _pooled(method, values, list(votes.values()), threshold)
    side = (
        votes
        if method == "majority"
        else {
            b: float(s.value) >= threshold  # type: ignore[arg-type]
            for b, s in ok.items()
        }
    )
    dissent = {b: side[b] != passed for b in ok}
    details["members"] = {b: {"value": s.value, "passed": votes[b], "dissent": dissent[b]} for b, s in ok.items()}
    details["dissenters"] = [b for b in ok if dissent[b]]
    return Score(
        metric=metric,
        backend=JURY,
        sample_id=sample_id,
        value=value,
        raw=value,
        raw_range=(0.0, 10.0),
        passed=passed,
        reason=_reason(method, ok, dissent, details),
        **common,
    )


def _reason(method: str, ok: Mapping[str, Score], dissent: Mapping[str, bool], details: Mapping[str, Any]) -> str:
    """``median of 3: native 8.0, ragas 3.0 (dissents), deepeval 9.0; 1 error excluded``."""
    parts = [
        f"{b} {float(s.value):.1f}" + (" (dissents)" if dissent[b] else "")  # type: ignore[arg-type]
        for b, s in ok.items()
    ]
    text = f"{method} of {len(ok)}: " + ", ".join(parts)
    if details["n_errors"]:
        text += f"; {details['n_errors']} error{'s' if details['n_errors'] > 1 else ''} excluded"
    if details["missing"]:
        text += f"; missing: {', '.join(details['missing'])}"
    return text


def jury_scores(
    scores: Iterable[Score | Mapping[str, Any]], method: str, members: Sequence[str] | None = None
) -> list[Score]:
    """One jury Score per (sample, metric) scored by at least one member, for every metric
    with at least two member backends.

    ``members``: the backends to pool (default: every backend that scored the metric,
    except an existing jury); a listed member without a line for a sample counts as
    missing there, and a metric that fewer than two of them scored gets no jury. Input
    lines for an input row (``row_error``) and earlier jury lines are ignored; of repeated
    (metric, backend, sample) lines the last wins, as in ``scores.jsonl``. Output ordered
    by metric (first seen), then sample id.
    """
    if method not in METHODS:
        raise JuryError(f"unknown jury method '{method}': use one of {', '.join(METHODS)}")
    table: dict[str, dict[str, dict[str, Score]]] = defaultdict(lambda: defaultdict(dict))
    for raw in scores:
        s = _as_score(raw)
        if s.row_error or s.backend == JURY or (members is not None and s.backend not in members):
            continue
        table[s.metric][s.sample_id][s.backend] = s  # the last line per key wins
    out: list[Score] = []
    for metric, by_sample in table.items():
        present = sorted({b for lines in by_sample.values() for b in lines})
        if len(present) < 2:
            continue  # a jury of one would only repeat it
        names = sorted(members) if members is not None else present
        for sid in sorted(by_sample):
            out.append(pool(metric, sid, {b: by_sample[sid].get(b) for b in names}, method))
    return out


def jury_members(lines: Iterable[Score]) -> set[str]:
    """Every backend a jury pooled over its ``lines``: the members that scored, failed or
    had no line (``details.members``, ``errors``, ``missing``)."""
    names: set[str] = set()
    for s in lines:
        d = s.details or {}
        names.update(d.get("members") or {})
        names.update(d.get("errors") or {})
        names.update(d.get("missing") or [])
    return names


def jury_section(lines: Iterable[Score]) -> dict[str, Any]:
    """The jury's own section of a cross-check, from its lines of one metric.

    ``members``; ``method``; ``n`` (samples the jury scored); ``dissent_rate`` = share of
    those samples on which at least one member is on the other side from the jury;
    ``members_dissent`` = per member, dissents / samples it voted on (``voted``); and
    ``most_dissent``: the member with the highest rate (ties: by name), or None when nobody
    dissents. A jury line that failed (every member failed) does not count."""
    lines = list(lines)
    scored = [s for s in lines if s.ok and isinstance((s.details or {}).get("members"), dict)]
    members = sorted(jury_members(lines))
    votes = {m: 0 for m in members}
    dissents = {m: 0 for m in members}
    split = 0
    for s in scored:
        voted = s.details["members"]
        split += any(v.get("dissent") for v in voted.values())
        for m, v in voted.items():
            votes[m] = votes.get(m, 0) + 1
            dissents[m] = dissents.get(m, 0) + bool(v.get("dissent"))
    rates: dict[str, dict[str, Any]] = {
        m: {"voted": votes[m], "dissents": dissents[m], "rate": (dissents[m] / votes[m]) if votes[m] else None}
        for m in sorted(votes)
    }
    ranked = sorted((m for m in rates if rates[m]["dissents"]), key=lambda m: (-float(rates[m]["rate"]), m))
    methods = sorted({str((s.details or {}).get("method")) for s in scored})
    return {
        "members": members,
        "method": methods[0] if len(methods) == 1 else methods,
        "n": len(scored),
        "dissent_rate": (split / len(scored)) if scored else None,
        "members_dissent": rates,
        "most_dissent": ranked[0] if ranked else None,
    }
