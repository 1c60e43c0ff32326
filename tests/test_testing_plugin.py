"""The pytest plugin, as a user meets it: a real pytest session in a subprocess on a test
file that calls ``assert_scores``, its backend and judge chosen by the plugin's options.

The judge is the loopback server (started here, its URL passed with
``--unified-judge-base-url``), scripted so that a claim checked against contexts that
mention zebras is "not found" and every other claim "supported": the grounded answer
passes, the ungrounded one fails — on the native backend through the judge and on the
embedding backend through the local model, with the same test file.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from judge_server import JudgeServer, _seed_for, _text_of, request_schema, synthesize

SECTION = " unified-rag-eval -"  # the rule over the plugin's terminal summary
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

USER_TESTS = """
import pytest
from unified import Sample
from unified.testing import assert_scores

GOOD = Sample(id="good-answer", user_input="What is the capital of France?",
              response="Paris is the capital of France.",
              retrieved_contexts=["Paris is the capital of France.", "The Seine flows through Paris."])
BAD = Sample(id="cheese-answer", user_input="What do zebras eat?",
             response="The moon is made of green cheese.",
             retrieved_contexts=["Zebras graze on grass in the savanna.", "A zebra herd is called a dazzle."])


def test_grounded_answer_passes():
    assert_scores([GOOD], ["faithfulness"])


def test_ungrounded_answer_fails():
    assert_scores([BAD], ["faithfulness"])


def test_judge_fixture(unified_judge):
    assert unified_judge.model == "loopback"


@pytest.mark.unified(backend="native", thresholds={"hit_rate@1": 10})
def test_marker_sets_backend_and_threshold():
    hit = Sample(id="hit", user_input="q", retrieved_ids=["d1", "d2"], relevant_ids=["d1"])
    report = assert_scores([hit], ["hit_rate@1"])
    assert report.backends() == ["native"]
"""


def _verdicts(value, bad: bool):
    """Every verdict in a synthesised answer set to supported/yes/2 (or not_found/no/0)."""
    if isinstance(value, dict):
        return {k: _verdicts(v, bad) for k, v in value.items()}
    if isinstance(value, list):
        return [_verdicts(v, bad) for v in value]
    if value in ("supported", "contradicted", "not_found"):
        return "not_found" if bad else "supported"
    if value in ("yes", "no"):
        return "no" if bad else "yes"
    if isinstance(value, int) and not isinstance(value, bool):
        return 0 if bad else 2
    return value


def zebra_judge(body: dict):
    schema, _mode = request_schema(body)
    if schema is None:
        return None
    text = _text_of(body)
    return _verdicts(synthesize(schema, random.Random(_seed_for(text, 0))), "zebra" in text.lower())


@pytest.fixture
def judge():
    with JudgeServer(answer_fn=zebra_judge) as srv:
        yield srv


@pytest.fixture
def user_dir(tmp_path):
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    (tmp_path / "test_rag.py").write_text(USER_TESTS, encoding="utf-8")
    return tmp_path


def run_pytest(where: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "UNIFIED_JUDGE", "UNIFIED_EMBEDDING"))}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:deepeval",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-rs",
        "--rootdir",
        str(where),
        *args,
    ]
    return subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True, timeout=600)


def failure_row(output: str, sample_id: str) -> list[str]:
    """The cells of the failure-table row naming ``sample_id`` (pytest prefixes it with E)."""
    line = next(x for x in output.splitlines() if sample_id in x and not x.startswith("FAILED"))
    cells = line.split()
    return cells[1:] if cells[0] == "E" else cells


def summary_rows(output: str) -> dict[tuple[str, str], list[str]]:
    """The plugin's terminal summary: (metric, backend) -> the other cells of its row."""
    lines = output.splitlines()
    start = next(i for i, x in enumerate(lines) if SECTION in x)
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("metric "))
    rows = {}
    for line in lines[header + 1 :]:
        cells = line.split()
        if len(cells) != 10 or not cells[2].isdigit():
            break
        rows[(cells[0], cells[1])] = cells[2:]
    return rows


def test_the_plugin_is_registered_by_the_package():
    eps = [e for e in entry_points(group="pytest11") if e.name == "unified"]
    assert [e.value for e in eps] == ["unified.integrations.pytest_plugin"]


