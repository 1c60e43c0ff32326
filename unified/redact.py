"""Secrets never leave: one place that removes credentials from URLs, text and configs.

What counts as a secret:

- the password (and the user name) in a URL's userinfo: ``http://user:KEY@host/v1``,
  whatever characters the password holds (``http://u:SEC RET@host``, ``u:a/b#c@host``);
- the value of a URL parameter whose name looks like a credential (``api_key``, ``key``,
  ``token``, ``access_token``, ``secret``, ``password``, ``signature``, ``sig``, ``auth``,
  ``code``, …) in the query (``?api_key=KEY``), in a path segment (``/v1;api_key=KEY``)
  or in the fragment (``#access_token=KEY``); a fragment that is not a plain anchor is
  masked whole (it is never sent to a server, so it identifies nothing);
- key-shaped tokens in free text (``sk-…``, ``Bearer …``) and any exact secret the caller
  names (the API key a client read from the environment);
- a value given where a *name* belongs (``--api-key-env``) that looks like a key
  (``looks_like_secret``: a long token mixing letters and digits, or cases) — never echoed;
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
from typing import Any, Iterable, NamedTuple
from urllib.parse import unquote

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
# "scheme://user:pass word@host" in free text: a password with a space or two
_SPACED_USERINFO = re.compile(
    r"\b([A-Za-z][A-Za-z0-9+.\-]*://)([^\s/@'\"<>]*:[^\s/@'\"<>]*"
    r"(?: [^\s/@'\"<>]+){1,2})@(?=[\w.\-\[])"
)
# "user:password@host" without a scheme (a mistyped base URL): the password still goes
_BARE_USERINFO = re.compile(r"(?<![\w/@])[^\s/@:'\"<>()]+:[^\s/@'\"<>()]+@(?=[\w.\-\[])")


# a token's pieces: cut at the separators names and paths are made of
_PIECES = re.compile(r"[^_\-./\s]+")


def looks_like_secret(text: Any) -> bool:
    """True for a value that may be a credential, so that it is never printed: key-shaped
    (``sk-…``, ``Bearer …``), a URL that carries credentials (``url_secrets``), or a token —
    a piece of 16 or more characters (cut at ``_``, ``-``, ``.``, ``/`` and spaces) that mixes
    letters with digits or upper with lower case, as generated keys do
    (``3f9a…`` hex, ``AIzaSy…``, ``gsk_…``). A variable's name is words in one case
    (``OPENAI_API_KEY``, ``AZURE_OPENAI_KEY_2024``, ``my_judge_key``) and is not one.

    >>> [looks_like_secret(x) for x in ("OPENAI_API_KEY", "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "hf_AbCdEfGhIjKlMnOpQrSt")]
    [False, True, True]
    """
    text = str(text)
    if _KEY_SHAPED.search(text) or url_secrets(text.strip()):
        return True
    for piece in _PIECES.findall(text):
        if len(piece) < 16:
            continue
        letters = [c for c in piece if c.isalpha()]
        digits = any(c.isdigit() for c in piece)
        mixed_case = any(c.isupper() for c in letters) and any(c.islower() for c in letters)
        if (letters and digits) or mixed_case:
            return True
    return False


def is_secret_name(name: str) -> bool:
    """True for a query-parameter or config-key name that holds a credential."""
    name = str(name)
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.search(name)


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$", re.S)
# what may follow a userinfo's "@": a host name or [IPv6], an optional port, then the path
_HOST_AFTER = re.compile(r"^(?:\[[^\]]*\]|[\w.\-]+)(?::\d*)?(?=$|[/?#;])")
# a fragment that is a plain anchor (``#install``), not a parameter list or a token
_ANCHOR = re.compile(r"^[A-Za-z][\w\-.]{0,23}$")


class UrlParts(NamedTuple):
    """A URL cut where a secret can hide: ``scheme://userinfo@host/path;params?query#fragment``.
    ``userinfo`` is None when there is no ``@`` before the host."""

    scheme: str
    userinfo: str | None
    host: str
    path: str
    query: str | None
    fragment: str | None


def split_url(url: str) -> UrlParts | None:
    """``url`` cut into its parts, or None when it does not start with ``scheme://``.

    Unlike ``urllib.parse.urlsplit`` the userinfo may hold any character a careless user
    puts in a password (space, ``/``, ``#``, ``?``): it ends at the last ``@`` that is
    followed by a host name — when what comes before that ``@`` is a plain userinfo (no
    ``/``, ``?`` or ``#``) or starts with ``user:`` followed by something that is not a
    port number."""
    m = _SCHEME.match(url)
    if m is None:
        return None
    scheme, rest = m.group(1), m.group(2)
    userinfo = None
    for at in [i for i, c in enumerate(rest) if c == "@"][::-1]:
        if _HOST_AFTER.match(rest[at + 1 :]) and _is_userinfo(rest[:at]):
            userinfo, rest = rest[:at], rest[at + 1 :]
            break
    cut = min([i for i in (rest.find(c) for c in "/?#") if i >= 0], default=len(rest))
    host, rest = rest[:cut], rest[cut:]
    rest, hash_, fragment = rest.partition("#")
    path, qmark, query = rest.partition("?")
    return UrlParts(scheme, userinfo, host, path, query if qmark else None, fragment if hash_ else None)


def _is_userinfo(text: str) -> bool:
    if not any(c in text for c in "/?#"):
        return True
    user, colon, after = text.partition(":")
    port = re.match(r"^\d*(?=[/?#]|$)", after)
    return bool(colon) and not any(c in user for c in "/?#") and port is None


def _mask_params(text: str, sep: str, found: list[str] | None = None) -> str:
    """``a=1&api_key=K`` -> ``a=1&api_key=***`` (values of credential names; ``found``
    collects the values, raw and percent-decoded)."""
    out = []
    for item in text.split(sep):
        name, eq, value = item.partition("=")
        if eq and is_secret_name(unquote(name)) and value:
            if found is not None:
                found += [value, unquote(value), unquote(value.replace("+", " "))]
            item = f"{name}={MASK}"
        out.append(item)
    return sep.join(out)


def _mask_path(path: str, found: list[str] | None = None) -> str:
    """Path parameters (``/v1;api_key=K``) masked by name, segment by segment."""
    if ";" not in path:
        return path
    return "/".join(
        seg if ";" not in seg else seg.split(";", 1)[0] + ";" + _mask_params(seg.split(";", 1)[1], ";", found)
        for seg in path.split("/")
    )


def _mask_fragment(fragment: str, found: list[str] | None = None) -> str:
    """A fragment is never sent to a server, so it identifies nothing: parameters are
    masked by name (``#access_token=K&x=1``); anything else but a short anchor goes whole."""
    if "=" in fragment:
        return _mask_params(fragment, "&", found)
    if _ANCHOR.match(fragment) and not _KEY_SHAPED.search(fragment):
        return fragment
    if found is not None:
        found.append(fragment)
    return MASK


def redact_url(url: str) -> str:
    """``url`` with every part that can carry a credential masked: the userinfo (whatever
    characters the password holds), credential-named query parameters, path parameters
    (``;api_key=``) and fragment parameters (``#access_token=``), and a fragment that is not
    a plain anchor.

    Everything else stays exactly as written (``sqlite:///x.db`` keeps its three slashes).

    >>> redact_url("http://bob:s3cr3t@host:8000/v1;key=k?api_key=abc&model=m#token=t")
    'http://***@host:8000/v1;key=***?api_key=***&model=m#token=***'
    >>> redact_url("sqlite:////tmp/runs.db")
    'sqlite:////tmp/runs.db'
    """
    parts = split_url(url)
    if parts is None:
        return _KEY_SHAPED.sub(MASK, url)
    out = f"{parts.scheme}://" + (MASK + "@" if parts.userinfo is not None else "") + parts.host
    out += _mask_path(parts.path)
    if parts.query is not None:
        out += "?" + _mask_params(parts.query, "&")
    if parts.fragment is not None:
        out += "#" + _mask_fragment(parts.fragment)
    return out


#: query parameters that choose who answers behind one URL (a gateway's deployment or
#: model); the rest (``api-version``, a signed URL's dates) do not, and may rotate
_IDENTITY_PARAMS = frozenset(
    {"deployment", "deployment_id", "deployment_name", "model", "model_id", "model_name", "engine", "variant"}
)


def endpoint_of(url: str | None, default: str = "https://api.openai.com/v1") -> str:
    """Where a judge answers, as identity: scheme, host, port and path of ``url``, and the
    query parameters that choose the model behind it (``_IDENTITY_PARAMS``: a gateway's
    ``?deployment=large``), sorted — no userinfo, no path parameters, no other query
    parameter (they may hold credentials, or rotate like a signed URL's dates), no
    fragment.

    >>> endpoint_of("http://bob:KEY@127.0.0.1:8080/v1/;key=K?api_key=K#t")
    'http://127.0.0.1:8080/v1'
    >>> endpoint_of("https://gw.example/v1?deployment=large&api-version=2024-06-01")
    'https://gw.example/v1?deployment=large'
    """
    parts = split_url(url or default)
    if parts is None:
        return redact_url(url or default)
    path = "/".join(seg.split(";", 1)[0] for seg in parts.path.split("/")).rstrip("/")
    kept = sorted(
        (unquote(name), unquote(value))
        for name, _, value in (item.partition("=") for item in (parts.query or "").split("&") if item)
        if unquote(name).lower().replace("-", "_") in _IDENTITY_PARAMS
    )
    query = "?" + "&".join(f"{name}={value}" for name, value in kept) if kept else ""
    return f"{parts.scheme}://{parts.host.lower()}{path}{query}"


def scrub(text: Any, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every URL redacted (``redact_url``), a ``user:password@`` without a
    scheme too, and every exact ``secrets`` value and key-shaped token replaced by ``***``."""
    out = str(text)
    for s in secrets:
        if s and len(s) >= 4:  # a one-letter "secret" would mangle every message
            out = out.replace(s, MASK)
    out = _SPACED_USERINFO.sub(lambda m: m.group(1) + MASK + "@", out)
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
        return redact_value(obj)
    return obj


def redact_value(text: str) -> str:
    """One value (a config string, a command-line word): a whole URL is redacted as one
    URL (``redact_url``: its password may hold spaces), anything else as free text."""
    if _SCHEME.match(text.strip()):
        return _KEY_SHAPED.sub(MASK, redact_url(text.strip()))
    return scrub(text)


def redact_argv(argv: Iterable[str]) -> list[str]:
    """Command-line words with URLs and key-shaped tokens redacted (for resume hints); a
    word is one value (``--base-url=URL`` too), whatever spaces it holds."""
    out = []
    for word in argv:
        flag, eq, value = word.partition("=")
        if word.startswith("--") and eq and " " not in flag:
            out.append(f"{flag}={redact_value(value)}")
        else:
            out.append(redact_value(word))
    return out


def url_secrets(url: str | None) -> list[str]:
    """The credential values a URL carries: the password of its userinfo (the whole
    userinfo when it has no ``:``, as in ``https://TOKEN@host``), raw and percent-decoded,
    and the values of credential-named query, path and fragment parameters (and a fragment
    that is no plain anchor). Callers pass them to ``scrub`` so a key is caught even where
    it appears without its URL. A user *name* is not a secret (scrubbing "user" everywhere
    would mangle every message)."""
    parts = split_url(url) if url else None
    if parts is None:
        return []
    found: list[str] = []
    if parts.userinfo is not None:
        _user, colon, password = parts.userinfo.partition(":")
        for piece in (parts.userinfo, password) if colon else (parts.userinfo,):
            found += [piece, unquote(piece)]
    _mask_path(parts.path, found)
    if parts.query is not None:
        _mask_params(parts.query, "&", found)
    if parts.fragment is not None:
        _mask_fragment(parts.fragment, found)
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
    "UrlParts",
    "endpoint_of",
    "is_secret_name",
    "looks_like_secret",
    "one_line",
    "redact_argv",
    "redact_config",
    "redact_logs",
    "redact_url",
    "redact_value",
    "remember_secret",
    "scrub",
    "split_url",
    "url_secrets",
]
