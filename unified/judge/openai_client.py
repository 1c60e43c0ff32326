"""``OpenAIChatJudge``: any OpenAI-compatible chat endpoint as a ``ChatJudge``.

Structured output, by ``JudgeConfig.structured_output``:

- ``json_schema``: ``response_format={"type": "json_schema", "json_schema": {...}}`` (OpenAI,
  vLLM, recent Ollama);
- ``llama_cpp``: ``response_format={"type": "json_object", "schema": {...}}`` (llama.cpp's
  server answers the OpenAI form with HTTP 500);
- ``prompt``: the schema goes into a system message, nothing in ``response_format``;
- ``auto``: llama_cpp when the URL or model names llama.cpp / a ``.gguf`` file, else
  json_schema; if the server rejects the first json_schema request (HTTP 400/422/500) the
  client probes llama_cpp once and, if that works, keeps it for its lifetime.

Every answer is parsed and validated with pydantic. Invalid JSON or a schema mismatch gets
one repair request that shows the model its own answer and the validation error; a second
failure is ``JudgeOutputError``. ``finish_reason == "length"`` is ``JudgeLengthError`` at
once: at temperature 0 a retry would be cut at the same place.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from typing import Any, Awaitable, Callable

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError

from unified.judge.base import (CallRecord, ChatJudge, JudgeLengthError, JudgeOutputError,
                                Messages, T, record_call)
from unified.judge.config import JudgeConfig
from unified.judge.resilience import (Attempts, RateLimiter, RetryPolicy, call_with_retries,
                                      loop_local, scrub)

# servers that want llama.cpp's json_object+schema form
_LLAMA_HINT = re.compile(r"llama[._-]?cpp|\.gguf$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
_PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key but the client wants one


@functools.lru_cache(maxsize=256)
def schema_json(schema: type[BaseModel]) -> dict:
    """``schema.model_json_schema()``, computed once per class (it is not cheap, and every
    request, repair and cache key needs it). Callers must not mutate the result."""
    return schema.model_json_schema()


def estimate_tokens(text: str) -> int:
    """Rough token count (chars / 4) when the server reports no ``usage``."""
    return max(1, len(text) // 4)


def schema_prompt(js: dict) -> str:
    """The instruction used in prompt mode (and as a hint in every mode)."""
    return ("Answer with a single JSON object and nothing else (no prose, no code fences). "
            "It must validate against this JSON schema:\n" + json.dumps(js))


def extract_json_text(text: str) -> str:
    """The JSON part of an answer: strip code fences and prose around one object."""
    m = _FENCE.match(text)
    if m:
        return m.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        return text[start:end + 1]
    return text


class OpenAIChatJudge(ChatJudge):
    """Chat judge over ``openai.AsyncOpenAI`` with our retries, limits and accounting."""

    def __init__(self, config: JudgeConfig):
        self.config = config
        self.model = config.model
        self._secret = config.api_key()  # read now; kept only to scrub error texts
        mode = config.structured_output
        if mode == "auto":
            hint = f"{config.base_url or ''} {config.model}"
            mode = "llama_cpp" if _LLAMA_HINT.search(hint) else "json_schema"
            self._auto = True
        else:
            self._auto = False
        self.mode: str = mode
        self._mode_settled = not self._auto
        self._probing = False  # a llama_cpp probe is in flight and not yet confirmed
        self._policy = RetryPolicy(max_retries=config.max_retries,
                                   backoff_base=config.backoff_base, timeout=config.timeout)
        self._limiter = RateLimiter(config.requests_per_minute) if config.requests_per_minute else None
        secret = self._secret or _PLACEHOLDER_KEY
        # per event loop: httpx pools and semaphores are bound to the loop that uses them
        self._client = loop_local(lambda: openai.AsyncOpenAI(
            base_url=config.base_url, api_key=secret, max_retries=0, timeout=config.timeout))
        self._sem = loop_local(lambda: asyncio.Semaphore(config.concurrency))
        self._what = f"chat model={config.model} at {config.base_url or 'api.openai.com'}"

    # ------------------------------------------------------------ cache identity
    def sampling_params(self) -> dict[str, Any]:
        """What besides model, messages and schema decides the answer (for cache keys)."""
        return {"temperature": self.config.temperature, "max_tokens": self.config.max_tokens,
                "seed": self.config.seed, **self.config.extra}

    # ------------------------------------------------------------ one HTTP call
    def _response_format(self, schema: type[BaseModel] | None) -> dict | None:
        if schema is None or self.mode == "prompt":
            return None
        js = schema_json(schema)
        if self.mode == "llama_cpp":
            return {"type": "json_object", "schema": js}
        name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"
        # strict=False: pydantic schemas rarely meet OpenAI's strict-mode rules
        return {"type": "json_schema",
                "json_schema": {"name": name, "schema": js, "strict": False}}

    def _on_status(self, exc: openai.APIStatusError) -> bool:
        """Auto mode: the server rejected json_schema -> probe llama.cpp's form once."""
        if (self._auto and not self._mode_settled and self.mode == "json_schema"
                and exc.status_code in (400, 422, 500)):
            self.mode = "llama_cpp"
            self._mode_settled = True
            self._probing = True
            return True
        return False

    async def _complete(self, messages: Messages, schema: type[BaseModel] | None,
                        params: dict[str, Any]) -> str:
        """One chat completion with retries; returns the content, records the call."""
        kwargs: dict[str, Any] = {"temperature": self.config.temperature,
                                  "max_tokens": self.config.max_tokens, **self.config.extra}
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        kwargs.update(params)
        attempts = Attempts()
        start = time.perf_counter()
        holder: dict[str, Any] = {}

        async def once() -> Any:
            rf = self._response_format(schema)  # read per attempt: auto mode may switch
            extra = {"response_format": rf} if rf is not None else {}
            if self._limiter is not None:
                await self._limiter.acquire()
            # the timeout covers the request, not the wait for a concurrency slot
            async with self._sem(), asyncio.timeout(self.config.timeout):
                # client.post skips the SDK's recursive TypedDict transform of the body,
                # which costs milliseconds per call on large JSON schemas
                resp = await self._client().post(
                    "/chat/completions", cast_to=ChatCompletion,
                    body={"model": self.model, "messages": messages, **extra, **kwargs})
            holder["rf"] = rf
            return resp

        try:
            resp = await call_with_retries(once, self._policy, self._what, self._secret,
                                           attempts, self._on_status if schema else None,
                                           key_env=self.config.api_key_env)
        except Exception as exc:
            if self._probing:  # llama.cpp's form failed too: the 500 was not about the format
                self.mode, self._probing = "json_schema", False
            record_call(CallRecord(kind="chat", backend="", metric="", sample_id="",
                                   model=self.model, cached=False, retries=attempts.retries,
                                   latency=time.perf_counter() - start,
                                   error=scrub(str(exc), self._secret)[:300]))
            raise
        if schema is not None and self.mode == "json_schema" and holder.get("rf"):
            self._mode_settled = True  # the server accepts json_schema: never probe
        self._probing = False

        choice = resp.choices[0] if resp.choices else None
        content = (choice.message.content if choice and choice.message else None) or ""
        prompt_text = json.dumps(messages)
        usage = getattr(resp, "usage", None)
        estimated = usage is None or usage.prompt_tokens is None
        rec = CallRecord(
            kind="chat", backend="", metric="", sample_id="", model=self.model, cached=False,
            input_tokens=estimate_tokens(prompt_text) if estimated else usage.prompt_tokens,
            output_tokens=(estimate_tokens(content) if estimated
                           else (usage.completion_tokens or 0)),
            tokens_estimated=estimated, latency=time.perf_counter() - start,
            retries=attempts.retries)
        if choice is not None and choice.finish_reason == "length":
            rec.error = "finish_reason=length"
            record_call(rec)
            raise JudgeLengthError(
                f"{self._what}: answer cut at max_tokens={kwargs.get('max_tokens')} "
                "(finish_reason=length); raise max_tokens")
        record_call(rec)
        return content

    # ------------------------------------------------------------ public API
    def _with_schema_prompt(self, messages: Messages, schema: type[BaseModel]) -> Messages:
        if self.mode != "prompt":
            return list(messages)
        return [{"role": "system", "content": schema_prompt(schema_json(schema))},
                *messages]

    async def ask(self, messages: Messages, schema: type[T], **params: Any) -> T:
        msgs = self._with_schema_prompt(messages, schema)
        return await parse_with_repair(lambda m: self._complete(m, schema, params), msgs, schema,
                                       self._what, f"\nfor this schema:\n{json.dumps(schema_json(schema))}")

    async def ask_text(self, messages: Messages, **params: Any) -> str:
        return await self._complete(list(messages), None, params)

    async def aclose(self) -> None:
        try:
            client = self._client()
        except RuntimeError:  # no running loop
            return
        await client.close()


async def parse_with_repair(complete: Callable[[Messages], Awaitable[str]], messages: Messages,
                            schema: type[T], what: str, schema_hint: str = "") -> T:
    """Ask, validate against ``schema``; on invalid JSON or a schema mismatch, ONE repair
    turn that shows the model its answer and the error; then ``JudgeOutputError``.

    ``complete(messages) -> text`` sends one request (with the client's own retries)."""
    text = await complete(messages)
    try:
        return schema.model_validate_json(extract_json_text(text))
    except ValidationError as exc:
        error = short_validation_error(exc)
    repair = [*messages, {"role": "assistant", "content": text[:4000]},
              {"role": "user", "content": f"Your answer is not valid: {error}\n"
               f"Reply with only the corrected JSON object{schema_hint}."}]
    text2 = await complete(repair)
    try:
        return schema.model_validate_json(extract_json_text(text2))
    except ValidationError as exc:
        raise JudgeOutputError(
            f"{what}: answer is not valid {schema.__name__} JSON after one repair retry: "
            f"{short_validation_error(exc)}") from None


def short_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)[:500]
