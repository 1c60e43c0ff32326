"""Every LLM and embedding call of every backend goes through here.

``build_judges`` turns configs into the ``Judges`` bundle a backend receives: chat judges
(OpenAI-compatible HTTP or an in-process ``.gguf``), an embedder (``local`` MiniLM or an
OpenAI-compatible endpoint), all wrapped in one persistent cache unless it is disabled.
"""

from __future__ import annotations

from pathlib import Path

from unified.judge.base import (CallRecord, ChatJudge, Embedder, JudgeConnectionError, JudgeError,
                                JudgeHTTPError, JudgeLengthError, JudgeNotConfiguredError,
                                JudgeOutputError, Judges, JudgeTimeoutError, TaskMeter,
                                add_listener, current_meter, record_call, remove_listener,
                                task_scope)
from unified.judge.cache import (CachedChatJudge, CachedEmbedder, JudgeCache,
                                 default_cache_path)
from unified.judge.config import EmbeddingConfig, JudgeConfig, RunConfig, load_run_config
from unified.judge.embeddings import OpenAIEmbedder
from unified.judge.estimate import estimate_calls, estimate_run
from unified.judge.openai_client import OpenAIChatJudge


def make_chat_judge(config: JudgeConfig) -> ChatJudge:
    """An HTTP judge, or an in-process llama-cpp-python judge for a ``.gguf`` model."""
    if config.is_gguf:
        from unified.judge.llama import LlamaCppJudge  # optional extra `local-llm`
        return LlamaCppJudge(config)
    return OpenAIChatJudge(config)


def make_embedder(config: EmbeddingConfig) -> Embedder:
    if config.kind == "local":
        from unified.judge.local import LocalEmbedder
        return LocalEmbedder(batch_size=config.batch_size)
    return OpenAIEmbedder(config)


def build_judges(judge: JudgeConfig | None = None, judge2: JudgeConfig | None = None,
                 embedding: EmbeddingConfig | str | None = None,
                 cache_path: str | Path | None = None, single_judge: bool = False,
                 cache: bool | JudgeCache = True) -> Judges:
    """Build the bundle. ``embedding``: ``"local"``, a URL or an ``EmbeddingConfig``.

    Caching: on when ``cache`` is True and ``cache_path`` is given (the runner passes
    ``default_cache_path(out_dir)``), or when ``cache`` is a ``JudgeCache``; ``cache=False``
    (``--no-cache``) disables it. With ``cache=True`` and no path nothing is cached, so
    library callers never get a surprise file.
    """
    store: JudgeCache | None = None
    if isinstance(cache, JudgeCache):
        store = cache
    elif cache and cache_path is not None:
        store = JudgeCache(cache_path)

    def chat(cfg: JudgeConfig | None) -> ChatJudge | None:
        if cfg is None:
            return None
        j = make_chat_judge(cfg)
        return CachedChatJudge(j, store) if store is not None else j

    emb_cfg = EmbeddingConfig.parse(embedding) if isinstance(embedding, str) else embedding
    embedder: Embedder | None = None
    if emb_cfg is not None:
        embedder = make_embedder(emb_cfg)
        if store is not None:
            embedder = CachedEmbedder(embedder, store)
    return Judges(chat=chat(judge), chat2=chat(judge2), embedder=embedder,
                  single_judge=single_judge)


def __getattr__(name: str):
    # the llama-cpp-python judge imports lazily: it is an optional extra
    if name == "LlamaCppJudge":
        from unified.judge.llama import LlamaCppJudge
        return LlamaCppJudge
    raise AttributeError(f"module 'unified.judge' has no attribute {name!r}")


__all__ = [
    "CachedChatJudge", "CachedEmbedder", "CallRecord", "ChatJudge", "Embedder",
    "EmbeddingConfig", "JudgeCache", "JudgeConfig", "JudgeConnectionError", "JudgeError",
    "JudgeHTTPError", "JudgeLengthError", "JudgeNotConfiguredError", "JudgeOutputError",
    "JudgeTimeoutError", "Judges", "OpenAIChatJudge", "OpenAIEmbedder", "RunConfig",
    "TaskMeter", "add_listener", "build_judges", "current_meter", "default_cache_path",
    "estimate_calls", "estimate_run",
    "load_run_config", "make_chat_judge", "make_embedder", "record_call", "remove_listener",
    "task_scope",
]
