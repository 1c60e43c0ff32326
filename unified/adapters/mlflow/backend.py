"""The MLflow backend: our Sample and judge inside MLflow 3's built-in GenAI judges.

MLflow does the judging, unchanged; this module only translates:

- ``Sample`` -> what the scorers read: an MLflow ``Trace`` (``Trace.from_dict``, built in
  memory, never logged) whose root span has inputs ``{"question": user_input}`` and
  outputs ``response`` and whose one RETRIEVER span returns the retrieved contexts as
  documents; ``expectations={"expected_response": reference}`` for Correctness and
  RetrievalSufficiency. Every scorer is called as MLflow documents it:
  ``Scorer(model=...)(trace=..., expectations=...)``;
- our judge -> MLflow's judges take a model *URI*, never an object. We give them
  ``gateway:/unified-judge``, MLflow's AI-gateway provider, and point
  ``MLFLOW_GATEWAY_URI`` at our loopback bridge (``unified.judge.bridge``) while this
  backend is in use. Each evaluation opens a bridge route whose random id travels in the
  scorer's ``extra_headers``; the bridge runs every request through our ``ChatJudge`` in
  the task's accounting scope. No provider key is read and no cloud endpoint is reached;
  the judge the user chose answers;
- MLflow's ``Feedback`` -> ``Score``: "yes" -> raw 1, "no" -> raw 0 (RetrievalRelevance:
  the share of "yes" chunks), ``value = 10 · raw``, the feedback's ``rationale`` is the
  Score's reason, its label is kept in ``details["label"]``. Any other label is refused;
  an exception or a Feedback with an error is the task's error, one line, scrubbed.

Nothing is logged to a tracking server: the trace is an in-memory object and MLflow's
telemetry is off (the room's ``quiet_env``); no ``mlflow.db`` or ``mlruns`` appears.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import functools
import hashlib
import json
import os
import threading
from typing import Any

from unified.adapters.quiet import quiet_frameworks

quiet_frameworks()  # before mlflow is imported: telemetry off

import mlflow  # noqa: E402
import mlflow.genai.scorers as mlflow_scorers  # noqa: E402
from mlflow.entities import SpanType, Trace  # noqa: E402
from mlflow.tracing.constant import SpanAttributeKey  # noqa: E402

from unified.adapters.framework import FrameworkBackend, Outcome  # noqa: E402
from unified.adapters.mlflow import FACTS, MLFLOW_JUDGES, MlflowJudge  # noqa: E402
from unified.judge import bridge  # noqa: E402
from unified.judge.base import Judges  # noqa: E402
from unified.metrics import MetricRef  # noqa: E402
from unified.sample import Sample  # noqa: E402

#: the model URI every scorer gets: MLflow's gateway provider, answered by the bridge
MODEL_URI = "gateway:/unified-judge"
_LABELS = {"yes": 1.0, "no": 0.0}
#: the scorer settings a metric's bracket parameters may set (the others name the
#: feedback, choose the model or reshape the result, which this backend reads)
SCORER_PARAMS = frozenset({"inference_params", "timeout"})
#: verdicts that say nothing, which MLflow's scorers read as "no" (``_NEGATIVE_VALUES``):
#: a chunk the judge did not rate would lower the precision without a word
NON_ANSWERS = frozenset({"", "none", "null", "nil", "n/a", "na", "unknown"})


# ---------------------------------------------------------------- Sample -> Trace


def _b64(n: int, size: int) -> str:
    return base64.b64encode(n.to_bytes(size, "big")).decode()


def _span(
    trace_int: int,
    span_id: int,
    parent: int | None,
    name: str,
    span_type: str,
    inputs: Any,
    outputs: Any,
    trace_id: str,
) -> dict[str, Any]:
    attrs = {
        SpanAttributeKey.REQUEST_ID: json.dumps(trace_id),
        SpanAttributeKey.SPAN_TYPE: json.dumps(span_type),
        SpanAttributeKey.INPUTS: json.dumps(inputs),
        SpanAttributeKey.OUTPUTS: json.dumps(outputs),
    }
    return {
        "trace_id": _b64(trace_int, 16),
        "span_id": _b64(span_id, 8),
        "parent_span_id": _b64(parent, 8) if parent else None,
        "name": name,
        "start_time_unix_nano": 1,
        "end_time_unix_nano": 2,
        "events": [],
        "status": {"code": "STATUS_CODE_OK", "message": ""},
        "attributes": attrs,
    }


def sample_trace(sample: Sample) -> Trace:
    """An in-memory MLflow trace of one RAG call: root span (CHAIN) with inputs
    ``{"question": user_input}`` and outputs ``response``; one child RETRIEVER span
    whose outputs are the retrieved contexts as ``{"page_content": text}`` documents.
    The trace id derives from the sample id (the prompts never contain it)."""
    trace_int = int.from_bytes(hashlib.sha256(sample.id.encode()).digest()[:16], "big") or 1
    trace_id = f"tr-{trace_int:032x}"
    docs = [{"page_content": c, "metadata": {}} for c in sample.retrieved_contexts or []]
    spans = [
        _span(trace_int, 1, None, "rag", SpanType.CHAIN, {"question": sample.user_input}, sample.response, trace_id),
        _span(trace_int, 2, 1, "retrieve", SpanType.RETRIEVER, {"query": sample.user_input}, docs, trace_id),
    ]
    info = {
        "trace_id": trace_id,
        "request_time": "1970-01-01T00:00:00Z",
        "state": "OK",
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "0"}},
    }
    return Trace.from_dict({"info": info, "data": {"spans": spans}})


def scorer_kwargs(m: MlflowJudge, sample: Sample) -> dict[str, Any]:
    """The keyword arguments of the scorer call for ``sample``."""
    kw: dict[str, Any] = {"trace": sample_trace(sample)}
    if m.expectations:
        kw["expectations"] = {"expected_response": sample.reference}
    return kw


# ---------------------------------------------------------------- Feedback -> raw


def pick_feedback(m: MlflowJudge, result: Any) -> Any:
    """The Feedback that carries the metric's value (scorers return one or a list)."""
    items = result if isinstance(result, list) else [result]
    named = [f for f in items if getattr(f, "name", None) == m.feedback]
    return (named or items)[0] if items else None


