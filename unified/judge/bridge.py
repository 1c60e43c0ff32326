"""A loopback OpenAI-compatible endpoint in front of our judge layer, for frameworks
that reach an LLM only through a URL.

MLflow 3's built-in judges take a model URI, never a model object; the one provider
whose address is a plain setting is MLflow's own AI gateway (``gateway:/<endpoint>`` with
``MLFLOW_GATEWAY_URI``). The bridge is that address: an HTTP server on 127.0.0.1, in this
process, on a random port, started on first use and stopped when its last user releases
it (and at exit). It answers ``POST …/chat/completions`` by calling the ``ChatJudge`` of
the task that sent the request (and ``POST …/embeddings`` with its ``Embedder``), so every framework call still goes through our cache,
retries, circuit breaker, prices and accounting, to the judge the user chose.

Routing. A caller opens a route inside its task (``with bridge.route(judges) as
headers``) and hands ``headers`` to the framework, which sends them back with every
request. The route id in them is a random token (``secrets.token_urlsafe``): the handler
thread runs the judge call on the route's event loop in a copy of the route's context —
the task's accounting scope, so a call is billed to its (backend, metric, sample). A
request without a live route gets HTTP 403. No key is involved on this hop: the server
ignores ``Authorization`` and never logs a header; the judge layer holds the user's key.

Structured output. A request's ``response_format`` JSON schema (an object of strings,
numbers, integers, booleans, enums, nested objects or lists of those) becomes a pydantic
model,
so the judge layer validates and repairs the answer as it does for every backend; a
request without one gets the judge's free text. The answer is an OpenAI
``chat.completion`` with zero ``usage`` (tokens are counted by the judge layer, once).

Errors. A judge failure is HTTP 424 (failed dependency) whose body carries the judge
layer's message, already scrubbed (``unified.redact``) and cut to one line, so the
framework's exception names it. Not 5xx or 429: the judge layer has already retried as
configured, and frameworks retry those codes again (MLflow: 10 times with backoff), which
would multiply the calls and stall the task for minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator, Literal

from pydantic import BaseModel, create_model

from unified.judge.base import Judges
from unified.redact import one_line

#: the header that carries a route id back to the bridge
ROUTE_HEADER = "X-Unified-Route"
_TYPES: dict[str, Any] = {"string": str, "number": float, "integer": int, "boolean": bool}


@dataclass(frozen=True)
class _Route:
    judges: Judges
    loop: asyncio.AbstractEventLoop
    context: contextvars.Context
    answers: list[str] | None = None  # the texts sent back, when the caller asked to see them


def schema_model(schema: dict[str, Any], root: dict[str, Any] | None = None) -> type[BaseModel] | None:
    """A pydantic model for a JSON object schema (title kept as the class name), or None
    when the schema uses anything else (the request then gets free text). Served: strings,
    numbers, integers, booleans, string or integer enums, nested objects (inline or by
    ``$ref`` into ``$defs``, as pydantic writes them), lists of any of those, and
    ``anyOf [X, null]`` (an optional field)."""
    root = schema if root is None else root
    props = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(props, dict) or not props:
        return None
    fields: dict[str, Any] = {}
    required = set(schema.get("required", props))
    for name, sub in props.items():
        typ = _field_type(sub, root)
        if typ is None:
            return None
        fields[name] = (typ, ...) if name in required else (typ | None, None)
    return create_model(str(schema.get("title") or "BridgeAnswer"), **fields)


def _field_type(sub: Any, root: dict[str, Any]) -> Any:
    if not isinstance(sub, dict):
        return None
    if isinstance(sub.get("$ref"), str):
        sub = _deref(sub["$ref"], root)
        if sub is None:
            return None
    options = sub.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        inner = _field_type(next(o for o in options if o != {"type": "null"}), root)
        return None if inner is None else inner | None
    enum = sub.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in enum):
        return Literal[tuple(enum)]
    if sub.get("type") == "array":
        inner = _field_type(sub.get("items", {}), root)
        return None if inner is None else list[inner]  # type: ignore[valid-type]
    if sub.get("type") == "object" or "properties" in sub:
        return schema_model(sub, root)
    return _TYPES.get(str(sub.get("type")))


def _deref(ref: str, root: dict[str, Any]) -> dict[str, Any] | None:
    """``#/$defs/Name`` -> that schema in ``root`` (the only references pydantic writes)."""
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of an OpenAI ``response_format`` (``json_schema`` form, or the
    ``json_object`` + ``schema`` form), else None."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return (rf.get("json_schema") or {}).get("schema")
    return rf.get("schema") if isinstance(rf.get("schema"), dict) else None


