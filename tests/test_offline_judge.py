"""The fitted offline faithfulness (issue 27) and the offline bounds (issue 24 item 7), on
hand-made examples with the real MiniLM model: a swapped number, an added claim, a
faithful paraphrase. These check the signals and the direction of the score; agreement
with people is measured by ``benchmarks/fit_offline_judge.py`` (docs/offline-judge.md).
"""

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from unified.adapters import get_backend
from unified.adapters.embedding import judge as J
from unified.adapters.embedding.signals import FEATURES, NumberSet, name_mentions, number_mentions
from unified.metrics import parse_metrics
from unified.sample import Sample

pytestmark = pytest.mark.local

CONTEXT = (
    "Nimbus Notes keeps a full copy of every notebook on the device. Changes made offline are queued "
    "and synced within 30 seconds of the device reconnecting. The Team plan costs $10 per user per month."
)
Q = "How long does it take for offline changes to sync?"
FAITHFUL = "Changes made offline are synced within 30 seconds of the device reconnecting."
PARAPHRASE = "Once the device reconnects, changes made offline sync within 30 seconds."
#: reworded so far that most of its words are not the context's: the lexical signals
#: count them as unsupported (a known limit, docs/offline-judge.md)
HEAVY_PARAPHRASE = (
    "After the device reconnects, edits made without a connection are synchronised in at most 30 seconds."
)
SWAPPED = "Changes made offline are synced within 90 seconds of the device reconnecting."
ADDED = FAITHFUL + " The feature was designed by Margaret Okonkwo in Reykjavik and costs 45 euros a year."
ROOT = Path(__file__).resolve().parent.parent


def faith(response: str, metric: str = "faithfulness"):
    backend = get_backend("embedding")
    sample = Sample(user_input=Q, response=response, retrieved_contexts=[CONTEXT])
    (s,) = asyncio.run(backend.score(sample, parse_metrics(metric)))
    assert s.ok, s.error
    return s


def test_numbers_compare_part_by_part():
    assert [p for _, p in number_mentions("1,500 euros at 17:00-21:00, version 3.4, seven days")] == [
        (1500,),
        (17, 0, 21, 0),
        (3, 4),
        (7,),
    ]
    ctx = NumberSet(["Open 17:0-21:0; fee 1500; 30 days"])
    assert ctx.supports((17, 0, 21, 0)) and ctx.supports((1500,)) and not ctx.supports((90,))
    assert name_mentions("Yesterday Margaret Okonkwo's team met The Board in Reykjavik.") == [
        "margaret",
        "okonkwo",
        "board",
        "reykjavik",
    ]


def test_swapped_number_is_listed_and_lowers_the_score():
    good, swapped = faith(FAITHFUL), faith(SWAPPED)
    assert good.details["sentences"][0]["unsupported_numbers"] == []
    assert swapped.details["sentences"][0]["unsupported_numbers"] == ["90"]
    assert swapped.details["features"]["unsupported_numbers"] == 1.0
    assert swapped.value < good.value - 0.5
    assert good.passed
    # the copied wording says "faithful", the number says "not": a weak, flagged verdict
    assert swapped.details["signals_disagree"] is True
    assert swapped.details["confidence"] < 0.5 * good.details["confidence"]


def test_added_claim_lists_its_names_and_numbers_and_fails():
    s = faith(ADDED)
    first, added = s.details["sentences"]
    assert first["unsupported_names"] == [] and first["unsupported_numbers"] == []
    assert {"margaret", "okonkwo", "reykjavik"} <= set(added["unsupported_names"])
    assert added["unsupported_numbers"] == ["45"]
    assert s.value < faith(FAITHFUL).value and not s.passed


def test_faithful_paraphrase_passes_and_unrelated_text_fails():
    para = faith(PARAPHRASE)
    assert para.details["sentences"][0]["unsupported_numbers"] == []
    assert para.passed, para.reason
    heavy = faith(HEAVY_PARAPHRASE)
    assert heavy.details["sentences"][0]["unsupported_numbers"] == []
    off = faith("Bananas are a yellow tropical fruit rich in potassium, grown mostly in Ecuador.")
    assert not off.passed and off.value < para.value and off.value < heavy.value
    # the known limit (docs/offline-judge.md): a faithful paraphrase in other words fails,
    # scored about as low as a copied sentence plus an invented one; the fit on people's
    # labels weighs unsupported words, and these words are not the context's
    assert not heavy.passed and abs(heavy.value - faith(ADDED).value) < 1.5


