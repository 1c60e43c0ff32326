"""benchmarks/meta_eval.py: loader, deterministic split, statistics and the printed table,
on a small hand-written labelled JSONL (real files, the real embedding model)."""

import json
from pathlib import Path

import pytest
from support import load_benchmark

REPO = Path(__file__).resolve().parent.parent
meta_eval = load_benchmark("meta_eval")

CTX = {
    "sync": "Nimbus Notes syncs offline changes within 30 seconds of reconnecting. Attachments over 50 MB download on demand.",
    "trash": "Deleted notes stay in the trash for 30 days. After that they are removed for good.",
}
ROWS = [
    ("How fast do offline changes sync?", "Offline changes sync within 30 seconds of reconnecting.", "sync", [1, 1], 1),
    (
        "How long do deleted notes stay in the trash?",
        "Deleted notes stay in the trash for 30 days.",
        "trash",
        [1, 1],
        1,
    ),
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
            f.write(
                json.dumps(
                    {
                        "id": f"r{i}",
                        "question": q,
                        "answer": a,
                        "contexts": [CTX[c]],
                        "labels": {"faithfulness": faith, "answer_relevance": rel, "not_a_metric": 1},
                    }
                )
                + "\n"
            )
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
    assert (
        meta_eval.main(
            ["--data", str(labelled), "--backends", "embedding", "--n-boot", "100", "--tune", "--json", str(out)]
        )
        == 0
    )
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
    assert (
        meta_eval.main(
            [
                "--data",
                str(labelled),
                "--backends",
                "native",
                "--n-boot",
                "50",
                "--base-url",
                judge_server.base_url,
                "--model",
                "fake-judge",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "only prove the plumbing" in text
    assert "faithfulness" in text and "answer_relevancy" in text
    assert judge_server.chat_count > 0


# ---------------------------------------------------------------- --data and the unseen sets

SHARED = REPO.parent / "shared" / "data"  # the default meta_eval looks for


def test_absent_data_is_said_plainly_and_exits_2(tmp_path, capsys, monkeypatch):
    assert meta_eval.main(["--data", str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err
    assert f"no labelled data at {tmp_path / 'absent'}" in err and "given with --data" in err
    monkeypatch.setattr(meta_eval, "DEFAULT_DATA", tmp_path / "no-shared-here")
    assert meta_eval.main([]) == 2
    err = capsys.readouterr().err
    assert "no-shared-here" in err and "the default, ../shared/data" in err and "pass --data" in err


def _shared_like(root: Path) -> Path:
    """A folder laid out like the shared data folder, a few rows per file, in each
    project's own format (values written for the test)."""
    (root / "ares").mkdir(parents=True)
    with open(root / "ares" / "LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl", "w") as f:
        for i, (q, a, c, faith, rel) in enumerate(ROWS):
            f.write(
                json.dumps(
                    {
                        "id": f"a{i}",
                        "user_input": q,
                        "response": a,
                        "retrieved_contexts": [CTX[c]],
                        "labels": {"faithfulness": faith[0], "answer_relevance": rel},
                    }
                )
                + "\n"
            )
    (root / "interop" / "ares").mkdir(parents=True)
    (root / "interop" / "ares" / "nq_few_shot_prompt_for_judge_scoring.tsv").write_text(
        "Query\tDocument\tAnswer\tContext_Relevance_Label\tAnswer_Relevance_Label\tAnswer_Faithfulness_Label\n"
        f"how long do trashed notes stay\t{CTX['trash']}\t30 days\t[[Yes]]\t[[Yes]]\t[[Yes]]\n"
        f"how long do trashed notes stay\t{CTX['trash']}\t90 days\t[[Yes]]\t[[No]]\t[[No]]\n"
        f"how fast does sync run\t{CTX['trash']}\tBananas\t[[No]]\t[[No]]\t[[No]]\n"
    )
    (root / "interop" / "trulens").mkdir(parents=True)
    (root / "interop" / "trulens" / "context_relevance_golden_set.json").write_text(
        json.dumps(
            [
                {"query": "How fast do changes sync?", "expected_response": CTX["sync"], "expected_score": "0.9"},
                {"query": "How fast do changes sync?", "expected_response": CTX["trash"], "expected_score": "0.2"},
                {"query": "How long is the trash kept?", "expected_response": CTX["trash"], "expected_score": 0.5},
            ]
        )
    )
    (root / "interop" / "dingo").mkdir(parents=True)
    (root / "interop" / "dingo" / "hallucination_test.jsonl").write_text(
        "".join(
            json.dumps({"data_id": str(i), "prompt": "How long?", "content": a, "context": [CTX["trash"]]}) + "\n"
            for i, a in ((1, "Notes stay 90 days."), (2, "Notes stay 30 days."), (3, "Notes stay forever."))
        )
    )
    return root


def test_shared_like_folder_gives_in_domain_halves_and_unseen_sets(tmp_path):
    rows, read = meta_eval.load_data(_shared_like(tmp_path / "data"))
    assert read == [
        "ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl",
        "interop/ares/nq_few_shot_prompt_for_judge_scoring.tsv",
        "interop/trulens/context_relevance_golden_set.json",
        "interop/dingo/hallucination_test.jsonl",
    ]
    by = {}
    for r in rows:
        by.setdefault(r.group, []).append(r)
    assert len(by["tune"]) + len(by["test"]) == len(ROWS)
    assert (len(by["nq"]), len(by["trulens"]), len(by["dingo"])) == (3, 3, 3)
    nq = by["nq"]
    assert [r.labels for r in nq] == [
        {"context_relevancy": 1, "answer_relevancy": 1, "faithfulness": 1},
        {"context_relevancy": 1, "answer_relevancy": 0, "faithfulness": 0},
        {"context_relevancy": 0, "answer_relevancy": 0, "faithfulness": 0},
    ]
    assert nq[1].sample.response == "90 days" and nq[1].sample.retrieved_contexts == [CTX["trash"]]
    # TruLens: a graded score, relevant when >= 0.5; the passage is the retrieved context
    assert [r.labels for r in by["trulens"]] == [{"context_relevancy": v} for v in (1, 0, 1)]
    assert by["trulens"][0].sample.retrieved_contexts == [CTX["sync"]] and by["trulens"][0].sample.response is None
    # Dingo's file has no labels: rows 1 and 3 are its hallucinations by design
    assert [r.labels["faithfulness"] for r in by["dingo"]] == [0, 1, 0]
    groups = meta_eval.groups_of(rows)
    assert list(groups) == ["tune", "test", "nq", "trulens", "dingo", "unseen"]
    assert sorted(groups["unseen"]) == sorted(groups["nq"] + groups["trulens"] + groups["dingo"])


def test_paired_auc_difference_on_known_values():
    labels = [1, 1, 0, 0]
    d = meta_eval.paired_auc_difference([9.0, 8.0, 2.0, None], [2.0, 8.0, 9.0, 1.0], [1, 1, 0, 0], 200, 0)
    assert d["n"] == 3 and d["delta_auc"] == pytest.approx(1.0 - 0.0)  # rows with both scores only
    same = meta_eval.paired_auc_difference([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], labels, 200, 0)
    assert same["delta_auc"] == 0.0 and same["ci"] == [0.0, 0.0]


@pytest.mark.skipif(not (SHARED / "interop").exists(), reason="../shared/data/interop not present")
def test_the_shared_data_folder_loads_as_documented():
    rows, read = meta_eval.load_data(SHARED)
    groups = {g: len(ix) for g, ix in meta_eval.groups_of(rows).items()}
    assert groups == {"tune": 59, "test": 52, "nq": 7, "fever": 7, "trulens": 32, "dingo": 3, "unseen": 49}
    faith = [r.labels["faithfulness"] for r in rows if r.group == "nq"]
    assert faith == [1, 1, 1, 0, 0, 0, 0]  # [[Yes]] x3 then [[No]] x4 in ARES's NQ file


@pytest.mark.local
def test_main_on_a_folder_reports_unseen_sets_and_the_lexical_difference(tmp_path, capsys):
    out = tmp_path / "meta.json"
    assert (
        meta_eval.main(
            [
                "--data",
                str(_shared_like(tmp_path / "data")),
                "--backends",
                "embedding",
                "--n-boot",
                "50",
                "--lexical-w",
                "1",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "unseen, never tuned on" in text and "Δ AUC faithfulness - faithfulness[w=0]" in text
    res = json.loads(out.read_text())
    emb = res["backends"]["embedding"]
    assert emb["faithfulness"]["params"]["w"] == 1.0 and "w" not in emb["faithfulness[w=0]"]["params"]
    assert emb["faithfulness"]["nq"]["n"] == 3 and emb["faithfulness"]["dingo"]["n"] == 3
    assert emb["context_relevancy"]["trulens"]["n"] == 3
    # the unseen 90-days / forever answers carry a term in no context: w = 1 ranks them lower
    dingo = res["deltas"]["embedding"]["faithfulness - faithfulness[w=0]"]["dingo"]
    assert dingo["n"] == 3 and dingo["delta_auc"] is not None and dingo["delta_auc"] >= 0
