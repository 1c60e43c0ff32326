"""The per-sample call plan: call counts whatever K, fused vs. alone prompts, prompts
that contain the texts they judge, cost attribution, custom and retrieval metrics."""

from __future__ import annotations

import pytest

from unified.adapters.native import NativeBackend
from unified.adapters.native.testing import ScriptedEmbedder, ScriptedJudge, fill_keys
from unified.judge.base import Judges
from unified.metrics import parse_metrics, register_metric, register_rubric
from unified.sample import Sample
from unified.scores import Score

CORE = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision"


def generic(schema, messages):
    """Schema-valid answers whatever the request (plumbing only)."""
    name = schema.__name__
    if name == "ClaimList":
        return {"claims": ["claim one.", "claim two.", "claim three."]}
    if name == "GeneratedQuestions":
        return {"questions": ["q1?", "q2?", "q3?"], "noncommittal": False}
    if name == "WholeRating":
        return {"reason": "ok", "rating": 1}
    if name.startswith("RubricScore"):
        return {"reason": "fine", "score": 3}
    return fill_keys(
        schema,
        lambda k: (
            1
            if k.endswith("relevance")
            else ("yes" if k.endswith("useful") or name.startswith("Comparison") else "supported")
        ),
    )


def make(k: int) -> Sample:
    return Sample(
        user_input="Which river flows through Paris?",
        response="The Seine flows through Paris.",
        reference="The Seine.",
        retrieved_contexts=[f"context number {i} about rivers" for i in range(k)],
        retrieved_ids=[f"d{i}" for i in range(k)],
        relevant_ids=["d1"],
        id=f"k{k}",
    )


def bundle(single=False):
    j = ScriptedJudge(generic, "m")
    e = ScriptedEmbedder()
    return Judges(chat=j, embedder=e, single_judge=single), j, e


@pytest.mark.parametrize("k", [3, 10])
@pytest.mark.parametrize("single,limit", [(False, 8), (True, 5)])
async def test_core_metrics_call_budget_is_independent_of_k(k, single, limit):
    judges, j, e = bundle(single)
    scores = await NativeBackend(judges).score(make(k), parse_metrics(CORE))
    assert all(s.ok for s in scores), [s.error for s in scores]
    assert len(j.calls) == (5 if single else 8) <= limit  # the plan: 1 + 1 + 2 + 2 + 2 (dual)
    assert len(e.calls) == 1
    # every call is charged to exactly one metric: the Scores' costs add up to the calls
    assert sum(s.cost.calls for s in scores) == len(j.calls)
    assert sum(s.cost.embedding_calls for s in scores) == 1


async def test_fused_calls_are_charged_to_the_first_metric_and_noted_as_shared():
    judges, j, _ = bundle()
    out = {
        s.metric: s
        for s in await NativeBackend(judges).score(
            make(3), parse_metrics("faithfulness,context_recall,context_relevancy,context_precision")
        )
    }
    assert out["faithfulness"].cost.calls == 1 + 2  # response extraction + verification A/B
    assert out["context_recall"].cost.calls == 1  # reference extraction only
    assert out["context_recall"].details["shared_steps"]["verify"] == {
        "charged_to": "faithfulness",
        "shared_with": ["faithfulness"],
    }
    assert out["context_precision"].cost.calls == 0
    assert out["context_precision"].details["shared_steps"]["contexts"]["charged_to"] == "context_relevancy"
    # the fused context call asks both relevance and usefulness
    ctx_calls = [c for c in j.calls if c[0].startswith("ContextJudgement")]
    assert len(ctx_calls) == 2
    a_text = "\n".join(m["content"] for m in ctx_calls[0][1])
    assert "relevance" in a_text and "REFERENCE ANSWER" in a_text


def _texts(calls, prefix):
    return ["\n".join(m["content"] for m in msgs) for name, msgs in calls if name.startswith(prefix)]


async def test_a_fused_step_asks_what_the_sample_allows_not_what_was_requested():
    judges, j, _ = bundle()
    with_ref, without_ref = make(3), make(3).model_copy(update={"reference": None})
    await NativeBackend(judges).score(with_ref, parse_metrics("context_relevancy"))
    alone = _texts(j.calls, "ContextJudgementA")
    j.calls.clear()
    await NativeBackend(judges).score(with_ref, parse_metrics("context_relevancy,context_precision"))
    assert alone == _texts(j.calls, "ContextJudgementA") and "REFERENCE ANSWER: The Seine." in alone[0]
    j.calls.clear()
    await NativeBackend(judges).score(without_ref, parse_metrics("context_relevancy"))
    assert [n for n, _ in j.calls] == ["ContextJudgementA", "ContextJudgementB"]
    assert "REFERENCE" not in _texts(j.calls, "ContextJudgementA")[0]  # usefulness needs a reference
    j.calls.clear()
    await NativeBackend(judges).score(with_ref, parse_metrics("context_recall"))
    assert [n for n, _ in j.calls].count("ClaimList") == 2  # the response's claims too
    assert "STATEMENTS FROM THE RESPONSE" in _texts(j.calls, "VerificationA")[0]
    j.calls.clear()
    await NativeBackend(judges).score(without_ref, parse_metrics("faithfulness"))
    assert [n for n, _ in j.calls].count("ClaimList") == 1
    assert "STATEMENTS FROM THE REFERENCE" not in _texts(j.calls, "VerificationA")[0]


