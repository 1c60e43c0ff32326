"""The offline ``embedding`` backend on hand-checked cases, with the real MiniLM model.

Each expectation is one a reader can verify by eye (an answer copied from the context is
supported, an unrelated one is not). No figure here is evidence of agreement with people:
that is ``benchmarks/meta_eval.py``'s job.
"""

import asyncio
from typing import Sequence

import pytest

from unified.adapters import get_backend
from unified.judge.base import Embedder, JudgeConnectionError, Judges
from unified.metrics import parse_metrics
from unified.sample import Sample

pytestmark = pytest.mark.local

PARIS = "Paris is the capital and largest city of France. The Eiffel Tower was completed in 1889 for the World's Fair."
PARIS_SENTENCES = [
    "Paris is the capital and largest city of France.",
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
]
BANANA = "Bananas are a yellow tropical fruit. They are rich in potassium and grow in clusters."
Q = "What is the capital of France?"


def score(sample: Sample, names: str, judges: Judges | None = None):
    backend = get_backend("embedding", judges)
    return asyncio.run(backend.score(sample, parse_metrics(names)))


def one(sample: Sample, name: str) -> float:
    (s,) = score(sample, name)
    assert s.ok, s.error
    return s.value


def test_faithfulness_copied_high_unrelated_low_nonanswer_zero():
    copied = one(
        Sample(user_input=Q, response="Paris is the capital and largest city of France.", retrieved_contexts=[PARIS]),
        "faithfulness",
    )
    unrelated = one(
        Sample(user_input=Q, response="Quantum computers use qubits to factor integers.", retrieved_contexts=[PARIS]),
        "faithfulness",
    )
    dodge = score(
        Sample(user_input=Q, response="The capital is not mentioned in the context.", retrieved_contexts=[PARIS]),
        "faithfulness",
    )[0]
    # the fitted judge (docs/offline-judge.md): a copied sentence passes its bound, an
    # unrelated one does not
    bound = get_backend("embedding").bound(parse_metrics("faithfulness")[0])
    assert unrelated < bound <= copied
    assert dodge.value == 0.0 and dodge.details["sentences"][0]["non_answer"] is True
    # the best-matching context sentence is reported per response sentence
    s = score(
        Sample(user_input=Q, response="The Eiffel Tower was completed in 1889.", retrieved_contexts=[PARIS]),
        "faithfulness",
    )[0]
    assert s.details["sentences"][0]["best_match"].startswith("The Eiffel Tower")


def test_answer_relevancy_penalises_echo_and_unrelated():
    good = one(Sample(user_input=Q, response="France's capital city is Paris, on the Seine river."), "answer_relevancy")
    echo = one(Sample(user_input=Q, response="What is the capital of France?"), "answer_relevancy")
    off = one(Sample(user_input=Q, response="Bananas are rich in potassium."), "answer_relevancy")
    assert echo == 0.0  # no new content word: it only restates the question
    assert good > off and good > echo


def test_context_relevancy_orders_relevant_above_irrelevant_and_sentence_variant():
    rel = one(Sample(user_input=Q, retrieved_contexts=[PARIS]), "context_relevancy")
    irr = one(Sample(user_input=Q, retrieved_contexts=[BANANA]), "context_relevancy")
    both = one(Sample(user_input=Q, retrieved_contexts=[PARIS, BANANA]), "context_relevancy")
    # the default is the best context's relevance: an irrelevant extra context does not
    # hide the relevant one; variant=mean averages them
    assert rel == pytest.approx(both) and both > irr
    mean_both = one(Sample(user_input=Q, retrieved_contexts=[PARIS, BANANA]), "context_relevancy[variant=mean]")
    assert one(Sample(user_input=Q, retrieved_contexts=[PARIS]), "context_relevancy[variant=mean]") > mean_both
    (v,) = score(Sample(user_input=Q, retrieved_contexts=[PARIS, BANANA]), "context_relevancy[variant=sentence,t=0.4]")
    # 4 context sentences; only the one naming the capital of France reaches 0.4
    assert v.details["sentences"] == 4
    assert v.value == pytest.approx(10.0 * v.details["relevant_sentences"] / 4)
    assert 1 <= v.details["relevant_sentences"] <= 2


