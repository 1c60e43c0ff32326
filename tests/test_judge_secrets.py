"""Secrets never leave the judge layer: a key in the URL's userinfo or query string, or
in the environment, appears in no exception text, log record (any logger, DEBUG and up),
call record or description — against the loopback server and a refused port — and error
texts are scrubbed before they are cut, so a key at the cut cannot leak its head."""

from __future__ import annotations

import logging
from typing import Literal

import pytest
from judge_server import JudgeServer
from pydantic import BaseModel

from unified.judge import (
    EmbeddingConfig,
    JudgeConfig,
    JudgeError,
    JudgeHTTPError,
    OpenAIChatJudge,
    OpenAIEmbedder,
    add_listener,
    remove_listener,
    resolve_judges,
)
from unified.redact import RedactingFilter, redact_config, scrub, url_secrets

KEY = "s3cr3t-URLKEY-9c1e"
ENV_KEY = "sk-test-ENVKEY-77aa1"


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]


def pieces(secret: str, n: int = 6) -> list[str]:
    """Every n-character slice of the secret: none may appear anywhere."""
    return [secret[i : i + n] for i in range(len(secret) - n + 1)]


def assert_clean(text: str, *secrets: str) -> None:
    for secret in secrets:
        for piece in pieces(secret):
            assert piece not in text, f"{piece!r} of a secret in: {text[:300]}"


def urls(base: str) -> list[str]:
    host = base.split("://", 1)[1]
    return [
        f"http://user:{KEY}@{host}",
        f"{base}?api_key={KEY}",
        f"http://user:{KEY}@127.0.0.1:9/v1",
        f"http://127.0.0.1:9/v1?api_key={KEY}",
    ]


async def exercise(url: str) -> list[str]:
    """One chat and one embedding call at ``url``; the texts of any errors."""
    errors: list[str] = []
    judge = OpenAIChatJudge(JudgeConfig(base_url=url, model="m", max_retries=1, backoff_base=0.01))
    emb = OpenAIEmbedder(EmbeddingConfig(kind="openai", base_url=url, model="e", max_retries=0))
    for call in (lambda: judge.ask([{"role": "user", "content": "q"}], Verdict), lambda: emb.embed(["a"])):
        try:
            await call()
        except JudgeError as exc:
            errors += [str(exc), repr(exc.args)]
    await judge.aclose()
    await emb.aclose()
    return errors


