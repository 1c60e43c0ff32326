"""The judge steps of the native metrics: what each step asks, given a ``StepContext``.

A step runs at most once per sample however many requested metrics need it; which
metrics need which step is declared in ``table.py``. A fused step asks every section the
sample allows (``ctx.asks``, the canonical plan), whichever of its metrics were
requested: a metric alone is asked what it is asked beside the others, so its value
does not depend on them. A step that has nothing to ask returns None without a call;
the metrics that use it decide their value without a judge in that case.
"""

from __future__ import annotations

from .context import StepContext
from .dual import DualResult, StepFailed
from .prompts import claims as claims_prompts
from .prompts import contexts as contexts_prompts
from .prompts import grounding as grounding_prompts
from .prompts import relevancy as relevancy_prompts


async def response_claims(ctx: StepContext) -> list[str]:
    """Claims extracted from the response (one call, not dualled: extraction is not a
    judgment, and sharing one list keeps both judges verifying the same claims)."""
    return await ctx.ask_one(claims_prompts.extraction(ctx.sample.user_input, ctx.sample.response or ""))


async def reference_claims(ctx: StepContext) -> list[str]:
    """Claims extracted from the reference (one call, not dualled)."""
    return await ctx.ask_one(claims_prompts.extraction(ctx.sample.user_input, ctx.sample.reference or ""))


async def _claims_for_verify(ctx: StepContext, section: str, step: str) -> list[str]:
    """The claims of ``step`` when the canonical plan asks ``section`` of the sample,
    else none."""
    if not ctx.asks(section):
        return []
    # A failed extraction fails the fused call too. Asked without that section it would
    # be another prompt than the one a run without the fault asks, and the metric it
    # still served would keep a value that depends on the fault; failed, every metric
    # it serves is retried, and asked the clean run's call.
    try:
        return await ctx.step(step)
    except StepFailed as e:
        raise StepFailed(
            f"verify not asked: {e} (the verification asks the response's and the reference's claims in one "
            "call; the metrics it serves are retried together)"
        ) from None


async def verify(ctx: StepContext) -> DualResult | None:
    """Per judge, one call: support of the response's claims AND attribution of the
    reference's claims, against all contexts — each side whenever the sample allows it
    (``ctx.asks``), whichever metrics were requested, so faithfulness alone is asked
    what it is asked beside context_recall (and pays the reference's extraction). None
    (no call) when there is no claim."""
    resp = await _claims_for_verify(ctx, "verify.response", "claims:response")
    refc = await _claims_for_verify(ctx, "verify.reference", "claims:reference")
    if not resp and not refc:
        return None
    return await ctx.ask_dual(lambda v: claims_prompts.verification(v, ctx.contexts, resp, refc))


async def judge_contexts(ctx: StepContext) -> DualResult:
    """Per judge, one call: relevance 0/1/2 AND usefulness yes/no of every context —
    each whenever the sample allows it (``ctx.asks``): relevance on every sample this step
    runs on, usefulness when it has a reference too, whether context_relevancy,
    context_precision or both were requested."""
    s = ctx.sample
    use = ctx.asks("contexts.usefulness")
    rel = ctx.asks("contexts.relevance")
    return await ctx.ask_dual(
        lambda v: contexts_prompts.context_judgement(
            v, s.user_input or "", ctx.contexts, s.reference, relevance=rel, usefulness=use
        )
    )


async def compare_claims(ctx: StepContext) -> DualResult | None:
    """Per judge, one call: which response claims the reference states and which
    reference claims the response conveys. None when a side has no claim (F1 is then
    decided without a judge, see ``metrics.answer_correctness``)."""
    resp = await ctx.step("claims:response")
    refc = await ctx.step("claims:reference")
    if not resp or not refc:
        return None
    return await ctx.ask_dual(lambda v: claims_prompts.comparison(v, ctx.sample.user_input or "", resp, refc))


async def generate_questions(ctx: StepContext) -> DualResult:
    """Per judge, one call: ``strictness`` questions the response answers, and whether it
    is noncommittal. The question itself is never shown."""
    n = ctx.option("strictness")
    return await ctx.ask_dual(lambda v: relevancy_prompts.question_generation(v, ctx.sample.response or "", n))


async def rate_sufficiency(ctx: StepContext) -> DualResult:
    """Per judge, one call: 0/1/2 — do the contexts alone suffice for the reference answer?"""
    s = ctx.sample
    return await ctx.ask_dual(
        lambda v: grounding_prompts.sufficiency(v, s.user_input or "", ctx.contexts, s.reference or "")
    )


async def rate_groundedness(ctx: StepContext) -> DualResult:
    """Per judge, one call: 0/1/2 — how much of the whole response the contexts support."""
    return await ctx.ask_dual(lambda v: grounding_prompts.groundedness(v, ctx.sample.response or "", ctx.contexts))


__all__ = [
    "response_claims",
    "reference_claims",
    "verify",
    "judge_contexts",
    "compare_claims",
    "generate_questions",
    "rate_sufficiency",
    "rate_groundedness",
]
