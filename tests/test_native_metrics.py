"""Native metrics: every formula on hand-made judge answers (scripted in-process judges).

Judge A is ``chat`` and judge B ``chat2`` so each can be scripted separately; the
expected values are worked out by hand in the comments from the scripted verdicts.
"""

from __future__ import annotations

import pytest

from unified.adapters.native import NativeBackend
from unified.adapters.native.testing import ScriptedEmbedder, ScriptedJudge, fill_keys
from unified.judge.base import JudgeHTTPError, Judges
from unified.metrics import parse_metric, parse_metrics
from unified.sample import Sample

Q = "What is the capital of France?"
RESP = "Paris is the capital of France and has 3 million people."
REF = "Paris is France's capital. The Seine runs through it."
CTX = ["Paris is the capital of France.", "The Seine flows through Paris.", "Bananas are yellow."]
RESP_CLAIMS = ["Paris is the capital of France.", "Paris has 3 million people."]
REF_CLAIMS = ["Paris is France's capital.", "The Seine runs through Paris."]


def _claims(messages, response_claims=RESP_CLAIMS):
    text = messages[-1]["content"]
    if f"Text: {RESP}" in text:
        return {"claims": response_claims}
    if f"Text: {REF}" in text:
        return {"claims": REF_CLAIMS}
    return {"claims": []}


# judge A: verdicts per original item
A_VERIFY = {
    "response1": "supported",
    "response2": "not_found",
    "reference1": "supported",
    "reference2": "supported",
}
A_CTX = {
    "context_1_relevance": 2,
    "context_1_useful": "no",
    "context_2_relevance": 1,
    "context_2_useful": "yes",
    "context_3_relevance": 0,
    "context_3_useful": "yes",
}
A_CMP = {"response1": "yes", "response2": "no", "reference1": "yes", "reference2": "no"}
# judge B sees contexts reversed: passage_1 = context 3, passage_3 = context 1
B_VERIFY = {
    "answer1": "supported",
    "answer2": "contradicted",
    "gold1": "supported",
    "gold2": "not_found",
}
B_CTX = {
    "passage_1_relevance": 0,
    "passage_1_useful": "yes",
    "passage_2_relevance": 0,
    "passage_2_useful": "no",
    "passage_3_relevance": 2,
    "passage_3_useful": "no",
}
B_CMP = {"answer1": "yes", "answer2": "no", "gold1": "yes", "gold2": "yes"}


def script_for(table, questions, rating, response_claims=RESP_CLAIMS):
    def script(schema, messages):
        name = schema.__name__
        if name == "ClaimList":
            return _claims(messages, response_claims)
        if name == "GeneratedQuestions":
            return {"questions": questions, "noncommittal": False}
        if name == "WholeRating":
            return {"reason": "scripted", "rating": rating}
        for prefix, answers in table.items():
            if name.startswith(prefix):
                return fill_keys(schema, lambda k: answers[k])
        raise AssertionError(f"unscripted schema {name}")

    return script


def judges(single=False, fail_b=None, embed_table=None):
    a = ScriptedJudge(
        script_for(
            {"Verification": A_VERIFY, "ContextJudgement": A_CTX, "Comparison": A_CMP},
            ["What is the capital of France?"],
            2,
        ),
        "model-a",
    )
    if fail_b is not None:
        b = ScriptedJudge(lambda s, m: fail_b, "model-b")
    else:
        b = ScriptedJudge(
            script_for(
                {"Verification": B_VERIFY, "ContextJudgement": B_CTX, "Comparison": B_CMP},
                ["Which city is France's capital?", "x"],
                1,
            ),
            "model-b",
        )
    emb = ScriptedEmbedder(
        embed_table
        or {
            Q: [1, 0],
            "What is the capital of France?": [1, 0],
            "Which city is France's capital?": [0, 1],
            "x": [1, 0],
            RESP: [1, 0],
            REF: [0.6, 0.8],
        }
    )
    return Judges(chat=a, chat2=b, embedder=emb, single_judge=single), a, b, emb


def sample(**kw):
    base = dict(user_input=Q, response=RESP, retrieved_contexts=CTX, reference=REF, id="s1")
    base.update(kw)
    return Sample(**base)


ALL = (
    "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision,"
    "answer_correctness,context_sufficiency,context_correctness,response_groundedness,"
    "hallucination,semantic_similarity"
)


async def run(j, names, s=None):
    return {sc.metric: sc for sc in await NativeBackend(j).score(s or sample(), parse_metrics(names))}


