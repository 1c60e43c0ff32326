"""Secrets through real command-line runs: every URL and key a user gives — both judges,
the embedder, the batch endpoint, MLflow, Ray, a key pasted where a variable's NAME
belongs — reaches the server that needs it and nothing else. Each test runs
``unified-eval`` against the loopback judge and greps stdout, stderr and every file the
run leaves behind (the run folder with its report, the judge cache database) for any
eight characters of the secret."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from judge_batch_server import BatchEndpoints
from judge_server import JudgeServer
from support import cli_env

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
CLI = Path(sys.executable).parent / "unified-eval"
#: shaped like a provider key (mixed case and digits), never sk-… (that shape is masked anyway)
SECRET = "Zq7sK2pLm9XwR4tY8vB3nH6jD1fG5cA0"
ENV_KEY = "sk-proj-ENVKEY-4c1e9a77b2d0"


def pieces(secret: str, n: int = 8) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1)] or [secret]


def leaks(run: subprocess.CompletedProcess, folder: Path, *secrets: str) -> list[str]:
    """Where any n-character piece of a secret shows: 'stdout', 'stderr' or a file's path."""
    found = []
    texts = {"stdout": run.stdout.encode(), "stderr": run.stderr.encode()}
    texts.update({str(f.relative_to(folder)): f.read_bytes() for f in folder.rglob("*") if f.is_file()})
    for where, data in texts.items():
        if any(p.encode() in data for s in secrets for p in pieces(s)):
            found.append(where)
    return found


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None, metrics: str = "faithfulness"):
    """``unified-eval run`` on 2 samples into tmp_path/run with its cache in tmp_path."""
    cmd = [str(CLI), "run", str(DATA), "-m", metrics, "--max-samples", "2", "--out", str(tmp_path / "run")]
    cmd += ["--cache", str(tmp_path / "cache.sqlite"), "--max-retries", "0", *args]
    full_env = {**cli_env(), "OPENAI_API_KEY": ENV_KEY, **(env or {})}
    return subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=300)


def host_of(srv: JudgeServer) -> str:
    return srv.base_url.split("://", 1)[1]


URL_FORMS = {
    "userinfo": lambda srv: f"http://user:{SECRET}@{host_of(srv)}",
    "userinfo-encoded": lambda srv: f"http://user:{SECRET[:10]}%2F{SECRET[10:]}@{host_of(srv)}",
    "userinfo-spaced": lambda srv: f"http://user:{SECRET[:10]} {SECRET[10:]}@{host_of(srv)}",
    "query": lambda srv: f"{srv.base_url}?api-version=1&api-key={SECRET}",
    "path-parameter": lambda srv: f"{srv.base_url};api_key={SECRET}",
    "fragment": lambda srv: f"{srv.base_url}#{SECRET}",
}


@pytest.mark.parametrize("form", sorted(URL_FORMS))
@pytest.mark.parametrize("judge", ["judge", "judge2"])
def test_a_credential_in_a_judge_url_reaches_the_server_only(judge, form, tmp_path):
    with JudgeServer() as srv:
        url = URL_FORMS[form](srv)
        args = ["--base-url", url, "--model", "m"] if judge == "judge" else []
        if judge == "judge2":
            args = ["--base-url", srv.base_url, "--model", "m", "--judge2-model", "m2", "--judge2-base-url", url]
        r = cli(tmp_path, *args)
        queries, auth = list(srv.queries), set(srv.auth_headers)
    # a path parameter is not routed by the loopback server: its tasks fail, naming the URL
    assert r.returncode == (3 if form == "path-parameter" else 0), r.stderr[-2000:]
    assert not leaks(r, tmp_path, SECRET[:10], SECRET[10:], ENV_KEY)
    if form == "query":
        assert any(SECRET in q for q in queries)  # it was sent, to the server
    if form == "userinfo":
        assert any(a.startswith("Basic ") for a in auth)


@pytest.mark.parametrize("how", ["env", "config"])
def test_a_credential_in_the_second_judges_url_from_the_environment_or_a_run_file(how, tmp_path):
    with JudgeServer() as srv:
        url = f"http://user:{SECRET}@{host_of(srv)}?token={SECRET}"
        if how == "env":
            r = cli(
                tmp_path,
                "--base-url",
                srv.base_url,
                "--model",
                "m",
                env={"UNIFIED_JUDGE2_BASE_URL": url, "UNIFIED_JUDGE2_MODEL": "m2"},
            )
        else:
            cfg = tmp_path / "run.toml"
            cfg.write_text(
                f'[judge]\nmodel = "m"\nbase_url = "{srv.base_url}"\n[judge2]\nmodel = "m2"\nbase_url = "{url}"\n'
            )
            r = cli(tmp_path, "--config", str(cfg))
            cfg.unlink()  # the user's own file holds the secret: not part of what the run wrote
        assert srv.request_count > 0
    assert r.returncode == 0, r.stderr[-2000:]
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)


def test_a_dead_second_judge_with_credentials_is_named_without_them(tmp_path):
    with JudgeServer() as srv:
        r = cli(
            tmp_path,
            *("--base-url", srv.base_url, "--model", "m", "--judge2-model", "m2"),
            *("--judge2-base-url", f"http://user:{SECRET}@127.0.0.1:9/v1?api_key={SECRET}"),
        )
    assert r.returncode == 3 and "127.0.0.1:9" in r.stderr
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)