async def test_url_credentials_reach_the_server_and_nothing_else(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    caplog.set_level(logging.DEBUG)  # every logger: ours, openai's, httpx's
    records: list = []
    add_listener(records.append)
    try:
        with JudgeServer() as srv:
            errors = [e for url in urls(srv.base_url) for e in await exercise(url)]
            served, queries, auth = srv.request_count, srv.queries, srv.auth_headers
    finally:
        remove_listener(records.append)
    # the two live URLs worked: userinfo as basic auth, the query on every request
    assert served == 4
    assert sum(f"api_key={KEY}" in q for q in queries) == 2
    assert any(a.startswith("Basic ") for a in auth)
    # the two dead ones failed, and said where, with the URL redacted
    assert len(errors) == 8 and all("127.0.0.1:9" in e for e in errors)
    assert any("http://***@127.0.0.1:9/v1" in e for e in errors)
    assert any("?api_key=***" in e for e in errors)
    assert "HTTP Request" in caplog.text  # httpx did log the request URLs ...
    for text in (*errors, caplog.text, *(repr(r) for r in records)):
        assert_clean(text, KEY, ENV_KEY)  # ... with no key in them
    assert all(r.error is None or "127.0.0.1:9" in r.error for r in records)


async def test_error_text_is_scrubbed_before_it_is_cut(monkeypatch):
    """A server that echoes the key in its error body, with the key straddling the
    300-character cut: scrubbing first leaves not even its head."""
    monkeypatch.setenv("LOOP_KEY", ENV_KEY)
    for pad in range(230, 300, 7):
        with JudgeServer(fault_message="x" * pad + f" bad key {ENV_KEY} and {KEY}") as srv:
            srv.force_fault("401")
            judge = OpenAIChatJudge(
                JudgeConfig(base_url=f"{srv.base_url}?api_key={KEY}", model="m", api_key_env="LOOP_KEY")
            )
            with pytest.raises(JudgeHTTPError, match="HTTP 401") as e:
                await judge.ask([{"role": "user", "content": "q"}], Verdict)
        assert len(str(e.value)) <= 300
        assert_clean(str(e.value), ENV_KEY, KEY)


def test_resolve_judges_description_and_fingerprint_carry_no_url_key(tmp_path):
    judges, desc = resolve_judges(
        {"base_url": f"http://u:{KEY}@127.0.0.1:9/v1?token={KEY}", "model": "m", "max_tokens": 512},
        embedding=f"http://127.0.0.1:9/v1?api_key={KEY}",
        cache=False,
    )
    assert desc["judge"]["max_tokens"] == 512  # a token *count* is not a secret
    assert desc["judge"]["base_url"] == "http://***@127.0.0.1:9/v1?token=***"
    assert_clean(repr(desc), KEY)
    fingerprint = judges.describe()
    assert_clean(repr(fingerprint), KEY)
    # the endpoint is part of a judge's identity, its credentials and query are not
    assert fingerprint["judge"]["endpoint"] == "http://127.0.0.1:9/v1"
    assert fingerprint["embedder"]["endpoint"] == "http://127.0.0.1:9/v1"
    assert "u:" not in repr(fingerprint) and "?" not in repr(fingerprint)


def test_url_secrets_and_scrub_rules():
    assert url_secrets(f"http://bob:{KEY}@h/v1") == [f"bob:{KEY}", KEY]
    assert url_secrets(f"https://{KEY}@h/v1") == [KEY]  # a token-only userinfo
    assert url_secrets(f"http://h/v1?model=m&api_key={KEY}") == [KEY]
    assert url_secrets("http://h/v1?max_tokens=5") == []
    # punctuation after a URL is the sentence's, not the URL's
    assert scrub(f"at http://h/v1?key={KEY}: refused.") == "at http://h/v1?key=***: refused."
    assert redact_config({"max_tokens": 64, "api_key_env": "MY_KEY", "token": KEY}) == {
        "max_tokens": 64,
        "api_key_env": "MY_KEY",
        "token": "***",
    }


def test_redacting_filter_rewrites_message_and_traceback():
    record = logging.LogRecord(
        "httpx", logging.INFO, __file__, 1, 'HTTP Request: POST %s "200"', (f"http://h/v1?api_key={KEY}",), None
    )
    assert RedactingFilter().filter(record) is True
    assert record.getMessage() == 'HTTP Request: POST http://h/v1?api_key=*** "200"'
    try:
        raise RuntimeError(f"cannot reach http://u:{KEY}@h/v1")
    except RuntimeError:
        import sys

        record = logging.LogRecord("openai", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    RedactingFilter().filter(record)
    assert "http://***@h/v1" in record.exc_text
    assert_clean(logging.Formatter().format(record), KEY)


def test_a_key_given_as_a_variable_name_is_refused_without_being_repeated():
    """api_key_env holds a NAME; a pasted key is refused by every door (a JudgeConfig, an
    EmbeddingConfig, resolve_judges' api_key_env) and the message never repeats it."""
    from pydantic import ValidationError

    from unified.judge import JudgeSetupError
    from unified.redact import looks_like_secret

    pasted = "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"  # an Azure key's shape: 32 hex characters
    names = ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY_2024", "my_judge_key", "LITELLM_MASTER_KEY"]
    assert not any(looks_like_secret(n) for n in names)
    assert all(looks_like_secret(k) for k in (pasted, ENV_KEY, "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"))
    for make in (
        lambda: JudgeConfig(model="m", api_key_env=pasted),
        lambda: EmbeddingConfig(kind="openai", base_url="http://h/v1", api_key_env=pasted),
        lambda: resolve_judges({"model": "m", "base_url": "http://h/v1", "api_key_env": pasted}, cache=False),
        lambda: resolve_judges({"model": "m", "base_url": "http://h/v1"}, api_key_env=pasted, cache=False),
    ):
        with pytest.raises((ValidationError, JudgeSetupError)) as e:
            make()
        assert "NAME of an environment variable" in str(e.value) and "32 characters, not shown" in str(e.value)
        assert_clean(str(e.value), pasted)
    with pytest.raises(ValidationError, match="letters, digits and _"):
        JudgeConfig(model="m", api_key_env="my-key")
