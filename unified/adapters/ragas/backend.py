"""The RAGAS backend: our Sample and judge inside ragas 0.4's collections metrics.

ragas does the scoring, unchanged; this module only translates:

- ``Sample`` -> the keyword arguments of ``await metric.ascore(**fields)``
  (``ragas.metrics.collections``; the old ``ragas.metrics`` + ``evaluate()`` stack is
  deprecated and is not used);
- our judge -> ragas's own extension points: ``JudgeRagasLLM`` (a subclass of ragas's
  instructor-style ``InstructorBaseRagasLLM``) and ``JudgeRagasEmbedding`` (a subclass of
  ``BaseRagasEmbedding``). Every prompt ragas sends therefore goes through
  ``unified.judge``: cached, retried, rate-limited and counted like a native call;
- ragas's number -> ``Score``: ``value = 10 · (raw − lo)/(hi − lo)`` on the raw range of
  ``RAGAS_METRICS`` (inverted for the one lower-is-better metric, noise_sensitivity).
  ragas's NaN or exception becomes ``value=None`` with ``error="ragas <Class>: <what
  ragas said>"``.

ragas collections metrics keep no per-call state on ``self`` (only the llm, embeddings
and prompt objects set in ``__init__``), so one instance per (metric, parameters) is
built lazily and shared by all samples of a backend.
"""

from __future__ import annotations

import contextvars
import inspect
import math
from typing import Any, TypeVar

from unified.adapters.ragas.quiet import quiet_ragas

quiet_ragas()  # before ragas is imported: its switches are read once; its uuid file redirected

import ragas  # noqa: E402
import ragas.metrics.collections as ragas_collections  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

from unified.adapters.framework import FrameworkBackend, Outcome, run_blocking, strict_answer_model  # noqa: E402
from unified.adapters.ragas import FACTS, RagasMetric  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402

T = TypeVar("T", bound=BaseModel)

# the last judge error raised inside one task: nv-style ragas metrics (ContextRelevance,
# ResponseGroundedness, AnswerAccuracy) swallow exceptions and return NaN, and a bare
# "NaN" would not tell the user that the judge was unreachable
_last_judge_error: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "ragas_last_judge_error", default=None
)
# vectors fetched ahead for metrics that call the *sync* embed_text (SemanticSimilarity)
_primed: contextvars.ContextVar[dict[str, list[list[float]]] | None] = contextvars.ContextVar(
    "ragas_primed_vectors", default=None
)


# the structured answers the judge gave inside one metric evaluation: ragas returns no
# reason text, so these verdicts are what a reader can check the number against
_answers: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar(
    "ragas_judge_answers", default=None
)
MAX_VERDICTS = 50


