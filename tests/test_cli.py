"""The unified-eval command line, through typer's CliRunner, on the bundled example data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import as_read
from typer.testing import CliRunner

from unified.adapters import Backend, registered_backend
from unified.cli.app import app
from unified.metrics import scratch_registry
from unified.scores import Score

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
BAD = ROOT / "examples" / "data" / "bad_rows.jsonl"
runner = CliRunner()


class Twin(Backend):
    """A second retrieval backend for compare: reciprocal rank of the *last* relevant id
    (deliberately different from native's mrr, so the two disagree on some samples)."""

    name = "twin"
    metrics = frozenset({"mrr"})

    async def score(self, sample, metrics):
        rel = set(sample.relevant_ids or [])
        ranks = [i + 1 for i, d in enumerate(sample.retrieved_ids or []) if d in rel]
        raw = 1.0 / ranks[-1] if ranks else 0.0
        return [
            Score.from_raw(m.name, self.name, sample.id, raw, threshold=5.0, reason=f"ranks {ranks}") for m in metrics
        ]


@pytest.fixture
def twin():
    with registered_backend("twin", f"{__name__}:Twin", metrics={"mrr"}, uses_judges=False, hint="twin missing"):
        yield


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_metrics_matrix():
    r = invoke("metrics")
    assert r.exit_code == 0, r.output
    for word in (
        "native",
        "ragas",
        "deepeval",
        "embedding",
        "precision@k",
        "ndcg@k",
        "faithfulness",
        "retrieved_contexts",
        "deterministic",
        *("opik", "mlflow", "phoenix", "trulens"),  # eight backends: no name is cut
    ):
        assert word in r.output


def test_validate_exit_codes():
    good = invoke("validate", DATA)
    assert good.exit_code == 0 and f"{sum(1 for _ in open(DATA))} ok, 0 bad" in good.output
    bad = invoke("validate", BAD)
    assert bad.exit_code == 1
    errors = [x for x in bad.output.splitlines() if x.startswith("ERROR ")]
    assert len(errors) >= 3 and all("bad_rows.jsonl:" in x for x in errors)
    assert "bad row(s)" in bad.output


def test_validate_refuses_an_empty_file_and_a_folder(tmp_path):
    # an empty file validated "0 ok, 0 bad" with exit 0, though a run of it exits 3; a
    # folder was told to "pass fmt=", which is neither the problem nor a CLI flag
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    r = invoke("validate", empty)
    assert r.exit_code == 1 and f"error: {empty} has no rows" in r.output
    r = invoke("validate", tmp_path)
    assert r.exit_code == 2 and "is a folder, not a file of samples" in r.output and "fmt=" not in r.output
    odd = tmp_path / "rows.dat"
    odd.write_text('{"question": "q"}\n', encoding="utf-8")
    r = invoke("validate", odd)
    assert r.exit_code == 2 and "--from" in r.output


def test_run_retrieval_metrics_end_to_end(tmp_path):
    out = tmp_path / "run"
    r = invoke("run", DATA, "--metrics", "precision@3,ndcg@5,mrr", "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    n = sum(1 for _ in open(DATA))
    assert len((out / "scores.jsonl").read_text().splitlines()) == 3 * n
    summary = json.loads((out / "summary.json").read_text())
    assert {a["metric"] for a in summary["aggregates"]} == {"precision@3", "ndcg@5", "mrr"}
    assert all(a["errors"] == 0 and 0 <= a["mean"] <= 10 for a in summary["aggregates"])
    assert (out / "report.html").exists() and (out / "samples.jsonl").exists()

    # a gate above the measured mean fails with the exact shortfall, and exits 1
    mean = next(a["mean"] for a in summary["aggregates"] if a["metric"] == "precision@3")
    bound = min(10.0, round(mean + 1.5, 2))
    g = invoke("run", DATA, "--metrics", "precision@3", "--out", out, "--quiet", "--fail-under", f"precision@3={bound}")
    assert g.exit_code == 1
    assert f"FAIL precision@3 (native): mean {mean:.2f} < {bound:.2f} (short by {bound - mean:.2f})" in g.output
    ok = invoke(
        "run",
        DATA,
        "--metrics",
        "precision@3",
        "--out",
        out,
        "--quiet",
        "--fail-under",
        f"precision@3={max(0.0, mean - 1):.2f}",
    )
    assert ok.exit_code == 0 and "PASS precision@3 (native)" in ok.output

    rep = invoke("report", out)
    assert rep.exit_code == 0 and "report.html" in rep.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--metrics", "precison@3"], "unknown metric 'precison'"),
        (["--metrics", "mrr", "--backend", "nosuch"], "unknown backend 'nosuch'"),
        (["--metrics", "mrr", "--fail-under", "faithfulnes=7"], "did you mean 'faithfulness'"),
        (["--metrics", "mrr@x"], "must be a whole number"),
    ],
)
def test_user_errors_are_one_line_exit_2(tmp_path, args, message):
    r = invoke("run", DATA, "--out", tmp_path / "o", *args)
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output
    assert len([x for x in r.output.splitlines() if x.startswith("error:")]) == 1


