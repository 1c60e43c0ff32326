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

import logging
import re
import threading
from typing import Any, Iterable
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"

# names of query parameters / config keys that carry a credential
_SECRET_NAME = re.compile(
    r"(^|[_\-.])(api[_\-]?key|apikey|key|token|access[_\-]?token|refresh[_\-]?token|"
    r"id[_\-]?token|auth|authorization|secret|client[_\-]?secret|password|passwd|pwd|"
    r"signature|sig|x[_\-]amz[_\-]signature|x[_\-]amz[_\-]credential|credential|"
    r"session[_\-]?token|code)($|[_\-.])",
    re.I,
)
# config keys that merely *count* tokens or *name* a variable
_NOT_SECRET_NAME = re.compile(r"(_env$|^max_|_tokens$|^tokens$|^n_|_count$)", re.I)
# key-shaped strings, even when we were not told the exact key
_KEY_SHAPED = re.compile(r"(sk-[A-Za-z0-9_\-]{6,}|Bearer\s+[A-Za-z0-9._\-+/=]{4,})")
# a URL in free text (stops at whitespace, quotes and closing brackets)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{}]+")
# "user:password@host" without a scheme (a mistyped base URL): the password still goes
_BARE_USERINFO = re.compile(r"(?<![\w/@])[^\s/@:'\"<>()]+:[^\s/@'\"<>()]+@(?=[\w.\-\[])")


def is_secret_name(name: str) -> bool:
    """True for a query-parameter or config-key name that holds a credential."""
    name = str(name)
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.search(name)


def redact_url(url: str) -> str:
    """``url`` with userinfo and credential-like query values replaced by ``***``, and
    otherwise exactly as written: only the secret parts are replaced in the text, so
    ``sqlite:///x.db`` keeps its three slashes (``urlunsplit`` would drop the empty host's
    ``//``: ``sqlite:/x.db``).

    >>> redact_url("http://bob:s3cr3t@host:8000/v1?api_key=abc&model=m")
    'http://***@host:8000/v1?api_key=***&model=m'
    >>> redact_url("sqlite:////tmp/runs.db")
    'sqlite:////tmp/runs.db'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return _KEY_SHAPED.sub(MASK, url)
    out = url
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        out = out.replace(f"//{userinfo}@", f"//{MASK}@", 1)
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(is_secret_name(k) for k, _ in pairs):
            query = urlencode([(k, MASK if is_secret_name(k) else v) for k, v in pairs], safe="*")
            head, sep, tail = out.partition("?" + parts.query)
            out = head + "?" + query + tail if sep else out
    return out


def endpoint_of(url: str | None, default: str = "https://api.openai.com/v1") -> str:
    """Where a judge answers, as identity: scheme, host, port and path of ``url`` — no
    userinfo, no query (they may hold credentials and do not change who answers).

    >>> endpoint_of("http://bob:KEY@127.0.0.1:8080/v1/?api_key=K")
    'http://127.0.0.1:8080/v1'
    """
    parts = urlsplit(url or default)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, host + port, parts.path.rstrip("/"), "", ""))


def scrub(text: Any, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every URL redacted (``redact_url``), a ``user:password@`` without a
    scheme too, and every exact ``secrets`` value and key-shaped token replaced by ``***``."""
    out = str(text)
    for s in secrets:
        if s and len(s) >= 4:  # a one-letter "secret" would mangle every message
            out = out.replace(s, MASK)
    out = _URL_IN_TEXT.sub(_redact_match, out)
    out = _BARE_USERINFO.sub(MASK + "@", out)
    return _KEY_SHAPED.sub(MASK, out)


def _redact_match(m: re.Match) -> str:
    """A URL found in text, redacted; punctuation that ends a sentence or a label
    ("at http://h/v1?key=K: failed") is not part of it and is kept."""
    url = m.group(0)
    core = url.rstrip(".,:;!?")
    return redact_url(core) + url[len(core) :]


