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
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, TypeVar

from unified.adapters._quiet import quiet_frameworks, redirect_ragas_user_dir

quiet_frameworks()  # before ragas is imported: its switches are read once

import ragas  # noqa: E402
import ragas.metrics.collections as ragas_collections  # noqa: E402
from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

redirect_ragas_user_dir()

from pydantic import BaseModel  # noqa: E402

from unified.adapters._framework import FrameworkBackend, one_line, run_blocking  # noqa: E402
from unified.judge.base import Judges, task_scope  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402
from unified.scores import Score  # noqa: E402

BACKEND = "ragas"
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
        try:
            answer = await self.judges.require_chat().ask([{"role": "user", "content": prompt}], response_model)
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


# ---------------------------------------------------------------- the mapping table


def _fields(*names: str) -> Callable[[Sample], dict[str, Any]]:
    """ascore keyword arguments named exactly like Sample fields (ragas's modern names)."""
    return lambda s: {n: getattr(s, n) for n in names}


@dataclass(frozen=True)
class RagasMetric:
    """How one canonical metric runs on ragas.

    ``cls``: class name in ``ragas.metrics.collections``; ``fields``: Sample ->
    ``ascore`` kwargs; ``raw_range``/``higher_is_better``: ragas's scale; ``uses``: which
    of "llm"/"embeddings" the constructor takes; ``init``: fixed constructor kwargs;
    ``sync_embed``: Sample fields whose text ragas embeds through the sync API.
    ``needs``: fields ragas cannot do without beyond the canonical metric's own
    (``Backend.needs_fields``). ``domain``: the values ragas can legitimately return when it is wider than
    ``raw_range`` (a cosine similarity is in [-1, 1]; below 0 it clips to 0, as every
    cosine does here); a value outside the domain is an error, never clipped.
    """

    cls: str
    fields: Callable[[Sample], dict[str, Any]]
    uses: tuple[str, ...] = ("llm",)
    raw_range: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    init: dict[str, Any] = field(default_factory=dict)
    sync_embed: Callable[[Sample], list[str]] | None = None
    domain: tuple[float, float] | None = None
    needs: tuple[str, ...] = ()


COSINE = (-1.0, 1.0)
Q, RESP, C, REF = "user_input", "response", "retrieved_contexts", "reference"

#: canonical metric -> ragas collections metric. The one table the backend obeys.
RAGAS_METRICS: dict[str, RagasMetric] = {
    # ragas 0.4.3's Faithfulness raises "user_input is missing" and puts the question into
    # its statement-generation prompt: a sample without one cannot run here
    "faithfulness": RagasMetric("Faithfulness", _fields(Q, RESP, C), needs=(Q,)),
    "answer_relevancy": RagasMetric("AnswerRelevancy", _fields(Q, RESP), uses=("llm", "embeddings"), domain=COSINE),
    "context_relevancy": RagasMetric("ContextRelevance", _fields(Q, C)),
    "context_recall": RagasMetric("ContextRecall", _fields(Q, C, REF)),
    "context_precision": RagasMetric("ContextPrecisionWithReference", _fields(Q, REF, C)),
    "answer_correctness": RagasMetric(
        "AnswerCorrectness", _fields(Q, RESP, REF), uses=("llm", "embeddings"), domain=COSINE
    ),  # F1 and a cosine, weighted
    "response_groundedness": RagasMetric("ResponseGroundedness", _fields(RESP, C)),
    # ragas embeds reference then response, with the sync API; empty text becomes " "
    "semantic_similarity": RagasMetric(
        "SemanticSimilarity",
        _fields(REF, RESP),
        uses=("embeddings",),
        sync_embed=lambda s: [s.reference or " ", s.response or " "],
        domain=COSINE,
    ),
    # further collections metrics whose inputs a Sample has
    "factual_correctness": RagasMetric("FactualCorrectness", _fields(RESP, REF)),
    "context_utilization": RagasMetric("ContextPrecisionWithoutReference", _fields(Q, RESP, C)),
    "context_entity_recall": RagasMetric("ContextEntityRecall", _fields(REF, C)),
    "answer_accuracy": RagasMetric("AnswerAccuracy", _fields(Q, RESP, REF)),
    # share of the response's claims that are wrong: lower is better, so it is inverted
    "noise_sensitivity": RagasMetric("NoiseSensitivity", _fields(Q, RESP, REF, C), higher_is_better=False),
}


