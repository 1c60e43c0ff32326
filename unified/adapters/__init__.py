"""Backends: the protocol they implement, and the registry through which the core reaches
them without importing them.

``base.py`` holds the ``Backend`` protocol and the checks backends share; ``registry.py``
the static facts about each backend (fsspec's ``known_implementations`` shape) and the
lookups built on them; ``estimate.py`` the ``--dry-run`` call estimates; ``catalog.py``
what ``unified-eval metrics`` shows about each metric. ``unified`` reaches adapters only
through the names exported here, so ``import unified`` never imports ragas or deepeval.

For the core: ``backend_names()``, ``backend_info(name)`` (class path, extra, package,
hint, uses_judges, availability), ``implemented_metrics(name)``, ``implements(name, ref)``,
``get_backend(name, judges, **options)``, ``threshold_for(name, ref)``,
``estimate_calls(name, samples, refs, single_judge=...)``, ``describe_metric(name)``,
``metric_matrix()``, ``metric_table_markdown()``; on a Backend: ``requirements(ref)``,
``fingerprint_extra()``; ``missing_requirements(backend, ref, judges)``. For plugins and
tests: ``register_backend``, ``unregister_backend``, ``registered_backend`` (scoped).
"""

from __future__ import annotations

from unified.adapters.base import Backend, missing_field_error, missing_requirements, unknown_param_error
from unified.adapters.catalog import describe_metric, metric_matrix, metric_table_markdown
from unified.adapters.estimate import estimate_calls
from unified.adapters.registry import (
    BUILTIN_BACKENDS,
    BackendInfo,
    BackendUnavailableError,
    backend_info,
    backend_names,
    default_threshold,
    get_backend,
    get_backend_class,
    implemented_metrics,
    implements,
    known_backends,
    register_backend,
    registered_backend,
    threshold_for,
    unregister_backend,
)

__all__ = [
    "Backend",
    "missing_field_error",
    "missing_requirements",
    "unknown_param_error",
    "BUILTIN_BACKENDS",
    "BackendInfo",
    "BackendUnavailableError",
    "backend_info",
    "backend_names",
    "default_threshold",
    "get_backend",
    "get_backend_class",
    "implemented_metrics",
    "implements",
    "known_backends",
    "register_backend",
    "registered_backend",
    "threshold_for",
    "unregister_backend",
    "estimate_calls",
    "describe_metric",
    "metric_matrix",
    "metric_table_markdown",
]
