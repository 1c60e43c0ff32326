"""The unified record: one RAG interaction, whatever framework named its fields.

Canonical field names are RAGAS's modern ones. Every framework's names for the same
thing are accepted on input (``ALIASES``); two aliases of one field with different
values are an error, never a silent pick. Unknown fields are kept in ``metadata`` and
reported once per field name as a warning.

Shapes accepted beside the plain ones:

- ``reference`` given as a list of strings (RAGAS v0's ``ground_truths``, Dingo's
  ``fiqa.jsonl``): the reference becomes the strings joined with a newline, and the list
  itself is kept as ``metadata["reference_list"]``, so nothing is lost.
- contexts given as objects — ``{"doc_id"|"id": ..., "text"|"content"|"page_content": ...}``
  (RAGChecker), LangChain's ``{"page_content": ..., "metadata": {"id"|"source": ...}}`` or
  a LangChain ``Document`` — give their texts; when every object has an id, those ids
  fill ``retrieved_ids`` (``relevant_ids`` for ``reference_contexts``) unless given.

Every Sample is JSON-safe, so it can always be written back (``samples.jsonl``, caches):
no lone surrogate in any string, nesting at most ``MAX_DEPTH`` levels, only JSON types,
numbers finite, and each ``graded_relevance`` grade within ``[-MAX_GRADE, MAX_GRADE]``.
A record that breaks one of these is a ``SampleError`` naming the field path.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import numbers
import re
import warnings
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

# canonical -> accepted input names (canonical first). Sources, in column order:
# RAGAS v1, DeepEval, Dingo, Patronus (legacy and current SDK), Embedchain, RAGChecker,
# others (see DESIGN.md).
ALIASES: dict[str, tuple[str, ...]] = {
    "user_input": ("user_input", "question", "input", "prompt", "evaluated_model_input", "task_input", "query"),
    "response": ("response", "answer", "actual_output", "content", "evaluated_model_output", "task_output"),
    "retrieved_contexts": (
        "retrieved_contexts",
        "contexts",
        "retrieval_context",
        "context",
        "evaluated_model_retrieved_context",
        "task_context",
        "retrieved_context",
    ),
    "reference": (
        "reference",
        "ground_truth",
        "expected_output",
        "evaluated_model_gold_answer",
        "reference_answer",
        "gold_answer",
        "ground_truths",
        "gt_answer",
    ),
    "retrieved_ids": ("retrieved_ids", "retrieved_context_ids"),
    "relevant_ids": ("relevant_ids", "relevant_docs", "reference_context_ids"),
    "graded_relevance": ("graded_relevance",),
    "reference_contexts": ("reference_contexts",),
    "id": ("id", "sample_id", "query_id"),
    "metadata": ("metadata",),
}

# Which framework uses which alias, for `convert` (canonical -> framework -> name).
FRAMEWORK_FIELDS: dict[str, dict[str, str]] = {
    "ragas": {
        "user_input": "user_input",
        "response": "response",
        "retrieved_contexts": "retrieved_contexts",
        "reference": "reference",
        "reference_contexts": "reference_contexts",
        "retrieved_ids": "retrieved_context_ids",
        "relevant_ids": "reference_context_ids",
    },
    "ragas_v1": {
        "user_input": "question",
        "response": "answer",
        "retrieved_contexts": "contexts",
        "reference": "ground_truth",
    },
    "deepeval": {
        "user_input": "input",
        "response": "actual_output",
        "retrieved_contexts": "retrieval_context",
        "reference": "expected_output",
    },
    "dingo": {"user_input": "prompt", "response": "content", "retrieved_contexts": "context", "reference": "reference"},
    # the current Patronus SDK's names (the legacy evaluated_model_* ones are read too)
    "patronus": {
        "user_input": "task_input",
        "response": "task_output",
        "retrieved_contexts": "task_context",
        "reference": "gold_answer",
    },
    "embedchain": {"user_input": "question", "response": "answer", "retrieved_contexts": "contexts"},
}

ALIAS_TO_CANONICAL: dict[str, str] = {alias: canonical for canonical, names in ALIASES.items() for alias in names}
_ALIAS_TO_CANONICAL = ALIAS_TO_CANONICAL  # the name older code imports
LIST_FIELDS = ("retrieved_contexts", "retrieved_ids", "relevant_ids", "reference_contexts")
_TEXT_FIELDS = frozenset(("user_input", "response", "reference", "id"))  # a str stays as given
#: the fields that define an interaction (its content hash): all but id and metadata
CONTENT_FIELDS = (
    "user_input",
    "response",
    "retrieved_contexts",
    "reference",
    "retrieved_ids",
    "relevant_ids",
    "graded_relevance",
    "reference_contexts",
)
# a context list -> the id list its objects' ids fill
_IDS_OF_CONTEXTS = {"retrieved_contexts": "retrieved_ids", "reference_contexts": "relevant_ids"}
_TEXT_KEYS = ("text", "content", "page_content")
_ID_KEYS = ("doc_id", "id")
_META_ID_KEYS = ("id", "doc_id", "source")
_warned_unknown: set[str] = set()
#: keys of a row that go to ``metadata`` as they are and are read there, so no "unknown
#: field": ``labels`` (the human labels the cross-check and ``calibrate`` read)
METADATA_KEYS = frozenset({"labels"})
# every name a reader maps to a field or slot: the aliases, the layouts' own keys and slots
_KNOWN_NAMES = sorted(
    set(ALIAS_TO_CANONICAL)
    | {name for names in FRAMEWORK_FIELDS.values() for name in names.values()}
    | {"reference_contexts", "additional_metadata", "task_metadata", "data_id", "sid"}
)


def did_you_mean(key: str) -> str:
    """``"; did you mean 'actual_output'?"`` for an unknown field close to a known name
    (``difflib`` ratio ≥ 0.8, so ``actual_ouput`` finds it and ``category`` finds nothing);
    "" when nothing is close."""
    close = difflib.get_close_matches(key.lower(), _KNOWN_NAMES, n=1, cutoff=0.8) if isinstance(key, str) else []
    return f"; did you mean '{close[0]}'?" if close else ""


#: deepest nesting of lists/objects inside one field (pydantic's JSON writer stops near
#: 250 levels and Python's JSON parser near 1,000; real metadata needs a handful)
MAX_DEPTH = 64
#: largest |grade| in graded_relevance: nDCG's gain 2**grade - 1 must stay a finite float
#: (2**1024 overflows); TREC-style scales use -2..4, percentages 0..100
MAX_GRADE = 100.0
_SURROGATE = re.compile("[\ud800-\udfff]")
# json.dumps(v, sort_keys=True, ensure_ascii=False) and json.dumps(v, ensure_ascii=False,
# allow_nan=False), without building an encoder per call
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
_META_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


class SampleError(ValueError):
    """A record that cannot become a Sample. ``field`` names the offending field."""

    def __init__(self, field: str | None, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(f"field '{field}': {reason}" if field else reason)


# ---------------------------------------------------------------- JSON safety


def surrogate_reason(text: str) -> str | None:
    """Why ``text`` cannot be written as UTF-8, or None. A lone surrogate in U+DC80–U+DCFF
    is what an undecodable byte becomes when read with ``errors="surrogateescape"``."""
    m = _SURROGATE.search(text)
    if m is None:
        return None
    code = ord(m.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"byte 0x{code - 0xDC00:02X} is not UTF-8 (at character {m.start()}); save the file as UTF-8"
    return f"lone surrogate \\u{code:04x} at character {m.start()} is not valid Unicode"


def _scalar_problem(v: Any) -> str | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):  # Python's JSON reader refuses integers of more than 4,300 digits
        return None if v.bit_length() <= 14_000 else "an integer of more than 4,000 digits"
    if isinstance(v, str):
        return surrogate_reason(v)
    if isinstance(v, float):
        return None if math.isfinite(v) else f"{v} is not a number JSON can hold"
    return f"a {type(v).__name__} cannot be stored; use a string, a number, a list or an object"


def json_problem(value: Any, path: str) -> tuple[str, str] | None:
    """The first (field path, reason) that makes ``value`` unfit for JSON, or None.

    Iterative (an explicit stack), so a 100,000-level structure is reported, not a
    RecursionError. Paths read ``metadata.a[2].b``."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        v, where, depth = stack.pop()
        if isinstance(v, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                return where, f"nested more than {MAX_DEPTH} levels deep"
            if isinstance(v, dict):
                for k, item in v.items():
                    key_problem = _scalar_problem(k)
                    if key_problem:
                        return f"{where}.{_printable(k)}", f"key: {key_problem}"
                    stack.append((item, f"{where}.{k}", depth + 1))
            else:
                stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(v))
            continue
        problem = _scalar_problem(v)
        if problem:
            return where, problem
    return None


