"""JudgeConfig / EmbeddingConfig: environment, run files, no literal keys (call estimates
live with the backends: tests/test_backend_registry.py)."""

from __future__ import annotations

import pytest

from unified.judge import EmbeddingConfig, JudgeConfig, build_judges, load_run_config
from unified.judge.cache import CachedEmbedder
from unified.judge.embeddings import OpenAIEmbedder

MARKER = "sk-test-MARKER-7f3a"


def test_key_is_read_from_env_never_stored(monkeypatch):
    monkeypatch.setenv("MY_KEY", MARKER)
    cfg = JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key_env="MY_KEY")
    assert cfg.api_key() == MARKER
    assert MARKER not in cfg.model_dump_json() and MARKER not in repr(cfg)
    monkeypatch.delenv("MY_KEY")
    assert cfg.api_key() is None


def test_from_env(monkeypatch):
    for k in ("UNIFIED_JUDGE_MODEL", "UNIFIED_EMBEDDING", "UNIFIED_JUDGE_API_KEY_ENV"):
        monkeypatch.delenv(k, raising=False)
    assert JudgeConfig.from_env() is None and EmbeddingConfig.from_env() is None
    monkeypatch.setenv("UNIFIED_JUDGE_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("UNIFIED_JUDGE_MODEL", "qwen")
    monkeypatch.setenv("UNIFIED_JUDGE_API_KEY_ENV", "DEEPSEEK_API_KEY")
    monkeypatch.setenv("UNIFIED_EMBEDDING", "http://127.0.0.1:8081/v1")
    monkeypatch.setenv("UNIFIED_EMBEDDING_MODEL", "bge")
    j, e = JudgeConfig.from_env(), EmbeddingConfig.from_env()
    assert (j.base_url, j.model, j.api_key_env) == ("http://127.0.0.1:8080/v1", "qwen", "DEEPSEEK_API_KEY")
    assert (e.kind, e.base_url, e.model) == ("openai", "http://127.0.0.1:8081/v1", "bge")
    monkeypatch.setenv("UNIFIED_EMBEDDING", "local")
    assert EmbeddingConfig.from_env().kind == "local"


def test_toml_and_yaml_run_files(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text(
        '[judge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "a"\nconcurrency = 3\n'
        '[judge2]\nmodel = "b"\nstructured_output = "prompt"\n'
        '[embedding]\nkind = "local"\n[run]\nmetrics = ["faithfulness"]\n'
    )
    rc = load_run_config(toml)
    assert (rc.judge.model, rc.judge.concurrency, rc.judge2.structured_output) == ("a", 3, "prompt")
    assert rc.embedding.kind == "local" and rc.model_extra["run"]["metrics"] == ["faithfulness"]
    yml = tmp_path / "run.yaml"
    yml.write_text("judge:\n  model: a\n  requests_per_minute: 60\nembedding: http://127.0.0.1:9/v1\n")
    rc = load_run_config(yml)
    assert rc.judge.requests_per_minute == 60 and rc.embedding.kind == "openai"


def test_literal_api_key_in_a_run_file_is_rejected_with_a_hint(tmp_path):
    f = tmp_path / "run.toml"
    f.write_text(f'[judge]\nmodel = "a"\napi_key = "{MARKER}"\n')
    with pytest.raises(ValueError, match=r"run.toml.*\[judge\].*api_key_env") as e:
        load_run_config(f)
    assert MARKER not in str(e.value)
    with pytest.raises(ValueError) as e:
        JudgeConfig(model="m", api_key=MARKER)
    assert MARKER not in str(e.value)
    f.write_text('[judge2]\nmodel = "a"\nconcurrency = 0\n')
    with pytest.raises(ValueError, match=r"run.toml: judge2.concurrency: Input should be"):
        load_run_config(f)
    with pytest.raises(ValueError, match="must be .toml"):
        load_run_config(tmp_path / "run.json")


def test_build_judges_wires_embedding_and_cache(tmp_path):
    j = build_judges(
        JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m"),
        embedding="http://127.0.0.1:9/v1",
        cache_path=tmp_path / "c.sqlite",
    )
    assert isinstance(j.embedder, CachedEmbedder) and isinstance(j.embedder.inner, OpenAIEmbedder)
    assert j.chat.model == "m" and j.chat2 is None
    j = build_judges(
        JudgeConfig(model="m"), embedding="http://127.0.0.1:9/v1", cache_path=tmp_path / "c.sqlite", cache=False
    )
    assert isinstance(j.embedder, OpenAIEmbedder)
    with pytest.raises(ValueError, match="'local' or an http"):
        build_judges(embedding="minilm")
