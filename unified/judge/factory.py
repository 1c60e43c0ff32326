"""Configs -> clients: the one place that picks a transport for a config and wraps it in
the cache. ``resolve_judges`` (``unified.judge.resolve``) decides *which* configs; this
module only builds them. Transports are imported when a config needs them, so building
a bundle without an HTTP judge never imports ``openai``.
"""

from __future__ import annotations

from pathlib import Path

from unified.judge.base import ChatJudge, Embedder, Judges
from unified.judge.cache import CachedChatJudge, CachedEmbedder, JudgeCache
from unified.judge.config import EmbeddingConfig, JudgeConfig


def make_chat_judge(config: JudgeConfig) -> ChatJudge:
    """An HTTP judge, or an in-process llama-cpp-python judge for a ``.gguf`` model."""
    if config.is_gguf:
        from unified.judge.llama import LlamaCppJudge  # optional extra `local-llm`

        return LlamaCppJudge(config)
    from unified.judge.openai_client import OpenAIChatJudge

    return OpenAIChatJudge(config)


def make_embedder(config: EmbeddingConfig) -> Embedder:
    """The packaged local model, or an OpenAI-compatible embeddings endpoint."""
    if config.kind == "local":
        from unified.judge.minilm import LocalEmbedder

        return LocalEmbedder(batch_size=config.batch_size)
    from unified.judge.embeddings import OpenAIEmbedder

    return OpenAIEmbedder(config)


def assemble(
    judge: JudgeConfig | None,
    judge2: JudgeConfig | None,
    embedding: EmbeddingConfig | None,
    store: JudgeCache | None,
    single_judge: bool = False,
) -> Judges:
    """The bundle from resolved configs, every client behind ``store`` when given."""

    def chat(cfg: JudgeConfig | None) -> ChatJudge | None:
        if cfg is None:
            return None
        j = make_chat_judge(cfg)
        return CachedChatJudge(j, store) if store is not None else j

    embedder: Embedder | None = None
    if embedding is not None:
        embedder = make_embedder(embedding)
        if store is not None:
            embedder = CachedEmbedder(embedder, store)
    return Judges(chat=chat(judge), chat2=chat(judge2), embedder=embedder, single_judge=single_judge)


def build_judges(
    judge: JudgeConfig | None = None,
    judge2: JudgeConfig | None = None,
    embedding: EmbeddingConfig | str | None = None,
    cache_path: str | Path | None = None,
    single_judge: bool = False,
    cache: bool | JudgeCache = True,
) -> Judges:
    """Build the bundle from configs as given. ``embedding``: ``"local"``, a URL or an
    ``EmbeddingConfig``.

    Caching here is explicit: on when ``cache`` is True and ``cache_path`` is given, or
    when ``cache`` is a ``JudgeCache``; off otherwise. ``resolve_judges`` is the entry
    point that applies the environment, config files and the shared default cache.
    """
    store: JudgeCache | None = None
    if isinstance(cache, JudgeCache):
        store = cache
    elif cache and cache_path is not None:
        store = JudgeCache(cache_path)
    emb_cfg = EmbeddingConfig.parse(embedding) if isinstance(embedding, str) else embedding
    return assemble(judge, judge2, emb_cfg, store, single_judge)


__all__ = ["assemble", "build_judges", "make_chat_judge", "make_embedder"]