async def test_every_formula_on_scripted_dual_answers():
    j, a, b, emb = judges()
    out = await run(j, ALL)
    assert all(s.ok for s in out.values()), {k: s.error for k, s in out.items()}
    # faithfulness: A [1,0], B [1,0] -> supported 1 of 2 -> 5
    f = out["faithfulness"]
    assert f.value == pytest.approx(5.0) and f.details["judge_agreement"] == 1.0
    assert [c["verdict_b"] for c in f.details["claims"]] == ["supported", "contradicted"]
    # context_recall: A [1,1], B [1,0] -> (1 + .5)/2 = .75
    r = out["context_recall"]
    assert r.value == pytest.approx(7.5)
    assert (r.details["value_judge_a"], r.details["value_judge_b"]) == (10.0, 5.0)
    assert r.details["judge_agreement"] == pytest.approx(0.5)
    # context_correctness: same reference verdicts -> 7.5, nothing contradicted
    assert out["context_correctness"].value == pytest.approx(7.5)
    assert out["context_correctness"].details["contradicted"] == []
    # context_relevancy: ratings A (2,1,0), B mapped back (2,0,0) -> means (2,.5,0) -> 1 of 3
    cr = out["context_relevancy"]
    assert cr.value == pytest.approx(10 / 3)
    assert [c["rating_b"] for c in cr.details["contexts"]] == [2.0, 0.0, 0.0]
    assert cr.details["value_judge_a"] == pytest.approx(20 / 3)
    assert cr.details["judge_agreement"] == pytest.approx(1 - 1 / 6)
    # context_precision: useful A (0,1,1), B (0,0,1) -> v = (0,1,1) -> (1/2 + 2/3)/2
    cp = out["context_precision"]
    assert cp.value == pytest.approx(10 * (0.5 + 2 / 3) / 2)
    assert cp.details["value_judge_b"] == pytest.approx(10 / 3)
    # answer_correctness: tp (1,0), covered A (1,0) B (1,1) -> TP 1, FP 1, FN .5 -> 1/1.75
    ac = out["answer_correctness"]
    assert ac.value == pytest.approx(10 / 1.75)
    assert ac.details["value_judge_a"] == pytest.approx(5.0)
    # answer_relevancy: A cos 1; B mean(0, 1) = .5 -> .75
    ar = out["answer_relevancy"]
    assert ar.value == pytest.approx(7.5) and ar.details["judge_agreement"] == pytest.approx(0.5)
    # whole ratings: A 2, B 1 -> 1.5 of 2 -> 7.5
    for m in ("context_sufficiency", "response_groundedness"):
        assert out[m].value == pytest.approx(7.5) and out[m].raw == 1.5
        assert (out[m].details["rating_a"], out[m].details["rating_b"]) == (2.0, 1.0)
    # hallucination = faithfulness value; passed against threshold 5; lists the unsupported claim
    h = out["hallucination"]
    assert h.value == pytest.approx(5.0) and h.passed is True
    assert "Paris has 3 million people." in h.reason
    # semantic similarity: cos((1,0), (.6,.8)) = .6
    assert out["semantic_similarity"].value == pytest.approx(6.0)
    for s in out.values():
        assert s.value is not None and s.value == s.value  # never NaN
        assert not s.degraded


async def test_zero_claims_is_defined_not_nan():
    j, a, b, _ = judges()
    a.script = script_for({}, ["q"], 2, response_claims=[])
    out = await run(j, "faithfulness,hallucination")
    assert out["faithfulness"].value == 10.0 and out["faithfulness"].details["no_claims"] is True
    assert "no factual claim" in out["faithfulness"].reason
    assert out["hallucination"].passed is True
    # no verification call; the reference's extraction (the canonical verification asks it
    # on this sample) started beside the response's, before its claims were known
    assert [c[0] for c in a.calls] == ["ClaimList", "ClaimList"] and b.calls == []


async def test_zero_contexts_gives_clear_errors_and_no_calls():
    j, a, b, _ = judges()
    names = "faithfulness,context_relevancy,context_recall,context_precision,context_sufficiency"
    out = await run(j, names, sample(retrieved_contexts=[]))
    for s in out.values():
        assert s.value is None and "no retrieved contexts" in s.error
    assert a.calls == [] and b.calls == []


async def test_all_irrelevant_contexts_score_zero():
    j, a, b, _ = judges()
    for judge in (a, b):
        judge.script = lambda s, m: fill_keys(s, lambda k: 0 if k.endswith("relevance") else "no")
    out = await run(j, "context_relevancy,context_precision")
    assert out["context_relevancy"].value == 0.0
    assert out["context_precision"].value == 0.0
    assert "no context is useful" in out["context_precision"].reason


