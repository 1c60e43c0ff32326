"""The unified record: one RAG interaction, whatever framework named its fields.

Canonical field names are RAGAS's modern ones. Every framework's names for the same
thing are accepted on input (``ALIASES``); two aliases of one field with different
values are an error, never a silent pick. Unknown fields are kept in ``metadata`` and
reported once per field name as a warning.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# canonical -> accepted input names (canonical first). Sources, in column order:
# RAGAS v1, DeepEval, Dingo, Patronus, Embedchain, others (see DESIGN.md).
ALIASES: dict[str, tuple[str, ...]] = {
    "user_input": ("user_input", "question", "input", "prompt", "evaluated_model_input", "query"),
    "response": ("response", "answer", "actual_output", "content", "evaluated_model_output"),
    "retrieved_contexts": (
        "retrieved_contexts", "contexts", "retrieval_context", "context",
        "evaluated_model_retrieved_context",
    ),
    "reference": (
        "reference", "ground_truth", "expected_output", "evaluated_model_gold_answer",
        "reference_answer", "gold_answer", "ground_truths",
    ),
    "retrieved_ids": ("retrieved_ids", "retrieved_context_ids"),
    "relevant_ids": ("relevant_ids", "relevant_docs", "reference_context_ids"),
    "graded_relevance": ("graded_relevance",),
    "reference_contexts": ("reference_contexts",),
    "id": ("id", "sample_id"),
    "metadata": ("metadata",),
}

# Which framework uses which alias, for `convert` (canonical -> framework -> name).
FRAMEWORK_FIELDS: dict[str, dict[str, str]] = {
    "ragas": {"user_input": "user_input", "response": "response",
              "retrieved_contexts": "retrieved_contexts", "reference": "reference",
              "reference_contexts": "reference_contexts",
              "retrieved_ids": "retrieved_context_ids", "relevant_ids": "reference_context_ids"},
    "ragas_v1": {"user_input": "question", "response": "answer",
                 "retrieved_contexts": "contexts", "reference": "ground_truth"},
    "deepeval": {"user_input": "input", "response": "actual_output",
                 "retrieved_contexts": "retrieval_context", "reference": "expected_output"},
    "dingo": {"user_input": "prompt", "response": "content", "retrieved_contexts": "context",
              "reference": "reference"},
    "patronus": {"user_input": "evaluated_model_input", "response": "evaluated_model_output",
                 "retrieved_contexts": "evaluated_model_retrieved_context",
                 "reference": "evaluated_model_gold_answer"},
    "embedchain": {"user_input": "question", "response": "answer", "retrieved_contexts": "contexts"},
}

_ALIAS_TO_CANONICAL: dict[str, str] = {
    alias: canonical for canonical, names in ALIASES.items() for alias in names
}
_LIST_FIELDS = ("retrieved_contexts", "retrieved_ids", "relevant_ids", "reference_contexts")
_warned_unknown: set[str] = set()


class SampleError(ValueError):
    """A record that cannot become a Sample. ``field`` names the offending field."""

    def __init__(self, field: str | None, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(f"field '{field}': {reason}" if field else reason)


class Sample(BaseModel):
    """One RAG interaction. Only ``user_input`` is always required; each metric names
    the other fields it needs (``MetricSpec.required``)."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    user_input: str
    response: str | None = None
    retrieved_contexts: list[str] | None = None
    reference: str | None = None
    retrieved_ids: list[str] | None = None
    relevant_ids: list[str] | None = None
    graded_relevance: dict[str, float] | None = None
    reference_contexts: list[str] | None = None
    id: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("user_input")
    @classmethod
    def _non_empty_question(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("user_input is empty; every sample needs a question")
        return v

    def model_post_init(self, __context: Any) -> None:
        if not self.id:
            self.id = self.content_hash()

    def content_hash(self) -> str:
        """Stable id from the content: sha256 of the canonical JSON of the fields that
        define the interaction (metadata excluded), first 16 hex digits."""
        payload = self.model_dump(exclude={"id", "metadata"}, exclude_none=True)
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def has(self, field: str) -> bool:
        """True when ``field`` is present and non-empty (an empty list counts as absent
        except for ``retrieved_contexts``/``retrieved_ids``, where [] is a valid answer of
        a retriever that found nothing)."""
        v = getattr(self, field, None)
        if v is None:
            return False
        if isinstance(v, str):
            return bool(v.strip())
        if isinstance(v, (list, dict)) and not v:
            return field in ("retrieved_contexts", "retrieved_ids")
        return True

    @classmethod
    def from_record(cls, record: Mapping[str, Any], mapping: Mapping[str, str] | None = None,
                    *, warn_unknown: bool = True) -> "Sample":
        """Build a Sample from a dict written in any framework's field names.

        ``mapping`` renames source fields first (``{"question": "user_input"}``, as the
        CLI's ``--map question=user_input``). Raises ``SampleError`` naming the field.
        """
        return cls.model_validate(canonicalize(record, mapping, warn_unknown=warn_unknown))

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> "Sample":  # type: ignore[override]
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or None
            msg = err["msg"]
            if err["type"] == "missing":
                msg = "missing (required)"
            elif err["type"] == "value_error":
                msg = msg.removeprefix("Value error, ")
            raise SampleError(field, msg) from None


def canonicalize(record: Mapping[str, Any], mapping: Mapping[str, str] | None = None,
                 *, warn_unknown: bool = True) -> dict[str, Any]:
    """Rename aliases to canonical names, check types of list fields, move unknown
    fields to metadata. Raises ``SampleError``."""
    if not isinstance(record, Mapping):
        raise SampleError(None, f"a sample must be an object, got {type(record).__name__}")
    mapping = dict(mapping or {})
    out: dict[str, Any] = {}
    source_of: dict[str, str] = {}
    metadata: dict[str, Any] = dict(record.get("metadata") or {}) if isinstance(
        record.get("metadata"), Mapping) else {}
    if "metadata" in record and record["metadata"] is not None and not isinstance(
            record["metadata"], Mapping):
        raise SampleError("metadata", f"expected an object, got {type(record['metadata']).__name__}")
    for key, value in record.items():
        if key == "metadata":
            continue
        target = mapping.get(key) or _ALIAS_TO_CANONICAL.get(key)
        if key == "context" and key not in mapping and "retrieval_context" in record:
            # `context` is ambiguous: Dingo's retrieved context, but beside DeepEval's
            # `retrieval_context` it is DeepEval's ideal (reference) context
            target = "reference_contexts"
        if target is None:
            metadata[key] = value
            if warn_unknown and key not in _warned_unknown:
                _warned_unknown.add(key)
                warnings.warn(f"unknown field '{key}' kept in metadata", UserWarning, stacklevel=3)
            continue
        if value is None:
            continue
        if target in out and out[target] != value:
            raise SampleError(target, f"given twice with different values, as '{source_of[target]}' "
                                      f"and '{key}'; keep one")
        out[target] = value
        source_of[target] = key
    for field in _LIST_FIELDS:
        if field in out:
            out[field] = _as_str_list(field, out[field], source_of[field])
    if "id" in out and not isinstance(out["id"], str):
        out["id"] = str(out["id"])
    if "graded_relevance" in out:
        gr = out["graded_relevance"]
        if not isinstance(gr, Mapping):
            raise SampleError("graded_relevance", "expected an object {doc_id: grade}")
        # None = not judged: parquet / HF datasets store these dicts as structs, which fill
        # every row with every key of the column
        out["graded_relevance"] = {str(k): _grade(k, v) for k, v in gr.items() if v is not None}
    if metadata:
        out["metadata"] = metadata
    return out


def _as_str_list(field: str, value: Any, source: str) -> list[str]:
    if isinstance(value, str):
        raise SampleError(field, f"expected a list of strings, got a single string in '{source}'; "
                                 f"wrap it in a list: [\"...\"]")
    if not isinstance(value, (list, tuple)):
        try:  # numpy arrays and pyarrow lists from parquet / HF datasets
            value = list(value)
        except TypeError:
            raise SampleError(field, f"expected a list of strings, got {type(value).__name__}") from None
    out = []
    for i, item in enumerate(value):
        if field.endswith("_ids") and isinstance(item, (int,)) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str):
            raise SampleError(f"{field}[{i}]", f"expected a string, got {type(item).__name__}")
        out.append(item)
    return out


def _grade(key: Any, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SampleError(f"graded_relevance.{key}", f"expected a number, got {type(value).__name__}")
    if not math.isfinite(value):  # NaN/Infinity parse from JSON and would poison nDCG
        raise SampleError(f"graded_relevance.{key}", f"expected a finite number, got {value}")
    return float(value)
