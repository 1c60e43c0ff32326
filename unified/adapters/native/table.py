"""The one table of native metrics, and of the judge steps they need.

Every native metric is declared once, here (in the spirit of sklearn's
``_MultimetricScorer``): its function (``metrics.py``), the steps it awaits
(``steps.py``), the sections of fused steps it reads, its bracket parameters, and
whether it needs retrieved contexts or an embedder. The plan's prechecks, its sharing of
calls, the planned call counts and the ``--dry-run`` estimates are all derived from this
table. Adding a native metric is a table entry (``register_native_metric``, or the scoped
``native_metric`` in tests), its function and its prompt — nothing else.

Steps (each run at most once per sample, billed to the first requested metric needing it):

====================  =====================================  ===========================
step                  calls                                  used by
====================  =====================================  ===========================
claims:response       1 (not dualled)                        faithfulness, hallucination,
                                                             answer_correctness
claims:reference      1 (not dualled)                        context_recall,
                                                             context_correctness,
                                                             answer_correctness
verify                1 per judge: response claims' support  faithfulness, hallucination,
                      AND reference claims' attribution      context_recall,
                      against all contexts                   context_correctness
contexts              1 per judge: relevance 0/1/2 AND       context_relevancy,
                      usefulness yes/no of every context     context_precision
questions             1 per judge (two prompts)              answer_relevancy
compare               1 per judge                            answer_correctness
sufficiency           1 per judge                            context_sufficiency
groundedness          1 per judge                            response_groundedness
====================  =====================================  ===========================

The canonical plan: a fused step asks every section the *sample* allows (``asks``) —
whichever metrics were requested — so a metric's judge input, and its value, never
depend on the metrics scored beside it. ``verify`` asks the response's claims when
faithfulness (or hallucination) could be scored on the sample, the reference's claims
when context_recall (or context_correctness) could; ``contexts`` asks relevance, and
usefulness when the sample has a reference. An extraction a fused section awaits that no
requested metric needs is billed to the metric that owns the fused step (``bill``).

Five core metrics (faithfulness, answer_relevancy, context_relevancy, context_recall,
context_precision) on a sample with every field: 1 + 1 + 2 + 2 + 2 = 8 chat calls dual,
5 single, for any K, plus one embedding call. A metric alone asks the same prompts as in
that set: faithfulness or context_recall alone 4 dual, 3 single (the other side's
extraction included, started beside its own so that it adds no round trip);
context_relevancy or context_precision alone 2 (1); answer_relevancy 2 (1) and one
embedding call.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Mapping, Sequence

from unified.adapters.base import missing_field_error
from unified.metrics import MetricRef, MetricSpec, get_metric, register, unregister
from unified.scores import Score

from . import metrics as M
from . import retrieval as R
from . import steps as S
from .context import MetricContext, StepContext

if TYPE_CHECKING:
    from unified.sample import Sample


@dataclass(frozen=True)
class Step:
    """One judge step. ``run(ctx)`` computes it; ``per_judge``: one call per judge (one in
    single-judge mode) rather than one call (an extraction); ``options``: option ->
    default that change what the step asks — metrics setting other values get a step of
    their own, named ``name[key=value]``, and accept the option as a bracket parameter;
    ``sections``: a fused step's parts -> the steps each part awaits (``verify``'s
    ``response`` part awaits ``claims:response``), asked as ``asks`` decides."""

    run: Callable[[StepContext], Awaitable[Any]]
    per_judge: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    sections: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def calls(self, single_judge: bool) -> int:
        """Chat calls one run of this step makes."""
        return 2 if self.per_judge and not single_judge else 1


def judged(build: Callable[[StepContext, Any], Any], **options: Any) -> Step:
    """A step that asks each judge one prompt, ``build(ctx, variant) -> Ask``."""

    async def run(ctx: StepContext) -> Any:
        return await ctx.ask_dual(lambda v: build(ctx, v))

    return Step(run, options=options)


@dataclass(frozen=True)
class NativeMetric:
    """One native metric. ``fn(ctx) -> Score``; ``steps``: the steps it awaits, in
    order; ``sections``: the parts of fused steps it reads (``"verify.response"``; a
    fused step asks a part on every sample one of its readers could be scored on, see
    ``asks``);
    ``params``: bracket parameters it reads besides ``threshold`` and its steps'
    options; ``needs_contexts``: at least one retrieved context; ``needs_embedder``: one
    embedding call per sample; ``own_dual_calls``: judgments it asks itself through
    ``ctx.ask_dual``; ``checks_fields``: it reports missing fields itself; ``doc``: the
    formula when it is not ``fn``'s docstring."""

    fn: Callable[[MetricContext], Awaitable[Score]]
    steps: tuple[str, ...] = ()
    sections: frozenset[str] = frozenset()
    params: tuple[str, ...] = ()
    needs_contexts: bool = False
    needs_embedder: bool = False
    own_dual_calls: int = 0
    checks_fields: bool = False
    doc: str | None = None

    @property
    def formula(self) -> str:
        """The metric's formula as its docstring states it."""
        return inspect.cleandoc(self.doc or self.fn.__doc__ or "")

    @property
    def needs_chat(self) -> bool:
        return bool(self.steps) or self.own_dual_calls > 0

    def requirements(self) -> frozenset[str]:
        """What the metric needs from the Judges: a subset of {"chat", "embedder"}."""
        return frozenset({"chat"} if self.needs_chat else set()) | ({"embedder"} if self.needs_embedder else set())

    def accepted_params(self) -> set[str]:
        return {"threshold", *self.params, *(k for st in self.steps for k in STEPS[st].options)}


