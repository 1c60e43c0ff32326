"""Metric registry: aliases, suggestions, cutoffs, custom metrics through scoring."""

import pytest

from unified.metrics import (
    UnknownMetricError,
    get_metric,
    metric_names,
    parse_metric,
    parse_metrics,
    register_metric,
    scratch_registry,
)
from unified.sample import Sample
from unified.scores import Score, aggregate


@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("FaithfulnessMetric", "faithfulness"),
        ("Faithfulness", "faithfulness"),
        ("ContextPrecisionWithReference", "context_precision"),
        ("ContextualPrecisionMetric", "context_precision"),
        ("ContextualRelevancyMetric", "context_relevancy"),
        ("ContextRelevance", "context_relevancy"),
        ("context-recall", "context_recall"),
        ("AnswerRelevancyMetric", "answer_relevancy"),
        ("HallucinationMetric", "hallucination"),
        ("answer_similarity", "semantic_similarity"),
    ],
)
def test_aliases_resolve(alias, canonical):
    assert get_metric(alias).name == canonical


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UnknownMetricError) as ei:
        get_metric("faithfullness")
    msg = str(ei.value)
    assert "unknown metric 'faithfullness'" in msg and "'faithfulness'" in msg
    assert not msg.startswith("'")  # plain message, not KeyError's quoted repr


def test_names_are_listed():
    names = metric_names()
    assert names == sorted(names)
    assert {"faithfulness", "precision_at_k", "ndcg_at_k", "mrr"} <= set(names)


@pytest.mark.parametrize(
    "text, canonical, k, name",
    [
        ("precision@3", "precision_at_k", 3, "precision@3"),
        ("ndcg@10", "ndcg_at_k", 10, "ndcg@10"),
        ("recall", "recall_at_k", None, "recall"),
        ("hit_rate@1", "hit_rate_at_k", 1, "hit_rate@1"),
        ("mrr@5", "mrr", 5, "mrr@5"),
        # one spelling per metric in Scores, whatever the user typed
        ("precision_at_k", "precision_at_k", None, "precision"),
        ("precision_at_k@3", "precision_at_k", 3, "precision@3"),
        ("FaithfulnessMetric", "faithfulness", None, "faithfulness"),
        (
            "context_relevancy[variant=sentence, t=0.7]",
            "context_relevancy",
            None,
            "context_relevancy[variant=sentence,t=0.7]",
        ),
    ],
)
def test_parse_metric_cutoffs(text, canonical, k, name):
    ref = parse_metric(text)
    assert (ref.canonical, ref.k, ref.name) == (canonical, k, name)


def test_parse_metric_params_and_lists():
    ref = parse_metric("context_relevancy[variant=sentence,n=3]")
    assert ref.param("variant") == "sentence" and ref.param("n") == 3
    refs = parse_metrics("faithfulness,precision@3,context_relevancy[a=1,b=2]")
    assert [r.name for r in refs] == ["faithfulness", "precision@3", "context_relevancy[a=1,b=2]"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("faithfulness@3", "takes no cutoff"),
        ("precision@x", "whole number"),
        ("precision@0", "at least 1"),
        ("context_relevancy[variant]", "key=value"),
    ],
)
def test_parse_metric_errors(text, fragment):
    with pytest.raises(UnknownMetricError, match=fragment):
        parse_metric(text)


@pytest.fixture
def scratch():
    """What a test registers leaves with it (the registry's own scoped API)."""
    with scratch_registry():
        yield


def test_custom_metric_through_score_computation(scratch):
    @register_metric(
        "test_answer_mentions_reference", required=("response", "reference"), raw_range=(0.0, 1.0), threshold=6.0
    )
    def mentions(sample: Sample) -> float:
        """Share of the reference's words that appear in the response."""
        ref = set(sample.reference.lower().split())
        return len(ref & set(sample.response.lower().split())) / len(ref)

    ref = parse_metric("test_answer_mentions_reference")
    spec = ref.spec
    assert spec.custom and spec.kind == "deterministic" and spec.fn is mentions
    assert spec.description == "Share of the reference's words that appear in the response."
    samples = [
        Sample(user_input="q?", response="about 25 days", reference="25 days"),
        Sample(user_input="q2?", response="no idea", reference="25 days"),
    ]
    scores = [
        Score.from_raw(
            ref.name,
            "native",
            s.id,
            spec.fn(s),
            raw_range=spec.raw_range,
            higher_is_better=spec.higher_is_better,
            threshold=spec.threshold,
        )
        for s in samples
    ]
    # first: reference words {25, days} both in the response -> 1.0 -> 10/10, passes 6
    # second: none -> 0 -> 0/10, fails
    assert [(s.value, s.passed) for s in scores] == [(10.0, True), (0.0, False)]
    agg = aggregate(scores)
    assert agg.mean == 5.0 and agg.pass_rate == 0.5 and agg.errors == 0


