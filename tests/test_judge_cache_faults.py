"""The cache under faults and as a shared store: a damaged file is refused when opened
(one line, path and fix), a write that fails mid-run warns once and the answer is still
returned, the default location is the user cache directory, and ``unified-eval cache
info|clear`` shows and clears it."""

from __future__ import annotations

import os
import warnings
from typing import Literal

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from unified.cli.app import app
from unified.judge import (
    CachedChatJudge,
    CachedEmbedder,
    EmbeddingConfig,
    JudgeCache,
    JudgeCacheError,
    JudgeCacheWarning,
    JudgeConfig,
    JudgeError,
    OpenAIChatJudge,
    OpenAIEmbedder,
    default_cache_path,
    task_scope,
)

PAGE = 4096  # SQLite's default page size


class Rating(BaseModel):
    rating: Literal[0, 1, 2]


def filled_cache(path, n: int = 400) -> None:
    """A real cache with enough rows to span many pages, closed (WAL checkpointed)."""
    cache = JudgeCache(path)
    for i in range(n):
        cache.put_chat(f"key-{i}", "m" if i % 2 else "other", '{"rating": 1}' * 20, 1, 1)
    cache.put_vectors("emb", [(f"v{i}", [0.25] * 64) for i in range(50)])
    cache.close()


