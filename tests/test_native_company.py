"""A native value does not depend on the company it keeps (issue 39, item 3).

On the loopback judge, without a judge cache (every request reaches the server): a
metric scored alone is asked exactly the prompts its steps are asked beside the other
core metrics, so it gets the same value; and ``--dry-run``'s estimate is what the server
received, per sample and per metric, for single metrics and the full set, dual and
single judge. The server's answers are a pure function of the request, so another
prompt gives another answer — the fused calls once asked a metric alone a smaller
prompt, and faithfulness moved from 0 to 5 when context_recall joined. Plumbing only,
never evidence of judgment quality."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from unified.adapters import estimate_calls
from unified.adapters.native import NativeBackend
from unified.data.io import read_samples
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.metrics import parse_metrics
from unified.sample import Sample

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "rag_examples.jsonl"
CORE = ["faithfulness", "answer_relevancy", "context_relevancy", "context_recall", "context_precision"]
# the other metrics that share the core's steps (the verification, the claim extractions)
SHARING = ["hallucination", "answer_correctness"]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-company")


def samples() -> list[Sample]:
    """Three example rows with every field, the same without a reference (no reference
    section, no usefulness) and without a question (context_recall cannot run: no
    reference section either, though the reference is there)."""
    rows = list(read_samples(DATA))[:3]
    assert all(s.has("reference") and s.has("user_input") for s in rows)
    return [
        *rows,
        *(s.model_copy(update={"reference": None, "id": f"{s.id}-no-reference"}) for s in rows),
        *(s.model_copy(update={"user_input": None, "id": f"{s.id}-no-question"}) for s in rows),
    ]


def _judges(srv, single: bool):
    return build_judges(  # no cache_path: no judge cache
        JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
        embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed", max_retries=0),
        single_judge=single,
    )


def _prompt(body: dict) -> tuple[str, str]:
    """(the step's answer schema without its judge letter, the request's full text)."""
    schema = body["response_format"]["json_schema"]["name"]
    return re.sub(r"[AB]$", "", schema), json.dumps([body["messages"], body["response_format"]], sort_keys=True)


async def _ask(srv, backend, sample, names):
    srv.reset_counts()
    scores = await backend.score(sample, parse_metrics(",".join(names)))
    return {s.metric: s for s in scores}, [_prompt(b) for b in srv.requests if "messages" in b]


@pytest.mark.parametrize("single", [False, True], ids=["dual", "single"])
async def test_a_metric_alone_is_asked_and_scores_as_beside_the_core_metrics(single, judge_server):
    backend = NativeBackend(_judges(judge_server, single))
    scored = 0
    for sample in samples():
        for metric in CORE + SHARING:
            # last in the set: the metric owns none of the steps it shares
            company = [m for m in CORE if m != metric] + [metric]
            beside, prompts_beside = await _ask(judge_server, backend, sample, company)
            alone, prompts_alone = await _ask(judge_server, backend, sample, [metric])
            got, want = alone[metric], beside[metric]
            assert (got.value, got.error) == (want.value, want.error), (sample.id, metric)
            # the prompts of its steps, exactly: every request of the kinds it asks, beside the others
            kinds = {kind for kind, _ in prompts_alone}
            asked_beside = Counter(p for p in prompts_beside if p[0] in kinds)
            assert Counter(prompts_alone) == asked_beside, (sample.id, metric)
            scored += got.value is not None
    assert scored >= 3 * len(CORE + SHARING)  # the rows with every field score every metric


def _estimate(sample: Sample, names: list[str], single: bool) -> list[tuple[int, int]]:
    rows = estimate_calls("native", [sample], parse_metrics(",".join(names)), single_judge=single)
    return [(r["calls"], r["embedding_calls"]) for r in rows]


@pytest.mark.parametrize("single", [False, True], ids=["dual", "single"])
async def test_the_estimate_is_what_the_judge_receives_per_sample_and_metric(single, judge_server):
    backend = NativeBackend(_judges(judge_server, single))
    for sample in samples():
        for names in [[m] for m in CORE + SHARING] + [CORE, CORE + SHARING, SHARING + CORE]:
            judge_server.reset_counts()
            scores = await backend.score(sample, parse_metrics(",".join(names)))
            billed = [(s.cost.calls, s.cost.embedding_calls) for s in scores]
            assert _estimate(sample, names, single) == billed, (sample.id, names)
            sent = (judge_server.chat_count, judge_server.embedding_count)
            assert (sum(c for c, _ in billed), sum(e for _, e in billed)) == sent, (sample.id, names)


def test_the_estimate_of_a_metric_alone_includes_the_extraction_its_verification_asks():
    full, no_reference = samples()[0], samples()[3]
    # response claims + reference claims + verification A/B
    assert _estimate(full, ["faithfulness"], False) == [(4, 0)]
    assert _estimate(full, ["context_recall"], True) == [(3, 0)]
    assert _estimate(no_reference, ["faithfulness"], False) == [(3, 0)]
    assert _estimate(no_reference, ["context_recall"], False) == [(0, 0)]  # fails before any call
    assert _estimate(full, CORE, False) == [(3, 0), (2, 1), (2, 0), (1, 0), (0, 0)]
    assert _estimate(full, CORE, True) == [(2, 0), (1, 1), (1, 0), (1, 0), (0, 0)]
