"""The autoevals backend: our Sample and judge inside Braintrust autoevals' RAGAS scorers.

autoevals does the scoring, unchanged; this module only translates:

- ``Sample`` -> the keywords of ``await Scorer(...).eval_async(...)`` (autoevals' names:
  input, output, expected, context; the table in ``unified/adapters/autoevals/__init__.py``);
- our judge -> the client autoevals documents: ``init(client=AsyncOpenAI(...))`` or a
  scorer's ``client=`` argument take an OpenAI-v1-shaped client, and autoevals calls
  ``client.chat.completions.create(model=, messages=, tools=, tool_choice=)`` (every RAG
  scorer asks for one forced function call) and ``client.embeddings.create(input=,
  model=)``. ``JudgeOpenAI`` is that client, answered in process by our judge layer: the
  forced function's JSON-schema parameters become a pydantic model (``schema_model``),
  our ``ChatJudge`` answers it (cache, retries, breaker, accounting) and the validated
  object goes back as the tool call's arguments, which autoevals parses itself;
  embeddings come from our embedder. No HTTP client is built, no key is read, and the
  fallback autoevals has without a client (``OPENAI_BASE_URL``, else Braintrust's AI
  gateway) is never reached. Scorers get ``LLMClient(openai=JudgeOpenAI(...),
  complete=..., embed=..., ...)``: with its methods given, autoevals does not wrap the
  client for Braintrust logging even when the braintrust package is installed;
- autoevals' ``Score`` -> ``Score``: ``value = 10 · raw``; a judge answer autoevals would
  count though it is none is refused (``outcome_of``): a 0/1 verdict that is neither
  (``verdict: 2`` shifts a mean without leaving [0, 1]), statements Faithfulness never
  judged (it divides by the judged ones), a reference in which ContextRecall's judge
  found no sentence (autoevals scores it 0). The reason is the judge's per-item reasons.

The model name autoevals is given (``MODEL``) only names the request: our judge decides.
It must not start with ``gpt-5``, for which autoevals switches to the Responses API.
autoevals' in-process embedding cache (a class attribute, unbounded, keyed by the
client's ``id()``) is emptied of each evaluation's entries when it ends: a long run would
otherwise keep every vector, and a later client could inherit a dead one's ``id``.
"""

from __future__ import annotations

import inspect
import json
import secrets
from importlib.metadata import version
from types import SimpleNamespace
from typing import Any, Literal

from autoevals import ragas as autoevals_ragas
from autoevals.oai import LLMClient
from autoevals.string import EmbeddingSimilarity
from pydantic import BaseModel, ConfigDict, Field, create_model

from unified.adapters.autoevals import FACTS, AutoevalsMetric
from unified.adapters.framework import FrameworkBackend, Outcome
from unified.judge.base import Judges
from unified.metrics import MetricRef
from unified.sample import Sample

#: the model name autoevals puts in its requests (never "gpt-5…": see the module docstring)
MODEL = "unified-judge"
#: constructor keywords a bracket parameter may not set: the client and models are ours,
#: the judge's own settings decide sampling (autoevals' ``temperature`` would be ignored),
#: and ``pairwise_scorer``/``answer_similarity`` take scorer objects, not values
NOT_PARAMS = frozenset(
    ("self", "kwargs", "model", "client", "api_key", "base_url", "temperature", "embedding_model")
    + ("pairwise_scorer", "answer_similarity")
)
_LEAVES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}
_MODELS: dict[str, type[BaseModel]] = {}


# ---------------------------------------------------------------- JSON schema -> pydantic


def schema_model(schema: dict[str, Any], name: str) -> type[BaseModel]:
    """A pydantic model validating what a function-call ``schema`` describes: objects
    (fields under their JSON names; a schema without ``required`` requires every
    property, as the judge bridge reads flat schemas), arrays, string enums, strings,
    integers, numbers, booleans, and local ``$ref``s into ``$defs``/``definitions``.
    Anything else is refused (a silently loose field would pass any answer). Built once
    per schema."""
    key = json.dumps([schema, name], sort_keys=True)
    if key not in _MODELS:
        _MODELS[key] = _model(schema, name, schema)
    return _MODELS[key]


