"""``LlamaCppJudge``: an in-process judge from a local ``.gguf`` file (extra ``local-llm``).

Output is constrained to the pydantic schema by llama-cpp-python's grammar support
(``response_format={"type": "json_object", "schema": ...}``), then validated like every
other judge, with the same single repair retry. ``chat_format`` picks the prompt template;
``None`` uses the template stored in the GGUF metadata (``"gemma"`` for files without one).
Templates without a system role (Gemma) get system text folded into the first user turn.

llama.cpp contexts are not thread-safe and generation saturates the CPU anyway, so calls
run one at a time in a worker thread (the event loop stays free for other tasks).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from unified.judge.base import (
    CallRecord,
    ChatJudge,
    JudgeError,
    JudgeLengthError,
    JudgeNotConfiguredError,
    JudgeTimeoutError,
    Messages,
    T,
    record_call,
    repeat_seed,
)
from unified.judge.config import JudgeConfig
from unified.judge.structured import estimate_tokens, parse_with_repair
from unified.judge.structured import schema_json as _schema_json
from unified.redact import one_line

_NO_SYSTEM_ROLE = {"gemma"}


def fold_system(messages: Messages) -> Messages:
    """Merge system messages into the next user message (for templates without one)."""
    out: Messages = []
    pending: list[str] = []
    for m in messages:
        if m.get("role") == "system":
            pending.append(m.get("content", ""))
            continue
        if pending and m.get("role") == "user":
            m = {"role": "user", "content": "\n\n".join([*pending, m.get("content", "")])}
            pending = []
        out.append(m)
    if pending:
        out.insert(0, {"role": "user", "content": "\n\n".join(pending)})
    return out


class LlamaCppJudge(ChatJudge):
    """A ``ChatJudge`` backed by ``llama_cpp.Llama`` in this process."""

    def __init__(self, config: JudgeConfig, llama: Any = None):
        self.config = config
        path = Path(config.gguf_path or config.model)
        self.model = path.name
        self._path = path
        self._llama = llama
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    def _load(self) -> Any:
        if self._llama is None:
            with self._load_lock:
                if self._llama is None:
                    try:
                        from llama_cpp import Llama
                    except ImportError:
                        raise JudgeNotConfiguredError(
                            "a .gguf judge needs the extra `local-llm`: pip install 'unified-rag-eval[local-llm]'"
                        ) from None
                    if not self._path.is_file():
                        raise JudgeNotConfiguredError(f"gguf model not found: {self._path}")
                    self._llama = Llama(
                        model_path=str(self._path),
                        n_ctx=self.config.n_ctx,
                        chat_format=self.config.chat_format,
                        verbose=False,
                        seed=self.config.seed if self.config.seed is not None else 0,
                    )
        return self._llama

    def sampling_params(self) -> dict[str, Any]:
        return {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
            "chat_format": self.config.chat_format,
            **self.config.extra,
        }

    def describe(self) -> dict[str, Any]:
        """The ``.gguf`` file name and sampling (incl. the chat template); not its folder."""
        return {"kind": "gguf", "model": self.model, "sampling": self.sampling_params()}

    def _generate(self, messages: Messages, schema_json: dict | None, params: dict[str, Any]) -> dict:
        llama = self._load()
        kwargs: dict[str, Any] = {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            **self.config.extra,
            **params,
        }
        if schema_json is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema_json}
        if (self.config.chat_format or "") in _NO_SYSTEM_ROLE:
            messages = fold_system(messages)
        with self._run_lock:
            return llama.create_chat_completion(messages=messages, **kwargs)

    async def _complete(self, messages: Messages, schema_json: dict | None, params: dict[str, Any]) -> str:
        start = time.perf_counter()
        if repeat_seed() is not None:  # a test–retest repeat samples with its own seed
            params = {**params, "seed": repeat_seed()}
        try:
            resp = await asyncio.wait_for(
                asyncio.to_thread(self._generate, messages, schema_json, params), self.config.timeout
            )
        except asyncio.TimeoutError:
            # the worker thread finishes its generation in the background; we stop waiting
            err: JudgeError = JudgeTimeoutError(f"gguf judge {self.model}: timed out after {self.config.timeout:g}s")
            record_call(
                CallRecord(
                    kind="chat",
                    backend="",
                    metric="",
                    sample_id="",
                    model=self.model,
                    cached=False,
                    error=str(err),
                    latency=time.perf_counter() - start,
                )
            )
            raise err from None
        except ValueError as e:
            # llama-cpp-python raises ValueError for a prompt longer than n_ctx ("Requested
            # tokens (N) exceed context window of M"): a judge failure with its remedy, not
            # a crash of the metric that asked
            hint = "; raise n_ctx" if "context window" in str(e) else ""
            err = JudgeError(f"gguf judge {self.model}: {e}{hint}")
            record_call(
                CallRecord(
                    kind="chat",
                    backend="",
                    metric="",
                    sample_id="",
                    model=self.model,
                    cached=False,
                    error=one_line(err, 300),
                    latency=time.perf_counter() - start,
                )
            )
            raise err from None
        choice = resp["choices"][0]
        content = choice["message"].get("content") or ""
        usage = resp.get("usage") or {}
        estimated = "prompt_tokens" not in usage
        rec = CallRecord(
            kind="chat",
            backend="",
            metric="",
            sample_id="",
            model=self.model,
            cached=False,
            input_tokens=usage.get("prompt_tokens") or estimate_tokens(json.dumps(messages)),
            output_tokens=usage.get("completion_tokens") or estimate_tokens(content),
            tokens_estimated=estimated,
            latency=time.perf_counter() - start,
        )
        if choice.get("finish_reason") == "length":
            rec.error = "finish_reason=length"
            record_call(rec)
            raise JudgeLengthError(
                f"gguf judge {self.model}: answer cut at max_tokens="
                f"{params.get('max_tokens', self.config.max_tokens)} (finish_reason=length); "
                "raise max_tokens"
            )
        record_call(rec)
        return content

    async def ask(self, messages: Messages, schema: type[T], **params: Any) -> T:
        schema_json = _schema_json(schema)
        # the grammar already constrains the output to the schema; the repair turn is for
        # answers cut short or otherwise invalid
        return await parse_with_repair(
            lambda m: self._complete(m, schema_json, params), list(messages), schema, f"gguf judge {self.model}"
        )

    async def ask_text(self, messages: Messages, **params: Any) -> str:
        return await self._complete(list(messages), None, params)
