"""Issue 24 item 1: a bound on the wrong scale never passes silently. One rule
(``unified.bounds.read_bound``) for every place a bound is taken: ``--fail-under``, a
metric's ``[threshold=…]``, ``assert_scores(thresholds=…)``, the pytest marker, migrate's
gates. Offline: mrr is a native retrieval metric, no judge is called."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified.analysis.gates import GateError, parse_gates
from unified.bounds import BoundScaleError, read_bound
from unified.cli.app import app
from unified.metrics import parse_metric

ROOT = Path(__file__).resolve().parents[1]
pytest_plugins = ["pytester"]

DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"


@pytest.mark.parametrize(
    "text,bound",
    [
        ("7", 7.0),
        (0, 0.0),
        ("0.7@0-1", 7.0),
        ("1@0-1", 10.0),
        ("1@0-10", 1.0),
        ("0.5@0-10", 0.5),
        ("10", 10.0),
        (1.5, 1.5),
        ("0@0-1", 0.0),
    ],
)
def test_bounds_on_a_stated_or_unambiguous_scale_are_read_on_0_to_10(text, bound):
    assert read_bound(text, "x") == pytest.approx(bound)


@pytest.mark.parametrize(
    "text,says",
    [
        (0.7, "did you mean 7?"),
        ("1", "did you mean 10?"),
        (1.0, "did you mean 10?"),
        (0.05, "did you mean 0.5?"),
        ("11", "outside 0–10"),
        ("2@0-1", "outside 0–1"),
        ("x", "not a number"),
        ("0.7@0-100", "@0-1 or @0-10"),
        ("nan", "NaN"),
    ],
)
def test_an_ambiguous_or_impossible_bound_is_refused_with_the_fix(text, says):
    with pytest.raises(BoundScaleError, match=says.replace("?", r"\?")):
        read_bound(text, "x")


def test_gates_and_metric_parameters_use_the_rule():
    assert parse_gates("mrr=0.7@0-1,faithfulness=7") == {"mrr": 7.0, "faithfulness": 7.0}
    with pytest.raises(GateError, match=r"gate 'mrr=0.7'.*did you mean 7\?"):
        parse_gates("mrr=0.7")
    with pytest.raises(GateError, match=r"did you mean 0.5\?"):
        parse_gates({"faithfulness": 0.05})
    assert parse_metric("faithfulness[threshold=0.7@0-1]").param("threshold") == 7.0
    with pytest.raises(ValueError, match=r"did you mean 7\?"):
        parse_metric("faithfulness[threshold=0.7]")
    with pytest.raises(KeyError):  # callers that catch a bad metric spec catch it too
        parse_metric("faithfulness[threshold=0.7]")


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_cli_fail_under_on_the_wrong_scale_exits_2_before_scoring(tmp_path):
    out = tmp_path / "run"
    r = invoke("run", DATA, "--metrics", "mrr", "--fail-under", "mrr=0.7", "--out", out)
    assert r.exit_code == 2, r.output
    assert "did you mean 7?" in r.output
    assert not (out / "scores.jsonl").exists()


def test_cli_fail_under_with_a_stated_scale_gates_on_0_to_10(tmp_path):
    out = tmp_path / "run"
    r = invoke("run", DATA, "--metrics", "mrr", "--fail-under", "mrr=1@0-1", "--out", out, "--quiet")
    means = [a["mean"] for a in json.loads((out / "summary.json").read_text())["aggregates"] if a["metric"] == "mrr"]
    assert means and min(means) < 10.0  # the bound is 10 after the scale: a mean below it fails
    assert r.exit_code == 1, r.output
    assert "< 10.00" in r.output


def test_cli_metric_threshold_on_the_wrong_scale_exits_2(tmp_path):
    r = invoke("run", DATA, "--metrics", "mrr[threshold=0.7]", "--out", tmp_path / "run")
    assert r.exit_code == 2, r.output
    assert "did you mean 7?" in r.output


def test_assert_scores_refuses_a_0_to_1_threshold():
    from unified import Sample
    from unified.testing import assert_scores

    s = Sample(user_input="q", response="a", retrieved_contexts=["a"], reference_contexts=["a"])
    with pytest.raises(ValueError, match=r"did you mean 0.5\?"):
        assert_scores([s], ["mrr"], backend="native", thresholds={"mrr": 0.05})


def test_the_pytest_marker_refuses_a_0_to_1_threshold(pytester):
    pytester.makepyfile(
        textwrap.dedent(
            """
            import pytest
            from unified import Sample
            from unified.testing import assert_scores

            @pytest.mark.unified(backend="native", thresholds={"mrr": 0.7})
            def test_it():
                s = Sample(user_input="q", response="a", retrieved_contexts=["a"], reference_contexts=["a"])
                assert_scores([s], ["mrr"])
            """
        )
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "did you mean 7?" in result.stdout.str()