def label_of(feedback: Any) -> str | None:
    """A Feedback's label as text ("yes", "no", "unknown", ...), None for a number."""
    value = getattr(feedback, "value", None)
    value = getattr(value, "value", value)  # MLflow's CategoricalRating enum
    if isinstance(value, bool):
        return str(value).lower()
    return value.strip().lower() if isinstance(value, str) else None


def raw_of(feedback: Any) -> tuple[float | None, str | None]:
    """(raw value, label): "yes" -> 1.0, "no" -> 0.0, a number as is; any other label
    -> (None, label) so the Score says what MLflow returned."""
    label = label_of(feedback)
    if label is not None:
        return _LABELS.get(label), label
    value = getattr(feedback, "value", None)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), None
    return None, None


def chunk_problem(result: Any, m: MlflowJudge) -> str | None:
    """Why a per-chunk result cannot be trusted: MLflow counts every label that is not
    "yes" as not relevant, so an unparsed verdict ("unknown") would silently lower the
    precision. None when every chunk is labelled yes or no."""
    chunks = [f for f in (result if isinstance(result, list) else []) if getattr(f, "name", None) != m.feedback]
    for i, f in enumerate(chunks):
        if getattr(f, "error", None) is not None or label_of(f) not in _LABELS:
            return f"chunk {i} was labelled {label_of(f)!r}, not yes/no; no score"
    return None


def non_answer(answers: tuple[str, ...] | list[str]) -> str | None:
    """Why the judge's own answers (as the bridge sent them back, before MLflow maps a
    verdict) cannot be trusted: one whose ``result`` is a non-answer ("null", "none", an
    empty string), which MLflow turns into "no". None when every verdict said something."""
    for text in answers:
        try:
            result = json.loads(text).get("result")
        except (ValueError, AttributeError):
            continue  # free text: MLflow parses it, and refuses what it cannot read
        if isinstance(result, str) and result.strip().lower() in NON_ANSWERS:
            return f"the judge answered {result!r}, which MLflow reads as 'no'; no score"
    return None


def chunk_reason(result: Any, m: MlflowJudge) -> str | None:
    """The per-chunk labels and rationales as one reason text."""
    chunks = [f for f in (result if isinstance(result, list) else []) if getattr(f, "name", None) != m.feedback]
    parts = [
        f"chunk {i}: {label_of(f)} — {getattr(f, 'rationale', None) or ''}".rstrip(" —") for i, f in enumerate(chunks)
    ]
    return "\n".join(parts) or None


# ---------------------------------------------------------------- gateway env

_env_lock = threading.Lock()
_env_users = 0
_env_saved: str | None = None


def _point_gateway_at(url: str) -> None:
    """Set ``MLFLOW_GATEWAY_URI`` to the bridge for as long as a backend uses it (the
    user's own value comes back when the last one closes)."""
    global _env_users, _env_saved
    with _env_lock:
        if _env_users == 0:
            _env_saved = os.environ.get("MLFLOW_GATEWAY_URI")
        _env_users += 1
        os.environ["MLFLOW_GATEWAY_URI"] = url


