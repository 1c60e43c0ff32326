"""Text out of the values traces carry: a question or an answer from ``input.value`` /
``output.value`` (text, or JSON when the MIME type says so), and documents from a
retriever's output (MLflow, Langfuse).

The rules, in order, for a question (``role="question"``) or an answer (``"answer"``):

1. a string is the text itself — unless it is JSON: when the MIME type is
   ``application/json``, or when no MIME type is given and the string is a JSON object,
   list or string (recorded as ``guessed`` in the provenance; a JSON string holding JSON
   again — Langfuse's exports encode a trace's input twice — is decoded again, at most
   ``_MAX_ENCODINGS`` times);
2. an object: the first of the known keys holding a string — question: ``question``,
   ``query``, ``input``, ``user_input``, ``prompt``, ``q``, ``text``, ``content``,
   ``message``; answer: ``output``, ``answer``, ``response``, ``result``, ``content``,
   ``text``, ``output_text``, ``generated_text``; then chat shapes (``messages``: the last
   ``user`` message for a question, the last ``assistant`` one for an answer, in any of
   the message shapes ``message_of`` reads — OpenAI's, LangChain's and LangGraph's,
   OpenInference's); for an answer, a model's reply object (OpenAI's
   ``choices[0].message.content``, LangChain's ``generations``, one assistant message);
   then an object of exactly one key is unwrapped (at most ``_MAX_UNWRAP`` levels);
3. a list of chat messages, as ``messages`` above;
4. anything else is a ``TraceProblem`` naming the keys seen: the trace is a row error,
   never a question made of JSON.

Documents (``documents_of``): a list, or an object whose ``documents`` / ``results`` /
``contexts`` / ``output`` / ``nodes`` key holds one; each item a string, or an object whose
text is ``page_content`` / ``content`` / ``text`` / ``document.content`` (LangChain's and
MLflow's ``Document``, LlamaIndex nodes), id ``id`` / ``doc_id`` / ``metadata.id`` /
``metadata.doc_id`` / ``metadata.doc_uri`` / ``metadata.source``, score ``score`` /
``relevance_score`` / ``metadata.score``.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from unified.data.traces.model import Doc, TraceProblem

JSON_MIME = "application/json"
_KEYS = {
    "question": ("question", "query", "input", "user_input", "prompt", "q", "text", "content", "message"),
    "answer": ("output", "answer", "response", "result", "content", "text", "output_text", "generated_text"),
}
_ROLE = {"question": "user", "answer": "assistant"}
_MAX_UNWRAP = 3
_MAX_ENCODINGS = 3
_DOC_LISTS = ("documents", "results", "contexts", "output", "nodes", "retrieved_documents")
_DOC_TEXT = ("page_content", "content", "text", "document.content", "pageContent")
_DOC_ID = ("id", "doc_id", "document.id", "document_id", "chunk_id")
_META_ID = ("id", "doc_id", "document_id", "chunk_id", "doc_uri", "source")
_DOC_SCORE = ("score", "relevance_score", "document.score", "similarity")


def decode(value: Any, mime: str | None) -> tuple[Any, str | None]:
    """(value, how): a JSON string decoded when the MIME type says JSON (``how`` =
    ``json``) or when no type is given and it is a JSON object or list (``guessed json``);
    otherwise the value unchanged (``how`` None). A string declared JSON that does not
    parse raises ``TraceProblem``."""
    if not isinstance(value, str):
        return value, None
    declared = (mime or "").split(";")[0].strip().lower()
    if declared == JSON_MIME:
        try:
            return json.loads(value), "json"
        except (ValueError, RecursionError) as e:
            raise TraceProblem(None, f"declared {JSON_MIME} but is not JSON ({e})") from None
    if declared:
        return value, None
    decoded = value
    for _ in range(_MAX_ENCODINGS):  # JSON text encoded again as a JSON string (Langfuse's trace input)
        if not isinstance(decoded, str) or decoded.lstrip()[:1] not in ("{", "[", '"'):
            break
        try:
            decoded = json.loads(decoded)
        except (ValueError, RecursionError):
            break  # text that merely starts with a bracket or a quote
    return (decoded, "guessed json") if decoded is not value else (value, None)


def text_of(value: Any, role: str) -> tuple[str, str | None]:
    """(text, key path inside the value or None) per the module's rules; raises
    ``TraceProblem(None, reason)`` when no text can be told."""
    path: list[str] = []
    for _ in range(_MAX_UNWRAP + 1):
        if isinstance(value, str):
            return value, ".".join(path) or None
        if isinstance(value, list):
            text, where = _from_messages(value, role)
            return text, ".".join([*path, where])
        if not isinstance(value, dict):
            break
        found = _from_object(value, role)
        if found is not None:
            return found[0], ".".join([*path, found[1]])
        if len(value) != 1:
            break
        key = next(iter(value))
        path.append(str(key))
        value = value[key]
    raise TraceProblem(None, _cannot_tell(value, role))


def _from_object(obj: dict[str, Any], role: str) -> tuple[str, str] | None:
    for key in _KEYS[role]:
        if isinstance(obj.get(key), str):
            return obj[key], key
    if isinstance(obj.get("messages"), list):
        text, where = _from_messages(obj["messages"], role)
        return text, f"messages{where}"
    if role == "answer":
        return _from_completion(obj)
    return None


def _from_completion(obj: dict[str, Any]) -> tuple[str, str] | None:
    """An answer in a model's own reply object: OpenAI's ``choices[0].message.content``,
    LangChain's ``LLMResult`` (``generations[-1][-1]``: its ``text``, else its
    message's content), or one message object of the assistant."""
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        content = (choices[0].get("message") or {}).get("content")
        if isinstance(content, str):
            return content, "choices[0].message.content"
    generations = obj.get("generations")
    if isinstance(generations, list) and generations and isinstance(generations[-1], list) and generations[-1]:
        last = generations[-1][-1]
        i, j = len(generations) - 1, len(generations[-1]) - 1
        if isinstance(last, dict) and isinstance(last.get("text"), str) and last["text"].strip():
            return last["text"], f"generations[{i}][{j}].text"
        said = message_of(last.get("message")) if isinstance(last, dict) else None
        if said is not None:
            return said[1], f"generations[{i}][{j}].message.content"
    said = message_of(obj)
    if said is not None and said[0] == "assistant":
        return said[1], "content"
    return None


