"""A loopback Patronus API on 127.0.0.1 for tests (plumbing only).

``PatronusServer`` speaks the SDK's shape of ``GET /v1/evaluators`` (resolving an alias)
and ``POST /v1/evaluate`` (one ``EvaluateResult`` per evaluator), with a verdict drawn
from the request's hash, or the fault a test asks for. It judges nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
from typing import Any, Callable

from aiohttp import web

#: request fields that identify a call rather than ask something (trace ids from the SDK)
IDS = ("trace_id", "span_id", "log_id")


class PatronusServer:
    """A loopback Patronus API on 127.0.0.1 (see the module docstring). ``fault(body)``
    may return an ``aiohttp`` response to send instead of a success."""

    def __init__(self, fault: Callable[[dict], web.Response | None] | None = None):
        self.fault = fault
        self.requests: list[tuple[str, str, Any]] = []
        self.keys: set[str | None] = set()
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _evaluators(self, request: web.Request) -> web.Response:
        self.keys.add(request.headers.get("x-api-key"))
        self.requests.append(("GET", request.path, dict(request.query)))
        alias = request.query.get("by_alias_or_id", "")
        found = {"id": f"{alias}-2024-05", "name": alias, "evaluator_family": alias, "aliases": [alias]}
        return web.json_response({"evaluators": [{**found, "default_criteria": f"patronus:{alias}"}]})

    async def _evaluate(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.keys.add(request.headers.get("x-api-key"))
        self.requests.append(("POST", request.path, body))
        if self.fault is not None and (answer := self.fault(body)) is not None:
            return answer
        return web.json_response({"results": [success(body)]})

    def __enter__(self) -> "PatronusServer":
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.port = sock.getsockname()[1]
        app = web.Application()
        app.router.add_get("/v1/evaluators", self._evaluators)
        app.router.add_post("/v1/evaluate", self._evaluate)
        self._runner = web.AppRunner(app, access_log=None)
        ready = threading.Event()

        def serve() -> None:  # the server's own loop, in its own thread (tests run theirs)
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._runner.setup())
            self._loop.run_until_complete(web.SockSite(self._runner, sock).start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="patronus-loopback", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(10)

    def posts(self) -> list[dict]:
        return [body for method, _, body in self.requests if method == "POST"]


def success(body: dict, **result: Any) -> dict:
    """An ``EvaluateResult`` whose verdict is drawn from the request (deterministic)."""
    ev = body["evaluators"][0]
    asked = json.dumps({k: v for k, v in body.items() if k not in IDS}, sort_keys=True)
    ok = hashlib.sha256(asked.encode()).digest()[0] % 2 == 0
    evaluation = {
        "evaluator_id": ev["evaluator"],
        "criteria": ev["criteria"],
        "pass": ok,
        "score_raw": 1.0 if ok else 0.0,
        "explanation": f"loopback {'pass' if ok else 'fail'}",
        "evaluator_family": "retrieval",
        "evaluator_profile_public_id": "loopback",
        **result,
    }
    return {"evaluator_id": ev["evaluator"], "criteria": ev["criteria"], "status": "success", "error_message": None,
            "evaluation_result": evaluation}  # fmt: skip
