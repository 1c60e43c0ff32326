"""The samples of a RAG pipeline: call its retriever and generator on every question.

The job of RAGEvaluationPipeline / ``App.evaluate()`` in other tools: you hand over two
callables instead of a file of answers.

- ``retrieve(question)`` -> ranked hits; a hit is an ``(id, text)`` pair, an object with
  ``.id`` and ``.text`` attributes (LangChain-style ``.page_content`` and
  ``.metadata["id"]`` also work), or a dict with ``id``/``text`` keys. Sync or async.
- ``generate(question, contexts)`` -> the answer string (``contexts``: the retrieved
  texts, in rank order). Sync or async.

Each question is retrieved then generated as one chain; retrievers and generators run
concurrently under their own limits (``retrieve_concurrency``, ``generate_concurrency``),
so a slow generator does not hold retriever slots. Sync callables run in worker threads.
A question whose retriever or generator raises becomes a ``RowError`` (the one row-error
class; ``field`` is ``retrieve`` or ``generate``, ``row`` the 1-based question number,
``sample_id`` the question's id): every requested metric gets an error Score for it
(``value=None``, the exception in ``error``), filed under that id, and the other
questions complete. ``unified.api.evaluate_pipeline`` then scores the samples.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Sequence

from unified.data.rowerror import RowError
from unified.sample import Sample

__all__ = ["build_samples"]


def _hit(h: Any, rank: int) -> tuple[str, str]:
    """(id, text) of one retrieved hit, whatever shape the retriever returned."""
    if isinstance(h, (tuple, list)) and len(h) == 2:
        return str(h[0]), str(h[1])
    if isinstance(h, dict):
        text = h.get("text", h.get("page_content", h.get("content")))
        if text is None:
            raise TypeError(f"hit {rank}: a dict hit needs a 'text' key, got keys {sorted(h)}")
        return str(h.get("id", rank)), str(text)
    if hasattr(h, "text") or hasattr(h, "page_content"):
        text = getattr(h, "text", None)
        if text is None:
            text = h.page_content
        hid = getattr(h, "id", None)
        if hid is None:
            hid = (getattr(h, "metadata", None) or {}).get("id", rank)
        return str(hid), str(text)
    if isinstance(h, str):
        return str(rank), h
    raise TypeError(f"hit {rank}: expected (id, text), an object with .id/.text or a dict, got {type(h).__name__}")


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):
        return await fn(*args)
    out = await asyncio.to_thread(fn, *args)
    # a sync wrapper that returns an awaitable (functools.partial of an async def)
    return await out if inspect.isawaitable(out) else out


def _short(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip().splitlines()[0][:300]


async def build_samples(
    questions: Sequence[str],
    retrieve: Callable[..., Any],
    generate: Callable[..., Any] | None,
    *,
    references: Sequence[str | None] | None = None,
    relevant_ids: Sequence[Sequence[str] | None] | None = None,
    ids: Sequence[str] | None = None,
    retrieve_concurrency: int = 8,
    generate_concurrency: int = 4,
) -> list[Sample | RowError]:
    """Run the pipeline on every question; one Sample (or RowError) per question, in
    question order. Sample ids: ``ids[i]`` when given, else ``q<i+1>``."""
    n = len(questions)
    for name, seq in (("references", references), ("relevant_ids", relevant_ids), ("ids", ids)):
        if seq is not None and len(seq) != n:
            raise ValueError(f"{name} has {len(seq)} items but there are {n} questions")
    r_sem = asyncio.Semaphore(max(1, retrieve_concurrency))
    g_sem = asyncio.Semaphore(max(1, generate_concurrency))

    async def one(i: int) -> Sample | RowError:
        q = questions[i]
        sid = str(ids[i]) if ids is not None else f"q{i + 1}"
        if q is None or (isinstance(q, str) and not q.strip()):
            # a stored sample may lack a question; a pipeline's question is what it retrieves for
            return RowError("pipeline", i + 1, "user_input", "user_input is empty; the pipeline retrieves for it", sid)
        try:
            async with r_sem:
                hits = await _call(retrieve, q)
            pairs = [_hit(h, k) for k, h in enumerate(list(hits or []), start=1)]
        except Exception as e:  # the user's retriever: report, do not stop the others
            return RowError("pipeline", i + 1, "retrieve", _short(e), sid)
        texts = [t for _, t in pairs]
        response = None
        if generate is not None:
            try:
                async with g_sem:
                    response = await _call(generate, q, texts)
            except Exception as e:
                return RowError("pipeline", i + 1, "generate", _short(e), sid)
            if not isinstance(response, str):
                return RowError(
                    "pipeline", i + 1, "generate", f"expected a string answer, got {type(response).__name__}", sid
                )
        try:
            # model_validate (not Sample(...)) raises a one-line SampleError, not pydantic's
            # multi-line ValidationError
            return Sample.model_validate(
                dict(
                    id=sid,
                    user_input=q,
                    response=response,
                    retrieved_contexts=texts,
                    retrieved_ids=[h for h, _ in pairs],
                    reference=references[i] if references is not None else None,
                    relevant_ids=_listed(relevant_ids[i] if relevant_ids is not None else None),
                )
            )
        except ValueError as e:  # SampleError (an empty question) is a ValueError
            return RowError(
                "pipeline", i + 1, getattr(e, "field", None) or "user_input", getattr(e, "reason", None) or str(e), sid
            )

    return list(await asyncio.gather(*(one(i) for i in range(n))))


def _listed(ids: Sequence[str] | None) -> list[str] | None:
    """A row's relevant ids as a list, None when the row gives none."""
    return None if ids is None else list(ids)
