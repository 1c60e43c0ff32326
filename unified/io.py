"""Read and write samples: JSONL, JSON, CSV, parquet, pandas and Hugging Face datasets.

Reading never stops at a bad row: ``read_samples`` yields a ``Sample`` for every good row
and a ``RowError`` (file, 1-based row, field, reason) for every bad one, in file order.
JSONL, CSV and parquet are streamed (line by line / record batch by record batch), so a
file larger than memory can be validated or scored.

Tabular formats (CSV, parquet, DataFrame, HF datasets) have no nested objects that
survive every tool, so there list fields are JSON arrays (native lists in parquet / HF)
and ``graded_relevance`` / ``metadata`` are JSON-object strings. Every format round-trips
a Sample exactly, except that CSV cannot tell an empty string from an absent value (an
empty cell means absent).
"""

from __future__ import annotations

import csv
import difflib
import json
import math
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unified.sample import _ALIAS_TO_CANONICAL, ALIASES, Sample, SampleError

__all__ = [
    "RowError", "SampleLoadError", "read_samples", "load_samples", "write_samples",
    "samples_to_pandas", "samples_from_pandas", "samples_to_hf", "parse_mapping",
    "validate_source", "FORMATS",
]

FORMATS = ("jsonl", "json", "csv", "parquet")
_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv",
             ".parquet": "parquet", ".pq": "parquet"}
# column order of every tabular output: the Sample's own field order
_FIELDS = tuple(Sample.model_fields)
_LIST_FIELDS = ("retrieved_contexts", "retrieved_ids", "relevant_ids", "reference_contexts")
_OBJECT_FIELDS = ("graded_relevance", "metadata")
_ALIAS_TO_FIELD = {alias: field for field, names in ALIASES.items() for alias in names}

# a CSV cell may hold a whole retrieved context; the default 128 kB limit is too small
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass
class RowError:
    """A row that could not become a Sample. ``row`` is the 1-based line number for JSONL
    and CSV, the 1-based position for a JSON list, parquet, a DataFrame or a dataset."""

    source: str
    row: int
    field: str | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.row}"
        return f"{where}: field '{self.field}': {self.reason}" if self.field else f"{where}: {self.reason}"


class SampleLoadError(ValueError):
    """Raised by the strict helpers (``samples_from_pandas``) when rows are bad; ``errors``
    lists them all, the message shows the first."""

    def __init__(self, errors: list[RowError]):
        self.errors = errors
        more = f" (and {len(errors) - 1} more bad rows)" if len(errors) > 1 else ""
        super().__init__(f"{errors[0]}{more}")


# ---------------------------------------------------------------- mapping

def parse_mapping(items: list[str] | str | Mapping[str, str] | None) -> dict[str, str]:
    """Parse the CLI's ``--map question=user_input,ctx=retrieved_contexts`` into
    ``{"question": "user_input", "ctx": "retrieved_contexts"}``.

    Accepts a comma-separated string, a list of such strings (a repeated option) or a
    mapping. Each target must be a canonical Sample field; raises ``ValueError`` (one line).
    """
    if not items:
        return {}
    pairs: list[tuple[str, str]] = []
    if isinstance(items, Mapping):
        pairs = [(str(k), str(v)) for k, v in items.items()]
    else:
        for item in [items] if isinstance(items, str) else items:
            for part in item.split(","):
                if not part.strip():
                    continue
                if "=" not in part:
                    raise ValueError(f"--map '{part.strip()}': expected SOURCE=FIELD, "
                                     f"like question=user_input")
                src, dst = (s.strip() for s in part.split("=", 1))
                if not src or not dst:
                    raise ValueError(f"--map '{part.strip()}': both SOURCE and FIELD are needed")
                pairs.append((src, dst))
    out: dict[str, str] = {}
    for src, dst in pairs:
        if dst not in ALIASES and dst in _ALIAS_TO_CANONICAL:
            dst = _ALIAS_TO_CANONICAL[dst]  # a framework's name for the field: q=question works
        if dst not in ALIASES:
            # match against the frameworks' names too: question_text -> user_input, not a
            # lookalike canonical name
            close = difflib.get_close_matches(dst, list(ALIASES) + list(_ALIAS_TO_CANONICAL), n=1, cutoff=0.5)
            hint = f"; did you mean '{_ALIAS_TO_CANONICAL.get(close[0], close[0])}'?" if close else ""
            raise ValueError(f"--map {src}={dst}: '{dst}' is not a Sample field "
                             f"(one of {', '.join(ALIASES)}){hint}")
        if src in out and out[src] != dst:
            raise ValueError(f"--map: '{src}' mapped twice, to '{out[src]}' and '{dst}'")
        out[src] = dst
    return out


