"""Cells: how a value in one field of a source row becomes a Sample field's value.

List fields (``retrieved_contexts``, ``retrieved_ids``, ``relevant_ids``,
``reference_contexts``) given as a string:

1. a string that parses as a JSON array is that array (any source: Patronus'
   ``task_context`` is often one); one that looks like a JSON array (``["…``) but does
   not parse is a row error. A Python list of strings (``['d1', 'd2']``, or
   ``["It's here.", 'plain']`` where an element holds an apostrophe: what pandas'
   ``to_csv`` writes for a list column, RAGAS's exports included) is that list, read by
   literal parsing only; one that does not parse as a list of strings is a row error
   (read as one string, it scored ``['d1', 'd2']`` as a single id);
2. in tabular sources (CSV, TSV, parquet, DataFrame, HF datasets) the string is split on
   the list separator: ``list_sep`` when given (``""`` = never split), else the first of
   the layout's separators found in the cell — ``|`` (DeepEval's CSV writer), and for
   DeepEval files also ``;`` (its CSV loader's default); pieces are stripped, empty ones
   dropped; a cell with no separator is a one-element list. A string in a column the user
   mapped with ``--map`` onto a context field (in any source; in JSON records onto any
   list field) is a one-element list too, split only on an explicit ``list_sep``: a
   passage may hold a markdown table's ``|``;
3. elsewhere (JSON records) a plain string stays a row error: it is too often a joined
   blob that would be scored as one context.

``graded_relevance`` and ``metadata`` cells in tabular sources are JSON-object strings.

CSV/TSV cells this project writes never start a live spreadsheet formula: a cell that
begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a
leading ``'`` (the spreadsheet convention for "this is text"), and so is a cell that
begins with ``'`` followed by one of those characters or by another ``'``. Reading strips
exactly that one added ``'``, so every string reads back exactly.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

from unified.sample import LIST_FIELDS, SampleError

OBJECT_FIELDS = ("graded_relevance", "metadata")
TEXT_LIST_FIELDS = ("retrieved_contexts", "reference_contexts")  # lists of passages, not of ids
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_QUOTE = "'"
NO_SPLIT = ""  # list_sep meaning "never split a cell"


# ---------------------------------------------------------------- spreadsheet formulas


def _quoted(text: str) -> bool:
    # text that reading would un-quote: ' followed by a formula start or another '
    return text[:1] == _QUOTE and (text[1:2] in FORMULA_START or text[1:2] == _QUOTE)


def neutralise_formula(text: str) -> str:
    """``text`` safe for a spreadsheet: a leading ``'`` when it would start a formula, or
    would otherwise be un-quoted by ``restore_formula``."""
    if text[:1] in FORMULA_START or _quoted(text):
        return _QUOTE + text
    return text


def restore_formula(text: str) -> str:
    """The inverse of ``neutralise_formula``: ``restore_formula(neutralise_formula(t)) == t``."""
    return text[1:] if _quoted(text) else text


# ---------------------------------------------------------------- plain values


def is_missing(v: Any) -> bool:
    """None, NaN, pandas' NA/NaT and numpy NaN scalars (without importing pandas)."""
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return type(v).__name__ in ("NAType", "NaTType") or (
        hasattr(v, "dtype") and getattr(v, "shape", None) == () and v != v
    )


def plain(v: Any) -> Any:
    """numpy arrays / scalars -> Python lists / numbers; dates -> ISO text; bytes -> text
    (undecodable bytes kept as escapes, which validation then names)."""
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "surrogateescape")
    if hasattr(v, "tolist") and not isinstance(v, str):
        return v.tolist()
    if hasattr(v, "isoformat") and not isinstance(v, str):
        return v.isoformat()
    return v


# ---------------------------------------------------------------- fields


def list_value(text: str, key: str, field: str, *, split: bool, sep: str | None, auto_seps: tuple[str, ...]) -> Any:
    """The value of list field ``field`` given as the string ``text`` in column ``key``
    (rules in the module docstring). ``split``: the source is tabular or the column was
    mapped explicitly. Returns a list, or ``text`` unchanged for Sample to refuse."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError) as e:
            head = stripped[1:].lstrip()[:1]
            # pandas' to_csv writes a list cell as its Python repr, which quotes an element
            # holding an apostrophe with double quotes: ["It's here.", 'plain']
            if head in ("'", '"') and (found := _python_strings(stripped)) is not None:
                return found
            if head == "'":
                return python_list(stripped, key, field)
            if head in ('"', "]", "[", "{"):  # meant as JSON
                msg = e.msg if isinstance(e, json.JSONDecodeError) else "too deep or too long"
                raise SampleError(field, f"invalid JSON array in column '{key}': {msg}") from None
    if not split:
        return text
    if not stripped:
        return None  # an empty cell is an absent value
    seps = (sep,) if sep is not None else auto_seps
    used = next((s for s in seps if s and s in text), None)
    if used is None:
        return [text]
    return [p.strip() for p in text.split(used) if p.strip()]


def _python_strings(text: str) -> list[str] | None:
    """``text`` as a Python list of strings, read by literal parsing only
    (``ast.literal_eval``: no name, call or expression is evaluated), or None."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def python_list(text: str, key: str, field: str) -> list[str]:
    """``['a', "b's"]``, a Python list of strings as ``repr`` writes it, as that list;
    anything else that starts ``['`` is a row error naming the column."""
    value = _python_strings(text)
    if value is None:
        raise SampleError(
            field, f"column '{key}' starts like a Python list but is not a list of strings: {text[:40]!r}"
        )
    return value


def object_value(text: str, key: str, field: str) -> Any:
    """The value of object field ``field`` given as a JSON-object string in column ``key``."""
    stripped = text.strip()
    if not stripped:
        return None
    if not stripped.startswith("{"):
        raise SampleError(field, f"expected a JSON object in column '{key}', like {{\"doc-1\": 2}}")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as e:
        raise SampleError(field, f"invalid JSON object in column '{key}': {e.msg} (char {e.pos})") from None
    except (ValueError, RecursionError):
        raise SampleError(field, f"JSON object in column '{key}' is nested too deep or too long") from None


def clean_value(
    value: Any, key: str, field: str | None, *, tabular: bool, mapped: bool, sep: str | None, auto_seps: tuple[str, ...]
) -> Any:
    """One source value for Sample field ``field`` (None: not a Sample field)."""
    if tabular:
        value = plain(value)
    if not isinstance(value, str) or field is None:
        return value
    if field in LIST_FIELDS:
        # a column the user mapped onto a context field is split only on an explicit
        # separator (module docstring): a passage may hold a markdown table's '|'
        seps = auto_seps if tabular and not (mapped and field in TEXT_LIST_FIELDS) else ()
        return list_value(value, key, field, split=tabular or mapped, sep=sep, auto_seps=seps)
    if field in OBJECT_FIELDS and tabular:
        return object_value(value, key, field)
    return value
