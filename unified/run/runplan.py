"""The run plan: which (metric, backend) pairs of a run can run, and why the others cannot.

This is the one place that decides it. A pair is skipped when the backend does not
implement the metric, or when it needs a judge (``fingerprint.judge_requirements``) that
is not configured. Every skipped pair keeps its reason; warnings are one line per reason,
and an unimplemented pair is news only when no other chosen backend serves that metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from unified.metrics import MetricRef
from unified.run.executor import Pair, task_bound
from unified.run.fingerprint import config_hash, judge_requirements, task_config

NO_CHAT = (
    "no LLM judge configured (pass --base-url/--model, or judge= in Python, or set "
    "UNIFIED_JUDGE_BASE_URL and UNIFIED_JUDGE_MODEL)"
)
NO_EMBEDDER = "no embedder configured (pass --embedding local or an embeddings URL)"
NOT_IMPLEMENTED = "not implemented"


@dataclass
class Skipped:
    metric: str
    backend: str
    reason: str


@dataclass
class RunPlan:
    pairs: list[Pair] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # pair key -> task config

    @property
    def hashes(self) -> dict[str, str]:
        return {p.key: p.config_hash for p in self.pairs}

    @property
    def bits(self) -> dict[str, int]:
        return {p.key: p.bit for p in self.pairs}

    def by_backend(self) -> dict[str, list[Pair]]:
        out: dict[str, list[Pair]] = {}
        for p in self.pairs:
            out.setdefault(p.backend.name, []).append(p)
        return out

    def warnings(self) -> list[str]:
        """One line per reason; unimplemented pairs only for metrics nobody serves."""
        return skip_warnings(self.skipped, {p.metric.name for p in self.pairs})

    def unserved(self, refs: Sequence[MetricRef]) -> list[dict[str, str]]:
        """The requested metrics no chosen backend can run, each with why: a metric asked
        for and never scored is a failure of the run, not a footnote."""
        served = {p.metric.name for p in self.pairs}
        out = []
        for r in refs:
            if r.name not in served:
                reasons = dict.fromkeys(f"{s.reason} ({s.backend})" for s in self.skipped if s.metric == r.name)
                out.append({"metric": r.name, "reason": "; ".join(reasons) or "no backend implements it"})
        return out

    def nothing_to_run(self) -> str:
        counts: dict[str, int] = {}
        for s in self.skipped:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        return (
            "nothing to run: no requested metric is available on the chosen backends ("
            + "; ".join(f"{k}: {v} pair(s)" for k, v in counts.items())
            + ")"
        )


def skip_warnings(skipped: Sequence[Skipped], served: set[str]) -> list[str]:
    """One line per reason; an unimplemented pair is news only when no chosen backend
    serves its metric (``served``: metric names some pair runs)."""
    by_reason: dict[str, list[str]] = {}
    for s in skipped:
        if s.reason == NOT_IMPLEMENTED and s.metric in served:
            continue
        by_reason.setdefault(s.reason, []).append(f"{s.metric} ({s.backend})")
    return [f"skipping {', '.join(items)}: {reason}" for reason, items in by_reason.items()]


def why_not(ref: MetricRef, backend: Any, judges: Any) -> str | None:
    """Why (``backend``, ``ref``) cannot run with ``judges``, or None."""
    if not backend.implements(ref):
        return NOT_IMPLEMENTED
    param_error = getattr(backend, "param_error", None)
    bad = param_error(ref) if callable(param_error) else None
    if bad:
        return bad
    needs = judge_requirements(backend, ref)
    if "chat" in needs and getattr(judges, "chat", None) is None:
        return NO_CHAT
    if "embedder" in needs and getattr(judges, "embedder", None) is None:
        return NO_EMBEDDER
    return None


def plan_run(refs: Sequence[MetricRef], backends: Sequence[Any], judges: Any, repeats: int = 1) -> RunPlan:
    """The pairs of ``refs`` × ``backends`` that can run (a metric or backend named twice
    counts once), each with its configuration fingerprint. ``repeats`` > 1: the pairs that
    ask the chat judge are scored that many times (``unified.run.repeats``) and the count
    is part of their configuration; the others are deterministic and scored once."""
    plan = RunPlan()
    seen: set[tuple[str, str]] = set()
    for b in backends:
        for r in refs:
            if (r.name, b.name) in seen:
                continue
            seen.add((r.name, b.name))
            reason = why_not(r, b, judges)
            if reason:
                plan.skipped.append(Skipped(r.name, b.name, reason))
                continue
            cfg = task_config(b, r, judges)
            times = repeats if repeats > 1 and "chat" in judge_requirements(b, r) else 1
            if times > 1:
                cfg["repeats"] = times
            needs_judge = bool(judge_requirements(b, r))
            computes = getattr(b, "computes", None)  # a formula the backend scores without an await
            pair = Pair(
                metric=r,
                backend=b,
                bit=len(plan.pairs),
                config_hash=config_hash(cfg),
                needs_judge=needs_judge,
                repeats=times,
                computed=not needs_judge and times == 1 and callable(computes) and bool(computes(r)),
                bound=task_bound(b, r),
            )
            plan.configs[pair.key] = cfg
            plan.pairs.append(pair)
    return plan
