"""Every LLM and embedding call of every backend goes through here.

``resolve_judges`` turns what the user gave (flags, Python values, the environment, a run
file) into the ``Judges`` bundle a backend receives: chat judges (OpenAI-compatible HTTP
or an in-process ``.gguf``), an embedder (``local`` MiniLM or an OpenAI-compatible
endpoint), all behind one persistent cache shared by every run unless it is disabled.
``build_judges`` builds a bundle from configs exactly as given.

Layers, bottom up (each imports only from below it)::

    base          the contract: errors, accounting scopes, ChatJudge/Embedder/Judges
    prices        price tables and dollar cost (pure)
    structured    schema, schema prompt, JSON extraction, parse-and-repair, token estimate
    loops         is an answer cut at max_tokens a loop? (the length error's remedy)
    config        JudgeConfig / EmbeddingConfig / run files (pydantic only)
    breaker       the per-endpoint circuit breaker
    resilience    retries, rate limits, error translation          (imports openai)
    transport     what the HTTP transports share                    (imports openai)
    openai_client, embeddings, llama, minilm   the transports: leaves
    cache         the persistent cache and its wrappers
    factory       configs -> clients;   resolve   what the user gave -> configs

The package is lazy (PEP 562): ``import unified.judge`` imports neither ``openai`` nor
``numpy``; a name is imported from its module the first time it is used, so code that
only needs the contract (``unified.judge.base``) never pays for a client library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # the contract
    **dict.fromkeys(
        (
            "CallRecord",
            "ChatJudge",
            "Embedder",
            "JudgeCacheError",
            "JudgeConnectionError",
            "JudgeError",
            "JudgeHTTPError",
            "JudgeLengthError",
            "JudgeLoopError",
            "JudgeNotConfiguredError",
            "JudgeOutputError",
            "JudgeTimeoutError",
            "JudgeUnavailableError",
            "Judges",
            "TaskMeter",
            "add_listener",
            "current_meter",
            "metric_scope",
            "record_call",
            "remove_listener",
            "task_scope",
        ),
        "unified.judge.base",
    ),
    **dict.fromkeys(
        ("CachedChatJudge", "CachedEmbedder", "JudgeCache", "JudgeCacheWarning", "default_cache_path"),
        "unified.judge.cache",
    ),
    **dict.fromkeys(("EmbeddingConfig", "JudgeConfig", "RunConfig", "load_run_config"), "unified.judge.config"),
    **dict.fromkeys(("build_judges", "make_chat_judge", "make_embedder"), "unified.judge.factory"),
    **dict.fromkeys(("JudgeSetupError", "resolve_judges"), "unified.judge.resolve"),
    **dict.fromkeys(("PriceError", "parse_prices", "price_scope", "usd_cost"), "unified.judge.prices"),
    "CircuitBreaker": "unified.judge.breaker",
    "OpenAIChatJudge": "unified.judge.openai_client",
    "OpenAIEmbedder": "unified.judge.embeddings",
    "LlamaCppJudge": "unified.judge.llama",  # optional extra `local-llm`
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:  # PEP 562
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'unified.judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from unified.judge.base import (
        CallRecord,
        ChatJudge,
        Embedder,
        JudgeCacheError,
        JudgeConnectionError,
        JudgeError,
        JudgeHTTPError,
        JudgeLengthError,
        JudgeLoopError,
        JudgeNotConfiguredError,
        JudgeOutputError,
        Judges,
        JudgeTimeoutError,
        JudgeUnavailableError,
        TaskMeter,
        add_listener,
        current_meter,
        metric_scope,
        record_call,
        remove_listener,
        task_scope,
    )
    from unified.judge.breaker import CircuitBreaker
    from unified.judge.cache import CachedChatJudge, CachedEmbedder, JudgeCache, JudgeCacheWarning, default_cache_path
    from unified.judge.config import EmbeddingConfig, JudgeConfig, RunConfig, load_run_config
    from unified.judge.embeddings import OpenAIEmbedder
    from unified.judge.factory import build_judges, make_chat_judge, make_embedder
    from unified.judge.llama import LlamaCppJudge
    from unified.judge.openai_client import OpenAIChatJudge
    from unified.judge.prices import PriceError, parse_prices, price_scope, usd_cost
    from unified.judge.resolve import JudgeSetupError, resolve_judges
