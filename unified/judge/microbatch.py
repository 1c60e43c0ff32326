"""Merge concurrent encode requests into one batched call: the local model's micro-batcher.

The runner scores several samples at once (``--concurrency``, 16 by default), and each
metric of each sample asks the local embedding model for a few sentences. One forward
pass of MiniLM has a fixed cost (the module tree, tokenising, ~15 ms of CPU on a shared
2-core machine) on top of ~7 ms per short sentence, so three passes of two or three
sentences per sample spent most of their time on the fixed part. ``MicroBatcher`` lets
requests that arrive while the model is busy wait, then encodes all of them in one call:

    request r_i = (texts_i, future_i)        queued in arrival order
    batch       = r_1 … r_k, every request waiting when a worker frees (k ≥ 1), at most
                  ``max_texts`` texts unless one request alone is larger
    call        = fn(distinct texts of the batch, in first-seen order)
    result_i    = [call's output for t for t in texts_i]   (each request's own order)

No timer: a request that finds a free worker starts at once (no added latency when the
machine is idle), and the batches grow only when requests queue up behind busy workers.
At most ``workers`` calls run at once, each in a thread (``asyncio.to_thread``).

A failed batch call does not fail the batch: each of its requests is retried alone, so
only the request whose texts make ``fn`` fail gets the error, and every other request
gets its own result.

Batching must not change a score: MiniLM masks the padding out, so a text's vectors do
not depend on what shares its batch beyond float noise (the batch's shape picks the
matrix kernel's summation order: |Δ| < 1e-7 per component, checked by
``tests/test_microbatch.py``); ``benchmarks/offline_equivalence.py`` compares every score
of the bundled examples and ARES with the version before batching.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")

_Request = tuple[list[str], "asyncio.Future[list[T]]"]


class MicroBatcher(Generic[T]):
    """Runs ``fn(texts) -> one result per text`` for concurrent requests in merged calls
    (see the module docstring). Bound to the event loop of its first request; a later
    request on another loop (a new ``asyncio.run``) starts a fresh queue."""

    def __init__(self, fn: Callable[[list[str]], Sequence[T]], workers: int = 1, max_texts: int = 256):
        self.fn, self.workers, self.max_texts = fn, max(1, workers), max(1, max_texts)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: deque[_Request[T]] = deque()
        self._busy = 0
        #: how many calls of ``fn`` were made and how many requests they served (tests, diagnostics)
        self.calls = 0
        self.requests = 0

    async def run(self, texts: Sequence[str]) -> list[T]:
        """``fn``'s result for each of ``texts``, in order (an empty list for no texts)."""
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._queue, self._busy = loop, deque(), 0
        future: asyncio.Future[list[T]] = loop.create_future()
        self._queue.append((list(texts), future))
        if self._busy < self.workers:
            self._busy += 1
            loop.create_task(self._drain())
        return await future

    def _take(self) -> list[_Request[T]]:
        """The waiting requests, oldest first, up to ``max_texts`` texts (at least one)."""
        batch = [self._queue.popleft()]
        size = len(batch[0][0])
        while self._queue and size + len(self._queue[0][0]) <= self.max_texts:
            size += len(self._queue[0][0])
            batch.append(self._queue.popleft())
        return batch

    async def _drain(self) -> None:
        """One worker: serve batches until the queue is empty."""
        try:
            await asyncio.sleep(0)  # let requests made in the same loop turn join this batch
            while self._queue:
                await self._serve(self._take())
        finally:
            self._busy -= 1

    async def _serve(self, batch: list[_Request[T]]) -> None:
        """Answer every request of ``batch`` from one call; on failure, call once per
        request so that only the failing request's future gets the exception."""
        live = [(texts, fut) for texts, fut in batch if not fut.done()]  # a cancelled caller needs nothing
        if not live:
            return
        distinct = list(dict.fromkeys(t for texts, _ in live for t in texts))
        try:
            out = await self._call(distinct, len(live))
        except Exception as e:
            if len(live) == 1:
                if not live[0][1].done():
                    live[0][1].set_exception(e)
                return
            for request in live:
                await self._serve([request])
            return
        by_text = dict(zip(distinct, out))
        for texts, fut in live:
            if not fut.done():
                fut.set_result([by_text[t] for t in texts])

    async def _call(self, texts: list[str], requests: int) -> Sequence[T]:
        self.calls += 1
        self.requests += requests
        out = await asyncio.to_thread(self.fn, texts)
        if len(out) != len(texts):
            raise ValueError(f"{len(out)} result(s) for {len(texts)} text(s)")
        return out
