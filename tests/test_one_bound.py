"""One bound, one meaning (issue 39): ``metric[threshold=X]`` is the pass bound on 0–10 of
every backend — ``Score.threshold == X`` and ``passed == (value ≥ X)`` on every task, none
failing over the parameter — and a framework that decides pass/fail itself is given the
same bound on its own scale. The backend list is the registry's, not a copy of it."""

from __future__ import annotations

import pytest
from judge_server import JudgeServer, framework_answers

from unified.adapters import (
    Backend,
    available,
    backend_info,
    builtin_backends,
    get_backend,
    implemented_metrics,
    registered_backend,
)
from unified.api import evaluate
from unified.judge import JudgeConfig, build_judges
from unified.metrics import parse_metric
from unified.sample import Sample
from unified.scores import Score, raw_bound

SAMPLES = [
    Sample(
        id=f"s{i}",
        user_input="When was the Eiffel Tower built?",
        response=response,
        retrieved_contexts=["The Eiffel Tower was built from 1887 to 1889.", "Paris is the capital of France."],
        reference="It was built from 1887 to 1889.",
    )
    for i, response in enumerate(["It was built from 1887 to 1889.", "It was built in 1920 by zebras."])
]


def _serving(metric: str) -> list[str]:
    return [b for b in builtin_backends() if metric in implemented_metrics(b) and available(backend_info(b))]


@pytest.fixture
def judge():
    with JudgeServer(answer_fn=framework_answers) as srv:
        yield srv


@pytest.mark.slow
@pytest.mark.parametrize("backend", _serving("faithfulness"))
def test_a_bracket_bound_is_every_backends_bound(backend, judge, tmp_path):
    report = evaluate(
        SAMPLES,
        ["faithfulness[threshold=8]"],
        [backend],
        judge={"base_url": judge.base_url, "model": "fake", "max_retries": 0},
        embedding={"kind": "openai", "base_url": judge.base_url, "model": "fake-embed"}
        if backend_info(backend).uses_judges
        else None,
        out=tmp_path / backend,
        quiet=True,
    )
    scores = list(report.iter_scores())
    assert len(scores) == len(SAMPLES)
    for s in scores:
        assert s.error is None, s.error  # no backend fails over the parameter
        assert s.threshold == 8.0
        assert s.passed == (s.value >= 8.0)
        if "deepeval_success" in s.details:  # deepeval's own verdict, at 0.8 on its scale
            assert s.details["deepeval_success"] == s.passed


@pytest.mark.parametrize("backend", [b for b in builtin_backends() if backend_info(b).table])
def test_threshold_is_accepted_and_never_passed_to_the_framework(backend):
    if not available(backend_info(backend)):
        pytest.skip(f"{backend_info(backend).package} not installed")
    b = get_backend(backend, build_judges(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m")))
    metric = next(iter(sorted(backend_info(backend).table)))
    if (refused := b.param_error(parse_metric(metric))) is not None:  # a setting it needs (patronus: a key)
        pytest.skip(f"{backend} refuses {metric} itself here: {refused}")
    ref = parse_metric(f"{metric}[threshold=8]")
    assert b.param_error(ref) is None
    assert b.bound(ref) == 8.0
    assert ("threshold", 8.0) not in b.passed_params(ref)


def test_a_bound_on_a_framework_scale_is_the_inverse_of_the_0_10_rule():
    assert raw_bound(7.0) == pytest.approx(0.7)
    assert raw_bound(7.0, (0.0, 1.0), higher_is_better=False) == pytest.approx(0.3)
    assert raw_bound(5.0, (0.0, 3.0)) == pytest.approx(1.5)
    assert raw_bound(10.0, (-1.0, 1.0)) == pytest.approx(1.0)


def test_the_embedding_backend_keeps_its_tuned_bounds_unless_the_user_gives_one():
    from unified.adapters import threshold_for

    assert threshold_for("embedding", "answer_relevancy") == 5.0
    assert threshold_for("embedding", "answer_relevancy[threshold=8]") == 8.0
    assert threshold_for("native", "answer_relevancy") == 5.0


class _OwnRule(Backend):
    """A third-party backend with a pass rule of its own: bound 5 whatever was asked."""

    name = "own_rule"
    metrics = frozenset({"faithfulness"})
    uses_judges = False

    async def score(self, sample, metrics):
        return [Score.from_raw(m.name, self.name, sample.id, 0.6, threshold=5.0) for m in metrics]


def test_every_task_carries_its_bound_whatever_the_backend_wrote(tmp_path):
    """The run resolves the bound once per task and every Score carries it: a backend
    that decides with a bound of its own is judged again against the task's."""
    with registered_backend("own_rule", f"{__name__}:_OwnRule", metrics={"faithfulness"}, uses_judges=False):
        report = evaluate(SAMPLES, ["faithfulness[threshold=8]", "faithfulness"], ["own_rule"], quiet=True)
    by_metric = {s.metric: s for s in report.iter_scores()}
    assert by_metric["faithfulness[threshold=8]"].threshold == 8.0
    assert by_metric["faithfulness[threshold=8]"].passed is False  # 6 < 8, though the backend said pass at 5
    assert by_metric["faithfulness"].threshold == 7.0 and by_metric["faithfulness"].passed is False


def test_a_failed_task_carries_its_bound_too(tmp_path):
    """A task that fails before the backend is called (a missing field) carries the bound
    it would have been judged against: the user's, else the backend's own, else the metric's."""
    bare = Sample(id="bare", response="r", retrieved_contexts=["c"])  # no question: answer_relevancy needs one
    report = evaluate([bare], ["answer_relevancy[threshold=8]", "answer_relevancy"], ["embedding"], quiet=True)
    got = {s.metric: s.threshold for s in report.iter_scores()}
    assert got == {"answer_relevancy[threshold=8]": 8.0, "answer_relevancy": 5.0}
    assert all(s.error and s.passed is None for s in report.iter_scores())


def test_the_bound_of_a_metric_named_with_one_is_that_bound_everywhere():
    from unified.analysis.verdict import backend_threshold, default_threshold, score_passed

    assert default_threshold("faithfulness[threshold=8]") == 8.0 and default_threshold("faithfulness") == 7.0
    assert backend_threshold("faithfulness[threshold=8]", []) == 8.0
    s = Score.from_raw("faithfulness[threshold=8]", "x", "s", 0.75)  # no bound written: the name's
    assert score_passed(s) is False


def test_assert_scores_applies_the_bound_of_the_metric_as_named():
    from unified.testing import assert_scores

    sample = Sample(id="s", retrieved_ids=["a", "b"], relevant_ids=["b"])  # mrr = 1/2 → 5
    assert_scores([sample], ["mrr"], "native")  # 5 ≥ 5, the metric's bound
    with pytest.raises(AssertionError, match="mrr"):
        assert_scores([sample], ["mrr[threshold=8]"], "native")  # 5 < 8: the bound as named
    assert_scores([sample], ["mrr[threshold=8]"], "native", thresholds={"mrr[threshold=8]": 4})  # the caller's