def one_line(text: Any, limit: int = 300, secrets: Iterable[str | None] = ()) -> str:
    """Scrubbed, whitespace-collapsed, then cut to ``limit`` characters (scrub first:
    truncating first could keep the head of a key)."""
    line = " ".join(scrub(text, secrets).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def redact_config(obj: Any) -> Any:
    """A copy of a config tree (dicts, lists, strings) safe to write anywhere: values of
    credential-named keys become ``***``, URLs in strings are redacted."""
    if isinstance(obj, dict):
        return {
            k: (
                MASK
                if is_secret_name(str(k)) and obj[k] not in (None, "") and not isinstance(obj[k], (int, float, bool))
                else redact_config(v)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [redact_config(v) for v in obj]
    if isinstance(obj, str):
        return scrub(obj)
    return obj


def redact_argv(argv: Iterable[str]) -> list[str]:
    """Command-line words with URLs and key-shaped tokens redacted (for resume hints)."""
    return [scrub(a) for a in argv]


def url_secrets(url: str | None) -> list[str]:
    """The credential values a URL carries: the password of its userinfo (the whole
    userinfo when it has no ``:``, as in ``https://TOKEN@host``), raw and percent-decoded,
    and the values of credential-named query parameters. Callers pass them to ``scrub``
    so a key is caught even where it appears without its URL. A user *name* is not a
    secret (scrubbing "user" everywhere would mangle every message)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        _user, colon, password = userinfo.partition(":")
        for piece in (userinfo, password) if colon else (userinfo,):
            found += [piece, unquote(piece)]
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if is_secret_name(name):
            found.append(value)
    # longest first: scrubbing "user:KEY" before "KEY" leaves no half-masked pair
    return sorted({s for s in found if s}, key=len, reverse=True)


# ---------------------------------------------------------------- log records

_known_secrets: set[str] = set()
_known_lock = threading.Lock()


def remember_secret(*values: str | None) -> None:
    """Scrub these exact values from every log record ``RedactingFilter`` sees (the API
    key a client read, the credentials in its URL). Held in memory only."""
    with _known_lock:
        _known_secrets.update(v for v in values if v and len(v) >= 4)


class RedactingFilter(logging.Filter):
    """Rewrites a log record in place so that its message (and its traceback) carry no
    URL credential, no key-shaped token and no remembered secret. Installed by
    ``redact_logs`` on the HTTP client libraries' loggers and on ``unified.*``: httpx
    and openai log request URLs, which may hold ``user:KEY@`` or ``?api_key=``."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _known_lock:
            secrets = sorted(_known_secrets, key=len, reverse=True)
        try:
            message = record.getMessage()
        except Exception:
            return True
        clean = scrub(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info), secrets)
        return True


_FILTER = RedactingFilter()
# top-level logger names that start like these get the filter: ``httpx`` also covers the
# ``httpx2`` that recent openai releases use (their httpcore trace lines carry no URL)
LOG_PREFIXES = ("httpx", "httpcore", "openai", "unified")


def redact_logs(prefixes: Iterable[str] = LOG_PREFIXES) -> None:
    """Install ``RedactingFilter`` on every existing logger whose top-level name starts
    with one of ``prefixes`` (a filter on a logger sees only that logger's own records,
    so each one gets it). Idempotent; call it after importing the client library, whose
    loggers then exist."""
    prefixes = tuple(prefixes)
    names = [n for n in list(logging.Logger.manager.loggerDict) if n.split(".")[0].startswith(prefixes)]
    for name in {*names, *prefixes}:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


__all__ = [
    "LOG_PREFIXES",
    "MASK",
    "RedactingFilter",
    "is_secret_name",
    "one_line",
    "redact_argv",
    "redact_config",
    "redact_logs",
    "redact_url",
    "remember_secret",
    "scrub",
    "url_secrets",
]
