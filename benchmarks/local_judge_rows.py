"""Labelled rows for the local-judge benchmarks (``local_judge_speed.py``,
``local_judge_agreement.py``): RAGTruth summaries, RAGTruth data-to-text and ARES, each
row a sample plus a human label ``faithful`` (1) or not (0).

RAGTruth (``labelled/ragtruth/``, one line per source with several model responses and
their human hallucination spans): a response is faithful when annotators marked no span.
RAGTruth has no user question; its responses answered a task instruction, which becomes
``user_input`` here (``TASK``) so that frameworks that require a question can run on the
same rows. The source is the one retrieved context (data-to-text: its JSON text).

Selection, deterministic and label-balanced, in file order: only contexts of at most
``MAX_CHARS`` characters (a 1.5B model on two shared cores reads about 40 tokens/s, and
n_ctx stays 4096); RAGTruth: the first sources that have both a faithful and a
hallucinated response give one of each (faithful first); ARES (``ares/…Filtered.jsonl``):
rows alternating faithfulness labels 1 and 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"  # else pass --data
TASK = {
    "summary": "Summarize the following news article.",
    "data2txt": "Write an objective overview of the business described by the structured "
    "data (JSON) below, based only on that data.",
}
FILES = {"summary": "labelled/ragtruth/ragtruth_summary.jsonl", "data2txt": "labelled/ragtruth/ragtruth_data2txt.jsonl"}
MAX_CHARS = 3000
ARES = "ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl"


def _spans(labels: Any) -> list:
    if isinstance(labels, str):  # RAGTruth sometimes serialises the span list
        labels = json.loads(labels or "[]")
    return list(labels or [])


def ragtruth_rows(root: Path, kind: str, n: int) -> Iterator[dict[str, Any]]:
    """``n`` rows of one RAGTruth set: per source, one faithful and one hallucinated response."""
    made = 0
    with (root / FILES[kind]).open(encoding="utf-8") as f:
        for line in f:
            src = json.loads(line)
            text = src["source"] if isinstance(src["source"], str) else json.dumps(src["source"])
            by_label: dict[int, dict] = {}
            for r in src["responses"]:
                by_label.setdefault(0 if _spans(r["labels"]) else 1, r)
            if len(by_label) < 2 or len(text) > MAX_CHARS:
                continue
            for label in (1, 0):
                if made >= n:
                    return
                r = by_label[label]
                made += 1
                yield {
                    "id": f"ragtruth-{kind}:{src['source_id']}:{r['model']}",
                    "user_input": TASK[kind],
                    "response": r["response"],
                    "retrieved_contexts": [text],
                    "labels": {"faithfulness": label},
                    "set": f"ragtruth-{kind}",
                }


def ares_rows(root: Path, n: int) -> Iterator[dict[str, Any]]:
    """``n`` ARES rows alternating faithfulness labels 1, 0, 1, …"""
    rows = [json.loads(line) for line in (root / ARES).open(encoding="utf-8")]
    pools = {
        lab: [
            r
            for r in rows
            if r["labels"]["faithfulness"] == lab and sum(map(len, r["retrieved_contexts"])) <= MAX_CHARS
        ]
        for lab in (1, 0)
    }
    for i in range(n):
        pool = pools[1 - i % 2]
        if not pool:
            return
        r = pool.pop(0)
        yield {
            "id": r["id"],
            "user_input": r["user_input"],
            "response": r["response"],
            "retrieved_contexts": r["retrieved_contexts"],
            "labels": {"faithfulness": r["labels"]["faithfulness"]},
            "set": "ares",
        }


def labelled_rows(
    root: Path = DATA, per_set: int = 4, sets: tuple[str, ...] = ("summary", "data2txt", "ares")
) -> list[dict[str, Any]]:
    """``per_set`` rows from each set, interleaved set by set (so the first k rows mix sets)."""
    chunks = [list(ares_rows(root, per_set)) if s == "ares" else list(ragtruth_rows(root, s, per_set)) for s in sets]
    out = []
    for i in range(max(len(c) for c in chunks)):
        out.extend(c[i] for c in chunks if i < len(c))
    return out


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    """Rows as the CLI reads them (``labels`` stays: ``--label faithfulness`` can use it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({k: v for k, v in r.items() if k != "set"}, ensure_ascii=False) + "\n")
    return path