def _restore_gateway() -> None:
    global _env_users
    with _env_lock:
        _env_users = max(0, _env_users - 1)
        if _env_users == 0:
            if _env_saved is None:
                os.environ.pop("MLFLOW_GATEWAY_URI", None)
            else:
                os.environ["MLFLOW_GATEWAY_URI"] = _env_saved


class MlflowBackend(FrameworkBackend):
    """Run canonical metrics with MLflow 3's built-in judges over our judge.

    Options as ``FrameworkBackend`` (``concurrency``: scorer calls at once, each in a
    worker thread since MLflow's judges are synchronous; ``run_dir``). A metric's bracket
    parameters (``context_relevancy[inference_params=...]``) are passed to the scorer.
    """

    FACTS = FACTS
    metric_key = "scorer"

    def __init__(self, judges: Judges | None = None, **options: Any):
        super().__init__(judges, **options)
        self._bridge: bridge.JudgeBridge | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def version(self) -> str:
        return str(mlflow.__version__)

    def _ensure_bridge(self) -> bridge.JudgeBridge:
        """The bridge, the gateway setting and the scorer threads, on first use."""
        if self._bridge is None:
            self._bridge = bridge.acquire()
            _point_gateway_at(self._bridge.base_url)
            # MLflow's judges block their thread until the bridge has answered, and the
            # judge layer behind the bridge needs the loop's default executor (the cache's
            # SQLite reads, an in-process llama.cpp model): scorers on that executor would
            # fill it and wait for work that can no longer start. They get threads of their own.
            self._pool = concurrent.futures.ThreadPoolExecutor(self._concurrency, thread_name_prefix="mlflow-judge")
        return self._bridge

    def framework_params(self, row: Any) -> set[str]:
        """The scorer's own settings that leave its verdict's shape alone
        (``SCORER_PARAMS``): MLflow's scorers take any keyword, so ``inference_parms=`` (a
        typo) ran with the defaults without a word."""
        return set(SCORER_PARAMS & set(getattr(getattr(mlflow_scorers, row.cls), "model_fields", {})))

    def new_scorer(self, canonical: str, headers: dict[str, str], params: tuple[tuple[str, Any], ...] = ()) -> Any:
        """A scorer object for ``canonical`` whose requests carry ``headers``."""
        cls = getattr(mlflow_scorers, MLFLOW_JUDGES[canonical].cls)
        return cls(**dict(params), model=MODEL_URI, extra_headers=headers)

    async def evaluate(self, sample: Sample, ref: MetricRef, row: MlflowJudge, details: dict[str, Any]) -> Outcome:
        """``Scorer(model=...)(trace=..., expectations=...)`` on a scorer thread, its
        requests answered through the bridge route of this task."""
        answers: list[str] = []
        with self._ensure_bridge().route(self.judges, answers) as headers:
            scorer = self.new_scorer(ref.canonical, headers, self.passed_params(ref))
            call = functools.partial(scorer, **scorer_kwargs(row, sample))
            result = await asyncio.get_running_loop().run_in_executor(self._pool, call)
        return feedback_outcome(row, result, details, answers)

    async def aclose(self) -> None:
        """Stop the scorer threads, give back the gateway setting and the bridge (a later
        ``score`` starts them again)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
        if self._bridge is not None:
            self._bridge = None
            _restore_gateway()
            bridge.release()


def feedback_outcome(
    m: MlflowJudge, result: Any, details: dict[str, Any], answers: tuple[str, ...] | list[str] = ()
) -> Outcome:
    """MLflow's Feedback(s) -> the task's Outcome: the label as a number (yes 1, no 0;
    RetrievalRelevance: the share of yes chunks), its rationale as the reason; an error
    Feedback, an unknown label, an unrated chunk or a non-answer of the judge's is no value."""
    feedback = pick_feedback(m, result)
    error = getattr(feedback, "error", None)
    if feedback is None or error is not None:
        return Outcome(None, getattr(error, "error_message", None) or str(error or "no feedback returned"))
    raw, label = raw_of(feedback)
    why = f"returned {label or getattr(feedback, 'value', None)!r}, not yes/no"
    reason = getattr(feedback, "rationale", None)
    if label is not None:
        details["label"] = label
    if m.per_context:
        details["labels"] = [label_of(f) for f in result if f is not feedback]
        reason = chunk_reason(result, m)
        if (problem := chunk_problem(result, m)) is not None:
            raw, why = None, problem
    if raw is not None and (problem := non_answer(answers)) is not None:
        raw, why = None, problem
    return Outcome(raw, why, reason=reason)
