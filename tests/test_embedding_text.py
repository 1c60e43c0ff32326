"""Sentence splitting and tokenising helpers of the embedding heuristics (unified.text)."""

from unified.text import content_words, is_nonanswer, key_terms, split_sentences, words


def test_split_keeps_abbreviations_decimals_and_identifiers():
    text = "It works, e.g. on Spark 3.4. Use dbutils.fs.mount() now! Done? Yes."
    assert split_sentences(text) == ["It works, e.g. on Spark 3.4.", "Use dbutils.fs.mount() now!", "Done?", "Yes."]


def test_split_on_blank_lines_heading_rules_and_code_fences():
    text = "Title\n=====\nFirst one. Second one\n\nNew block\n```\nx = 1.\ny.z()\n```\nAfter."
    assert split_sentences(text) == ["Title", "First one.", "Second one", "New block", "x = 1. y.z()", "After."]


def test_split_long_units_into_word_windows_and_empty_input():
    long = " ".join(f"w{i}" for i in range(130))
    parts = split_sentences(long, max_words=60)
    assert [len(p.split()) for p in parts] == [60, 60, 10]
    assert " ".join(parts) == long
    assert split_sentences("") == [] and split_sentences("  \n ") == [] and split_sentences("...") == []


def test_split_is_deterministic_and_loses_no_words():
    text = "A first sentence. Dr. Who said hi!  Then (quietly) left?\nThe end"
    a, b = split_sentences(text), split_sentences(text)
    assert a == b == ["A first sentence.", "Dr. Who said hi!", "Then (quietly) left?", "The end"]


def test_words_content_words_and_key_terms():
    assert words("Use dbutils.fs.mount, then stop.") == ["use", "dbutils.fs.mount", "then", "stop"]
    assert content_words("How do I insert into a delta table?") == {"insert", "delta", "table"}
    kt = key_terms("Set `spark.sql.shuffle` to 200 in Unity Catalog for table_name. MLflow too.")
    assert {"spark.sql.shuffle", "200", "unity", "catalog", "table_name"} <= kt
    assert "set" not in kt  # sentence-initial capital is not a name


def test_nonanswer_patterns():
    assert is_nonanswer("The answer is not explicitly mentioned in the context.")
    assert is_nonanswer("The context explains how to configure audit logs.")
    assert is_nonanswer("I don't know.")
    assert not is_nonanswer("Offline changes sync within 30 seconds.")
    assert not is_nonanswer("Based on the context, the limit is 50 MB.")


def test_vocabulary_matches_word_forms_but_numbers_and_short_words_exactly():
    from unified.text import Vocabulary

    v = Vocabulary(["Nimbus syncs offline changes after reconnecting; class 3.4 in 2012.", "Use the API."])
    forms = ["sync", "syncing", "reconnect", "changed", "classes", "nimbus", "3.4", "2012", "api"]
    assert [w for w in forms if w not in v] == []
    assert "2013" not in v and "3.41" not in v and "3" not in v  # numbers: exact only
    assert "apis" not in v  # three-letter words match exactly
    assert "status" not in v and "offset" not in v  # a shared first letter or two is not a match


def test_unsupported_terms_weighs_numbers_and_names_double():
    from unified.text import Vocabulary, unsupported_terms

    v = Vocabulary(["Einstein won the Nobel Prize in 1921.", "The prize was for the photoelectric effect."])
    assert unsupported_terms("Einstein won the Nobel Prize in 1921.", v) == (0.0, [])
    share, missing = unsupported_terms("Einstein won the Nobel Prize in 1969.", v)
    # terms: einstein, nobel (name, 2), prize (name, 2), 1969 (number, 2) ("won" is a
    # stopword, for "won't"): 2 of 7 missing
    assert missing == ["1969"] and share == 2 / 7
    share, missing = unsupported_terms("Einstein won it in Stockholm for relativity.", v)
    # einstein (1), stockholm (name, 2), relativity (1)
    assert missing == ["relativity", "stockholm"] and share == (2 + 1) / (1 + 2 + 1)
    assert unsupported_terms("", v) == (0.0, []) and unsupported_terms("It is so.", v) == (0.0, [])
