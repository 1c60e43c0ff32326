"""File readers: each yields ``(row, record | RowError)`` for one file format, never
stopping at a bad row.

- JSONL (``.jsonl``, ``.ndjson``): line by line, in bytes, so one undecodable byte or one
  broken line spoils only its own row. A BOM at the start is skipped. ``row`` is the line.
- JSON (``.json``): a list of records, an object whose one list-valued key holds them
  (``{"results": [...]}``), or one record. A ``.json`` file holding JSON Lines is read as
  JSONL. A list that does not parse as a whole (a broken element, or one nested too deep
  for Python's parser) is read element by element. ``row`` is the position in the list.
- CSV (``.csv``) and TSV (``.tsv``, ``.tab``): streamed with the ``csv`` module; a BOM is
  skipped; ``row`` is the first physical line of the row (a quoted cell may span lines).
- Parquet: record batch by record batch; ``row`` is the position.

A header (CSV / TSV, a Parquet schema, a DataFrame's columns) that names one column twice
is a fault of the whole file (``check_columns``): ``ValueError``, never the last column
silently winning.

Bytes that are not UTF-8 become a row error naming the byte and the field; the text is
decoded with ``errors="surrogateescape"`` so the rest of the row can still be located.
"""

from __future__ import annotations

import csv
import json
import re
import stat
import sys
from pathlib import Path
from typing import Any, Iterator

from unified.data.rowerror import RowError
from unified.sample import ALIASES, MAX_DEPTH

FORMATS = ("jsonl", "json", "csv", "tsv", "parquet")
SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
TABULAR = ("csv", "tsv", "parquet")
_BOM = b"\xef\xbb\xbf"
# a string token, or one structural character: enough to find JSON values' bounds without
# parsing them (and without recursion, whatever the depth)
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")

# a CSV cell may hold a whole retrieved context; the default 128 kB limit is too small
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))

Rows = Iterator[tuple[int, Any]]


def format_of(path: Path, fmt: str | None) -> str:
    """The file format: ``fmt`` (a name or a suffix) or the path's suffix."""
    if fmt:
        f = fmt.lower().lstrip(".")
        f = SUFFIXES.get("." + f, f)
        if f not in FORMATS:
            raise ValueError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
        return f
    by_suffix = SUFFIXES.get(path.suffix.lower())
    if by_suffix is None:
        raise ValueError(
            f"{path.name}: cannot tell the format from the suffix "
            f"'{path.suffix}'; name it with fmt= (on the command line --from): one of {', '.join(FORMATS)}"
        )
    return by_suffix


def read_file(path: Path, fmt: str) -> Rows:
    """(row, raw record or RowError) for every row of ``path`` in format ``fmt``. Raises
    ``ValueError`` for a text file in UTF-16 or UTF-32 (``wide_text``)."""
    if fmt != "parquet" and (wide := wide_text(path)) is not None:
        raise ValueError(f"{path.name} is {wide}: save it as UTF-8")
    if fmt == "jsonl":
        return _iter_jsonl(path)
    if fmt == "json":
        return _iter_json(path)
    if fmt in ("csv", "tsv"):
        return _iter_csv(path, "\t" if fmt == "tsv" else ",")
    return _iter_parquet(path)


# ---------------------------------------------------------------- decoding


_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def wide_text(path: Path) -> str | None:
    """What a text file in UTF-16 or UTF-32 is (Excel's "Unicode Text" export, PowerShell's
    ``>``), or None. Read as UTF-8 each of its lines failed with a wrong diagnosis (invalid
    JSON, "looks like Latin-1"), and the counts were wrong: say it once instead. Told by
    its byte-order mark, or, without one, by NUL bytes between its first characters. Only
    a regular file is looked at: reading the head of a pipe would take its first rows."""
    if not stat.S_ISREG(path.stat().st_mode):
        return None
    with path.open("rb") as f:
        head = f.read(256)
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            return f"{name} (it starts with the byte-order mark {bom.hex(' ').upper()})"
    if len(head) >= 8 and head.count(0) * 4 >= len(head):
        return "UTF-16 or UTF-32 (NUL bytes between its characters)"
    return None


