"""The protocol every backend implements, and the checks they share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from unified.adapters.registry import own_bound_of
from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Score

if TYPE_CHECKING:
    from unified.judge.base import Judges

#: what a metric of each kind needs from the Judges when the backend says nothing else
_KIND_NEEDS: dict[str, frozenset[str]] = {
    "llm": frozenset({"chat"}),
    "embedding": frozenset({"embedder"}),
    "deterministic": frozenset(),
}


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
    #: False for a backend that brings its own models and never calls the Judges
    uses_judges: ClassVar[bool] = True

    def __init__(self, judges: "Judges | None" = None, **options: Any):
        if judges is None:
            from unified.judge.base import Judges

            judges = Judges()
        self.judges = judges
        self.options = options

    def bound(self, ref: MetricRef) -> float:
        """The pass bound on 0–10 of (this backend, ``ref``): the one rule of
        ``unified.adapters.registry`` — the user's ``[threshold=…]``, else this backend's
        own default for the metric (``default_bound``), else the metric's. The run
        resolves it once per task; every Score for ``ref`` carries it as ``threshold``."""
        return ref.bound(self.default_bound(ref))

    def default_bound(self, ref: MetricRef) -> float | None:
        """This backend's own default pass bound for ``ref`` (its room's
        ``BackendFacts.bound``), or None for the metric's."""
        return own_bound_of(self.name, ref)

    def implements(self, metric: MetricRef | str) -> bool:
        name = metric.canonical if isinstance(metric, MetricRef) else metric
        return name in self.metrics

    def requirements(self, ref: MetricRef) -> frozenset[str]:
        """What this backend needs from the Judges to score ``ref``: a subset of
        {"chat", "embedder"}. Default: nothing when the backend does not use the Judges,
        else by the metric's kind (llm → chat, embedding → embedder). Backends whose
        metrics need more (RAGAS AnswerRelevancy: chat and embeddings) say so."""
        if not self.uses_judges:
            return frozenset()
        return _KIND_NEEDS.get(ref.spec.kind, frozenset())

    def needs_fields(self, ref: MetricRef) -> tuple[str, ...]:
        """Sample fields this backend cannot score ``ref`` without, beyond the metric's own
        (``ref.spec.required``): a framework whose metric reads a field the metric itself
        does not need (ragas's Faithfulness puts the question into its statement prompt;
        faithfulness needs none). Default: none. The runner checks them per sample: a
        sample without one fails that (backend, metric) task alone, with the reason."""
        return ()

    def param_error(self, ref: MetricRef) -> str | None:
        """Why this backend cannot take ``ref``'s bracket parameters (one line), or None.
        The run plan asks before any task runs, so a parameter a backend does not read is
        one skipped pair with its reason, not one error per sample. Default: no check (a
        backend that reads parameters late, e.g. from a framework's constructor)."""
        return None

    def fingerprint_extra(self) -> dict[str, Any]:
        """Backend settings that decide its scores besides the metric and the judges
        (framework version, scoring options), for the run's config fingerprint. Never a
        secret, never a path."""
        return {}

    def fingerprint_for(self, ref: MetricRef) -> dict[str, Any]:
        """Settings that decide ``ref``'s scores alone (the embedding backend's fitted
        model of one metric), added to ``fingerprint_extra`` in that metric's fingerprint
        only: a change to them is no change for the backend's other metrics."""
        return {}

    @abstractmethod
    async def score(self, sample: Sample, metrics: list[MetricRef]) -> list[Score]: ...

    async def score_with(self, sample: Sample, metrics: list[MetricRef], companions: list[MetricRef]) -> list[Score]:
        """``score(sample, metrics)`` when ``companions`` — the sample's other metrics on
        this backend — were scored by an earlier run (a retry or a resume scores what is
        left). A backend whose calls depend on which metrics are requested together
        would ask them as it did with the companions, so a value never depends on which
        siblings failed the first time; they get no Score. Default: ``score``, right for
        a backend whose calls do not depend on their company — every built-in one (the
        native backend's fused calls ask what the sample allows, not what was
        requested)."""
        return await self.score(sample, metrics)

    async def aclose(self) -> None:
        return None


def missing_requirements(backend: Backend, ref: MetricRef, judges: "Judges") -> frozenset[str]:
    """The part of ``backend.requirements(ref)`` that ``judges`` lacks ("chat" when no
    chat judge is configured, "embedder" when no embedder is)."""
    have = {"chat"} if judges.chat is not None else set()
    if judges.embedder is not None:
        have.add("embedder")
    return backend.requirements(ref) - have


def missing_field_error(
    sample: Sample, metric: MetricRef, backend: Backend | None = None, names: Mapping[str, str] | None = None
) -> str | None:
    """The one-line error for the first field ``metric`` needs that ``sample`` lacks (an
    empty ``retrieved_contexts`` for a metric that reads contexts: it has none to judge) —
    then, given ``backend``, the first field that backend also needs for it
    (``Backend.needs_fields``) — or None. The runner checks this before calling a
    backend; backends check it too, so that calling one directly fails the same way.
    ``names``: how the input spells the fields (``SampleReader.field_names``): the error
    names the field as the user's file does (``'expected_output' (reference)``)."""
    missing = next((f for f in metric.spec.required if not sample.has(f)), None)
    if missing is not None:
        return f"sample '{sample.id}': field {_spelled(missing, names)} is missing or empty (needed by {metric.name})"
    judges_contexts = metric.spec.kind != "deterministic" and "retrieved_contexts" in metric.spec.required
    if sample.retrieved_contexts == [] and judges_contexts:  # a deterministic metric may count nothing
        # [] is a valid retrieval (nothing matched: precision@k on its ids is 0), but a metric
        # that judges contexts has nothing to judge. RAGAS refuses it ("retrieved_contexts
        # cannot be empty"), our native plan did; DeepEval scores it (ContextualPrecision is 0
        # with no verdicts, faithfulness whatever the judge says of claims against no
        # truths) and the embedding heuristics gave 0: results that are none
        return f"sample '{sample.id}': no retrieved contexts; {metric.name} needs at least one"
    extra = backend.needs_fields(metric) if backend is not None else ()
    missing = next((f for f in extra if not sample.has(f)), None)
    if missing is None:
        return None
    return (
        f"sample '{sample.id}': field {_spelled(missing, names)} is missing or empty; {metric.name} does not need it, "
        f"but the {backend.name} backend's does (score it on another backend)"  # type: ignore[union-attr]
    )


def _spelled(field: str, names: Mapping[str, str] | None) -> str:
    """``'expected_output' (reference)`` when the input calls ``field`` otherwise, else ``'field'``."""
    name = (names or {}).get(field, field)
    return f"'{field}'" if name == field else f"'{name}' ({field})"


def unknown_param_error(metric: MetricRef, accepted: set[str] | frozenset[str]) -> str | None:
    """The one-line error for a bracket parameter (``faithfulness[t=0.8]``) the backend
    does not read, or None: a typo must not silently run with the default."""
    unknown = [k for k, _ in metric.params if k not in accepted]
    if not unknown:
        return None
    return (
        f"metric '{metric.name}': unknown parameter '{unknown[0]}' (accepted: {', '.join(sorted(accepted)) or 'none'})"
    )
