"""How long one judge call may take, how many run at once and how many tokens it may
generate, by kind of judge. The one place these defaults are decided.

Kinds (``judge_kind``):

- ``gguf``: an in-process llama-cpp-python model (``--model file.gguf``);
- ``local``: an OpenAI-compatible LLM runtime on this machine: a loopback host
  (127.0.0.0/8, ::1, localhost) on Ollama's port 11434 or llama.cpp's 8080, or whose URL
  or model names llama.cpp, Ollama or a ``.gguf`` file;
- ``remote``: anything else (a hosted API; a vLLM or other server elsewhere).

A local model generates about 8–15 tokens/s on two CPU cores, so a network timeout of 60 s
fails every call that writes more than a few hundred tokens. Defaults, used when the
config leaves ``timeout`` / ``concurrency`` unset (None); a value the user set always wins:

=======  ==========================================  ===========  ======================
kind     timeout per call (s)                        concurrency  max_tokens per call
=======  ==========================================  ===========  ======================
gguf     none (nothing can hang on a network)        1            ``answer_cap``
local    ``PROMPT_SECONDS + cap · SECONDS_PER_TOKEN``  1            ``answer_cap``
remote   ``REMOTE_TIMEOUT`` (60)                     8            config ``max_tokens``
=======  ==========================================  ===========  ======================

An in-process model's threads (``gguf_threads``): ``n_threads`` when the config sets it,
else the physical cores this process may run on — the CPUs in its affinity mask divided
by the hardware threads per core (``/sys/devices/system/cpu/cpu0/topology``; 1 when
unknown). llama-cpp-python's own default, half the logical CPUs, assumes two hardware
threads per core, and on a 2-core machine without SMT it generates on one core.

The timeout covers one request, never the wait for a turn: calls beyond ``concurrency``
queue, and a queued call has no clock running.

``answer_cap`` bounds what a small model may generate so it cannot ramble for minutes:
for a schema whose every value is an enum, a number or a boolean (the native per-item
verdicts), the largest valid answer, ``16 + Σ_keys (len(key) + longest value + 6) / 2``
tokens; for free text or lists, with or without a schema, ``FREE_TEXT_BASE +
prompt_tokens``: an extraction may restate all it read (DeepEval's truths of a whole news
article were cut at half the prompt's tokens on the packaged 1.5B model), plus a short
reason per item. Never above the config's ``max_tokens``. An
answer cut at the cap fails as ``JudgeLengthError`` naming the cap — never a silent
partial answer.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from unified.judge.config import EmbeddingConfig, JudgeConfig
from unified.judge.structured import estimate_tokens

JudgeKind = Literal["gguf", "local", "remote"]

REMOTE_TIMEOUT = 60.0
REMOTE_CONCURRENCY = 8
PROMPT_SECONDS = 120.0  # reading a 4k-token prompt at ~40 tokens/s, with room to spare
SECONDS_PER_TOKEN = 0.5  # slower than 2 tokens/s the server is taken as hung
FREE_TEXT_BASE = 256
_LOCAL_PORTS = {11434, 8080}
_LOCAL_HINT = re.compile(r"llama[._-]?cpp|ollama|\.gguf\b", re.IGNORECASE)
_CHARS_PER_TOKEN = 2  # JSON keys, enum values and the grammar's optional whitespace tokenise worse than prose


def _loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def judge_kind(config: JudgeConfig) -> JudgeKind:
    """``gguf``, ``local`` or ``remote`` (module docstring)."""
    if config.is_gguf:
        return "gguf"
    try:
        parts = urlsplit(config.base_url or "")
        host, port = parts.hostname, parts.port
    except ValueError:
        return "remote"
    if _loopback(host) and (port in _LOCAL_PORTS or _LOCAL_HINT.search(f"{config.base_url} {config.model}")):
        return "local"
    return "remote"


def concurrency(config: JudgeConfig | EmbeddingConfig) -> int:
    """Calls in flight at once: the config's value, else 1 for a local model, else 8."""
    if config.concurrency is not None or not isinstance(config, JudgeConfig):
        return config.concurrency
    return REMOTE_CONCURRENCY if judge_kind(config) == "remote" else 1


def call_timeout(config: JudgeConfig | EmbeddingConfig, max_tokens: int | None = None) -> float | None:
    """Seconds one request may take (None: no limit): the config's value, else by kind
    for a request generating at most ``max_tokens`` (default: the config's)."""
    if config.timeout is not None or not isinstance(config, JudgeConfig):
        return config.timeout
    kind = judge_kind(config)
    if kind == "gguf":
        return None
    if kind == "local":
        return PROMPT_SECONDS + (max_tokens or config.max_tokens) * SECONDS_PER_TOKEN
    return REMOTE_TIMEOUT


def _closed_values(prop: dict[str, Any], defs: dict[str, Any]) -> int | None:
    """Characters of the longest value a property allows when it is closed (enum, const,
    number, boolean); None for free text, lists and objects."""
    if "$ref" in prop:
        prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in prop:
        return max(len(json.dumps(v)) for v in prop["enum"])
    if "const" in prop:
        return len(json.dumps(prop["const"]))
    if prop.get("type") in ("integer", "number"):
        return 12
    if prop.get("type") == "boolean":
        return 5
    if "anyOf" in prop:
        sizes = [_closed_values(p, defs) for p in prop["anyOf"]]
        return None if None in sizes else max(s for s in sizes if s is not None)
    return None


def schema_bound(schema: dict[str, Any]) -> int | None:
    """Tokens of the largest answer ``schema`` allows when every value is closed (module
    docstring), else None."""
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return None
    defs = schema.get("$defs", {})
    chars = 0
    for key, prop in props.items():
        size = _closed_values(prop, defs)
        if size is None:
            return None
        chars += len(key) + size + 6
    return 16 + chars // _CHARS_PER_TOKEN


_SIBLINGS = Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")


def _threads_per_core() -> int:
    """Hardware threads per core (``0-1`` or ``0,2`` in the siblings list: 2), 1 when unknown."""
    try:
        spec = _SIBLINGS.read_text().strip()
    except OSError:
        return 1
    count = 0
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        count += int(hi) - int(lo) + 1 if hi else 1
    return max(count, 1)


def usable_cpus() -> int:
    """The logical CPUs this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def gguf_threads(config: JudgeConfig) -> tuple[int, int]:
    """``(n_threads, n_threads_batch)`` for an in-process model (module docstring): the
    generation threads, and the prompt-reading threads (every usable CPU, at least as many)."""
    cpus = usable_cpus()
    n = config.n_threads or max(cpus // _threads_per_core(), 1)
    return n, max(n, cpus)


def answer_cap(config: JudgeConfig, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> int | None:
    """``max_tokens`` for one call (module docstring); None for a remote judge, which
    keeps the config's ``max_tokens``."""
    if judge_kind(config) == "remote":
        return None
    bound = schema_bound(schema) if schema is not None else None
    if bound is None:
        prompt = estimate_tokens("".join(m.get("content", "") for m in messages))
        bound = FREE_TEXT_BASE + prompt
    return min(config.max_tokens, bound)


__all__ = [
    "FREE_TEXT_BASE",
    "gguf_threads",
    "usable_cpus",
    "JudgeKind",
    "PROMPT_SECONDS",
    "REMOTE_CONCURRENCY",
    "REMOTE_TIMEOUT",
    "SECONDS_PER_TOKEN",
    "answer_cap",
    "call_timeout",
    "concurrency",
    "judge_kind",
    "schema_bound",
]