STEPS: dict[str, Step] = {
    "claims:response": Step(S.response_claims, per_judge=False),
    "claims:reference": Step(S.reference_claims, per_judge=False),
    "verify": Step(S.verify, sections={"response": ("claims:response",), "reference": ("claims:reference",)}),
    "contexts": Step(S.judge_contexts, sections={"relevance": (), "usefulness": ()}),
    "questions": Step(S.generate_questions, options={"strictness": 3}),
    "compare": Step(S.compare_claims),
    "sufficiency": Step(S.rate_sufficiency),
    "groundedness": Step(S.rate_groundedness),
}

_RESPONSE_SUPPORT: dict[str, Any] = dict(
    steps=("claims:response", "verify"), sections=frozenset({"verify.response"}), needs_contexts=True
)
_REFERENCE_SUPPORT: dict[str, Any] = dict(
    steps=("claims:reference", "verify"), sections=frozenset({"verify.reference"}), needs_contexts=True
)


def _retrieval(fn: Callable[..., float]) -> NativeMetric:
    return NativeMetric(M.retrieval, checks_fields=True, doc=fn.__doc__)


NATIVE_METRICS: dict[str, NativeMetric] = {
    "faithfulness": NativeMetric(M.faithfulness, **_RESPONSE_SUPPORT),
    "hallucination": NativeMetric(M.hallucination, **_RESPONSE_SUPPORT),
    "context_recall": NativeMetric(M.context_recall, **_REFERENCE_SUPPORT),
    "context_correctness": NativeMetric(M.context_correctness, **_REFERENCE_SUPPORT),
    "answer_correctness": NativeMetric(M.answer_correctness, steps=("claims:response", "claims:reference", "compare")),
    "context_relevancy": NativeMetric(
        M.context_relevancy,
        steps=("contexts",),
        needs_contexts=True,
        sections=frozenset({"contexts.relevance"}),
        params=("relevance_threshold",),
    ),
    "context_precision": NativeMetric(
        M.context_precision, steps=("contexts",), needs_contexts=True, sections=frozenset({"contexts.usefulness"})
    ),
    "answer_relevancy": NativeMetric(M.answer_relevancy, steps=("questions",), needs_embedder=True),
    "context_sufficiency": NativeMetric(M.context_sufficiency, steps=("sufficiency",), needs_contexts=True),
    "response_groundedness": NativeMetric(M.response_groundedness, steps=("groundedness",), needs_contexts=True),
    "semantic_similarity": NativeMetric(M.semantic_similarity, needs_embedder=True),
    **{name: _retrieval(fn) for name, fn in R.RETRIEVAL_METRICS.items()},
}