def test_details_carry_probability_contributions_and_confidence():
    s = faith(SWAPPED)
    d = s.details
    assert d["variant"] == "fitted" and set(d["contributions"]) == set(FEATURES)
    assert 0.0 <= d["confidence"] <= 1.0 and isinstance(d["signals_disagree"], bool)
    assert s.value == pytest.approx(10 * d["probability"] * d["features"]["answered"], abs=1e-3)
    assert "confidence" in s.reason


def test_nonanswer_counts_zero_and_similarity_variant_still_runs():
    assert faith("The context does not mention how long syncing takes.").value < 1.0
    old = faith(FAITHFUL, "faithfulness[variant=similarity,t=0.8]")
    assert old.details["variant"] == "similarity" and old.threshold == 7.0


def test_similarity_parameters_without_the_variant_are_refused():
    backend = get_backend("embedding")
    (ref,) = parse_metrics("faithfulness[t=0.8]")
    assert "variant=similarity" in backend.param_error(ref)
    (ref,) = parse_metrics("faithfulness[variant=bogus]")
    assert "variant must be one of default, similarity" in backend.param_error(ref)


def test_verdict_confidence_formula():
    m = J.FittedModel("x", ("a", "b"), (0.0, 0.0), (1.0, 1.0), (2.0, -2.0), 0.0, 0.5)
    agree = m.predict({"a": 1.0, "b": -1.0})  # both push to "faithful": z = 4
    assert agree.probability == pytest.approx(1 / (1 + np.exp(-4)))
    assert agree.confidence == pytest.approx(1 - np.exp(-4)) and not agree.signals_disagree
    split = m.predict({"a": 1.0, "b": 1.0})  # +2 and −2 cancel: p = 0.5, no confidence, flagged
    assert split.probability == pytest.approx(0.5) and split.confidence == 0.0 and split.signals_disagree


def test_shipped_coefficients_match_the_features_and_the_script():
    spec = json.loads((ROOT / "unified/adapters/embedding/offline_judge.json").read_text())
    model = spec["models"]["faithfulness"]
    assert tuple(model["features"]) == FEATURES and spec["script"] == "benchmarks/fit_offline_judge.py"
    assert set(model["auc"]["held_out"]) == {"ares", "summary", "data2txt"}
    assert 0.0 < model["bound"] < 1.0
    # every shipped feature measures unsupported content: each must push towards
    # "unfaithful" (a sign flip would mean an inverted judge)
    coef = dict(zip(model["features"], model["coef"]))
    assert all(coef[f] < 0 for f in ("idf_unsupported", "unsupported_numbers")), coef


def test_bundled_examples_offline_bounds_mean_something():
    """Issue 24 item 7: on the bundled data, context_relevancy passes the rows whose
    contexts are relevant and fails the two with irrelevant ones; answer_relevancy passes
    the README's correct short answer and fails the dodges and "I don't know"."""
    rows = [json.loads(x) for x in (ROOT / "examples/data/rag_examples.jsonl").read_text().splitlines() if x.strip()]
    backend = get_backend("embedding")
    refs = parse_metrics("answer_relevancy,context_relevancy")
    out = {}
    for r in rows:
        expect = r.pop("metadata")["expect"]
        ar, cr = asyncio.run(backend.score(Sample.from_record(r, warn_unknown=False), refs))
        out[r["id"]] = (expect, ar.passed, cr.passed)
    relevant = [cr for e, _, cr in out.values() if e != "irrelevant_contexts"]
    assert sum(relevant) >= 0.9 * len(relevant)
    assert not out["q15"][2] and not out["q24"][2]
    assert not out["q12"][1] and not out["q17"][1]
    good_ar = [ar for e, ar, _ in out.values() if e == "good"]
    assert sum(good_ar) >= 0.9 * len(good_ar)
    paris = Sample(
        user_input="What is the capital of France?",
        response="Paris is the capital of France.",
        retrieved_contexts=["Paris is the capital of France."],
    )
    cheese = paris.model_copy(update={"response": "The moon is made of green cheese."})
    (good,) = asyncio.run(backend.score(paris, parse_metrics("answer_relevancy")))
    (bad,) = asyncio.run(backend.score(cheese, parse_metrics("answer_relevancy")))
    assert good.passed and not bad.passed


