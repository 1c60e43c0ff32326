"""Isolated backends (``unified.adapters.isolated``): ``ragas@0.3.9``, ``deepeval@3.9.9`` and
``embedchain`` in uv-built environments of their own, driven by one worker process each,
every judge call coming back through the loopback bridge to the real loopback judge.

Real parts: real uv builds (from uv's cache), real framework releases in real
environments, real worker processes, real signals. The test environments live in the user
cache (``make install-test`` builds them: ``unified-eval env build``); a test that finds
none builds it (ragas 7 s, deepeval 2 s, embedchain 5 s on this machine). The loopback
judge's answers are synthetic: plumbing only, never evidence of quality.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from judge_server import JudgeServer
from typer.testing import CliRunner

from unified.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
ENVS = Path(os.environ["UNIFIED_ENVS_DIR"])  # the machine's (tests/conftest.py)
ALL = "ragas,ragas@0.3.9,deepeval,deepeval@3.9.9,embedchain"


@pytest.fixture
def envs(monkeypatch):
    monkeypatch.setenv("UNIFIED_ENVS_DIR", str(ENVS))
    return ENVS


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def embedchain_answers(verdicts: str = "1\n0"):
    """Scripted answers for embedchain's free-text prompts (two claims, their verdicts,
    the first context sentence, two questions); None (synthesise) for every other prompt."""

    def answer(body: dict) -> str | None:
        text = " ".join(str(m.get("content")) for m in body.get("messages", []))
        if "one or more statements from each sentence" in text:
            return "The answer makes a first claim.\nThe answer makes a second claim."
        if "provide a verdict for each claim statement" in text:
            return verdicts
        if "extract relevant sentences from the provided context" in text:
            context = text.split("Context:", 1)[1].split("Question:", 1)[0].strip()
            return re.split(r"(?<=[.!?])\s", context)[0]
        if "questions from the provided answer" in text:
            return "What does the answer say?\nWhy does it say it?"
        return None

    return answer


# ---------------------------------------------------------------- environments


def test_an_offline_build_with_nothing_cached_fails_in_one_line_and_leaves_no_environment(tmp_path, monkeypatch):
    """pip's index (here: one that is down) is the index uv is given, and the failure says
    which package from which index, in one line, with no half-built folder left."""
    monkeypatch.setenv("UNIFIED_ENVS_DIR", str(tmp_path / "envs"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no configuration files: the variables below only
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    r = invoke("env", "build", "deepeval@3.9.9")
    assert r.exit_code == 2, r.output
    said = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(said) == 1 and "Traceback" not in r.output
    assert "deepeval==3.9.9" in said[0] and "http://127.0.0.1:9/simple" in said[0]
    assert [p.name for p in (tmp_path / "envs").iterdir() if not p.name.endswith(".lock")] == []
    assert "no isolated environments" in invoke("env", "list").output


@pytest.mark.slow
def test_an_environment_is_built_once_listed_reused_and_removed(tmp_path, monkeypatch):
    from unified.adapters.isolated.envs import EnvSpec, ensure_env

    monkeypatch.setenv("UNIFIED_ENVS_DIR", str(tmp_path / "envs"))
    said: list[str] = []
    spec = EnvSpec("deepeval", "3.9.9")
    killed = tmp_path / "envs" / f".building-{spec.key}-0dead0"  # what a build killed with -9 leaves
    (killed / "bin").mkdir(parents=True)
    folder = ensure_env(spec, said.append)
    assert not killed.exists()  # cleared by the next build of that key
    record = json.loads((folder / "unified-env.json").read_text())
    assert folder.name == spec.key == "deepeval-3.9.9-py3.11" and record["installed"] == "3.9.9"
    assert said[0].startswith("[env deepeval 3.9.9] building") and said[-1].startswith("[env deepeval 3.9.9] ready")
    again: list[str] = []
    assert ensure_env(spec, again.append) == folder and again == []  # found, not rebuilt
    listed = invoke("env", "list")
    assert "deepeval-3.9.9-py3.11" in listed.output and "3.9.9" in listed.output
    assert invoke("env", "remove", "deepeval-3.9.9-py3.11").exit_code == 0
    assert not folder.exists()


# ---------------------------------------------------------------- runs


@pytest.mark.slow
@pytest.mark.ragas
@pytest.mark.deepeval
def test_compare_scores_every_served_pair_across_versions_and_migrate_reports_the_upgrade(tmp_path, envs):
    """The issue's done-when: compare ragas, ragas@0.3.9, deepeval, deepeval@3.9.9 and
    embedchain on 12 rows; then the upgrade report from ragas 0.3.9 to the installed ragas."""
    out = tmp_path / "cmp"
    with JudgeServer(answer_fn=embedchain_answers()) as srv:
        r = invoke(
            "compare", DATA, "--backends", ALL, "--metrics", "faithfulness", "--base-url", srv.base_url,
            "--model", "m", "--max-samples", "12", "--out", out, "--quiet", "--jury", "median",
        )  # fmt: skip
        assert r.exit_code == 0, r.output
        rows = lines(out / "scores.jsonl")
        by_backend = {b: [d for d in rows if d["backend"] == b] for b in ALL.split(",")}
        jury = [d for d in rows if d["backend"] == "jury"]
        assert len(jury) == 12
        assert all(set(d["details"]["members"]) == set(ALL.split(",")) for d in jury)
        assert "ragas@0.3.9" in (out / "report.html").read_text()
        assert all(len(v) == 12 and all(d["value"] is not None for d in v) for v in by_backend.values())
        assert {d["details"]["ragas_version"] for d in by_backend["ragas@0.3.9"]} == {"0.3.9"}
        assert {d["details"]["deepeval_version"] for d in by_backend["deepeval@3.9.9"]} == {"3.9.9"}
        # deepeval 3 has no eval_mode (only the LLM mode 4.3's setting selects): said, not hidden
        assert by_backend["deepeval@3.9.9"][0]["details"]["settings_not_taken"] == ["eval_mode"]
        # embedchain: two claims, verdicts 1 and 0 -> 0.5 -> 5.0, on every row
        assert {d["value"] for d in by_backend["embedchain"]} == {5.0}
        pairs = json.loads((out / "crosscheck.json").read_text())["metrics"]["faithfulness"]["pairs"]
        assert len(pairs) == 10  # every pair of the five backends
        mig = tmp_path / "mig"
        m = invoke(
            "migrate", DATA, "--from-backend", "ragas@0.3.9", "--to-backend", "ragas", "--metrics", "faithfulness",
            "--base-url", srv.base_url, "--model", "m", "--max-samples", "12", "--out", mig, "--max-flips", "12",
        )  # fmt: skip
    assert m.exit_code == 0, m.output
    report = json.loads((mig / "migration.json").read_text())
    assert report["from"] == "ragas@0.3.9" and report["to"] == "ragas"
    fm = report["metrics"]["faithfulness"]
    assert fm["names"] == {"ragas@0.3.9": "Faithfulness", "ragas": "Faithfulness"} and fm["n"] == 12
    assert "flips" in m.output.lower()


@pytest.mark.slow
def test_a_minus_one_verdict_makes_embedchain_groundedness_an_error_not_a_number(tmp_path, envs):
    """embedchain maps a claim verdict of -1 to NaN, and NaN poisons its sum: the task is
    an error saying so (embedchain's own evaluate() would drop the row from its mean)."""
    out = tmp_path / "run"
    with JudgeServer(answer_fn=embedchain_answers("1\n-1")) as srv:
        r = invoke(
            "run", DATA, "--backend", "embedchain", "--metrics", "faithfulness,context_relevancy",
            "--base-url", srv.base_url, "--model", "m", "--max-samples", "2", "--out", out, "--quiet",
        )  # fmt: skip
    assert r.exit_code == 3, r.output
    rows = {(d["sample_id"], d["metric"]): d for d in lines(out / "scores.jsonl")}
    assert len(rows) == 4
    faith = [d for (_, m), d in rows.items() if m == "faithfulness"]
    assert all(d["value"] is None and "returned nan" in d["error"] and "-1" in d["error"] for d in faith)
    assert all(d["value"] is not None for (_, m), d in rows.items() if m == "context_relevancy")


def test_a_run_whose_environment_cannot_be_built_tries_once_and_fails_each_task_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("UNIFIED_ENVS_DIR", str(tmp_path / "envs"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    out = tmp_path / "run"
    with JudgeServer() as srv:
        r = invoke(
            "run", DATA, "--backend", "deepeval@3.9.9", "--metrics", "faithfulness", "--base-url", srv.base_url,
            "--model", "m", "--max-samples", "3", "--out", out,
        )  # fmt: skip
        assert srv.request_count == 0
    assert r.exit_code == 3 and "Traceback" not in r.output
    assert r.output.count("building an isolated environment") == 1  # once for the run, not once per task
    rows = lines(out / "scores.jsonl")
    assert len(rows) == 3 and all("could not install deepeval==3.9.9" in d["error"] for d in rows)


def test_uv_gets_the_indexes_pip_would_use_with_pips_best_match_rule(monkeypatch):
    from unified.adapters.isolated.envs import describe_indexes, pip_indexes, uv_index_args

    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///srv/a/simple file:///srv/b/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "/srv/wheels")
    indexes = pip_indexes()
    assert indexes == {
        "index-url": ["https://mirror.example/simple"],
        "extra-index-url": ["file:///srv/a/simple", "file:///srv/b/simple"],
        "find-links": ["/srv/wheels"],
    }
    args = uv_index_args(indexes)
    assert args[:2] == ["--index-strategy", "unsafe-best-match"]  # pip's rule, not uv's first-index rule
    assert args[2:] == [
        "--index-url", "https://mirror.example/simple",
        "--extra-index-url", "file:///srv/a/simple",
        "--extra-index-url", "file:///srv/b/simple",
        "--find-links", "/srv/wheels",
    ]  # fmt: skip
    assert describe_indexes(indexes).startswith("https://mirror.example/simple, file:///srv/a/simple")


def test_an_isolated_backend_takes_the_bound_and_refuses_other_bracket_parameters_in_one_line():
    from unified.adapters import get_backend
    from unified.metrics import parse_metric

    b = get_backend("ragas@0.3.9")
    assert b.param_error(parse_metric("faithfulness[threshold=8]")) is None
    assert b.bound(parse_metric("faithfulness[threshold=8]")) == 8.0
    why = b.param_error(parse_metric("answer_relevancy[strictness=2]"))
    assert why is not None and "strictness" in why and "ragas@0.3.9" in why
    assert b.worker is None  # asking costs no environment and no worker
