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

import json
import re
import time
import warnings
from typing import Any

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError

from unified.judge import budget
from unified.judge.base import CallRecord, ChatJudge, Messages, T, record_call, repeat_seed
from unified.judge.batch import BatchMode, JudgeBatchError, current_batch_mode, custom_id_for
from unified.judge.config import JudgeConfig, base_url_of, provider_prefix_problem
from unified.judge.loops import cut_error
from unified.judge.resilience import MESSAGE_LIMIT, Attempts, expect_body

# the structured-output helpers live in their own module; re-exported here for callers
# that imported them from this one
from unified.judge.structured import (
    estimate_tokens,
    extract_json_text,
    parse_with_repair,
    schema_json,
    schema_prompt,
    short_validation_error,
)
from unified.judge.transport import HttpEndpoint
from unified.redact import endpoint_of, one_line, redact_config

# servers that want llama.cpp's json_object+schema form
_LLAMA_HINT = re.compile(r"llama[._-]?cpp|\.gguf$", re.IGNORECASE)


def _seed(configured: int | None) -> int | None:
    """The request's seed: a test–retest repeat's (``repeat_seed``), else the configured one."""
    seed = repeat_seed()
    return configured if seed is None else seed


class StructuredOutputWarning(UserWarning):
    """Auto structured output switched forms after the server refused the first."""


