"""``OpenAIEmbedder``: an OpenAI-compatible ``/v1/embeddings`` endpoint as an ``Embedder``.

Texts go out in batches of ``batch_size`` (concurrently, under the client's semaphore) and
come back in input order. Vectors are requested base64-encoded (little-endian float32,
a quarter of the JSON size) and decoded here; servers that ignore ``encoding_format`` and
send float lists are handled too. Retries and errors follow ``unified.judge.resilience``.
"""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any, Sequence

import numpy as np
from openai.types import CreateEmbeddingResponse

from unified.judge.base import CallRecord, Embedder, JudgeHTTPError, record_call
from unified.judge.config import EmbeddingConfig, base_url_of
from unified.judge.resilience import MESSAGE_LIMIT, Attempts, expect_body
from unified.judge.structured import estimate_tokens
from unified.judge.transport import HttpEndpoint
from unified.redact import endpoint_of, one_line


def decode_embedding(value: Any) -> list[float]:
    """A float list, or a base64 string of little-endian float32 values -> float list."""
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(float).tolist()
    return [float(x) for x in value]


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible endpoint, batched, with retries."""

    def __init__(self, config: EmbeddingConfig):
        if config.kind != "openai":
            raise ValueError("OpenAIEmbedder needs EmbeddingConfig(kind='openai', base_url=...)")
        self.config = config
        self.model = config.model
        self._http = HttpEndpoint(config, "embeddings")
        self._what = f"embeddings model={config.model} at {self._http.url}"

    def where(self) -> str:
        return self._http.where()

    def describe(self) -> dict[str, Any]:
        """Kind, endpoint (the URL without credentials or query but a model-choosing parameter), model and ``dimensions``:
        what decides the vectors."""
        return {
            "kind": "openai",
            "endpoint": endpoint_of(base_url_of(self.config)[0]),
            "model": self.model,
            "dimensions": self.config.dimensions,
        }

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        attempts = Attempts()
        start = time.perf_counter()
        extra: dict[str, Any] = {}
        if self.config.dimensions:
            extra["dimensions"] = self.config.dimensions

        async def once() -> Any:
            resp = await self._http.send(
                lambda: self._http.client().embeddings.create(
                    model=self.model, input=texts, encoding_format="base64", **extra
                )
            )
            expect_body(resp, CreateEmbeddingResponse, "an embeddings response")
            if not getattr(resp, "data", None) or len(resp.data) != len(texts):
                raise ValueError("embedding count does not match input count")
            return resp

        try:
            resp = await self._http.call(once, self._what, attempts)
        except Exception as exc:
            record_call(
                CallRecord.failure(
                    "embedding",
                    self.model,
                    one_line(exc, MESSAGE_LIMIT, self._http.secrets),
                    time.perf_counter() - start,
                    attempts.retries,
                )
            )
            raise
        rows = sorted(resp.data, key=lambda d: d.index)
        try:
            vectors = [decode_embedding(d.embedding) for d in rows]
        except (ValueError, TypeError) as exc:
            raise JudgeHTTPError(f"{self._what}: undecodable embedding ({type(exc).__name__})", 200) from None
        usage = getattr(resp, "usage", None)
        tokens = getattr(usage, "prompt_tokens", None)
        record_call(
            CallRecord(
                kind="embedding",
                backend="",
                metric="",
                sample_id="",
                model=self.model,
                cached=False,
                input_tokens=tokens if tokens is not None else sum(estimate_tokens(t) for t in texts),
                tokens_estimated=tokens is None,
                latency=time.perf_counter() - start,
                retries=attempts.retries,
            )
        )
        return vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        texts = [t if t else " " for t in texts]  # some servers reject empty strings
        size = self.config.batch_size
        batches = [texts[i : i + size] for i in range(0, len(texts), size)]
        results = await asyncio.gather(*(self._batch(b) for b in batches))
        return [v for batch in results for v in batch]

    async def aclose(self) -> None:
        await self._http.aclose()
