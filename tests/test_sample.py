"""Sample: every framework's field names load to the same Sample; validation messages."""

import uuid
import warnings

import pytest

from unified.sample import Sample, SampleError

Q = "How many days of annual leave do full-time employees get?"
A = "25 days per year plus public holidays."
CTX = ["Full-time employees receive 25 days of paid annual leave per calendar year."]
REF = "25 days per calendar year."

CANONICAL = {"user_input": Q, "response": A, "retrieved_contexts": CTX, "reference": REF}

# each framework's own names, written out by hand (not derived from sample.ALIASES, so
# that a wrong alias table fails here)
FRAMEWORK_ROWS = {
    "ragas_v2": {"user_input": Q, "response": A, "retrieved_contexts": CTX, "reference": REF},
    "ragas_v1": {"question": Q, "answer": A, "contexts": CTX, "ground_truth": REF},
    "deepeval": {"input": Q, "actual_output": A, "retrieval_context": CTX, "expected_output": REF},
    "dingo": {"prompt": Q, "content": A, "context": CTX, "reference": REF},
    "patronus": {
        "evaluated_model_input": Q,
        "evaluated_model_output": A,
        "evaluated_model_retrieved_context": CTX,
        "evaluated_model_gold_answer": REF,
    },
    "others": {"query": Q, "answer": A, "contexts": CTX, "reference_answer": REF},
}


@pytest.mark.parametrize("framework", sorted(FRAMEWORK_ROWS))
def test_framework_names_give_the_same_sample(framework):
    expected = Sample.from_record(CANONICAL).model_dump()
    assert Sample.from_record(FRAMEWORK_ROWS[framework]).model_dump() == expected


def test_embedchain_names():
    # Embedchain's rows have no reference
    row = {"question": Q, "answer": A, "contexts": CTX}
    canonical = {"user_input": Q, "response": A, "retrieved_contexts": CTX}
    assert Sample.from_record(row).model_dump() == Sample.from_record(canonical).model_dump()


def test_relevant_docs_alias_and_int_ids():
    s = Sample.from_record({"query": Q, "relevant_docs": [7, "doc-8"]})
    assert s.relevant_ids == ["7", "doc-8"]


def test_mapping_renames_first():
    s = Sample.from_record({"q": Q, "ctx": CTX}, {"q": "user_input", "ctx": "retrieved_contexts"})
    assert s.user_input == Q and s.retrieved_contexts == CTX and s.metadata == {}


def _error(record):
    with pytest.raises(SampleError) as ei:
        Sample.from_record(record)
    return ei.value


def test_string_contexts_error_names_the_source_and_the_fix():
    e = _error({"question": Q, "contexts": "one long context"})
    assert e.field == "retrieved_contexts"
    assert "single string in 'contexts'" in e.reason and "wrap it in a list" in e.reason


def test_non_string_context_names_the_index():
    e = _error({"user_input": Q, "retrieved_contexts": ["ok", 42]})
    assert e.field == "retrieved_contexts[1]" and "got int" in e.reason


def test_a_blank_question_is_stored_as_absent():
    # a summary or a data-to-text response answers no question (issue 23 part 4)
    blank = Sample.from_record({"user_input": "   ", "response": A})
    absent = Sample.from_record({"response": A})
    assert blank.user_input is None and absent.user_input is None and not blank.has("user_input")
    assert blank.content_hash() == absent.content_hash()  # one spelling of "no question"


def test_a_row_with_no_sample_field_is_an_error_naming_the_remedy():
    e = _error({"Query Text": Q, "notes": "x"})
    assert e.field is None and "no sample field" in e.reason and "--map" in e.reason
    e = _error({"user_input": "  "})  # a blank question and nothing else: no content at all
    assert "no sample field" in e.reason


def test_conflicting_aliases_are_an_error():
    e = _error({"question": Q, "user_input": "another question?"})
    assert e.field == "user_input"
    assert "'question'" in e.reason and "'user_input'" in e.reason and "given twice" in e.reason


def test_equal_aliases_are_accepted():
    assert Sample.from_record({"question": Q, "user_input": Q}).user_input == Q


