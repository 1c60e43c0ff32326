"""The JSON values of a trace file, whatever way they were written: one document
(``{"resourceSpans": …}``, a list, ``{"data": [...]}``), JSON Lines (the Collector's file
exporter, span JSONL), or objects one after another, pretty-printed (what the
OpenTelemetry SDK's ``ConsoleSpanExporter`` prints by default).

``values(path)`` yields ``(line, value)``; text that is not JSON becomes a ``RowError``
for its line and reading resumes at the next line (one broken line spoils only itself).
``first_value(path)`` parses only the file's beginning (1 MB), for detection.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unified.data.rowerror import RowError

_BOM = "\ufeff"
_HEAD = 1 << 20
_DECODER = json.JSONDecoder()
_FIRST_KEY = re.compile(r'\{\s*"([A-Za-z_]+)"')


def read_text(path: Path) -> str:
    """The file's text (undecodable bytes kept as surrogates: the Sample that holds one
    is a row error naming the byte and the field)."""
    text = path.read_bytes().decode("utf-8", "surrogateescape")
    return text[1:] if text.startswith(_BOM) else text


def values(path: Path) -> Iterator[tuple[int, Any]]:
    """(1-based line, JSON value or RowError) for every value in the file."""
    text = read_text(path)
    try:
        yield 1, json.loads(text)
        return
    except (ValueError, RecursionError):
        pass
    pos, line, counted = 0, 1, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            value, pos = _DECODER.raw_decode(text, pos)
            yield line, value
        except (ValueError, RecursionError) as e:
            # the column where the parser stopped, on this line (a JSONDecodeError knows it)
            where = f" (column {e.colno})" if isinstance(e, json.JSONDecodeError) else ""
            yield line, RowError(path.name, line, None, f"not JSON: {getattr(e, 'msg', e)}{where}")
            nl = text.find("\n", pos)
            if nl < 0:
                return
            pos = nl + 1


def next_line_values(path: Path, limit: int = 8) -> Iterator[Any]:
    """The JSON values of the first lines of the file's first megabyte that parse as JSON
    (at most ``limit`` lines looked at): a file whose first line is a fragment — the tail
    of a rotated log, a line cut by a crash — still shows what its other lines are."""
    with path.open("rb") as f:
        head = f.read(_HEAD).decode("utf-8", "replace").lstrip(_BOM)
    for line in head.splitlines()[:limit]:
        try:
            yield json.loads(line)
        except (ValueError, RecursionError):
            continue


def first_value(path: Path) -> Any:
    """The file's first JSON value (the first element of a list), parsed from its first
    megabyte; ``{"<key>": None}`` when that value is bigger (only its first key is
    known); None when the file does not begin with JSON."""
    with path.open("rb") as f:
        head = f.read(_HEAD).decode("utf-8", "replace").lstrip(_BOM).lstrip()
    if head.startswith("["):
        head = head[1:].lstrip()
    try:
        return _DECODER.raw_decode(head)[0]
    except (ValueError, RecursionError):
        m = _FIRST_KEY.match(head)
        return {m.group(1): None} if m and len(head) >= _HEAD - 8 else None