def _too_deep(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth >= MAX_DEPTH:
            return True
        children = v.values() if isinstance(v, dict) else v
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list, tuple)))
    return False


def sample_problem(sample: Any, content_blob: str | None = None) -> tuple[str, str] | None:
    """The first (field path, reason) that makes a Sample unfit for JSON, or None. C-speed
    ``json.dumps`` of the content (``content_blob`` when the caller has it) and of the
    metadata answers for the clean majority; only a sample that fails is walked
    (``json_problem``) to name the field."""
    try:
        blob = content_blob if content_blob is not None else sample._content_blob()
        meta = sample.metadata
        clean = (
            _no_surrogate(blob)
            and _no_surrogate(sample.id)
            and (not meta or (_no_surrogate(_META_JSON(meta)) and not _too_deep(meta)))
        )
    except (TypeError, ValueError, RecursionError):
        clean = False
    if clean:
        return None
    fields = {name: getattr(sample, name) for name in type(sample).model_fields}
    return next(filter(None, (json_problem(v, k) for k, v in fields.items())), None)


def _no_surrogate(text: Any) -> bool:
    # an ASCII string (CPython knows it without a scan) holds no surrogate: no regex pass;
    # anything but a string is not clean (the caller walks the fields to name it)
    return isinstance(text, str) and (text.isascii() or _SURROGATE.search(text) is None)