class OpenAIChatJudge(ChatJudge):
    """Chat judge over ``openai.AsyncOpenAI`` with our retries, limits and accounting."""

    def __init__(self, config: JudgeConfig):
        problem = provider_prefix_problem(config)
        if problem is not None:  # never a quiet call to the wrong server
            raise ValueError(problem)
        self.config = config
        self.model = config.model
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
        self._http = HttpEndpoint(config, "judge")
        self._what = f"chat model={config.model} at {self._http.url}"

    # ------------------------------------------------------------ cache identity
    def sampling_params(self) -> dict[str, Any]:
        """What besides model, messages and schema decides the answer (for cache keys)."""
        return {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
            **self.config.extra,
        }

    def describe(self) -> dict[str, Any]:
        """Endpoint, model, sampling and the *configured* structured-output mode (``auto``
        stays ``auto``: what it resolves to may change on the first answer, a fingerprint
        must not). The endpoint is the URL without credentials or query (but a model-choosing parameter)
        (``unified.redact.endpoint_of``): two servers that both call their model "local"
        are two judges."""
        return {
            "kind": "openai",
            "endpoint": endpoint_of(base_url_of(self.config)[0]),
            "model": self.model,
            "sampling": redact_config(
                {
                    "temperature": self.config.temperature,
                    "max_tokens": self.config.max_tokens,
                    "seed": self.config.seed,
                    "extra": self.config.extra,
                }
            ),
            "structured_output": self.config.structured_output,
        }

    def where(self) -> str:
        return self._http.where()

    # ------------------------------------------------------------ one HTTP call
    def _response_format(self, schema: type[BaseModel] | None) -> dict | None:
        if schema is None or self.mode == "prompt":
            return None
        js = schema_json(schema)
        if self.mode == "llama_cpp":
            return {"type": "json_object", "schema": js}
        name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"
        # strict=False: pydantic schemas rarely meet OpenAI's strict-mode rules
        return {"type": "json_schema", "json_schema": {"name": name, "schema": js, "strict": False}}

    def _on_status(self, exc: openai.APIStatusError) -> bool:
        """Auto mode: the server rejected json_schema -> probe llama.cpp's form once, and
        say so: a passing 500 may be all it was, and the rest of the run then asks the
        other form."""
        if self._auto and not self._mode_settled and self.mode == "json_schema" and exc.status_code in (400, 422, 500):
            self.mode = "llama_cpp"
            self._mode_settled = True
            self._probing = True
            warnings.warn(
                f"{self._what} answered HTTP {exc.status_code} to the json_schema response format: asking "
                "llama.cpp's json_object+schema form from now on (--structured-output json_schema keeps the first)",
                StructuredOutputWarning,
                stacklevel=2,
            )
            return True
        return False

    def _kwargs(self, messages: Messages, schema: type[BaseModel] | None, params: dict[str, Any]) -> dict[str, Any]:
        """Sampling of one request: the config's, a local server's ``max_tokens`` cap for
        this prompt (``budget.answer_cap``), then the caller's ``params``."""
        kwargs: dict[str, Any] = {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            **self.config.extra,
        }
        if (seed := _seed(self.config.seed)) is not None:
            kwargs["seed"] = seed
        cap = budget.answer_cap(self.config, messages, schema_json(schema) if schema else None)
        if cap is not None:  # a local server: a small model must not ramble for minutes
            kwargs["max_tokens"] = cap
        kwargs.update(params)
        return kwargs

    def _failed(self, exc: BaseException, start: float, retries: int, batch: bool = False) -> None:
        record_call(
            CallRecord.failure(
                "chat",
                self.model,
                one_line(exc, MESSAGE_LIMIT, self._http.secrets),
                time.perf_counter() - start,
                retries,
                batch,
            )
        )

    async def _online(self, messages: Messages, schema: type[BaseModel] | None, kwargs: dict[str, Any]) -> Any:
        """One chat completion over HTTP with retries: ``(response, retries)``."""
        timeout = budget.call_timeout(self.config, kwargs.get("max_tokens")) or self._http.timeout
        attempts = Attempts()
        start = time.perf_counter()
        holder: dict[str, Any] = {}

        async def once() -> Any:
            rf = self._response_format(schema)  # read per attempt: auto mode may switch
            extra = {"response_format": rf} if rf is not None else {}
            # client.post skips the SDK's recursive TypedDict transform of the body,
            # which costs milliseconds per call on large JSON schemas
            resp = await self._http.send(
                lambda: self._http.client().post(
                    "/chat/completions",
                    cast_to=ChatCompletion,
                    body={"model": self.model, "messages": messages, **extra, **kwargs},
                ),
                timeout,
            )
            expect_body(resp, ChatCompletion, "a chat completion")
            holder["rf"] = rf
            return resp

        try:
            resp = await self._http.call(once, self._what, attempts, self._on_status if schema else None, timeout)
        except Exception as exc:
            if self._probing:  # llama.cpp's form failed too: the 500 was not about the format
                self.mode, self._probing = "json_schema", False
            self._failed(exc, start, attempts.retries)
            raise
        if schema is not None and self.mode == "json_schema" and holder.get("rf"):
            self._mode_settled = True  # the server accepts json_schema: never probe
        self._probing = False
        return resp, attempts.retries

    async def _batched(
        self, mode: BatchMode, messages: Messages, schema: type[BaseModel] | None, kwargs: dict[str, Any]
    ) -> ChatCompletion:
        """The same request as one line of a Batch API job (``unified.judge.batch``).
        ``auto`` structured output cannot probe inside a job: it keeps its first guess."""
        rf = self._response_format(schema)
        body = {"model": self.model, "messages": messages, **({"response_format": rf} if rf else {}), **kwargs}
        start = time.perf_counter()
        try:
            raw = await mode.batcher(self._http).submit(custom_id_for(body), body)
            try:
                return ChatCompletion.model_validate(raw)
            except ValidationError as exc:
                raise JudgeBatchError(
                    f"{self._what}: a batch output line is not a chat completion ({short_validation_error(exc)})"
                ) from None
        except Exception as exc:
            self._failed(exc, start, 0, batch=True)
            raise

    async def _complete(self, messages: Messages, schema: type[BaseModel] | None, params: dict[str, Any]) -> str:
        """One chat completion (online, or in a batch job under ``batch_scope``); returns
        the content, records the call."""
        kwargs = self._kwargs(messages, schema, params)
        start = time.perf_counter()
        mode = current_batch_mode()
        if mode is not None:
            resp, retries = await self._batched(mode, messages, schema, kwargs), 0
        else:
            resp, retries = await self._online(messages, schema, kwargs)

        choice = resp.choices[0] if resp.choices else None
        content = (choice.message.content if choice and choice.message else None) or ""
        prompt_text = json.dumps(messages)
        usage = getattr(resp, "usage", None)
        estimated = usage is None or usage.prompt_tokens is None
        rec = CallRecord(
            kind="chat",
            backend="",
            metric="",
            sample_id="",
            model=self.model,
            cached=False,
            input_tokens=estimate_tokens(prompt_text) if estimated or usage is None else usage.prompt_tokens,
            output_tokens=(estimate_tokens(content) if estimated or usage is None else (usage.completion_tokens or 0)),
            tokens_estimated=estimated,
            latency=time.perf_counter() - start,
            retries=retries,
            batch=mode is not None,
        )
        if choice is not None and choice.finish_reason == "length":
            rec.error = "finish_reason=length"
            record_call(rec)
            raise cut_error(self._what, kwargs.get("max_tokens"), content)
        record_call(rec)
        return content

    # ------------------------------------------------------------ public API
    def _with_schema_prompt(self, messages: Messages, schema: type[BaseModel]) -> Messages:
        if self.mode != "prompt":
            return list(messages)
        return [{"role": "system", "content": schema_prompt(schema_json(schema))}, *messages]

    async def ask(self, messages: Messages, schema: type[T], **params: Any) -> T:
        msgs = self._with_schema_prompt(messages, schema)
        return await parse_with_repair(
            lambda m: self._complete(m, schema, params),
            msgs,
            schema,
            self._what,
            f"\nfor this schema:\n{json.dumps(schema_json(schema))}",
        )

    async def ask_text(self, messages: Messages, **params: Any) -> str:
        return await self._complete(list(messages), None, params)

    async def aclose(self) -> None:
        await self._http.aclose()


__all__ = [
    "OpenAIChatJudge",
    "estimate_tokens",
    "extract_json_text",
    "parse_with_repair",
    "schema_json",
    "schema_prompt",
    "short_validation_error",
]
