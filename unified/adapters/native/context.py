"""The two narrow interfaces between the native sample plan and what it runs.

A native metric function receives a ``MetricContext`` bound to the one metric it scores;
a step runner receives a ``StepContext`` bound to the one step it computes. Both are
implemented by ``plan.SamplePlan``; metrics and steps never see the plan itself (as
sklearn's scorers see ``cached_call``, not the estimator's internals), so the plan can
change without touching them, and a new metric needs nothing from it beyond these.

Accounting is implicit: every judge or embedding call made through a context is billed
to the metric that owns it (``MetricContext``: that metric; ``StepContext``: the first
requested metric that needs the step, or — for an extraction only a fused step's section
awaits — the metric that owns that fused step; ``table.bill``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from unified.metrics import MetricRef
    from unified.sample import Sample

    from .dual import DualResult
    from .prompts import Ask, Variant


class MetricContext(Protocol):
    """What one native metric may use while scoring one sample."""

    @property
    def sample(self) -> "Sample":
        """The sample being scored."""

    @property
    def ref(self) -> "MetricRef":
        """The metric as requested (name, cutoff, bracket parameters)."""

    @property
    def threshold(self) -> float:
        """The pass bound on 0–10: ``[threshold=…]``, else the backend option, else the
        registry's default for the metric."""

    def option(self, key: str, default: Any = None) -> Any:
        """A bracket parameter of the metric, else the backend option, else ``default``."""

    async def step(self, name: str) -> Any:
        """The result of a step this metric declares in its table entry, computed once per
        sample however many metrics need it. Raises ``StepFailed``."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One embedding call for ``texts`` (one vector each, in order)."""

    async def ask_dual(self, label: str, build: Callable[["Variant"], "Ask"]) -> "DualResult":
        """A judgment private to this metric: ``build(variant)`` asked of judge A and B
        (A only in single-judge mode). Declare it as ``own_dual_calls`` in the table."""

    def judges_info(self) -> dict[str, Any]:
        """``{"mode": "dual"|"single", "A": model, "B": model, ...}`` for ``details``."""

    def shared_steps(self) -> dict[str, Any]:
        """``{step: {"charged_to": metric, "shared_with": [metrics]}}`` for the steps this
        metric shares with other metrics requested on the sample (empty when none)."""


class StepContext(Protocol):
    """What one step runner may use while computing one step for one sample."""

    @property
    def sample(self) -> "Sample":
        """The sample being scored."""

    @property
    def contexts(self) -> list[str]:
        """The sample's retrieved contexts (an empty list when it has none)."""

    def asks(self, section: str) -> bool:
        """True when the canonical plan asks ``section`` (a name from the ``sections`` of
        table entries, e.g. ``"verify.response"``) of this sample: whenever some metric
        reading it could be scored on the sample (``table.asks``), whichever metrics were
        requested — a fused step's prompt never depends on its company."""

    def option(self, key: str) -> Any:
        """One of the step's own options (its ``Step.options``) as the owning metric set it."""

    async def step(self, name: str) -> Any:
        """The result of another step (raises ``StepFailed``)."""

    async def ask_one(self, ask: "Ask") -> Any:
        """One un-dualled judge call (extractions); a judge failure raises ``StepFailed``."""

    async def ask_dual(self, build: Callable[["Variant"], "Ask"]) -> "DualResult":
        """``build(variant)`` asked of judge A and B (A only in single-judge mode)."""