def _decode(data: bytes) -> tuple[str, UnicodeDecodeError | None]:
    """Text of ``data`` and the first decoding error (None when it is clean UTF-8)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return data.decode("utf-8", "surrogateescape"), e


def _bad_byte_error(source: str, row: int, found: tuple[str | None, int], where: str) -> RowError:
    """The row error for undecodable bytes (read as U+DC80–U+DCFF): names field and byte."""
    field, byte = found
    return RowError(
        source,
        row,
        field,
        f"byte 0x{byte:02X} {where}is not UTF-8; save the file as UTF-8 (it looks like Latin-1 or Windows-1252)",
    )


def _escaped_byte(record: Any) -> tuple[str | None, int] | None:
    """(field path, byte) of the first undecodable byte in ``record``, or None."""
    stack: list[tuple[Any, str | None]] = [(record, None)]
    while stack:
        v, where = stack.pop()
        if isinstance(v, dict):
            for k, item in v.items():
                m = _ESCAPED_BYTE.search(str(k))
                if m:
                    return _clean(str(k)), ord(m.group()) - 0xDC00
                stack.append((item, str(k) if where is None else f"{where}.{k}"))
        elif isinstance(v, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(v))
        elif isinstance(v, str):
            m = _ESCAPED_BYTE.search(v)
            if m:
                return where, ord(m.group()) - 0xDC00
    return None


def _clean(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ---------------------------------------------------------------- JSON values


class RepeatedKey(ValueError):
    """An object of a JSON value names one key twice (``{"response": "a", "response":
    "b"}``). Python's parser keeps the last value without a word, so the first would be
    lost: the row is an error naming the key (the whole file, for a .json document that
    is not a list). ``msg`` as ``JSONDecodeError`` has one, for the file-level message."""

    def __init__(self, key: str):
        self.key = key
        self.msg = f"key '{_clean(key)}' appears twice in one object; the last would silently win"
        super().__init__(self.msg)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The parser's object hook: a dict, or ``RepeatedKey``. Measured on 100,000 JSONL
    rows: within the noise of the read (about 0.05 s of 6.4 CPU seconds)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))  # type: ignore[func-returns-value]
    return obj


#: ``json.loads`` that refuses a repeated key (``RepeatedKey``); every sample file is parsed with it
loads = json.JSONDecoder(object_pairs_hook=_unique_keys).decode


def _parse(text: str, source: str, row: int) -> Any:
    """One JSON value, or the RowError saying why it is not one."""
    try:
        return loads(text)
    except json.JSONDecodeError as e:
        return RowError(source, row, None, f"invalid JSON: {e.msg} (char {e.pos})")
    except RepeatedKey as e:
        return RowError(source, row, e.key, e.msg + ": keep one")
    except RecursionError:
        return RowError(source, row, _deep_field(text), f"nested more than {MAX_DEPTH} levels deep")
    except ValueError as e:  # an integer of more than 4,300 digits
        return RowError(source, row, None, f"invalid JSON: {json_value_error(e)}")


def json_value_error(e: BaseException) -> str:
    """A JSON reader's ValueError in the user's terms. Python refuses integers of more than
    4,300 digits (``sys.int_info.default_max_str_digits``) with advice for programmers —
    call ``sys.set_int_max_str_digits()`` — that a user of the CLI cannot follow: no field
    of a sample holds such a number, so it is a bad value, said as one."""
    text = str(e)
    m = _TOO_MANY_DIGITS.search(text)
    if m is None:
        return text
    return (
        f"an integer of {m.group(2)} digits (more than {m.group(1)} digits is no usable value; "
        "quote it as a string if it is an identifier)"
    )


_TOO_MANY_DIGITS = re.compile(r"Exceeds the limit \((\d+) digits\).*?value has (\d+) digits")


def _deep_field(text: str) -> str | None:
    """The top-level key under which ``text`` (one JSON object) nests too deep."""
    depth, key, last_string = 0, None, None
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return key
        elif tok in "]}":
            depth -= 1
        elif tok == ":" and depth == 1:
            key = last_string
        elif tok[0] == '"':
            last_string = json.loads(tok)
    return key


#: what ``_array_elements`` yields last for an array whose ``]`` never comes, and for one
#: whose brackets do not balance
UNCLOSED = "\x00unclosed array"
UNBALANCED = "\x00unbalanced array"


def _array_elements(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each element of the JSON array ``text``, found by scanning string
    tokens and brackets only, so a broken or over-deep element does not hide the rest."""
    start = text.index("[") + 1
    end = len(text)  # unterminated: the last element runs to the end of the file
    depth, closer = 1, ""
    for m in _TOKEN.finditer(text, start):
        tok = m.group()
        if tok in "[{":
            depth += 1
        elif tok in "]}":
            depth -= 1
            if depth == 0:
                end, closer = m.start(), tok
                break
        elif tok == "," and depth == 1:
            yield _line_of(text, start), text[start : m.start()]
            start = m.end()
    if text[start:end].strip():
        yield _line_of(text, start), text[start:end]
    if depth > 0 and not text.rstrip().endswith("]"):
        yield text.count("\n") + 1, UNCLOSED
    elif depth > 0 or closer == "}" or text[end + 1 :].strip():
        # brackets that do not balance: an element ate its neighbours, or the array ended
        # early; the rows after this point were not read as rows
        yield text.count("\n", 0, end) + 1, UNBALANCED


