"""Our metrics as MLflow 3 scorers: ``UnifiedScorer`` for ``mlflow.genai.evaluate``.

    import mlflow
    from unified.integrations.mlflow_scorer import UnifiedScorer

    result = mlflow.genai.evaluate(data=rows_or_traces, scorers=[UnifiedScorer("faithfulness")])
    result.metrics["unified_faithfulness/mean"]     # our mean / 10

A scorer receives what ``mlflow.genai.evaluate`` passes a scorer — ``inputs``,
``outputs``, ``expectations`` and the row's ``trace`` (MLflow builds one for static rows,
or takes the row's own: a ``mlflow.search_traces()`` DataFrame, a list of traces) — and
builds one ``Sample`` from it (``to_record``):

==================  ===========================================================================
Sample field        taken from (first that is there)
==================  ===========================================================================
user_input          ``inputs`` when a string; else its ``user_input``, ``question``, ``query``,
                    ``input``, ``request`` or ``prompt``; else the last chat message's content;
                    no ``inputs`` and a trace: the same of its root span's inputs
response            ``outputs`` when a string; else its ``response``, ``answer``, ``output``,
                    ``content``, ``text``; else chat-completion / messages shapes (MLflow's own
                    parser, ``parse_outputs_to_str``); no ``outputs`` and a trace: its root's
retrieved_contexts  a ``retrieved_contexts``/``contexts``/``context``/``documents`` entry of
                    ``inputs`` or ``outputs``; else the trace's top-level RETRIEVER spans, in
                    span order (MLflow's ``extract_retrieval_context_from_trace``: documents'
                    ``page_content`` and ``metadata.doc_uri``); a document is read by the
                    trace readers' rule (``unified.data.traces.values.document``), and one
                    without text is an ``IntegrationError`` naming the field and position
retrieved_ids       the documents' ``metadata.doc_uri`` (MLflow's name for a document, as in its
                    expectations), else their id by the trace readers' rule, when every
                    document has one
reference           ``expectations["expected_response"]``; else ``expected_facts`` joined by
                    newlines
relevant_ids        ``expectations["expected_retrieved_context"]``'s ``doc_uri``s
reference_contexts  its ``content``s
id                  the trace id (else the content hash)
==================  ===========================================================================

``metadata["provenance"]`` says where each field came from (``inputs.question``,
``trace span <span_id>``, ...).

The scoring is ``IntegrationScorer`` (``unified.integrations.scoring``): the same judge
config, cache and call counting as ``evaluate``. The scorer returns a ``Feedback``:
``value`` = our value / 10 (0–1), ``rationale`` = our reason (with several backends: the
jury's value, each backend's value and reason), ``metadata`` = strings (MLflow stores
string metadata): ``metric``, ``backend``, ``value_0_10``, ``threshold_0_10``,
``passed``, ``degraded``, ``judge_calls``, ``cache_hits``, ``sample_id`` and
``value.<backend>`` (0–1) for every backend. A row that cannot be scored raises
``IntegrationError``; MLflow records it as the Feedback's ``error``
(``SCORER_ERROR``) — never a 0.
"""

from __future__ import annotations

from typing import Any, Sequence

from unified.adapters.quiet import quiet_frameworks
from unified.data.traces.model import TraceProblem
from unified.data.traces.values import document, mlflow_document_id
from unified.platforms.mlflow_log import mlflow_key
from unified.redact import scrub

quiet_frameworks()  # before mlflow is imported: no telemetry

from mlflow.entities import AssessmentSource, AssessmentSourceType, Feedback  # noqa: E402
from mlflow.genai.scorers import Scorer  # noqa: E402
from mlflow.telemetry.client import set_telemetry_client  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from unified.integrations.scoring import IntegrationError, IntegrationScorer, Outcome  # noqa: E402

# mlflow imported before this module has started its telemetry client; with the switch now
# set, this drops it (MLflow's own re-initialisation), so no scorer call is reported
set_telemetry_client()

