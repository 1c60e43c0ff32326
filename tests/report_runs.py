"""Real run folders for the report tests, made by ``unified.api.evaluate``: a two-backend
retrieval run (no judge needed) and a native / ragas / deepeval compare against the
loopback judge with awkward sample ids and samples that lack a field."""

from __future__ import annotations

import json
from pathlib import Path

from unified.adapters import Backend
from unified.api import evaluate
from unified.judge.base import Judges
from unified.report import Report
from unified.scores import Score

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
# ids a deep link must survive: a space, a slash, a hash, a quote, non-ASCII
ODD_IDS = {"q02": "q 02/ä#x'", "q03": "<b>q03</b>"}


class LastRelevant(Backend):
    """A second retrieval backend: reciprocal rank of the *last* relevant id (so it
    disagrees with native's mrr on some samples); judges' ratings in its details."""

    name = "lastrel"
    metrics = frozenset({"mrr", "precision_at_k"})

    async def score(self, sample, metrics):
        rel = set(sample.relevant_ids or [])
        ranks = [i + 1 for i, d in enumerate(sample.retrieved_ids or []) if d in rel]
        return [
            Score.from_raw(
                m.name,
                self.name,
                sample.id,
                1.0 / ranks[-1] if ranks else 0.0,
                threshold=5.0,
                reason=f"last relevant rank {ranks[-1] if ranks else None}",
                details={"judge_a": {"rating": 2}, "judge_b": {"rating": 1}},
            )
            for m in metrics
        ]


def rows(n: int | None = None) -> list[dict]:
    return [json.loads(x) for x in DATA.read_text().splitlines()[:n]]


def two_backend_run(out: Path) -> Report:
    """native and ``LastRelevant`` on mrr and precision@3 over the example data, plus
    two samples without retrieved ids (so each backend has failed tasks)."""
    data = rows()
    for r in data[-2:]:
        r.pop("retrieved_ids")
    path = out / "data.jsonl"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    return evaluate(path, "mrr,precision@3", ["native", LastRelevant()], judges=Judges(), out=out / "run", quiet=True)


def three_backend_data(path: Path, n: int = 8) -> Path:
    """The first ``n`` example rows, two with awkward ids, three without a reference."""
    data = rows(n)
    for r in data:
        r["id"] = ODD_IDS.get(r["id"], r["id"])
    for r in data[-3:]:
        r.pop("reference")
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
    return path


def three_backend_run(out: Path, base_url: str) -> Report:
    """native, ragas and deepeval on faithfulness and context_recall against the loopback
    judge at ``base_url`` (the cache in the run folder)."""
    from unified.judge import EmbeddingConfig, JudgeConfig, build_judges

    out.mkdir(parents=True, exist_ok=True)
    data = three_backend_data(out / "data.jsonl")
    judges = build_judges(
        JudgeConfig(base_url=base_url, model="fake", max_retries=0),
        embedding=EmbeddingConfig(kind="openai", base_url=base_url, model="fake-embed", max_retries=0),
        cache_path=out / "cache.sqlite",
    )
    return evaluate(
        data, "faithfulness,context_recall", ["native", "ragas", "deepeval"], judges=judges, out=out / "run", quiet=True
    )
