"""Quickstart: load samples, score the deterministic retrieval metrics (no judge needed)."""

from pathlib import Path

from unified.adapters.native.retrieval import score_retrieval
from unified.data.io import load_samples
from unified.metrics import parse_metric
from unified.scores import aggregate

samples, errors = load_samples(Path(__file__).parent / "data" / "rag_examples.jsonl")
for name in ["precision@3", "recall@3", "mrr", "ndcg@3", "hit_rate@1"]:
    scores = [score_retrieval(s, parse_metric(name)) for s in samples]
    agg = aggregate(scores)
    print(f"{name:12} mean {agg.mean:5.2f}/10  pass rate {agg.pass_rate:.0%}  errors {agg.errors}")

# The same through the runner, with LLM metrics (needs a judge: --base-url/--model or
# UNIFIED_JUDGE_BASE_URL / UNIFIED_JUDGE_MODEL):
# from unified.api import evaluate
# report = evaluate(samples, metrics=["faithfulness", "precision@3", "ndcg@10"],
#                   backends=["native"], out="runs/quick")