__all__ = ["IntegrationError", "UnifiedScorer", "to_record"]

_QUESTION_KEYS = ("user_input", "question", "query", "input", "request", "prompt")
_RESPONSE_KEYS = ("response", "answer", "output", "content", "text")
_CONTEXT_KEYS = ("retrieved_contexts", "contexts", "context", "documents")
_DOC_TEXT_KEYS = ("page_content", "content", "text")  # expected_retrieved_context


class UnifiedScorer(Scorer):
    """A unified-rag-eval metric as an MLflow scorer (module docstring).

    ``metric``: our metric name; ``backend``: ``"native"``, a list (a median jury) or
    ``"jury:METHOD"``; ``judge``/``judge2``/``embedding``/``single_judge``/``cache``/
    ``timeout``/``max_retries``/``prices``: as ``evaluate`` takes them (None: the
    environment, then the run file); ``allow_degraded``: accept a value from fewer judges
    or backends than asked. ``name``: ``unified_<metric>`` as a valid MLflow key (``precision@5`` ->
    ``unified_precision_at_5``) unless given."""

    name: str = ""
    metric: str
    backend: str | list[str] = "native"
    judge: Any = None
    judge2: Any = None
    embedding: Any = None
    single_judge: bool = False
    cache: Any = True
    max_retries: int | None = None
    prices: Any = None
    allow_degraded: bool = False
    _scorer: IntegrationScorer | None = PrivateAttr(default=None)

    def __init__(self, metric: str | None = None, **fields: Any):
        if metric is not None:
            fields["metric"] = metric
        super().__init__(**fields)

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        backend: str | Sequence[str] = self.backend
        # mlflow's `timeout` field bounds the whole scorer call; ours bounds each judge call
        self._scorer = IntegrationScorer(
            self.metric,
            backend,
            allow_degraded=self.allow_degraded,
            judge=self.judge,
            judge2=self.judge2,
            embedding=self.embedding,
            single_judge=self.single_judge,
            cache=self.cache,
            max_retries=self.max_retries,
            prices=self.prices,
        )
        if not self.name:
            # a valid MLflow metric name: mlflow.genai.evaluate refused `unified_precision@5/mean`
            # only after every scorer had run (and every judge call was paid)
            self.name = mlflow_key(self._scorer.default_name())

    def __call__(
        self,
        *,
        inputs: Any = None,
        outputs: Any = None,
        expectations: dict[str, Any] | None = None,
        trace: Any = None,
        session: Any = None,
    ) -> Feedback:
        """Score one row or trace; ``IntegrationError`` when it cannot be scored. A
        single-turn metric: ``session`` (MLflow's multi-turn conversations) is not read."""
        assert self._scorer is not None
        outcome = self._scorer.score(to_record(inputs, outputs, expectations, trace))
        return Feedback(
            name=self.name,
            value=outcome.score01,
            rationale=outcome.reason,
            metadata=_metadata(outcome),
            source=self._source(),
        )

    def _source(self) -> AssessmentSource:
        assert self._scorer is not None
        kind = (
            AssessmentSourceType.LLM_JUDGE if self._scorer.ref.spec.kind != "retrieval" else AssessmentSourceType.CODE
        )
        return AssessmentSource(source_type=kind, source_id=f"unified-rag-eval:{self._scorer.backend_label}")


def _metadata(o: Outcome) -> dict[str, str]:
    """Feedback metadata: MLflow keeps string values only."""
    meta = {
        "metric": o.metric,
        "backend": o.backend,
        "sample_id": o.sample_id,
        "value_0_10": f"{o.value:.4f}",
        "threshold_0_10": "" if o.threshold is None else f"{o.threshold:.4f}",
        "passed": "" if o.passed is None else str(o.passed).lower(),
        "degraded": str(o.degraded).lower(),
        "judge_calls": str(o.calls),
        "embedding_calls": str(o.embedding_calls),
        "cache_hits": str(o.cache_hits),
    }
    meta.update({f"value.{b}": f"{v / 10.0:.4f}" for b, v in o.members.items()})
    if o.usd is not None:
        meta["usd"] = f"{o.usd:.6f}"
    return meta


