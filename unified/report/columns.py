"""The report model's storage: each (metric, backend) a column of typed arrays, so a
million-task folder is summarised in tens of bytes per task, not hundreds.

A ``Task`` object per task (a slots dataclass, its cost tuple, its position int and the
sample id string parsed from its line) cost about 365 bytes of heap per task
(tracemalloc, 20k samples × 2 metrics). Here one task costs, in its column::

    value      8 B   array('d'), NaN = no value (values are finite or None: lossless)
    threshold  8 B   array('d'), NaN = none
    pos        8 B   array('q'), the byte offset of its line
    passed     1 B   array('b'), -1 = no verdict
    sample     4 B   array('i'), the sample's number in ``SampleIds``
    slot       4 B   array('i') in ``SampleIds`` order: where the sample sits in this column

plus, once per sample for the whole model, its id string and one dict entry
(``SampleIds``). What most tasks do not have — an error, a cost, a price, a degraded
reason — lives in small dicts keyed by slot. ``Task`` is built on access (a flyweight),
so every reader of ``model.tasks[metric][backend]`` sees the Mapping it saw before.

Order: a column iterates in the order its samples were first written (the dict order it
replaces: a later line for the same sample overwrites in place), so every sum over it
adds in the same order as before and gives the same float.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, TypeVar

from unified.scores import Cost, is_ok

_NAN = float("nan")
_V = TypeVar("_V")


@dataclass(slots=True)
class Task:
    """What the report keeps of one task's (last) score line."""

    value: float | None
    passed: bool | None
    error: str | None
    threshold: float | None
    cost: tuple[Any, ...]
    usd: float | None
    pos: int
    degraded: str | None = None  # why the value came from fewer judges than asked

    @property
    def ok(self) -> bool:
        return is_ok(self.error, self.value)

    def cost_model(self) -> Cost:
        return cost_of(self.cost)


def cost_of(values: tuple[Any, ...]) -> Cost:
    """The ``Cost`` of a cost tuple kept in ``Cost.model_fields`` order."""
    return Cost(**dict(zip(Cost.model_fields, values)))


class SampleIds:
    """Sample id <-> a dense number, one entry per sample for the whole model (the id
    string is kept once, not once per column)."""

    __slots__ = ("number", "ids")

    def __init__(self) -> None:
        self.number: dict[str, int] = {}
        self.ids: list[str] = []

    def add(self, sid: str) -> int:
        n = self.number.get(sid)
        if n is None:
            n = self.number[sid] = len(self.ids)
            self.ids.append(sid)
        return n

    def __len__(self) -> int:
        return len(self.ids)


def _keep(rare: dict[int, _V], slot: int, value: _V | None) -> None:
    """Set (or, for None, clear: a later line of the task replaced it) a rare field."""
    if value is None:
        rare.pop(slot, None)
    else:
        rare[slot] = value


def _opt(x: float) -> float | None:
    return None if math.isnan(x) else x