def _model(schema: dict[str, Any], name: str, root: dict[str, Any]) -> type[BaseModel]:
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required", props))
    fields: dict[str, Any] = {}
    for i, (prop, sub) in enumerate(props.items()):
        typ = _type(sub, f"{name}_{prop}", root)
        # positional field names: a JSON name may clash with BaseModel's own attributes
        fields[f"f{i}"] = (typ, Field(..., alias=prop)) if prop in required else (typ | None, Field(None, alias=prop))
    title = str(schema.get("title") or name)
    return create_model(title, __config__=ConfigDict(populate_by_name=True), **fields)


def _type(sub: Any, name: str, root: dict[str, Any]) -> Any:
    if not isinstance(sub, dict):
        raise ValueError(f"autoevals asked for a JSON schema this backend cannot pass on: {sub!r}")
    if "$ref" in sub:
        node: Any = root
        for part in str(sub["$ref"]).removeprefix("#/").split("/"):
            node = node[part]
        return _type(node, str(sub["$ref"]).rsplit("/", 1)[-1], root)
    if isinstance(sub.get("enum"), list) and all(isinstance(v, str) for v in sub["enum"]):
        return Literal[tuple(sub["enum"])]
    kind = sub.get("type", "object" if "properties" in sub else None)
    if kind == "object":
        return _model(sub, name, root) if sub.get("properties") else dict[str, Any]
    if kind == "array":
        return list[_type(sub.get("items", {}), f"{name}_item", root)]  # type: ignore[misc]
    if kind in _LEAVES:
        return _LEAVES[kind]
    raise ValueError(f"autoevals asked for a JSON schema this backend cannot pass on: {sub!r}")


# ---------------------------------------------------------------- the client


class JudgeOpenAI:
    """The OpenAI v1 async client surface autoevals reads, answered by our judge layer
    (see the module docstring). ``chat.completions.create``: one forced function call
    answered by our ``ChatJudge``; ``embeddings.create``: our ``Embedder``. The
    Responses and Moderations APIs are refused (the RAG scorers never call them)."""

    def __init__(self, judges: Judges):
        self.judges = judges
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.complete))
        self.embeddings = SimpleNamespace(create=self.embed)
        self.responses = SimpleNamespace(create=self.refuse)
        self.moderations = SimpleNamespace(create=self.refuse)
        self.api_key, self.organization, self.base_url = "", None, None

    async def complete(
        self, *, messages: list[dict[str, Any]], tools: Any = None, tool_choice: Any = None, **_: Any
    ) -> dict[str, Any]:
        """The forced function call, answered: a ``chat.completion`` whose one message
        carries the tool call with the judge's validated arguments."""
        fn = _forced_function(tools, tool_choice)
        model = schema_model(fn["parameters"], str(fn["name"]))
        msgs = [{"role": str(m.get("role", "user")), "content": str(m.get("content") or "")} for m in messages]
        answer = await self.judges.require_chat().ask(msgs, model)
        arguments = answer.model_dump_json(by_alias=True)
        call = {
            "id": f"call_{secrets.token_hex(6)}",
            "type": "function",
            "function": {"name": fn["name"], "arguments": arguments},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        }

    async def embed(self, *, input: Any, **_: Any) -> dict[str, Any]:
        """``input`` (a text or texts) embedded by our embedder, in OpenAI's shape."""
        texts = [input] if isinstance(input, str) else [str(t) for t in input]
        vectors = await self.judges.require_embedder().embed(texts)
        return {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        }

    async def refuse(self, **_: Any) -> Any:
        raise NotImplementedError("this autoevals client answers chat completions and embeddings only")