# ---------------------------------------------------------------- reading

def _format_of(path: Path, fmt: str | None) -> str:
    if fmt:
        f = fmt.lower().lstrip(".")
        f = _SUFFIXES.get("." + f, f)
        if f not in FORMATS:
            raise ValueError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
        return f
    f = _SUFFIXES.get(path.suffix.lower())
    if f is None:
        raise ValueError(f"{path.name}: cannot tell the format from the suffix "
                         f"'{path.suffix}'; pass fmt= one of {', '.join(FORMATS)}")
    return f


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    # pandas.NA / NaT and numpy NaN scalars, without importing pandas here
    return type(v).__name__ in ("NAType", "NaTType") or (
        hasattr(v, "dtype") and getattr(v, "shape", None) == () and v != v)


def _plain(v: Any) -> Any:
    """numpy arrays / scalars (from pandas, parquet, HF) -> Python lists / numbers."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return v.tolist()
    return v


def _target(key: str, mapping: Mapping[str, str]) -> str | None:
    return mapping.get(key) or _ALIAS_TO_FIELD.get(key)


def _tabular_record(raw: Mapping[str, Any], mapping: Mapping[str, str], source: str,
                    row: int, *, empty_is_missing: bool = False) -> dict[str, Any] | RowError:
    """Clean one row of a table: drop missing cells, numpy -> Python, and decode the JSON
    cells of object fields (and of list fields when a cell holds a JSON-array string).
    ``empty_is_missing``: CSV has no null, so there an empty cell means absent."""
    rec: dict[str, Any] = {}
    for key, value in raw.items():
        if _is_missing(value) or (empty_is_missing and value == ""):
            continue
        value = _plain(value)
        target = _target(str(key), mapping)
        if isinstance(value, str) and target in _OBJECT_FIELDS + _LIST_FIELDS:
            text = value.strip()
            if not text:
                continue  # an empty cell is an absent value
            opener = "{" if target in _OBJECT_FIELDS else "["
            if text.startswith(opener):
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as e:
                    kind = "object" if opener == "{" else "array"
                    return RowError(source, row, target,
                                    f"invalid JSON {kind} in column '{key}': {e.msg} (char {e.pos})")
            elif target in _OBJECT_FIELDS:
                return RowError(source, row, target,
                                f"expected a JSON object in column '{key}', like {{\"doc-1\": 2}}")
            # a plain string in a list column is left as is: Sample names the problem
            # and suggests the fix ("wrap it in a list")
        rec[str(key)] = value
    return rec


def _iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("r", encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):  # one line in memory at a time
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as e:
                yield lineno, RowError(path.name, lineno, None,
                                       f"invalid JSON: {e.msg} (char {e.pos})")


def _iter_json(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("r", encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path.name}:{e.lineno}: invalid JSON: {e.msg} (column {e.colno})") from None
    if isinstance(data, Mapping):
        # {"samples": [...]} / {"data": [...]} wrappers, as some exporters write
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise ValueError(f"{path.name}: expected a JSON list of samples")
        data = lists[0]
    if not isinstance(data, list):
        raise ValueError(f"{path.name}: expected a JSON list of samples, got {type(data).__name__}")
    yield from enumerate(data, start=1)


def _iter_csv(path: Path, mapping: Mapping[str, str]) -> Iterator[tuple[int, Any]]:
    with path.open("r", encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        start = 2  # the header is line 1
        for raw in reader:
            row = start
            start = reader.line_num + 1  # a quoted cell may span several lines
            if None in raw:  # more cells than header columns
                yield row, RowError(path.name, row, None,
                                    f"{len(raw[None])} more cells than header columns")
                continue
            if not any(v.strip() for v in raw.values() if isinstance(v, str)):
                continue  # a row of empty cells, as spreadsheets export, is no sample
            yield row, _tabular_record(raw, mapping, path.name, row, empty_is_missing=True)


def _iter_parquet(path: Path, mapping: Mapping[str, str]) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    row = 0
    with pq.ParquetFile(path) as pf:
        for batch in pf.iter_batches(batch_size=1024):  # one batch in memory at a time
            for raw in batch.to_pylist():
                row += 1
                yield row, _tabular_record(raw, mapping, path.name, row)


def _is_instance_of(obj: Any, module: str, name: str) -> bool:
    # check by name so that pandas / datasets are imported only when actually used
    return any(c.__name__ == name and c.__module__.startswith(module) for c in type(obj).__mro__)


def _pick_split(ds: Any, split: str | None) -> Any:
    splits = list(ds.keys())
    if split is None:
        if len(splits) == 1:
            return ds[splits[0]]
        raise ValueError(f"the DatasetDict has several splits ({', '.join(splits)}); pass split=")
    if split not in ds:
        raise ValueError(f"no split '{split}' in the DatasetDict; splits: {', '.join(splits)}")
    return ds[split]


def _iter_source(source: Any, mapping: Mapping[str, str], fmt: str | None,
                 split: str | None) -> tuple[str, Iterator[tuple[int, Any]]]:
    """(source name, iterator of (row, record or RowError))."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        f = _format_of(path, fmt)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        it = {"jsonl": lambda: _iter_jsonl(path), "json": lambda: _iter_json(path),
              "csv": lambda: _iter_csv(path, mapping),
              "parquet": lambda: _iter_parquet(path, mapping)}[f]()
        return path.name, it
    if _is_instance_of(source, "pandas", "DataFrame"):
        cols = [str(c) for c in source.columns]
        return "DataFrame", (
            (i, _tabular_record(dict(zip(cols, values)), mapping, "DataFrame", i))
            for i, values in enumerate(source.itertuples(index=False, name=None), start=1))
    if _is_instance_of(source, "datasets", "DatasetDict"):
        source = _pick_split(source, split)
    if _is_instance_of(source, "datasets", "Dataset"):
        return "Dataset", ((i, _tabular_record(r, mapping, "Dataset", i))
                           for i, r in enumerate(source, start=1))
    if isinstance(source, Mapping):
        raise TypeError("read_samples takes an iterable of records, not one record; wrap it in a list")
    if isinstance(source, Iterable):
        return "records", enumerate(source, start=1)
    raise TypeError(f"cannot read samples from {type(source).__name__}; pass a path, a "
                    f"DataFrame, a Dataset or an iterable of dicts")


