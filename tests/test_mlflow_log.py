"""MLflow logging: ``--mlflow`` and ``evaluate(mlflow=...)`` write one MLflow run to a local
file store (offline, no server), read back here through MLflow's own client."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified import Sample
from unified.cli.app import app
from unified.platforms import mlflow_log
from unified.platforms.mlflow_log import _Keys, mlflow_key, resolve_tracking_uri

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
ARTEFACTS = {"scores.jsonl", "summary.json", "report.html", "mlflow_keys.json"}


@pytest.fixture(autouse=True)
def no_mlflow_env(monkeypatch):
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_ALLOW_FILE_STORE"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def read_back(store: Path, monkeypatch):
    """(client, the one run, its artefact names), read as any MLflow user would."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for it to open a file store
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store.as_uri())
    exp = client.get_experiment_by_name("unified-rag-eval")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1
    run = runs[0]
    return client, run, {f.path for f in client.list_artifacts(run.info.run_id)}


def test_metric_names_become_valid_mlflow_keys():
    assert mlflow_key("precision@3", "native", "mean") == "precision_at_3/native/mean"
    assert mlflow_key("context_relevancy[variant=sentence]") == "context_relevancy.variant-sentence"
    assert mlflow_key("faithfulness[t=0.8,threshold=6]") == "faithfulness.t-0.8.threshold-6"
    assert mlflow_key("a/b", "..", "x y:z") == "a_b/_/x_y_z"
    keys = _Keys()
    assert [keys.key("a@b", "native"), keys.key("a_at_b", "native"), keys.key("a@b", "x")] == [
        "a_at_b/native",
        "a_at_b_2/native",
        "a_at_b/x",
    ]
    assert keys.names == {"a_at_b": "a@b", "a_at_b_2": "a_at_b"}
    validation = pytest.importorskip("mlflow.utils.validation")
    for name in ("precision@3", "context_relevancy[variant=sentence]", "ndcg@10", "a/../b", "é@1"):
        validation._validate_metric_name(mlflow_key(name, "native", "mean"))  # raises when invalid


