"""The backend registry: what the core may know about each backend without importing it.

Built-in backends are the rooms of ``unified/adapters/``: every sub-package whose
``__init__`` declares ``FACTS`` (a ``BackendFacts``), found by listing the folder — a new
room needs no line here. Third-party backends register with ``register_backend(...)``
(fsspec's ``register_implementation`` shape) or through the ``unified.backends``
entry-point group (``name = "package.module:BackendClass"``; its metric set is then read
from the class). A backend's module is imported on first use only; ``unified-eval
metrics``, ``--dry-run`` and the docs read the facts alone.

The one pass-bound rule lives here (``threshold_for``): the bound of a (metric, backend)
task on 0–10 is the user's ``[threshold=…]``, else the backend's own default for the
metric (``BackendFacts.bound``: the embedding backend's tuned bounds), else the metric's
(``MetricSpec.threshold``). The run plan resolves it once per task and every backend,
gate, report and test assertion reads that one bound (``Score.threshold``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import pkgutil
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from unified.adapters.facts import BackendFacts
from unified.metrics import MetricRef, UnknownMetricError, all_metrics, get_metric, parse_metric

if TYPE_CHECKING:
    from unified.adapters.base import Backend
    from unified.judge.base import Judges

#: the registry's name for one backend's facts (kept for code written against it)
BackendInfo = BackendFacts


class BackendUnavailableError(ImportError):
    """A backend's extra is not installed; the message says which pip command to run."""


@functools.cache
def _rooms() -> dict[str, BackendFacts]:
    """The built-in rooms, in display order (``BackendFacts.order``): the sub-packages of
    this folder that declare ``FACTS``."""
    package = __name__.rpartition(".")[0]
    found = []
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if mod.ispkg:
            facts = getattr(importlib.import_module(f"{package}.{mod.name}"), "FACTS", None)
            if isinstance(facts, BackendFacts):
                found.append(facts)
    return {f.name: f for f in sorted(found, key=lambda f: (f.order, f.name))}


#: backends added with ``register_backend`` (a name here wins over a room of that name)
_registered: dict[str, BackendFacts] = {}


def builtin_backends() -> tuple[str, ...]:
    """The built-in backends' names, in display order."""
    return tuple(_rooms())


def _entry_point_backends() -> dict[str, BackendFacts]:
    return {
        ep.name: BackendFacts(
            name=ep.name,
            backend=ep.value,
            order=1000,
            hint=f"backend '{ep.name}' from {ep.value} failed to import",
            metrics=None,
        )
        for ep in entry_points(group="unified.backends")
    }


def _table() -> dict[str, BackendFacts]:
    return {**_entry_point_backends(), **_rooms(), **_registered}  # registered names win


def backend_names() -> list[str]:
    """Every backend name: built-ins first (in display order), then registered and
    entry-point ones."""
    return list({**_rooms(), **_registered, **_entry_point_backends()})


def backend_info(name: str) -> BackendFacts:
    """The facts of backend ``name`` (KeyError naming the known ones). A versioned name
    (``ragas@0.3.9``) is its room's facts run in an isolated environment
    (``unified.adapters.isolated``)."""
    table = _table()
    if name in table:
        return table[name]
    isolated = _isolated(name, table)
    if isolated is None:
        raise KeyError(
            f"unknown backend '{name}'; known: {', '.join(sorted(table))} (and ragas@VERSION, deepeval@VERSION)"
        )
    return isolated


#: isolated backends' facts, made once per name (their classes are kept per name too)
_isolated_made: dict[str, BackendFacts] = {}


def _isolated(name: str, table: dict[str, BackendFacts]) -> BackendFacts | None:
    from unified.adapters.isolated import split_name

    split = split_name(name)
    if split is None or "@" not in name or split[0] not in table:
        return None
    if name not in _isolated_made:
        from unified.adapters.isolated import isolated_facts

        _isolated_made[name] = isolated_facts(name, table[split[0]])
    return _isolated_made[name]


def is_backend(name: str) -> bool:
    """Whether ``name`` is a backend: a known name, or a room's framework at a version."""
    try:
        backend_info(name)
    except KeyError:
        return False
    return True


def available(info: BackendFacts) -> bool:
    """Whether the backend's package can be imported (``BackendFacts.available``)."""
    return info.available


def resolve(path: str) -> Any:
    """``"package.module:Attr.attr"`` -> that object (imports the module)."""
    module_path, _, attrs = path.partition(":")
    obj: Any = importlib.import_module(module_path)
    for part in filter(None, attrs.split(".")):
        obj = getattr(obj, part)
    return obj


def get_backend_class(name: str) -> "type[Backend]":
    """Import and return the class of backend ``name`` (first use imports its module)."""
    info = backend_info(name)
    try:
        cls = resolve(info.backend)
    except ImportError as e:
        raise BackendUnavailableError(f"{info.hint} ({e})") from None
    bind = getattr(cls, "bound_to", None)  # an isolated backend: one class per name
    return bind(info) if bind is not None else cls


def get_backend(name: str, judges: "Judges | None" = None, **options: Any) -> "Backend":
    return get_backend_class(name)(judges, **options)


