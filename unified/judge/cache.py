"""Persistent SQLite cache for judge answers and embeddings, with an occurrence index.

Chat key::

    request_hash = sha256(canonical_json({judge, messages, schema, sampling params}))
    key          = sha256(request_hash + ":" + occurrence)

where ``occurrence`` is how many identical requests the running task has already sent
(``TaskMeter.next_occurrence``). A metric that asks the same question three times on
purpose (RAGAS answer relevancy) gets three entries: three calls cold, zero warm.
``judge`` is ``ChatJudge.describe()`` without its sampling (those come whole from
``sampling_params``): its endpoint — the URL without credentials or query (but a model-choosing parameter)
(``redact.endpoint_of``) — model and structured-output mode, the same identity a run
fingerprint uses. Model names are often placeholders ("local"): two servers answering to
the same name are two judges whose answers must never stand in for each other. The API
key is never part of a key and never touches the cache file.

Embedding key: ``sha256(canonical_json({embedder, text}))`` with ``embedder`` =
``Embedder.describe()`` (endpoint, model, dimensions), one row per text,
vectors stored as little-endian float64 bytes so a warm run returns bit-identical vectors.

Where: one file shared by every run (``default_cache_path()``: the platform's user cache
directory, e.g. ``$XDG_CACHE_HOME/unified-rag-eval/judge_cache.sqlite`` or
``~/.cache/unified-rag-eval/judge_cache.sqlite`` on Linux). The keys hold everything that
decides an answer, so different judges, prompts or settings never collide.

Integrity: opening checks that the file is SQLite, that ``PRAGMA quick_check`` finds it
whole and that the tables have the expected columns; otherwise ``JudgeCacheError``, one
line naming the path and the fix (delete the file, or ``--no-cache``).

What runs where (true of this code, not an aspiration):

- lookups (``get_chat``, ``get_vectors``) and embedding writes run in a worker thread
  (``asyncio.to_thread``; one connection per thread), so the event loop does not wait
  for them;
- a fresh chat answer is written **on the event loop's thread, on purpose**, right after
  it arrives and before any other task runs: a process killed at any moment has paid for
  at most the calls then on the wire (≤ the judge's concurrency) without caching them.
  The write is one short INSERT; only while another process holds the file's write lock
  can it keep the loop waiting (up to the 30 s busy timeout).

The cache is an optimisation, never a reason to lose an answer: a write that fails
(disk full, read-only file, lock timeout) warns once and the cache stops writing for the
rest of its life; a lookup that fails warns once and counts as a miss. Concurrency: WAL
mode and a busy timeout make one file safe for several processes; inside one process a
request already in flight is awaited rather than sent twice (single flight).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import sys
import threading
import time
import warnings
from array import array
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, TypeVar, runtime_checkable

from pydantic import BaseModel

from unified.judge.base import (
    CallRecord,
    ChatJudge,
    Embedder,
    JudgeCacheError,
    Messages,
    T,
    current_meter,
    record_call,
    repeat_seed,
    request_key,
)
from unified.judge.structured import schema_json

R = TypeVar("R")

APP_NAME = "unified-rag-eval"
#: the cache file's name, in the user cache folder or wherever ``--cache`` puts it (a run folder
#: tolerates one of this name: ``unified.run.runfolder.RunFolder.foreign_entries``)
CACHE_FILE = "judge_cache.sqlite"
BUSY_TIMEOUT_S = 30.0
_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS chat (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, answer TEXT NOT NULL,
    input_tokens INTEGER, output_tokens INTEGER, created REAL);
CREATE TABLE IF NOT EXISTS embedding (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, vector BLOB NOT NULL, created REAL);
"""
_COLUMNS = {
    "chat": ["key", "model", "answer", "input_tokens", "output_tokens", "created"],
    "embedding": ["key", "model", "vector", "created"],
}
_FIX = "delete the file or run with --no-cache"


class JudgeCacheWarning(UserWarning):
    """The cache could not be read or written; the run goes on without it."""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_cache_path(out_dir: str | Path | None = None) -> Path:
    """The judge cache shared by all runs: ``judge_cache.sqlite`` in the user cache
    directory of the platform (``platformdirs.user_cache_path("unified-rag-eval")``:
    ``$XDG_CACHE_HOME/unified-rag-eval`` or ``~/.cache/unified-rag-eval`` on Linux,
    ``~/Library/Caches/unified-rag-eval`` on macOS, ``%LOCALAPPDATA%\\unified-rag-eval\\Cache``
    on Windows). ``out_dir`` (kept for old callers): that folder's cache file instead."""
    if out_dir is not None:
        return Path(out_dir) / CACHE_FILE
    import platformdirs  # only when the default is asked for

    return platformdirs.user_cache_path(APP_NAME, appauthor=False) / CACHE_FILE


