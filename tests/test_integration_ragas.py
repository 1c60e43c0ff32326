"""UnifiedRagasMetric inside ``ragas.evaluate`` (ragas 0.4): our values / 10 in ragas's own
EvaluationResult, ragas's column checks, and a failed job as ragas's error.

The loopback judge is scripted (``judge_answers_integrations``): a grounded answer scores
10, one about zebras 0, one mentioning ``brokenjudge`` fails.
"""

from __future__ import annotations

import math
import re
import warnings

import pytest

pytest.importorskip("ragas", reason="the ragas extra is not installed")

from judge_answers_integrations import grounding_judge
from judge_server import JudgeServer
from ragas import EvaluationDataset, SingleTurnSample
from ragas import evaluate as ragas_evaluate

from unified.api import evaluate
from unified.integrations.ragas import IntegrationError, UnifiedRagasMetric

pytestmark = pytest.mark.ragas

GOOD = SingleTurnSample(
    user_input="What is the capital of France?",
    response="Paris is the capital of France.",
    retrieved_contexts=["Paris is the capital of France.", "The Seine flows through Paris."],
)
BAD = SingleTurnSample(
    user_input="What do zebras eat?",
    response="The moon is made of cheese.",
    retrieved_contexts=["Zebras graze on grass."],
)
BROKEN = SingleTurnSample(user_input="brokenjudge?", response="Anything.", retrieved_contexts=["Text."])


@pytest.fixture
def judge(monkeypatch):
    with JudgeServer(answer_fn=grounding_judge) as srv:
        monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "loopback")
        yield srv


def run(samples, metrics, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ragas.evaluate is deprecated in 0.4
        return ragas_evaluate(EvaluationDataset(samples=samples), metrics=metrics, show_progress=False, **kw)


def test_ragas_evaluate_holds_our_values_over_ten(judge):
    rows = [{"id": f"r{i}", **s.model_dump(exclude_none=True)} for i, s in enumerate([GOOD, BAD])]
    values = {s.sample_id: s.value for s in evaluate(rows, ["faithfulness"], quiet=True, progress=False).iter_scores()}
    ours = [values["r0"], values["r1"]]  # in row order: scores are written as they finish
    result = run([GOOD, BAD], [UnifiedRagasMetric("faithfulness", cache=False)])
    assert result["unified_faithfulness"] == [v / 10 for v in ours] == [1.0, 0.0]
    assert list(result.to_pandas()["unified_faithfulness"]) == [1.0, 0.0]


def test_a_jury_next_to_ragas_own_column(judge):
    metric = UnifiedRagasMetric("faithfulness", backend="native,ragas", name="faith_jury", cache=False)
    result = run([GOOD, BAD], [metric])
    assert result["faith_jury"] == [1.0, 0.0]


def test_ragas_checks_the_columns_our_metric_needs(judge):
    with pytest.raises(ValueError, match="retrieved_contexts"):
        run([SingleTurnSample(user_input="q", response="a")], [UnifiedRagasMetric("faithfulness")])
    assert judge.chat_count == 0


def test_a_failed_job_is_ragas_own_error(judge, caplog):
    metric = UnifiedRagasMetric("faithfulness", cache=False, max_retries=0)
    with pytest.raises(IntegrationError, match="faithfulness on native"):
        run([BROKEN], [metric], raise_exceptions=True)
    result = run([GOOD, BROKEN], [metric])  # ragas's default: log the job's exception, NaN in its place
    values = result["unified_faithfulness"]
    assert values[0] == 1.0 and math.isnan(values[1])
    assert "IntegrationError" in caplog.text and "faithfulness on native" in caplog.text


def test_the_metric_is_no_llm_metric_so_ragas_builds_no_client():
    from ragas.metrics.base import MetricWithLLM

    m = UnifiedRagasMetric("faithfulness")
    assert not isinstance(m, MetricWithLLM) and m.name == "unified_faithfulness"
    # faithfulness needs no question: user_input is an optional column (issue 23 part 4)
    assert m.required_columns == {"SINGLE_TURN": {"response", "retrieved_contexts"}}


def test_the_collections_style_ascore_gives_the_same_value_and_our_reason(judge):
    import asyncio

    metric = UnifiedRagasMetric("faithfulness", cache=False)
    fields = GOOD.model_dump(exclude_none=True)
    result = asyncio.run(metric.ascore(**fields))
    # the synthetic judge's claim count follows the prompt's text; the reason is ours
    assert result.value == 1.0 and re.fullmatch(r"(\d+) of \1 claims supported by the contexts", result.reason)
    assert metric.score(**BAD.model_dump(exclude_none=True)).value == 0.0


def test_the_metric_named_first_is_the_one_scored():
    # ragas's dataclass fields came first in the generated __init__: the metric named as the
    # docs show it went into `_required_columns`, and every such metric scored faithfulness
    ranked = SingleTurnSample(
        user_input="q",
        response="a",
        retrieved_contexts=["x", "y"],
        retrieved_context_ids=["d2", "d1"],
        reference_context_ids=["d1"],
    )
    metrics = [UnifiedRagasMetric("mrr"), UnifiedRagasMetric("precision@2", "native", name="p2")]
    assert [(m.metric, m.name) for m in metrics] == [("mrr", "unified_mrr"), ("precision@2", "p2")]
    result = run([ranked], metrics)
    assert result["unified_mrr"] == [0.5] and result["p2"] == [0.5]
