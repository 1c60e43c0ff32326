"""Deterministic retrieval metrics: hand-computed values, conventions, Score wrapping."""

import math

import pytest

from unified.adapters.native.retrieval import (
    hit_rate_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    relevant_set,
    score_retrieval,
)
from unified.metrics import parse_metric
from unified.sample import Sample

RETRIEVED = ["d1", "d2", "d3", "d4", "d5"]
RELEVANT = {"d2", "d4", "d9"}  # d9 was never retrieved


def test_precision_by_hand():
    # top 3 = d1 d2 d3 -> one relevant (d2): 1/3
    assert precision_at_k(RETRIEVED, RELEVANT, 3) == pytest.approx(1 / 3)
    # top 5 -> d2, d4: 2/5
    assert precision_at_k(RETRIEVED, RELEVANT, 5) == pytest.approx(2 / 5)
    # k=None is the whole list (5 ids) -> same as k=5
    assert precision_at_k(RETRIEVED, RELEVANT) == pytest.approx(2 / 5)


def test_recall_by_hand():
    # |rel| = 3; top 3 finds d2 -> 1/3; top 5 finds d2, d4 -> 2/3 (d9 is never found)
    assert recall_at_k(RETRIEVED, RELEVANT, 3) == pytest.approx(1 / 3)
    assert recall_at_k(RETRIEVED, RELEVANT, 5) == pytest.approx(2 / 3)


def test_mrr_and_hit_rate_by_hand():
    # first relevant id (d2) at rank 2 -> 1/2
    assert mrr(RETRIEVED, RELEVANT) == pytest.approx(0.5)
    # within the top 1 there is no relevant id -> 0
    assert mrr(RETRIEVED, RELEVANT, 1) == 0.0
    assert hit_rate_at_k(RETRIEVED, RELEVANT, 1) == 0.0
    assert hit_rate_at_k(RETRIEVED, RELEVANT, 2) == 1.0


def test_ndcg_grades_3_2_0_1_by_hand():
    grades = {"a": 3, "b": 2, "c": 0, "d": 1}
    # DCG  = (2^3-1)/log2(2) + (2^2-1)/log2(3) + (2^0-1)/log2(4) + (2^1-1)/log2(5)
    #      = 7/1 + 3/1.5849625 + 0 + 1/2.3219281 = 7 + 1.8927893 + 0.4306766 = 9.3234658
    # IDCG = ideal order 3,2,1,0: 7/1 + 3/1.5849625 + 1/2 + 0 = 9.3927893
    # nDCG = 9.3234658 / 9.3927893 = 0.9926195
    assert ndcg_at_k(["a", "b", "c", "d"], grades) == pytest.approx(0.9926195, abs=1e-6)
    # reversed: d c b a -> DCG = 1/1 + 0/log2(3) + 3/log2(4) + 7/log2(5)
    #                          = 1 + 0 + 1.5 + 3.0147359 = 5.5147359;  5.5147359 / 9.3927893 = 0.5871244
    assert ndcg_at_k(["d", "c", "b", "a"], grades) == pytest.approx(0.5871244, abs=1e-6)
    # @2: DCG = 7 + 1.8927893 = IDCG@2 -> 1
    assert ndcg_at_k(["a", "b", "c", "d"], grades, 2) == pytest.approx(1.0)


def test_ndcg_ideal_uses_all_judged_documents():
    # only b (grade 2) is retrieved; k = len(retrieved) = 1
    # DCG@1 = (2^2-1)/log2(2) = 3 ; IDCG@1 uses the best judged doc a (grade 3): 7 -> 3/7
    assert ndcg_at_k(["b"], {"a": 3, "b": 2}) == pytest.approx(3 / 7)


def test_ndcg_binary_matches_formula():
    # binary grades: retrieved x r1 y r2, relevant {r1, r2}
    # DCG = 1/log2(3) + 1/log2(5); IDCG = 1/log2(2) + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["x", "r1", "y", "r2"], {"r1": 1, "r2": 1}) == pytest.approx(expected)


@pytest.mark.parametrize("fn", [precision_at_k, recall_at_k, mrr, hit_rate_at_k])
def test_empty_relevant_is_undefined(fn):
    with pytest.raises(ValueError, match="no relevant ids"):
        fn(["d1"], set(), 3)


