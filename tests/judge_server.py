"""A loopback OpenAI-compatible server for plumbing and fault tests — never evidence of
judgment quality.

It answers ``POST /v1/chat/completions`` with JSON synthesised from the JSON schema the
request carries (OpenAI ``response_format={"type": "json_schema", ...}``, llama.cpp's
``{"type": "json_object", "schema": ...}``, or a schema object embedded in a message for
prompt mode), and ``POST /v1/embeddings`` with deterministic unit vectors. Answers are a
pure function of (seed, request content), so a rerun sees identical answers.

Faults, drawn with a seeded probability ``fault_rate`` or forced with ``force_fault``:
``429`` (with ``Retry-After: 0.05``), ``500``, ``hang`` (sleeps ``hang_seconds``, past the
client's timeout), ``nonjson`` (HTTP 200 with content that is not JSON) and ``length``
(``finish_reason: "length"`` with a truncated answer).

Latency is an ``asyncio.sleep`` inside the handler, so concurrent requests overlap instead
of queueing: N requests in flight at latency L take about L, not N*L.

``answer_fn(request_json)`` may script an answer: a dict (sent as JSON content), a str
(sent verbatim) or None (synthesise as usual). ``reject_json_schema=True`` imitates
llama.cpp's server, which answers OpenAI's json_schema form with HTTP 500.

Usage::

    with JudgeServer(latency=0.05) as srv:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x")

Standalone (for benchmarks): ``python tests/judge_server.py --port 0 --latency 0.05``.

``SilentServer``: a TCP port that accepts connections and never answers (not even HTTP),
for the circuit-breaker tests.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import random
import socket
import threading
import time
from collections import deque
from typing import Any, Callable, Iterable

import numpy as np
from aiohttp import web

FAULT_KINDS = ("429", "500", "hang", "nonjson", "length")
# also available on request (not in the default random mix): a rejected API key
EXTRA_FAULT_KINDS = ("401",)
_ALL_KINDS = FAULT_KINDS + EXTRA_FAULT_KINDS
# faults that make sense for an embeddings request (it has no content or finish_reason)
_EMBEDDING_FAULTS = ("429", "500", "hang", "401")

_WORDS = (
    "paris",
    "river",
    "the",
    "capital",
    "answer",
    "context",
    "is",
    "green",
    "model",
    "statement",
    "city",
    "of",
    "supported",
    "data",
    "france",
    "claim",
    "yes",
    "short",
)


# ---------------------------------------------------------------- schema synthesis


def _resolve_ref(ref: str, root: dict) -> dict:
    """Follow a local ``#/$defs/Name`` (or ``#/definitions/Name``) pointer."""
    node: Any = root
    for part in ref.lstrip("#/").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _phrase(rng: random.Random, lo: int = 0, hi: int | None = None) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 5)))
    if len(text) < lo:
        text = (text + " ") * (lo // max(len(text), 1) + 1)
    return text[:hi] if hi is not None else text


def synthesize(schema: dict, rng: random.Random, root: dict | None = None, depth: int = 0) -> Any:
    """A value valid for ``schema`` (the subset pydantic and the frameworks emit)."""
    root = root if root is not None else schema
    if depth > 12:  # recursive models: stop with the smallest valid leaf
        return None
    if not isinstance(schema, dict) or not schema:
        return _phrase(rng)
    if "$ref" in schema:
        return synthesize(_resolve_ref(schema["$ref"], root), rng, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            # prefer a non-null branch: Optional[X] should still exercise X
            branches = [b for b in schema[key] if b.get("type") != "null"] or schema[key]
            return synthesize(branches[0], rng, root, depth + 1)
    if "allOf" in schema:
        merged: dict = {}
        for part in schema["allOf"]:
            part = _resolve_ref(part["$ref"], root) if "$ref" in part else part
            for k, v in part.items():
                if k in ("properties",) and k in merged:
                    merged[k] = {**merged[k], **v}
                elif k == "required" and k in merged:
                    merged[k] = list(merged[k]) + list(v)
                else:
                    merged[k] = v
        return synthesize(merged, rng, root, depth + 1)

    typ = schema.get("type")
    if isinstance(typ, list):  # ["string", "null"]
        typ = next((t for t in typ if t != "null"), "null")
    if typ is None:
        typ = "object" if "properties" in schema else ("array" if "items" in schema else "string")

    if typ == "object":
        props = schema.get("properties", {})
        return {name: synthesize(sub, rng, root, depth + 1) for name, sub in props.items()}
    if typ == "array":
        if "prefixItems" in schema:
            return [synthesize(s, rng, root, depth + 1) for s in schema["prefixItems"]]
        lo = int(schema.get("minItems", 1))
        hi = int(schema.get("maxItems", max(lo, 3)))
        n = rng.randint(min(lo, hi), hi) if hi >= 1 else 0
        n = max(n, lo)
        return [synthesize(schema.get("items", {}), rng, root, depth + 1) for _ in range(n)]
    if typ in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        if "exclusiveMinimum" in schema and "minimum" not in schema:
            lo = lo + (1 if typ == "integer" else 1e-6)
        if "exclusiveMaximum" in schema and "maximum" not in schema:
            hi = hi - (1 if typ == "integer" else 1e-6)
        lo = 0 if lo is None else lo
        hi = (lo + 2) if hi is None else hi  # unbounded: small values
        if typ == "integer":
            import math

            return rng.randint(math.ceil(lo), math.floor(hi))
        return round(rng.uniform(lo, hi), 3)
    if typ == "boolean":
        return rng.random() < 0.5
    if typ == "null":
        return None
    return _phrase(rng, int(schema.get("minLength", 0)), schema.get("maxLength"))


def _looks_like_schema(obj: Any) -> bool:
    return isinstance(obj, dict) and ("properties" in obj or "$defs" in obj or obj.get("type") in ("object", "array"))


def find_schema_in_text(text: str) -> dict | None:
    """The largest JSON object in ``text`` that looks like a JSON schema (prompt mode)."""
    decoder = json.JSONDecoder()
    best: dict | None = None
    best_len = 0
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if _looks_like_schema(obj) and end - i > best_len:
            best, best_len = obj, end - i
        i = text.find("{", end)
    return best


def request_schema(body: dict) -> tuple[dict | None, str]:
    """(schema, mode) of a chat request: mode is json_schema | llama_cpp | prompt | none."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        js = rf.get("json_schema") or {}
        return js.get("schema") or {}, "json_schema"
    if rf.get("type") == "json_object" and isinstance(rf.get("schema"), dict):
        return rf["schema"], "llama_cpp"
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, list):  # content parts
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        if isinstance(content, str):
            found = find_schema_in_text(content)
            if found is not None:
                return found, "prompt"
    return None, "none"


def _text_of(body: dict) -> str:
    return json.dumps(body.get("messages", []), sort_keys=True, ensure_ascii=False)


def _seed_for(text: str, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}\x00{text}".encode()).digest()[:8], "big")


def request_seed_offset(body: dict) -> int:
    """A request's own ``seed`` (a test–retest repeat sends one) changes the synthetic
    answer, as sampling with another seed would; no seed (or 0) changes nothing, so every
    answer without one stays what it was."""
    seed = body.get("seed")
    return _seed_for("request-seed", seed) if isinstance(seed, int) and seed else 0


def binary_answer_fn(max_items: int | None = None, seed: int = 7) -> Callable[[dict], Any]:
    """An ``answer_fn`` for fidelity tests: a schema-valid answer (deterministic per
    prompt) whose integers are drawn from {0, 1} — verdicts, attributions, ratings — so
    frameworks' scores stay in their documented range; lists cut to ``max_items`` when
    given. Requests without a schema get the server's default answer (None)."""

    def binary(value: Any, rng: random.Random) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return rng.choice((0, 1))
        if isinstance(value, list):
            return [binary(v, rng) for v in value[:max_items]]
        if isinstance(value, dict):
            return {k: binary(v, rng) for k, v in value.items()}
        return value

    def answer(body: dict) -> Any:
        schema, _mode = request_schema(body)
        if schema is None:
            return None
        rng = random.Random(_seed_for(_text_of(body), seed))
        return binary(synthesize(schema, rng), rng)

    return answer


#: framework answer modules (tests/judge_answers_<framework>.py), each with
#: ``answer_fn(body) -> answer | None``; ``framework_answers`` tries them in order
ANSWER_MODULES = (
    "judge_answers_opik",
    "judge_answers_mlflow",
    "judge_answers_trulens",
    "judge_answers_dingo",
    "judge_answers_evidently",
    "judge_answers_lynx",
    "judge_answers_autoevals",
    "judge_answers_embedchain",
)


def framework_answers(body: dict) -> Any:
    """The first framework answer module's answer to this request; None (synthesise as
    usual) when none of them recognises it."""
    import importlib

    for name in ANSWER_MODULES:
        answer = importlib.import_module(name).answer_fn(body)
        if answer is not None:
            return answer
    return None


def embedding_vector(text: str, dim: int = 384, seed: int = 0) -> np.ndarray:
    """Deterministic unit vector for ``text``."""
    v = np.random.default_rng(_seed_for(text, seed)).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------- server


class JudgeServer:
    """OpenAI-compatible loopback server on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        faults: Iterable[str] = FAULT_KINDS,
        seed: int = 0,
        hang_seconds: float = 30.0,
        port: int = 0,
        dim: int = 384,
        answer_fn: Callable[[dict], dict | str | None] | None = None,
        reject_json_schema: bool = False,
        fault_message: str | None = None,
        raw_fn: Callable[[dict], str | None] | None = None,
        batch: Any = None,
    ):
        bad = set(faults) - set(_ALL_KINDS)
        if bad:
            raise ValueError(f"unknown fault kinds {sorted(bad)}; choose from {_ALL_KINDS}")
        self.latency = latency
        self.fault_rate = fault_rate
        self.faults = tuple(faults)
        self.seed = seed
        self.hang_seconds = hang_seconds
        self.dim = dim
        self.answer_fn = answer_fn
        # behave like llama.cpp's server: HTTP 500 on OpenAI's json_schema response_format
        self.reject_json_schema = reject_json_schema
        # replaces the text of the 401/429/500 error bodies (servers that echo a key)
        self.fault_message = fault_message
        # an answer that is no completion or embedding: raw_fn(body) -> a text/html body with HTTP 200
        self.raw_fn = raw_fn
        # the Batch API endpoints (tests/judge_batch_server.py BatchEndpoints), when given
        self.batch = batch
        self._port = port
        self._rng = random.Random(seed)
        self._forced: deque[str] = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self.port: int | None = None
        self.reset_counts()

    # -- counters
    def reset_counts(self) -> None:
        with getattr(self, "_lock", threading.Lock()):
            self.request_count = 0
            self.chat_count = 0
            self.embedding_count = 0
            self.fault_count = 0
            self.faults_by_kind: dict[str, int] = {}
            self.requests: list[dict] = []
            # Authorization headers received (to prove a test's key was really sent)
            self.auth_headers: set[str] = set()
            # query strings received (to prove ?api_key=... reached the server)
            self.queries: list[str] = []

    def force_fault(self, kind: str, n: int = 1) -> None:
        """Make the next ``n`` requests fail with ``kind`` (FAULT_KINDS or "401")."""
        if kind not in _ALL_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; choose from {_ALL_KINDS}")
        with self._lock:
            self._forced.extend([kind] * n)

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("JudgeServer is not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def _admit(self, body: dict, kind: str) -> str | None:
        """Count the request and decide its fault (None: answer normally)."""
        with self._lock:
            self.request_count += 1
            if kind == "chat":
                self.chat_count += 1
            else:
                self.embedding_count += 1
            self.requests.append(body)
            fault: str | None = None
            if self._forced:
                fault = self._forced.popleft()
            elif self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                allowed = self.faults if kind == "chat" else tuple(f for f in self.faults if f in _EMBEDDING_FAULTS)
                fault = self._rng.choice(allowed) if allowed else None
            if fault is not None:
                self.fault_count += 1
                self.faults_by_kind[fault] = self.faults_by_kind.get(fault, 0) + 1
            return fault

    async def _http_fault(self, fault: str) -> web.Response | None:
        text = self.fault_message
        if fault == "429":
            return web.json_response(
                {"error": {"message": text or "rate limit reached (loopback)", "type": "rate_limit"}},
                status=429,
                headers={"Retry-After": "0.05"},
            )
        if fault == "401":
            return web.json_response(
                {
                    "error": {
                        "message": text or "Incorrect API key provided (loopback)",
                        "type": "invalid_request_error",
                    }
                },
                status=401,
            )
        if fault == "500":
            return web.json_response(
                {"error": {"message": text or "internal error (loopback)", "type": "server_error"}}, status=500
            )
        if fault == "hang":
            assert self._stopping is not None
            try:  # wakes early when the server stops, so shutdown never waits on it
                await asyncio.wait_for(self._stopping.wait(), self.hang_seconds)
            except asyncio.TimeoutError:
                pass
            return web.json_response({"error": {"message": "hung (loopback)"}}, status=504)
        return None

    @staticmethod
    async def _body(request: web.Request) -> dict | None:
        try:
            return await request.json()
        except ConnectionResetError:
            return None

    async def _receive(self, request: web.Request, kind: str) -> tuple[dict | None, str | None]:
        """Read the body, note the auth header, count and draw a fault, wait the latency.
        ``(None, None)`` when the client gave up while sending."""
        body = await self._body(request)
        if body is None:
            return None, None
        with self._lock:
            self.auth_headers.add(request.headers.get("Authorization", ""))
            self.queries.append(request.query_string)
        fault = self._admit(body, kind)
        if self.latency:
            await asyncio.sleep(self.latency)
        return body, fault

    async def _chat(self, request: web.Request) -> web.Response:
        body, fault = await self._receive(request, "chat")
        if body is None:  # the client gave up while sending
            return web.Response(status=499)
        if fault in ("429", "500", "hang", "401"):
            return await self._http_fault(fault)  # type: ignore[return-value]
        if self.reject_json_schema and (body.get("response_format") or {}).get("type") == "json_schema":
            return web.json_response(
                {"error": {"message": "Unsupported response_format type", "type": "server_error"}}, status=500
            )

        raw = self.raw_fn(body) if self.raw_fn is not None else None
        if raw is not None:
            return web.Response(text=raw, status=200, content_type="text/html")
        return web.json_response(self.completion(body, fault))

    def completion(self, body: dict, fault: str | None = None) -> dict:
        """The chat.completion answering ``body`` (the online and the batch answers:
        tests/judge_batch_server.py calls this too, so both are the same function)."""
        text = _text_of(body)
        rng = random.Random(_seed_for(text, self.seed) + request_seed_offset(body))
        content: str | None = None
        if self.answer_fn is not None:
            scripted = self.answer_fn(body)
            if scripted is not None:
                content = scripted if isinstance(scripted, str) else json.dumps(scripted)
        if content is None:
            schema, _mode = request_schema(body)
            if schema is not None:
                content = json.dumps(synthesize(schema, rng))
            else:
                content = "The " + _phrase(rng) + "."
        finish = "stop"
        if fault == "nonjson":
            content = "Sure! Here is my verdict: " + content[: len(content) // 2]
        elif fault == "length":
            content, finish = content[: max(1, len(content) // 2)], "length"

        prompt_tokens = max(1, len(text) // 4)
        completion_tokens = max(1, len(content) // 4)
        return {
            "id": f"chatcmpl-{hashlib.sha1(text.encode()).hexdigest()[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "loopback"),
            "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": content}}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    async def _embeddings(self, request: web.Request) -> web.Response:
        body, fault = await self._receive(request, "embedding")
        if body is None:  # the client gave up while sending
            return web.Response(status=499)
        raw = self.raw_fn(body) if self.raw_fn is not None else None
        if raw is not None:
            return web.Response(text=raw, status=200, content_type="text/html")
        if fault in _EMBEDDING_FAULTS:
            return await self._http_fault(fault)  # type: ignore[return-value]
        if fault is not None:  # nonjson / length forced on an embeddings call: broken body
            return web.Response(text="<html>bad gateway</html>", status=200, content_type="application/json")
        inputs = body.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        dim = int(body.get("dimensions") or self.dim)
        data = []
        for i, text in enumerate(inputs):
            vec = embedding_vector(str(text), dim, self.seed)
            if body.get("encoding_format") == "base64":
                emb: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode()
            else:
                emb = vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(max(1, len(str(t)) // 4) for t in inputs)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "loopback-embed"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "loopback", "object": "model"}]})

    # -- lifecycle
    async def _start_async(self, sock: socket.socket) -> None:
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        if self.batch is not None:
            self.batch.install(self, app)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    def start(self) -> "JudgeServer":
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._port))
        sock.listen(512)
        self.port = sock.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(self._start_async(sock))  # type: ignore[union-attr]
            except BaseException as exc:  # surface bind/setup errors in the caller
                errors.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()  # type: ignore[union-attr]

        self._thread = threading.Thread(target=run, name="judge-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        loop = self._loop

        async def shutdown() -> None:
            assert self._stopping is not None and self._runner is not None
            self._stopping.set()
            await self._runner.cleanup()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(10)
            loop.close()
            self._thread = None
            self._loop = None

    def __enter__(self) -> "JudgeServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers (it
    does not even read): the judge that "accepts connections and never answers".
    ``connections`` counts the connections accepted — one per request attempt, since a
    client never reuses a connection that timed out."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(512)
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self.connections = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            self._held.append(conn)  # held open, never read, never answered

    def __enter__(self) -> "SilentServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._held:
            conn.close()
        self._sock.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="loopback OpenAI-compatible judge server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--framework-answers",
        action="store_true",
        help="answer the frameworks' own prompts in their ranges (tests/judge_answers_*.py)",
    )
    args = ap.parse_args(argv)
    answer_fn = framework_answers if args.framework_answers else None
    with JudgeServer(
        latency=args.latency, fault_rate=args.fault_rate, seed=args.seed, port=args.port, answer_fn=answer_fn
    ) as srv:
        print(srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