async def test_extraction_prompt_is_identical_whichever_metric_asks():
    judges, j, _ = bundle()
    await NativeBackend(judges).score(make(3), parse_metrics("faithfulness"))
    first = [m for n, m in j.calls if n == "ClaimList"]
    j.calls.clear()
    await NativeBackend(judges).score(make(3), parse_metrics("answer_correctness"))
    second = [m for n, m in j.calls if n == "ClaimList"]
    assert first[0] in second  # same request -> a judge-cache hit across score() calls


async def test_prompts_contain_the_texts_they_judge_and_b_reverses_the_rated_contexts():
    judges, j, _ = bundle()
    s = make(4)
    await NativeBackend(judges).score(
        s,
        parse_metrics(
            "faithfulness,context_recall,context_relevancy,context_precision,answer_relevancy,"
            "answer_correctness,context_sufficiency,response_groundedness"
        ),
    )
    by = {}
    for name, msgs in j.calls:
        by.setdefault(name, []).append("\n".join(m["content"] for m in msgs))
    # B reverses the contexts where they are the items rated; where they are the evidence
    # (verification), both judges show them in the given order: the shared prompt prefix
    for name in ("VerificationA", "VerificationB", "ContextJudgementA", "ContextJudgementB"):
        text = by[name][0]
        positions = [text.index(c) for c in s.retrieved_contexts]
        assert positions == sorted(positions, reverse=name == "ContextJudgementB")
    for name in ("VerificationA", "VerificationB"):
        assert "claim one." in by[name][0]
    assert all(s.user_input in t for t in by["ContextJudgementA"] + by["ContextJudgementB"])
    assert all(s.reference in t for t in by["ContextJudgementA"])
    assert any(s.response in t for t in by["ClaimList"]) and any(s.reference in t for t in by["ClaimList"])
    assert all(s.response in t for t in by["GeneratedQuestions"])
    assert s.user_input not in by["GeneratedQuestions"][0]  # the question is never shown
    ratings = by["WholeRating"]
    assert any(s.reference in t and all(c in t for c in s.retrieved_contexts) for t in ratings)
    assert any(s.response in t and all(c in t for c in s.retrieved_contexts) for t in ratings)
    assert len(set(by["GeneratedQuestions"])) == 2  # A and B are different phrasings


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


async def test_every_prompt_over_the_contexts_opens_with_the_same_system_and_contexts():
    """The local judge's prompt (KV) cache reuses the longest prefix a prompt shares with
    one it has read: every call of a sample that shows its contexts in the given order
    (verification A and B, groundedness and sufficiency A and B, context grading A) must
    share system + contexts, and only then differ (task wording, claims, question)."""
    judges, j, _ = bundle()
    s = make(4)
    metrics = "faithfulness,context_recall,context_relevancy,response_groundedness,context_sufficiency"
    await NativeBackend(judges).score(s, parse_metrics(metrics))
    over_contexts = [(n, msgs) for n, msgs in j.calls if n != "ClaimList" and n != "ContextJudgementB"]
    assert {n for n, _ in over_contexts} == {"VerificationA", "VerificationB", "ContextJudgementA", "WholeRating"}
    assert len(over_contexts) == 2 + 1 + 4
    flat = ["\n".join(f"<{m['role']}>{m['content']}" for m in msgs) for _, msgs in over_contexts]
    opening = flat[0][: flat[0].index("END OF CONTEXTS") + len("END OF CONTEXTS")]
    assert all(c in opening for c in s.retrieved_contexts)
    for text in flat:
        assert text.startswith(opening)  # system + every context, identical in each call
        rest = text[len(opening) :]
        varying = [x for x in ("claim one.", s.user_input, s.response, s.reference) if x in text]
        assert varying and all(x in rest for x in varying)  # what varies comes after it


@pytest.fixture
def scratch_registry():
    """Custom metrics registered by a test leave the shared registry as they found it."""
    from unified.metrics import scratch_registry

    with scratch_registry():
        yield