def _forced_function(tools: Any, tool_choice: Any) -> dict[str, Any]:
    """The function autoevals forces (``tool_choice``), from ``tools``."""
    wanted = ((tool_choice or {}).get("function") or {}).get("name") if isinstance(tool_choice, dict) else None
    fns = [t.get("function") or {} for t in tools or [] if isinstance(t, dict)]
    found = [f for f in fns if wanted is None or f.get("name") == wanted]
    if len(found) != 1 or not isinstance(found[0].get("parameters"), dict):
        raise ValueError("autoevals sent a request without one forced function call; this backend answers only those")
    return found[0]


def llm_client(judges: Judges) -> LLMClient:
    """autoevals' ``LLMClient`` over ``JudgeOpenAI``, its methods given (no wrapping)."""
    raw = JudgeOpenAI(judges)
    return LLMClient(
        openai=raw,
        complete=raw.chat.completions.create,
        embed=raw.embeddings.create,
        moderation=raw.moderations.create,
        is_async=True,
    )


def forget_embeddings(client: Any) -> None:
    """Drop ``client``'s entries from autoevals' class-wide embedding cache (its key's 4th
    item is ``id(client)``)."""
    cache = EmbeddingSimilarity._CACHE
    with EmbeddingSimilarity._CACHE_LOCK:
        for key in [k for k in cache if k[3] == id(client)]:
            del cache[key]


# ---------------------------------------------------------------- Score -> Outcome

_TEXT = ("statement", "sentence", "question")
_MARKS = ("verdict", "attributed", "noncommittal")


def walk(node: Any, path: tuple[str, ...]) -> list[Any]:
    """The values at ``path`` under ``node`` (lists on the way are walked; a missing key
    gives nothing)."""
    nodes = [node]
    for key in path:
        nodes = [n.get(key) for n in nodes if isinstance(n, dict) and key in n]
        nodes = [x for n in nodes for x in (n if isinstance(n, list) else [n])]
    return nodes


def off_scale(m: AutoevalsMetric, metadata: dict[str, Any]) -> str | None:
    """Why the judge's 0/1 answers cannot be counted: one that is not 0 or 1."""
    for v in walk(metadata, m.verdicts) if m.verdicts else []:
        if isinstance(v, bool) or v not in (0, 1):
            return f"the judge answered {m.verdicts[-1]} {json.dumps(v)} where autoevals asks 0 or 1; no score"
    return None


def not_counted(m: AutoevalsMetric, metadata: dict[str, Any]) -> str | None:
    """Why autoevals' number counts what the judge did not answer: Faithfulness divides
    by the judged statements (a statement left out raises the share), ContextRecall
    scores 0 when the judge split the reference into no statement."""
    if m.cls == "Faithfulness":
        asked, judged = len(metadata.get("statements") or []), len(metadata.get("faithfulness") or [])
        if asked != judged:
            return f"the judge judged {judged} of {asked} statements; autoevals divides by the judged ones; no score"
    if m.cls == "ContextRecall" and not walk(metadata, ("statements", "statements")):
        return "the judge found no statement in the reference, which autoevals scores 0; no score"
    return None


def _item_line(item: dict[str, Any]) -> str:
    text = next((item[k] for k in _TEXT if k in item), None)
    mark = next((f"{k} {item[k]}" for k in _MARKS if k in item), None)
    why = item.get("reason") or "; ".join(str(r) for r in item.get("reasons") or [])
    return " — ".join(str(p) for p in (text, mark, why) if p not in (None, ""))


def reason_of(metadata: Any) -> str | None:
    """The judge's per-item answers as lines ("statement — verdict 1 — reason"; TP/FP/FN
    lists), each once."""
    lines: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for x in node:
                visit(x)
        elif isinstance(node, dict) and any(k in node for k in (*_TEXT, "reason", "reasons")):
            lines.append(_item_line(node))
        elif isinstance(node, dict):
            for k, v in node.items():
                lines.append(f"{k}: {'; '.join(map(str, v))}") if k in ("TP", "FP", "FN") else visit(v)

    visit(metadata)
    return "\n".join(dict.fromkeys(x for x in lines if x)) or None