# ---------------------------------------------------------------- the README's metric table

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
SNIPPET = ROOT / "docs" / "readme-snippets" / "native.md"


def _table_between_markers(text: str) -> str:
    start, end = "<!-- metric-table:start -->\n", "<!-- metric-table:end -->"
    return text[text.index(start) + len(start) : text.index(end)]


def test_metric_table_snippet_matches_the_registries():
    """✓ per backend, needed fields and each backend's pass bound come from the code."""
    from unified.adapters import metric_table_markdown

    assert _table_between_markers(SNIPPET.read_text(encoding="utf-8")) == metric_table_markdown()


def test_metric_table_shows_each_backends_own_pass_bound():
    from unified.adapters import metric_table_markdown

    rows = {
        line.split("|")[1].strip(" `"): line for line in metric_table_markdown().splitlines() if line.startswith("| `")
    }
    assert rows["answer_relevancy"].endswith("| 5 |")
    assert rows["context_relevancy"].endswith("| 5 (embedding 4.25) |")
    assert rows["faithfulness"].endswith("| 7 (embedding 4.5) |") and rows["precision@k"].endswith("| 5† |")
    assert len(rows) == len({r for r in rows})  # one row per metric


def test_readme_metric_table_matches_the_registries():
    from unified.adapters import metric_table_markdown

    assert metric_table_markdown() in (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------- scoped registration


def test_registered_and_unregister_leave_the_registry_as_found():
    from unified.metrics import MetricSpec, registered, unregister

    spec = MetricSpec(
        name="test_scoped_metric",
        description="d",
        required=("response",),
        kind="llm",
        aliases={"ragas": "TestScopedMetric"},
    )
    with registered(spec):
        assert get_metric("TestScopedMetric") is spec
    with pytest.raises(UnknownMetricError):
        get_metric("TestScopedMetric")
    original = get_metric("faithfulness")
    with registered(MetricSpec(name="faithfulness", description="x", required=(), kind="llm"), replace=True):
        assert get_metric("faithfulness").description == "x"
    assert get_metric("faithfulness") is original and get_metric("FaithfulnessMetric") is original
    with pytest.raises(UnknownMetricError):
        unregister("no_such_metric")


def test_describe_metric_names_every_framework_spelling():
    from unified.adapters import builtin_backends, describe_metric, implemented_metrics

    d = describe_metric("FaithfulnessMetric")
    assert d["name"] == "faithfulness" and d["label"] == "faithfulness" and d["kind"] == "llm"
    assert d["required"] == ["response", "retrieved_contexts"]  # no question needed (summaries)
    assert d["aliases"]["ragas"] == ["Faithfulness"] and d["aliases"]["deepeval"] == ["FaithfulnessMetric"]
    serving = [b for b in builtin_backends() if "faithfulness" in implemented_metrics(b)]
    assert d["backends"] == serving
    assert d["thresholds"] == {b: 4.5 if b == "embedding" else 7.0 for b in serving}  # the fitted offline bound
    assert d["scales"]["opik"].startswith("Hallucination: ") and "1 − raw" in d["scales"]["opik"]
    assert d["scales"]["mlflow"].startswith("RetrievalGroundedness: ") and '"yes" (raw 1)' in d["scales"]["mlflow"]
    # what the label-valued and rating-valued frameworks return, read without importing them
    assert '"faithful" = 1 / "unfaithful" = 0' in d["scales"]["phoenix"]
    # every framework backend says what its raw value is (those with a table of rows)
    assert "0–3" in d["scales"]["trulens"] and set(d["scales"]) == set(d["backends"]) - {"native", "embedding"}
    assert "Σ_c s_c / N" in d["formula"]  # native's docstring
    p = describe_metric("precision@3")
    assert p["label"] == "precision@k" and p["also_needs"] == "relevant_ids or graded_relevance"
    assert "best this sample allows" in p["description"] and p["aliases"] == {"other": ["precision"]}
    c = describe_metric("ContextPrecisionWithReference")
    assert sorted(c["aliases"]["ragas"]) == ["ContextPrecision", "ContextPrecisionWithReference"]


def test_a_deterministic_metric_on_contexts_counts_an_empty_retrieval(scratch):
    # [] is refused only for metrics that judge contexts (nothing to judge); a user's
    # deterministic metric that counts them scores an empty retrieval (0 here)
    from unified.adapters.base import missing_field_error

    @register_metric("test_n_contexts", required=("retrieved_contexts",), raw_range=(0.0, 5.0))
    def n_contexts(sample: Sample) -> float:
        return float(len(sample.retrieved_contexts or []))

    empty = Sample(user_input="q?", response="a", retrieved_contexts=[])
    assert missing_field_error(empty, parse_metric("test_n_contexts")) is None
    assert "no retrieved contexts" in (missing_field_error(empty, parse_metric("faithfulness")) or "")