def test_missing_file_and_dry_run(tmp_path):
    r = invoke("run", tmp_path / "nope.jsonl", "--metrics", "mrr", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "no such file" in r.output
    d = invoke("run", DATA, "--metrics", "mrr,precision@3", "--out", tmp_path / "dry", "--dry-run")
    assert d.exit_code == 0, d.output
    assert not (tmp_path / "dry" / "scores.jsonl").exists()


def test_compare_writes_crosscheck_and_agreement_report(tmp_path, twin):
    out = tmp_path / "cmp"
    r = invoke("compare", DATA, "--backends", "native,twin", "--metrics", "mrr", "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    cc = json.loads((out / "crosscheck.json").read_text())
    assert set(cc["backends"]) == {"native", "twin"} and "mrr" in cc["metrics"]
    page = (out / "report.html").read_text()
    assert "id='agreement'" in page and "id='disagree'" in page
    one = invoke("compare", DATA, "--backends", "native", "--metrics", "mrr", "--out", out)
    assert one.exit_code == 2 and "at least two backends" in one.output


def test_diff_command(tmp_path, twin):
    a, b = tmp_path / "a", tmp_path / "b"
    assert invoke("run", DATA, "--metrics", "mrr,precision@3", "--out", a, "--quiet").exit_code == 0
    assert invoke("run", DATA, "--metrics", "mrr,precision@5", "--out", b, "--quiet").exit_code == 0
    r = invoke("diff", a, b, "--json", tmp_path / "d.json")
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "d.json").read_text())
    mrr = next(x for x in rows if x["metric"] == "mrr")
    assert mrr["delta"] == 0 and mrr["ci95"] == [0.0, 0.0]  # same metric, same data: no change
    assert {x["metric"] for x in rows} == {"mrr", "precision@3", "precision@5"}
    assert invoke("diff", a, tmp_path / "missing").exit_code == 2


def test_convert_command(tmp_path):
    r = invoke("convert", DATA, tmp_path / "out.jsonl", "--to", "deepeval")
    assert r.exit_code == 0, r.output
    first = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert "input" in first and "actual_output" in first
    assert invoke("convert", DATA, tmp_path / "x", "--to", "nosuch").exit_code == 2


def test_run_with_loopback_judge_uses_the_shared_cache_and_resume(tmp_path, judge_server):
    """The judge cache outlives run folders (issue 12): a new --out pays for no call the
    shared cache already holds."""
    from unified.judge import default_cache_path

    out = tmp_path / "llm"
    args = [
        "run",
        DATA,
        "--metrics",
        "faithfulness,precision@3",
        "--out",
        out,
        "--quiet",
        "--max-samples",
        "3",
        "--base-url",
        judge_server.base_url,
        "--model",
        "loopback",
    ]
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    cold = judge_server.chat_count
    assert cold > 0 and default_cache_path().exists() and not (out / "judge_cache.sqlite").exists()
    rows = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and sum(d["cost"]["calls"] for d in rows) == cold
    assert invoke(*args).exit_code == 0  # resume: everything done, nothing called
    assert judge_server.chat_count == cold
    assert invoke(*args, "--no-resume").exit_code == 0  # start over: answers come from the cache
    assert judge_server.chat_count == cold
    other = [a if a != out else tmp_path / "elsewhere" for a in args]
    assert invoke(*other).exit_code == 0  # another run folder: still nothing paid twice
    assert judge_server.chat_count == cold
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["judges"]["judge"]["model"] == "loopback"


