"""The metric registry: canonical names, aliases, required fields, default thresholds.

Modelled on ``sklearn.metrics.get_scorer_names()``: one naming scheme, every metric
discoverable, an unknown name answered with the closest matches. A cutoff is part of
the name as IR users write it (``precision@3``, ``ndcg@10``); ``parse_metric`` splits it.

Custom metrics (as Embedchain's and Dingo's users write them) register with
``@register_metric(...)`` on a plain function ``Sample -> raw`` (or ``-> Score``), or with
``register_rubric(...)`` for an LLM rubric judged through the judge layer.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Literal

from unified.bounds import BoundScaleError, read_bound

Kind = Literal["llm", "embedding", "deterministic"]


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is, independent of any backend.

    ``required``: Sample fields it reads. ``threshold``: default pass bound on 0–10.
    ``aliases``: framework -> that framework's name for it. ``takes_k``: accepts ``@k``.
    ``raw_range``/``higher_is_better``: the raw scale of the native/custom implementation.
    ``fn``: for custom deterministic metrics, ``Sample -> float | Score``.
    ``rubric``: for custom LLM rubric metrics, ``{"criteria": str, "scale": (lo, hi)}``.
    """

    name: str
    description: str
    required: tuple[str, ...]
    kind: Kind
    threshold: float = 5.0
    aliases: dict[str, str] = field(default_factory=dict)
    takes_k: bool = False
    raw_range: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    fn: Callable[..., Any] | None = None
    rubric: dict[str, Any] | None = None
    custom: bool = False


@dataclass(frozen=True)
class MetricRef:
    """A metric as the user asked for it: ``name`` as written (``precision@3``), the spec,
    the cutoff ``k`` (None = whole list) and free parameters (``variant=sentence``)."""

    name: str
    spec: MetricSpec
    k: int | None = None
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def canonical(self) -> str:
        return self.spec.name

    def bound(self, backend_default: float | None = None) -> float:
        """The pass bound on 0–10 of this metric as asked: the user's ``[threshold=…]``
        (read on 0–10 by ``parse_metric``), else ``backend_default`` (a backend's own
        default for it, ``BackendFacts.bound``), else the metric's (``spec.threshold``).
        The one rule; the run resolves it once per (metric, backend) task."""
        user = self.param("threshold")
        if user is not None:
            return float(user)
        return float(self.spec.threshold if backend_default is None else backend_default)

    def param(self, key: str, default: Any = None) -> Any:
        # the last value given for ``key`` (as dict(params) would keep it), without
        # building that dict for every sample a metric scores
        for k, v in reversed(self.params):
            if k == key:
                return v
        return default


_REGISTRY: dict[str, MetricSpec] = {}
_ALIAS_INDEX: dict[str, str] = {}


class UnknownMetricError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


class MetricBoundError(UnknownMetricError, BoundScaleError):
    """A ``[threshold=…]`` on the wrong scale: a bad metric spec (KeyError, as callers of
    parse_metric catch) and a bad bound (ValueError, as callers of a bound catch)."""


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip()).lower()


def register(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    """Add a spec to the registry (its canonical name and every alias resolve to it)."""
    key = _norm(spec.name)
    if key in _REGISTRY and not replace:
        raise ValueError(f"metric '{spec.name}' is already registered")
    _REGISTRY[key] = spec
    _ALIAS_INDEX[key] = key
    for alias in spec.aliases.values():
        a = _norm(alias)
        # an alias never steals another metric's canonical name
        if a not in _REGISTRY or a == key:
            _ALIAS_INDEX.setdefault(a, key)
    return spec


def unregister(name: str) -> MetricSpec:
    """Remove a metric and the aliases that resolve to it; returns its spec. Aliases it
    had shadowed nothing, so no other metric loses a name."""
    key = _norm(name)
    if key not in _REGISTRY:
        raise UnknownMetricError(f"unknown metric '{name}'")
    spec = _REGISTRY.pop(key)
    for alias in [a for a, k in _ALIAS_INDEX.items() if k == key]:
        del _ALIAS_INDEX[alias]
    return spec


def add_names(canonical: str, names: dict[str, str]) -> MetricSpec:
    """Add framework names to a metric (``{"deepeval": "FaithfulnessMetric"}``): each
    becomes an alias and is listed in ``spec.aliases`` under its key. A name another
    metric already answers to is refused (one name, one metric); a name that is another
    metric's canonical name is listed but not resolved to this one."""
    key = _norm(canonical)
    if key not in _REGISTRY:
        raise UnknownMetricError(f"unknown metric '{canonical}'")
    for name in names.values():
        owner = _ALIAS_INDEX.get(_norm(name))
        if owner is not None and owner != key and _norm(name) not in _REGISTRY:
            raise ValueError(f"'{name}' already names metric '{_REGISTRY[owner].name}', not '{canonical}'")
    spec = replace(_REGISTRY[key], aliases={**_REGISTRY[key].aliases, **names})
    return register(spec, replace=True)


@contextlib.contextmanager
def registered(spec: MetricSpec, *, replace: bool = False) -> Iterator[MetricSpec]:
    """``register(spec)`` for the duration of a ``with`` block; the registry is left as
    it was found (a replaced spec comes back)."""
    saved = dict(_REGISTRY), dict(_ALIAS_INDEX)  # copies keep the declaration order too
    register(spec, replace=replace)
    try:
        yield spec
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved[0])
        _ALIAS_INDEX.clear()
        _ALIAS_INDEX.update(saved[1])


