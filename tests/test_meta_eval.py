"""benchmarks/meta_eval.py: loader, deterministic split, statistics and the printed table,
on a small hand-written labelled JSONL (real files, the real embedding model)."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("meta_eval", REPO / "benchmarks" / "meta_eval.py")
meta_eval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(meta_eval)

CTX = {
    "sync": "Nimbus Notes syncs offline changes within 30 seconds of reconnecting. Attachments over 50 MB download on demand.",
    "trash": "Deleted notes stay in the trash for 30 days. After that they are removed for good.",
}
ROWS = [
    ("How fast do offline changes sync?", "Offline changes sync within 30 seconds of reconnecting.", "sync", [1, 1], 1),
    ("How long do deleted notes stay in the trash?", "Deleted notes stay in the trash for 30 days.", "trash", [1, 1], 1),
    ("Do large attachments download automatically?", "Attachments over 50 MB download on demand.", "sync", [1, 0], 1),
    ("How fast do offline changes sync?", "The context does not mention syncing.", "sync", [0, 0], 0),
    ("How long do deleted notes stay in the trash?", "The moon orbits the Earth every 27 days.", "trash", [0, 0], 0),
    ("Do large attachments download automatically?", "Do large attachments download automatically?", "sync", [0, 1], 0),
    ("When are trashed notes removed?", "Trashed notes are removed for good after 30 days.", "trash", [1, 1], 1),
    ("What happens to notes after 30 days in the trash?", "Bananas are rich in potassium.", "trash", [0, 0], 0),
]


@pytest.fixture
def labelled(tmp_path):
    p = tmp_path / "labelled.jsonl"
    with open(p, "w") as f:
        for i, (q, a, c, faith, rel) in enumerate(ROWS):
            f.write(json.dumps({"id": f"r{i}", "question": q, "answer": a, "contexts": [CTX[c]],
                                "labels": {"faithfulness": faith, "answer_relevance": rel,
                                           "not_a_metric": 1}}) + "\n")
        f.write("{broken json\n")
    return p


def test_loader_split_and_human_ceiling(labelled, capsys):
    rows = meta_eval.load_labelled(labelled)
    assert len(rows) == len(ROWS)  # the broken line is skipped with a message
    assert "skipped" in capsys.readouterr().err
    assert rows[0].labels == {"faithfulness": 1, "answer_relevancy": 1}
    assert rows[2].second == {"faithfulness": 0}
    halves = [r.half for r in rows]
    assert halves == [r.half for r in meta_eval.load_labelled(labelled)]  # deterministic
    assert set(halves) <= {"tune", "test"}
    ceil = meta_eval.human_ceiling(rows, "faithfulness")
    assert ceil["n"] == 8 and ceil["agreement"] == pytest.approx(6 / 8)


def test_evaluate_half_statistics():
    e = meta_eval.evaluate_half([9.0, 8.0, 2.0, None, 1.0], [1, 1, 0, 1, 0], 5.0, n_boot=200, seed=0)
    assert e["n"] == 4 and e["failed"] == 1 and e["negatives"] == 2
    assert e["auc"] == 1.0 and e["balanced_accuracy"] == 1.0
    assert e["auc_ci"] is None or (0.0 <= e["auc_ci"][0] <= e["auc_ci"][1] <= 1.0)
    assert meta_eval.best_threshold([9.0, 8.0, 2.0, 1.0], [1, 1, 0, 0]) in [x / 2 for x in range(5, 17)]


@pytest.mark.local
@pytest.mark.slow
def test_main_prints_auc_table_for_embedding_backend(labelled, tmp_path, capsys):
    out = tmp_path / "meta.json"
    assert meta_eval.main(["--data", str(labelled), "--backends", "embedding", "--n-boot", "100",
                           "--tune", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "human-vs-human ceiling for faithfulness: agreement 0.75" in text
    assert "tuned faithfulness" in text
    res = json.loads(out.read_text())
    fa = res["backends"]["embedding"]["faithfulness"]
    n = fa["tune"]["n"] + fa["test"]["n"]
    assert n == len(ROWS)
    # on hand-made clear cases the heuristic must separate faithful from not, overall
    for half in ("tune", "test"):
        if fa[half]["auc"] is not None:
            assert fa[half]["auc"] >= 0.5


@pytest.mark.local
def test_llm_backend_on_loopback_says_it_only_proves_plumbing(labelled, judge_server, capsys):
    assert meta_eval.main(["--data", str(labelled), "--backends", "native", "--n-boot", "50",
                           "--base-url", judge_server.base_url, "--model", "fake-judge"]) == 0
    text = capsys.readouterr().out
    assert "only prove the plumbing" in text
    assert "faithfulness" in text and "answer_relevancy" in text
    assert judge_server.chat_count > 0