class TaskColumn(Mapping[str, Task]):
    """The tasks of one (metric, backend): sample id -> ``Task``, in first-written order."""

    def __init__(self, ids: SampleIds, no_cost: tuple[Any, ...]):
        self._ids, self._no_cost = ids, no_cost
        self._sample = array("i")  # slot -> sample number
        self._slot = array("i")  # sample number -> slot, -1 = not in this column
        self._value, self._threshold = array("d"), array("d")
        self._pos, self._passed = array("q"), array("b")
        # rare per-task fields, by slot
        self._error: dict[int, str] = {}
        self._cost: dict[int, tuple[Any, ...]] = {}
        self._usd: dict[int, float] = {}
        self._degraded: dict[int, str] = {}

    def put(self, sid: str, t: Task) -> bool:
        """Store ``t`` as the task of ``sid``; True when it replaced an earlier line."""
        replaced = self.put_plain(sid, t.value, t.passed, t.error, t.threshold, t.pos)
        i = self._slot[self._ids.number[sid]]
        _keep(self._cost, i, None if t.cost == self._no_cost else t.cost)
        _keep(self._usd, i, t.usd)
        _keep(self._degraded, i, t.degraded)
        return replaced

    def put_plain(
        self, sid: str, value: float | None, passed: bool | None, error: str | None, threshold: float | None, pos: int
    ) -> bool:
        """``put`` of a task with no cost, no price and no degraded reason (most tasks),
        without building its ``Task``; True when it replaced an earlier line."""
        n = self._ids.add(sid)
        if len(self._slot) <= n:
            self._slot.extend([-1] * (n + 1 - len(self._slot)))
        i = self._slot[n]
        replaced = i >= 0
        if not replaced:
            i = self._slot[n] = len(self._sample)
            self._sample.append(n)
            self._value.append(_NAN if value is None else value)
            self._threshold.append(_NAN if threshold is None else threshold)
            self._pos.append(pos)
            self._passed.append(-1 if passed is None else int(passed))
            if error is not None:
                self._error[i] = error
            return False
        self._value[i] = _NAN if value is None else value
        self._threshold[i] = _NAN if threshold is None else threshold
        self._pos[i] = pos
        self._passed[i] = -1 if passed is None else int(passed)
        for rare in (self._cost, self._usd, self._degraded):
            rare.pop(i, None)
        _keep(self._error, i, error)
        return True

    def _task(self, i: int) -> Task:
        p = self._passed[i]
        return Task(
            value=_opt(self._value[i]),
            passed=None if p < 0 else bool(p),
            error=self._error.get(i),
            threshold=_opt(self._threshold[i]),
            cost=self._cost.get(i, self._no_cost),
            usd=self._usd.get(i),
            pos=self._pos[i],
            degraded=self._degraded.get(i),
        )

    def _find(self, sid: object) -> int:
        n = self._ids.number.get(sid) if isinstance(sid, str) else None
        return -1 if n is None or n >= len(self._slot) else self._slot[n]

    def __getitem__(self, sid: str) -> Task:
        i = self._find(sid)
        if i < 0:
            raise KeyError(sid)
        return self._task(i)

    def __contains__(self, sid: object) -> bool:
        return self._find(sid) >= 0

    def __iter__(self) -> Iterator[str]:
        ids = self._ids.ids
        return (ids[n] for n in self._sample)

    def __len__(self) -> int:
        return len(self._sample)

    def items(self) -> Iterator[tuple[str, Task]]:  # type: ignore[override]
        ids = self._ids.ids
        return ((ids[n], self._task(i)) for i, n in enumerate(self._sample))

    def failed_items(self) -> Iterator[tuple[str, Task]]:
        """``items()`` of the failed tasks only (an error, or no value), in order: a run
        of 200k good tasks builds no Task to find its few failures."""
        ids, value, error = self._ids.ids, self._value, self._error
        for i, n in enumerate(self._sample):
            if i in error or math.isnan(value[i]):
                yield ids[n], self._task(i)

    def degraded_items(self) -> Iterator[tuple[str, Task]]:
        """``items()`` of the tasks with a degraded reason, in order (only those are read)."""
        ids = self._ids.ids
        for i in sorted(self._degraded):
            yield ids[self._sample[i]], self._task(i)

    def outcomes(self) -> Iterator[tuple[float | None, bool | None, tuple[Any, ...] | None]]:
        """(value of a successful task else None, verdict, cost or None for no cost) per
        task in order: what an aggregate needs, without building a Task."""
        value, passed, error, cost = self._value, self._passed, self._error, self._cost
        for i in range(len(self._sample)):
            v, p = value[i], passed[i]
            ok = i not in error and not math.isnan(v)
            yield (v if ok else None), (None if p < 0 else bool(p)), cost.get(i)

    def ok_values(self) -> dict[str, float]:
        """sample id -> value of each successful task (``is_ok``), in order, without
        building a Task."""
        ids, value, error = self._ids.ids, self._value, self._error
        return {ids[n]: value[i] for i, n in enumerate(self._sample) if i not in error and not math.isnan(value[i])}

    def priced(self) -> tuple[float, int]:
        """(Σ usd, how many tasks carry a price), summed in task order (the order a walk
        over ``items()`` adds in, so the same float)."""
        total, usd = 0.0, self._usd
        for i in sorted(usd):
            total += usd[i]
        return total, len(usd)

    def values(self) -> Iterator[Task]:  # type: ignore[override]
        return (self._task(i) for i in range(len(self._sample)))
