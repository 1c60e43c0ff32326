"""benchmarks/pair_candidate.py: co-occurrence support of a response sentence's content-word
pairs (a wrong relation between words the source does contain), on hand-made examples."""

import math

from support import load_benchmark

pairs = load_benchmark("pair_candidate")

CURIE = (
    "Marie Curie was a physicist and chemist. Curie won the Nobel Prize in Physics in 1903. "
    "Curie won the Nobel Prize in Chemistry in 1911."
)


def _flat(word: str) -> float:
    return 1.0


def _share(sentence: str, contexts: list[str], **kw) -> tuple[float, set[tuple[str, str]]]:
    ps = pairs.PairEvidence(contexts).pairs(sentence, _flat)
    share, bad = pairs.unsupported_pairs(ps, **kw)
    return share, {(p.a, p.b) for p in bad}


def test_a_wrong_relation_is_an_unsupported_pair_and_the_faithful_sentence_has_none():
    wrong, bad = _share("Curie won the Nobel Prize in Chemistry in 1903.", [CURIE])
    right, none = _share("Curie won the Nobel Prize in Chemistry in 1911.", [CURIE])
    assert ("1903", "chemistry") in bad and ("1911", "chemistry") not in none
    assert none == set() and right == 0.0 < wrong


def test_a_faithful_paraphrase_is_not_punished():
    # reordered, another word ("received": found nowhere, so its pairs are left to
    # idf_unsupported), other forms ("Chemistry" and "chemist" share a stem), same relations
    share, bad = _share("In 1911 the Nobel Prize for Chemistry was received by a chemist.", [CURIE])
    assert (bad, share) == (set(), 0.0)


def test_a_name_said_once_and_then_referred_to_needs_a_span():
    # "Curie" is in the first sentence only ("She" after): her 1911 prize is two sentences away
    ctx = CURIE.replace("Curie won", "She won")
    ps = pairs.PairEvidence([ctx]).pairs("Curie won the Chemistry prize in 1911.", _flat)
    assert pairs.unsupported_pairs(ps, span=1)[0] > 0.0
    assert pairs.unsupported_pairs(ps, span=3) == (0.0, [])


def test_span_lets_a_pair_cross_neighbouring_sentences_of_one_context_only():
    ctx = ["The bridge opened in 1932. It carries eight lanes.", "Traffic reports mention the tunnel."]
    ps = pairs.PairEvidence(ctx).pairs("The bridge carries eight lanes of traffic.", _flat)
    gap = {(p.a, p.b): p.gap for p in ps}
    assert gap[("bridge", "lanes")] == 1.0  # adjacent sentences
    assert gap[("carries", "lanes")] == 0.0  # one sentence
    assert math.isinf(gap[("bridge", "traffic")])  # only ever in different contexts
    assert pairs.unsupported_pairs(ps, span=1)[0] > pairs.unsupported_pairs(ps, span=2)[0] > 0.0


def test_window_keeps_the_pairs_of_words_close_in_the_sentence():
    ctx = ["The bridge opened in 1932. It carries eight lanes.", "Traffic reports mention the tunnel."]
    ps = pairs.PairEvidence(ctx).pairs("The bridge carries eight lanes of traffic.", _flat)
    assert {(p.a, p.b): p.distance for p in ps}[("bridge", "traffic")] == 5
    near = {(p.a, p.b) for p in pairs.unsupported_pairs(ps, span=2, window=4)[1]}
    assert ("bridge", "traffic") not in near and ("lanes", "traffic") in near


def test_missing_words_keyed_pairs_and_weights_are_the_variants_filters():
    ctx = ["The plan costs 10 dollars per month.", "Support answers within a day."]
    ps = pairs.PairEvidence(ctx).pairs("The plan costs 12 dollars per month of support.", len)
    # "12" occurs nowhere: its pairs are idf_unsupported's, counted only with with_missing
    assert all(p.supported_words == ("12" not in (p.a, p.b)) for p in ps)
    plain, bad = pairs.unsupported_pairs(ps)
    assert not any("12" in (p.a, p.b) for p in bad)
    assert pairs.unsupported_pairs(ps, with_missing=True)[0] > plain
    # keyed: only the pairs with a number or name; "12" is the one key term, so none is kept
    assert pairs.unsupported_pairs(ps, keyed=True) == (0.0, [])
    # weighted by idf(a) · idf(b) (here: word lengths): "support" pairs weigh more than "plan" ones
    assert pairs.unsupported_pairs(ps, weighted=True)[0] != plain


def test_every_variant_of_a_response_is_a_share():
    row = {"contexts": [CURIE], "response": "Curie won Chemistry in 1903. She was a physicist."}
    out = pairs.variants(pairs.response_pairs(row))
    assert len(out) == 3 * len(pairs.GRID)
    assert all(0.0 <= v <= 1.0 for v in out.values())
    assert out["pairs_s1_wall_max"] > out["pairs_s1_wall_mean"] > 0.0