def _note_answer(answer: BaseModel) -> None:
    """Keep a judge answer for the Score's ``details["verdicts"]``: the items of its one
    list of objects (statements with verdicts, classifications) when it has one, else the
    answer itself (a rating)."""
    box = _answers.get()
    if box is None or len(box) >= MAX_VERDICTS:
        return
    data = answer.model_dump(mode="json")
    lists = [v for v in data.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
    items = lists[0] if len(lists) == 1 else [data]
    box.extend(items[: MAX_VERDICTS - len(box)])


def _note_error(e: BaseException) -> None:
    box = _last_judge_error.get()
    if box is not None:
        box.append(f"{type(e).__name__}: {e}")


class JudgeRagasLLM(InstructorBaseRagasLLM):
    """ragas's structured-output LLM interface answered by our ``ChatJudge``.

    ``agenerate(prompt, response_model)`` sends the prompt ragas built as one user
    message and returns the validated ``response_model`` instance (ragas's instructor
    clients return exactly that). ``is_async`` tells ragas to use the async path.
    """

    is_async = True

    def __init__(self, judges: Judges):
        self.judges = judges
        self.model = getattr(judges.chat, "model", "") or "unified-judge"
        self.provider = "unified"

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        """The judge's answer to ``prompt`` as ``response_model``, its integer verdicts held
        to the values ragas's prompts allow (``FACTS.verdicts``)."""
        strict = strict_answer_model(response_model, FACTS.verdicts)
        try:
            answer = await self.judges.require_chat().ask([{"role": "user", "content": prompt}], strict)
        except Exception as e:
            _note_error(e)
            raise
        _note_answer(answer)
        return answer

    def generate(self, prompt: str, response_model: type[T]) -> T:
        return run_blocking(lambda: self.agenerate(prompt, response_model))


class JudgeRagasEmbedding(BaseRagasEmbedding):
    """ragas's modern embedding interface answered by our ``Embedder``.

    ``aembed_text`` sends one text per ``Embedder.embed`` call and ``aembed_texts`` one
    batch, exactly as ragas asks, so a direct ragas call with this object and the backend
    send identical requests (the judge cache keys on the request).
    """

    def __init__(self, judges: Judges):
        super().__init__(cache=None)
        self.judges = judges

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        try:
            return (await self.judges.require_embedder().embed([text]))[0]
        except Exception as e:
            _note_error(e)
            raise

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        # one batched request instead of ragas's default of one request per text
        try:
            return await self.judges.require_embedder().embed(list(texts))
        except Exception as e:
            _note_error(e)
            raise

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        primed = _primed.get()
        if primed and primed.get(text):
            return primed[text].pop(0)
        return run_blocking(lambda: self.aembed_text(text))

    async def prime(self, texts: list[str]) -> None:
        """Embed ``texts`` now (in order, one call each) for the sync ``embed_text`` calls
        that follow in this task, so they need no thread hop."""
        store = _primed.get()
        if store is None:
            raise RuntimeError("prime() outside a ragas backend task")
        for t in texts:
            store.setdefault(t, []).append(await self.aembed_text(t))


class RagasBackend(FrameworkBackend):
    """Run canonical metrics with ragas 0.4 collections metrics over our judge.

    Options as ``FrameworkBackend`` (``concurrency``; ``run_dir``, where ragas's uuid file
    then goes). A metric's bracket parameters (``answer_relevancy[strictness=5]``) are
    passed to the ragas constructor.
    """

    FACTS = FACTS

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        if options.get("run_dir"):
            quiet_ragas()  # the uuid file follows the run folder
        self.llm = JudgeRagasLLM(self.judges)
        self.embeddings = JudgeRagasEmbedding(self.judges)
        self._instances: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}

    def version(self) -> str:
        return str(ragas.__version__)

    def requirements(self, ref: MetricRef) -> frozenset[str]:
        """From the mapping table: "llm" -> chat, "embeddings" -> embedder
        (AnswerRelevancy and AnswerCorrectness need both)."""
        m = FACTS.table.get(ref.canonical)
        uses = getattr(m, "uses", ())
        return frozenset({"llm": "chat", "embeddings": "embedder"}[u] for u in uses)

    def framework_params(self, row: Any) -> set[str]:
        """The ragas constructor's own keywords (it takes ``**kwargs`` and drops unknown
        ones silently, so a typo would run with the default): all but the models."""
        cls = getattr(ragas_collections, row.cls)
        return {
            p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "kwargs", "llm", "embeddings")
        }

    def ragas_metric(self, canonical: str, params: tuple[tuple[str, Any], ...] = ()) -> Any:
        """The (shared, lazily built) ragas metric object for ``canonical`` with the
        framework's bracket parameters ``params``."""
        key = (canonical, params)
        if key not in self._instances:
            m: RagasMetric = FACTS.metrics[canonical]  # type: ignore[index,assignment]
            kwargs: dict[str, Any] = dict(m.init)
            if "llm" in m.uses:
                kwargs["llm"] = self.llm
            if "embeddings" in m.uses:
                kwargs["embeddings"] = self.embeddings
            kwargs.update(dict(params))
            self._instances[key] = getattr(ragas_collections, m.cls)(**kwargs)
        return self._instances[key]

    async def evaluate(self, sample: Sample, ref: MetricRef, row: RagasMetric, details: dict[str, Any]) -> Outcome:
        """``await metric.ascore(**fields)``, with the judge's structured answers kept as
        ``details["verdicts"]`` and a judge error the metric swallowed (NaN) said."""
        errors: list[str] = []
        verdicts: list[dict[str, Any]] = []
        err_token = _last_judge_error.set(errors)
        answers_token = _answers.set(verdicts)
        primed_token = _primed.set({})
        try:
            metric = self.ragas_metric(ref.canonical, self.passed_params(ref))
            if row.sync_embed is not None:
                await self.embeddings.prime(row.sync_embed(sample))
            result = await metric.ascore(**row.fields(sample))
        finally:
            _primed.reset(primed_token)
            _answers.reset(answers_token)
            _last_judge_error.reset(err_token)
        if verdicts:
            details["verdicts"] = verdicts
        raw = result.value
        why = f"returned {raw!r}"
        if errors:  # the metric swallowed a judge failure on the way
            why += f" after a judge error: {errors[-1]}"
        elif isinstance(raw, float) and math.isnan(raw):
            why += " (no usable judge verdicts, e.g. no statements or ratings)"
        return Outcome(raw, why, reason=getattr(result, "reason", None), domain=row.domain)