def test_bare_verdict_label_abstains_with_one_clear_line():
    """ARES's FEVER rows answer "SUPPORTS"/"REFUTES": nothing for the lexical and token
    signals to check, so the offline judge says so instead of scoring by chance."""
    backend = get_backend("embedding")
    for answer in ("SUPPORTS", "Yes.", "not enough info"):
        sample = Sample(user_input=Q, response=answer, retrieved_contexts=[CONTEXT])
        (s,) = asyncio.run(backend.score(sample, parse_metrics("faithfulness")))
        assert not s.ok and s.value is None and s.details == {"abstained": True}
        assert "bare verdict label" in s.error and repr(answer) in s.error and "\n" not in s.error
    # a one-word answer that states something is still scored
    assert faith("Thirty seconds.").ok


def test_a_false_field_asserted_is_listed_as_denied_and_lowers_the_score():
    """RAGTruth's data-to-text conflicts: "offers outdoor seating" against
    ``OutdoorSeating: False``. Word overlap alone called it supported."""
    record = (
        "name: Finch & Fork\naddress: 31 W Carrillo St\nattributes OutdoorSeating (Outdoor Seating): False\n"
        "attributes WiFi: free\nattributes RestaurantsTakeOut (Restaurants Take Out): True"
    )
    backend = get_backend("embedding")

    def score(response: str):
        sample = Sample(user_input="Describe the business.", response=response, retrieved_contexts=[record])
        (s,) = asyncio.run(backend.score(sample, parse_metrics("faithfulness")))
        assert s.ok, s.error
        return s

    wrong = score("Finch & Fork at 31 W Carrillo St offers free WiFi, take out and outdoor seating.")
    right = score("Finch & Fork at 31 W Carrillo St offers free WiFi and take out, but no outdoor seating.")
    assert wrong.details["sentences"][0]["denied"] == ["outdoor", "seating"]
    assert right.details["sentences"][0]["denied"] == []
    assert wrong.value < right.value - 0.5


def _refit(tmp_path, monkeypatch, intercept_delta: float) -> None:
    """Point the backend at a copy of ``offline_judge.json`` whose faithfulness intercept moved."""
    spec = json.loads(J.COEFFICIENTS.read_text(encoding="utf-8"))
    spec["models"]["faithfulness"]["intercept"] += intercept_delta
    copy = tmp_path / f"offline_judge_{intercept_delta}.json"
    copy.write_text(json.dumps(spec), encoding="utf-8")
    monkeypatch.setattr(J, "COEFFICIENTS", copy)
    for cached in (J.load, J.models):
        cached.cache_clear()


@pytest.fixture
def fresh_model_caches():
    yield
    for cached in (J.load, J.models):  # the shipped model again, for the next test
        cached.cache_clear()


def test_a_refit_offline_model_is_another_configuration(tmp_path, monkeypatch, fresh_model_caches):
    """A package upgrade that refits the offline judge changed every value, but not the
    configuration hash: a resume wrote the new model's values beside the old model's in
    one folder, under one hash, without a word. The model's digest is now part of the
    faithfulness fingerprint (and only of it)."""
    from unified.api import evaluate
    from unified.judge.base import Judges
    from unified.run.fingerprint import config_hash, task_config
    from unified.run.runfolder import RunConfigChanged

    backend = get_backend("embedding", Judges())
    faith, relevancy, similar = parse_metrics("faithfulness,answer_relevancy,faithfulness[variant=similarity]")

    def hashes() -> list[str]:
        return [config_hash(task_config(backend, ref, Judges())) for ref in (faith, relevancy, similar)]

    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"user_input": Q, "response": FAITHFUL, "retrieved_contexts": [CONTEXT]}) + "\n")
    evaluate(rows, "faithfulness", ["embedding"], out=tmp_path / "out", quiet=True, progress=False)
    before = hashes()
    _refit(tmp_path, monkeypatch, 0.5)
    after = hashes()
    assert after[0] != before[0] and after[1:] == before[1:]
    with pytest.raises(RunConfigChanged, match=r"offline_model: \w+ → \w+"):
        evaluate(rows, "faithfulness", ["embedding"], out=tmp_path / "out", quiet=True, progress=False)