#: LangChain's and OpenInference's names for a message's author → chat roles
_ROLES = {"human": "user", "ai": "assistant", "humanmessage": "user", "aimessage": "assistant",
          "aimessagechunk": "assistant", "humanmessagechunk": "user", "systemmessage": "system",
          "toolmessage": "tool"}  # fmt: skip


def message_of(m: Any) -> tuple[str, str] | None:
    """(role, text) of one chat message in the shapes producers write: OpenAI's
    ``{"role", "content"}``; LangChain's ``{"type": "human", "content"}`` (a message's
    dump, LangGraph's state), ``{"type": "human", "data": {"content"}}``
    (``messages_to_dict``) and ``{"lc": 1, "id": [..., "HumanMessage"], "kwargs":
    {"content"}}`` (``dumpd``); OpenInference's ``{"message.role", "message.content"}``.
    Roles ``human`` / ``ai`` are ``user`` / ``assistant``. None when it is none of these."""
    if not isinstance(m, dict):
        return None
    body = m.get("kwargs") if isinstance(m.get("kwargs"), dict) else m.get("data")
    body = body if isinstance(body, dict) else m
    lc_id = m.get("id")
    named = lc_id[-1] if m.get("lc") and isinstance(lc_id, list) and lc_id else None
    role = m.get("role") or m.get("message.role") or named or body.get("type") or m.get("type")
    content = _content_text(body.get("content", m.get("message.content")))
    if not isinstance(role, str) or content is None:
        return None
    return _ROLES.get(role.lower(), role.lower()), content


def _from_messages(messages: list[Any], role: str) -> tuple[str, str]:
    """The last message of ``role`` (user for a question, assistant for an answer); a
    list of conversations (LangChain's chat model input, ``[[message, ...]]``): its last."""
    prefix = ""
    if messages and all(isinstance(m, list) for m in messages):
        prefix, messages = f"[{len(messages) - 1}]", messages[-1]
    want = _ROLE[role]
    for i in range(len(messages) - 1, -1, -1):
        said = message_of(messages[i])
        if said is not None and said[0] == want:
            return said[1], f"{prefix}[{i}].content"
    raise TraceProblem(None, f"no {want} message with text content among {len(messages)} message(s)")