# ---------------------------------------------------------------- rows and traces -> Sample


def to_record(inputs: Any, outputs: Any, expectations: dict[str, Any] | None, trace: Any) -> dict[str, Any]:
    """One sample record (our field names) from what MLflow passes a scorer (module
    docstring); ``metadata["provenance"]`` names where each field came from."""
    record: dict[str, Any] = {}
    where: dict[str, str] = {}
    _put(record, where, "user_input", *_from_root(_question, inputs, trace, "inputs"))
    _put(record, where, "response", *_from_root(_response, outputs, trace, "outputs"))
    docs, origin = _contexts(inputs, outputs, trace)
    if docs is not None:
        _put(record, where, "retrieved_contexts", [d["text"] for d in docs], origin)
        ids = [d.get("id") for d in docs]
        if docs and all(ids):
            _put(record, where, "retrieved_ids", ids, origin)
    _expectations(record, where, expectations or {})
    trace_id = getattr(getattr(trace, "info", None), "trace_id", None)
    if trace_id:
        record["id"] = str(trace_id)
    record["metadata"] = {"provenance": where, **({"mlflow_trace_id": str(trace_id)} if trace_id else {})}
    return record


def _put(record: dict[str, Any], where: dict[str, str], key: str, value: Any, origin: str | None) -> None:
    if value is not None and origin is not None:
        record[key], where[key] = value, origin


def _from_root(read: Any, given: Any, trace: Any, side: str) -> tuple[str | None, str | None]:
    """``read(given)``; when nothing was given and there is a trace, ``read`` of its root
    span's ``side`` ("inputs" or "outputs"), as MLflow's own scorers resolve them
    (``resolve_inputs_from_trace``): a scorer called as ``scorer(trace=t)`` finds its
    question and answer where the trace keeps them."""
    if given is not None or trace is None:
        return read(given)
    from mlflow.genai.utils.trace_utils import resolve_inputs_from_trace, resolve_outputs_from_trace

    resolve = resolve_inputs_from_trace if side == "inputs" else resolve_outputs_from_trace
    value, origin = read(resolve(None, trace))
    return value, None if origin is None else f"trace root span {origin}"


def _question(inputs: Any) -> tuple[str | None, str | None]:
    if isinstance(inputs, str):
        return inputs, "inputs"
    if isinstance(inputs, dict):
        for key in _QUESTION_KEYS:
            if isinstance(inputs.get(key), str):
                return inputs[key], f"inputs.{key}"
        messages = inputs.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
            content = messages[-1].get("content")
            if isinstance(content, str):
                return content, "inputs.messages[-1].content"
        texts = [k for k, v in inputs.items() if isinstance(v, str)]
        if len(texts) == 1:  # one text argument, whatever its name
            return inputs[texts[0]], f"inputs.{texts[0]}"
    return None, None


def _response(outputs: Any) -> tuple[str | None, str | None]:
    if isinstance(outputs, str):
        return outputs, "outputs"
    if isinstance(outputs, dict):
        for key in _RESPONSE_KEYS:
            if isinstance(outputs.get(key), str):
                return outputs[key], f"outputs.{key}"
        if "choices" in outputs or "messages" in outputs:
            from mlflow.genai.utils.trace_utils import parse_outputs_to_str

            return parse_outputs_to_str(outputs), "outputs (chat format)"
    return None, None


