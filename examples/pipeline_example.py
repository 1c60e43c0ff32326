"""Evaluate a small RAG system end to end, offline, and compare top-3 with top-5 retrieval.

    python examples/pipeline_example.py [--out runs/pipeline_example]

The "system": BM25 retrieval (the ``rank_bm25`` package) over ``examples/data/corpus.jsonl``
and a template generator that answers with the first sentence of the best-ranked context.
Both settings run as ONE evaluation into one run folder: sample ids are prefixed with the
setting (``top3:q01``, ``top5:q01``), so the report holds both and the table below
compares them metric by metric. Deterministic retrieval metrics run on the ``native``
backend, the heuristics on the offline ``embedding`` backend: no key, no network.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
from pathlib import Path

from rank_bm25 import BM25Okapi

from unified.data.pipeline import build_samples
from unified.text import split_sentences

DATA = Path(__file__).resolve().parent / "data"
METRICS = "precision,recall,mrr,ndcg,faithfulness,answer_relevancy,context_relevancy,context_precision,context_recall"


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class BM25Retriever:
    """BM25 (Okapi, rank_bm25 defaults k1=1.5, b=0.75) over title + text of each document."""

    def __init__(self, corpus_path: Path = DATA / "corpus.jsonl", k: int = 3):
        self.docs = [json.loads(line) for line in corpus_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        self.bm25 = BM25Okapi([_tokens(d["title"] + " " + d["text"]) for d in self.docs])
        self.k = k

    def __call__(self, question: str) -> list[tuple[str, str]]:
        scores = self.bm25.get_scores(_tokens(question))
        order = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))[: self.k]
        return [(self.docs[i]["id"], self.docs[i]["text"]) for i in order]


def template_generator(question: str, contexts: list[str]) -> str:
    """A stand-in for an LLM: the first sentence of the top context, phrased as an answer."""
    if not contexts:
        return "I could not find this in the documents."
    first = (split_sentences(contexts[0]) or [contexts[0]])[0]
    return f"According to the documentation, {first[0].lower()}{first[1:]}"


def load_questions(path: Path = DATA / "questions.jsonl") -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def run(out: Path, quiet: bool = False):
    from unified.api import aevaluate

    rows = load_questions()
    questions = [r["user_input"] for r in rows]
    samples = []
    for k in (3, 5):
        samples += await build_samples(
            questions,
            BM25Retriever(k=k),
            template_generator,
            references=[r.get("reference") for r in rows],
            relevant_ids=[r.get("relevant_ids") for r in rows],
            ids=[f"top{k}:{r['id']}" for r in rows],
        )
    report = await aevaluate(
        samples, METRICS, ("native", "embedding"), out=out, resume=False, progress=False, quiet=True
    )
    table = compare(report)
    if not quiet:
        print(f"{'metric':20s} {'backend':10s} {'top-3':>7s} {'top-5':>7s}")
        for (metric, backend), v in table.items():
            print(f"{metric:20s} {backend:10s} {v.get('top3', float('nan')):7.2f} {v.get('top5', float('nan')):7.2f}")
        print(f"run folder: {out} (scores.jsonl, summary.json, report.html)")
    return report, table


def compare(report) -> dict[tuple[str, str], dict[str, float]]:
    """Mean 0–10 value per (metric, backend) and setting (the sample id's prefix)."""
    groups: dict[tuple[str, str], dict[str, list[float]]] = {}
    for s in report.iter_scores():
        if s.ok:
            setting = s.sample_id.split(":", 1)[0]
            groups.setdefault((s.metric, s.backend), {}).setdefault(setting, []).append(s.value)
    return {key: {k: statistics.fmean(v) for k, v in by.items()} for key, by in groups.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description="BM25 top-3 vs top-5 over the example corpus")
    ap.add_argument("--out", default="runs/pipeline_example")
    args = ap.parse_args()
    asyncio.run(run(Path(args.out)))


if __name__ == "__main__":
    main()
