"""benchmarks/learned_faithfulness.py: the sentence labels taken from RAGTruth's character
spans (a wrong offset would train the learned signal on the wrong sentences), the
3-sentence windows, and the response score (min / mean of the sentences' P(faithful),
times the non-answer factor)."""

import numpy as np
from support import load_benchmark

lf = load_benchmark("learned_faithfulness")

RESPONSE = "Blue Bell shut a plant.\n\n  Five people   died in Kansas.  The CDC found listeria in a cup."
SENTENCES = ["Blue Bell shut a plant.", "Five people died in Kansas.", "The CDC found listeria in a cup."]


def test_sentences_are_located_through_collapsed_whitespace():
    offs = lf.sentence_offsets(RESPONSE, SENTENCES)
    assert [RESPONSE[a:b] for a, b in offs] == [
        "Blue Bell shut a plant.",
        "Five people   died in Kansas.",
        "The CDC found listeria in a cup.",
    ]


def test_a_sentence_overlapping_a_span_is_unfaithful_and_only_that_one():
    start = RESPONSE.index("Five")
    row = {"response": RESPONSE, "y": 0, "spans": [(start, start + 4)]}  # the span is the word "Five"
    assert lf.sentence_labels(row, SENTENCES) == ([1, 0, 1], 0)
    # a span over the blanks between two sentences touches neither; one more character
    # to the left takes the previous sentence's full stop
    end = RESPONSE.index("The CDC")
    row["spans"] = [(end - 2, end)]
    assert lf.sentence_labels(row, SENTENCES)[0] == [1, 1, 1]
    row["spans"] = [(end - 3, end)]
    assert lf.sentence_labels(row, SENTENCES)[0] == [1, 0, 1]


def test_an_unlocated_sentence_takes_the_response_label_and_is_counted():
    row = {"response": RESPONSE, "y": 0, "spans": [(0, 4)]}
    ys, missed = lf.sentence_labels(row, ["Blue Bell shut a plant.", "Not in the response."])
    assert ys == [0, 0] and missed == 1


def test_ares_rows_without_spans_label_every_sentence_with_the_response_label():
    assert lf.sentence_labels({"response": "A. B.", "y": 1}, ["A.", "B."]) == ([1, 1], 0)


def test_windows_stay_inside_their_context_and_are_unit_vectors():
    e = np.eye(4)
    vecs = {"A one.": e[0], "A two.": e[1], "A three.": e[2], "B one.": e[3]}
    W = lf.windows(["A one. A two. A three.", "B one."], vecs)
    assert W.shape == (4, 4)
    assert np.allclose(np.linalg.norm(W, axis=1), 1.0)
    assert np.allclose(W[1], np.array([1, 1, 1, 0]) / np.sqrt(3))  # the middle sentence and both neighbours
    assert np.allclose(W[2], np.array([0, 1, 1, 0]) / np.sqrt(2))  # the last: no neighbour from context B
    assert np.allclose(W[3], e[3])


class _Fixed:
    """A fitted model stand-in whose P(faithful) is the sentence row's first number."""

    def predict_proba(self, X):
        return np.column_stack([1 - X[:, 0], X[:, 0]])


def test_response_score_is_min_or_mean_of_sentences_times_answered():
    def resp(ps, answered):
        pairs = np.zeros((len(ps), 1536), np.float32)
        pairs[:, 0] = ps
        return {"pairs": pairs, "ys": np.ones(len(ps)), "answered": answered}

    rows = [resp([0.9, 0.2, 0.7], 1.0), resp([0.8], 0.5)]
    model = (_Fixed(), np.zeros(1536), np.ones(1536), None)
    assert np.allclose(lf.response_scores(model, rows, "pairs", "min"), [0.2, 0.4], atol=1e-6)
    assert np.allclose(lf.response_scores(model, rows, "pairs", "mean"), [0.6, 0.4], atol=1e-6)