def _to_sample(record: Any, mapping: Mapping[str, str], source: str, row: int) -> Sample | RowError:
    if isinstance(record, RowError):
        return record
    try:
        return Sample.from_record(record, mapping)
    except SampleError as e:
        return RowError(source, row, e.field, e.reason)
    except (TypeError, ValueError) as e:  # odd cell types a framework may hand us
        return RowError(source, row, None, f"{type(e).__name__}: {e}")


def read_samples(source: Any, mapping: Mapping[str, str] | list[str] | str | None = None,
                 fmt: str | None = None, split: str | None = None) -> Iterator[Sample | RowError]:
    """Yield a ``Sample`` or a ``RowError`` per row of ``source``, lazily, in order.

    ``source``: a path (``.jsonl``, ``.json`` list, ``.csv``, ``.parquet``; or ``fmt=``),
    a pandas DataFrame, a ``datasets.Dataset`` / ``DatasetDict`` (with ``split=`` when it
    has several), or an iterable of dicts. ``mapping`` renames source fields first
    (``{"q": "user_input"}`` or the CLI form ``"q=user_input"``). Problems with the source
    itself (missing file, unknown format or split) raise at once; bad rows do not.
    """
    mp = parse_mapping(mapping)
    name, it = _iter_source(source, mp, fmt, split)
    return (_to_sample(rec, mp, name, row) for row, rec in it)


def load_samples(source: Any, mapping: Mapping[str, str] | list[str] | str | None = None,
                 fmt: str | None = None, split: str | None = None
                 ) -> tuple[list[Sample], list[RowError]]:
    """All good samples and all row errors of ``source`` (see ``read_samples``)."""
    good: list[Sample] = []
    bad: list[RowError] = []
    for item in read_samples(source, mapping, fmt, split):
        (bad if isinstance(item, RowError) else good).append(item)  # type: ignore[arg-type]
    return good, bad


