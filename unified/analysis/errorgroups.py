"""Failed tasks grouped by cause: 28 "connection refused" lines are one cause, not 28 rows.

A task's error text names the task (the sample id, a row number, a field's value); the
*cause* is that text with the task-specific parts masked, so that every task that failed
for the same reason gets the same cause:

- the sample id where the text quotes it (``sample 'q3'`` -> ``sample '<sample>'``);
- row and position numbers: ``data.jsonl:11:``, ``row 11``, ``line 4``, ``column 30``,
  ``char 29``, list indices ``[2]``;
- quoted values (``got 'abc'``, ``"the short answer"``); quoted *names* right after the
  word field / metric / backend / parameter / column / option / key / model stay, since a
  missing ``'reference'`` and a missing ``'response'`` are different causes (and so does
  such a name's alternative: ``field 'relevant_ids' (or 'graded_relevance')``);
- measured numbers after ``raw=``, ``returned``, ``got``.

A judge failure is its own cause wherever it surfaced: when the text holds the judge
layer's clause (``chat model=M at URL: connection failed (...)``), the cause is that
clause, so the native, ragas and deepeval tasks that one dead endpoint broke count
together, and ``backends``/``metrics`` say where it struck. An unreachable judge is one
cause whether a task met it before or after the circuit breaker opened: both read
``judge at URL (model M) refused the connection`` (or ``did not answer within 60s``).

``group_errors`` streams: memory grows with the number of causes, not of errors. It does
not deduplicate task lines; a caller reading a run folder applies the last-wins rule first
(``unified.report`` does).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from unified.scores import is_ok

SAMPLE = "<sample>"
NUM = "<n>"
VALUE = "…"

# the judge layer's "what" prefix (unified.judge: "chat model=M at URL", "embeddings model=M
# at URL") up to the end of that judge's message (a dual-judge text joins two with "; B:")
_JUDGE_CLAUSE = re.compile(r"\b(?:chat|embeddings?) model=\S+ at \S+?: [^;]*")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
_LOCATION = re.compile(r"^(\S+?):\d+:")  # "data.jsonl:11: ..."
_POSITIONS = re.compile(r"\b(row|line|column|char|position|index|item)( ?)\d+\b", re.I)
_INDEX = re.compile(r"\[\d+\]")
_MEASURED = re.compile(r"\b(raw=|returned |got |value )(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|nan|inf)\b", re.I)
# a quote that opens after a non-word character and closes before one ("doesn't" is no quote)
_QUOTED = re.compile(r"""(?<![\w])(['"“])(.{0,300}?)(['"”])(?![\w])""")
_NAME_WORDS = (
    "field",
    "metric",
    "metrics",
    "backend",
    "parameter",
    "column",
    "option",
    "key",
    "model",
    "format",
    "extra",
    "env",
    "variable",
    "file",
)
_IDENT = re.compile(r"^[A-Za-z_][\w.@\-]*(\[[^\]]*\])?$")
# "field 'relevant_ids' (or 'graded_relevance')": the alternative is a name too
_ALTERNATIVE = re.compile(r"\b(?:%s) (['\"])[A-Za-z_][\w.@\-]*\1 \(or $" % "|".join(_NAME_WORDS), re.I)


# an unreachable judge, as the breaker says it and as a single failed call says it
_BREAKER = re.compile(r"\bjudge at (\S+) \(model ([^)]+)\) (.+?) \(\d+ attempts in a row")
_UNREACHABLE = re.compile(
    r"\b(?:chat|embeddings?) model=(\S+) at (\S+?): (?:connection failed \(|"
    r"timed out after (\S+?)s\b)"
)


def _unreachable(text: str) -> str | None:
    """``judge at URL (model M) REASON`` when ``text`` says a judge could not be reached."""
    m = _BREAKER.search(text)
    if m:
        return f"judge at {m.group(1)} (model {m.group(2)}) {m.group(3)}"
    m = _UNREACHABLE.search(text)
    if m:
        reason = f"did not answer within {m.group(3)}s" if m.group(3) else _parenthesised(text, m.end())
        return f"judge at {m.group(2)} (model {m.group(1)}) {reason}"
    return None


def _parenthesised(text: str, start: int) -> str:
    """The text from ``start`` up to the parenthesis that closes the one opened just
    before it (a cause may hold parentheses of its own)."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start:]


def _balanced(clause: str) -> str:
    """``clause`` without the closing parentheses it never opened: a judge clause cut out
    of ``judge B failed (chat model=M at URL: HTTP 500 (detail)); …`` ends in the outer
    one's ``)``."""
    depth, keep = 0, len(clause)
    for i, c in enumerate(clause):
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                keep = i
                break
            depth -= 1
    return clause[:keep].rstrip()


def cause_of(error: str, sample_id: str | None = None) -> str:
    """The cause of one failed task: ``error`` with its task-specific parts masked (see
    the module docstring). Deterministic; two tasks failing for one reason give equal
    causes."""
    text = " ".join(str(error).split())
    dead = _unreachable(text)
    if dead:
        return dead
    judge = _JUDGE_CLAUSE.search(text)
    if judge:
        text = _balanced(judge.group(0).rstrip())
    urls: list[str] = []

    def stash(m: re.Match[str]) -> str:  # URLs hold dots and digits that are no values
        urls.append(m.group(0))
        return f"\x00{len(urls) - 1}\x00"

    text = _URL.sub(stash, text)
    text = _LOCATION.sub(lambda m: f"{m.group(1)}:{NUM}:", text)
    text = _QUOTED.sub(lambda m: _mask_quoted(m, text, sample_id), text)
    if sample_id and len(sample_id) >= 6:  # long ids are safe to mask unquoted as well
        text = text.replace(sample_id, SAMPLE)
    text = _POSITIONS.sub(lambda m: f"{m.group(1)}{m.group(2)}{NUM}", text)
    text = _INDEX.sub(f"[{NUM}]", text)
    text = _MEASURED.sub(lambda m: f"{m.group(1)}{NUM}", text)
    return re.sub("\x00(\\d+)\x00", lambda m: urls[int(m.group(1))], text)


def _mask_quoted(m: re.Match[str], text: str, sample_id: str | None) -> str:
    """A quoted span: the sample id -> <sample>; a name after a naming word -> kept
    (its list index masked); anything else -> a masked value."""
    open_q, body, close_q = m.group(1), m.group(2), m.group(3)
    if sample_id is not None and body == sample_id:
        return f"{open_q}{SAMPLE}{close_q}"
    before = text[max(0, m.start() - 16) : m.start()].split()
    named = bool(before) and before[-1].lower().rstrip(":") in _NAME_WORDS
    if (named or _ALTERNATIVE.search(text[max(0, m.start() - 80) : m.start()])) and _IDENT.match(body):
        return f"{open_q}{_INDEX.sub(f'[{NUM}]', body)}{close_q}"
    return f"{open_q}{VALUE}{close_q}"


def _field(d: Any, name: str, default: Any = None) -> Any:
    return d.get(name, default) if isinstance(d, Mapping) else getattr(d, name, default)


def group_errors(score_dicts: Iterable[Any]) -> list[dict[str, Any]]:
    """Failed tasks grouped by ``cause_of``, most frequent first (ties by cause).

    ``score_dicts``: Score JSON dicts (or Score objects); those without an error and with a
    value are skipped. Each group: ``cause``, ``count``, ``example`` (the first task seen:
    ``sample_id``, ``metric``, ``backend``, the full ``error``, ``row_error``, its input
    ``row`` and ``sample_hash`` when the line has them),
    ``backends`` and ``metrics`` (sorted), and ``row_errors`` (how many of them are input
    rows that never became samples).
    """
    groups: dict[str, dict[str, Any]] = {}
    for d in score_dicts:
        error = _field(d, "error")
        if is_ok(error, _field(d, "value")):
            continue
        error = error or "no value"
        sid = _field(d, "sample_id")
        cause = cause_of(error, sid)
        g = groups.get(cause)
        if g is None:
            g = groups[cause] = {
                "cause": cause,
                "count": 0,
                "row_errors": 0,
                "backends": set(),
                "metrics": set(),
                "example": {
                    "sample_id": sid,
                    "metric": _field(d, "metric"),
                    "backend": _field(d, "backend"),
                    "error": error,
                    "row_error": bool(_field(d, "row_error", False)),
                    "row": _field(d, "row"),
                    "sample_hash": _field(d, "sample_hash"),
                    "pos": _field(d, "pos"),
                },
            }
        g["count"] += 1
        g["row_errors"] += bool(_field(d, "row_error", False))
        g["backends"].add(_field(d, "backend"))
        g["metrics"].add(_field(d, "metric"))
    out = sorted(groups.values(), key=lambda g: (-g["count"], g["cause"]))
    for g in out:
        g["backends"] = sorted(str(b) for b in g["backends"])
        g["metrics"] = sorted(str(m) for m in g["metrics"])
    return out
