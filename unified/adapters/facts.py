"""What a backend room declares about itself, read without importing its framework.

A backend is one room, ``unified/adapters/<name>/``: its ``__init__.py`` holds the facts
(this module's ``BackendFacts``, with one ``FrameworkMetric`` row per canonical metric it
serves) and ``backend.py`` the translation (the only file that imports the framework).
The registry finds the rooms by their ``FACTS`` and derives everything the core shows
without a framework import from those rows:

- what the backend serves, and the framework's own names for it (metric aliases:
  ``--metrics FaithfulnessMetric`` means ``faithfulness``);
- the raw scale and its 0–10 image (``unified-eval metrics NAME``), by the one rule of
  ``unified.scores``::

      value = 10 · (raw − lo) / (hi − lo)     (10 · (hi − raw) / (hi − lo) when lower is better)

- the ``--dry-run`` call estimate, per sample with K retrieved contexts::

      chat calls = calls[0] + calls[1] · K,   embedding calls = calls[2]

- the telemetry and file switches to set before the framework is imported;
- framework objects the room reads as samples (``unified.data.objects``).

A room may replace a derived fact with a function of its own (``estimate``, ``bound``).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

#: (chat calls, further chat calls per retrieved context, embedding calls) for one sample
Calls = tuple[int, int, int]
#: ``fn(refs, sample, *, single_judge) -> [(chat, embedding) | None per ref]``
Estimate = Callable[..., list[tuple[int, int] | None]]


@dataclass(frozen=True, kw_only=True)
class FrameworkMetric:
    """How one canonical metric runs on a framework: the facts every room's table shares.

    ``cls``: the framework's name for it (a class, a function, an evaluator id); it is
    also accepted as the metric's name unless ``alias`` names it otherwise (``""``: no
    alias). ``raw_range`` / ``higher_is_better``: the framework's own scale. ``scale``:
    the raw value and its 0–10 image in words, when the derived text would not say it
    (labels, per-context shares). ``needs``: sample fields the framework cannot do without
    beyond the canonical metric's own. ``calls``: the judge calls of one sample
    (``Calls``), measured through the judge layer; None where not measured (the dry run
    then says it has no estimate rather than guess). A room's table subclasses this with
    what its translation needs.
    """

    cls: str
    raw_range: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    scale: str | None = None
    needs: tuple[str, ...] = ()
    calls: Calls | None = (1, 0, 0)
    alias: str | None = None

    @property
    def name_users_write(self) -> str:
        """The name a user of the framework writes for this metric (an alias here)."""
        return self.cls if self.alias is None else self.alias

    def scale_text(self) -> str:
        """``"<cls>: <raw value and its 0–10 image>"`` for ``unified-eval metrics NAME``."""
        if self.scale is not None:
            return f"{self.cls}: {self.scale}"
        lo, hi = self.raw_range
        span = "" if (lo, hi) == (0.0, 1.0) else f" / {hi - lo:g}"
        shifted = "raw" if lo == 0 else f"(raw − {lo:g})"
        if self.higher_is_better:
            return f"{self.cls}: score {lo:g}–{hi:g} (higher is better); value = 10 · {shifted}{span}"
        return f"{self.cls}: score {lo:g}–{hi:g} (lower is better); value = 10 · ({hi:g} − raw){span}"


@dataclass(frozen=True, kw_only=True)
class ObjectReader:
    """Framework objects a room reads as samples: objects whose class is one of
    ``classes``, defined under the top-level package ``module``, are turned into
    ``(layout, record)`` pairs by ``target`` (``"package.module:function"``, imported on
    first use)."""

    module: str
    classes: frozenset[str]
    target: str


@dataclass(frozen=True, kw_only=True)
class BackendFacts:
    """One backend room, as the registry reads it.

    ``name``: the backend's name (``--backend NAME``); ``title``: the framework as its
    users know it (tables, the docs' menu); ``summary``: what it is, in one line (the
    backends page); ``backend``: the import path of its
    ``Backend`` class (``"unified.adapters.ragas.backend:RagasBackend"``); ``order``: its
    place in tables (built-ins: native 0, embedding 10, then the frameworks);
    ``metrics``: its table (canonical name → ``FrameworkMetric``), or the
    ``"module:attr"`` path of a function returning the canonical names it serves (a table
    that changes at run time, like native's), or the names alone (a registered backend),
    or None (read the class's ``metrics`` on first use); ``extra`` / ``package``: the pip extra and
    the import name that tells whether it is installed; ``hint``: the one line shown when
    it is not; ``uses_judges``: False for a backend with models of its own;
    ``custom_metrics``: it also serves user-registered metrics; ``quiet_env``: environment
    switches set before its framework is imported (telemetry, stray files);
    ``more_names``: further framework names per canonical metric (``{metric: {key:
    name}}``, e.g. RAGAS 0.1's ``answer_relevance``), beside the table's ``cls``;
    ``estimate``: a call estimate replacing the table's ``calls`` (its ``Estimate`` or a
    ``"module:function"`` path); ``bound``: the backend's own default pass bound on 0–10
    (``fn(ref) -> float | None``, or its path), else the metric's; ``objects``: the
    framework objects it reads; ``doc``: its page under ``docs/backends/``.
    """

    name: str
    backend: str
    order: int
    hint: str
    title: str = ""
    summary: str = ""
    metrics: Mapping[str, FrameworkMetric] | frozenset[str] | str | None
    extra: str | None = None
    package: str | None = None
    uses_judges: bool = True
    custom_metrics: bool = False
    quiet_env: Mapping[str, str] = field(default_factory=dict)
    more_names: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    estimate: Estimate | str | None = None
    bound: Callable[[Any], float | None] | str | None = None
    objects: Sequence[ObjectReader] = ()
    verdicts: Mapping[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    doc: str | None = None

    @property
    def available(self) -> bool:
        """Whether the backend's package can be imported (checked without importing it)."""
        if self.package is None:
            return True
        try:  # a dotted name ("phoenix.evals") imports its parent, which may be absent
            return importlib.util.find_spec(self.package) is not None
        except ModuleNotFoundError:
            return False

    @property
    def table(self) -> Mapping[str, FrameworkMetric]:
        """The metric table (empty when the room declares its names by path)."""
        return self.metrics if isinstance(self.metrics, Mapping) else {}

    def names(self) -> dict[str, dict[str, str]]:
        """canonical metric → {alias key → the framework's name}: the table's names under
        the backend's own key, then ``more_names``."""
        out: dict[str, dict[str, str]] = {}
        for canonical, m in self.table.items():
            if m.name_users_write:
                out.setdefault(canonical, {})[self.name] = m.name_users_write
        for canonical, more in self.more_names.items():
            out.setdefault(canonical, {}).update(more)
        return out

    def scales(self) -> dict[str, str]:
        """canonical metric → what the raw value is and how it maps to 0–10."""
        return {canonical: m.scale_text() for canonical, m in self.table.items()}

    def table_calls(
        self, refs: Sequence[Any], sample: Any, *, single_judge: bool = False
    ) -> list[tuple[int, int] | None]:
        """The estimate from the table's ``calls``: each metric on its own (nothing shared
        between metrics); one judge whatever ``single_judge`` (a framework has one)."""
        k = len(getattr(sample, "retrieved_contexts", None) or [])
        rows = (self.table.get(r.canonical) for r in refs)
        return [None if m is None or m.calls is None else (m.calls[0] + m.calls[1] * k, m.calls[2]) for m in rows]