def validate_source(source: Any, mapping: Mapping[str, str] | list[str] | str | None = None,
                    fmt: str | None = None, split: str | None = None
                    ) -> tuple[int, list[RowError], list[str]]:
    """Check every row: (number of good rows, row errors, warnings).

    Warnings are listed once each: unknown fields kept in metadata (with the first row
    that has them) and duplicate ids. They are collected here rather than read from
    ``Sample``'s UserWarnings, which fire only once per process and would be missing on
    a second validation; those UserWarnings are captured so they do not print twice.
    """
    mp = parse_mapping(mapping)
    name, it = _iter_source(source, mp, fmt, split)
    ok = 0
    errors: list[RowError] = []
    notes: dict[str, None] = {}  # an ordered set: each warning once, in first-seen order
    unknown: set[str] = set()
    first_row_of_id: dict[str, int] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for row, rec in it:
            if isinstance(rec, Mapping):
                for key in rec:
                    if key != "metadata" and _target(str(key), mp) is None and key not in unknown:
                        unknown.add(key)
                        notes[f"unknown field '{key}' kept in metadata (first at {name}:{row})"] = None
            result = _to_sample(rec, mp, name, row)
            if isinstance(result, RowError):
                errors.append(result)
                continue
            ok += 1
            if result.id in first_row_of_id:
                notes.setdefault(f"duplicate id '{result.id}' at {name}:{first_row_of_id[result.id]} "
                                 f"and {name}:{row}", None)
            else:
                first_row_of_id[result.id] = row
    for w in caught:
        msg = str(w.message)
        if not msg.startswith("unknown field '"):  # already listed with its row above
            notes.setdefault(msg, None)
    return ok, errors, list(notes)


# ---------------------------------------------------------------- writing

def _json_record(s: Sample) -> dict[str, Any]:
    return s.model_dump(mode="json", exclude_none=True)


def _table_row(s: Sample, *, lists_as_json: bool) -> dict[str, Any]:
    d = s.model_dump(mode="json")
    for f in _OBJECT_FIELDS:
        if d[f] is not None:
            d[f] = json.dumps(d[f], ensure_ascii=False, sort_keys=True)
    if lists_as_json:
        for f in _LIST_FIELDS:
            if d[f] is not None:
                d[f] = json.dumps(d[f], ensure_ascii=False)
    return d


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(f, pa.list_(pa.string()) if f in _LIST_FIELDS else pa.string())
                      for f in _FIELDS])


def write_samples(samples: Iterable[Sample], path: str | Path, fmt: str | None = None) -> int:
    """Write samples to ``path`` (format from the suffix or ``fmt``); returns the count.

    JSONL: one ``Sample`` per line, absent fields omitted. JSON: a list. CSV: one column
    per field, lists and objects as JSON cells, absent = empty cell. Parquet: list fields
    as ``list<string>``, ``graded_relevance``/``metadata`` as JSON strings.
    """
    path = Path(path)
    f = _format_of(path, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    if f == "jsonl":
        with path.open("w", encoding="utf-8") as out:
            for s in samples:
                out.write(json.dumps(_json_record(s), ensure_ascii=False) + "\n")
                n += 1
    elif f == "json":
        rows = [_json_record(s) for s in samples]
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        n = len(rows)
    elif f == "csv":
        with path.open("w", encoding="utf-8", newline="") as out:
            w = csv.DictWriter(out, fieldnames=list(_FIELDS))
            w.writeheader()
            for s in samples:
                w.writerow({k: ("" if v is None else v)
                            for k, v in _table_row(s, lists_as_json=True).items()})
                n += 1
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = _arrow_schema()
        with pq.ParquetWriter(path, schema) as writer:
            batch: list[dict[str, Any]] = []
            for s in samples:
                batch.append(_table_row(s, lists_as_json=False))
                n += 1
                if len(batch) >= 1024:  # bounded memory for large runs
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    batch = []
            if batch or n == 0:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return n


def samples_to_pandas(samples: Iterable[Sample]) -> Any:
    """A DataFrame with one column per Sample field (object dtype: lists stay lists,
    dicts stay dicts, absent stays None)."""
    import pandas as pd

    rows = [s.model_dump(mode="json") for s in samples]
    return pd.DataFrame(rows, columns=list(_FIELDS), dtype=object)


def samples_from_pandas(df: Any, mapping: Mapping[str, str] | list[str] | str | None = None) -> list[Sample]:
    """Samples from a DataFrame (any framework's column names; NaN = absent). Strict:
    raises ``SampleLoadError`` listing every bad row; use ``read_samples`` to skip them."""
    good, bad = load_samples(df, mapping)
    if bad:
        raise SampleLoadError(bad)
    return good


def samples_to_hf(samples: Iterable[Sample]) -> Any:
    """A ``datasets.Dataset`` with one column per Sample field: list fields as lists of
    strings, ``graded_relevance``/``metadata`` as JSON strings (their keys vary per row,
    which Arrow structs would fill with nulls)."""
    import datasets

    features = datasets.Features({
        f: datasets.List(datasets.Value("string")) if f in _LIST_FIELDS else datasets.Value("string")
        for f in _FIELDS})
    rows = [_table_row(s, lists_as_json=False) for s in samples]
    return datasets.Dataset.from_dict({f: [r[f] for r in rows] for f in _FIELDS}, features=features)