def pack_vector(values: Sequence[float]) -> bytes:
    """Floats -> little-endian float64 bytes (``array``: no numpy at import time)."""
    arr = array("d", (float(x) for x in values))
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tobytes()


def unpack_vector(blob: bytes) -> list[float]:
    arr = array("d")
    arr.frombytes(blob)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tolist()


def _check_tables(conn: sqlite3.Connection) -> None:
    """The file is whole and is a judge cache (raises ``ValueError`` with the reason)."""
    problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        # SQLite lists every damaged page, often as one multi-line text: the first one says enough
        first = problems[0].strip().splitlines()[0] if problems[0].strip() else "unreadable"
        more = len(problems) - 1 + max(0, len(problems[0].strip().splitlines()) - 1)
        raise ValueError(f"it is damaged ({first[:160]}{f'; {more} more problem(s)' if more else ''})")
    for table, columns in _COLUMNS.items():
        found = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        if found != columns:
            raise ValueError(f"it is not a judge cache (table {table!r} has columns {found})")


@runtime_checkable
class CacheStore(Protocol):
    """What the cache wrappers (``CachedChatJudge``, ``CachedEmbedder``) call on a store;
    ``JudgeCache`` (SQLite) is one. A store never raises from these: a failed lookup is a
    miss and a failed write is dropped (after one warning), so a broken cache can cost
    calls but never a score. A networked store for several machines implements them,
    plus ``remote_factory()`` — a picklable zero-argument callable that opens the same
    store in another process (``unified.platforms.ray_executor`` ships it to its actors)."""

    def lookup_chat(self, key: str) -> tuple[str, int, int] | None: ...

    def store_chat(self, key: str, model: str, answer: str) -> None: ...

    def lookup_vectors(self, keys: Sequence[str]) -> dict[str, list[float]]: ...

    def store_vectors(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None: ...

    def close(self) -> None: ...


class JudgeCache:
    """One SQLite file holding chat answers and embedding vectors."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._write_failed = False
        self._read_failed = False
        self._open()

    def _fail(self, why: str) -> JudgeCacheError:
        return JudgeCacheError(f"cannot open the judge cache {self.path}: {why}")

    def _open(self) -> None:
        """Create or check the file; any problem is one ``JudgeCacheError`` line."""
        if self.path.is_dir():
            raise self._fail(f"is a folder; name the cache file, e.g. {self.path / CACHE_FILE}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._fail(
                f"cannot create its folder ({exc.strerror or exc}); pass --cache PATH or --no-cache"
            ) from None
        try:
            conn = self._conn()
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not set(_COLUMNS) <= tables:
                conn.executescript(_SCHEMA_SQL)
            _check_tables(conn)
        except (sqlite3.Error, ValueError) as exc:
            self.close()
            raise self._fail(f"{exc}; {_FIX}") from None
        except OSError as exc:
            self.close()
            raise self._fail(f"{exc.strerror or exc}; {_FIX}") from None

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError:  # a read-only file keeps its journal mode
                pass
            conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    # -- failures: the cache is an optimisation, the answer always goes on
    def _warn(self, action: str, exc: Exception) -> None:
        then = (
            "answers are still returned, but no more are cached in this run"
            if action == "write"
            else "a lookup that fails counts as a miss"
        )
        # stacklevel 2: a line of this file, which the CLI shows as one "warning:" line
        warnings.warn(f"judge cache {self.path}: cannot {action} ({exc}); {then}", JudgeCacheWarning, stacklevel=2)

    def _guarded(self, action: str, fn: Callable[[], R], default: R) -> R:
        """``fn()``, or ``default`` after one warning when SQLite fails: a cache that
        cannot be read misses, one that cannot be written stops writing (the answers are
        still returned; the run goes on uncached)."""
        failed = "_write_failed" if action == "write" else "_read_failed"
        if action == "write" and self._write_failed:
            return default
        try:
            return fn()
        except sqlite3.Error as exc:
            if not getattr(self, failed):
                setattr(self, failed, True)
                self._warn(action, exc)
            return default

    def lookup_chat(self, key: str) -> tuple[str, int, int] | None:
        return self._guarded("read", lambda: self.get_chat(key), None)

    def store_chat(self, key: str, model: str, answer: str) -> None:
        self._guarded("write", lambda: self.put_chat(key, model, answer, 0, 0), None)

    def lookup_vectors(self, keys: Sequence[str]) -> dict[str, list[float]]:
        return self._guarded("read", lambda: self.get_vectors(keys), {})

    def store_vectors(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        self._guarded("write", lambda: self.put_vectors(model, items), None)

    # -- sync primitives (each one statement: short lock hold across processes)
    def get_chat(self, key: str) -> tuple[str, int, int] | None:
        row = (
            self._conn().execute("SELECT answer, input_tokens, output_tokens FROM chat WHERE key=?", (key,)).fetchone()
        )
        return (row[0], row[1] or 0, row[2] or 0) if row else None

    def put_chat(self, key: str, model: str, answer: str, input_tokens: int, output_tokens: int) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO chat VALUES (?,?,?,?,?,?)",
            (key, model, answer, input_tokens, output_tokens, time.time()),
        )

    def get_vectors(self, keys: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        conn = self._conn()
        for i in range(0, len(keys), 500):  # stay under SQLite's variable limit
            chunk = list(keys[i : i + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob in conn.execute(f"SELECT key, vector FROM embedding WHERE key IN ({marks})", chunk):
                out[key] = unpack_vector(blob)
        return out

    def put_vectors(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        now = time.time()
        rows = [(k, model, pack_vector(v), now) for k, v in items]
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO embedding VALUES (?,?,?,?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -- inspection and cleaning (``unified-eval cache info|clear``)
    def stats(self) -> dict[str, int]:
        conn = self._conn()
        return {
            "chat": conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0],
            "embedding": conn.execute("SELECT COUNT(*) FROM embedding").fetchone()[0],
        }

    def info(self) -> dict[str, Any]:
        """Path, bytes on disk (with the WAL), entries per table and per model per table."""
        conn = self._conn()
        per_model = {
            table: dict(conn.execute(f"SELECT model, COUNT(*) FROM {table} GROUP BY model ORDER BY model"))
            for table in _COLUMNS
        }
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {"path": str(self.path), "bytes": size, **self.stats(), "models": per_model}

    def clear(self, model: str | None = None) -> dict[str, int]:
        """Delete every entry (or those of ``model``); returns the rows removed per table.
        Safe while other processes use the file (rows are deleted, the file stays)."""
        conn = self._conn()
        removed: dict[str, int] = {}
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in _COLUMNS:
                cur = (
                    conn.execute(f"DELETE FROM {table}")
                    if model is None
                    else conn.execute(f"DELETE FROM {table} WHERE model=?", (model,))
                )
                removed[table] = cur.rowcount
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:  # give the space back; another process reading the file may delay that
            conn.execute("VACUUM")
        except sqlite3.OperationalError:
            pass
        return removed

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
        # who answers, as the run fingerprint sees it (endpoint, model, structured-output
        # mode): one rule for both; sampling comes unredacted from sampling_params below
        self._judge = {k: v for k, v in inner.describe().items() if k != "sampling"}

    def _key(self, kind: str, messages: Messages, schema: type[BaseModel] | None, params: dict[str, Any]) -> str:
        sampling: dict[str, Any] = getattr(self.inner, "sampling_params", lambda: {})()
        seed = repeat_seed()
        if seed is not None:  # a test–retest repeat: its own answer, its own entry
            sampling = {**sampling, "seed": seed}
        request_hash = sha256(
            canonical_json(
                {
                    "kind": kind,
                    "judge": self._judge,
                    "messages": messages,
                    "schema": schema_json(schema) if schema is not None else None,
                    "params": {**sampling, **params},
                }
            )
        )
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
            record_call(CallRecord(kind="chat", backend="", metric="", sample_id="", model=self.model, cached=True))
            return answer
        # registered before the first await (the cache lookup), so an identical request
        # arriving while this one looks up, computes or stores waits instead of re-asking
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            hit = await asyncio.to_thread(self.cache.lookup_chat, key)
            if hit is not None:
                record_call(CallRecord(kind="chat", backend="", metric="", sample_id="", model=self.model, cached=True))
                answer = hit[0]
            else:
                # the key names this call in a Batch API job (unified.judge.batch)
                token = request_key.set(key)
                try:
                    answer = await compute()
                finally:
                    request_key.reset(token)
                # stored with no await in between, on this (the loop's) thread: the answer
                # is in the cache before any other task runs, so a process killed at any
                # point has at most the calls then on the wire (≤ the judge's concurrency)
                # unpaid-for in the cache
                self.cache.store_chat(key, self.model, answer)
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

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()  # the cache changes the cost, never the answer

    def where(self) -> str:
        return self.inner.where()

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
        # what decides the vectors (endpoint, model, dimensions): the fingerprint's rule too
        self._embedder = inner.describe()

    def _key(self, text: str) -> str:
        return sha256(canonical_json({"embedder": self._embedder, "text": text}))

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def where(self) -> str:
        return self.inner.where()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        found = await asyncio.to_thread(self.cache.lookup_vectors, list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        if missing:
            vectors = await self.inner.embed(missing)
            new = {self._key(t): v for t, v in zip(missing, vectors)}
            await asyncio.to_thread(self.cache.store_vectors, self.model, list(new.items()))
            # return what a warm run will return: the float64 round trip is exact
            found.update({k: [float(x) for x in v] for k, v in new.items()})
        else:
            record_call(
                CallRecord(kind="embedding", backend="", metric="", sample_id="", model=self.model, cached=True)
            )
        return [found[k] for k in keys]

    async def aclose(self) -> None:
        await self.inner.aclose()
