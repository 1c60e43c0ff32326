"""Secrets never leave: one place that removes credentials from URLs, text and configs.

What counts as a secret:

- the password (and the user name) in a URL's userinfo: ``http://user:KEY@host/v1``;
- the value of a URL query parameter whose name looks like a credential (``api_key``,
  ``key``, ``token``, ``access_token``, ``secret``, ``password``, ``signature``, ``sig``,
  ``auth``, ``code``, …): ``?api_key=KEY``;
- key-shaped tokens in free text (``sk-…``, ``Bearer …``) and any exact secret the caller
  names (the API key a client read from the environment);
- in a config mapping, the value of a key whose name looks like a credential — except
  ``*_env`` keys (they hold the *name* of an environment variable, not its value) and
  token *counts* such as ``max_tokens`` (a number is not a secret).

Order matters: ``one_line`` scrubs first and truncates afterwards, so a key that
straddles the cut cannot leak its head.
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

# names of query parameters / config keys that carry a credential
_SECRET_NAME = re.compile(
    r"(^|[_\-.])(api[_\-]?key|apikey|key|token|access[_\-]?token|refresh[_\-]?token|"
    r"id[_\-]?token|auth|authorization|secret|client[_\-]?secret|password|passwd|pwd|"
    r"signature|sig|x[_\-]amz[_\-]signature|x[_\-]amz[_\-]credential|credential|"
    r"session[_\-]?token|code)($|[_\-.])", re.I)
# config keys that merely *count* tokens or *name* a variable
_NOT_SECRET_NAME = re.compile(r"(_env$|^max_|_tokens$|^tokens$|^n_|_count$)", re.I)
# key-shaped strings, even when we were not told the exact key
_KEY_SHAPED = re.compile(r"(sk-[A-Za-z0-9_\-]{6,}|Bearer\s+[A-Za-z0-9._\-+/=]{4,})")
# a URL in free text (stops at whitespace, quotes and closing brackets)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{}]+")


def is_secret_name(name: str) -> bool:
    """True for a query-parameter or config-key name that holds a credential."""
    name = str(name)
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.search(name)


def redact_url(url: str) -> str:
    """``url`` with userinfo and credential-like query values replaced by ``***``.

    >>> redact_url("http://bob:s3cr3t@host:8000/v1?api_key=abc&model=m")
    'http://***@host:8000/v1?api_key=***&model=m'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return _KEY_SHAPED.sub(MASK, url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(k) for k, _ in pairs):
            query = urlencode([(k, MASK if is_secret_name(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: Any, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every URL redacted (``redact_url``), every exact ``secrets`` value and
    every key-shaped token replaced by ``***``."""
    out = str(text)
    for s in secrets:
        if s and len(s) >= 4:  # a one-letter "secret" would mangle every message
            out = out.replace(s, MASK)
    out = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), out)
    return _KEY_SHAPED.sub(MASK, out)


def one_line(text: Any, limit: int = 300, secrets: Iterable[str | None] = ()) -> str:
    """Scrubbed, whitespace-collapsed, then cut to ``limit`` characters (scrub first:
    truncating first could keep the head of a key)."""
    line = " ".join(scrub(text, secrets).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def redact_config(obj: Any) -> Any:
    """A copy of a config tree (dicts, lists, strings) safe to write anywhere: values of
    credential-named keys become ``***``, URLs in strings are redacted."""
    if isinstance(obj, dict):
        return {k: (MASK if is_secret_name(str(k)) and obj[k] not in (None, "") and not isinstance(obj[k], (int, float, bool))
                    else redact_config(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_config(v) for v in obj]
    if isinstance(obj, str):
        return scrub(obj)
    return obj


def redact_argv(argv: Iterable[str]) -> list[str]:
    """Command-line words with URLs and key-shaped tokens redacted (for resume hints)."""
    return [scrub(a) for a in argv]


__all__ = ["MASK", "is_secret_name", "one_line", "redact_argv", "redact_config", "redact_url", "scrub"]
