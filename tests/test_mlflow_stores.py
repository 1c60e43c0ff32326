"""MLflow as users run it in 2026: ``--mlflow sqlite:///…`` (MLflow 3's default store)
logs a run that ``mlflow.search_runs`` reads back, with the URI shown exactly as given;
a missing piece (mlflow, or SQLAlchemy / alembic for a database store) or a sqlite URI
that cannot work is refused before anything is scored; the file store still works and
says it is deprecated."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified.cli.app import app
from unified.platforms import mlflow_log
from unified.redact import redact_url

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"


@pytest.fixture(autouse=True)
def no_mlflow_env(monkeypatch):
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_ALLOW_FILE_STORE"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def search_runs(uri: str) -> list:
    """``mlflow.search_runs`` on ``uri``, as a user reads a store back."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    try:
        return mlflow.search_runs(experiment_names=["unified-rag-eval"], output_format="list")
    finally:
        mlflow.set_tracking_uri(None)


@pytest.mark.parametrize("absolute", [True, False])
def test_a_sqlite_store_logs_a_run_that_search_runs_reads_back(tmp_path, monkeypatch, absolute):
    pytest.importorskip("mlflow")
    pytest.importorskip("alembic")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere if absolute else tmp_path)
    uri = f"sqlite:///{tmp_path / 'runs.db'}" if absolute else "sqlite:///runs.db"
    r = invoke("run", DATA, "--metrics", "mrr,precision@3", "--out", tmp_path / "run", "--quiet", "--mlflow", uri)
    assert r.exit_code == 0, r.output
    logged = [line for line in r.output.splitlines() if line.startswith("logged MLflow run")]
    assert len(logged) == 1 and logged[0].endswith(f" to {uri}")  # the URI as given, every slash kept
    assert (tmp_path / "runs.db").is_file()
    runs = search_runs(uri)
    assert len(runs) == 1 and runs[0].info.run_id in logged[0]
    assert runs[0].data.metrics["mrr/native/count"] == sum(1 for _ in open(DATA))
    assert 0 <= runs[0].data.metrics["mrr/native/mean"] <= 10 and "precision_at_3/native/mean" in runs[0].data.metrics
    assert "note:" not in r.output  # no deprecation for MLflow's own default store
    # the artefacts sit beside the database, not in ./mlruns of the folder the run started from
    assert not (elsewhere / "mlruns").exists()
    assert {p.name for p in (tmp_path / "mlruns").rglob("*") if p.is_file()} >= {"scores.jsonl", "summary.json"}


def hide(monkeypatch, *modules: str) -> None:
    """Make ``modules`` look not installed (as in a venv with mlflow-skinny only)."""
    real = mlflow_log.importlib.util.find_spec
    monkeypatch.setattr(
        mlflow_log.importlib.util, "find_spec", lambda name, *a: None if name in modules else real(name, *a)
    )


@pytest.mark.parametrize("missing", [("alembic",), ("sqlalchemy", "alembic")])
def test_skinny_mlflow_and_a_sqlite_store_are_refused_before_scoring(tmp_path, monkeypatch, missing):
    hide(monkeypatch, *missing)
    uri = f"sqlite:///{tmp_path / 'runs.db'}"
    r = invoke("run", DATA, "--metrics", "mrr", "--out", tmp_path / "run", "--mlflow", uri)
    assert r.exit_code == 2, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert errors == [
        f"error: MLflow logging to {uri} needs the full mlflow package ({' and '.join(missing)} "
        f"missing: mlflow-skinny cannot open a sqlite store): pip install 'mlflow>=3,<=3.17.2'"
    ]
    assert not (tmp_path / "run").exists()  # nothing scored
    from unified.api import evaluate

    with pytest.raises(ImportError, match=r"pip install 'mlflow>=3,<=3.17.2'"):
        evaluate(str(DATA), ["mrr"], quiet=True, mlflow=uri, out=tmp_path / "run2")
    assert not (tmp_path / "run2").exists()


def test_no_mlflow_at_all_is_refused_before_scoring(tmp_path, monkeypatch):
    hide(monkeypatch, "mlflow")
    r = invoke("run", DATA, "--metrics", "mrr", "--out", tmp_path / "run", "--mlflow", "http://127.0.0.1:5000")
    assert r.exit_code == 2 and f"error: {mlflow_log.INSTALL_HINT}" in r.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "uri, says",
    [
        ("sqlite://tmp/runs.db", "'tmp' would be read as a host; a sqlite URI has three slashes"),
        ("sqlite:///no/such/folder/runs.db", "the folder no/such/folder does not exist"),
        ("sqlite://", "an in-memory database forgets the run"),
    ],
)
def test_a_sqlite_uri_that_cannot_work_is_refused_before_scoring(tmp_path, monkeypatch, uri, says):
    pytest.importorskip("mlflow")
    pytest.importorskip("alembic")
    monkeypatch.chdir(tmp_path)
    r = invoke("run", DATA, "--metrics", "mrr", "--out", tmp_path / "run", "--mlflow", uri)
    assert r.exit_code == 2, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and says in errors[0], errors
    assert not (tmp_path / "run").exists()


def test_a_file_store_still_works_and_says_it_is_deprecated(tmp_path):
    pytest.importorskip("mlflow")
    store = tmp_path / "mlruns"
    r = invoke("run", DATA, "--metrics", "mrr", "--out", tmp_path / "run", "--quiet", "--mlflow", store)
    assert r.exit_code == 0, r.output
    assert "logged MLflow run" in r.output and store.is_dir()
    notes = [x for x in r.output.splitlines() if x.startswith("note:")]
    assert len(notes) == 1 and "maintenance mode" in notes[0] and "sqlite:///mlflow.db" in notes[0]


@pytest.mark.parametrize(
    "uri", ["sqlite:///runs.db", "sqlite:////tmp/runs.db", "file:///tmp/mlruns", "http://127.0.0.1:5000/", "databricks"]
)
def test_uris_are_shown_exactly_as_given(uri):
    assert mlflow_log.resolve_tracking_uri(uri) == uri
    assert redact_url(uri) == uri
    assert redact_url("https://u:SECRET@host/mlflow?token=T2&x=1") == "https://***@host/mlflow?token=***&x=1"


def test_a_sqlite_uri_with_a_password_is_refused_without_repeating_it():
    # found in review: sqlite_path's refusals quoted the URI as typed, userinfo included
    with pytest.raises(mlflow_log.MlflowUriError) as e:
        mlflow_log.sqlite_path("sqlite://bob:s3cr3t-pw@dbhost/runs.db")
    text = str(e.value)
    assert "s3cr3t-pw" not in text and "bob" not in text
    assert "'dbhost' would be read as a host" in text and "sqlite:///dbhost/runs.db" in text
