"""What the two HTTP transports (chat, embeddings) share: one ``openai.AsyncOpenAI`` per
event loop, the concurrency slot, the rate limiter, the retry policy, the endpoint's
circuit breaker and the secrets to scrub.

Where the calls go: the config's ``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's API
(``config.base_url_of``; ``where()`` says which, for the run's header and the dry run).

URL credentials: query parameters of ``base_url`` (``?api_key=KEY``) are sent with every
request (the SDK's ``default_query``; left in the URL they would end up in front of
``/chat/completions``), userinfo (``user:KEY@``) is left to httpx, which turns it into
basic auth. Either way the values are remembered as secrets: scrubbed from every error,
call record and log line (``unified.redact``); the URL in messages is redacted.

An Azure OpenAI deployment URL (``…/openai/deployments/NAME?api-version=V``,
``config.azure_deployment``) gets the SDK's Azure client: the key goes in an ``api-key``
header instead of ``Authorization: Bearer``, and ``api-version`` on every request.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from typing import Any, Awaitable, Callable, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import openai

from unified.judge import budget
from unified.judge.breaker import CircuitBreaker
from unified.judge.config import DEFAULT_BASE_URL, azure_deployment, base_url_of
from unified.judge.resilience import Attempts, RateLimiter, RetryPolicy, call_with_retries, loop_local
from unified.redact import redact_logs, redact_url, remember_secret, url_secrets

R = TypeVar("R")

_PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key but the client wants one


def split_query(url: str | None) -> tuple[str | None, dict[str, str]]:
    """``http://h/v1?api_key=K`` -> (``http://h/v1``, ``{"api_key": "K"}``)."""
    if not url:
        return url, {}
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment)), query


class HttpEndpoint:
    """One OpenAI-compatible endpoint as a client sees it (``config``: a JudgeConfig or an
    EmbeddingConfig; ``label``: "judge" or "embeddings", for the breaker's messages)."""

    def __init__(self, config: Any, label: str):
        self.config = config
        self.key = config.api_key()  # read now; kept for the client and to scrub texts
        url, self.source = base_url_of(config)
        self.secrets: list[str | None] = [self.key, *url_secrets(url)]
        remember_secret(*self.secrets)
        redact_logs()  # openai (and httpx) are imported now: their loggers exist
        self.url = redact_url(url)
        # a chat judge may leave timeout and concurrency to its kind (unified.judge.budget);
        # the endpoint's own timeout is the longest one request may take (the config's max_tokens)
        self.timeout: float = budget.call_timeout(config) or budget.REMOTE_TIMEOUT
        self.policy = RetryPolicy(
            max_retries=config.max_retries, backoff_base=config.backoff_base, timeout=self.timeout
        )
        self.limiter = RateLimiter(config.requests_per_minute) if config.requests_per_minute else None
        self.breaker = CircuitBreaker(
            f"{label} at {self.url} (model {config.model})",
            config.breaker_failures,
            config.breaker_cooldown,
            answer_window=self.timeout,
        )
        base_url, query = split_query(url)
        self.azure = azure_deployment(base_url)
        # per event loop: httpx pools and semaphores are bound to the loop that uses them
        self.client = loop_local(lambda: self._client(base_url or DEFAULT_BASE_URL, query))
        self.slot = loop_local(lambda: asyncio.Semaphore(budget.concurrency(config)))

    def _client(self, base_url: str, query: dict[str, str]) -> openai.AsyncOpenAI:
        """The SDK client: ``AsyncAzureOpenAI`` for an Azure deployment URL (an ``api-key``
        header, ``api-version`` from the URL or ``$OPENAI_API_VERSION``), else ``AsyncOpenAI``."""
        common: dict = {"api_key": self.key or _PLACEHOLDER_KEY, "max_retries": 0, "timeout": self.timeout}
        if self.azure is None:
            return openai.AsyncOpenAI(base_url=base_url, default_query=query or None, **common)
        rest = {k: v for k, v in query.items() if k != "api-version"}
        version = query.get("api-version") or os.environ.get("OPENAI_API_VERSION")
        return openai.AsyncAzureOpenAI(base_url=base_url, api_version=version, default_query=rest or None, **common)

    def where(self) -> str:
        """Where this endpoint's calls go, for people: ``MODEL at URL`` (redacted), and why
        there when no URL was given (``$OPENAI_BASE_URL``, or OpenAI's API by default)."""
        note = {
            "OPENAI_BASE_URL": " (from $OPENAI_BASE_URL)",
            "default": " (OpenAI's API: no base URL was given)",
        }.get(self.source, "")
        if self.azure is not None:
            note = f" (Azure OpenAI deployment {self.azure})"
        return f"{self.config.model} at {self.url}{note}"

    async def send(self, request: Callable[[], Awaitable[R]], timeout: float | None = None) -> R:
        """One attempt: wait for a rate-limit turn and a concurrency slot, then run
        ``request()`` under the timeout (which covers the request, not the queueing);
        ``timeout``: this request's own budget (default: the endpoint's)."""
        if self.limiter is not None:
            await self.limiter.acquire()
        async with self.slot(), asyncio.timeout(timeout or self.timeout):
            return await request()

    async def call(
        self,
        once: Callable[[], Awaitable[R]],
        what: str,
        attempts: Attempts,
        on_status: Callable[[openai.APIStatusError], bool] | None = None,
        timeout: float | None = None,
    ) -> R:
        """``once`` (one attempt) with retries, the breaker and scrubbed errors; ``timeout``:
        the budget ``once`` sends with (named in a timeout's message)."""
        return await call_with_retries(
            once,
            self.policy if timeout is None else replace(self.policy, timeout=timeout),
            what,
            self.secrets,
            attempts,
            on_status,
            key_env=self.config.api_key_env,
            breaker=self.breaker,
        )

    async def aclose(self) -> None:
        try:
            client = self.client()
        except RuntimeError:  # no running loop
            return
        await client.close()


__all__ = ["DEFAULT_BASE_URL", "HttpEndpoint", "split_query"]
