"""Judge and embedding configuration: pydantic models, environment variables, run files.

The API key is never a field: configs hold only the *name* of the environment variable
(``api_key_env``) and clients read the value when they are created, so a config can be
dumped into a report or a cache key without leaking anything.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

StructuredOutput = Literal["auto", "json_schema", "llama_cpp", "prompt"]

DEFAULT_REMOTE_EMBEDDING_MODEL = "text-embedding-3-small"  # an embeddings URL without a model
_KEY_FIELDS = {"api_key", "apikey", "key", "openai_api_key", "token", "secret"}


#: the model of a run-file section that names none (``section_fields`` drops it)
UNSET_MODEL = "\x00unset"


def section_fields(cfg: BaseModel | None) -> dict[str, Any]:
    """The fields a run-file section really set (its placeholder model dropped)."""
    if cfg is None:
        return {}
    fields = cfg.model_dump(exclude_unset=True)
    if fields.get("model") == UNSET_MODEL:
        del fields["model"]
    return fields


def _redacted_args(args: Any) -> list[tuple[str | None, Any]]:
    from unified.redact import redact_url

    return [(k, redact_url(v) if k == "base_url" and isinstance(v, str) else v) for k, v in args]


#: where a judge without a base URL sends its calls (the openai client's own default)
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: an Azure OpenAI deployment's URL: ``https://RESOURCE.openai.azure.com/openai/deployments/NAME``
_AZURE_DEPLOYMENT = re.compile(r"/openai/deployments/([^/;]+)/?$")


def base_url_of(config: Any) -> tuple[str, str]:
    """(the URL a judge's or embedder's calls go to, where it came from): the config's
    ``base_url`` ("given"); else ``$OPENAI_BASE_URL`` ("OPENAI_BASE_URL") — the openai
    client reads it by itself, so it is named here, where a run says where its calls go
    and which endpoint is the judge's identity; else OpenAI's API ("default")."""
    if getattr(config, "base_url", None):
        return str(config.base_url), "given"
    env = os.environ.get("OPENAI_BASE_URL")
    if env:
        return env, "OPENAI_BASE_URL"
    return DEFAULT_BASE_URL, "default"


def azure_deployment(url: str | None) -> str | None:
    """The deployment's name when ``url`` is an Azure OpenAI deployment URL (its path ends
    ``/openai/deployments/NAME``): such a server wants the key in an ``api-key`` header and
    an ``api-version`` query parameter on every call (``unified.judge.transport``)."""
    from unified.redact import split_url

    parts = split_url(url) if url else None
    m = _AZURE_DEPLOYMENT.search(parts.path) if parts is not None else None
    return m.group(1) if m else None


def provider_prefix_problem(config: Any, where: str = "judge") -> str | None:
    """Why this HTTP judge would quietly go to the wrong server, or None: a model named with
    a provider prefix (``anthropic/claude-3-5-sonnet``, ``gemini/…``: a gateway's names) and
    no base URL anywhere (``base_url_of``) would be sent to OpenAI's API, which serves no
    such model."""
    model = str(getattr(config, "model", "") or "")
    if "/" not in model or getattr(config, "is_gguf", False) or base_url_of(config)[1] != "default":
        return None
    return (
        f"{where}: the model {model!r} names a provider ({model.split('/', 1)[0]}/) but no base URL says "
        f"where to send it, so its calls would go to OpenAI's API ({DEFAULT_BASE_URL}); give the URL of the "
        "gateway or server that serves it (LiteLLM's proxy: --base-url http://127.0.0.1:4000), or set "
        "UNIFIED_JUDGE_BASE_URL, [judge] base_url or OPENAI_BASE_URL"
    )


def check_base_url(url: str | None) -> str | None:
    """``url`` when it is an ``http(s)://host[:port]/...`` URL, else a ValueError that
    says what is wrong without repeating the URL (it may hold a key): a URL without a
    scheme would be sent nowhere useful and, worse, echoed unredacted."""
    if url is None:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 — raises ValueError for a port that is not a number
    except ValueError:
        raise ValueError("base_url has a port that is not a number") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("base_url must start with http:// or https:// and name a host, like http://127.0.0.1:8080/v1")
    if azure_deployment(url) and "api-version=" not in parts.query and not os.environ.get("OPENAI_API_VERSION"):
        raise ValueError(
            "an Azure OpenAI deployment URL (…/openai/deployments/NAME) needs its api-version: add "
            "?api-version=2024-10-21 (or the version your resource supports), or set OPENAI_API_VERSION"
        )
    return url


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def key_env_problem(name: str) -> str | None:
    """Why ``name`` cannot be the NAME of the environment variable that holds a key, or
    None. A value that looks like a key (``unified.redact.looks_like_secret``: a user pasted
    the key itself) is never repeated, not even in this message; it only says how long it is."""
    from unified.redact import looks_like_secret

    if looks_like_secret(name):
        return (
            f"takes the NAME of an environment variable that holds the key (such as OPENAI_API_KEY), "
            f"not the key: the value given ({len(name)} characters, not shown) looks like a key itself; "
            "export it under a name (export MY_JUDGE_KEY=...) and give that name"
        )
    if not _ENV_NAME.match(name):
        return (
            f"takes the NAME of an environment variable (letters, digits and _, such as OPENAI_API_KEY); got {name!r}"
        )
    return None


def _reject_literal_key(data: Any, section: str) -> Any:
    if isinstance(data, dict):
        found = _KEY_FIELDS & {str(k).lower() for k in data}
        if found:
            raise ValueError(
                f"[{section}] has a literal `{sorted(found)[0]}` field: keys never go in config "
                "files; set api_key_env to the NAME of an environment variable holding it"
            )
    return data


class _EndpointConfig(BaseModel):
    """What every endpoint section shares: no literal key, a checked URL, a redacted repr."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), hide_input_in_errors=True)
    _section: ClassVar[str] = "endpoint"  # the config-file section named in errors
    base_url: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_literal_key(cls, data: Any) -> Any:
        return _reject_literal_key(data, cls._section)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return check_base_url(v)

    def __repr_args__(self) -> Any:  # repr() and str() never show a URL's credentials
        return _redacted_args(super().__repr_args__())

    @field_validator("api_key_env", check_fields=False)
    @classmethod
    def _key_env(cls, v: str) -> str:
        problem = key_env_problem(v)
        if problem is not None:
            raise ValueError(problem)
        return v


class JudgeConfig(_EndpointConfig):
    """An OpenAI-compatible chat judge (or a local ``.gguf`` file for llama-cpp-python).

    ``structured_output``: ``json_schema`` (OpenAI ``response_format``), ``llama_cpp``
    (``{"type": "json_object", "schema": ...}``), ``prompt`` (schema in the prompt, validated
    and repaired once) or ``auto`` (llama_cpp when the URL or model looks like llama.cpp,
    else json_schema, switching to llama_cpp for good if the server rejects json_schema).

    Failure handling (``unified.judge.resilience``): ``timeout`` seconds per attempt,
    ``max_retries`` retries with backoff from ``backoff_base``, and a circuit breaker that
    stops sending after ``breaker_failures`` connection failures or timeouts in a row.

    ``timeout`` and ``concurrency`` left unset (None) are decided by the kind of judge
    (``unified.judge.budget``): 60 s and 8 at once for a remote API; no timeout and one
    call at a time for an in-process ``.gguf`` model; a budget per generated token and one
    at a time for a llama.cpp or Ollama server on this machine. A local judge's calls also
    get a ``max_tokens`` cap per prompt (``budget.answer_cap``).
    """

    _section: ClassVar[str] = "judge"

    model: str
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 2048
    timeout: float | None = Field(None, gt=0)  # None: by kind of judge (unified.judge.budget)
    max_retries: int = Field(4, ge=0)
    backoff_base: float = Field(0.5, ge=0)  # seconds; doubled per retry, with jitter
    concurrency: int | None = Field(None, ge=1)  # None: by kind of judge (unified.judge.budget)
    requests_per_minute: float | None = Field(None, gt=0)
    structured_output: StructuredOutput = "auto"
    # circuit breaker (unified.judge.breaker): open after this many connection failures
    # or timeouts in a row, probe again after the cooldown (seconds)
    breaker_failures: int = Field(5, ge=1)
    breaker_cooldown: float = Field(30.0, gt=0)
    seed: int | None = None
    gguf_path: str | None = None
    chat_format: str | None = None  # llama-cpp-python only; None -> the model's template
    n_ctx: int = 4096  # llama-cpp-python only
    # llama-cpp-python only: generation threads; None -> the physical cores (budget.gguf_threads)
    n_threads: int | None = Field(None, ge=1)
    extra: dict[str, Any] = Field(default_factory=dict)  # more sampling params, sent as-is

    @property
    def is_gguf(self) -> bool:
        """True for an in-process llama-cpp-python judge."""
        return bool(self.gguf_path) or self.model.lower().endswith(".gguf")

    def api_key(self) -> str | None:
        """The key, read from the environment now (never stored on the config)."""
        return os.environ.get(self.api_key_env) or None

    @classmethod
    def from_env(cls, prefix: str = "UNIFIED_JUDGE") -> "JudgeConfig | None":
        """From UNIFIED_JUDGE_BASE_URL / _MODEL / _API_KEY_ENV; None when no model is set."""
        model = os.environ.get(f"{prefix}_MODEL")
        if not model:
            return None
        data: dict[str, Any] = {"model": model, "base_url": os.environ.get(f"{prefix}_BASE_URL") or None}
        if os.environ.get(f"{prefix}_API_KEY_ENV"):
            data["api_key_env"] = os.environ[f"{prefix}_API_KEY_ENV"]
        return cls(**data)


class EmbeddingConfig(_EndpointConfig):
    """``local`` (the packaged all-MiniLM-L6-v2, offline) or an OpenAI-compatible endpoint."""

    _section: ClassVar[str] = "embedding"

    kind: Literal["local", "openai"] = "local"
    model: str = "all-MiniLM-L6-v2"
    api_key_env: str = "OPENAI_API_KEY"
    batch_size: int = Field(64, ge=1)
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff_base: float = Field(0.5, ge=0)
    concurrency: int = Field(4, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)
    breaker_failures: int = Field(5, ge=1)
    breaker_cooldown: float = Field(30.0, gt=0)
    dimensions: int | None = None

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    @classmethod
    def parse(cls, value: "str | EmbeddingConfig | None", model: str | None = None) -> "EmbeddingConfig | None":
        """``"local"`` or a URL (``model`` then names the remote model) -> config."""
        if value is None or isinstance(value, EmbeddingConfig):
            return value
        if value.strip().lower() == "local":
            return cls(kind="local")
        if not value.startswith(("http://", "https://")):
            from unified.redact import looks_like_secret, redact_value

            # a URL without its scheme still carries its password (user:KEY@host): never echoed
            shown = (
                "a value that looks like a key (not shown)" if looks_like_secret(value) else repr(redact_value(value))
            )
            raise ValueError(f"embedding must be 'local' or an http(s) URL, got {shown}")
        return cls(kind="openai", base_url=value, model=model or DEFAULT_REMOTE_EMBEDDING_MODEL)

    @classmethod
    def from_env(cls) -> "EmbeddingConfig | None":
        """From UNIFIED_EMBEDDING (local|URL) and UNIFIED_EMBEDDING_MODEL; None when unset."""
        value = os.environ.get("UNIFIED_EMBEDDING")
        if not value:
            return None
        cfg = cls.parse(value, os.environ.get("UNIFIED_EMBEDDING_MODEL"))
        if cfg is not None and os.environ.get("UNIFIED_JUDGE_API_KEY_ENV"):  # validated, as every name is
            cfg = cls.model_validate({**cfg.model_dump(), "api_key_env": os.environ["UNIFIED_JUDGE_API_KEY_ENV"]})
        return cfg


class RunConfig(BaseModel):
    """The judge part of a run file: sections [judge], [judge2], [embedding]."""

    model_config = ConfigDict(extra="allow", hide_input_in_errors=True)

    judge: JudgeConfig | None = None
    judge2: JudgeConfig | None = None
    embedding: EmbeddingConfig | None = None


def load_run_config(path: str | Path) -> RunConfig:
    """Read a TOML (``.toml``) or YAML (``.yaml``/``.yml``) run file.

    Other top-level sections are kept (``extra``) for the runner to read.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise ValueError(f"{p}: run config must be .toml, .yaml or .yml")
    text = p.read_text(encoding="utf-8")
    if suffix == ".toml":
        import tomllib

        data = tomllib.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{p}: run config must be a mapping of sections")
    for section in ("judge", "judge2", "embedding"):
        try:
            _reject_literal_key(data.get(section), section)
        except ValueError as exc:
            raise ValueError(f"{p}: {exc}") from None
    emb = data.get("embedding")
    if isinstance(emb, str):  # embedding = "local" / a URL
        data["embedding"] = EmbeddingConfig.parse(emb)
    for section in ("judge", "judge2"):
        # a section may set only some fields (temperature, timeout...): the model can come
        # from a flag or the environment, field by field (unified.judge.resolve)
        if isinstance(data.get(section), dict) and "model" not in data[section]:
            data[section] = {**data[section], "model": UNSET_MODEL}
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise ValueError(f"{p}: {where}: {str(first.get('msg')).removeprefix('Value error, ')}") from None
