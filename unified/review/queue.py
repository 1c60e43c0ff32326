"""The review queue: which (sample, metric) a person should settle first.

One ``Item`` per (sample, metric) that at least one backend gave a value, holding every
backend's value, verdict and reason (the jury's own line, ``backend="jury"``, is shown but
not counted as a voice: it repeats its members). Per item, over the n backends with a value
``v_b`` on 0–10 and verdict ``p_b`` (``passed``)::

    split       = 1 when the verdicts hold both a pass and a fail, else 0
    spread      = max v_b − min v_b                                   (0–10)
    minority    = min(#pass, #fail) / n      the share outvoted by the majority (the jury's
                                             minority for a majority jury); 0 … ½
    uncertainty = 1 − |mean v_b − bound| / 10                         (1: right at the bound)

    key         = (split, split · spread, minority, uncertainty, spread)
                  compared in that order, largest first

so a pass/fail split comes before any agreement on the verdict, a wide split before a
narrow one, and among samples whose verdicts agree the ones nearest the bound (the most
uncertain) come first — a spread that changes no verdict only breaks ties there.

A sample's key is the largest of its items' keys; ties keep the run's sample order (a
stable sort), so the queue is the same every time the folder is the same.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

#: the pooled backend (unified.analysis.jury): shown, never counted as a voice
JURY = "jury"


@dataclass(frozen=True)
class Verdict:
    """One backend's line for one (sample, metric), as the screen shows it."""

    backend: str
    value: float | None
    passed: bool | None
    reason: str
    error: str | None = None


@dataclass
class Item:
    """One (sample, metric): every backend's verdict and the metric's pass bound."""

    sample_id: str
    metric: str
    bound: float
    verdicts: list[Verdict] = field(default_factory=list)

    def voices(self) -> list[Verdict]:
        """The backends that gave a value, the jury left out (module docstring)."""
        return [v for v in self.verdicts if v.value is not None and v.backend != JURY]

    def key(self) -> tuple[float, float, float, float, float]:
        """(split, split · spread, minority, uncertainty, spread): the module docstring."""
        voices = self.voices()
        if not voices:
            return (0.0, 0.0, 0.0, 0.0, 0.0)
        values = [float(v.value) for v in voices]  # type: ignore[arg-type]
        passes = sum(1 for v in voices if v.passed)
        fails = sum(1 for v in voices if v.passed is False)
        split = 1.0 if passes and fails else 0.0
        minority = min(passes, fails) / len(voices)
        uncertainty = 1.0 - min(abs(statistics.fmean(values) - self.bound) / 10.0, 1.0)
        spread = max(values) - min(values)
        return (split, split * spread, minority, uncertainty, spread)


@dataclass(frozen=True)
class Filters:
    """What the person asked to see: a metric, a backend, pass or fail (None: any).
    ``verdict`` applies to ``backend`` when one is named, else to any backend."""

    metric: str | None = None
    backend: str | None = None
    verdict: str | None = None  # "pass" | "fail"

    def keeps(self, item: Item) -> bool:
        if self.metric and item.metric != self.metric:
            return False
        voices = [v for v in item.verdicts if v.value is not None]
        if self.backend:
            voices = [v for v in voices if v.backend == self.backend]
            if not voices:
                return False
        if self.verdict in ("pass", "fail"):
            want = self.verdict == "pass"
            return any(v.passed is want for v in voices)
        return True

    def query(self) -> dict[str, str]:
        """The filters as URL query parameters (empty ones left out)."""
        d = {"metric": self.metric, "backend": self.backend, "verdict": self.verdict}
        return {k: v for k, v in d.items() if v}


def _verdict(d: Mapping[str, Any]) -> Verdict:
    value = d.get("value")
    passed = d.get("passed")
    return Verdict(
        backend=str(d.get("backend")),
        value=float(value) if isinstance(value, (int, float)) else None,
        passed=passed if isinstance(passed, bool) else None,
        reason=str(d.get("reason") or ""),
        error=str(d["error"]) if d.get("error") else None,
    )


def build_items(score_dicts: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Item]:
    """(sample id, metric) -> its ``Item``, from a run's score lines; items no backend
    gave a value are left out (there is nothing to settle)."""
    items: dict[tuple[str, str], Item] = {}
    for d in score_dicts:
        sid, metric = str(d.get("sample_id")), str(d.get("metric"))
        item = items.get((sid, metric))
        if item is None:
            bound = d.get("threshold")
            item = items[(sid, metric)] = Item(sid, metric, float(bound) if isinstance(bound, (int, float)) else 5.0)
        item.verdicts.append(_verdict(d))
    for item in items.values():
        item.verdicts.sort(key=lambda v: (v.backend == JURY, v.backend))
    return {k: it for k, it in items.items() if it.voices()}


def disagreement_order(items: Iterable[Item], sample_order: Mapping[str, int]) -> list[str]:
    """Sample ids, the most disputed first (module docstring: the largest key of each
    sample's items; ties in the run's sample order)."""
    best: dict[str, tuple[float, ...]] = {}
    for item in items:
        k = item.key()
        if item.sample_id not in best or k > best[item.sample_id]:
            best[item.sample_id] = k
    ranked = sorted(best, key=lambda sid: sample_order.get(sid, len(sample_order)))
    return sorted(ranked, key=lambda sid: best[sid], reverse=True)


__all__ = ["JURY", "Filters", "Item", "Verdict", "build_items", "disagreement_order"]