def test_bad_graded_relevance():
    e = _error({"user_input": Q, "graded_relevance": {"doc-1": "high"}})
    assert e.field == "graded_relevance.doc-1"


@pytest.mark.parametrize("grade", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_graded_relevance_is_a_row_error(grade):
    # json.loads accepts NaN/Infinity; a NaN grade used to yield nDCG=nan silently
    e = _error({"user_input": Q, "graded_relevance": {"doc-1": grade, "doc-2": 1}})
    assert e.field == "graded_relevance.doc-1"
    assert "finite" in str(e)


def test_unknown_field_kept_in_metadata_and_warned_once():
    field = f"annotator_{uuid.uuid4().hex[:8]}"  # unique: the warning is once per process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s1 = Sample.from_record({"user_input": Q, field: "kb"})
        s2 = Sample.from_record({"user_input": Q + " again", field: "mm"})
    assert s1.metadata == {field: "kb"} and s2.metadata == {field: "mm"}
    mine = [w for w in caught if field in str(w.message)]
    assert len(mine) == 1 and issubclass(mine[0].category, UserWarning)
    assert "kept in metadata" in str(mine[0].message)


def test_content_hash_id_is_stable_and_content_based():
    a = Sample.from_record(CANONICAL)
    b = Sample.from_record(FRAMEWORK_ROWS["deepeval"])
    assert a.id == b.id and len(a.id) == 16
    # metadata does not change the id, content does
    assert Sample.from_record({**CANONICAL, "metadata": {"x": 1}}).id == a.id
    assert Sample.from_record({**CANONICAL, "response": "30 days."}).id != a.id
    # an explicit id wins and is kept as a string
    assert Sample.from_record({**CANONICAL, "id": 17}).id == "17"


def test_has_treats_empty_retrieval_as_present():
    s = Sample(user_input=Q, retrieved_contexts=[], relevant_ids=[], response=" ")
    assert s.has("retrieved_contexts") and not s.has("relevant_ids") and not s.has("response")


def test_deepeval_context_beside_retrieval_context_is_the_reference_context():
    # DeepEval rows carry both: `retrieval_context` (what the retriever found) and
    # `context` (the ideal context); Dingo's lone `context` is the retrieved one
    deepeval_row = {"input": "q?", "actual_output": "a", "retrieval_context": ["found"], "context": ["ideal"]}
    s = Sample.from_record(deepeval_row)
    assert s.retrieved_contexts == ["found"] and s.reference_contexts == ["ideal"]
    dingo_row = {"prompt": "q?", "content": "a", "context": ["found"]}
    assert Sample.from_record(dingo_row).retrieved_contexts == ["found"]


@pytest.mark.parametrize(
    "field, value, says",
    [
        (
            "contexts",
            {"page_content": "Zebras eat grass"},
            "got an object in 'contexts'; one context object goes in a list",
        ),
        ("retrieved_contexts", {"text": "Paris", "id": "d1"}, "got an object in 'retrieved_contexts'"),
        ("retrieved_ids", {"d1": 1, "d2": 2}, "got an object in 'retrieved_ids'"),
        ("retrieved_ids", {"b", "a", "c"}, "got a set in 'retrieved_ids': a set has no order"),
        ("relevant_ids", frozenset({"a"}), "got a set in 'relevant_ids'"),
    ],
)
def test_an_object_or_a_set_where_a_list_belongs_is_refused(field, value, says):
    """``list()`` of a dict is its keys, of a set an order that changes per process: a
    context object read as the passages ["page_content"] was judged (context_relevancy
    10.0), and a set of ids ranked differently in every run, without a word."""
    e = _error(
        {"user_input": Q, "response": A, field: value, **({"relevant_ids": ["a"]} if field != "relevant_ids" else {})}
    )
    assert says in e.reason


def test_a_dataframe_cell_holding_an_object_is_a_row_error():
    pd = pytest.importorskip("pandas")
    from unified.data.io import load_samples

    df = pd.DataFrame({"user_input": [Q, Q], "response": [A, A], "retrieved_contexts": [{"x": "y"}, CTX]})
    good, bad = load_samples(df)
    assert len(good) == 1 and bad[0].row == 1 and bad[0].field == "retrieved_contexts"
