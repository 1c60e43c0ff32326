"""The loopback judge server dressed as the servers teams really run — plumbing tests only,
never evidence of judgment quality.

``FlavourServer(flavour, key=...)`` answers chat (and, where the server has them,
embeddings) with ``JudgeServer``'s synthetic answers, but only when a request comes the
way that server wants it — path, query, headers, model — and refuses it otherwise with
that server's own error body:

- ``azure``: Azure OpenAI. ``POST /openai/deployments/{name}/chat/completions`` (and
  ``/embeddings``) with ``?api-version=``; the key in an ``api-key`` header (a Bearer
  token is an Entra ID token: a key sent that way is refused). Errors
  ``{"error": {"code": "DeploymentNotFound", "message": ...}}``; no api-version: 404
  ``Resource not found``.
- ``litellm``: LiteLLM's proxy. ``/chat/completions`` or ``/v1/chat/completions``,
  ``Authorization: Bearer <master key>``; models by their provider-prefixed names
  (``anthropic/…``, ``gemini/…``). Errors ``{"error": {"message", "type", "param",
  "code": "400"}}`` (the code a string).
- ``ollama``: ``/v1/chat/completions`` and ``/v1/embeddings``; any key or none; an unknown
  model is 404 ``model "x" not found, try pulling it first``.
- ``vllm``: ``/v1/chat/completions``; started with ``--api-key``: ``Bearer`` required, else
  401 ``{"error": "Unauthorized"}``; an unknown model is 404 with vLLM's top-level error
  ``{"object": "error", "message": "The model `x` does not exist.", ...}``.
- ``gemini``: Google's OpenAI-compatible endpoint, ``/v1beta/openai/chat/completions``,
  ``Bearer`` key; errors come as a JSON *list*: ``[{"error": {"code": 400, "message",
  "status"}}]``.

``seen`` keeps each request's path, query and headers (to prove what was sent);
``base_url`` is the URL a user gives for that server.
"""

from __future__ import annotations

import asyncio
import socket
from functools import partial
from typing import Any

from aiohttp import web
from judge_server import JudgeServer

AZURE_VERSION = "2024-10-21"
AZURE_DEPLOYMENT = "gpt-4o-mini-eval"
FLAVOURS = ("azure", "litellm", "ollama", "vllm", "gemini")
#: the models each server serves by default (what ``--model`` must name)
MODELS = {
    "azure": ("gpt-4o-mini",),
    "litellm": ("anthropic/claude-3-5-sonnet-20241022", "gemini/gemini-1.5-flash"),
    "ollama": ("qwen2.5:7b", "nomic-embed-text"),
    "vllm": ("Qwen/Qwen2.5-7B-Instruct",),
    "gemini": ("gemini-1.5-flash",),
}


class FlavourServer(JudgeServer):
    def __init__(self, flavour: str, key: str | None = None, models: tuple[str, ...] | None = None, **kw: Any):
        if flavour not in FLAVOURS:
            raise ValueError(f"flavour must be one of {FLAVOURS}, got {flavour!r}")
        super().__init__(**kw)
        self.flavour, self.key = flavour, key
        self.models = models or MODELS[flavour]
        self.seen: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return {
            "azure": f"{root}/openai/deployments/{AZURE_DEPLOYMENT}?api-version={AZURE_VERSION}",
            "litellm": root,  # LiteLLM's docs give the proxy's root; /v1 works too
            "gemini": f"{root}/v1beta/openai",
        }.get(self.flavour, f"{root}/v1")

    def _routes(self) -> list[tuple[str, str]]:
        if self.flavour == "azure":
            return [
                ("/openai/deployments/{deployment}/chat/completions", "chat"),
                ("/openai/deployments/{deployment}/embeddings", "embedding"),
            ]
        if self.flavour == "litellm":
            return [("/chat/completions", "chat"), ("/v1/chat/completions", "chat")]
        if self.flavour == "gemini":
            return [("/v1beta/openai/chat/completions", "chat")]
        if self.flavour == "ollama":
            return [("/v1/chat/completions", "chat"), ("/v1/embeddings", "embedding")]
        return [("/v1/chat/completions", "chat")]

    async def _start_async(self, sock: socket.socket) -> None:
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for path, kind in self._routes():
            app.router.add_post(path, partial(self._gate, kind))
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def _gate(self, kind: str, request: web.Request) -> web.Response:
        """The flavour's checks, then JudgeServer's own answer (the body is read twice:
        aiohttp keeps it)."""
        with self._lock:
            self.seen.append({"path": request.path, "query": dict(request.query), "headers": dict(request.headers)})
        body = await request.json()
        refusal = getattr(self, f"_{self.flavour}")(request, body)
        if refusal is not None:
            return refusal
        return await (self._chat(request) if kind == "chat" else self._embeddings(request))

    # ------------------------------------------------------------ each server's rules
    def _bearer_ok(self, request: web.Request) -> bool:
        return self.key is None or request.headers.get("Authorization") == f"Bearer {self.key}"

    def _azure(self, request: web.Request, body: dict) -> web.Response | None:
        if "api-version" not in request.query:
            return web.json_response({"error": {"code": "404", "message": "Resource not found"}}, status=404)
        if request.headers.get("api-key") != self.key or "Authorization" in request.headers:
            msg = (
                "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a "
                "valid key for an active subscription and use a correct regional API endpoint for your resource."
            )
            return web.json_response({"error": {"code": "401", "message": msg}}, status=401)
        if request.match_info["deployment"] != AZURE_DEPLOYMENT:
            msg = (
                "The API deployment for this resource does not exist. If you created the deployment within "
                "the last 5 minutes, please wait a moment and try again."
            )
            return web.json_response({"error": {"code": "DeploymentNotFound", "message": msg}}, status=404)
        return None

    def _litellm(self, request: web.Request, body: dict) -> web.Response | None:
        if not self._bearer_ok(request):
            msg = "Authentication Error, Invalid proxy server token passed. Received API Key = sk-...xxxx"
            return web.json_response(
                {"error": {"message": msg, "type": "auth_error", "param": "None", "code": "401"}}, status=401
            )
        if body.get("model") not in self.models:
            msg = (
                "litellm.BadRequestError: LLM Provider NOT provided. Pass in the LLM provider you are trying to "
                f"call. You passed model={body.get('model')}"
            )
            return web.json_response(
                {"error": {"message": msg, "type": None, "param": None, "code": "400"}}, status=400
            )
        return None

    def _ollama(self, request: web.Request, body: dict) -> web.Response | None:
        if body.get("model") not in self.models:
            msg = f'model "{body.get("model")}" not found, try pulling it first'
            return web.json_response(
                {"error": {"message": msg, "type": "api_error", "param": None, "code": None}}, status=404
            )
        return None

    def _vllm(self, request: web.Request, body: dict) -> web.Response | None:
        if not self._bearer_ok(request):
            return web.json_response({"error": "Unauthorized"}, status=401)
        if body.get("model") not in self.models:
            msg = f"The model `{body.get('model')}` does not exist."
            return web.json_response(
                {"object": "error", "message": msg, "type": "NotFoundError", "param": None, "code": 404}, status=404
            )
        return None

    def _gemini(self, request: web.Request, body: dict) -> web.Response | None:
        if not self._bearer_ok(request):
            err = {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
            }
            return web.json_response([{"error": err}], status=400)
        if body.get("model") not in self.models:
            err = {"code": 404, "message": f"models/{body.get('model')} is not found", "status": "NOT_FOUND"}
            return web.json_response([{"error": err}], status=404)
        return None
