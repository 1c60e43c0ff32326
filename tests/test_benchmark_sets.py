"""The benchmark's set readers: each public format as its authors publish it (small files
written here in that shape), the real copies in ../shared/data (skipped when absent, like
the interop tests), bad rows said one line each, ``--limit``'s balanced choice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from unified.benchmarking import choose, read_sets
from unified.data.io import read_samples
from unified.data.rowerror import RowError
from unified.data.sets import parse_set, read_set

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is absent")


def _read(spec: str) -> tuple[list, list[RowError]]:
    items = list(read_set(parse_set(spec)))
    return [i for i in items if not isinstance(i, RowError)], [i for i in items if isinstance(i, RowError)]


def _faith(samples) -> Counter:
    return Counter(s.metadata["labels"]["faithfulness"] for s in samples)


# ------------------------------------------------------------------ real copies


@needs_shared
def test_ragtruth_redistribution_real_file_counts_match_its_readme():
    ok, bad = _read(f"ragtruth:{SHARED}/labelled/ragtruth/ragtruth_summary.jsonl")
    assert not bad
    assert len(ok) == 900 and _faith(ok) == {1: 659, 0: 241}  # README: 900 responses, 241 with a span
    assert ok[0].id == "ragtruth_summary/15599:gpt-4-0613" and ok[0].metadata["benchmark_set"] == "ragtruth_summary"
    assert ok[0].retrieved_contexts[0].startswith("Blue Bell ice cream")


@needs_shared
def test_ares_tsv_agrees_row_by_row_with_its_converted_copy():
    ok, bad = _read(f"ares:{SHARED}/ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.tsv")
    assert not bad and len(ok) == 111
    converted = {
        s.id: s for s in read_samples(SHARED / "ares" / "LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl")
    }
    assert len(converted) == 111
    for s in ok:
        c = converted[s.id.replace("/", ":", 1)]  # the README: <stem>:<index column>
        assert s.metadata["labels"] == c.metadata["labels"]
        assert s.response == c.response and s.retrieved_contexts == c.retrieved_contexts


@needs_shared
@pytest.mark.parametrize(
    ("rel", "rows", "zeros"),
    [
        ("labelled/begin/test_wow.jsonl", 600, 362),
        ("labelled/wice/test.jsonl", 143, 32),
        ("labelled/summac/summeval_val.jsonl", 100, 37),
    ],
)
def test_own_labelled_jsonl_real_copies(rel, rows, zeros):
    ok, bad = _read(f"jsonl:{SHARED / rel}")
    assert not bad and len(ok) == rows and _faith(ok)[0] == zeros  # the READMEs' tables


# ------------------------------------------------------------------ the authors' shapes


def test_ragtruth_original_pair_keeps_test_split_good_quality(tmp_path):
    (tmp_path / "source_info.jsonl").write_text(
        json.dumps(
            {"source_id": "s1", "task_type": "QA", "source_info": {"question": "Q?", "passages": "P."}, "prompt": "x"}
        )
        + "\n"
        + json.dumps({"source_id": "s2", "task_type": "Summary", "source_info": "News text.", "prompt": "x"})
        + "\n"
    )
    rows = [
        {
            "id": "1",
            "source_id": "s1",
            "model": "m",
            "labels": [],
            "split": "test",
            "quality": "good",
            "response": "A.",
        },
        {
            "id": "2",
            "source_id": "s2",
            "model": "m",
            "labels": [{"start": 0}],
            "split": "test",
            "quality": "good",
            "response": "B.",
        },
        {
            "id": "3",
            "source_id": "s2",
            "model": "m",
            "labels": [],
            "split": "train",
            "quality": "good",
            "response": "C.",
        },
        {
            "id": "4",
            "source_id": "s2",
            "model": "m",
            "labels": [],
            "split": "test",
            "quality": "truncated",
            "response": "D.",
        },
        {
            "id": "5",
            "source_id": "nope",
            "model": "m",
            "labels": [],
            "split": "test",
            "quality": "good",
            "response": "E.",
        },
    ]
    (tmp_path / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok, bad = _read(f"rt=ragtruth:{tmp_path}")
    assert [(s.id, s.metadata["labels"]["faithfulness"], s.user_input) for s in ok] == [
        ("rt/1", 1, "Q?"),
        ("rt/2", 0, "Summarize the following news article."),
    ]
    assert len(bad) == 1 and "source_id nope" in str(bad[0]) and bad[0].row == 5


def test_halueval_gives_a_right_and_a_hallucinated_sample_per_row(tmp_path):
    f = tmp_path / "qa_data.json"
    f.write_text(
        json.dumps({"knowledge": "K.", "question": "Q?", "right_answer": "R", "hallucinated_answer": "H"})
        + "\n"
        + json.dumps({"oops": 1})
        + "\n"
    )
    ok, bad = _read(f"halueval:{f}")
    assert [(s.id, s.response, s.metadata["labels"]["faithfulness"]) for s in ok] == [
        ("qa_data/1:right", "R", 1),
        ("qa_data/1:hallucinated", "H", 0),
    ]
    assert len(bad) == 1 and bad[0].row == 2 and "right_answer" in str(bad[0])


def test_aggrefact_each_dataset_is_a_set_of_its_own(tmp_path):
    f = tmp_path / "llm_aggrefact.csv"
    f.write_text("dataset,doc,claim,label\nAggreFact-CNN,D1,C1,1\nLFQA,D2,C2,0\nLFQA,D3,C3,2\n")
    ok, bad = _read(f"agg=aggrefact:{f}")
    assert [(s.id, s.metadata["benchmark_set"]) for s in ok] == [
        ("agg:AggreFact-CNN/2", "agg:AggreFact-CNN"),
        ("agg:LFQA/3", "agg:LFQA"),
    ]  # the file line
    assert len(bad) == 1 and bad[0].row == 4 and "label '2' is not 0 or 1" in str(bad[0])
    assert {s.metadata["benchmark_set"] for s in read_sets([f"agg=aggrefact:{f}"]).samples} == {
        "agg:AggreFact-CNN",
        "agg:LFQA",
    }


def test_faithbench_csv_and_batch_binarise_by_the_worst_label(tmp_path):
    csv_file = tmp_path / "FaithBench.csv"
    csv_file.write_text(
        "source,summary,LLM,worst-label,best-label\nS,A,m,Benign,Consistent\nS,B,m,Unwanted.Intrinsic,Benign\n"
    )
    ok, _ = _read(f"faithbench:{csv_file}")
    assert [s.metadata["labels"]["faithfulness"] for s in ok] == [1, 0]
    batch = tmp_path / "batch_1.json"
    samples = [
        {"sample_id": 1, "source": "S", "summary": "A", "annotations": []},
        {
            "sample_id": 2,
            "source": "S",
            "summary": "B",
            "annotations": [{"label": ["Benign"]}, {"label": ["Questionable"]}],
        },
    ]
    batch.write_text(json.dumps({"samples": samples}))
    ok, _ = _read(f"faithbench:{tmp_path}")
    assert [(s.id, s.metadata["labels"]["faithfulness"]) for s in ok] == [
        ("FaithBench/batch_1:1", 1),
        ("FaithBench/batch_1:2", 0),
    ] or [(s.id.split("/", 1)[1], s.metadata["labels"]["faithfulness"]) for s in ok] == [
        ("batch_1:1", 1),
        ("batch_1:2", 0),
    ]


def test_summac_object_of_rows(tmp_path):
    f = tmp_path / "summeval.json"
    f.write_text(
        json.dumps(
            {
                "k1": {"document": "D", "claim": "C", "label": 1, "model_name": "M1"},
                "k2": {"document": "D", "claim": "X", "label": 0},
            }
        )
    )
    ok, _ = _read(f"summac:{f}")
    assert [(s.id, s.metadata["labels"]["faithfulness"], s.metadata.get("model_name")) for s in ok] == [
        ("summeval/k1", 1, "M1"),
        ("summeval/k2", 0, None),
    ]


def test_wice_drops_partial_and_splits_pages(tmp_path):
    f = tmp_path / "test.jsonl"
    rows = [
        {
            "label": "supported",
            "claim": "C1",
            "evidence": ["(meta data) TITLE: A", "a1", "(meta data) TITLE: B", "b1"],
            "meta": {"id": "t1"},
        },
        {"label": "partially_supported", "claim": "C2", "evidence": ["x"], "meta": {"id": "t2"}},
        {"label": "not_supported", "claim": "C3", "evidence": ["y"], "meta": {"id": "t3"}},
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok, _ = _read(f"wice:{f}")
    assert [(s.id, s.metadata["labels"]["faithfulness"]) for s in ok] == [("test/t1", 1), ("test/t3", 0)]
    assert ok[0].retrieved_contexts == ["(meta data) TITLE: A\na1", "(meta data) TITLE: B\nb1"]


def test_begin_tsv_reads_unquoted_cells_and_drops_generic(tmp_path):
    f = tmp_path / "begin_dev_wow.tsv"
    head = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
    f.write_text(
        head
        + 't5\twow\t"Hourglass" is a song\thi\t"Hourglass" is a song\tFully attributable\n'
        + "t5\twow\tK\thi\tok\tGeneric\n"
        + "t5\twow\tK\thi\tno\tNot fully attributable\n"
        + "t5\twow\tK\thi\tbad\tMaybe\n"
    )
    ok, bad = _read(f"begin:{f}")
    assert [(s.id, s.metadata["labels"]["faithfulness"], s.response) for s in ok] == [
        ("begin_dev_wow/begin-wow-dev-00001", 1, '"Hourglass" is a song'),
        ("begin_dev_wow/begin-wow-dev-00003", 0, "no"),
    ]
    assert len(bad) == 1 and bad[0].row == 5 and "Maybe" in str(bad[0])


def test_parse_set_names_and_errors():
    assert parse_set("mine=jsonl:/x/a=b.jsonl").name == "mine"
    assert parse_set("jsonl:/x/a=b.jsonl").name == "a=b"
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        parse_set("csv:/x.csv")
    with pytest.raises(ValueError, match="expected FORMAT:PATH"):
        parse_set("ragtruth")


def test_two_sets_of_one_name_are_refused(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text(
        json.dumps({"id": "1", "response": "r", "retrieved_contexts": ["c"], "labels": {"faithfulness": 1}}) + "\n"
    )
    with pytest.raises(ValueError, match="two sets are named 'a'"):
        read_sets([f"jsonl:{f}"], labels=[f])


# ------------------------------------------------------------------ --limit


def _own(tmp_path: Path, n_pass: int, n_fail: int) -> Path:
    f = tmp_path / "own.jsonl"
    rows = [
        {"id": f"p{i}", "response": "r", "retrieved_contexts": ["c"], "labels": {"faithfulness": 1}}
        for i in range(n_pass)
    ]
    rows += [
        {"id": f"f{i}", "response": "r", "retrieved_contexts": ["c"], "labels": {"faithfulness": 0}}
        for i in range(n_fail)
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def test_limit_is_balanced_deterministic_and_fills_from_the_larger_class(tmp_path):
    samples = read_sets([f"jsonl:{_own(tmp_path, 30, 4)}"]).samples
    kept = choose(samples, 10)
    assert _faith(kept) == {0: 4, 1: 6}  # the short class gives all it has
    assert [s.id for s in kept] == [s.id for s in choose(list(reversed(samples)), 10)][::-1]  # order-free choice
    balanced = choose(samples, 7)
    assert _faith(balanced) == {0: 4, 1: 3}  # the fail class gets the odd one
    read = read_sets([f"jsonl:{tmp_path / 'own.jsonl'}"], limit=8)
    assert len(read.samples) == 8 and "8 of 34 rows" in read.notes[0]


# ------------------------------------------------------------------ the shipped subsets


def test_shipped_subsets_read_balanced_and_carry_their_notice():
    read = read_sets(["ares:shipped", "ragtruth:shipped"])
    counts = Counter((s.metadata["benchmark_set"], s.metadata["labels"]["faithfulness"]) for s in read.samples)
    assert counts == {
        ("ares_20", 1): 10,
        ("ares_20", 0): 10,
        ("ragtruth_summary_4", 1): 13,
        ("ragtruth_summary_4", 0): 11,
    }
    assert not read.notes  # no row left out
    notice = (
        Path(__import__("unified.data.sets", fromlist=["x"]).__file__).parent / "shipped" / "NOTICE.md"
    ).read_text()
    assert "Copyright (c) 2023 Particle Media" in notice and "Apache License 2.0" in notice
    with pytest.raises(ValueError, match="no wice subset ships"):
        parse_set("wice:shipped")


@needs_shared
def test_shipped_ares_rows_are_the_originals_byte_for_byte():
    original = (SHARED / "ares" / "LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.tsv").read_bytes().split(b"\n")
    shipped = parse_set("ares:shipped").path.read_bytes().split(b"\n")
    assert shipped[0] == original[0] and len([x for x in shipped if x]) == 21
    assert set(x for x in shipped if x) <= set(original)


def test_rows_without_a_label_for_the_metrics_are_not_paid_for(tmp_path):
    f = tmp_path / "mixed.jsonl"
    rows = [
        {"id": f"r{i}", "response": "r", "retrieved_contexts": ["c"], "labels": {"faithfulness": i % 2}}
        for i in range(4)
    ]
    rows += [
        {"id": "x", "response": "r", "retrieved_contexts": ["c"], "labels": {"context_relevance": 1}},
        {"id": "y", "response": "r", "retrieved_contexts": ["c"]},
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = read_sets([f"jsonl:{f}"])
    assert [s.id for s in read.samples] == ["mixed/r0", "mixed/r1", "mixed/r2", "mixed/r3"]
    assert read.notes == ["mixed: 2 rows carry no label for faithfulness; left out"]
    both = read_sets([f"jsonl:{f}"], metrics=["faithfulness", "context_relevance"])
    assert len(both.samples) == 5
