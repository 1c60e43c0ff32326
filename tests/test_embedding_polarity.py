"""Words the contexts deny (``unified/adapters/embedding_polarity.py``): a field set to false is
not support for saying the thing is there; a negated mention is never denied."""

from unified.adapters.embedding.polarity import ContextPolarity, negated_words

RECORD = (
    "name: Finch & Fork\n"
    "attributes OutdoorSeating (Outdoor Seating): False\n"
    "attributes WiFi: free\n"
    "attributes Ambience trendy: False\n"
    "attributes Ambience casual: True\n"
    "attributes Music: None"
)
JSON_RECORD = '{"name": "Casa", "attributes": {"HasTV": "no", "Dogs": true, "Valet": false, "Garage": null}}'


def test_a_positive_mention_of_a_false_field_is_denied():
    ctx = ContextPolarity([RECORD])
    assert ctx.denied("It offers outdoor seating and a trendy atmosphere.") == ["outdoor", "seating", "trendy"]
    # null says nothing of the thing: it does not support saying it is there either
    assert ctx.denied("Guests enjoy live music.") == ["music"]


def test_negated_mentions_and_affirmed_words_are_never_denied():
    ctx = ContextPolarity([RECORD])
    assert ctx.denied("It does not offer outdoor seating.") == []
    assert ctx.denied("Outdoor seating isn't available.") == []
    # the negation holds in its clause only: "but" starts a new one
    assert ctx.denied("There is no outdoor seating, but the vibe is trendy.") == ["trendy"]
    # "attributes" and "ambience" also occur in fields that say yes: affirmed
    assert ctx.denied("The ambience is casual and it has free WiFi.") == []


def test_json_pairs_count_and_prose_changes_nothing():
    ctx = ContextPolarity([JSON_RECORD])
    assert ctx.denied("They have valet parking and a garage.") == ["garage", "valet"]
    assert ctx.denied("Dogs are welcome.") == []
    prose = ContextPolarity(["The museum has no cafe. Answer: no tickets are needed on Sundays."])
    assert prose.denied_vocabulary is None
    assert prose.denied("The museum has a cafe.") == []


def test_negated_words_cover_the_whole_clause():
    assert negated_words("Garage and valet parking are not offered; street parking is.") == {
        "garage",
        "valet",
        "parking",
        "offered",
    }
    assert negated_words("It doesn't take reservations") == {"take", "reservations"}
    assert negated_words("It takes reservations.") == set()


def test_long_runs_of_blanks_are_read_in_linear_time():
    """A comma followed by 20,000 spaces (PDF or table padding) took 117 s when the key
    could take the blanks too; every split of the run was tried."""
    import time

    start = time.process_time()
    for text in ["a," + " " * 200_000 + "x", "{" + " " * 100_000 + "key" + " " * 5_000 + ": false}", "\t" * 100_000]:
        ContextPolarity([text])
    assert time.process_time() - start < 5.0
    assert ContextPolarity(['{"Valet":   false ,  "Garage" : no}']).denied("valet and garage") == ["garage", "valet"]


def test_negation_without_an_apostrophe_or_by_adjective_counts():
    ctx = ContextPolarity([RECORD])
    assert ctx.denied("Outdoor seating is unavailable.") == []
    assert ctx.denied("It doesnt offer outdoor seating.") == []
