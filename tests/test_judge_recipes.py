"""The judges teams really have (docs/judge.md, "Recipes"): Azure OpenAI, LiteLLM's proxy in
front of Anthropic and Gemini models, Ollama, vLLM and Gemini's own OpenAI-compatible
endpoint — each run through the command line against a loopback server that wants what
that server wants (path, query, headers, model) and answers its errors in its own shape
(tests/judge_flavours.py); and a provider-prefixed model with no base URL is refused
instead of going quietly to OpenAI's API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest
from judge_flavours import AZURE_DEPLOYMENT, AZURE_VERSION, FlavourServer
from pydantic import BaseModel
from support import cli_env

from unified.judge import JudgeConfig, JudgeHTTPError, OpenAIChatJudge, resolve_judges

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
CLI = Path(sys.executable).parent / "unified-eval"
KEY = "team-judge-key-0123456789"


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [str(CLI), "run", str(DATA), "-m", "faithfulness", "--max-samples", "2", "--out", str(tmp_path / "run")]
    cmd += ["--cache", str(tmp_path / "cache.sqlite"), *args]
    base = {k: v for k, v in cli_env().items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_VERSION")}
    return subprocess.run(cmd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=300)


RECIPES = {
    # flavour, model, whether the server wants a key
    "azure": ("azure", "gpt-4o-mini", True),
    "litellm-anthropic": ("litellm", "anthropic/claude-3-5-sonnet-20241022", True),
    "litellm-gemini": ("litellm", "gemini/gemini-1.5-flash", True),
    "ollama": ("ollama", "qwen2.5:7b", False),
    "vllm": ("vllm", "Qwen/Qwen2.5-7B-Instruct", True),
    "gemini": ("gemini", "gemini-1.5-flash", True),
}


def _sent_as_that_server_wants(srv: FlavourServer) -> None:
    assert srv.seen
    for req in srv.seen:
        headers = {k.lower(): v for k, v in req["headers"].items()}
        if srv.flavour == "azure":
            assert req["path"] == f"/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions"
            assert req["query"] == {"api-version": AZURE_VERSION}
            assert headers.get("api-key") == KEY and "authorization" not in headers
        elif srv.key is not None:
            assert headers.get("authorization") == f"Bearer {KEY}" and "api-key" not in headers


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_recipe_scores_through_the_command_line(recipe, tmp_path):
    flavour, model, keyed = RECIPES[recipe]
    with FlavourServer(flavour, key=KEY if keyed else None) as srv:
        args = ["--base-url", srv.base_url, "--model", model]
        if keyed:
            args += ["--api-key-env", "TEAM_JUDGE_KEY"]
        r = cli(tmp_path, *args, env={"TEAM_JUDGE_KEY": KEY})
        _sent_as_that_server_wants(srv)
        assert srv.chat_count > 0
    assert r.returncode == 0, r.stderr[-2000:]
    header = next(line for line in r.stderr.splitlines() if line.startswith("judge: "))
    assert header.startswith(f"judge: {model} at http://127.0.0.1:"), header
    if flavour == "azure":
        assert header.endswith(f"(Azure OpenAI deployment {AZURE_DEPLOYMENT})")
    scores = [json.loads(x) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    assert len(scores) == 2 and all(s["value"] is not None for s in scores)


async def _ask(url: str, model: str, **kw) -> str:
    judge = OpenAIChatJudge(JudgeConfig(base_url=url, model=model, max_retries=0, **kw))
    try:
        with pytest.raises(JudgeHTTPError) as e:
            await judge.ask([{"role": "user", "content": "q"}], Verdict)
    finally:
        await judge.aclose()
    return str(e.value)


ERRORS = {
    # flavour, how the call goes wrong, what the one line must carry (the server's own words)
    "azure-key": ("azure", "wrong key", "HTTP 401 (Access denied due to invalid subscription key"),
    "azure-deployment": ("azure", "other deployment", "HTTP 404 (The API deployment for this resource does not exist"),
    "litellm-model": ("litellm", "unknown model", "HTTP 400 (litellm.BadRequestError: LLM Provider NOT provided"),
    "litellm-key": ("litellm", "wrong key", "HTTP 401 (Authentication Error, Invalid proxy server token passed"),
    "ollama-model": ("ollama", "unknown model", 'HTTP 404 (model "llama9" not found, try pulling it first)'),
    "vllm-key": ("vllm", "wrong key", "HTTP 401 (Unauthorized)"),
    "vllm-model": ("vllm", "unknown model", "HTTP 404 (The model `llama9` does not exist.)"),
    # Gemini answers errors as a JSON list: its message, not the list's repr
    "gemini-key": ("gemini", "wrong key", "HTTP 400 (API key not valid. Please pass a valid API key.)"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
async def test_each_servers_error_is_one_line_in_its_own_words(case, monkeypatch):
    flavour, fault, want = ERRORS[case]
    monkeypatch.setenv("TEAM_JUDGE_KEY", "a-wrong-key" if fault == "wrong key" else KEY)
    with FlavourServer(flavour, key=KEY) as srv:
        url, model = srv.base_url, srv.models[0]
        if fault == "unknown model":
            model = "llama9"
        if fault == "other deployment":
            url = url.replace(AZURE_DEPLOYMENT, "gpt-5-nowhere")
        message = await _ask(url, model, api_key_env="TEAM_JUDGE_KEY", structured_output="json_schema")
    assert want in message and "\n" not in message, message
    if fault == "wrong key" and flavour != "gemini":  # Gemini says 400, in words that name the key
        assert "check the API key in $TEAM_JUDGE_KEY" in message


def test_an_azure_deployment_url_without_its_api_version_is_refused(monkeypatch):
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    url = f"https://res.openai.azure.com/openai/deployments/{AZURE_DEPLOYMENT}"
    with pytest.raises(ValueError, match=r"needs its api-version: add \?api-version="):
        resolve_judges({"base_url": url, "model": "gpt-4o-mini"}, cache=False)
    monkeypatch.setenv("OPENAI_API_VERSION", AZURE_VERSION)  # the SDK's own variable is enough
    judges, _ = resolve_judges({"base_url": url, "model": "gpt-4o-mini"}, cache=False)
    assert judges.where(embedder=False) == [f"judge: gpt-4o-mini at {url} (Azure OpenAI deployment {AZURE_DEPLOYMENT})"]


def test_a_provider_prefixed_model_without_a_base_url_is_refused(tmp_path):
    """Before, `--model anthropic/…` with no --base-url sent every call to OpenAI's API."""
    r = cli(tmp_path, "--model", "anthropic/claude-3-5-sonnet-20241022")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "names a provider (anthropic/) but no base URL says where to send it" in r.stderr
    assert "OpenAI's API (https://api.openai.com/v1)" in r.stderr
    assert not (tmp_path / "run").exists()
    r2 = cli(tmp_path, "--model", "gpt-4o-mini", "--judge2-model", "gemini/gemini-1.5-flash", "--dry-run")
    assert r2.returncode == 2 and "judge2: the model 'gemini/gemini-1.5-flash' names a provider" in r2.stderr
    with pytest.raises(ValueError, match="names a provider"):
        OpenAIChatJudge(JudgeConfig(model="anthropic/claude-3-5-sonnet-20241022"))