# user-registered metrics (unified.metrics.register_metric / register_rubric) run here too
CUSTOM_FUNCTION = NativeMetric(M.custom_function, checks_fields=True)
CUSTOM_RUBRIC = NativeMetric(M.custom_rubric, own_dual_calls=1)


def entry_for(spec: MetricSpec) -> NativeMetric | None:
    """The table entry that scores ``spec`` natively, or None when native has none."""
    if spec.custom and spec.fn is not None:
        return CUSTOM_FUNCTION
    if spec.custom and spec.rubric is not None:
        return CUSTOM_RUBRIC
    return NATIVE_METRICS.get(spec.name)


def metric_names() -> frozenset[str]:
    """Canonical names of the table's metrics (custom metrics come on top, see
    ``NativeBackend.implements``). The registry reads this without importing ragas."""
    return frozenset(NATIVE_METRICS)


def step_key(name: str, option: Callable[[str, Any], Any]) -> str:
    """The identity of step ``name`` for a metric whose options ``option(key, default)``
    reads: ``questions``, or ``questions[strictness=5]`` for a non-default value."""
    changed = [(k, v) for k, d in STEPS[name].options.items() if (v := type(d)(option(k, d))) != d]
    return name + ("[" + ",".join(f"{k}={v}" for k, v in changed) + "]" if changed else "")


def sample_error(entry: NativeMetric, ref: MetricRef, sample: Sample) -> str | None:
    """Why ``sample`` lacks what ``ref`` reads — a missing field, no retrieved context —
    or None: the part of the plan's precheck that the sample alone decides (a metric
    that ``checks_fields`` reports its fields itself)."""
    if entry.checks_fields:
        return None
    missing = missing_field_error(sample, ref)
    if missing:
        return missing
    if entry.needs_contexts and not sample.retrieved_contexts:
        return f"sample '{sample.id}': no retrieved contexts; {ref.name} needs at least one"
    return None


def asks(section: str, sample: Sample) -> bool:
    """The canonical plan: a fused step asks ``section`` (``"verify.reference"``) of
    ``sample`` whenever some metric of the table that reads the section could be scored
    on it (``sample_error``). The sample decides, never the metrics requested with it, so
    a metric's prompt — and its value — is the same whatever company it keeps."""
    return any(
        section in entry.sections and sample_error(entry, MetricRef(name, get_metric(name)), sample) is None
        for name, entry in NATIVE_METRICS.items()
    )


def bill(needs: Sequence[Sequence[str] | None], sample: Sample) -> dict[str, tuple[int, str | None]]:
    """Who pays for each step of one sample: ``{step key: (metric index, asked_for)}``,
    from ``needs[i]``, the step keys metric ``i`` awaits (None: it does not run). A step
    goes to the first metric that awaits it (``asked_for`` None). A step that only a fused
    step's section awaits — an extraction the canonical plan asks (``asks``) though no
    requested metric reads it — goes to the metric that owns that fused step, and
    ``asked_for`` names the fused step. Every step has one payer: a backend's rows add up
    to what it spends."""
    owners: dict[str, tuple[int, str | None]] = {}
    for i, keys in enumerate(needs):
        for key in keys or ():
            owners.setdefault(key, (i, None))
    queue = list(owners)
    for key in queue:  # the list grows as it is read: an awaited step may await others
        name = key.split("[")[0]
        for section, awaited in STEPS[name].sections.items():
            for dep in awaited if asks(f"{name}.{section}", sample) else ():
                if dep not in owners:
                    owners[dep] = (owners[key][0], key)
                    queue.append(dep)
    return owners