def _line_of(text: str, start: int) -> int:
    """1-based line of the first non-blank character at or after ``start``."""
    stripped = len(text[start : start + 4096]) - len(text[start : start + 4096].lstrip())
    return text.count("\n", 0, start + stripped) + 1


# ---------------------------------------------------------------- JSONL / JSON


def _jsonl_row(data: bytes, source: str, row: int) -> Any:
    text, bad = _decode(data)
    rec = _parse(text, source, row)
    found = _escaped_byte(rec) if bad is not None and not isinstance(rec, RowError) else None
    if found and bad is not None:
        return _bad_byte_error(source, row, found, f"at byte {bad.start + 1} of the line ")
    return rec


def _iter_jsonl(path: Path) -> Rows:
    with path.open("rb") as f:
        for lineno, line in enumerate(f, start=1):  # one line in memory at a time
            if lineno == 1 and line.startswith(_BOM):
                line = line[len(_BOM) :]
            if not line.strip():
                continue
            yield lineno, _jsonl_row(line, path.name, lineno)


def _iter_json(path: Path) -> Rows:
    data = path.read_bytes()
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    text, bad = _decode(data)
    try:
        doc = loads(text)
    except (RecursionError, ValueError) as e:  # JSONDecodeError and RepeatedKey are ValueErrors
        yield from _json_fallback(text, path.name, e)
        return
    for row, rec in enumerate(_records_of(doc, path.name), start=1):
        found = _escaped_byte(rec) if bad is not None else None
        yield row, (_bad_byte_error(path.name, row, found, "") if found else rec)


def _json_fallback(text: str, source: str, err: Exception) -> Rows:
    """A .json file that is not one JSON value: JSON Lines, or a list with bad elements."""
    head = text.lstrip()
    if head.startswith("{") and (getattr(err, "msg", "") == "Extra data" or _looks_like_jsonl(text)):
        # physical lines only: str.splitlines also cuts at U+2028, U+0085 or a form feed,
        # which a JSON string may hold raw
        for lineno, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                yield lineno, _jsonl_row(line.encode("utf-8", "surrogateescape"), source, lineno)
        return
    if not head.startswith("["):
        where = f":{err.lineno}" if isinstance(err, json.JSONDecodeError) else ""
        raise ValueError(f"{source}{where}: invalid JSON: {getattr(err, 'msg', None) or json_value_error(err)}")
    for row, (first_line, element) in enumerate(_array_elements(text), start=1):
        if element is UNCLOSED or element is UNBALANCED:  # whatever came after is lost
            why = (
                f"the JSON array is not closed (no ']' by its end, line {first_line}): the file may be cut short, "
                "and rows after the last one read may be missing"
                if element is UNCLOSED
                else f"the JSON array's brackets do not balance (by line {first_line}): a broken element may have "
                "taken the rows after it, which were not read"
            )
            yield row, RowError(source, row, None, why)
            break
        rec = _parse(element, source, row)
        if isinstance(rec, RowError) and rec.field is None:
            rec = RowError(source, row, None, f"{rec.reason} (element starting at line {first_line})")
        elif not isinstance(rec, RowError) and (found := _escaped_byte(rec)):
            rec = _bad_byte_error(source, row, found, "")
        yield row, rec