async def test_one_judge_failed_is_degraded_with_value_from_the_other():
    j, a, b, _ = judges(fail_b=JudgeHTTPError("HTTP 500 after 3 retries", 500))
    out = await run(j, "faithfulness,context_recall,context_relevancy")
    r = out["context_recall"]
    assert r.ok and r.degraded and r.value == pytest.approx(10.0)  # judge A alone: 2 of 2
    assert "judge B failed" in r.details["degraded_reason"] and "HTTP 500" in r.reason
    assert r.details["value_judge_b"] is None and r.details["judge_agreement"] is None
    assert out["context_relevancy"].value == pytest.approx(20 / 3)


async def test_answer_missing_an_item_fails_that_judge_only():
    j, a, b, _ = judges()
    b.script = lambda s, m: (
        {k: v for k, v in list(fill_keys(s, lambda k: 0 if "relevance" in k else "no").items())[1:]}
        if s.__name__.startswith("ContextJudgement")
        else AssertionError()
    )
    out = await run(j, "context_relevancy")
    s = out["context_relevancy"]
    assert s.ok and s.degraded and "judge B failed" in s.details["degraded_reason"]


async def test_both_judges_failed_is_an_error_with_the_judge_text():
    j, a, b, _ = judges(fail_b=JudgeHTTPError("HTTP 503 from B", 503))
    a.script = lambda s, m: JudgeHTTPError("HTTP 429 from A", 429)
    out = await run(j, "context_relevancy,response_groundedness")
    for s in out.values():
        assert s.value is None and "HTTP 429 from A" in s.error and "HTTP 503 from B" in s.error


async def test_single_judge_uses_judge_a_only():
    j, a, b, emb = judges(single=True)
    out = await run(j, "context_recall,context_relevancy,answer_relevancy")
    assert b.calls == []
    assert out["context_recall"].value == pytest.approx(10.0)
    assert out["context_relevancy"].value == pytest.approx(20 / 3)
    assert out["answer_relevancy"].value == pytest.approx(10.0)
    assert out["context_recall"].details["judges"]["mode"] == "single"


async def test_threshold_parameters():
    j, *_ = judges()
    out = await run(j, "context_relevancy[relevance_threshold=0.5],hallucination[threshold=6]")
    assert out["context_relevancy[relevance_threshold=0.5]"].value == pytest.approx(20 / 3)
    h = out["hallucination[threshold=6]"]
    assert h.value == pytest.approx(5.0) and h.passed is False and h.reason.startswith("failed")


async def test_no_judge_configured_is_a_clear_error():
    out = await NativeBackend(Judges()).score(sample(), [parse_metric("faithfulness")])
    assert out[0].value is None and "needs an LLM judge" in out[0].error


async def test_noncommittal_response_scores_zero_relevancy():
    j, a, b, _ = judges()
    for judge in (a, b):
        judge.script = lambda s, m: {"questions": ["What is the capital of France?"], "noncommittal": True}
    out = await run(j, "answer_relevancy")
    ar = out["answer_relevancy"]
    assert ar.value == 0.0 and ar.reason == "the response is noncommittal"
    assert ar.details["noncommittal"] == {"A": True, "B": True}


async def test_contradicted_reference_facts_are_listed_by_context_correctness():
    j, a, b, _ = judges()
    b.script = script_for({"Verification": {**B_VERIFY, "gold2": "contradicted"}}, ["x"], 1)
    out = await run(j, "context_correctness")
    cc = out["context_correctness"]
    assert cc.value == pytest.approx(7.5)  # (1 + 1) / 2 and (1 + 0) / 2 over two facts
    assert cc.details["contradicted"] == ["The Seine runs through Paris."]
    assert 'contradicted: "The Seine runs through Paris."' in cc.reason


async def test_claim_f1_edge_cases():
    j, a, b, _ = judges()
    a.script = script_for({}, ["q"], 2, response_claims=[])
    out = await run(j, "answer_correctness,context_recall")
    ac = out["answer_correctness"]
    assert ac.value == 0.0 and (ac.details["tp"], ac.details["fn"]) == (0, 2)
    assert not any(name.startswith("Comparison") for name, _ in a.calls + b.calls)
    # both texts without claims: undefined, reported as an error (not 0, not NaN)
    a.script = lambda s, m: {"claims": []}
    out = await run(j, "answer_correctness,context_recall")
    assert out["answer_correctness"].value is None
    assert "neither the response nor the reference" in out["answer_correctness"].error
    assert out["context_recall"].value is None and "reference states no factual claim" in out["context_recall"].error