def test_metrics_lists_framework_backends_without_importing_them():
    """The matrix reads ragas/deepeval backends' metric sets from source: listing metrics
    must not pay for importing the frameworks (or torch)."""
    import subprocess
    import sys

    code = (
        "from typer.testing import CliRunner; from unified.cli.app import app; import sys; "
        "r = CliRunner().invoke(app, ['metrics']); "
        "print(r.exit_code, *[m in sys.modules for m in ('ragas', 'deepeval', 'torch')])"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.split() == ["0", "False", "False", "False"], res.stderr


def test_plugins_register_custom_metrics_for_run(tmp_path):
    plugin = tmp_path / "my_metrics_plugin.py"
    plugin.write_text(
        "from unified.metrics import register_metric\n"
        "@register_metric('question_length_test', raw_range=(0, 200))\n"
        "def question_length_test(sample):\n"
        "    '''Length of the question in characters.'''\n"
        "    return len(sample.user_input)\n"
    )
    out = tmp_path / "run"
    with scratch_registry():  # the plugin's metric must not outlive this test
        r = invoke("run", DATA, "--metrics", "question_length_test", "--plugins", plugin, "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    rows = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]
    first_q = json.loads(DATA.read_text().splitlines()[0])["user_input"]
    assert rows[0]["metric"] == "question_length_test"
    assert rows[0]["raw"] == len(first_q) and rows[0]["value"] == pytest.approx(10 * len(first_q) / 200)


@pytest.mark.slow
@pytest.mark.ragas
@pytest.mark.deepeval
def test_compare_native_ragas_deepeval_against_the_loopback_judge(tmp_path, judge_server, monkeypatch):
    """issue 5's end-to-end check: three backends, one scale, a cross-check report;
    every score a number or an explicit error. The fake judge proves plumbing only."""
    pytest.importorskip("ragas")
    pytest.importorskip("deepeval")
    monkeypatch.chdir(tmp_path)  # deepeval must leave no .deepeval/ in the working folder
    out = tmp_path / "cmp"
    metrics = "faithfulness,context_recall,context_precision,hallucination"
    r = invoke(
        "compare",
        DATA,
        "--backends",
        "native,ragas,deepeval",
        "--metrics",
        metrics,
        "--base-url",
        judge_server.base_url,
        "--model",
        "fake",
        "--embedding",
        judge_server.base_url,
        "--embedding-model",
        "fake",
        "--max-samples",
        "6",
        "--out",
        out,
        "--quiet",
    )
    rows = [as_read(json.loads(line)) for line in (out / "scores.jsonl").read_text().splitlines()]
    # the fake judge's synthetic answers can be outside what a ragas metric allows (an
    # "attributed: 2"): those tasks are explicit errors, and the exit code says so
    errors = [row["error"] for row in rows if row["error"]]
    assert all("outside its own range" in e for e in errors), errors
    assert r.exit_code == (3 if errors else 0), r.output
    # 6 samples × (3 metrics on 3 backends + hallucination on native and deepeval)
    assert len(rows) == 6 * (3 * 3 + 2)
    for row in rows:
        assert (row["value"] is not None and 0 <= row["value"] <= 10) != bool(row["error"]), row
    cc = json.loads((out / "crosscheck.json").read_text())
    assert set(cc["backends"]) == {"native", "ragas", "deepeval"}
    pairs = cc["metrics"]["faithfulness"]["pairs"]
    assert len(pairs) == 3 and all(p["n"] + p["excluded"] == 6 for p in pairs)
    assert not (tmp_path / ".deepeval").exists()


def test_run_prints_unknown_field_warning_as_one_plain_line(tmp_path):
    # it used to be Python's "…/unified/data/io.py:288: UserWarning: …" plus a source line
    import uuid

    field = f"annotator_{uuid.uuid4().hex[:8]}"  # unique: the warning is once per process
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps({"id": "a", "user_input": "q", "retrieved_ids": ["d1"], "relevant_ids": ["d1"], field: "kb"}) + "\n",
        encoding="utf-8",
    )
    r = invoke("run", data, "--metrics", "mrr", "--out", tmp_path / "run", "-q")
    assert r.exit_code == 0, r.output
    assert f"warning: unknown field '{field}' kept in metadata" in r.output
    assert "UserWarning" not in r.output and "io.py" not in r.output


def test_dry_run_refuses_unknown_backend_and_skips_unimplemented_pairs():
    # --dry-run used to accept --backend nativ (exit 0) and list mrr on deepeval as 0 calls
    r = invoke("run", DATA, "--metrics", "mrr", "--backend", "nativ", "--dry-run")
    assert r.exit_code == 2 and "unknown backend 'nativ'" in r.output
    r = invoke("run", DATA, "--metrics", "mrr", "--backend", "deepeval", "--dry-run")
    assert r.exit_code == 2 and "mrr (deepeval): not implemented" in r.output
    r = invoke("run", DATA, "--metrics", "mrr,faithfulness", "--backend", "native,embedding", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "embedding │ mrr" not in r.output and "native    │ mrr" in r.output
    assert "not implemented" not in r.output  # native serves mrr: no news
    # as a real run would: without a judge, native's faithfulness is skipped (embedding's is not)
    assert "skipping faithfulness (native): no LLM judge configured" in r.output


def test_broken_plugin_is_one_line_not_a_traceback(tmp_path):
    # a plugin raising at import used to print a rich traceback (only ImportError was caught)
    plug = tmp_path / "broken_plugin_zz.py"
    plug.write_text("x = 1\ny = 1 / 0\n", encoding="utf-8")
    r = invoke("run", DATA, "--plugins", plug, "--metrics", "mrr", "--out", tmp_path / "run", "-q")
    assert r.exit_code == 2
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    line = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert line == [f"error: --plugins {plug}: ZeroDivisionError: division by zero at broken_plugin_zz.py:2"]


def test_bad_cache_path_is_one_line(tmp_path, monkeypatch):
    # --cache DIR and --cache not-a-database used to end in an sqlite3 traceback
    monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "m")
    folder = tmp_path / "cachedir"
    folder.mkdir()
    r = invoke("run", DATA, "--metrics", "mrr", "--cache", folder, "--out", tmp_path / "a", "-q")
    assert r.exit_code == 2 and "is a folder" in r.output and "Traceback" not in r.output
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not sqlite at all\n" * 100, encoding="utf-8")
    r = invoke("run", DATA, "--metrics", "mrr", "--cache", junk, "--out", tmp_path / "b", "-q")
    assert r.exit_code == 2 and "cannot open the judge cache" in r.output and "Traceback" not in r.output


def test_config_syntax_error_names_the_file_and_leaves_no_folder(tmp_path):
    # a YAML syntax error used to be a traceback; a TOML one did not name the file; and
    # the run folder was created before the config was read
    bad_yaml = tmp_path / "run.yaml"
    bad_yaml.write_text("judge: [1,2\n", encoding="utf-8")
    bad_toml = tmp_path / "run.toml"
    bad_toml.write_text("[judge\nmodel=", encoding="utf-8")
    for cfg in (bad_yaml, bad_toml):
        out = tmp_path / f"out_{cfg.suffix[1:]}"
        r = invoke("run", DATA, "--metrics", "faithfulness", "--config", cfg, "--out", out, "-q")
        assert r.exit_code == 2 and "Traceback" not in r.output
        errors = [x for x in r.output.splitlines() if x.startswith("error:")]
        assert len(errors) == 1 and f"--config {cfg}" in errors[0]
        assert not out.exists()


def test_out_that_is_a_file_is_one_line(tmp_path):
    # --out pointing at an existing file ended in a FileExistsError traceback
    f = tmp_path / "afile"
    f.write_text("x", encoding="utf-8")
    for extra in ([], ["--no-cache"]):
        r = invoke("run", DATA, "--metrics", "mrr", "--out", f, "-q", *extra)
        assert r.exit_code == 2 and "is a file, not a folder" in r.output and "Traceback" not in r.output
    r = invoke("run", DATA, "--metrics", "mrr", "--out", f / "sub", "-q", "--no-cache")
    assert r.exit_code == 2 and "cannot create the run folder" in r.output


def test_compare_same_backend_twice_is_not_two_backends(tmp_path):
    r = invoke("compare", DATA, "--backends", "native,native", "--metrics", "mrr", "--out", tmp_path / "c", "-q")
    assert r.exit_code == 2 and "at least two backends" in r.output


def test_api_key_env_naming_an_unset_variable_is_a_user_error(tmp_path, monkeypatch):
    monkeypatch.delenv("UNIFIED_TEST_NO_SUCH_KEY", raising=False)
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "faithfulness",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--api-key-env",
        "UNIFIED_TEST_NO_SUCH_KEY",
        "--out",
        tmp_path / "o",
    )
    assert r.exit_code == 2
    assert "UNIFIED_TEST_NO_SUCH_KEY: that environment variable is not set" in r.output