class RagasBackend(FrameworkBackend):
    """Run canonical metrics with ragas 0.4 collections metrics over our judge.

    Options as ``FrameworkBackend`` (``concurrency``; ``run_dir``, where ragas's uuid file
    then goes). A metric's bracket parameters (``answer_relevancy[strictness=5]``) are passed to the
    ragas constructor.
    """

    name: ClassVar[str] = BACKEND
    metrics: ClassVar[frozenset[str]] = frozenset(RAGAS_METRICS)
    table = RAGAS_METRICS

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self.llm = JudgeRagasLLM(self.judges)
        self.embeddings = JudgeRagasEmbedding(self.judges)
        self._instances: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}

    def requirements(self, ref: MetricRef) -> frozenset[str]:
        """From the mapping table: "llm" -> chat, "embeddings" -> embedder
        (AnswerRelevancy and AnswerCorrectness need both)."""
        m = RAGAS_METRICS.get(ref.canonical)
        uses = m.uses if m is not None else ()
        return frozenset({"llm": "chat", "embeddings": "embedder"}[u] for u in uses)

    def fingerprint_extra(self) -> dict[str, Any]:
        return {"framework": "ragas", "version": ragas.__version__}

    def ragas_metric(self, canonical: str, params: tuple[tuple[str, Any], ...] = ()) -> Any:
        """The (shared, lazily built) ragas metric object for ``canonical``."""
        key = (canonical, params)
        if key not in self._instances:
            m = RAGAS_METRICS[canonical]
            kwargs: dict[str, Any] = dict(m.init)
            if "llm" in m.uses:
                kwargs["llm"] = self.llm
            if "embeddings" in m.uses:
                kwargs["embeddings"] = self.embeddings
            cls = getattr(ragas_collections, m.cls)
            # ragas constructors take **kwargs and drop unknown ones silently: check names
            accepted = [
                p
                for p in inspect.signature(cls.__init__).parameters
                if p not in ("self", "kwargs", "llm", "embeddings")
            ]
            for name, _ in params:
                if name not in accepted:
                    raise TypeError(f"unknown parameter '{name}' (accepted: {', '.join(accepted)})")
            kwargs.update(dict(params))
            self._instances[key] = cls(**kwargs)
        return self._instances[key]

    async def _score_one(self, sample: Sample, ref: MetricRef) -> Score:
        if (failed := self._precheck(sample, ref)) is not None:
            return failed
        spec, m = ref.spec, RAGAS_METRICS[ref.canonical]
        common: dict[str, Any] = dict(
            raw_range=m.raw_range, higher_is_better=m.higher_is_better, threshold=spec.threshold
        )
        details: dict[str, Any] = {"framework": "ragas", "ragas_version": ragas.__version__, "ragas_metric": m.cls}
        async with self._limit():
            with task_scope(BACKEND, ref.name, sample.id) as meter:
                errors: list[str] = []
                verdicts: list[dict[str, Any]] = []
                err_token = _last_judge_error.set(errors)
                answers_token = _answers.set(verdicts)
                primed_token = _primed.set({})
                try:
                    metric = self.ragas_metric(ref.canonical, ref.params)
                    if m.sync_embed is not None:
                        await self.embeddings.prime(m.sync_embed(sample))
                    result = await metric.ascore(**m.fields(sample))
                except Exception as e:  # ragas's own message is what the user needs
                    return Score.failure(
                        ref.name,
                        BACKEND,
                        sample.id,
                        one_line(f"ragas {m.cls}: {type(e).__name__}: {e}"),
                        details=details,
                        cost=meter.cost(),
                        **common,
                    )
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
                return self._to_score(
                    sample,
                    ref,
                    m.cls,
                    raw,
                    why,
                    details=details,
                    reason=getattr(result, "reason", None),
                    cost=meter.cost(),
                    domain=m.domain,
                    **common,
                )
