"""Backends: the protocol they implement, the rooms that implement it, and the registry
through which the core reaches them without importing them.

A backend is one room, ``unified/adapters/<name>/``: ``__init__.py`` declares its facts
(``facts.BackendFacts``: what it serves under which framework names, its raw scales, its
call estimate, its telemetry switches), ``backend.py`` translates (the one file that
imports the framework). Shared here: ``base.py`` (the ``Backend`` protocol and the checks
every backend shares), ``framework.py`` (the scoring skeleton of the framework backends),
``registry.py`` (the rooms found, third-party registrations, the one pass-bound rule),
``estimate.py`` (``--dry-run``), ``catalog.py`` (what ``unified-eval metrics`` shows) and
``quiet.py`` (every room's switches, set before a framework is imported). ``unified``
reaches adapters only through the names exported here, so ``import unified`` never
imports a framework.

For the core: ``backend_names()``, ``builtin_backends()``, ``backend_info(name)``,
``implemented_metrics(name)``, ``implements(name, ref)``, ``get_backend(name, judges,
**options)``, ``threshold_for(name, ref)``, ``estimate_calls(name, samples, refs,
single_judge=...)``, ``describe_metric(name)``, ``metric_matrix()``,
``metric_table_markdown()``; on a Backend: ``bound(ref)``, ``requirements(ref)``,
``fingerprint_extra()``; ``missing_requirements(backend, ref, judges)``. For plugins and
tests: ``register_backend``, ``unregister_backend``, ``registered_backend`` (scoped).
"""

from __future__ import annotations

from unified.adapters.base import Backend, missing_field_error, missing_requirements, unknown_param_error
from unified.adapters.catalog import describe_metric, metric_matrix, metric_table_markdown
from unified.adapters.estimate import estimate_calls
from unified.adapters.facts import BackendFacts, FrameworkMetric
from unified.adapters.registry import (
    BackendInfo,
    BackendUnavailableError,
    available,
    backend_info,
    backend_names,
    builtin_backends,
    default_threshold,
    framework_name,
    get_backend,
    get_backend_class,
    implemented_metrics,
    implements,
    is_backend,
    register_backend,
    registered_backend,
    threshold_for,
    unregister_backend,
)

__all__ = [
    "Backend",
    "BackendFacts",
    "FrameworkMetric",
    "missing_field_error",
    "missing_requirements",
    "unknown_param_error",
    "BackendInfo",
    "BackendUnavailableError",
    "available",
    "backend_info",
    "backend_names",
    "is_backend",
    "builtin_backends",
    "default_threshold",
    "framework_name",
    "get_backend",
    "get_backend_class",
    "implemented_metrics",
    "implements",
    "register_backend",
    "registered_backend",
    "threshold_for",
    "unregister_backend",
    "estimate_calls",
    "describe_metric",
    "metric_matrix",
    "metric_table_markdown",
]