@contextlib.contextmanager
def scratch_registry() -> Iterator[None]:
    """Everything registered inside the block (``register_metric``, ``register_rubric``,
    plugins) is removed at its end, and replaced specs come back: for tests."""
    saved = dict(_REGISTRY), dict(_ALIAS_INDEX)
    try:
        yield
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved[0])
        _ALIAS_INDEX.clear()
        _ALIAS_INDEX.update(saved[1])


def metric_label(spec: MetricSpec) -> str:
    """How users write a metric: ``precision@k`` for a cutoff metric, else its canonical
    name — the one label of every table, in the CLI, the README and the docs."""
    return spec.name.removesuffix("_at_k") + "@k" if spec.takes_k else spec.name


def registry_order() -> list[str]:
    """Canonical names in the order they were registered (built-ins as declared, then
    custom metrics): the one stable metric order of tables and reports."""
    return [s.name for s in _REGISTRY.values()]


def metric_names() -> list[str]:
    """Canonical names of every registered metric, sorted."""
    return sorted(s.name for s in _REGISTRY.values())


def all_metrics() -> list[MetricSpec]:
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get_metric(name_or_alias: str) -> MetricSpec:
    """Resolve a canonical name or a framework's alias (``FaithfulnessMetric``,
    ``ContextPrecisionWithReference``, ``context_precision``) to its spec."""
    key = _norm(name_or_alias)
    if key in _ALIAS_INDEX:
        return _REGISTRY[_ALIAS_INDEX[key]]
    close = difflib.get_close_matches(key, list(_ALIAS_INDEX), n=3, cutoff=0.5)
    # several aliases of one metric may match: suggest each metric once
    names = dict.fromkeys(_REGISTRY[_ALIAS_INDEX[c]].name for c in close)
    hint = f"; did you mean {', '.join(repr(n) for n in names)}?" if names else ""
    raise UnknownMetricError(f"unknown metric '{name_or_alias}'{hint} (see `unified-eval metrics`)")


_NAME_RE = re.compile(r"^(?P<base>[^@\[]+?)(?:@(?P<k>[^\[]+))?(?:\[(?P<params>.*)\])?$")


def parse_metric(text: str) -> MetricRef:
    """``precision@3`` -> (precision_at_k, k=3); ``context_relevancy[variant=sentence]`` ->
    params. ``precision`` and ``precision_at_k`` without a cutoff mean the whole list.

    The ref's ``name`` (what Scores carry) is normalised: a framework alias becomes the
    canonical name (``FaithfulnessMetric`` -> ``faithfulness``), an IR metric its short stem
    (``precision_at_k@3`` -> ``precision@3``)."""
    m = _NAME_RE.match(text.strip())
    if not m:
        raise UnknownMetricError(f"cannot parse metric name '{text}'")
    base = m.group("base").strip()
    spec = _resolve_base(base)
    k = None
    if m.group("k") is not None:
        if not spec.takes_k:
            raise UnknownMetricError(f"metric '{spec.name}' takes no cutoff; write '{base}' without '@{m.group('k')}'")
        try:
            k = int(m.group("k"))
        except ValueError:
            raise UnknownMetricError(f"cutoff in '{text}' must be a whole number, like '{base}@5'") from None
        if k < 1:
            raise UnknownMetricError(f"cutoff in '{text}' must be at least 1")
    params: list[tuple[str, Any]] = []
    if m.group("params"):
        for part in m.group("params").split(","):
            if "=" not in part:
                raise UnknownMetricError(f"metric parameter '{part}' in '{text}' must be key=value")
            key, val = part.split("=", 1)
            params.append((key.strip(), _param_value(key.strip(), val.strip(), text)))
    # one spelling per metric, so that FaithfulnessMetric and faithfulness resume, gate and
    # aggregate as the same thing: canonical name (IR stem for @k metrics), cutoff, params
    base_name = spec.name.removesuffix("_at_k") if spec.takes_k else spec.name
    name = base_name + (f"@{k}" if k is not None else "")
    if params:
        name += "[" + ",".join(f"{key}={val}" for key, val in _raw_params(m.group("params"))) + "]"
    return MetricRef(name=name, spec=spec, k=k, params=tuple(params))


