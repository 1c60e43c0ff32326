"""``LlamaCppJudge``: an in-process judge from a local ``.gguf`` file (extra ``local-llm``).

Output is constrained to the pydantic schema by llama-cpp-python's grammar support
(``response_format={"type": "json_object", "schema": ...}``), then validated like every
other judge, with the same single repair retry. ``chat_format`` picks the prompt template;
``None`` uses the template stored in the GGUF metadata (``"gemma"`` for files without one).
Templates without a system role (Gemma) get system text folded into the first user turn.

One model, one call at a time. llama.cpp contexts are not thread-safe and generation
saturates the CPU anyway, so calls queue (an ``asyncio.Lock`` per event loop, then a
thread lock for callers on other loops) and run in a worker thread, so the event loop
stays free. Budgets (``unified.judge.budget``): no timeout unless the user set one, and
then it counts from the moment the call has the model — waiting in the queue never times
out. A call past its timeout fails at once, but llama.cpp cannot be interrupted: the
model stays taken until that generation ends, and later calls queue behind it (their
clocks not running). ``max_tokens`` is capped per call by ``budget.answer_cap`` unless
the caller passes it, which bounds every generation.

Prompt (KV) cache: llama.cpp re-reads only the tokens after the longest prefix a prompt
shares with the previous one; a ``PromptCache`` of ``PROMPT_CACHE_BYTES`` keeps the
states of earlier calls too, so a prompt that shares its start (a system prompt, a
sample's contexts) with any recent call skips re-reading it. The native prompts put what
a sample's calls share first for this reason (``unified/adapters/native/prompts``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from unified.judge import budget
from unified.judge.base import (
    CallRecord,
    ChatJudge,
    JudgeError,
    JudgeLoopError,
    JudgeNotConfiguredError,
    JudgeTimeoutError,
    Messages,
    T,
    record_call,
    repeat_seed,
)
from unified.judge.config import JudgeConfig
from unified.judge.loops import RETRY_REPEAT_PENALTY, cut_error
from unified.judge.resilience import loop_local
from unified.judge.structured import estimate_tokens, parse_with_repair
from unified.judge.structured import schema_json as _schema_json
from unified.redact import one_line

_NO_SYSTEM_ROLE = {"gemma"}
PROMPT_CACHE_BYTES = 1 << 30  # states of ~30 recent calls of a 1.5B model at 1k tokens


def prompt_cache(capacity_bytes: int = PROMPT_CACHE_BYTES) -> Any:
    """A ``llama_cpp.LlamaRAMCache`` that keeps only what a restore needs and counts
    every byte it keeps against ``capacity_bytes``.

    Why: llama-cpp-python (0.3.x) saves with each state the logits of up to ``n_batch``
    prompt positions — 512 × n_vocab floats, 311 MB for Qwen2.5's 151,936-token
    vocabulary — and counts only llama.cpp's own state (~28 KB per token for a 1.5B
    model) against the capacity, so a 1 GB cache grew to several GB of RAM over a run.
    Those logits are never read: a restored state is always decoded again before the
    next token is sampled (``load_state`` sets ``_requires_eval``; ``generate`` then
    re-reads at least the prompt's last token). So only the last row is kept
    (``load_state`` broadcasts it over the rows it fills), and the size counted is
    llama.cpp's state + the logits row + the token ids."""
    from llama_cpp import LlamaRAMCache

    class PromptCache(LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(_kept_bytes(s) for s in self.cache_state.values())

        def __setitem__(self, key: Any, value: Any) -> None:
            scores = getattr(value, "scores", None)
            if scores is not None and len(scores) > 1:
                value.scores = scores[-1:].copy()
            super().__setitem__(key, value)

    return PromptCache(capacity_bytes=capacity_bytes)


def _kept_bytes(state: Any) -> int:
    """Bytes one saved state holds: llama.cpp's state, the logits kept, the token ids."""
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)


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
        self._queue = loop_local(asyncio.Lock)

    def _load(self) -> Any:
        if self._llama is None:
            with self._load_lock:
                if self._llama is None:
                    self._llama = self._open()
        return self._llama

    def _open(self) -> Any:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise JudgeNotConfiguredError(
                "a .gguf judge needs the extra `local-llm`: pip install 'unified-rag-eval[local-llm]'"
            ) from None
        if not self._path.is_file():
            raise JudgeNotConfiguredError(f"gguf model not found: {self._path}")
        n_threads, n_threads_batch = budget.gguf_threads(self.config)
        llama = Llama(
            model_path=str(self._path),
            n_ctx=self.config.n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads_batch,
            chat_format=self.config.chat_format,
            verbose=False,
            seed=self.config.seed if self.config.seed is not None else 0,
        )
        llama.set_cache(prompt_cache())
        return llama

    def sampling_params(self) -> dict[str, Any]:
        return {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
            "chat_format": self.config.chat_format,
            **self.config.extra,
        }

    def where(self) -> str:
        return f"{self.model} (a .gguf model in this process)"

    def describe(self) -> dict[str, Any]:
        """The ``.gguf`` file name and sampling (incl. the chat template); not its folder."""
        return {"kind": "gguf", "model": self.model, "sampling": self.sampling_params()}

    def _kwargs(self, messages: Messages, schema_json: dict | None, params: dict[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            **self.config.extra,
        }
        cap = budget.answer_cap(self.config, messages, schema_json)
        if cap is not None:
            kwargs["max_tokens"] = cap
        kwargs.update(params)
        if schema_json is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema_json}
        return kwargs

    def _generate(self, messages: Messages, kwargs: dict[str, Any]) -> dict:
        llama = self._load()
        if (self.config.chat_format or "") in _NO_SYSTEM_ROLE:
            messages = fold_system(messages)
        with self._run_lock:
            return llama.create_chat_completion(messages=messages, **kwargs)

    async def _run(self, messages: Messages, kwargs: dict[str, Any]) -> tuple[dict, float]:
        """Wait for the model (no clock), then generate under the timeout; the answer and
        the seconds the generation itself took. The model stays taken until its thread
        ends, even when the caller stopped waiting (timeout, cancel): llama.cpp cannot be
        interrupted, and the next call must not start on a busy model — it queues."""
        lock = self._queue()
        await lock.acquire()
        start = time.perf_counter()
        try:
            work = asyncio.ensure_future(asyncio.to_thread(self._generate, messages, kwargs))
        except BaseException:
            lock.release()
            raise
        work.add_done_callback(lambda _: lock.release())
        timeout = budget.call_timeout(self.config, kwargs.get("max_tokens"))
        resp = await asyncio.wait_for(asyncio.shield(work), timeout)
        return resp, time.perf_counter() - start

    def _failed(self, err: JudgeError, latency: float) -> JudgeError:
        record_call(CallRecord.failure("chat", self.model, one_line(err, 300), latency))
        return err

    async def _complete(self, messages: Messages, schema_json: dict | None, params: dict[str, Any]) -> str:
        """One answer; a call that looped to its cap is asked once more with a repetition
        penalty (``loops.RETRY_REPEAT_PENALTY``), unless the caller or config set one."""
        if repeat_seed() is not None:  # a test–retest repeat samples with its own seed
            params = {**params, "seed": repeat_seed()}
        try:
            return await self._complete_once(messages, schema_json, params)
        except JudgeLoopError:
            if "repeat_penalty" in params or "repeat_penalty" in self.config.extra:
                raise
        retry = {**params, "repeat_penalty": RETRY_REPEAT_PENALTY}
        return await self._complete_once(
            messages, schema_json, retry, f"asked again with repeat_penalty={RETRY_REPEAT_PENALTY}"
        )

    async def _complete_once(
        self, messages: Messages, schema_json: dict | None, params: dict[str, Any], tried: str = ""
    ) -> str:
        """One call; ``tried`` says, in a cut answer's error, what this call already was."""
        kwargs = self._kwargs(messages, schema_json, params)
        start = time.perf_counter()
        try:
            resp, latency = await self._run(messages, kwargs)
        except asyncio.TimeoutError:
            t = budget.call_timeout(self.config, kwargs.get("max_tokens"))
            raise self._failed(
                JudgeTimeoutError(
                    f"gguf judge {self.model}: no answer within {t:g}s of generation (the wait "
                    "for the model does not count); raise --timeout or lower max_tokens"
                ),
                time.perf_counter() - start,
            ) from None
        except ValueError as e:
            # llama-cpp-python raises ValueError for a prompt longer than n_ctx ("Requested
            # tokens (N) exceed context window of M"): a judge failure with its remedy, not
            # a crash of the metric that asked
            hint = "; raise n_ctx" if "context window" in str(e) else ""
            raise self._failed(JudgeError(f"gguf judge {self.model}: {e}{hint}"), time.perf_counter() - start) from None
        return self._answer(resp, messages, latency, kwargs, tried)

    def _answer(self, resp: dict, messages: Messages, latency: float, kwargs: dict[str, Any], tried: str = "") -> str:
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
            latency=latency,
        )
        if choice.get("finish_reason") == "length":
            rec.error = "finish_reason=length"
            record_call(rec)
            if not tried and "repeat_penalty" in kwargs:  # the caller's or the config's own penalty
                tried = f"with repeat_penalty={kwargs['repeat_penalty']} as set"
            raise cut_error(
                f"gguf judge {self.model}", kwargs.get("max_tokens"), content, f", {tried}" if tried else ""
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