def test_ndcg_without_positive_grade_is_undefined():
    with pytest.raises(ValueError, match="undefined"):
        ndcg_at_k(["a"], {"a": 0, "b": 0})


def test_k_larger_than_list_counts_missing_slots_as_non_relevant():
    # 2 ids returned, k=5: one hit / 5 slots
    assert precision_at_k(["d1", "d2"], {"d1"}, 5) == pytest.approx(1 / 5)
    assert recall_at_k(["d1", "d2"], {"d1"}, 5) == 1.0


def test_empty_retrieved_scores_zero():
    for fn in (precision_at_k, recall_at_k, mrr, hit_rate_at_k):
        assert fn([], {"d1"}) == 0.0
        assert fn([], {"d1"}, 3) == 0.0
    assert ndcg_at_k([], {"d1": 2}) == 0.0


def test_duplicates_count_once():
    # a a b, relevant {a}: the repeat holds slot 2 but is no new hit -> P@3 = 1/3
    assert precision_at_k(["a", "a", "b"], {"a"}, 3) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "a", "b"], {"a"}) == 1.0
    # nDCG: DCG = 1 (a at rank 1) + 0 (repeat) = IDCG -> 1, not above 1
    assert ndcg_at_k(["a", "a"], {"a": 1}) == pytest.approx(1.0)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_cutoff(k):
    with pytest.raises(ValueError, match="cutoff"):
        precision_at_k(["a"], {"a"}, k)


# ---------------------------------------------------------------- score_retrieval


def _sample(**kw):
    return Sample(user_input="q?", **kw)


def test_score_retrieval_precision():
    s = _sample(retrieved_ids=["d1", "d2", "d3"], relevant_ids=["d2"])
    sc = score_retrieval(s, parse_metric("precision@3"))
    assert sc.ok and sc.metric == "precision@3" and sc.backend == "native"
    assert sc.raw == pytest.approx(1 / 3) and sc.value == pytest.approx(10 / 3)
    assert sc.reason == "1 of top 3 relevant"
    # one relevant id: the best P@3 is 1/3, and the pass bound is relative to it (issue 12)
    assert sc.details == {
        "k": 3,
        "hits": ["d2"],
        "ranks": [2],
        "relevant": 1,
        "best_achievable": pytest.approx(1 / 3),
        "threshold_base": 5.0,
    }
    assert sc.threshold == pytest.approx(5 / 3) and sc.passed  # it used to be 5: never passable
    assert sc.sample_id == s.id


def test_score_retrieval_ndcg_prefers_graded_relevance():
    s = _sample(
        retrieved_ids=["a", "b", "c", "d"],
        relevant_ids=["a", "b", "c", "d"],
        graded_relevance={"a": 3, "b": 2, "c": 0, "d": 1},
    )
    sc = score_retrieval(s, parse_metric("ndcg@4"))
    assert sc.raw == pytest.approx(0.9926195, abs=1e-6)  # the hand-computed value above


def test_relevant_set_from_graded_relevance():
    s = _sample(retrieved_ids=["a", "b"], graded_relevance={"a": 0, "b": 2})
    assert relevant_set(s) == {"b"}
    sc = score_retrieval(s, parse_metric("mrr"))
    assert sc.raw == pytest.approx(0.5) and sc.reason == "first relevant id at rank 2"


def test_score_retrieval_failures_name_the_field():
    m = parse_metric("recall@5")
    missing_ret = score_retrieval(_sample(relevant_ids=["a"]), m)
    assert missing_ret.value is None and "retrieved_ids" in missing_ret.error
    missing_rel = score_retrieval(_sample(retrieved_ids=["a"]), m)
    assert missing_rel.value is None and "relevant_ids" in missing_rel.error
    empty_rel = score_retrieval(_sample(retrieved_ids=["a"], relevant_ids=[]), m)
    assert empty_rel.value is None
    assert "no relevant ids" in empty_rel.error and "undefined" in empty_rel.error
    not_retrieval = score_retrieval(_sample(retrieved_ids=["a"], relevant_ids=["a"]), parse_metric("faithfulness"))
    assert not_retrieval.value is None and "not a retrieval metric" in not_retrieval.error