def test_judge_outage_fails_the_run_and_retry_errors_rescores_only_the_failures(tmp_path):
    """A run where the judge is unreachable exits 3 (tasks failed); once it is back (the
    same server, same address), resuming without --retry-errors still exits 3 (the folder
    holds failures) unless --allow-errors; --retry-errors scores the failed tasks again,
    one line per task."""
    import socket

    from judge_server import JudgeServer

    with socket.socket() as s:  # a port where nothing listens yet; the judge comes up there later
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    out = tmp_path / "o"
    common = [
        "--metrics",
        "faithfulness,mrr",
        "--model",
        "fake",
        "--max-samples",
        "3",
        "--out",
        out,
        "--quiet",
        "--single-judge",
        "--base-url",
        url,
    ]
    down = invoke("run", DATA, "--metrics", "faithfulness", *common[2:])
    assert down.exit_code == 3 and "no task produced a score" in down.output
    rows = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["error"] for r in rows)
    # judge back: without --retry-errors the failures count as done (and still fail the run)
    judge_server = JudgeServer(port=port).start()
    try:
        assert invoke("run", DATA, *common).exit_code == 3
        assert invoke("run", DATA, *common, "--allow-errors").exit_code == 0
        assert (
            sum(
                1
                for r in map(lambda x: as_read(json.loads(x)), (out / "scores.jsonl").read_text().splitlines())
                if r["metric"] == "faithfulness" and r["error"]
            )
            == 3
        )
        r = invoke("run", DATA, *common, "--retry-errors")
    finally:
        judge_server.stop()
    assert r.exit_code == 0, r.output
    rows = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]
    keys = [(r["sample_id"], r["metric"], r["backend"]) for r in rows]
    assert len(keys) == len(set(keys)) == 6  # 3 samples × (faithfulness, mrr), once each
    assert all(r["error"] is None for r in rows)


