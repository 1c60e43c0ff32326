"""Persistent SQLite cache for judge answers and embeddings, with an occurrence index.

Chat key::

    request_hash = sha256(canonical_json({model, messages, schema, sampling params}))
    key          = sha256(request_hash + ":" + occurrence)

where ``occurrence`` is how many identical requests the running task has already sent
(``TaskMeter.next_occurrence``). A metric that asks the same question three times on
purpose (RAGAS answer relevancy) gets three entries: three calls cold, zero warm. The
base URL and the API key are not part of the key: the same model behind another gateway
gives the same answers, and keys never touch the cache file.

Embedding key: ``sha256(canonical_json({model, text}))``, one row per text, vectors stored
as float64 bytes so a warm run returns bit-identical vectors.

Concurrency: WAL mode and a busy timeout make one file safe for several processes; each
operation is one short statement run in a worker thread (one connection per thread) so
the event loop never blocks on a lock held by another process. Inside one process a
request already in flight is awaited rather than sent twice (single flight).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel

from unified.judge.base import (CallRecord, ChatJudge, Embedder, Messages, T, current_meter,
                                record_call)
from unified.judge.openai_client import schema_json

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS chat (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, answer TEXT NOT NULL,
    input_tokens INTEGER, output_tokens INTEGER, created REAL);
CREATE TABLE IF NOT EXISTS embedding (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, vector BLOB NOT NULL, created REAL);
"""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_cache_path(out_dir: str | Path | None = None) -> Path:
    """``out_dir/judge_cache.sqlite`` for a run folder, else the user cache directory
    (``$XDG_CACHE_HOME`` or ``~/.cache``)/unified-rag-eval/judge_cache.sqlite."""
    if out_dir is not None:
        return Path(out_dir) / "judge_cache.sqlite"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "unified-rag-eval" / "judge_cache.sqlite"


class JudgeCache:
    """One SQLite file holding chat answers and embedding vectors."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        conn = self._conn()
        conn.executescript(_SCHEMA_SQL)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    # -- sync primitives (each one statement: short lock hold across processes)
    def get_chat(self, key: str) -> tuple[str, int, int] | None:
        row = self._conn().execute(
            "SELECT answer, input_tokens, output_tokens FROM chat WHERE key=?", (key,)).fetchone()
        return (row[0], row[1] or 0, row[2] or 0) if row else None

    def put_chat(self, key: str, model: str, answer: str, input_tokens: int,
                 output_tokens: int) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO chat VALUES (?,?,?,?,?,?)",
            (key, model, answer, input_tokens, output_tokens, time.time()))

    def get_vectors(self, keys: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        conn = self._conn()
        for i in range(0, len(keys), 500):  # stay under SQLite's variable limit
            chunk = list(keys[i:i + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob in conn.execute(
                    f"SELECT key, vector FROM embedding WHERE key IN ({marks})", chunk):
                out[key] = np.frombuffer(blob, dtype="<f8").tolist()
        return out

    def put_vectors(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        now = time.time()
        rows = [(k, model, np.asarray(v, dtype="<f8").tobytes(), now) for k, v in items]
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO embedding VALUES (?,?,?,?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def stats(self) -> dict[str, int]:
        conn = self._conn()
        return {"chat": conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0],
                "embedding": conn.execute("SELECT COUNT(*) FROM embedding").fetchone()[0]}

    def close(self) -> None:
        with self._conns_lock:
            for conn in self._conns:
                try:
                    conn.close()
                except sqlite3.ProgrammingError:  # closed from another thread already
                    pass
            self._conns.clear()
        self._local = threading.local()


class CachedChatJudge(ChatJudge):
    """Wraps a ``ChatJudge`` with the persistent cache and in-process single flight."""

    def __init__(self, inner: ChatJudge, cache: JudgeCache):
        self.inner = inner
        self.cache = cache
        self.model = inner.model
        self._inflight: dict[str, asyncio.Future] = {}

    def _key(self, kind: str, messages: Messages, schema: type[BaseModel] | None,
             params: dict[str, Any]) -> str:
        sampling = getattr(self.inner, "sampling_params", lambda: {})()
        request_hash = sha256(canonical_json({
            "kind": kind, "model": self.inner.model, "messages": messages,
            "schema": schema_json(schema) if schema is not None else None,
            "params": {**sampling, **params}}))
        occurrence = current_meter().next_occurrence(request_hash)
        return sha256(f"{request_hash}:{occurrence}")

    async def _cached(self, key: str, compute: Any) -> str:
        while True:
            pending = self._inflight.get(key)
            if pending is None:
                break
            try:  # identical request in flight elsewhere: share its answer
                answer = await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if pending.cancelled() and not (task is not None and task.cancelling()):
                    continue  # the owner was cancelled, not this caller: ask again
                raise
            record_call(CallRecord(kind="chat", backend="", metric="", sample_id="",
                                   model=self.model, cached=True))
            return answer
        # registered before the first await (the cache lookup), so an identical request
        # arriving while this one looks up, computes or stores waits instead of re-asking
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            hit = await asyncio.to_thread(self.cache.get_chat, key)
            if hit is not None:
                record_call(CallRecord(kind="chat", backend="", metric="", sample_id="",
                                       model=self.model, cached=True))
                answer = hit[0]
            else:
                answer = await compute()
                # stored with no await in between: the answer is in the cache before any
                # other task runs, so a process killed at any point has at most the calls
                # then on the wire (≤ the judge's concurrency) unpaid-for in the cache
                self.cache.put_chat(key, self.model, answer, 0, 0)
            fut.set_result(answer)
            return answer
        except asyncio.CancelledError:
            fut.cancel()  # waiters that were not cancelled themselves ask again
            raise
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters (if any) re-raise it themselves
            raise
        finally:
            if self._inflight.get(key) is fut:
                self._inflight.pop(key, None)

    def sampling_params(self) -> dict[str, Any]:
        return getattr(self.inner, "sampling_params", lambda: {})()

    async def ask(self, messages: Messages, schema: type[T], **params: Any) -> T:
        key = self._key("ask", messages, schema, params)

        async def compute() -> str:
            return (await self.inner.ask(messages, schema, **params)).model_dump_json()

        return schema.model_validate_json(await self._cached(key, compute))

    async def ask_text(self, messages: Messages, **params: Any) -> str:
        key = self._key("text", messages, None, params)
        return await self._cached(key, lambda: self.inner.ask_text(messages, **params))

    async def aclose(self) -> None:
        await self.inner.aclose()


class CachedEmbedder(Embedder):
    """Wraps an ``Embedder``: only texts not in the cache reach the model."""

    def __init__(self, inner: Embedder, cache: JudgeCache):
        self.inner = inner
        self.cache = cache
        self.model = inner.model

    def _key(self, text: str) -> str:
        return sha256(canonical_json({"model": self.inner.model, "text": text}))

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        found = await asyncio.to_thread(self.cache.get_vectors, list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        if missing:
            vectors = await self.inner.embed(missing)
            new = {self._key(t): v for t, v in zip(missing, vectors)}
            await asyncio.to_thread(self.cache.put_vectors, self.model, list(new.items()))
            # return what a warm run will return: the float64 round trip is exact
            found.update({k: [float(x) for x in v] for k, v in new.items()})
        else:
            record_call(CallRecord(kind="embedding", backend="", metric="", sample_id="",
                                   model=self.model, cached=True))
        return [found[k] for k in keys]

    async def aclose(self) -> None:
        await self.inner.aclose()