def _looks_like_jsonl(text: str) -> bool:
    """JSON Lines whose first line is broken: one of the first two non-blank lines is a
    whole JSON object on its own (a pretty-printed object's lines never are)."""
    lines = [line for line in text.split("\n", 50)[:50] if line.strip()][:2]
    for line in lines:
        try:
            if isinstance(json.loads(line), dict):
                return True
        except (ValueError, RecursionError):
            continue
    return False


def _records_of(doc: Any, source: str) -> list[Any]:
    """The records of a parsed .json document: a list; the one list of objects in a
    wrapper object (``{"results": [...]}``); else the object itself as one record."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        if any(k in ALIASES["user_input"] for k in doc):
            return [doc]
        lists = {k: v for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
        if len(lists) > 1:
            raise ValueError(
                f"{source}: an object with several lists of records ({', '.join(map(repr, lists))}); "
                "which one holds the samples is ambiguous — keep one, or pass that list"
            )
        return next(iter(lists.values())) if lists else [doc]
    raise ValueError(f"{source}: expected a JSON list of samples, got {type(doc).__name__}")


# ---------------------------------------------------------------- header


def check_columns(columns: list[str], source: str) -> None:
    """Raise ``ValueError`` (one line, the whole source) when two columns share a name.

    A row becomes a dict keyed by column name, so the last of two ``response`` columns
    would win without a word, and the first column's values would never be read: it is a
    fault of the header, not of a row. Blank names are left out (spreadsheets export
    trailing empty columns; a blank name is no field, and its cells go to metadata)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(columns, start=1):
        if not name.strip():
            continue
        first = seen.setdefault(name, i)
        if first != i:
            raise ValueError(
                f"{source}: column '{_clean(name)}' appears twice in the header (columns {first} and {i}); "
                "the last would silently win: rename or drop one"
            )


# ---------------------------------------------------------------- CSV / TSV


def _iter_csv(path: Path, delimiter: str) -> Rows:
    from unified.data.cells import restore_formula

    with path.open("r", encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        header = _next_row(reader)
        if header is None:
            return
        if isinstance(header, csv.Error):
            raise ValueError(f"{path.name}:1: cannot read the header: {header}")
        header = [restore_formula(h) for h in header]
        check_columns(header, f"{path.name}:1")
        start = reader.line_num + 1
        while True:
            cells = _next_row(reader)
            if cells is None:
                return
            row, start = start, reader.line_num + 1  # a quoted cell may span several lines
            if isinstance(cells, csv.Error):
                yield row, RowError(path.name, row, None, f"cannot read the row: {cells}")
                continue
            rec = _csv_record(header, cells, path.name, row)
            if rec is not None:
                yield row, rec


def _next_row(reader: Any) -> list[str] | csv.Error | None:
    try:
        return next(reader)
    except StopIteration:
        return None
    except csv.Error as e:
        return e


def _csv_record(header: list[str], cells: list[str], source: str, row: int) -> Any:
    """One CSV row as a dict of raw strings (None: a row of empty cells, no sample)."""
    from unified.data.cells import restore_formula

    if not any(c.strip() for c in cells):
        return None  # a row of empty cells, as spreadsheets export, is no sample
    if len(cells) > len(header):
        extra = cells[len(header) :]
        if any(c.strip() for c in extra):
            return RowError(source, row, None, f"{len(extra)} more cells than header columns")
        cells = cells[: len(header)]
    rec = {h: restore_formula(c) for h, c in zip(header, cells)}
    found = _escaped_byte(rec)
    return _bad_byte_error(source, row, found, "") if found else rec


# ---------------------------------------------------------------- parquet


def _iter_parquet(path: Path) -> Rows:
    import pyarrow.parquet as pq

    row = 0
    with pq.ParquetFile(path) as pf:
        check_columns(pf.schema_arrow.names, path.name)
        for batch in pf.iter_batches(batch_size=1024):  # one batch in memory at a time
            for raw in batch.to_pylist():
                row += 1
                yield row, raw