def test_damaged_cache_is_refused_when_opened_in_one_line(tmp_path):
    path = tmp_path / "judge_cache.sqlite"
    filled_cache(path)
    data = bytearray(path.read_bytes())
    assert data[:16] == b"SQLite format 3\x00" and len(data) > 8 * PAGE
    data[PAGE : PAGE + 6 * PAGE] = bytes((i * 37 + 11) % 256 for i in range(6 * PAGE))
    path.write_bytes(bytes(data))  # the header and schema page intact, the rest garbage
    with pytest.raises(JudgeCacheError) as e:
        JudgeCache(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg
    assert "damaged" in msg or "malformed" in msg
    assert msg.endswith("delete the file or run with --no-cache")
    assert isinstance(e.value, JudgeError) and isinstance(e.value, ValueError)


def test_not_a_cache_and_a_folder_are_refused(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not sqlite at all\n" * 100, encoding="utf-8")
    with pytest.raises(
        JudgeCacheError,
        match=r"cannot open the judge cache .*junk.sqlite: .*"
        r"delete the file or run with --no-cache",
    ):
        JudgeCache(junk)
    other = tmp_path / "other.sqlite"
    import sqlite3

    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE chat (id INTEGER)")
    with pytest.raises(JudgeCacheError, match="not a judge cache"):
        JudgeCache(other)
    with pytest.raises(JudgeCacheError, match="is a folder"):
        JudgeCache(tmp_path)


@pytest.mark.parametrize("fault", ["full", "read-only"])
async def test_failed_writes_warn_once_and_answers_still_come_back(judge_server, tmp_path, fault):
    cache = JudgeCache(tmp_path / "c.sqlite")
    conn = cache._conn()  # the loop thread's connection: chat answers are written on it
    if fault == "full":  # SQLITE_FULL, exactly what a full disk gives
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages}")
    else:  # SQLITE_READONLY, as for a read-only file
        conn.execute("PRAGMA query_only=1")
    judge = CachedChatJudge(OpenAIChatJudge(JudgeConfig(base_url=judge_server.base_url, model="m")), cache)
    n = 120  # rows of ~150 bytes: more than the free room of the pages the file has
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with task_scope("native", "faithfulness", "s"):
            answers = [await judge.ask([{"role": "user", "content": f"q{i}"}], Rating) for i in range(n)]
    assert all(isinstance(a, Rating) for a in answers)
    assert judge_server.chat_count == n
    ours = [w for w in caught if issubclass(w.category, JudgeCacheWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    text = str(ours[0].message)
    assert str(cache.path) in text and "cannot write" in text and "\n" not in text
    assert ("disk is full" if fault == "full" else "readonly") in text  # the real SQLite error
    assert ours[0].filename.endswith(os.path.join("judge", "cache.py"))


async def test_embedding_write_failure_still_returns_vectors(judge_server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")

    def refuse(*args, **kwargs):
        import sqlite3

        raise sqlite3.OperationalError("database or disk is full")

    cache.put_vectors = refuse  # type: ignore[method-assign]
    emb = CachedEmbedder(
        OpenAIEmbedder(EmbeddingConfig(kind="openai", base_url=judge_server.base_url, model="e")), cache
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vectors = [await emb.embed([f"text {i}"]) for i in range(3)]
    assert all(len(v[0]) == 384 for v in vectors)
    assert sum(issubclass(w.category, JudgeCacheWarning) for w in caught) == 1


def test_default_cache_path_is_shared_and_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "unified-rag-eval" / "judge_cache.sqlite"
    assert default_cache_path(tmp_path / "run") == tmp_path / "run" / "judge_cache.sqlite"


def test_info_and_clear_per_model(tmp_path):
    path = tmp_path / "c.sqlite"
    filled_cache(path, n=10)
    cache = JudgeCache(path)
    info = cache.info()
    assert (info["chat"], info["embedding"]) == (10, 50)
    assert info["models"] == {"chat": {"m": 5, "other": 5}, "embedding": {"emb": 50}}
    assert info["bytes"] >= path.stat().st_size > 0
    assert cache.clear("m") == {"chat": 5, "embedding": 0}
    assert cache.info()["models"]["chat"] == {"other": 5}
    assert cache.clear() == {"chat": 5, "embedding": 50}
    assert cache.stats() == {"chat": 0, "embedding": 0}


def test_cache_command_info_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    runner = CliRunner()
    r = runner.invoke(app, ["cache", "info"])
    assert r.exit_code == 0 and "no judge cache at" in r.output
    path = default_cache_path()
    filled_cache(path, n=6)
    r = runner.invoke(app, ["cache", "info"])
    assert r.exit_code == 0, r.output
    assert str(path) in r.output and "6 chat and 50 embedding entries" in r.output
    assert "other" in r.output and "emb" in r.output
    r = runner.invoke(app, ["cache", "clear", "--model", "other"], input="n\n")
    assert r.exit_code == 1 and JudgeCache(path).stats()["chat"] == 6  # declined: nothing gone
    r = runner.invoke(app, ["cache", "clear", "--model", "other", "--yes"])
    assert r.exit_code == 0 and "removed 3 chat and 0 embedding entries" in r.output
    other = tmp_path / "elsewhere.sqlite"
    filled_cache(other, n=4)
    r = runner.invoke(app, ["cache", "clear", "--cache", str(other), "--yes"])
    assert r.exit_code == 0 and "removed 4 chat and 50 embedding entries" in r.output
    assert JudgeCache(path).stats() == {"chat": 3, "embedding": 50}  # the shared one untouched
    bad = tmp_path / "bad.sqlite"
    bad.write_text("garbage " * 600, encoding="utf-8")
    r = runner.invoke(app, ["cache", "info", "--cache", str(bad)])
    assert r.exit_code == 2 and "delete the file or run with --no-cache" in r.output
    assert "Traceback" not in r.output


async def test_a_second_run_against_the_shared_cache_calls_nothing(judge_server, tmp_path, monkeypatch):
    """Issue 12 item 3: the default cache outlives run folders (resolve_judges, cache=True)."""
    from unified.judge import resolve_judges

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for expected_calls in (4, 0):
        judge_server.reset_counts()
        judges, desc = resolve_judges({"base_url": judge_server.base_url, "model": "m"}, embedding=False)
        assert desc["cache"] == str(default_cache_path())
        for i in range(4):
            with task_scope("native", "faithfulness", f"s{i}"):
                await judges.chat.ask([{"role": "user", "content": f"q{i}"}], Rating)
        await judges.aclose()
        assert judge_server.chat_count == expected_calls