@pytest.mark.slow
def test_one_file_against_the_loopback_judge_then_the_embedding_backend(judge, user_dir):
    judge_opts = ["--unified-judge-base-url", judge.base_url, "--unified-judge-model", "loopback"]
    r = run_pytest(user_dir, "test_rag.py", *judge_opts)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "3 passed" in out and "1 failed" in out, out
    fail = out[out.index("test_ungrounded_answer_fails") :]
    assert "assert_scores: 1 of 1 check failed" in fail
    assert failure_row(fail, "cheese-answer")[:5] == ["cheese-answer", "faithfulness", "native", "0.00", "7.00"]
    assert judge.chat_count > 0
    rows = summary_rows(out)
    assert rows[("faithfulness", "native")][:4] == ["2", "1", "50%", "0"]
    assert int(rows[("faithfulness", "native")][4]) > 0  # judge calls, from the scores' cost
    assert rows[("hit_rate@1", "native")][:4] == ["1", "1", "100%", "0"]  # the marker's test

    calls = judge.chat_count
    r = run_pytest(user_dir, "test_rag.py", "--unified-backend", "embedding")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "2 passed" in out and "1 failed" in out and "1 skipped" in out, out
    assert "no judge configured" in out  # the unified_judge fixture skips, saying why
    row = failure_row(out[out.index("test_ungrounded_answer_fails") :], "cheese-answer")
    assert row[:3] == ["cheese-answer", "faithfulness", "embedding"] and float(row[3]) < 7.0, row
    rows = summary_rows(out)
    assert set(rows) == {("faithfulness", "embedding"), ("hit_rate@1", "native")}  # the marker wins
    assert rows[("faithfulness", "embedding")][:4] == ["2", "1", "50%", "0"]
    assert rows[("faithfulness", "embedding")][4] == "0"  # no judge call
    assert judge.chat_count == calls


@pytest.mark.slow
def test_xdist_workers_report_to_one_summary_and_the_cache_outlives_the_session(judge, user_dir):
    pytest.importorskip("xdist")
    args = [
        "test_rag.py",
        "-k",
        "not marker",
        "--unified-judge-base-url",
        judge.base_url,
        "--unified-judge-model",
        "loopback",
        "--unified-cache",
        str(user_dir / "cache.sqlite"),
    ]
    r = run_pytest(user_dir, "-n", "2", *args)
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "2 passed" in out and "1 failed" in out, out
    assert failure_row(out, "cheese-answer")[:3] == ["cheese-answer", "faithfulness", "native"]
    cells = summary_rows(out)[("faithfulness", "native")]
    assert cells[:4] == ["2", "1", "50%", "0"] and int(cells[4]) > 0  # both workers' tallies
    cold = judge.chat_count
    assert cold > 0 and (user_dir / "cache.sqlite").exists()

    r = run_pytest(user_dir, *args)  # one process, the workers' cache file
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "2 passed" in out, out
    assert judge.chat_count == cold  # every answer from the cache
    cells = summary_rows(out)[("faithfulness", "native")]
    assert cells[4] == "0" and int(cells[6]) > 0  # judge calls 0, cache hits > 0


def test_plugin_is_inert_in_a_session_that_does_not_use_it(tmp_path):
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\n"
        "def test_nothing_heavy_was_imported():\n"
        "    assert 'unified.integrations.pytest_plugin' in sys.modules\n"
        "    heavy = [m for m in ('unified.testing', 'unified.run.runner', 'openai', 'mlflow') if m in sys.modules]\n"
        "    assert heavy == []\n",
        encoding="utf-8",
    )
    r = run_pytest(tmp_path, "test_plain.py")
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    assert SECTION not in r.stdout
    helped = run_pytest(tmp_path, "--help").stdout
    for opt in ("--unified-backend", "--unified-judge-base-url", "--unified-judge-model", "--unified-cache"):
        assert opt in helped


def test_judge_url_without_model_is_a_usage_error(tmp_path):
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    r = run_pytest(tmp_path, "--unified-judge-base-url", "http://127.0.0.1:9/v1")
    assert r.returncode == 4  # pytest's usage-error exit code
    assert "--unified-judge-base-url needs --unified-judge-model" in r.stderr


@pytest.mark.slow
def test_the_default_cache_is_in_the_project_and_none_turns_it_off(judge, user_dir):
    """Without --unified-cache the judge's answers are kept in the project's
    .unified-eval/cache.sqlite (a CI cache step keeps that folder), so the second session
    calls nothing; ``--unified-cache none`` keeps nothing and pays again. Before 0.3.0 the
    default was the user's cache folder, which a fresh CI machine does not have."""
    args = ["test_rag.py", "-k", "not marker", "--unified-judge-base-url", judge.base_url]
    args += ["--unified-judge-model", "loopback"]
    r = run_pytest(user_dir, *args)
    assert r.returncode == 1 and "2 passed" in r.stdout, r.stdout + r.stderr
    cold = judge.chat_count
    assert cold > 0 and (user_dir / ".unified-eval" / "cache.sqlite").is_file()
    r = run_pytest(user_dir, *args)
    assert r.returncode == 1 and judge.chat_count == cold, r.stdout  # every answer from the project's cache
    assert int(summary_rows(r.stdout)[("faithfulness", "native")][6]) > 0  # cache hits
    (user_dir / ".unified-eval" / "cache.sqlite").unlink()
    r = run_pytest(user_dir, *args, "--unified-cache", "none")
    assert r.returncode == 1 and judge.chat_count == 2 * cold, r.stdout  # paid again: no cache
    assert not (user_dir / ".unified-eval" / "cache.sqlite").exists()