def test_empty_retrieval_is_a_zero_not_an_error():
    sc = score_retrieval(_sample(retrieved_ids=[], relevant_ids=["a"]), parse_metric("hit_rate@3"))
    assert sc.ok and sc.value == 0.0 and sc.reason == "no relevant id in the top 3"


def _reference(name, retrieved, relevant, k):
    """Each binary metric by its textbook definition, written out without the module's
    helpers: ranks of first occurrences of relevant ids within the top k."""
    kk = len(retrieved) if k is None else k
    firsts = [r for r, d in enumerate(retrieved[:kk], 1) if d in relevant and d not in retrieved[: r - 1]]
    return {
        "precision_at_k": len(firsts) / kk if kk else 0.0,
        "recall_at_k": len(firsts) / len(relevant),
        "mrr": 1 / firsts[0] if firsts else 0.0,
        "hit_rate_at_k": float(bool(firsts)),
    }[name], firsts


@pytest.mark.parametrize("seed", [0, 1])
def test_score_retrieval_matches_the_definitions_on_random_rankings(seed):
    # the Score walks the ranking once for its value and its details: random rankings with
    # repeats, cutoffs beyond the list and none, against the definitions and the functions
    import random

    rnd = random.Random(seed)
    metrics = {  # canonical name: (spelling, the public function)
        "precision_at_k": ("precision", precision_at_k),
        "recall_at_k": ("recall", recall_at_k),
        "mrr": ("mrr", mrr),
        "hit_rate_at_k": ("hit_rate", hit_rate_at_k),
    }
    for _ in range(600):
        pool = [f"d{i}" for i in range(rnd.randint(1, 12))]
        retrieved = [rnd.choice(pool) for _ in range(rnd.randint(0, 10))]
        relevant = set(rnd.sample(pool, rnd.randint(1, len(pool))))
        k = rnd.choice([None, 1, 3, 5, 20])
        s = _sample(retrieved_ids=retrieved, relevant_ids=sorted(relevant))
        for canonical, (short, fn) in metrics.items():
            sc = score_retrieval(s, parse_metric(short if k is None else f"{short}@{k}"))
            want, firsts = _reference(canonical, retrieved, relevant, k)
            assert sc.ok and sc.raw == want == fn(retrieved, relevant, k), (short, k, retrieved, relevant)
            assert sc.details["ranks"] == firsts and sc.details["hits"] == [retrieved[r - 1] for r in firsts]


@pytest.mark.parametrize("seed", [0, 1])
def test_ndcg_matches_its_definition_on_random_graded_rankings(seed):
    # repeats score once, at their first rank; negative and zero grades add nothing
    import random

    rnd = random.Random(seed)
    for _ in range(600):
        pool = [f"d{i}" for i in range(rnd.randint(1, 12))]
        retrieved = [rnd.choice(pool) for _ in range(rnd.randint(0, 12))]
        grades = {d: float(rnd.choice([-1, 0, 1, 2, 3])) for d in rnd.sample(pool, rnd.randint(1, len(pool)))}
        if not any(g > 0 for g in grades.values()):
            grades[pool[0]] = 1.0
        k = rnd.choice([None, 1, 3, 5, 20])
        kk = len(retrieved) if k is None else k
        firsts = [(r, d) for r, d in enumerate(retrieved[:kk], 1) if d not in retrieved[: r - 1]]
        dcg = sum((2 ** max(0.0, grades.get(d, 0.0)) - 1) / math.log2(r + 1) for r, d in firsts if grades.get(d, 0) > 0)
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:kk]
        idcg = sum((2**g - 1) / math.log2(i + 1) for i, g in enumerate(ideal, 1))
        want = dcg / idcg if kk else 0.0
        s = _sample(retrieved_ids=retrieved, graded_relevance=grades)
        sc = score_retrieval(s, parse_metric("ndcg" if k is None else f"ndcg@{k}"))
        assert ndcg_at_k(retrieved, grades, k) == want, (retrieved, grades, k)
        assert sc.ok and sc.raw == want