def test_tracking_uri_resolution(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_tracking_uri(True) == (tmp_path / "mlruns").resolve().as_uri()
    assert resolve_tracking_uri("store") == (tmp_path / "store").resolve().as_uri()
    for uri in ("file:///x/mlruns", "http://127.0.0.1:5000", "sqlite:///m.db", "databricks"):
        assert resolve_tracking_uri(uri) == uri
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert resolve_tracking_uri(True) == "http://tracking:5000"


@pytest.mark.slow
def test_compare_logs_params_metrics_and_artefacts(tmp_path, judge_server, monkeypatch):
    pytest.importorskip("mlflow")
    out, store = tmp_path / "run", tmp_path / "mlruns"
    r = invoke(
        "compare",
        DATA,
        "--backends",
        "native,embedding",
        "--metrics",
        "faithfulness,semantic_similarity,precision@3",
        "--base-url",
        judge_server.base_url,
        "--model",
        "loopback",
        "--embedding",
        "local",
        "--max-samples",
        "4",
        "--out",
        out,
        "--quiet",
        "--mlflow",
        store,
    )
    assert r.exit_code == 0, r.output
    assert f"to {store.resolve().as_uri()}" in r.output
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ  # set only while logging
    client, run, files = read_back(store, monkeypatch)
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    p = run.data.params
    assert p["backends"] == "native,embedding" and p["metrics"] == "faithfulness,semantic_similarity,precision@3"
    assert p["judge.model"] == "loopback" and p["embedding.model"] == "all-MiniLM-L6-v2"
    assert p["dataset.path"] == str(DATA) and p["dataset.rows"] == "4"
    assert p["dataset.sha256"] == hashlib.sha256(DATA.read_bytes()).hexdigest()

    m = run.data.metrics
    summary = json.loads((out / "summary.json").read_text())
    for a in summary["aggregates"]:
        key = mlflow_key(a["metric"], a["backend"])
        assert m[f"{key}/errors"] == a["errors"] and m[f"{key}/count"] == a["count"] == 4
        assert m[f"{key}/mean"] == pytest.approx(a["mean"])
        assert (f"{key}/pass_rate" in m) == (a["pass_rate"] is not None)
    assert "precision_at_3/native/mean" in m and "precision@3/native/mean" not in m
    cc = json.loads((out / "crosscheck.json").read_text())
    pair = cc["metrics"]["semantic_similarity"]["pairs"][0]
    assert m[f"semantic_similarity/{pair['a']}_vs_{pair['b']}/spearman"] == pytest.approx(pair["spearman"])
    assert m["run/skipped_pairs"] == len(summary["skipped_pairs"]) == 1  # precision@3 on embedding
    assert run.data.tags["unified.exit_code"] == "0" and run.data.tags["unified.run_dir"] == str(out.resolve())

    assert files == ARTEFACTS | {"crosscheck.json"}
    local = Path(client.download_artifacts(run.info.run_id, "scores.jsonl", str(tmp_path)))
    assert local.read_bytes() == (out / "scores.jsonl").read_bytes()
    keys = json.loads(Path(client.download_artifacts(run.info.run_id, "mlflow_keys.json", str(tmp_path))).read_text())
    assert keys["precision_at_3"] == "precision@3"


@pytest.mark.slow
def test_evaluate_logs_an_in_memory_run_offline_with_the_embedding_backend(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from unified.api import evaluate

    samples = [
        Sample(
            id=f"s{i}",
            user_input="What is the capital of France?",
            response=resp,
            retrieved_contexts=["Paris is the capital of France."],
            reference="Paris.",
        )
        for i, resp in enumerate(["Paris is the capital of France.", "The moon is made of cheese."])
    ]
    store = tmp_path / "mlruns"
    report = evaluate(
        samples, ["faithfulness", "semantic_similarity"], backends="embedding", quiet=True, progress=False, mlflow=store
    )
    assert report.run_dir is None  # out=None: nothing written but the MLflow run
    _client, run, files = read_back(store, monkeypatch)
    assert run.info.run_name == "evaluate" and files == ARTEFACTS
    assert run.data.params["backends"] == "embedding"
    assert run.data.params["embedding.model"] == "all-MiniLM-L6-v2"
    lines = sorted({f"{s.sample_id}\t{s.sample_hash}" for s in report.iter_scores()})
    assert run.data.params["dataset.sha256"] == hashlib.sha256("\n".join(lines).encode()).hexdigest()
    for a in report.summary():
        assert run.data.metrics[f"{a.metric}/embedding/mean"] == pytest.approx(a.mean)
        assert run.data.metrics[f"{a.metric}/embedding/errors"] == 0
    assert run.data.metrics["run/judge_calls"] >= 0 and "run/seconds" in run.data.metrics


def test_a_missing_extra_is_one_line_before_anything_runs(tmp_path, monkeypatch):
    real = mlflow_log.importlib.util.find_spec
    monkeypatch.setattr(
        mlflow_log.importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a)
    )
    r = invoke("run", DATA, "--metrics", "mrr", "--out", tmp_path / "run", "--mlflow", tmp_path / "mlruns")
    assert r.exit_code == 2
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert errors == ["error: " + mlflow_log.INSTALL_HINT]
    assert not (tmp_path / "run").exists()
    from unified.api import evaluate

    with pytest.raises(ImportError, match=r"pip install 'unified-rag-eval\[mlflow\]'"):
        evaluate(str(DATA), ["mrr"], quiet=True, mlflow=True)


def test_a_failed_log_changes_the_exit_code_and_keeps_the_results(tmp_path):
    pytest.importorskip("mlflow")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = tmp_path / "run"
    r = invoke("run", DATA, "--metrics", "mrr", "--out", out, "--quiet", "--mlflow", blocker / "mlruns")
    assert r.exit_code == 2, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: MLflow logging to {(blocker / 'mlruns').as_uri()} failed")
    assert len((out / "scores.jsonl").read_text().splitlines()) == sum(1 for _ in open(DATA))
    from unified.api import evaluate

    with pytest.raises(mlflow_log.MlflowLogError) as e:
        evaluate(str(DATA), ["mrr"], quiet=True, progress=False, mlflow=blocker / "mlruns")
    assert len(list(e.value.report.iter_scores())) == len(out.joinpath("scores.jsonl").read_text().splitlines())


def test_credentials_in_the_tracking_uri_never_show(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # nothing listens on port 9: fail at once
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "mrr",
        "--out",
        tmp_path / "run",
        "--quiet",
        "--mlflow",
        "http://user:SECRET-PW-1@127.0.0.1:9/?token=SECRET-TOKEN-2",
    )
    assert r.exit_code == 2, r.output
    assert "error: MLflow logging to http://***@127.0.0.1:9/?token=*** failed" in r.output
    assert "SECRET-PW-1" not in r.output and "SECRET-TOKEN-2" not in r.output
    for f in (tmp_path / "run").iterdir():
        if f.is_file():
            assert b"SECRET-" not in f.read_bytes(), f  # nor in the resume hint of run.json
