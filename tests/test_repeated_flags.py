"""A flag given twice never silently keeps its last value (issue 39, item 2).

``--fail-under faithfulness=9 --fail-under context_recall=5`` kept only the last gate:
one PASS line and exit 0 although the first gate failed — a CI gate that could not fail.
Now every flag either repeats (its values merged, every gate applied) or keeps one value
and refuses a second, different one in one line (exit 2). Real CLI invocations, a real
pytest session for the plugin's options.
"""

from __future__ import annotations

import json

import pytest
from test_cli import DATA, invoke
from test_testing_plugin import INI, run_pytest

from unified.analysis.gates import GateError, parse_gates
from unified.judge.prices import PriceError, parse_prices

# on DATA (examples/data/rag_examples.jsonl): mrr 8.69, precision@3 3.33 (native)
RUN = ("run", DATA, "--metrics", "mrr,precision@3", "-q")


def _errors(output: str) -> list[str]:
    return [x for x in output.splitlines() if x.startswith("error:")]


def test_every_fail_under_applies_and_one_failing_gate_fails_the_run(tmp_path):
    both_pass = invoke(*RUN, "--out", tmp_path / "a", "--fail-under", "mrr=5", "--fail-under", "precision@3=2")
    assert both_pass.exit_code == 0, both_pass.output
    assert "PASS mrr (native): mean 8.69 >= 5.00" in both_pass.output
    assert "PASS precision@3 (native): mean 3.33 >= 2.00" in both_pass.output

    first_fails = invoke(*RUN, "--out", tmp_path / "b", "--fail-under", "mrr=9", "--fail-under", "precision@3=2")
    assert first_fails.exit_code == 1, first_fails.output
    assert "FAIL mrr (native): mean 8.69 < 9.00" in first_fails.output
    assert "PASS precision@3 (native): mean 3.33 >= 2.00" in first_fails.output

    # each occurrence may hold a comma list; the gate that fails is in the second one
    last_fails = invoke(*RUN, "--out", tmp_path / "c", "--fail-under", "mrr=5", "--fail-under", "precision@3=4")
    assert last_fails.exit_code == 1, last_fails.output
    assert "FAIL precision@3 (native): mean 3.33 < 4.00" in last_fails.output


def test_a_metric_gated_twice_with_two_bounds_is_refused_before_anything_runs(tmp_path):
    r = invoke(*RUN, "--out", tmp_path / "o", "--fail-under", "mrr=5", "--fail-under", "precision@3=2,mrr=9")
    assert r.exit_code == 2, r.output
    assert _errors(r.output) == [
        "error: gate 'mrr=9': mrr is gated twice, 'mrr=5' and 'mrr=9'; give one bound per metric"
    ]
    assert not (tmp_path / "o").exists()
    same = invoke(*RUN, "--out", tmp_path / "s", "--fail-under", "mrr=5", "--fail-under", "mrr=5")
    assert same.exit_code == 0 and same.output.count("PASS mrr") == 1, same.output  # one bound twice is one gate


def test_metrics_and_backends_repeat_and_merge(tmp_path):
    r = invoke(
        "run", DATA, "-m", "mrr", "--metrics", "precision@3,recall@3", "-b", "native", "-q", "--out", tmp_path / "o"
    )
    assert r.exit_code == 0, r.output
    config = json.loads((tmp_path / "o" / "summary.json").read_text())["config"]
    assert config["metrics"] == ["mrr", "precision@3", "recall@3"] and config["backends"] == ["native"]


@pytest.mark.parametrize(
    "args, line",
    [
        (("--out", "A", "--out", "B"), "error: --out is given twice, 'A' and 'B': it keeps one value; give it once"),
        (("-o", "A", "--out=B"), "error: --out is given twice, 'A' and 'B': it keeps one value; give it once"),
        (("--max-samples", "2", "--max-samples=3"), "error: --max-samples is given twice, '2' and '3'"),
        (("--timeout", "5", "--timeout", "60"), "error: --timeout is given twice, '5' and '60'"),
        (("--resume", "--no-resume"), "error: --resume and --no-resume are both given; give one"),
    ],
)
def test_a_flag_that_keeps_one_value_refuses_a_second(tmp_path, monkeypatch, args, line):
    monkeypatch.chdir(tmp_path)
    r = invoke(*RUN, *args)
    assert r.exit_code == 2, r.output
    (error,) = _errors(r.output)
    assert error.startswith(line), error
    assert not (tmp_path / "A").exists() and not (tmp_path / "B").exists()