def test_a_server_that_echoes_the_key_in_its_error_is_scrubbed(tmp_path):
    with JudgeServer(fault_message=f"bad key {ENV_KEY} for {SECRET}") as srv:
        srv.force_fault("401", 100)
        r = cli(tmp_path, "--base-url", f"{srv.base_url}?key={SECRET}", "--model", "m")
    assert r.returncode == 3 and "HTTP 401" in r.stderr
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)


def test_a_credential_in_the_embeddings_url_reaches_the_server_only(tmp_path):
    with JudgeServer() as srv:
        r = cli(
            tmp_path,
            *("--base-url", srv.base_url, "--model", "m"),
            *("--embedding", f"http://u:{SECRET}@{host_of(srv)}?api_key={SECRET}", "--embedding-model", "e"),
            metrics="semantic_similarity",
        )
        assert srv.embedding_count > 0
    assert r.returncode == 0, r.stderr[-2000:]
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)


def test_a_credential_in_a_batch_judges_url_stays_out_of_the_ledger(tmp_path):
    with JudgeServer(batch=BatchEndpoints()) as srv:
        r = cli(
            tmp_path,
            *("--base-url", f"http://user:{SECRET}@{host_of(srv)}?api_key={SECRET}", "--model", "m"),
            *("--batch", "--batch-poll", "0.2", "--batch-window", "0.2"),
        )
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "run" / "batches.jsonl").exists()
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_a_key_pasted_where_a_variable_name_belongs_is_refused_without_echo(how, tmp_path):
    """--api-key-env takes a variable's NAME; a user pasted the key itself. Refused with one
    line, exit 2, before anything is sent — and the line does not repeat it."""
    with JudgeServer() as srv:
        args, env = ["--base-url", srv.base_url, "--model", "m"], {}
        if how == "flag":
            args += ["--api-key-env", SECRET]
        elif how == "env":
            env["UNIFIED_JUDGE_API_KEY_ENV"] = SECRET
        else:
            cfg = tmp_path / "run.toml"
            cfg.write_text(f'[judge]\napi_key_env = "{SECRET}"\n')
            args += ["--config", str(cfg)]
        r = cli(tmp_path, *args, env=env)
        if how == "config":
            (tmp_path / "run.toml").unlink()
        assert srv.request_count == 0
    assert r.returncode == 2, r.stderr[-2000:]
    assert "api_key_env" in r.stderr or "--api-key-env" in r.stderr
    assert "NAME of an environment variable" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)


def test_a_variable_name_that_is_not_set_is_named(tmp_path):
    r = cli(tmp_path, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "MY_JUDGE_KEY")
    assert r.returncode == 2
    assert "--api-key-env MY_JUDGE_KEY: that environment variable is not set" in r.stderr


def test_a_url_without_a_scheme_for_the_embedder_is_refused_without_its_password(tmp_path):
    r = cli(tmp_path, "--embedding", f"user:{SECRET}@127.0.0.1:9/v1", metrics="semantic_similarity")
    assert r.returncode == 2 and "embedding must be 'local' or an http(s) URL" in r.stderr
    assert not leaks(r, tmp_path, SECRET)


@pytest.mark.parametrize(
    "text",
    [
        f"judge:\n  model: m\n  base_url: http://user:{SECRET}@127.0.0.1:9/v1\n   bad: [\n",
        # PyYAML quotes the start of the broken line, cut before the URL's '@'
        f'judge:\n  model: m\n  base_url: "http://user:{SECRET}@127.0.0.1:9/v1\n',
    ],
    ids=["mapping", "quoted"],
)
def test_a_broken_yaml_run_file_is_named_without_its_secrets(text, tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(text)
    r = cli(tmp_path, "--config", str(cfg))
    cfg.unlink()
    assert r.returncode == 2 and "run.yaml" in r.stderr and "line " in r.stderr
    assert not leaks(r, tmp_path, SECRET)


def test_a_credential_in_the_mlflow_uri_is_not_shown(tmp_path):
    pytest.importorskip("mlflow")
    with JudgeServer() as srv:
        r = cli(
            tmp_path,
            *("--base-url", srv.base_url, "--model", "m"),
            *("--mlflow", f"http://user:{SECRET}@127.0.0.1:9", "--mlflow-timeout", "20"),
        )
    assert r.returncode == 2 and "MLflow" in r.stderr
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)


@pytest.mark.slow
@pytest.mark.ray
def test_a_credential_in_the_ray_address_is_not_shown(tmp_path):
    pytest.importorskip("ray")
    with JudgeServer() as srv:
        r = cli(
            tmp_path,
            *("--base-url", srv.base_url, "--model", "m"),
            *("--executor", "ray", "--ray-address", f"ray://user:{SECRET}@127.0.0.1:9"),
            env={"UNIFIED_RAY_CONNECT_TIMEOUT": "5"},
        )
    assert r.returncode == 2 and "Ray" in r.stderr
    assert not leaks(r, tmp_path, SECRET, ENV_KEY)
