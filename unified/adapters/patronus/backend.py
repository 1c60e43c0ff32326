"""The Patronus backend: our Sample through Patronus AI's hosted RAG evaluators.

The SDK does the calling, as its documentation shows (``AsyncRemoteEvaluator(id).load()``
then ``await evaluator.evaluate(task_input=..., task_output=..., task_context=...,
gold_answer=...)``); this module only translates and guards:

- settings: the API key and URL are read as the SDK's Config reads them from the
  environment (``PATRONUS_API_KEY``, ``PATRONUS_API_URL``, default
  ``https://api.patronus.ai``) or given as backend options (``api_key=``, ``api_url=``),
  which win. The SDK's ``patronus.yaml`` in the working directory is not read (the SDK
  puts it above the environment, so a stray file could redirect the key). Without a key
  every pair is refused by the run plan (``param_error``), before any request;
- ``patronus.init()`` is never called: it would start OpenTelemetry exporters that send
  traces and logs, with the key, to ``otel.patronus.ai``. Each evaluator gets its own API
  client instead (the constructor's documented ``api_`` argument), so the key goes to the
  API URL and nowhere else. That client is the SDK's ``PatronusAPIClient`` without the
  ``print()`` of every request URL that patronus 0.1.x does in ``BaseAPIClient._url``
  (our stdout carries tables and JSON);
- the key never reaches a Score, a log or an error: errors are scrubbed of it
  (``unified.redact.scrub`` with the key as a known secret), the SDK's and httpx's
  loggers get the redacting filter, and the fingerprint records the URL without
  credentials (``endpoint_of``);
- ``EvaluationResult`` -> Score: ``pass_`` true → raw 1, false → raw 0 (``value = 10 ·
  raw``); the explanation is the reason; ``score_raw`` and the criteria are kept in
  ``details``. A result without a verdict is no value. The SDK's own retries (3 attempts,
  1 s then 2 s apart; none for a 4xx) are kept; what they end with is the task's error.
"""

from __future__ import annotations

import asyncio
import os
from importlib.metadata import version
from typing import Any

import httpx
from patronus.api.api_client import PatronusAPIClient
from patronus.evals import AsyncRemoteEvaluator

from unified.adapters.framework import FrameworkBackend, Outcome
from unified.adapters.patronus import (
    DEFAULT_API_URL,
    FACTS,
    KEY_ENV,
    URL_ENV,
    PatronusEvaluator,
)
from unified.metrics import MetricRef
from unified.redact import LOG_PREFIXES, endpoint_of, redact_logs, remember_secret, scrub, url_secrets
from unified.sample import Sample

#: ``RemoteEvaluator`` settings a bracket parameter may set (the others name, weigh or
#: tag the result, or choose the client, which this backend does)
EVALUATOR_PARAMS = frozenset({"criteria", "explain_strategy"})
#: the SDK's Config default (seconds): remote evaluations can take long
TIMEOUT_S = 300


class QuietAPIClient(PatronusAPIClient):
    """The SDK's API client, minus the ``print(url)`` patronus 0.1.x does per request."""

    def _url(self, path: str) -> str:
        assert self.base_url, "BaseAPIClient: base_url must be set"
        return f"{self.base_url}{path}"


def evaluate_kwargs(m: PatronusEvaluator, sample: Sample) -> dict[str, Any]:
    """Sample -> the keyword arguments of ``evaluate()`` (an empty field is None)."""
    return {kw: (getattr(sample, f) or None) for f, kw in m.reads.items()}


def settings(options: dict[str, Any]) -> tuple[str | None, str]:
    """(API key or None, API URL without a trailing slash): options, else environment."""
    key = options.get("api_key") or os.environ.get(KEY_ENV) or None
    url = options.get("api_url") or os.environ.get(URL_ENV) or DEFAULT_API_URL
    return key, str(url).rstrip("/")