def test_context_precision_rewards_relevant_context_first():
    ref = "Paris is the capital of France."
    first = one(Sample(user_input=Q, retrieved_contexts=[PARIS, BANANA], reference=ref), "context_precision")
    second = one(Sample(user_input=Q, retrieved_contexts=[BANANA, PARIS], reference=ref), "context_precision")
    none = one(Sample(user_input=Q, retrieved_contexts=[BANANA], reference=ref), "context_precision")
    assert (first, second, none) == (pytest.approx(10.0), pytest.approx(5.0), 0.0)  # AP = 1, 1/2, 0


def test_context_recall_covered_vs_uncovered_reference():
    covered = one(
        Sample(
            user_input=Q,
            retrieved_contexts=[PARIS],
            reference="Paris is the capital of France. The Eiffel Tower dates from 1889.",
        ),
        "context_recall",
    )
    half = one(
        Sample(
            user_input=Q,
            retrieved_contexts=[PARIS],
            reference="Paris is the capital of France. Bananas grow in tropical clusters.",
        ),
        "context_recall",
    )
    # default t = 1.0: the mean best cosine; a paraphrase scores ~0.8-0.9, an absent fact ~0.1
    assert covered > half and covered >= 8.0 and half < 6.0


def test_semantic_similarity_and_bertscore_identical_strings():
    s = Sample(user_input=Q, response="Paris is the capital of France.", reference="Paris is the capital of France.")
    sim, bert = score(s, "semantic_similarity,bertscore")
    assert sim.value == pytest.approx(10.0, abs=1e-3)
    assert bert.raw == pytest.approx(1.0, abs=1e-5)
    assert bert.details["precision"] == pytest.approx(1.0, abs=1e-4)
    assert bert.details["recall"] == pytest.approx(1.0, abs=1e-4)
    (other,) = score(Sample(user_input=Q, response="Bananas are yellow.", reference=s.reference), "bertscore")
    assert other.raw < bert.raw and 0 <= other.details["precision"] <= 1


def test_one_score_per_metric_in_order_errors_not_raised():
    s = Sample(user_input=Q, response="Paris.", retrieved_contexts=[PARIS])
    out = score(s, "faithfulness,context_recall,answer_relevancy")
    assert [o.metric for o in out] == ["faithfulness", "context_recall", "answer_relevancy"]
    assert out[1].error and "reference" in out[1].error and out[1].value is None
    assert out[0].ok and out[2].ok
    # each metric is billed for the texts it was first to need: faithfulness embeds the
    # response and context sentences, answer_relevancy then only the question
    assert [o.cost.embedding_calls for o in out] == [1, 0, 1]
    # a retriever that found nothing: no context to judge, an error Score (it was a 0 that
    # looked like a result; every backend now says the same, adapters.base.missing_field_error)
    empty = score(Sample(user_input=Q, response="Paris.", retrieved_contexts=[]), "faithfulness")[0]
    assert empty.value is None and "no retrieved contexts; faithfulness needs at least one" in empty.error


class CountingEmbedder(Embedder):
    """Wraps the real local embedder and counts calls (plumbing check only)."""

    def __init__(self, fail: bool = False):
        from unified.judge.minilm import LocalEmbedder

        self.inner, self.calls, self.fail, self.model = LocalEmbedder(), [], fail, "counting"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.fail:
            raise JudgeConnectionError("embedding server unreachable")
        return await self.inner.embed(texts)


def test_configured_embedder_embeds_each_text_once_billed_to_the_first_metric_needing_it():
    emb = CountingEmbedder()
    s = Sample(
        user_input=Q,
        response="Paris is the capital and largest city of France.",
        retrieved_contexts=[PARIS, PARIS],
        reference="Paris is the capital of France.",
    )
    out = score(
        s, "faithfulness,context_relevancy,context_recall,context_precision,semantic_similarity", Judges(embedder=emb)
    )
    assert all(o.ok for o in out)
    sent = [t for call in emb.calls for t in call]
    assert len(sent) == len(set(sent))  # each distinct text once, over all calls
    # faithfulness: response + 2 context sentences; context_relevancy: the question;
    # context_recall: the reference; precision and similarity find every text embedded
    # (the response is the first context sentence: one text)
    assert emb.calls == [PARIS_SENTENCES, [Q], [s.reference]]
    assert [o.cost.embedding_calls for o in out] == [1, 1, 1, 0, 0]


def test_embedder_failure_becomes_error_scores():
    out = score(
        Sample(user_input=Q, response="Paris.", retrieved_contexts=[PARIS]),
        "faithfulness,answer_relevancy",
        Judges(embedder=CountingEmbedder(fail=True)),
    )
    assert all(o.value is None and "unreachable" in o.error for o in out)