@pytest.mark.parametrize("where", ["UNIFIED_JUDGE_BASE_URL", "OPENAI_BASE_URL", "config"])
def test_a_provider_prefixed_model_goes_where_the_configuration_says(where, tmp_path):
    """The base URL may come from the environment or a run file: the run goes there and
    its header says so; with $OPENAI_BASE_URL (the openai client's own variable) the
    judge's identity in run.json is that URL, not OpenAI's."""
    model = "anthropic/claude-3-5-sonnet-20241022"
    with FlavourServer("litellm", key=KEY) as srv:
        args, env = ["--model", model, "--api-key-env", "TEAM_JUDGE_KEY"], {"TEAM_JUDGE_KEY": KEY}
        if where == "config":
            (tmp_path / "run.toml").write_text(f'[judge]\nbase_url = "{srv.base_url}"\n')
            args += ["--config", str(tmp_path / "run.toml")]
        else:
            env[where] = srv.base_url
        r = cli(tmp_path, *args, env=env)
        assert srv.chat_count > 0
    assert r.returncode == 0, r.stderr[-2000:]
    note = " (from $OPENAI_BASE_URL)" if where == "OPENAI_BASE_URL" else ""
    assert f"judge: {model} at {srv.base_url}{note}\n" in r.stderr
    configs = json.loads((tmp_path / "run" / "run.json").read_text())["configs"]
    assert {c["judge"]["endpoint"] for c in configs.values()} == {srv.base_url}


def test_the_dry_run_says_where_the_calls_would_go(tmp_path):
    r = cli(tmp_path, "--model", "gpt-4o-mini", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "judge: gpt-4o-mini at https://api.openai.com/v1 (OpenAI's API: no base URL was given)" in r.stdout
    r = cli(tmp_path, "--model", "m", "--base-url", f"http://user:{KEY}@127.0.0.1:9/v1?key={KEY}", "--dry-run")
    assert "judge: m at http://***@127.0.0.1:9/v1?key=***" in r.stdout and KEY not in r.stdout + r.stderr


def test_batch_on_an_azure_deployment_url_is_refused_before_the_folder_is_touched(tmp_path, monkeypatch):
    from unified.api import evaluate

    monkeypatch.setenv("TEAM_JUDGE_KEY", KEY)
    url = f"https://res.openai.azure.com/openai/deployments/{AZURE_DEPLOYMENT}?api-version={AZURE_VERSION}"
    with pytest.raises(ValueError, match="--batch with an Azure OpenAI deployment URL"):
        evaluate(
            str(DATA),
            "faithfulness",
            ["native"],
            judge={"base_url": url, "model": "gpt-4o-mini", "api_key_env": "TEAM_JUDGE_KEY"},
            out=tmp_path / "run",
            batch=True,
            progress=False,
        )
    assert not (tmp_path / "run").exists()


def test_the_header_is_left_out_by_quiet(tmp_path):
    with FlavourServer("ollama") as srv:
        r = cli(tmp_path, "--base-url", srv.base_url, "--model", "qwen2.5:7b", "-q")
    assert r.returncode == 0 and "judge:" not in r.stderr + r.stdout, r.stderr