def _param_value(key: str, val: str, text: str) -> Any:
    """A parameter's value; ``threshold`` is a bound, read by the one bound rule (0–10
    unless marked ``@0-1``), so ``faithfulness[threshold=0.7]`` cannot pass silently."""
    if key != "threshold":
        return _coerce(val)
    try:
        return read_bound(val, f"metric '{text}' threshold")
    except BoundScaleError as e:
        raise MetricBoundError(str(e)) from None


def _raw_params(text: str) -> list[tuple[str, str]]:
    """``a=1, b = x`` -> [("a", "1"), ("b", "x")], values as written (for the name)."""
    return [(k.strip(), v.strip()) for k, v in (part.split("=", 1) for part in text.split(","))]


def parse_metrics(text: str | list[str]) -> list[MetricRef]:
    """A comma list (``faithfulness,precision@3``) or a list of names."""
    items = text if isinstance(text, list) else _split_top_level(text)
    return [parse_metric(t) for t in items if t.strip()]


def _split_top_level(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _resolve_base(base: str) -> MetricSpec:
    key = _norm(base)
    # IR users write precision@3 / recall@5 / hit_rate@1: map the short stem to *_at_k
    if key + "_at_k" in _REGISTRY:
        return _REGISTRY[key + "_at_k"]
    return get_metric(base)


def _coerce(val: str) -> Any:
    for conv in (int, float):
        try:
            return conv(val)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(val.lower(), val)


# ---------------------------------------------------------------- custom metrics


def register_metric(
    name: str,
    *,
    required: tuple[str, ...] | list[str] = ("user_input",),
    raw_range: tuple[float, float] = (0.0, 1.0),
    higher_is_better: bool = True,
    threshold: float = 5.0,
    description: str | None = None,
    kind: Kind = "deterministic",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn(sample) -> float | Score`` as a metric.

    The returned raw number is normalised from ``raw_range`` to 0–10 like any built-in.
    It is served by the ``native`` backend and works in the CLI (``--plugins module``),
    reports and aggregation like a built-in metric.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(
            MetricSpec(
                name=name,
                description=description or (fn.__doc__ or name).strip().splitlines()[0],
                required=tuple(required),
                kind=kind,
                threshold=threshold,
                raw_range=raw_range,
                higher_is_better=higher_is_better,
                fn=fn,
                custom=True,
            ),
            replace=True,
        )
        return fn

    return deco


def register_rubric(
    name: str,
    criteria: str,
    *,
    scale: tuple[int, int] = (0, 10),
    required: tuple[str, ...] | list[str] = ("user_input", "response"),
    threshold: float = 5.0,
) -> MetricSpec:
    """Register an LLM rubric metric: the judge reads ``criteria`` and the sample's
    ``required`` fields and answers an integer on ``scale``; value = normalised score."""
    return register(
        MetricSpec(
            name=name,
            description=f"LLM rubric: {criteria}",
            required=tuple(required),
            kind="llm",
            threshold=threshold,
            raw_range=(float(scale[0]), float(scale[1])),
            rubric={"criteria": criteria, "scale": tuple(scale)},
            custom=True,
        ),
        replace=True,
    )


def load_plugins(modules: list[str] | str | None) -> None:
    """Import user modules that register metrics (CLI ``--plugins a,b``). A module path
    ending in ``.py`` is loaded from the file."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    if not modules:
        return
    items = modules.split(",") if isinstance(modules, str) else modules
    for mod in (m.strip() for m in items if m.strip()):
        if mod.endswith(".py"):
            path = Path(mod)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load plugin file {mod}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(mod)


# ---------------------------------------------------------------- built-ins


def _builtin(
    name: str, description: str, required: tuple[str, ...], kind: Kind, threshold: float = 5.0, **aliases: str
) -> None:
    register(
        MetricSpec(
            name=name, description=description, required=required, kind=kind, threshold=threshold, aliases=aliases
        )
    )


Q, R, C, REF = "user_input", "response", "retrieved_contexts", "reference"

_builtin(
    "faithfulness",
    "Share of the response's claims supported by the retrieved contexts: supported / total claims. "
    "Needs no question (summaries, data-to-text).",
    (R, C),
    "llm",
    7.0,
    patronus="answer-faithfulness",
    embedchain="groundedness",
)
_builtin(
    "answer_relevancy",
    "Mean cosine similarity between the question and questions generated back from the "
    "response; 0 when the response is noncommittal.",
    (Q, R),
    "llm",
    5.0,
    embedchain="answer_relevancy",
)
_builtin(
    "context_relevancy",
    "Share of retrieved contexts relevant to the question (each rated 0/1/2 by two judges; "
    "relevant when the mean rating ≥ 1).",
    (Q, C),
    "llm",
    5.0,
    embedchain="context_relevancy",
)
_builtin(
    "context_recall",
    "Share of the reference's claims attributable to the retrieved contexts.",
    (Q, C, REF),
    "llm",
    5.0,
    patronus="context-recall",
)
_builtin(
    "context_precision",
    "Average precision of the per-context 'useful for the reference' verdicts: Σ_k (P@k · v_k) / Σ_k v_k.",
    (Q, C, REF),
    "llm",
    5.0,
)
_builtin(
    "answer_correctness",
    "F1 of the response's claims against the reference's claims: TP / (TP + ½(FP + FN)).",
    (Q, R, REF),
    "llm",
    5.0,
    patronus="answer-correctness",
)
_builtin(
    "context_sufficiency",
    "Whether the contexts alone suffice to answer the question as the reference does (rating 0/1/2).",
    (Q, C, REF),
    "llm",
    5.0,
)
_builtin(
    "context_correctness",
    "Share of the reference's facts that the contexts state consistently (Patronus).",
    (Q, C, REF),
    "llm",
    5.0,
    patronus="context-correctness",
)
_builtin(
    "response_groundedness",
    "Whole-response grounding in the contexts, rated 0/1/2.",
    (R, C),
    "llm",
    5.0,
)
_builtin(
    "hallucination",
    "Pass/fail: passes when faithfulness reaches the threshold; the reason lists the "
    "unsupported claims. Value = share of contexts/claims not contradicted. Needs no question.",
    (R, C),
    "llm",
    5.0,
    dingo="LLMRAGHallucination",
)
_builtin(
    "semantic_similarity",
    "Cosine similarity of the response and reference embeddings, clipped to [0, 1].",
    (R, REF),
    "embedding",
    5.0,
)
_builtin(
    "bertscore",
    "BERTScore F1 between response and reference from contextual token embeddings.",
    (R, REF),
    "embedding",
    5.0,
)
# further metrics the ragas backend serves (its room, unified/adapters/ragas/, names them)
_builtin(
    "factual_correctness",
    "F1 of claim overlap: response claims supported by the reference (precision) and "
    "reference claims supported by the response (recall); F1 = 2PR / (P + R).",
    (R, REF),
    "llm",
    5.0,
)
_builtin(
    "context_utilization",
    "Average precision of per-context 'useful for the response' verdicts: "
    "Σ_k (P@k · v_k) / Σ_k v_k (no reference needed).",
    (Q, R, C),
    "llm",
    5.0,
)
_builtin(
    "context_entity_recall",
    "Share of the reference's entities found in the contexts: |E_ref ∩ E_ctx| / |E_ref|.",
    (C, REF),
    "llm",
    5.0,
)
_builtin(
    "answer_accuracy",
    "Agreement of response and reference, rated 0/2/4 by two judges with swapped roles; mean rating / 4.",
    (Q, R, REF),
    "llm",
    5.0,
)
_builtin(
    "noise_sensitivity",
    "Share of the response's claims that are incorrect (unsupported by the reference) "
    "yet drawn from the contexts; ragas's raw score is lower-is-better, shown inverted: "
    "value = 10 · (1 − raw).",
    (Q, R, C, REF),
    "llm",
    5.0,
)

for _name, _desc, _req, _thr in [
    (
        "precision_at_k",
        "Share of the top-k retrieved ids that are relevant: |rel ∩ top_k| / k. "
        "Passes at ≥ threshold · min(k, |rel|)/k, the best this sample allows.",
        ("retrieved_ids",),
        5.0,
    ),
    (
        "recall_at_k",
        "Share of the relevant ids found in the top k: |rel ∩ top_k| / |rel|. "
        "Passes at ≥ threshold · min(k, |rel|)/|rel|, the best this sample allows.",
        ("retrieved_ids",),
        5.0,
    ),
    ("mrr", "Reciprocal rank of the first relevant id in the top k: 1 / rank (0 if none).", ("retrieved_ids",), 5.0),
    (
        "ndcg_at_k",
        "Normalised discounted cumulative gain, gain 2^rel − 1, discount log2(rank + 1).",
        ("retrieved_ids",),
        5.0,
    ),
    ("hit_rate_at_k", "1 when at least one relevant id is in the top k, else 0.", ("retrieved_ids",), 5.0),
]:
    register(
        MetricSpec(
            name=_name,
            description=_desc,
            required=_req,
            kind="deterministic",
            threshold=_thr,
            takes_k=True,
            aliases={"short": _name.removesuffix("_at_k")} if _name.endswith("_at_k") else {},
        )
    )