def clipped_share(m: AutoevalsMetric, sample: Sample, metadata: dict[str, Any]) -> float | None:
    """ContextRelevancy's share before autoevals clips it to 1 (extracted characters /
    characters of the contexts joined by newlines), when it exceeds 1: the judge
    paraphrased instead of extracting. None otherwise."""
    if m.cls != "ContextRelevancy" or not sample.retrieved_contexts:
        return None
    extracted = "".join(str(s) for s in walk(metadata, ("relevant_sentences", "sentence")))
    share = len(extracted) / max(1, len("\n".join(sample.retrieved_contexts)))
    return share if share > 1 else None


def outcome_of(m: AutoevalsMetric, sample: Sample, result: Any, details: dict[str, Any]) -> Outcome:
    """autoevals' ``Score`` as the task's Outcome (the module docstring's rules)."""
    metadata = result.metadata if isinstance(result.metadata, dict) else {}
    reason = reason_of(metadata)
    why = off_scale(m, metadata) or not_counted(m, metadata)
    if why is not None:
        return Outcome(None, why, reason=reason)
    if (share := clipped_share(m, sample, metadata)) is not None:
        details["clipped_from"] = share
    return Outcome(result.score, f"returned {result.score!r}", reason=reason)


# ---------------------------------------------------------------- the backend


def autoevals_kwargs(m: AutoevalsMetric, sample: Sample) -> dict[str, Any]:
    """Sample -> ``eval_async`` keywords (an empty field is None; autoevals refuses a
    missing one it needs with its own message)."""
    return {kw: (getattr(sample, f) or None) for f, kw in m.reads.items()}


class AutoevalsBackend(FrameworkBackend):
    """Run canonical metrics with autoevals' RAGAS scorers over our judge and embedder.

    Options as ``FrameworkBackend`` (``concurrency``; ``run_dir``). A metric's bracket
    parameters go to the scorer's constructor (``answer_relevancy[strictness=2]``,
    ``answer_correctness[factuality_weight=1]``), but those in ``NOT_PARAMS``.
    """

    FACTS = FACTS
    metric_key = "scorer"

    def version(self) -> str:
        return version("autoevals")

    def requirements(self, ref: MetricRef) -> frozenset[str]:
        """From the table's ``uses``: "llm" -> chat, "embeddings" -> embedder."""
        m = self.table.get(ref.canonical)
        return frozenset({"llm": "chat", "embeddings": "embedder"}[u] for u in getattr(m, "uses", ()))

    def framework_params(self, row: Any) -> set[str]:
        """The scorer constructor's own keywords but ``NOT_PARAMS``: autoevals' scorers take
        ``**kwargs``, so a typo would run with the default without a word."""
        init = inspect.signature(getattr(autoevals_ragas, row.cls).__init__).parameters
        return set(init) - NOT_PARAMS

    def error_text(self, e: BaseException) -> str:
        text = super().error_text(e)
        if isinstance(e, ZeroDivisionError):  # autoevals divides by what the judge returned
            text += " (autoevals divides by the statements the judge returned, and it returned none)"
        return text

    def new_scorer(self, m: AutoevalsMetric, client: LLMClient, params: tuple[tuple[str, Any], ...] = ()) -> Any:
        """A scorer for ``m`` over ``client``, as autoevals documents per-scorer clients."""
        return getattr(autoevals_ragas, m.cls)(**dict(params), model=MODEL, client=client)

    async def evaluate(self, sample: Sample, ref: MetricRef, row: AutoevalsMetric, details: dict[str, Any]) -> Outcome:
        """``await Scorer(model=MODEL, client=...).eval_async(**kwargs)`` on a client of its
        own, whose embeddings autoevals forgets afterwards."""
        client = llm_client(self.judges)
        try:
            result = await self.new_scorer(row, client, self.passed_params(ref)).eval_async(
                **autoevals_kwargs(row, sample)
            )
        finally:
            forget_embeddings(client)
        return outcome_of(row, sample, result, details)
