"""benchmarks/nli_candidate.py and fit_offline_judge's ``--merge``: the premises chosen for
each response sentence, the per-response aggregation, and the join of externally computed
candidates to the fit's rows (a missing response stops the run, never a silent subset)."""

import json

import numpy as np
import pytest
from support import load_benchmark

fit = load_benchmark("fit_offline_judge")
nli = load_benchmark("nli_candidate")

CONTEXT = (
    "Nimbus Notes keeps a full copy of every notebook on the device. Changes made offline are queued "
    "and synced within 30 seconds of the device reconnecting. The Team plan costs $10 per user per month."
)


def _rows(n: int, group: str) -> list[dict]:
    return [{"contexts": [CONTEXT], "response": f"answer {i}", "y": i % 2, "group": f"{group}{i}"} for i in range(n)]


def test_merge_joins_by_response_in_row_order(tmp_path):
    sets = {"ares": _rows(3, "a"), "summary": _rows(2, "s"), "data2txt": _rows(2, "d")}
    C = {k: [{"idf_unsupported": float(i)} for i in range(len(rows))] for k, rows in sets.items()}
    # written in reverse order: the join must follow the keys, not the file's order
    extra = {fit._key(r): {"nli_mean": 10.0 + i} for rows in sets.values() for i, r in enumerate(rows)}
    path = tmp_path / "nli.json"
    path.write_text(json.dumps({"meta": {}, "rows": dict(reversed(list(extra.items())))}))
    out = fit.merge_candidates(C, sets, path)
    assert [c["nli_mean"] for c in out["ares"]] == [10.0, 11.0, 12.0]
    assert [c["idf_unsupported"] for c in out["ares"]] == [0.0, 1.0, 2.0]
    assert set(out["summary"][1]) == {"idf_unsupported", "nli_mean"}


def test_merge_refuses_a_file_that_lacks_a_response(tmp_path):
    sets = {"ares": _rows(3, "a"), "summary": _rows(2, "s"), "data2txt": _rows(2, "d")}
    C = {k: [{} for _ in rows] for k, rows in sets.items()}
    rows = {fit._key(r): {"nli_mean": 1.0} for rs in sets.values() for r in rs}
    del rows[fit._key(sets["summary"][1])]
    path = tmp_path / "nli.json"
    path.write_text(json.dumps({"rows": rows}))
    with pytest.raises(SystemExit, match=r"1 of 2 summary responses missing \(first: s1:"):
        fit.merge_candidates(C, sets, path)


def test_windows_are_the_best_aligned_sentences_with_their_neighbours():
    per_ctx = [["a0", "a1", "a2", "a3"], ["b0", "b1"]]
    flat = [(ci, si) for ci, ss in enumerate(per_ctx) for si in range(len(ss))]
    vecs = np.eye(6)
    query = np.array([0.0, 0.0, 0.9, 0.0, 0.0, 0.5])  # best a2, then b1
    assert nli.windows(query, flat, vecs, per_ctx, k=2, radius=1) == ["a1 a2 a3", "b0 b1"]
    assert nli.windows(query, flat, vecs, per_ctx, k=1, radius=0) == ["a2"]
    # two anchors whose windows coincide give one premise, not the same pair twice
    assert nli.windows(np.array([0.0, 0.0, 0.0, 0.0, 0.9, 0.8]), flat, vecs, per_ctx, k=2, radius=1) == ["b0 b1"]


class NumbersModel:
    """A pair model by rule: supported when every number of the hypothesis is in the premise
    (the aggregation under test does not depend on how a pair is judged)."""

    def __init__(self):
        self.seen: list[tuple[str, str]] = []

    def prob(self, premise: str, hypothesis: str) -> float:
        self.seen.append((premise, hypothesis))
        nums = [w.strip(".") for w in hypothesis.split() if w.strip(".$").isdigit()]
        return 1.0 if all(n in premise for n in nums) else 0.0


@pytest.mark.local
def test_features_aggregate_the_best_premise_per_sentence():
    model = NumbersModel()
    row = {
        "contexts": [CONTEXT],
        "response": "Changes made offline sync within 30 seconds. The Team plan costs 12 dollars per user.",
    }
    f = nli.features(row, model, k=2, radius=0)
    assert f == {"nli_mean": 0.5, "nli_min": 0.0, "nli_low": 0.5}
    # the first sentence's premises include the sync sentence (its best cosine match)
    assert any("within 30 seconds" in p for p, h in model.seen if h.startswith("Changes"))