def _contexts(inputs: Any, outputs: Any, trace: Any) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Documents ``{"text", "id"}``: an explicit entry of the row first, else the trace's
    top-level RETRIEVER spans in span order."""
    for side, value in (("outputs", outputs), ("inputs", inputs)):
        if isinstance(value, dict):
            for key in _CONTEXT_KEYS:
                if key in value and value[key] is not None:
                    return _documents(value[key], f"{side}.{key}"), f"{side}.{key}"
    if trace is None:
        return None, None
    from mlflow.genai.utils.trace_utils import extract_retrieval_context_from_trace

    spans = extract_retrieval_context_from_trace(trace)
    if not spans:
        return None, None
    for span_id, chunks in spans.items():
        for rank, chunk in enumerate(chunks, 1):
            # dropping it would move every later document up a rank (mrr, precision@k)
            # without a word; the trace reader refuses such a trace too
            if not isinstance(chunk.get("content"), str):
                uri = scrub(str(chunk.get("doc_uri") or "no doc_uri"))  # a URI may carry a credential
                raise IntegrationError(
                    f"trace RETRIEVER span {span_id}: document {rank} ({uri}) has no text (page_content); "
                    "its rank cannot be kept"
                )
    docs = [{"text": c["content"], "id": c.get("doc_uri")} for chunks in spans.values() for c in chunks]
    return docs, "trace RETRIEVER span " + ", ".join(spans)


def _documents(value: Any, where: str) -> list[dict[str, Any]]:
    """A context entry as documents: a string, a list of strings, or of document objects
    (dicts, MLflow/LangChain ``Document``s) read by the trace readers' one rule
    (``unified.data.traces.values.document``: text from ``page_content`` / ``content`` /
    ``text``), its id its ``doc_uri`` (``mlflow_document_id``) else the readers' id. A document without text is an
    ``IntegrationError`` naming ``where`` and its position — never its JSON as the text."""
    items = [value] if isinstance(value, (str, dict)) or hasattr(value, "page_content") else list(value)
    docs = []
    for i, item in enumerate(items):
        place = f"{where}[{i}]"
        if hasattr(item, "page_content") and not isinstance(item, dict):  # a Document object
            item = {
                "page_content": item.page_content,
                "metadata": getattr(item, "metadata", None) or {},
                "id": getattr(item, "id", None),
            }
        try:
            doc = document(item, place, mlflow_document_id)
        except TraceProblem as p:
            raise IntegrationError(scrub(f"{place}{_id_hint(item)}: {p.reason}; a context needs its text")) from None
        docs.append({"text": doc.content, "id": None if doc.id is None else str(doc.id)})
    return docs


def _id_hint(item: Any) -> str:
    """`` (id d1)`` for an object that names its document, for the error (scrubbed by the
    caller: a ``doc_uri`` may carry a credential)."""
    if not isinstance(item, dict):
        return ""
    found = mlflow_document_id(item)
    return f" (id {found})" if found is not None else ""


def _expectations(record: dict[str, Any], where: dict[str, str], exp: dict[str, Any]) -> None:
    """reference, relevant_ids and reference_contexts from MLflow's expectation names."""
    if isinstance(exp.get("expected_response"), str):
        _put(record, where, "reference", exp["expected_response"], "expectations.expected_response")
    elif isinstance(exp.get("expected_facts"), list):
        facts = "\n".join(str(f) for f in exp["expected_facts"])
        _put(record, where, "reference", facts, "expectations.expected_facts")
    ctx = exp.get("expected_retrieved_context")
    if isinstance(ctx, list) and ctx:
        ids = [c.get("doc_uri") or c.get("id") if isinstance(c, dict) else None for c in ctx]
        if all(ids):
            _put(record, where, "relevant_ids", ids, "expectations.expected_retrieved_context")
        texts = [
            c if isinstance(c, str) else next((c[k] for k in _DOC_TEXT_KEYS if isinstance(c.get(k), str)), None)
            for c in ctx
            if isinstance(c, (str, dict))
        ]
        if texts and all(t is not None for t in texts):
            _put(record, where, "reference_contexts", texts, "expectations.expected_retrieved_context")