def _content_text(content: Any) -> str | None:
    """A message's text: a string, or OpenAI's list of parts joined (text parts only)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


def _cannot_tell(value: Any, role: str) -> str:
    if isinstance(value, dict):
        keys = ", ".join(map(str, list(value)[:8])) + (", …" if len(value) > 8 else "")
        return (
            f"cannot tell the {role} from a JSON object with keys [{keys}]; expected one of "
            f"{', '.join(_KEYS[role][:4])}, … or chat messages"
        )
    return f"cannot tell the {role} from a JSON {type(value).__name__}"


# ---------------------------------------------------------------- documents


def documents_of(value: Any, where: str, id_of: Callable[[dict[str, Any]], Any] | None = None) -> list[Doc]:
    """The documents of a retriever's output (rules in the module docstring); ``where``
    names the output for provenance and errors; ``id_of``: a source's own rule for a
    document object's id (MLflow's: ``mlflow_document_id``), else ``document_id``. Raises
    ``TraceProblem`` naming the item."""
    items = value
    if isinstance(value, dict):
        key = next((k for k in _DOC_LISTS if isinstance(value.get(k), list)), None)
        if key is None:
            raise TraceProblem(
                where, f"expected a list of documents, got an object with keys [{', '.join(map(str, list(value)[:8]))}]"
            )
        items, where = value[key], f"{where}.{key}"
    if not isinstance(items, list):
        raise TraceProblem(where, f"expected a list of documents, got {type(items).__name__}")
    return [document(item, f"{where}[{i}]", id_of) for i, item in enumerate(items)]


def document(item: Any, where: str, id_of: Callable[[dict[str, Any]], Any] | None = None) -> Doc:
    """One retrieved document (a string, or an object per the module docstring): the one
    spelling of "the text of a context" for every trace reader and the MLflow scorer.
    An object without a text is a ``TraceProblem`` at ``where``, never its JSON as text:
    a context made of ``{"id": …, "score": …}`` would be judged as if it were a passage."""
    if isinstance(item, str):
        return Doc(item, where=where)
    if not isinstance(item, dict):
        raise TraceProblem(where, f"a document must be text or an object, got {type(item).__name__}")
    flat = _flat(item)
    text_key = next((k for k in _DOC_TEXT if isinstance(flat.get(k), str)), None)
    if text_key is None:
        raise TraceProblem(
            where,
            f"a document without text (no {', '.join(_DOC_TEXT[:3])}); keys [{', '.join(map(str, list(item)[:8]))}]",
        )
    meta: dict[str, Any] = flat["metadata"] if isinstance(flat.get("metadata"), dict) else {}
    score = next((flat[k] for k in _DOC_SCORE if flat.get(k) is not None), meta.get("score"))
    return Doc(flat[text_key], (id_of or document_id)(item), score, f"{where}.{text_key}")


def _flat(item: dict[str, Any]) -> dict[str, Any]:
    """The object with a nested ``document`` object's keys lifted as ``document.<key>``."""
    nested = item.get("document")
    return {**item, **{f"document.{k}": v for k, v in nested.items()}} if isinstance(nested, dict) else item


def mlflow_document_id(item: dict[str, Any]) -> Any:
    """An MLflow document's id: its ``doc_uri`` (on the object or in ``metadata``) when it
    has one, else ``document_id``. MLflow names a document by its ``doc_uri`` — its
    expectations' ``expected_retrieved_context`` and its own trace extraction do — so a
    ``chunk_id`` or ``id`` beside it would never match ``relevant_ids`` and precision@k
    would be 0 without a word. The MLflow trace reader and the MLflow scorer share it."""
    meta = item.get("metadata")
    uris = (item.get("doc_uri"), meta.get("doc_uri") if isinstance(meta, dict) else None)
    return next((u for u in uris if u not in (None, "")), None) or document_id(item)


def document_id(item: dict[str, Any]) -> Any:
    """A document object's id: the first of ``_DOC_ID`` on the object, else of ``_META_ID``
    in its ``metadata`` (None when it names none)."""
    flat = _flat(item)
    doc_id = next((flat[k] for k in _DOC_ID if flat.get(k) not in (None, "")), None)
    if doc_id is not None:
        return doc_id
    meta = flat.get("metadata")
    return next((meta[k] for k in _META_ID if meta.get(k) not in (None, "")), None) if isinstance(meta, dict) else None