def _printable(text: Any) -> str:
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def check_grade(key: Any, value: Any) -> float:
    """One grade of ``graded_relevance`` as a float; raises ``SampleError`` unless it is a
    finite number in ``[-MAX_GRADE, MAX_GRADE]``."""
    field = f"graded_relevance.{_printable(key)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SampleError(field, f"expected a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):  # NaN would poison nDCG
        raise SampleError(field, f"expected a finite number, got {value}")
    if abs(value) > MAX_GRADE:  # compared before float(): a huge int does not fit a float
        digits = len(str(abs(value))) if isinstance(value, int) else 0
        shown = (
            f"{value:.3g}"
            if isinstance(value, float)
            else str(value)
            if digits <= 20
            else f"{str(value)[:8]}… (an integer of {digits} digits)"
        )
        raise SampleError(
            field,
            f"grade {shown} is out of range; grades must lie in "
            f"[-{MAX_GRADE:g}, {MAX_GRADE:g}] (nDCG's gain is 2**grade - 1)",
        )
    return float(value)


# ---------------------------------------------------------------- the record


class Sample(BaseModel):
    """One RAG interaction. No field is always required: each metric names the fields
    it needs (``MetricSpec.required``), and a backend may need more for a metric
    (``Backend.needs_fields``). ``user_input`` (the question) may be absent: a summary or
    a data-to-text response answers no question, and faithfulness and hallucination
    judge it without one. An empty or blank question is stored as absent (None)."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    user_input: str | None = None
    response: str | None = None
    retrieved_contexts: list[str] | None = None
    reference: str | None = None
    retrieved_ids: list[str] | None = None
    relevant_ids: list[str] | None = None
    graded_relevance: dict[str, float] | None = None
    reference_contexts: list[str] | None = None
    id: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    # the content hash computed while validating (readers use it right after building the
    # sample, before anyone can change a field; content_hash() always recomputes)
    _hash_at_validation: str = PrivateAttr(default="")

    @field_validator("user_input")
    @classmethod
    def _blank_question_is_absent(cls, v: str | None) -> str | None:
        return blank_as_absent(v)

    @field_validator("graded_relevance")
    @classmethod
    def _grades_in_range(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        return None if v is None else {k: check_grade(k, g) for k, g in v.items()}

    @model_validator(mode="after")
    def _json_safe_then_id(self) -> "Sample":
        return check_then_id(self)

    def _content_blob(self) -> str:
        values = self.__dict__
        return _CANONICAL_JSON({k: v for k in CONTENT_FIELDS if (v := values[k]) is not None})

    def validation_hash(self) -> str:
        """``content_hash()`` as validation computed it ("" for a Sample built without
        validation, ``model_construct``), read from the private attributes' dict: pydantic's
        ``__getattr__`` for a private attribute costs more than the rest of the reader's
        bookkeeping per row."""
        private = self.__pydantic_private__
        return private.get("_hash_at_validation", "") if private else ""

    def content_hash(self) -> str:
        """Stable id from the content: sha256 of the canonical JSON (sorted keys, absent
        fields left out) of the fields that define the interaction — all but ``id`` and
        ``metadata`` — first 16 hex digits."""
        return hashlib.sha256(self._content_blob().encode()).hexdigest()[:16]

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
    def from_record(
        cls, record: Mapping[str, Any], mapping: Mapping[str, str] | None = None, *, warn_unknown: bool = True
    ) -> "Sample":
        """Build a Sample from a dict written in any framework's field names.

        ``mapping`` renames source fields first (``{"question": "user_input"}``, as the
        CLI's ``--map question=user_input``). Raises ``SampleError`` naming the field.
        """
        return cls.model_validate(canonicalize(record, mapping, warn_unknown=warn_unknown))

    @classmethod
    def trusted(cls, fields: dict[str, Any]) -> "Sample":
        """The Sample ``model_validate(fields)`` builds, without pydantic's validation, for
        ``fields`` that ``plain_fields`` returned (canonical names, every value already of
        its field's exact type, grades checked): the same rules run — the blank question,
        then ``check_then_id`` (content present, JSON safety, the content hash, the id).
        The instance is made through pydantic's pickling state, as ``model_construct``
        would make it (the fields given are the fields set) at about half its cost.
        ``fields`` is not changed. Raises ``SampleError``."""
        values = {name: fields.get(name, default) for name, default in _DEFAULTS}
        if "user_input" in fields:
            values["user_input"] = blank_as_absent(fields["user_input"])
        if "metadata" not in fields:
            values["metadata"] = {}  # the default factory's value, a dict per sample
        sample = cls.__new__(cls)
        sample.__setstate__(
            {
                "__dict__": values,
                "__pydantic_fields_set__": set(fields),
                "__pydantic_extra__": None,
                "__pydantic_private__": {"_hash_at_validation": ""},
            }
        )
        return check_then_id(sample)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> "Sample":
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as e:
            raise _one_line(e) from None


# (field, default) in the model's field order; metadata's default factory is called per sample
_DEFAULTS = tuple((name, f.default) for name, f in Sample.model_fields.items())


def blank_as_absent(question: str | None) -> str | None:
    """One spelling of "no question": ``""``, ``"  "`` and a missing field hash and read
    alike (None), and every reader of ``user_input`` checks for None only."""
    return question if question is not None and question.strip() else None


def check_then_id(sample: Sample) -> Sample:
    """The whole-record rules, for both ways a Sample is built (validation and
    ``Sample.trusted``): some content field present, no blank context
    (``blank_context``), every field JSON-safe, then the
    content hash — sha256 of the canonical JSON, computed once and also the JSON check's
    input — kept as ``_hash_at_validation``, and the id when none was given."""
    if all(getattr(sample, k) is None for k in CONTENT_FIELDS):
        # with no field always required, a row whose columns all went to metadata (a
        # misnamed column) would otherwise be a sample every metric fails on
        raise SampleError(
            None,
            f"no sample field ({', '.join(CONTENT_FIELDS[:4])}, …); "
            "is a column misnamed? rename it with --map SOURCE=FIELD",
        )
    blank = blank_context(sample)
    if blank is not None:
        raise SampleError(*blank)
    blob = sample._content_blob()
    problem = sample_problem(sample, blob)
    if problem:
        raise SampleError(*problem)
    sample._hash_at_validation = hashlib.sha256(blob.encode()).hexdigest()[:16]
    if not (sample.id or "").strip():  # blank: no id given (a whitespace id matched nothing)
        sample.id = sample._hash_at_validation
    return sample


def blank_context(sample: Sample) -> tuple[str, str] | None:
    """(``field[i]``, reason) for the first blank context (``""``, only whitespace) of
    ``retrieved_contexts`` or ``reference_contexts``, else None.

    A blank question is no question (``blank_as_absent``), but a blank context cannot be
    made absent: dropping it moves every later context up a rank (precision@k, mrr and
    the judges' ranked verdicts) and out of line with ``retrieved_ids``, and keeping it
    has a judge rate a passage that is not there. It is a chunk without text — a fault of
    the pipeline that made it, as a trace's document without text is — so the row is an
    error. ``not t or t.isspace()`` stops at the first non-space character: O(1) per real
    context."""
    values = sample.__dict__
    for field in _IDS_OF_CONTEXTS:
        texts = values[field]
        if texts:
            for i, text in enumerate(texts):
                if not text or text.isspace():
                    ranked = ", and take a rank (precision@k, mrr)" if field == "retrieved_contexts" else ""
                    return f"{field}[{i}]", (
                        f"a blank context (a chunk with no text), item {i + 1} of {len(texts)}: it would be "
                        f"judged as a passage{ranked}; drop it where the contexts are made, or give its text"
                    )
    return None


def _one_line(e: ValidationError) -> SampleError:
    """pydantic's multi-line error as one SampleError naming the field."""
    err = e.errors()[0]
    inner = (err.get("ctx") or {}).get("error")
    if isinstance(inner, SampleError):  # raised by our own validators, field path and all
        return inner
    field = ".".join(str(p) for p in err["loc"]) or None
    msg = err["msg"]
    if err["type"] == "missing":
        msg = "missing (required)"
    elif err["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
    return SampleError(field, msg)


# ---------------------------------------------------------------- aliases


def canonicalize(
    record: Mapping[str, Any], mapping: Mapping[str, str] | None = None, *, warn_unknown: bool = True
) -> dict[str, Any]:
    """Rename aliases to canonical names, check types of list fields, move unknown
    fields to metadata. Raises ``SampleError``."""
    if not isinstance(record, Mapping):
        raise SampleError(None, f"a sample must be an object, got {type(record).__name__}")
    mapping = dict(mapping or {})
    metadata = _metadata_of(record)
    out: dict[str, Any] = {}
    source_of: dict[str, str] = {}
    for key, value in record.items():
        if key == "metadata":
            continue
        target = target_of(key, record, mapping)
        if target is None:
            _into_metadata(metadata, key, value)
            if warn_unknown and key not in _warned_unknown and key not in METADATA_KEYS:
                _warned_unknown.add(key)
                warnings.warn(f"unknown field '{key}' kept in metadata{did_you_mean(key)}", UserWarning, stacklevel=3)
            continue
        if value is None:
            continue
        if target in out and out[target] != value:
            raise SampleError(
                target, f"given twice with different values, as '{source_of[target]}' and '{key}'; keep one"
            )
        out[target] = value
        source_of[target] = key
    _normalise_fields(out, source_of, metadata)
    if metadata:
        out["metadata"] = metadata
    return out


def _into_metadata(metadata: dict[str, Any], key: str, value: Any) -> None:
    """A row's field kept in ``metadata`` under its name. The same name already in the
    row's ``metadata`` with another value is given twice: a row error, or, for two
    objects (``labels`` at the top and in ``metadata``), their keys merged, a key of two
    values an error. Overwriting dropped one of them without a word."""
    have = metadata.get(key, value)
    if have == value:
        metadata[key] = value
    elif isinstance(have, Mapping) and isinstance(value, Mapping):
        metadata[key] = merged_once(have, value, key, f"metadata.{key}", f"'{key}'")
    else:
        raise SampleError(key, f"given twice, {_short(have)} in metadata and {_short(value)} as '{key}'; keep one")


def merged_once(
    have: Mapping[str, Any], given: Mapping[str, Any], field: str, have_at: str, given_at: str
) -> dict[str, Any]:
    """``have`` with ``given``'s keys added: the one rule for an object a row gives in two
    places (``labels`` at the top and in ``metadata``, or beside its ``--label`` columns).
    A key with two values is a ``SampleError`` naming ``field.key`` and both places;
    overwriting dropped one of them without a word."""
    for k, v in given.items():
        if k in have and have[k] != v:
            raise SampleError(
                f"{field}.{k}", f"given twice, {_short(have[k])} in {have_at} and {_short(v)} in {given_at}"
            )
    return {**have, **given}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _metadata_of(record: Mapping[str, Any]) -> dict[str, Any]:
    meta = record.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise SampleError("metadata", f"expected an object, got {type(meta).__name__}")
    return dict(meta)


def target_of(key: str, record: Mapping[str, Any], mapping: Mapping[str, str]) -> str | None:
    """The canonical field ``key`` fills in ``record``: ``mapping`` first, then the
    aliases; None for an unknown field."""
    if key in mapping:
        return mapping[key]
    if key == "context" and "retrieval_context" in record:
        # `context` is ambiguous: Dingo's retrieved context, but beside DeepEval's
        # `retrieval_context` it is DeepEval's ideal (reference) context
        return "reference_contexts"
    return ALIAS_TO_CANONICAL.get(key)


def _normalise_fields(out: dict[str, Any], source_of: dict[str, str], metadata: dict[str, Any]) -> None:
    """Field shapes in place: reference lists, context objects, string lists, ids, grades."""
    if isinstance(out.get("reference"), (list, tuple)):
        refs = _as_str_list("reference", out["reference"], source_of["reference"])
        metadata.setdefault("reference_list", refs)
        out["reference"] = "\n".join(refs)
        if not refs:
            del out["reference"]
    for field, id_field in _IDS_OF_CONTEXTS.items():
        if field in out:
            texts, ids = _context_texts(field, out[field], source_of[field])
            out[field] = texts
            if ids is not None and id_field not in out:
                out[id_field] = ids
                source_of[id_field] = source_of[field]
    for field in LIST_FIELDS:
        if field in out:
            out[field] = _as_str_list(field, out[field], source_of[field])
    if "id" in out and not isinstance(out["id"], str):
        if isinstance(out["id"], bool) or not isinstance(out["id"], numbers.Real):  # numpy ints are Real
            # str() gave 'True' or "['x']": an id no other file or run would match
            raise SampleError("id", f"expected a string or a number, got {type(out['id']).__name__}")
        out["id"] = str(out["id"])
    if "graded_relevance" in out:
        gr = out["graded_relevance"]
        if not isinstance(gr, Mapping):
            raise SampleError("graded_relevance", "expected an object {doc_id: grade}")
        out["graded_relevance"] = grades_of(gr)


def grades_of(grades: Mapping[Any, Any]) -> dict[str, float]:
    """``graded_relevance`` as ``{doc_id: grade}``, each grade checked (``check_grade``);
    a None grade means not judged and is left out (parquet / HF datasets store these dicts
    as structs, which fill every row with every key of the column)."""
    return {str(k): check_grade(k, v) for k, v in grades.items() if v is not None}


def plain_fields(record: Mapping[str, Any], targets: Mapping[str, str]) -> dict[str, Any] | None:
    """The canonical fields of ``record`` for ``Sample.trusted`` when ``canonicalize`` and
    pydantic could only copy its values, else None (the caller takes the full path).

    ``targets``: each key's canonical field, distinct, all known (the caller resolved them
    once for this key set). A value qualifies when its type is exactly the field's: a
    ``str`` for the text fields and the id, a ``list`` of ``str`` for the list fields, a
    ``dict`` for ``metadata`` and ``graded_relevance`` (grades through ``grades_of``, which
    raises ``SampleError`` as the full path does). None, and an empty metadata object, are
    absent, as there. Anything else — a number id, a reference list, context objects, a
    string where a list belongs, a tuple — returns None."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if value is None:
            continue
        field, kind = targets[key], type(value)
        if kind is str and field in _TEXT_FIELDS:
            out[field] = value
        elif kind is list and field in LIST_FIELDS and all(type(item) is str for item in value):
            out[field] = list(value)
        elif kind is dict and field == "graded_relevance":
            out[field] = value  # checked last, below, as the full path checks the grades last
        elif kind is dict and field == "metadata" and all(type(k) is str for k in value):
            if value:
                out[field] = dict(value)
        else:
            return None
    if "graded_relevance" in out:
        out["graded_relevance"] = grades_of(out["graded_relevance"])
    return out


def _context_texts(field: str, value: Any, source: str) -> tuple[Any, list[str] | None]:
    """(texts, ids or None) of a context list whose items may be objects; a value that is
    not a list of objects is returned as is (``_as_str_list`` judges it)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        return value, None
    if not any(not isinstance(item, str) and _text_of(item) is not None for item in value):
        return value, None
    texts: list[Any] = []
    ids: list[str | None] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            texts.append(item)
            ids.append(None)
            continue
        text = _text_of(item)
        if text is None:
            raise SampleError(f"{field}[{i}]", f"a context object needs a text ({', '.join(_TEXT_KEYS)}) in '{source}'")
        texts.append(text)
        ids.append(_id_of(item))
    return texts, (None if any(i is None for i in ids) else ids)  # type: ignore[return-value]


def _text_of(item: Any) -> Any:
    if isinstance(item, Mapping):
        return next((item[k] for k in _TEXT_KEYS if item.get(k) is not None), None)
    # a LangChain Document, or anything shaped like one (no import needed)
    return next((getattr(item, k) for k in ("page_content", "text") if isinstance(getattr(item, k, None), str)), None)


def _id_of(item: Any) -> str | None:
    get = item.get if isinstance(item, Mapping) else (lambda k: getattr(item, k, None))
    found = next((get(k) for k in _ID_KEYS if get(k) is not None), None)
    meta = get("metadata")
    if found is None and isinstance(meta, Mapping):
        found = next((meta[k] for k in _META_ID_KEYS if meta.get(k) is not None), None)
    return None if found is None else str(found)


# a context object where the list belongs: how to give it as the one passage it is
_OBJECT_HINT = {f: "; one context object goes in a list: [{...}]" for f in ("retrieved_contexts", "reference_contexts")}


def _as_str_list(field: str, value: Any, source: str) -> list[str]:
    if type(value) is list and all(type(item) is str for item in value):
        return list(value)  # the common case, at C speed
    if isinstance(value, str):
        raise SampleError(
            field, f"expected a list of strings, got a single string in '{source}'; wrap it in a list: [\"...\"]"
        )
    if isinstance(value, Mapping):  # list() of an object is its keys: never the passages or ids
        raise SampleError(
            field, f"expected a list of strings, got an object in '{source}'" + _OBJECT_HINT.get(field, "")
        )
    if isinstance(value, (set, frozenset)):  # iteration order varies per process: no ranking
        raise SampleError(field, f"expected a list of strings, got a set in '{source}': a set has no order")
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