def test_parameters_override_threshold_and_pass_bound():
    s = Sample(user_input=Q, response="The Eiffel Tower is in Paris.", retrieved_contexts=[PARIS])
    strict, lax = score(
        s,
        "faithfulness[variant=similarity,t=1.0,threshold=9.5],faithfulness[variant=similarity,t=0.3,threshold=1@0-10]",
    )
    assert strict.threshold == 9.5 and lax.threshold == 1.0
    assert lax.value >= strict.value and lax.passed is True


def test_loopback_embeddings_server_is_used(judge_server):
    """An OpenAI-compatible embedder (the loopback fake) instead of the local model:
    proves the routing and the per-metric billing of its requests, not score quality."""
    from unified.judge import build_judges

    judges = build_judges(embedding=judge_server.base_url)
    judge_server.reset_counts()
    out = score(
        Sample(user_input=Q, response="Paris.", retrieved_contexts=[PARIS]),
        "faithfulness,answer_relevancy,context_relevancy",
        judges,
    )
    assert all(o.error is None for o in out), [o.error for o in out]
    # faithfulness embeds response and context, answer_relevancy the question; context
    # relevancy needs nothing new and makes no request
    assert judge_server.embedding_count == 2 and judge_server.chat_count == 0
    assert [o.cost.embedding_calls for o in out] == [1, 1, 0]


def test_warm_cached_embedder_is_charged_as_a_cache_hit_not_a_call(tmp_path):
    """Regression: the backend charged ``embedding_calls=1`` per sample whatever the
    embedder did, so a warm rerun over the judge cache reported calls it never made."""
    from unified.adapters.native.testing import ScriptedEmbedder
    from unified.judge import CachedEmbedder, JudgeCache

    inner = ScriptedEmbedder(default=(1.0, 0.0))
    judges = Judges(embedder=CachedEmbedder(inner, JudgeCache(tmp_path / "c.sqlite")))
    s = Sample(user_input=Q, response="Paris.", reference="Paris.", retrieved_contexts=[PARIS])
    cold = score(s, "faithfulness,semantic_similarity", judges)
    warm = score(s, "faithfulness,semantic_similarity", judges)
    assert len(inner.calls) == 1
    assert sum(o.cost.embedding_calls for o in cold) == 1
    assert sum(o.cost.embedding_calls for o in warm) == 0
    assert sum(o.cost.cache_hits for o in warm) == 1
    assert [o.value for o in warm] == [o.value for o in cold]


@pytest.mark.local
async def test_unknown_parameter_or_variant_is_an_error():
    s = Sample(
        user_input="What is the capital of France?",
        response="Paris.",
        retrieved_contexts=["Paris is the capital of France."],
        id="p",
    )
    typo, bad_variant = await get_backend("embedding").score(
        s, parse_metrics("faithfulness[tt=0.5],context_relevancy[variant=bogus]")
    )
    assert typo.value is None and "unknown parameter 'tt'" in typo.error
    assert bad_variant.value is None and "variant must be" in bad_variant.error


def test_lexical_signal_lowers_a_number_or_name_found_in_no_context():
    ctx = ["Einstein won the Nobel Prize in 1921.", "The prize was for his work on the photoelectric effect."]
    right = Sample(
        user_input="When did Einstein win the Nobel Prize?",
        retrieved_contexts=ctx,
        response="Einstein won the Nobel Prize in 1921 for the photoelectric effect.",
    )
    wrong_year = right.model_copy(update={"response": right.response.replace("1921", "1969")})
    wrong_name = right.model_copy(update={"response": right.response.replace("Nobel", "Pulitzer")})
    on = {
        name: score(s, "faithfulness[variant=similarity,w=1],faithfulness[variant=similarity]")
        for name, s in (("right", right), ("year", wrong_year), ("name", wrong_name))
    }
    # similarity alone barely moves when one number changes; the lexical share does
    assert on["right"][0].value > on["year"][0].value + 1.0
    assert on["right"][0].value > on["name"][0].value + 1.0
    year = on["year"][0].details["sentences"][0]
    assert year["unsupported_terms"] == ["1969"] and year["unsupported_share"] > 0
    assert on["right"][0].details["sentences"][0]["unsupported_terms"] == []
    # w = 0 (the default) is the similarity alone: the right answer is not penalised at all
    # with w = 1, and the default ignores the share entirely
    assert on["right"][0].value == pytest.approx(on["right"][1].value)
    assert on["year"][1].details["w"] == 0.0 and on["year"][1].value > on["year"][0].value
