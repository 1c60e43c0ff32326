"""The RAGAS backend's plumbing: errors become one-line Score errors naming ragas's message,
NaN never escapes, telemetry is off, and ragas writes nothing outside its chosen folder.

The loopback judge server answers random-but-valid JSON: these tests check plumbing and
error paths, never judgment quality.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ragas", reason="the ragas extra is not installed")

import ragas.metrics.collections as rc
from judge_server import JudgeServer
from support import import_in_clean_env

from unified.adapters import get_backend
from unified.adapters.quiet import stray_dir
from unified.adapters.ragas.backend import JudgeRagasLLM
from unified.adapters.registry import quiet_env
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.judge.base import Judges, task_scope
from unified.metrics import get_metric, parse_metric, parse_metrics
from unified.sample import Sample

QUIET_ENV = quiet_env()  # every room's switches (the backends set them all)

pytestmark = pytest.mark.ragas

SAMPLE = Sample(
    user_input="What is the capital of France?",
    response="Paris.",
    retrieved_contexts=["Paris is the capital of France."],
    reference="Paris",
    id="s1",
)


def _judges(srv: JudgeServer, cache_path=None) -> Judges:
    return build_judges(
        JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
        embedding=EmbeddingConfig(kind="openai", base_url=srv.base_url, model="fake-embed", max_retries=0),
        cache_path=cache_path,
    )


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")


def test_telemetry_switches_are_set_after_import():
    got = import_in_clean_env(
        "unified.adapters.ragas.backend",
        list(QUIET_ENV),
        "import ragas._analytics as a; assert a.do_not_track() is True",
    )
    assert got == QUIET_ENV


@pytest.mark.slow
def test_uuid_file_goes_to_the_chosen_folder_not_xdg(tmp_path):
    """In a fresh process with HOME and XDG_DATA_HOME pointing at tmp folders, importing
    the backend and forcing ragas to compute its user id writes only under the folder
    quiet_frameworks chose; nothing under XDG_DATA_HOME/ragas, HOME or the cwd."""
    home, xdg, cwd = tmp_path / "home", tmp_path / "xdg", tmp_path / "cwd"
    for d in (home, xdg, cwd):
        d.mkdir()
    script = textwrap.dedent("""
        import json
        import unified.adapters.ragas.backend
        import ragas._analytics as a
        from unified.adapters.quiet import stray_dir
        uid = a.get_userid()
        # read here: the private temp folder is removed when the process exits
        saved = json.loads((stray_dir("ragas") / "uuid.json").read_text())["userid"]
        print(json.dumps({"uid": uid, "dir": str(stray_dir("ragas")), "saved": saved}))
    """)
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(xdg)}
    for k in QUIET_ENV:  # the module must set these itself
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["uid"].startswith("a-")  # a real id was written, not the fallback
    assert info["saved"] == info["uid"]
    assert list(xdg.rglob("*")) == [] and list(home.rglob("*")) == [] and list(cwd.rglob("*")) == []


async def test_missing_field_gives_a_one_line_error_without_judge_calls(judge_server):
    backend = get_backend("ragas", _judges(judge_server))
    bare = Sample(user_input="q?", response="a", id="bare")
    [score] = await backend.score(bare, [parse_metric("faithfulness")])
    assert score.value is None and score.raw is None
    assert score.error == ("sample 'bare': field 'retrieved_contexts' is missing or empty (needed by faithfulness)")
    assert judge_server.request_count == 0


async def test_metric_not_on_ragas_is_an_error_score(judge_server):
    backend = get_backend("ragas", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("precision@3")])
    assert score.value is None and "not available on the ragas backend" in score.error


async def test_judge_http_error_becomes_ragas_error(judge_server):
    judge_server.force_fault("500", n=50)
    backend = get_backend("ragas", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("faithfulness")])
    assert score.value is None
    assert score.error.startswith("ragas Faithfulness: ")
    assert "500" in score.error and "\n" not in score.error
    assert "sk-loopback" not in score.error


async def test_swallowed_judge_error_is_named_in_nan_error(judge_server):
    # ContextRelevance catches judge exceptions itself and returns NaN
    judge_server.force_fault("500", n=50)
    backend = get_backend("ragas", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("context_relevancy")])
    assert score.value is None and score.raw is None
    assert score.error.startswith("ragas ContextRelevance: returned nan after a judge error: ")


async def test_nan_from_ragas_matches_direct_call_and_is_an_error(tmp_path):
    """No statements -> ragas Faithfulness returns NaN: the adapter turns it into an error,
    and ragas called directly on the same cached answers gives NaN too."""

    def no_statements(body):
        return {"statements": []}

    with JudgeServer(answer_fn=no_statements) as srv:
        [score] = await get_backend("ragas", _judges(srv, tmp_path / "c.sqlite")).score(
            SAMPLE, [parse_metric("faithfulness")]
        )
        srv.reset_counts()
        judges = _judges(srv, tmp_path / "c.sqlite")
        with task_scope("ragas", "faithfulness", SAMPLE.id):
            direct = await rc.Faithfulness(llm=JudgeRagasLLM(judges)).ascore(
                user_input=SAMPLE.user_input, response=SAMPLE.response, retrieved_contexts=SAMPLE.retrieved_contexts
            )
        assert srv.request_count == 0
    assert math.isnan(direct.value)
    assert score.value is None and score.raw is None
    assert score.error.startswith("ragas Faithfulness: returned nan")


async def test_scores_carry_cost_and_threshold(judge_server):
    backend = get_backend("ragas", _judges(judge_server))
    refs = parse_metrics("faithfulness,answer_relevancy,semantic_similarity")
    scores = await backend.score(SAMPLE, refs)
    assert [s.metric for s in scores] == ["faithfulness", "answer_relevancy", "semantic_similarity"]
    for s in scores:
        assert s.error is None and 0.0 <= s.value <= 10.0
        assert s.threshold == get_metric(s.metric).threshold
        assert s.passed == (s.value >= s.threshold)
    # ragas's documented calls: Faithfulness 2 chat; AnswerRelevancy 3 chat + 2 embedding
    # requests (question, then the 3 generated questions in one batch); SemanticSimilarity 2
    assert (scores[0].cost.calls, scores[0].cost.embedding_calls) == (2, 0)
    assert (scores[1].cost.calls, scores[1].cost.embedding_calls) == (3, 2)
    assert (scores[2].cost.calls, scores[2].cost.embedding_calls) == (0, 2)
    assert judge_server.chat_count == 5


async def test_scores_keep_the_verdicts_ragas_got_since_it_gives_no_reason(judge_server):
    backend = get_backend("ragas", _judges(judge_server))
    faith, relevance = await backend.score(SAMPLE, parse_metrics("faithfulness,context_relevancy"))
    # Faithfulness: the extracted statements, then the NLI step's verdict on each
    assert faith.reason is None
    first, *nli = faith.details["verdicts"]
    assert set(first) == {"statements"} and nli
    assert all({"statement", "reason", "verdict"} == set(v) for v in nli)
    # ContextRelevance answers a bare rating per judge: kept whole
    assert [set(v) for v in relevance.details["verdicts"]] == [{"rating"}, {"rating"}]


async def test_metric_parameters_reach_the_ragas_constructor(judge_server):
    backend = get_backend("ragas", _judges(judge_server))
    [score] = await backend.score(SAMPLE, [parse_metric("answer_relevancy[strictness=2]")])
    assert score.error is None and score.cost.calls == 2
    # ragas's constructors drop an unknown keyword silently: refused up front, no judge paid
    judge_server.reset_counts()
    assert backend.param_error(parse_metric("faithfulness[nonsense=1]")) == (
        "metric 'faithfulness[nonsense=1]': unknown parameter 'nonsense' (accepted: name, threshold)"
    )
    [bad] = await backend.score(SAMPLE, [parse_metric("faithfulness[nonsense=1]")])
    assert bad.value is None and bad.error == backend.param_error(parse_metric("faithfulness[nonsense=1]"))
    assert judge_server.request_count == 0


def test_ragas_user_dir_is_outside_home():
    import tempfile

    import ragas._analytics as analytics

    target = stray_dir("ragas")
    assert not str(target).startswith(os.path.expanduser("~"))
    assert str(target).startswith(tempfile.gettempdir())  # no run folder given: a private temp one
    # ragas computes its uuid folder through the rebound name: it lands there, not in XDG
    assert analytics.user_data_dir("ragas") == str(target)


def test_table_reads_exactly_the_fields_the_registry_requires():
    """The runner refuses samples by ``MetricSpec.required`` plus the backend's own
    ``needs`` (ragas's Faithfulness reads the question faithfulness does not need); ragas
    must read no other Sample field, or a sample could pass the check and still fail
    inside ragas."""
    from unified.adapters.ragas import RAGAS_METRICS

    full = Sample(user_input="q", response="r", retrieved_contexts=["c"], reference="ref")
    for name, m in RAGAS_METRICS.items():
        assert set(m.fields(full)) == set(get_metric(name).required) | set(m.needs), name
        cls = getattr(rc, m.cls)
        assert set(m.fields(full)) <= set(inspect.signature(cls.ascore).parameters), name


@pytest.mark.slow
def test_private_temp_folder_is_removed_at_exit(tmp_path):
    """Importing the backend picks a private temp folder for ragas's uuid file; it used to
    stay in /tmp after every run (one empty unified-frameworks-* folder per process)."""
    script = textwrap.dedent("""
        import unified.adapters.ragas.backend
        import unified.adapters.deepeval.backend
        from unified.adapters.quiet import stray_dir
        assert stray_dir("ragas").parent.exists()
    """)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert list(tmp_path.glob("unified-frameworks-*")) == []