def test_failures_of_pairs_the_run_did_not_ask_for_are_said_with_how_to_retry_them(tmp_path):
    """An earlier run's failed pair in the folder kept the exit at 3, but the hint named
    only this run's --metrics: its --retry-errors could never redo those tasks."""
    rows = [{"id": f"s{i}", "user_input": "q?", "retrieved_ids": ["a", "b"]} for i in range(4)]
    rows[1]["relevant_ids"] = rows[3]["relevant_ids"] = ["a"]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o"
    assert invoke("run", data, "--metrics", "mrr", "--backends", "native", "--out", out, "-q").exit_code == 3
    r = invoke("run", data, "--metrics", "precision@2", "--backends", "native", "--out", out, "-q")
    assert r.exit_code == 3
    assert (
        "note: failed tasks of pairs this run did not ask for: 2 of mrr (native); --retry-errors scores a pair "
        "again only when --metrics and --backends name it" in " ".join(r.output.split())
    )
    both = invoke("run", data, "--metrics", "mrr,precision@2", "--backends", "native", "--out", out, "-q")
    assert "did not ask for" not in both.output


def test_an_empty_input_is_a_failed_run_not_a_pass(tmp_path):
    """A 0-byte export (a broken pipeline upstream) exited 0 with "rows read 0": a CI gate
    without --fail-under passed on nothing. It is exit 3 with one line now; an input
    whose rows were all scored before (a no-op rerun) still exits 0."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = invoke("run", empty, "--metrics", "mrr", "--out", tmp_path / "e")
    assert r.exit_code == 3, r.output
    assert "the input has no rows" in r.output
    assert invoke("run", empty, "--metrics", "mrr", "--out", tmp_path / "e2", "--allow-errors").exit_code == 0
    one = tmp_path / "one.jsonl"
    one.write_text('{"id": "a", "retrieved_ids": ["d1"], "relevant_ids": ["d1"]}\n')
    for _ in range(2):
        assert invoke("run", one, "--metrics", "mrr", "--out", tmp_path / "o", "--quiet").exit_code == 0


def test_base_url_takes_the_model_from_the_environment_or_the_config(tmp_path, monkeypatch):
    """``--base-url`` was refused ("needs --model") when the model came from
    UNIFIED_JUDGE_MODEL or ``--config``, though settings resolve field by field; with no
    model anywhere the one rule's message names every way to give it."""
    from judge_server import JudgeServer

    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"user_input": "q?", "response": "a.", "retrieved_contexts": ["a."]}) + "\n")
    cfg = tmp_path / "run.toml"
    cfg.write_text('[judge]\nmodel = "from-config"\n')
    monkeypatch.delenv("UNIFIED_JUDGE_MODEL", raising=False)
    with JudgeServer() as srv:
        common = ["run", rows, "--metrics", "faithfulness", "--single-judge", "--base-url", srv.base_url, "-q"]
        none = invoke(*common, "--out", tmp_path / "none")
        assert (
            none.exit_code == 2
            and "the judge needs a model name" in none.output
            and "UNIFIED_JUDGE_MODEL" in none.output
        )
        by_config = invoke(*common, "--config", cfg, "--out", tmp_path / "c")
        assert by_config.exit_code == 0, by_config.output
        monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "from-env")
        by_env = invoke(*common, "--out", tmp_path / "e")
        assert by_env.exit_code == 0, by_env.output
    models = {
        name: json.loads((tmp_path / name / "summary.json").read_text())["config"]["judges"]["judge"]["model"]
        for name in ("c", "e")
    }
    assert models == {"c": "from-config", "e": "from-env"}