def test_the_same_value_twice_is_no_conflict(tmp_path):
    r = invoke(*RUN, "--out", tmp_path / "o", "--out", tmp_path / "o", "-q", "--resume", "--resume")
    assert r.exit_code == 0, r.output


def test_every_command_refuses_a_repeated_single_value(tmp_path):
    run = tmp_path / "run"
    assert invoke(*RUN, "--out", run).exit_code == 0
    for args, flag in (
        (("validate", DATA, "--from", "jsonl", "--from", "csv"), "--from"),
        (("convert", DATA, tmp_path / "x.jsonl", "--to", "ragas", "--to", "deepeval"), "--to"),
        (("report", run, "--max-samples", "5", "--max-samples", "9"), "--max-samples"),
        (("diff", run, run, "--seed", "1", "--seed", "2"), "--seed"),
        (("calibrate", run, "-o", tmp_path / "c1.json", "-o", tmp_path / "c2.json"), "-o"),
        (("cache", "info", "--cache", tmp_path / "a", "--cache", tmp_path / "b"), "--cache"),
    ):
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.output)
        assert _errors(r.output)[0].startswith(f"error: {flag} is given twice"), r.output
    assert not (tmp_path / "x.jsonl").exists()


def test_label_cuts_and_prices_repeat_but_a_key_given_two_values_is_refused(tmp_path):
    r = invoke(
        "calibrate", tmp_path, "--label-cut", "faithfulness=4", "--label-cut", "faithfulness=3", "-o", tmp_path / "c"
    )
    assert r.exit_code == 2
    assert _errors(r.output) == [
        "error: --label-cut: faithfulness is cut twice, 'faithfulness=4' and 'faithfulness=3'; give one cut"
    ]
    with pytest.raises(PriceError, match=r"--price: m is priced twice, 'm=1/2' and 'm=3/4'"):
        parse_prices(["m=1/2", "m=3/4"])
    assert parse_prices(["m=1/2", "m=1.0/2.0"]) == {"m": (1.0, 2.0)}
    r = invoke(*RUN, "--out", tmp_path / "o", "--price", "m=1/2", "--price", "m=3/4")
    assert r.exit_code == 2 and "m is priced twice" in r.output, r.output


def test_the_gate_rule_of_assert_gates_is_the_clis():
    from unified.report import Report
    from unified.scores import Score
    from unified.testing import assert_gates

    report = Report([Score(metric="mrr", backend="native", sample_id="s", value=8.0)])
    with pytest.raises(AssertionError, match=r"FAIL mrr \(native\): mean 8.00 < 9.00"):
        assert_gates(report, ["mrr=9", "mrr=9"])
    with pytest.raises(GateError, match="mrr is gated twice, 'mrr=5' and 'mrr=9'"):
        assert_gates(report, ["mrr=5", "mrr=9"])
    assert parse_gates(["mrr=7", "precision@3=2,mrr=7"]) == {"mrr": 7.0, "precision@3": 2.0}


def test_the_pytest_plugins_options_repeat_or_refuse(tmp_path):
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    (tmp_path / "test_defaults.py").write_text(
        "from unified import testing\n\n"
        "def test_backends_merged():\n"
        "    assert testing._session_defaults['backends'] == 'native,embedding'\n",
        encoding="utf-8",
    )
    merged = run_pytest(tmp_path, "test_defaults.py", "--unified-backend", "native", "--unified-backend", "embedding")
    assert merged.returncode == 0 and "1 passed" in merged.stdout, merged.stdout + merged.stderr
    twice = run_pytest(tmp_path, "--unified-judge-model", "a", "--unified-judge-model", "b")
    assert twice.returncode == 4  # pytest's usage-error exit code
    assert "--unified-judge-model is given twice, 'a' and 'b': it keeps one value; give it once" in twice.stderr
    same = run_pytest(
        tmp_path,
        "test_defaults.py",
        "--unified-backend",
        "native,embedding",
        "--unified-cache",
        "c",
        "--unified-cache",
        "c",
    )
    assert same.returncode == 0, same.stdout + same.stderr