def register_backend(
    name: str,
    class_path: str,
    *,
    metrics: Iterable[str] | str | None,
    extra: str | None = None,
    package: str | None = None,
    hint: str | None = None,
    uses_judges: bool = True,
    estimate: str | None = None,
    threshold: str | None = None,
    custom_metrics: bool = False,
    replace: bool = False,
) -> BackendFacts:
    """Add a backend to the registry. ``metrics``: canonical names (or a ``"module:attr"``
    path to them; None = read the class's ``metrics`` on first use); ``estimate``: the
    path of its call estimate; ``threshold``: the path of ``fn(ref) -> float``, its own
    default pass bound on 0–10. A built-in name is replaced only with ``replace``."""
    if name in _table() and not replace:
        raise ValueError(f"backend '{name}' is already registered")
    if not class_path.partition(":")[2]:
        raise ValueError(f"backend class path must be 'package.module:Class', got {class_path!r}")
    _registered[name] = BackendFacts(
        name=name,
        backend=class_path,
        order=1000,
        hint=hint or f"backend '{name}' ({class_path}) failed to import",
        metrics=metrics if metrics is None or isinstance(metrics, str) else frozenset(metrics),
        extra=extra,
        package=package,
        uses_judges=uses_judges,
        custom_metrics=custom_metrics,
        estimate=estimate,
        bound=threshold,
    )
    return backend_info(name)


def unregister_backend(name: str) -> None:
    """Remove a backend added with ``register_backend`` (built-ins cannot be removed)."""
    if name not in _registered:
        if name in _rooms():
            raise ValueError(f"backend '{name}' is built in and cannot be unregistered")
        raise KeyError(f"backend '{name}' is not registered")
    del _registered[name]


@contextlib.contextmanager
def registered_backend(name: str, class_path: str, **fields: Any) -> Iterator[BackendFacts]:
    """``register_backend`` for the duration of a ``with`` block; a replaced registration
    comes back at its end (tests)."""
    previous = _registered.get(name)
    info = register_backend(name, class_path, **{"metrics": None, **fields, "replace": True})
    try:
        yield info
    finally:
        _registered.pop(name, None)
        if previous is not None:
            _registered[name] = previous


def _canonical(names: Iterable[str]) -> set[str]:
    # a backend may declare a framework alias ("SemanticSimilarity"): one name per metric
    out = set()
    for n in names:
        try:
            out.add(get_metric(n).name)
        except UnknownMetricError:
            out.add(n)
    return out


def _declared(info: BackendFacts) -> Iterable[str]:
    if info.metrics is None:
        return get_backend_class(info.name).metrics
    if isinstance(info.metrics, str):
        found = resolve(info.metrics)
        return found() if callable(found) else found
    return info.metrics  # a table's keys, or a registered set


def implemented_metrics(name: str) -> set[str]:
    """Canonical names of the metrics backend ``name`` implements, from its facts (no
    framework import), else from its class. A backend with ``custom_metrics`` also serves
    every user-registered metric."""
    info = backend_info(name)
    out = _canonical(_declared(info))
    if info.custom_metrics:
        out |= {s.name for s in all_metrics() if s.custom}
    return out


def as_ref(metric: MetricRef | str) -> MetricRef:
    return metric if isinstance(metric, MetricRef) else parse_metric(metric)


def implements(name: str, metric: MetricRef | str) -> bool:
    """Whether backend ``name`` implements ``metric`` (a ref or a name in any spelling)."""
    return as_ref(metric).canonical in implemented_metrics(name)


def scale_of(name: str, metric: str) -> str | None:
    """What backend ``name``'s raw value for canonical ``metric`` means and how it maps
    to 0–10 (its table's rows; read without importing the framework), or None."""
    return backend_info(name).scales().get(metric)


def own_bound(info: BackendFacts, ref: MetricRef) -> float | None:
    """The backend's own default pass bound for ``ref`` (None: the metric's)."""
    hook = resolve(info.bound) if isinstance(info.bound, str) else info.bound
    return None if hook is None else hook(ref)


def own_bound_of(name: str, ref: MetricRef) -> float | None:
    """``own_bound`` of backend ``name``; None for a backend the registry does not know
    (a class used directly)."""
    try:
        info = backend_info(name)
    except KeyError:
        return None
    return own_bound(info, ref)


def threshold_of(info: BackendFacts, ref: MetricRef) -> float:
    """The pass bound on 0–10 of (``info``'s backend, ``ref``): the one rule of this
    module's docstring (``MetricRef.bound``)."""
    return ref.bound(own_bound(info, ref))


def threshold_for(name: str, metric: MetricRef | str) -> float | None:
    """The pass bound on 0–10 backend ``name`` applies to ``metric``; None when it does
    not implement the metric. (Retrieval precision@k and recall@k scale this bound per
    sample by the best achievable value; see ``unified.adapters.native.retrieval``.)"""
    ref = as_ref(metric)
    if not implements(name, ref):
        return None
    return threshold_of(backend_info(name), ref)


def default_threshold(ref: MetricRef) -> float:
    """The bound of ``ref`` where no backend has one of its own: ``[threshold=…]``, else
    the metric's default."""
    return ref.bound()


def framework_name(backend: str, canonical: str) -> str | None:
    """The name backend ``backend``'s framework gives metric ``canonical`` (its table's
    ``cls``), or None."""
    row = backend_info(backend).table.get(canonical)
    return None if row is None else row.cls


def quiet_env() -> dict[str, str]:
    """Every room's switches, to set before any framework is imported."""
    out: dict[str, str] = {}
    for info in _rooms().values():
        out.update(info.quiet_env)
    return out


def install_names() -> None:
    """Give the metric registry every room's framework names (``FaithfulnessMetric`` is
    ``faithfulness``) and the data layer every room's object readers. Called once, when
    ``unified`` is imported, so a name or an object is read the same way whatever was
    imported first."""
    from unified.data.objects import register_object_reader
    from unified.metrics import add_names

    for info in _rooms().values():
        for canonical, names in info.names().items():
            add_names(canonical, names)
        for reader in info.objects:
            register_object_reader(reader.module, reader.classes, reader.target, builtin=True)