def estimate_calls(
    refs: Sequence[MetricRef], sample: Sample, *, single_judge: bool = False
) -> list[tuple[int, int] | None]:
    """(chat calls, embedding calls) ``sample`` costs per metric requested together, as
    the plan runs and bills them (``bill``): each step once, the extractions a fused
    step's sections await on this sample included; judged steps 1 call per judge,
    extractions 1; ``needs_embedder`` 1 embedding call. (0, 0) for a metric the sample
    lacks a field for (``sample_error``: it fails before any call); None for a metric
    native does not implement. An upper bound: a step with nothing to ask (no claims)
    makes no call."""
    entries = [entry_for(ref.spec) for ref in refs]
    runs = [e is not None and sample_error(e, ref, sample) is None for ref, e in zip(refs, entries)]
    needs = [
        [step_key(st, ref.param) for st in e.steps] if ok and e is not None else None
        for ref, e, ok in zip(refs, entries, runs)
    ]
    chat = [0] * len(refs)
    for key, (i, _) in bill(needs, sample).items():
        chat[i] += STEPS[key.split("[")[0]].calls(single_judge)
    out: list[tuple[int, int] | None] = []
    for entry, ok, c in zip(entries, runs, chat):
        if entry is None or not ok:
            out.append(None if entry is None else (0, 0))
            continue
        out.append((c + entry.own_dual_calls * (1 if single_judge else 2), 1 if entry.needs_embedder else 0))
    return out


# ---------------------------------------------------------------- registration

_ADDED: dict[str, tuple[tuple[str, ...], str | None]] = {}  # metric -> (its new steps, its spec)


def register_native_metric(
    name: str, entry: NativeMetric, *, spec: MetricSpec | None = None, steps: Mapping[str, Step] | None = None
) -> NativeMetric:
    """Add a native metric: its table entry, the new steps it brings, and — for a metric
    the registry does not know yet — its ``MetricSpec`` (name, description with the
    formula, required fields, kind, threshold)."""
    if name in NATIVE_METRICS:
        raise ValueError(f"native metric '{name}' is already in the table")
    clash = sorted(set(steps or {}) & set(STEPS))
    if clash:
        raise ValueError(f"native step '{clash[0]}' already exists")
    unknown = [st for st in entry.steps if st not in STEPS and st not in (steps or {})]
    if unknown:
        raise ValueError(f"native metric '{name}' needs unknown step '{unknown[0]}'")
    if spec is not None and spec.name != name:
        raise ValueError(f"spec '{spec.name}' given for native metric '{name}'")
    if spec is not None:
        register(spec)
    else:
        get_metric(name)  # a metric the registry cannot resolve could never be requested
    STEPS.update(steps or {})
    NATIVE_METRICS[name] = entry
    _ADDED[name] = (tuple(steps or {}), spec.name if spec is not None else None)
    return entry


def unregister_native_metric(name: str) -> None:
    """Remove a metric added by ``register_native_metric``, with its steps and spec."""
    if name not in _ADDED:
        raise KeyError(f"native metric '{name}' was not added by register_native_metric")
    own_steps, spec_name = _ADDED.pop(name)
    del NATIVE_METRICS[name]
    for st in own_steps:
        STEPS.pop(st, None)
    if spec_name is not None:
        unregister(spec_name)


@contextlib.contextmanager
def native_metric(
    name: str, entry: NativeMetric, *, spec: MetricSpec | None = None, steps: Mapping[str, Step] | None = None
) -> Iterator[NativeMetric]:
    """``register_native_metric`` for the duration of a ``with`` block (tests)."""
    register_native_metric(name, entry, spec=spec, steps=steps)
    try:
        yield entry
    finally:
        unregister_native_metric(name)