async def test_custom_function_and_rubric_metrics(scratch_registry):
    @register_metric("test_native_length", raw_range=(0, 100), higher_is_better=False)
    def length(sample):
        return len(sample.response)

    @register_metric("test_native_score_obj")
    def ready(sample):
        return Score(metric="x", backend="", sample_id="", value=4.0)

    @register_metric("test_native_broken")
    def broken(sample):
        raise RuntimeError("boom")

    register_rubric("test_native_polite", "The response is polite.", scale=(1, 5))
    judges, j, _ = bundle()
    backend = NativeBackend(judges)
    refs = parse_metrics("test_native_length,test_native_score_obj,test_native_broken,test_native_polite")
    assert all(backend.implements(r) for r in refs) and backend.implements("test_native_polite")
    out = {s.metric: s for s in await backend.score(make(3), refs)}
    n = len(make(3).response)
    assert out["test_native_length"].value == pytest.approx(10 * (100 - n) / 100)
    # regression: a finite result used to carry the "not a finite number" error (ok False)
    assert out["test_native_length"].ok and out["test_native_length"].error is None
    assert out["test_native_score_obj"].value == 4.0 and out["test_native_score_obj"].backend == "native"
    assert out["test_native_broken"].value is None and "boom" in out["test_native_broken"].error
    rub = out["test_native_polite"]
    assert rub.value == pytest.approx(5.0) and rub.details["score_a"] == 3.0 and rub.cost.calls == 2
    assert any("The response is polite." in m[0]["content"] for n_, m in j.calls if n_.startswith("Rubric"))


async def test_retrieval_metrics_are_delegated_without_judge_calls():
    judges, j, _ = bundle()
    out = await NativeBackend(judges).score(make(3), parse_metrics("precision@2,mrr,hit_rate@1"))
    assert [s.value for s in out] == pytest.approx([5.0, 5.0, 0.0])
    assert j.calls == []


async def test_answer_relevancy_with_two_strictness_values_asks_each_its_own_count():
    """Regression: both refs shared one question-generation step built with the FIRST
    ref's strictness, so ``answer_relevancy[strictness=5]`` silently used 3 questions."""

    def script(schema, messages):
        n = 5 if "write 5 " in messages[0]["content"] else 3  # A and B both say "write N ..."
        return {"questions": [f"question {i}?" for i in range(n)], "noncommittal": False}

    j, e = ScriptedJudge(script, "m"), ScriptedEmbedder()
    s = Sample(user_input="Which river?", response="The Seine.", id="s")
    scores = await NativeBackend(Judges(chat=j, embedder=e)).score(
        s, parse_metrics("answer_relevancy,answer_relevancy[strictness=5]")
    )
    assert all(sc.ok for sc in scores), [sc.error for sc in scores]
    assert [len(sc.details["generated_questions"]["A"]) for sc in scores] == [3, 5]
    assert [len(sc.details["generated_questions"]["B"]) for sc in scores] == [3, 5]
    assert len(j.calls) == 4 and sum(sc.cost.calls for sc in scores) == 4
    assert not any(sc.details.get("shared_steps") for sc in scores)


async def test_custom_function_returning_nan_is_an_error_not_a_value(scratch_registry):
    @register_metric("test_native_nan")
    def nan(sample):
        return float("nan")

    (s,) = await NativeBackend(bundle()[0]).score(make(1), parse_metrics("test_native_nan"))
    assert s.value is None and not s.ok and "not a finite number" in s.error


async def test_unknown_bracket_parameter_is_an_error_not_a_silent_default():
    judges, j, _ = bundle()
    typo, good, retrieval = await NativeBackend(judges).score(
        make(3),
        parse_metrics(
            "context_relevancy[relevance_treshold=1.5],"
            "context_relevancy[relevance_threshold=1.5],precision@3[threshold=3]"
        ),
    )
    assert typo.value is None and "unknown parameter 'relevance_treshold'" in typo.error
    assert "relevance_threshold" in typo.error  # the message lists what is accepted
    assert good.ok
    # the parameter is read: the bound is 3 relative to the best achievable P@3 (1 relevant: 1/3)
    assert retrieval.ok and retrieval.details["threshold_base"] == 3.0 and retrieval.passed
    assert retrieval.threshold == 3.0 * retrieval.details["best_achievable"]


@pytest.mark.parametrize("single", [False, True])
async def test_planned_chat_calls_matches_what_a_sample_really_costs(single):
    from unified.adapters.native.table import estimate_calls

    refs = parse_metrics(CORE + ",answer_correctness,hallucination")
    judges, j, _ = bundle(single)
    await NativeBackend(judges).score(make(4), refs)
    assert sum(c[0] for c in estimate_calls(refs, make(4), single_judge=single) if c) == len(j.calls)