async def _answer(judges: Judges, body: dict[str, Any]) -> str:
    """The judge's answer to one chat request, as the text the framework will parse."""
    chat = judges.require_chat()
    messages = [
        {"role": str(m.get("role", "user")), "content": _text(m.get("content"))} for m in body.get("messages", [])
    ]
    schema = request_schema(body)
    model = schema_model(schema) if schema else None
    if model is not None:
        return (await chat.ask(messages, model)).model_dump_json()
    return await chat.ask_text(messages)


async def _embed(judges: Judges, body: dict[str, Any]) -> list[list[float]]:
    """The embedder's vectors for an OpenAI ``embeddings`` request (``input``: a text or
    a list of texts), one request to the judge layer as the framework batched them."""
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else [str(t) for t in texts or []]
    return await judges.require_embedder().embed(texts)


def _text(content: Any) -> str:
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


class JudgeBridge:
    """The loopback server (see the module docstring). ``base_url`` is
    ``http://127.0.0.1:<port>``; ``route(judges)`` opens a route for the calling task."""

    def __init__(self) -> None:
        self._routes: dict[str, _Route] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="judge-bridge", daemon=True)
        self._thread.start()
        self.requests = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @contextlib.contextmanager
    def route(self, judges: Judges, answers: list[str] | None = None) -> Iterator[dict[str, str]]:
        """Route the requests that carry the yielded headers to ``judges``, on the calling
        event loop, in the calling context (call it inside the task that owns them).
        ``answers``: a list the judge's answer texts are appended to, as sent back (a
        framework may rewrite a verdict before the caller sees it)."""
        rid = secrets.token_urlsafe(24)
        with self._lock:
            self._routes[rid] = _Route(judges, asyncio.get_running_loop(), contextvars.copy_context(), answers)
        try:
            yield {ROUTE_HEADER: rid}
        finally:
            with self._lock:
                self._routes.pop(rid, None)

    def lookup(self, rid: str | None) -> _Route | None:
        with self._lock:
            return self._routes.get(rid or "")

    def call(self, route: _Route, body: dict[str, Any]) -> str:
        """Run ``_answer`` on the route's loop in a copy of its context; block for it."""
        text = self._on_loop(route, _answer(route.judges, body))
        if route.answers is not None:
            with self._lock:
                route.answers.append(text)
        return text

    def embed(self, route: _Route, body: dict[str, Any]) -> list[list[float]]:
        """Run ``_embed`` on the route's loop in a copy of its context; block for it."""
        return self._on_loop(route, _embed(route.judges, body))

    def _on_loop(self, route: _Route, coro: Any) -> Any:
        with self._lock:
            self.requests += 1
        ctx = route.context.copy()

        async def in_context() -> Any:
            return await asyncio.get_running_loop().create_task(coro, context=ctx)

        return asyncio.run_coroutine_threadsafe(in_context(), route.loop).result()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _handler_for(bridge: JudgeBridge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None  # nothing about a request is logged (headers may carry keys)

        def do_POST(self) -> None:
            route = bridge.lookup(self.headers.get(ROUTE_HEADER))
            if route is None:
                return self._send(403, {"error": {"message": "unknown or closed bridge route"}})
            path = self.path.rstrip("/")
            if not path.endswith(("/chat/completions", "/embeddings")):
                return self._send(404, {"error": {"message": "only chat/completions and embeddings are served"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                if path.endswith("/embeddings"):
                    return self._send(200, _embeddings(body, bridge.embed(route, body)))
                text = bridge.call(route, body)
            except Exception as e:  # the judge layer's messages are already scrubbed
                return self._send(
                    424, {"error": {"message": one_line(f"{type(e).__name__}: {e}"), "type": "judge_error"}}
                )
            self._send(200, _completion(body, text))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-bridge-{secrets.token_hex(6)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "unified-judge")),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _embeddings(body: dict[str, Any], vectors: list[list[float]]) -> dict[str, Any]:
    return {
        "object": "list",
        "model": str(body.get("model", "unified-embedder")),
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        "usage": {"prompt_tokens": 0, "total_tokens": 0},
    }


_bridge: JudgeBridge | None = None
_users = 0
_guard = threading.Lock()


def acquire() -> JudgeBridge:
    """The process's bridge, started on first use; pair with ``release()``."""
    global _bridge, _users
    with _guard:
        if _bridge is None:
            _bridge = JudgeBridge()
        _users += 1
        return _bridge


def release() -> None:
    """One user fewer; the last one stops the server."""
    global _bridge, _users
    with _guard:
        _users = max(0, _users - 1)
        if _users == 0 and _bridge is not None:
            _bridge.close()
            _bridge = None