class PatronusBackend(FrameworkBackend):
    """Run canonical metrics on Patronus's hosted evaluators (no judge of ours).

    Options: ``api_key``, ``api_url`` (else ``PATRONUS_API_KEY``/``PATRONUS_API_URL``),
    ``timeout`` (seconds, default 300), and ``FrameworkBackend``'s. A metric's bracket
    parameters ``criteria`` and ``explain_strategy`` go to the evaluator's constructor.
    """

    FACTS = FACTS
    uses_judges = False
    metric_key = "evaluator"

    def __init__(self, judges: Any = None, **options: Any):
        super().__init__(judges, **options)
        self.api_key, self.api_url = settings(options)
        self._timeout = float(options.get("timeout", TIMEOUT_S))
        self._secrets = [s for s in (self.api_key, *url_secrets(self.api_url)) if s]
        remember_secret(*self._secrets)
        redact_logs((*LOG_PREFIXES, "patronus"))  # the SDK logs response bodies at debug
        # per event loop (an httpx client and the evaluators' load locks belong to one)
        self._loop_id: int | None = None
        self._api: QuietAPIClient | None = None
        self._evaluators: dict[tuple[str, tuple[tuple[str, Any], ...]], AsyncRemoteEvaluator] = {}

    def version(self) -> str:
        return version("patronus")

    def fingerprint_extra(self) -> dict[str, Any]:
        """The SDK version and where the evaluators answer (no credential)."""
        return {**super().fingerprint_extra(), "api_url": endpoint_of(self.api_url)}

    def param_error(self, ref: MetricRef) -> str | None:
        """No key: every pair is refused up front, in one line naming the setting."""
        if not self.api_key:
            return (
                f"the patronus backend calls Patronus's hosted evaluators and needs a Patronus API key: "
                f"set {KEY_ENV} (and {URL_ENV} for another endpoint than {DEFAULT_API_URL}); nothing was sent"
            )
        return super().param_error(ref)

    def framework_params(self, row: Any) -> set[str]:
        return set(EVALUATOR_PARAMS)

    def error_text(self, e: BaseException) -> str:
        """The SDK's message (its errors name their class already), without the key."""
        text = str(e) if str(e).startswith(type(e).__name__) else super().error_text(e)
        return scrub(text, self._secrets)

    def _evaluator(self, row: PatronusEvaluator, params: tuple[tuple[str, Any], ...]) -> AsyncRemoteEvaluator:
        """The loaded-once evaluator of (row, params) on the running loop's API client."""
        loop_id = id(asyncio.get_running_loop())
        if self._api is None or self._loop_id != loop_id:
            client = httpx.AsyncClient(timeout=self._timeout)
            self._api = QuietAPIClient(
                client_http_async=client,
                client_http=httpx.Client(timeout=self._timeout),
                base_url=self.api_url,
                api_key=str(self.api_key),
            )
            self._loop_id, self._evaluators = loop_id, {}
        key = (row.cls, params)
        if key not in self._evaluators:
            self._evaluators[key] = AsyncRemoteEvaluator(row.cls, **dict(params), api_=self._api)
        return self._evaluators[key]

    async def evaluate(
        self, sample: Sample, ref: MetricRef, row: PatronusEvaluator, details: dict[str, Any]
    ) -> Outcome:
        """``await evaluator.evaluate(**kwargs)`` (the SDK loads the evaluator on first
        use); the verdict as raw 1/0."""
        result = await self._evaluator(row, self.passed_params(ref)).evaluate(**evaluate_kwargs(row, sample))
        details["patronus_pass"] = result.pass_
        details["patronus_score_raw"] = result.score
        verdict = result.pass_
        if not isinstance(verdict, bool):
            return Outcome(None, f"returned no pass/fail verdict (pass={verdict!r}, score_raw={result.score!r})")
        return Outcome(1.0 if verdict else 0.0, reason=result.explanation)

    async def aclose(self) -> None:
        """Close the HTTP clients (a later ``score`` opens new ones)."""
        if self._api is not None:
            await self._api.http.aclose()
            self._api.http_sync.close()
            self._api, self._loop_id, self._evaluators = None, None, {}
