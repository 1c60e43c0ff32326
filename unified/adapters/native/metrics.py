"""The native metrics: each turns the plan's judged steps into one Score.

Conventions for every LLM metric (dual judge): an item's rating is the mean of judge A
and judge B; ``details`` keeps both judges' item ratings, ``value_judge_a`` /
``value_judge_b`` (the metric on 0–10 under each judge alone) and ``judge_agreement``
(1 − mean |a − b| / scale width, see ``formulas.agreement``). When one judge failed the
value comes from the other, ``degraded`` is set and ``details.degraded_reason`` says why.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from unified.scores import Score

from . import formulas as F
from .context import MetricContext
from .dual import Combined, DualResult, combine
from .prompts import rubric as rubric_prompts
from .retrieval import score_retrieval

BACKEND = "native"


# ---------------------------------------------------------------- helpers


def _x10(v: float | None) -> float | None:
    return None if v is None else round(10.0 * v, 6)


def _per_judge(comb: Combined, formula: Callable[[list[float]], float]) -> dict[str, Any]:
    """value_judge_a / value_judge_b (0–10) and the agreement, for details."""
    out: dict[str, Any] = {
        "value_judge_a": _x10(formula(comb.a)) if comb.a else None,
        "value_judge_b": _x10(formula(comb.b)) if comb.b else None,
        "judge_agreement": None if comb.agreement is None else round(comb.agreement, 6),
    }
    if comb.degraded_reason:
        out["degraded_reason"] = comb.degraded_reason
    return out


def _make(
    ctx: MetricContext,
    raw: float,
    *,
    raw_range: tuple[float, float] = (0.0, 1.0),
    reason: str,
    details: dict[str, Any],
    degraded: bool = False,
) -> Score:
    details = {"judges": ctx.judges_info(), **details}
    shared = ctx.shared_steps()
    if shared:
        details["shared_steps"] = shared
    if degraded and details.get("degraded_reason"):
        reason = f"{reason} [degraded: {details['degraded_reason']}]"
    return Score.from_raw(
        ctx.ref.name,
        BACKEND,
        ctx.sample.id,
        raw,
        raw_range=raw_range,
        threshold=ctx.threshold,
        reason=reason,
        details=details,
        degraded=degraded,
    )


def _support_items(key: str) -> Callable[[Any], list[float]]:
    return lambda r: [1.0 if v == "supported" else 0.0 for v in r[key]]


def _verdicts(res: DualResult, key: str, j: int) -> dict[str, Any]:
    return {
        "verdict_a": res.a[key][j] if res.a is not None else None,
        "verdict_b": res.b[key][j] if res.b is not None else None,
    }


def _listing(texts: Sequence[str], limit: int = 5) -> str:
    shown = "; ".join(f'"{t}"' for t in texts[:limit])
    return shown + (f" (+{len(texts) - limit} more)" if len(texts) > limit else "")


# ---------------------------------------------------------------- claims vs contexts


async def _response_support(ctx: MetricContext) -> tuple[list[str], DualResult | None, Combined | None]:
    claims = await ctx.step("claims:response")
    if not claims:
        return claims, None, None
    res = await ctx.step("verify")
    return claims, res, combine(res, _support_items("response"), 1.0)


async def faithfulness(ctx: MetricContext) -> Score:
    """faithfulness = Σ_c s_c / N on [0, 1] → × 10, where N is the number of claims
    extracted from the response and s_c ∈ {0, ½, 1} the mean of the two judges'
    "supported" verdicts for claim c against all contexts.

    A response with no factual claim (a refusal, "I don't know") has nothing that can be
    unfaithful: value 10 with ``details.no_claims = true`` and a reason that says so.
    """
    claims, res, comb = await _response_support(ctx)
    if not claims:
        return _make(
            ctx,
            1.0,
            reason="the response states no factual claim; nothing in it can be unfaithful (value 10 by definition)",
            details={"no_claims": True, "claims": []},
        )
    assert res is not None and comb is not None
    rows = [{"claim": c, **_verdicts(res, "response", j), "support": comb.mean[j]} for j, c in enumerate(claims)]
    supported = sum(comb.mean)
    unsupported = [c for c, s in zip(claims, comb.mean) if s < 1.0]
    reason = f"{supported:g} of {len(claims)} claims supported by the contexts"
    if unsupported:
        reason += f"; not fully supported: {_listing(unsupported)}"
    return _make(
        ctx,
        F.share(comb.mean),
        reason=reason,
        degraded=bool(comb.degraded_reason),
        details={"no_claims": False, "claims": rows, "supported": supported, **_per_judge(comb, F.share)},
    )


async def hallucination(ctx: MetricContext) -> Score:
    """hallucination (Patronus's framing): pass/fail on faithfulness.

    value = faithfulness value (share of response claims supported, × 10; higher = less
    hallucinated); passed = value ≥ threshold (the metric's, default 5, or
    ``hallucination[threshold=7]``). The reason lists the claims the contexts do not
    support (contradicted or not found by at least one judge).
    """
    claims, res, comb = await _response_support(ctx)
    if not claims:
        return _make(
            ctx,
            1.0,
            reason="passed: the response states no factual claim",
            details={"no_claims": True, "claims": [], "unsupported_claims": []},
        )
    assert res is not None and comb is not None
    rows = [{"claim": c, **_verdicts(res, "response", j), "support": comb.mean[j]} for j, c in enumerate(claims)]
    unsupported = [c for c, s in zip(claims, comb.mean) if s < 1.0]
    contradicted = [r["claim"] for r in rows if "contradicted" in (r["verdict_a"], r["verdict_b"])]
    value = 10 * F.share(comb.mean)
    thr = ctx.threshold
    verdict = "passed" if value >= thr else "failed"
    if unsupported:
        reason = f"{verdict}: {len(unsupported)} of {len(claims)} claims not supported: {_listing(unsupported)}"
    else:
        reason = f"{verdict}: all {len(claims)} claims supported by the contexts"
    return _make(
        ctx,
        F.share(comb.mean),
        reason=reason,
        degraded=bool(comb.degraded_reason),
        details={
            "no_claims": False,
            "claims": rows,
            "unsupported_claims": unsupported,
            "contradicted_claims": contradicted,
            **_per_judge(comb, F.share),
        },
    )


async def _reference_support(ctx: MetricContext) -> tuple[list[str], DualResult, Combined]:
    claims = await ctx.step("claims:reference")
    if not claims:
        raise ValueError(f"sample '{ctx.sample.id}': the reference states no factual claim to look for in the contexts")
    res = await ctx.step("verify")
    return claims, res, combine(res, _support_items("reference"), 1.0)


async def context_recall(ctx: MetricContext) -> Score:
    """context_recall = Σ_c a_c / M on [0, 1] → × 10, over the M claims extracted from
    the reference; a_c = mean of the judges' "attributable to the contexts" verdicts
    (the contexts support claim c). A reference with no claim is an error Score."""
    claims, res, comb = await _reference_support(ctx)
    rows = [{"claim": c, **_verdicts(res, "reference", j), "attributed": comb.mean[j]} for j, c in enumerate(claims)]
    missing = [c for c, s in zip(claims, comb.mean) if s < 1.0]
    reason = f"{sum(comb.mean):g} of {len(claims)} reference claims found in the contexts"
    if missing:
        reason += f"; missing: {_listing(missing)}"
    return _make(
        ctx,
        F.share(comb.mean),
        reason=reason,
        degraded=bool(comb.degraded_reason),
        details={"claims": rows, **_per_judge(comb, F.share)},
    )


async def context_correctness(ctx: MetricContext) -> Score:
    """context_correctness (Patronus) = Σ_c k_c / M on [0, 1] → × 10: the share of the
    reference's M facts that the contexts state consistently (k_c = mean of the judges'
    "supported" verdicts). Facts the contexts contradict (by either judge) are listed in
    the reason and ``details.contradicted``."""
    claims, res, comb = await _reference_support(ctx)
    rows = [{"fact": c, **_verdicts(res, "reference", j), "consistent": comb.mean[j]} for j, c in enumerate(claims)]
    contradicted = [r["fact"] for r in rows if "contradicted" in (r["verdict_a"], r["verdict_b"])]
    reason = f"{sum(comb.mean):g} of {len(claims)} reference facts stated consistently by the contexts"
    reason += f"; contradicted: {_listing(contradicted)}" if contradicted else "; no contradiction"
    return _make(
        ctx,
        F.share(comb.mean),
        reason=reason,
        degraded=bool(comb.degraded_reason),
        details={"facts": rows, "contradicted": contradicted, **_per_judge(comb, F.share)},
    )


# ---------------------------------------------------------------- contexts


async def context_relevancy(ctx: MetricContext) -> Score:
    """context_relevancy = |{k : r̄_k ≥ t}| / K on [0, 1] → × 10, where r̄_k is the mean
    of the two judges' 0/1/2 relevance ratings of context k to the question and t the
    ``relevance_threshold`` (default 1.0)."""
    res = await ctx.step("contexts")
    t = float(ctx.option("relevance_threshold", 1.0))
    comb = combine(res, lambda r: [float(x) for x in r["relevance"]], 2.0)
    rows = [
        {
            "context": k + 1,
            "rating_a": comb.a[k] if comb.a else None,
            "rating_b": comb.b[k] if comb.b else None,
            "rating": comb.mean[k],
            "relevant": comb.mean[k] >= t,
        }
        for k in range(len(comb.mean))
    ]
    n_rel = sum(bool(r["relevant"]) for r in rows)
    return _make(
        ctx,
        F.share_at_least(comb.mean, t),
        degraded=bool(comb.degraded_reason),
        reason=f"{n_rel} of {len(rows)} contexts relevant (mean rating ≥ {t:g} of 2)",
        details={"contexts": rows, "relevance_threshold": t, **_per_judge(comb, lambda xs: F.share_at_least(xs, t))},
    )


async def context_precision(ctx: MetricContext) -> Score:
    """context_precision = Σ_k (P@k · v_k) / Σ_k v_k on [0, 1] → × 10 (average
    precision in retrieval order; 0 when no context is useful), with P@k = Σ_{j≤k} v_j / k
    and v_k = 1 when the mean of the two judges' "useful for arriving at the reference"
    verdicts is ≥ 0.5 (so one judge of two saying useful counts), else 0."""
    res = await ctx.step("contexts")
    comb = combine(res, lambda r: [1.0 if u else 0.0 for u in r["useful"]], 1.0)

    def ap(xs: list[float]) -> float:
        return F.average_precision([x >= 0.5 for x in xs])

    rows = [
        {
            "context": k + 1,
            "useful_a": comb.a[k] if comb.a else None,
            "useful_b": comb.b[k] if comb.b else None,
            "useful": comb.mean[k] >= 0.5,
        }
        for k in range(len(comb.mean))
    ]
    n_use = sum(bool(r["useful"]) for r in rows)
    reason = (
        f"{n_use} of {len(rows)} contexts useful for the reference; average precision by rank"
        if n_use
        else "no context is useful for arriving at the reference"
    )
    return _make(
        ctx,
        ap(comb.mean),
        reason=reason,
        degraded=bool(comb.degraded_reason),
        details={"contexts": rows, **_per_judge(comb, ap)},
    )


async def context_sufficiency(ctx: MetricContext) -> Score:
    """context_sufficiency = r̄ / 2 → × 10, r̄ the mean of the two judges' 0/1/2 ratings
    of "can the question be answered as the reference does from the contexts alone"
    (raw kept on [0, 2])."""
    return await _whole_rating(ctx, "sufficiency")


async def response_groundedness(ctx: MetricContext) -> Score:
    """response_groundedness = r̄ / 2 → × 10, r̄ the mean of the two judges' 0/1/2
    ratings of how much of the whole response the contexts support (raw on [0, 2]).
    The cheap 2-call alternative to faithfulness."""
    return await _whole_rating(ctx, "groundedness")


async def _whole_rating(ctx: MetricContext, step: str) -> Score:
    res = await ctx.step(step)
    comb = combine(res, lambda r: [float(r[0])], 2.0)
    reasons = {"A": res.a[1] if res.a else None, "B": res.b[1] if res.b else None}
    text = reasons["A"] or reasons["B"] or ""
    return _make(
        ctx,
        comb.mean[0],
        raw_range=(0.0, 2.0),
        degraded=bool(comb.degraded_reason),
        reason=f"rating {comb.mean[0]:g} of 2: {text}",
        details={
            "rating_a": comb.a[0] if comb.a else None,
            "rating_b": comb.b[0] if comb.b else None,
            "reasons": reasons,
            **_per_judge(comb, lambda xs: xs[0] / 2.0),
        },
    )


# ---------------------------------------------------------------- response vs reference


async def answer_correctness(ctx: MetricContext) -> Score:
    """answer_correctness = TP / (TP + ½(FP + FN)) on [0, 1] → × 10 (claim-level F1).

    Over the N response claims and M reference claims: TP = Σ t_c (t_c = mean of the
    judges' "the reference states it" for response claim c), FP = N − TP,
    FN = Σ (1 − u_d) (u_d = mean of "the response conveys it" for reference claim d).
    One side without claims needs no judge (F1 = 0); both without claims is an error."""
    resp = await ctx.step("claims:response")
    refc = await ctx.step("claims:reference")
    n, m = len(resp), len(refc)
    if n == 0 or m == 0:
        F.claim_f1(0.0, float(n), float(m))  # raises when both are empty
        side = "response" if n == 0 else "reference"
        return _make(
            ctx,
            0.0,
            reason=f"the {side} states no factual claim: nothing matches (F1 = 0)",
            details={"tp": 0, "fp": n, "fn": m, "response_claims": resp, "reference_claims": refc},
        )
    res = await ctx.step("compare")
    comb = combine(res, lambda r: [float(x) for x in r["tp"]] + [float(x) for x in r["covered"]], 1.0)

    def f1(xs: list[float]) -> float:
        tp = sum(xs[:n])
        return F.claim_f1(tp, n - tp, sum(1.0 - x for x in xs[n:]))

    tp = sum(comb.mean[:n])
    fn = sum(1.0 - x for x in comb.mean[n:])
    rows_r = [{"claim": c, "in_reference": comb.mean[j]} for j, c in enumerate(resp)]
    rows_f = [{"claim": c, "in_response": comb.mean[n + j]} for j, c in enumerate(refc)]
    return _make(
        ctx,
        f1(comb.mean),
        degraded=bool(comb.degraded_reason),
        reason=f"TP {tp:g}, FP {n - tp:g}, FN {fn:g} over {n} response and {m} reference claims",
        details={
            "tp": tp,
            "fp": n - tp,
            "fn": fn,
            "response_claims": rows_r,
            "reference_claims": rows_f,
            **_per_judge(comb, f1),
        },
    )


async def answer_relevancy(ctx: MetricContext) -> Score:
    """answer_relevancy = mean_j v_j → × 10, with v_j = max(0, (1 − nc_j) · mean_g
    cos(e(q), e(g))) the value under judge j alone (clipped below 0 per judge, so the
    result is the mean of ``value_judge_a`` and ``value_judge_b``), for each judge j's N
    generated questions g (``strictness``, default 3) and its noncommittal flag nc_j; e()
    is the embedding client; all generated questions and the user input are embedded in
    one call."""
    res = await ctx.step("questions")
    q = ctx.sample.user_input
    generated = {"A": res.a[0] if res.a else [], "B": res.b[0] if res.b else []}
    texts = [q] + generated["A"] + generated["B"]
    vecs = await ctx.embed(texts)
    qv, rest = vecs[0], vecs[1:]
    sims = [F.cosine(qv, v) for v in rest]
    per: dict[str, float | None] = {}
    pos = 0
    for slot, r in (("A", res.a), ("B", res.b)):
        if r is None:
            per[slot] = None
            continue
        k = len(r[0])
        s = sims[pos : pos + k]
        pos += k
        per[slot] = 0.0 if r[1] else max(0.0, sum(s) / len(s))
    vals = [v for v in per.values() if v is not None]
    raw = max(0.0, sum(vals) / len(vals))
    noncommittal = {slot: (r[1] if r is not None else None) for slot, r in (("A", res.a), ("B", res.b))}
    agree = 1.0 - abs(per["A"] - per["B"]) if per["A"] is not None and per["B"] is not None else None
    reason = (
        "the response is noncommittal"
        if all(v for v in noncommittal.values() if v is not None)
        else f"mean cosine similarity {raw:.3f} between the question and questions generated from the response"
    )
    details = {
        "generated_questions": generated,
        "noncommittal": noncommittal,
        "similarities": [round(x, 6) for x in sims],
        "value_judge_a": _x10(per["A"]),
        "value_judge_b": _x10(per["B"]),
        "judge_agreement": agree,
    }
    if res.degraded_reason:
        details["degraded_reason"] = res.degraded_reason
    return _make(ctx, min(raw, 1.0), reason=reason, details=details, degraded=bool(res.degraded_reason))


async def semantic_similarity(ctx: MetricContext) -> Score:
    """semantic_similarity = cos(e(response), e(reference)) clipped to [0, 1] → × 10
    (one embedding call, no LLM)."""
    r, g = await ctx.embed([ctx.sample.response or "", ctx.sample.reference or ""])
    cos = F.cosine(r, g)
    return Score.from_raw(
        ctx.ref.name,
        BACKEND,
        ctx.sample.id,
        min(1.0, max(0.0, cos)),
        threshold=ctx.threshold,
        reason=f"cosine similarity {cos:.3f} of response and reference embeddings",
        details={"cosine": cos},
    )


# ---------------------------------------------------------------- custom metrics


async def custom_function(ctx: MetricContext) -> Score:
    """``@register_metric`` functions: ``fn(sample)`` returns a raw number, normalised
    from the spec's ``raw_range`` (inverted when lower is better), or a ready Score."""
    ref, spec = ctx.ref, ctx.ref.spec
    assert spec.fn is not None
    try:
        out = spec.fn(ctx.sample)
        if inspect.isawaitable(out):
            out = await out
    except Exception as e:  # the user's code: report, never raise
        return Score.failure(
            ref.name, BACKEND, ctx.sample.id, f"custom metric '{spec.name}' raised {type(e).__name__}: {e}"
        )
    if isinstance(out, Score):
        return out.model_copy(
            update={"metric": ref.name, "backend": out.backend or BACKEND, "sample_id": out.sample_id or ctx.sample.id}
        )
    score = Score.from_raw(
        ref.name,
        BACKEND,
        ctx.sample.id,
        out,
        raw_range=spec.raw_range,
        higher_is_better=spec.higher_is_better,
        threshold=ctx.threshold,
    )
    if score.value is None:  # only then: from_raw would keep an ``error`` on a good score
        score = score.model_copy(update={"error": f"custom metric '{spec.name}' returned {out!r}, not a finite number"})
    return score


async def custom_rubric(ctx: MetricContext) -> Score:
    """``register_rubric`` metrics: one call per judge with the criteria and the sample's
    required fields; each answers an integer on [lo, hi]; raw = mean of the two, value =
    10 · (raw − lo) / (hi − lo)."""
    spec = ctx.ref.spec
    assert spec.rubric is not None
    rubric = spec.rubric
    lo, hi = (int(x) for x in rubric["scale"])
    fields = {f: getattr(ctx.sample, f) for f in spec.required}
    res = await ctx.ask_dual(
        f"rubric {spec.name}", lambda v: rubric_prompts.rubric(v, rubric["criteria"], (lo, hi), fields)
    )
    comb = combine(res, lambda r: [float(r[0])], float(hi - lo))
    reasons = {"A": res.a[1] if res.a else None, "B": res.b[1] if res.b else None}
    return _make(
        ctx,
        comb.mean[0],
        raw_range=(float(lo), float(hi)),
        degraded=bool(comb.degraded_reason),
        reason=f"score {comb.mean[0]:g} on {lo}–{hi}: {reasons['A'] or reasons['B'] or ''}",
        details={
            "score_a": comb.a[0] if comb.a else None,
            "score_b": comb.b[0] if comb.b else None,
            "reasons": reasons,
            **_per_judge(comb, lambda xs: (xs[0] - lo) / (hi - lo)),
        },
    )


# ---------------------------------------------------------------- retrieval


async def retrieval(ctx: MetricContext) -> Score:
    """precision@k, recall@k, mrr, ndcg@k, hit_rate@k from document ids: no judge, no
    model (formulas and the pass rule in ``retrieval.py``)."""
    return score_retrieval(ctx.sample, ctx.ref, backend=BACKEND)
