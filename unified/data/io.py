"""Read and write samples: JSONL, JSON, CSV, TSV, parquet, pandas, Hugging Face datasets,
and the frameworks' own objects.

``read_samples(source)`` is the one way in, for the runner as for ``validate``: it yields a
``Sample`` for every good row and a ``RowError`` (source, 1-based row, field, reason) for
every bad one, in order, and never stops at a bad row. Sources: a path (formats and their
row numbers in ``unified.data.readers``), a pandas DataFrame, a ``datasets.Dataset`` /
``DatasetDict``, an iterable of dicts / ``Sample`` / ``RowError`` / framework objects, a
single dict or Sample, or a framework's dataset object (RAGAS ``EvaluationDataset``,
DeepEval ``EvaluationDataset``; readers in ``unified.data.objects``).

Every row is accounted for (``SampleReader.counts``: rows read = samples + rejected):

- ids: a row's given id, else its content hash (``Sample.content_hash``). A row whose
  content equals an earlier row's gets that id with an occurrence suffix, ``<id>#2``,
  ``#3``, …, in file order, so ids are distinct and stable across reruns of one file; a
  given id repeated with *other* content is a row error naming both rows (the first keeps
  the id). DeepEval's ``name`` is the id while no earlier row used it for other content;
  otherwise the row gets its content id and keeps the name in ``metadata["name"]``.
- layouts: a framework's own keys are recognised (``unified.data.layouts``) or forced with
  ``layout=`` (the CLI's ``--from``).
- traces: OTLP JSON, OpenInference span records, MLflow traces and Langfuse exports
  become one Sample per trace (``unified.data.traces``): recognised by content in a
  ``.json`` / ``.jsonl`` file, a DataFrame of ``mlflow.search_traces()`` or a list of
  MLflow ``Trace`` objects, or forced with ``layout="otlp"`` (``openinference``,
  ``mlflow-traces``, ``langfuse``).
- tabular cells (lists given as strings, JSON-object cells): ``unified.data.cells``.
- human labels from any column (``labels=``): ``unified.data.labels``.

Writing (``write_samples``): JSONL (one Sample a line, absent fields omitted), JSON (a
list), CSV / TSV (one column per field, lists and objects as JSON cells, absent = empty
cell), parquet (list fields as ``list<string>``, ``graded_relevance`` / ``metadata`` as
JSON strings). CSV / TSV written here never carry a live spreadsheet formula: a cell that
begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``
(as does one beginning with ``'`` followed by such a character or another ``'``), and
reading strips exactly that ``'`` again (``unified.data.cells.neutralise_formula``). Every format
reads back the Samples it was given, ids included, except that CSV / TSV cannot tell an
empty string from an absent value (an empty cell means absent).
"""

from __future__ import annotations

import csv
import difflib
import json
import unicodedata
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unified.data.cells import clean_value, is_missing, neutralise_formula
from unified.data.files import atomic_path, write_text
from unified.data.labels import label_metric, label_value, parse_labels, row_labels_problem
from unified.data.layouts import EXTRA_KEY, Layout, apply_layout, detect_layout, get_layout, renames_for
from unified.data.readers import FORMATS, TABULAR, check_columns, format_of, read_file
from unified.data.rowerror import RowError
from unified.data.traces import (
    EMPTY_RETRIEVERS,
    TRACE_FORMATS,
    detect,
    detect_columns,
    detect_file,
    file_rows,
    trace_rows,
)
from unified.sample import (
    ALIAS_TO_CANONICAL,
    ALIASES,
    LIST_FIELDS,
    METADATA_KEYS,
    Sample,
    SampleError,
    merged_once,
    plain_fields,
    sample_problem,
    target_of,
)

__all__ = [
    "RowError",
    "SampleLoadError",
    "SampleReader",
    "ReadCounts",
    "read_samples",
    "load_samples",
    "write_samples",
    "samples_to_pandas",
    "samples_from_pandas",
    "samples_to_hf",
    "parse_mapping",
    "validate_source",
    "FORMATS",
]

# column order of every tabular output: the Sample's own field order
_FIELDS = tuple(Sample.model_fields)
_OBJECT_FIELDS = ("graded_relevance", "metadata")
_MAX_DUPLICATE_NOTES = 20


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
    mapping. Each target must be a Sample field (or a framework's name for one); raises
    ``ValueError`` (one line).
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
                    raise ValueError(f"--map '{part.strip()}': expected SOURCE=FIELD, like question=user_input")
                src, dst = (s.strip() for s in part.split("=", 1))
                if not src or not dst:
                    raise ValueError(f"--map '{part.strip()}': both SOURCE and FIELD are needed")
                pairs.append((src, dst))
    out: dict[str, str] = {}
    for src, dst in pairs:
        dst = _mapping_target(src, dst)
        if src in out and out[src] != dst:
            raise ValueError(f"--map: '{src}' mapped twice, to '{out[src]}' and '{dst}'")
        out[src] = dst
    return out


def _mapping_target(src: str, dst: str) -> str:
    if dst not in ALIASES and dst in ALIAS_TO_CANONICAL:
        return ALIAS_TO_CANONICAL[dst]  # a framework's name for the field: q=question works
    if dst in ALIASES:
        return dst
    # match against the frameworks' names too: question_text -> user_input, not a
    # lookalike canonical name
    close = difflib.get_close_matches(dst, list(ALIASES) + list(ALIAS_TO_CANONICAL), n=1, cutoff=0.5)
    hint = f"; did you mean '{ALIAS_TO_CANONICAL.get(close[0], close[0])}'?" if close else ""
    raise ValueError(f"--map {src}={dst}: '{dst}' is not a Sample field (one of {', '.join(ALIASES)}){hint}")


# ---------------------------------------------------------------- sources


@dataclass
class _Source:
    """Where rows come from: a name for messages, (row, item) pairs, whether cells are
    tabular, and the column names when known up front (for layout detection)."""

    name: str
    rows: Iterator[tuple[int, Any]]
    tabular: bool = False
    columns: tuple[str, ...] | None = None
    empty_is_missing: bool = False  # CSV/TSV have no null: an empty cell means absent
    trace: str | None = None  # a trace format: rows are already Sample records


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


def _file_source(path: Path, fmt: str | None) -> _Source:
    # what the path is comes before what its suffix says: a folder has no suffix either
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a file of samples")
    f = format_of(path, fmt)
    return _Source(path.name, read_file(path, f), tabular=f in TABULAR, empty_is_missing=f in ("csv", "tsv"))


def _dataframe_source(df: Any) -> _Source:
    cols = tuple(str(c) for c in df.columns)
    check_columns(list(cols), "DataFrame")
    rows = ((i, dict(zip(cols, values))) for i, values in enumerate(df.itertuples(index=False, name=None), 1))
    return _Source("DataFrame", rows, tabular=True, columns=cols)


def _trace_format(source: Any, fmt: str | None, layout: str | None) -> str | None:
    """The trace format of ``source``: forced by ``layout``, else recognised by content
    (a JSON / JSONL file's first value, a DataFrame's columns, a list's first item)."""
    if layout is not None:
        return layout if layout in TRACE_FORMATS else None
    if isinstance(source, (str, Path)):
        path = Path(source)
        kind = (fmt or path.suffix).lower().lstrip(".")
        # JSON by content; Parquet (a span DataFrame saved with to_parquet) by its columns
        readable = kind in ("json", "jsonl", "ndjson", "parquet", "pq")
        return detect_file(path) if readable and path.is_file() else None
    if _is_instance_of(source, "pandas", "DataFrame"):
        return detect_columns(str(c) for c in source.columns)
    if isinstance(source, (list, tuple)) and source:
        return detect(source[0])
    return None


def _trace_source(source: Any, trace: str) -> _Source:
    """A trace source: every trace read, then one Sample record (or RowError) per trace."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        if path.is_dir():
            raise ValueError(f"{path}: is a folder, not a file of traces")
        return _Source(path.name, file_rows(path, trace), trace=trace)
    if _is_instance_of(source, "pandas", "DataFrame"):
        cols = [str(c) for c in source.columns]
        check_columns(cols, "DataFrame")
        items = ((i, dict(zip(cols, v))) for i, v in enumerate(source.itertuples(index=False, name=None), 1))
        return _Source("DataFrame", trace_rows(items, trace, "DataFrame"), trace=trace)
    one = isinstance(source, (Mapping, str)) or not isinstance(source, Iterable)
    return _Source("traces", trace_rows(enumerate([source] if one else source, start=1), trace, "traces"), trace=trace)


def input_index(source: Any, row: int) -> int | float | str | None:
    """A DataFrame's index label of its 1-based ``row`` (JSON-safe: numbers stay numbers,
    anything else becomes its text), None for any other source."""
    if not _is_instance_of(source, "pandas", "DataFrame") or not 1 <= row <= len(source.index):
        return None
    label = source.index[row - 1]
    label = label.item() if hasattr(label, "item") else label  # numpy scalar -> Python
    return label if isinstance(label, (int, float, str)) and not isinstance(label, bool) else str(label)


def _open_source(source: Any, fmt: str | None, split: str | None, layout: str | None = None) -> _Source:
    """The rows of ``source``; problems with the source itself raise at once."""
    trace = _trace_format(source, fmt, layout)
    if trace is not None:
        return _trace_source(source, trace)
    if isinstance(source, (str, Path)):
        return _file_source(Path(source), fmt)
    if _is_instance_of(source, "pandas", "DataFrame"):
        return _dataframe_source(source)
    if _is_instance_of(source, "datasets", "DatasetDict"):
        source = _pick_split(source, split)
    if _is_instance_of(source, "datasets", "Dataset"):
        return _Source("Dataset", enumerate(source, start=1), tabular=True, columns=tuple(source.column_names))
    if isinstance(source, (Sample, RowError, Mapping)):
        return _Source("records", iter([(1, source)]))
    try:
        records = _framework_records(source)
    except ValueError as e:  # the converter refused the object: one bad row
        return _Source(_type_name(source), iter([(1, RowError(_type_name(source), 1, None, str(e)))]))
    if records is not None:
        return _Source(_type_name(source), enumerate((_Converted(*r) for r in records), start=1))
    if isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray)):
        return _Source("records", enumerate(source, start=1))
    return _Source("records", iter([(1, source)]))


def _not_a_sample(item: Any) -> str:
    if type(item).__module__ == "builtins":
        return f"a sample must be an object, got {type(item).__name__}"
    return (
        f"cannot read a sample from a {_type_name(item)}; pass dicts, Samples, or a framework's samples or test cases"
    )


@dataclass(frozen=True)
class _Converted:
    """One row of a framework object: its layout and record, or the reason it has none."""

    layout: str
    record: dict[str, Any] | str


def _type_name(obj: Any) -> str:
    return f"{type(obj).__module__.split('.')[0]} {type(obj).__name__}"


def _framework_records(obj: Any) -> list[tuple[str, dict[str, Any] | str]] | None:
    """A framework object's records as (layout, record) pairs, or None when ``obj`` is no
    framework object. The readers live in the backend rooms (they may import the
    framework); only objects of non-builtin types are offered to them."""
    if type(obj).__module__ in ("builtins", "collections") or isinstance(obj, (str, bytes)):
        return None
    from unified.data.objects import object_records

    return object_records(obj)


# ---------------------------------------------------------------- counts


@dataclass
class ReadCounts:
    """Rows read = samples + rejected, at every moment of a read. ``renamed``: samples
    whose id got an occurrence suffix (content equal to an earlier row's)."""

    rows: int = 0
    samples: int = 0
    rejected: int = 0
    renamed: int = 0

    def line(self) -> str:
        return f"{self.rows} row(s) read = {self.samples} sample(s) + {self.rejected} rejected" + (
            f" ({self.renamed} repeated row(s) given an id suffix #n)" if self.renamed else ""
        )


class _Ids:
    """Distinct, stable ids: an id seen before gets ``#n`` when the content is the same,
    and is a row error (or, for a soft id, falls back to the content hash) when not."""

    def __init__(self, source: str):
        self.source = source
        # id -> (content hash, first row[, the id it repeats when it was given as id#n])
        self.used: dict[str, tuple[Any, ...]] = {}
        self._next: dict[str, int] = {}
        # NFC form -> (id as written, row), or only the row when the id is its own NFC form
        # (nearly every id: no tuple per sample); ids equal only after normalisation, as pairs
        self._nfc: dict[str, tuple[str, int] | int] = {}
        self.nfc_pairs: list[tuple[str, int, str, int]] = []
        self.last: tuple[Sample, str] | None = None  # the last sample given an id, and its content hash

    def _note_nfc(self, sid: str, row: int) -> None:
        """Two ids that differ only in their Unicode normalisation (``café`` composed and
        decomposed) look the same everywhere and are still two samples: collected here,
        said once (``SampleReader.notes``)."""
        form = unicodedata.normalize("NFC", sid)
        first = self._nfc.setdefault(form, row if form == sid else (sid, row))
        first_id, first_row = (form, first) if isinstance(first, int) else first
        if first_id != sid:
            self.nfc_pairs.append((first_id, first_row, sid, row))

    def nfc_note(self) -> str | None:
        """The one warning about ``nfc_pairs``, or None."""
        if not self.nfc_pairs:
            return None
        a, ra, b, rb = self.nfc_pairs[0]
        form = lambda s: "NFC" if unicodedata.is_normalized("NFC", s) else "not NFC"
        return (
            f"{len(self.nfc_pairs)} pair(s) of ids are equal after Unicode normalisation (NFC) but written "
            f"differently, and are read as different samples; first: {a!r} ({form(a)}, {self.source}:{ra}) "
            f"and {b!r} ({form(b)}, {self.source}:{rb}). Write each id one way if they name one sample"
        )

    def _suffixed(self, base: str) -> str:
        n = self._next.get(base, 2)
        while f"{base}#{n}" in self.used:
            n += 1
        self._next[base] = n + 1
        return f"{base}#{n}"

    def assign(self, s: Sample, row: int, soft_key: str | None, fresh: bool) -> tuple[Sample | RowError, bool]:
        """(sample with its final id, or a RowError; whether the id was suffixed).
        ``fresh``: built by this reader just now, so its validation-time hash holds."""
        h = (s.validation_hash() if fresh else "") or s.content_hash()
        result, renamed = self._assign(s, h, row, soft_key)
        # a renamed copy keeps the content (an id and metadata are no part of the hash)
        self.last = (result, h) if isinstance(result, Sample) else None
        return result, renamed

    def _assign(self, s: Sample, h: str, row: int, soft_key: str | None) -> tuple[Sample | RowError, bool]:
        first = self.used.get(s.id)
        if first is None:
            self.used[s.id] = (h, row)
            self._note_nfc(s.id, row)
            return s, False
        if first[0] == h:
            new = self._suffixed(s.id)
            self.used[new] = (h, row, s.id)
            return s.model_copy(update={"id": new}), True
        if soft_key is not None:  # a row name used before: keep it, identify by content
            new = h if h not in self.used else self._suffixed(h)
            self.used[new] = (h, row)
            return s.model_copy(update={"id": new, "metadata": {**s.metadata, soft_key: s.id}}), False
        by = (
            f"{self.source}:{first[1]} (a repeat of '{first[2]}', given that id)"
            if len(first) > 2
            else f"{self.source}:{first[1]}"
        )
        return RowError(
            self.source,
            row,
            "id",
            f"id '{s.id}' is already used by {by} with other content; "
            f"give this row its own id (row {first[1]} keeps it)",
        ), False


# ---------------------------------------------------------------- reading


class SampleReader(Iterator[Any]):
    """The rows of one source as ``Sample | RowError``, lazily, in order (see the module
    docstring). ``counts`` and ``notes`` (warnings worth showing once: unknown fields with
    their first row, repeated rows renamed, label columns never seen) grow as it is read;
    ``rows()`` yields ``(row, item)`` pairs instead of items."""

    def __init__(
        self,
        source: Any,
        mapping: Mapping[str, str] | list[str] | str | None = None,
        *,
        fmt: str | None = None,
        split: str | None = None,
        layout: str | None = None,
        labels: Mapping[str, str] | list[str] | str | None = None,
        list_sep: str | None = None,
    ):
        self.mapping = parse_mapping(mapping)
        self.labels = parse_labels(labels)
        self._label_columns = set(self.labels.values())
        both = set(self.mapping) & set(self.labels.values())
        if both:
            raise ValueError(f"column '{sorted(both)[0]}' is both mapped (--map) and a label (--label)")
        self.layout: Layout | None = (
            get_layout(layout) if layout and layout not in _NO_LAYOUT and layout not in TRACE_FORMATS else None
        )
        self.list_sep = None if list_sep is None else ("" if list_sep.lower() == "none" else list_sep)
        self._src = _open_source(source, fmt, split, layout)
        self._detect = layout is None and self._src.trace is None  # a trace's record is ours already
        self.source = self._src.name
        self.trace = self._src.trace  # a trace format: a row is a trace, not a DataFrame row
        self._ids = _Ids(self.source)
        self.counts = ReadCounts()
        self._notes: dict[str, None] = {}
        self._unknown: set[str] = set()
        self._label_seen: set[str] = set()
        self._empty: list[tuple[int, str, bool]] = []  # traces with an empty retriever: row, id, no context
        self._mapped_seen: set[str] = set()
        self._joined_noted: set[str] = set()  # id columns whose comma-joined cell is noted
        self._label_keys: set[str] = set()  # keys of rows' labels already checked against the metrics
        # key tuple -> each key's field, or None: the row takes the full path (``_plain``)
        self._targets: dict[tuple[Any, ...], dict[str, str] | None] = {}
        if self._src.columns is not None and self._detect:
            self.layout = detect_layout(self._src.columns)
        self._pairs = self._generate()

    @property
    def notes(self) -> list[str]:
        missing = [
            f"--label {m}={c}: no row has a column '{c}'"
            for m, c in self.labels.items()
            if c not in self._label_seen and self.counts.rows
        ]
        unmapped = [
            f"--map {src}={dst}: no row has a field '{src}'"
            for src, dst in self.mapping.items()
            if src not in self._mapped_seen and self.counts.rows
        ]
        nfc = self._ids.nfc_note()
        return list(self._notes) + ([nfc] if nfc else []) + self._empty_note() + missing + unmapped

    def _empty_note(self) -> list[str]:
        """The one note on traces whose retriever found nothing (``empty_retriever_spans``):
        legitimate, but a metric that judges contexts has none to judge on such a trace."""
        if not self._empty:
            return []
        row, sid, _ = self._empty[0]
        none = sum(1 for *_, nothing in self._empty if nothing)
        return [
            f"{len(self._empty)} trace(s) with a retriever span that returned no document "
            f"(metadata.{EMPTY_RETRIEVERS}; first: {self.source}:{row}, id {sid}); {none} of them have no "
            "retrieved context at all: metrics that judge contexts cannot score those"
        ]

    def content_hash(self, sample: Sample) -> str:
        """``sample.content_hash()``, without hashing again the sample this reader has
        just handed out (it hashed it once, when it checked its id)."""
        last = self._ids.last
        return last[1] if last is not None and last[0] is sample else sample.content_hash()

    def __iter__(self) -> "SampleReader":
        return self

    def __next__(self) -> Any:
        return next(self._pairs)[1]

    def rows(self) -> Iterator[tuple[int, Any]]:
        return self._pairs

    def _generate(self) -> Iterator[tuple[int, Any]]:
        for row, item in self._src.rows:
            result = self._item(item, row)
            self.counts.rows += 1
            if isinstance(result, RowError):
                self.counts.rejected += 1
            else:
                self.counts.samples += 1
                if self.trace is not None and result.metadata.get(EMPTY_RETRIEVERS):
                    self._empty.append((row, result.id, not result.retrieved_contexts))
            yield row, result

    # ---- one item

    def _item(self, item: Any, row: int) -> Sample | RowError:
        if isinstance(item, RowError):
            return item
        if isinstance(item, Sample):
            problem = sample_problem(item) or self._labels_problem(item, row)  # changed after it was built
            if problem:
                return RowError(self.source, row, problem[0], problem[1])
            return self._final_id(item, row, None, fresh=False)
        if isinstance(item, Mapping):
            return self._record(item, row, None)
        if not isinstance(item, _Converted):
            try:
                records = _framework_records(item)
            except ValueError as e:
                return RowError(self.source, row, None, str(e))
            if records is None:
                return RowError(self.source, row, None, _not_a_sample(item))
            if len(records) != 1:
                return RowError(
                    self.source,
                    row,
                    None,
                    f"a {_type_name(item)} of {len(records)} rows inside a list; pass it on its own",
                )
            item = _Converted(*records[0])
        if isinstance(item.record, str):
            return RowError(self.source, row, None, item.record)
        return self._record(item.record, row, get_layout(item.layout))

    def _final_id(self, s: Sample, row: int, soft_key: str | None, fresh: bool = True) -> Sample | RowError:
        result, renamed = self._ids.assign(s, row, soft_key, fresh)
        if renamed:
            self.counts.renamed += 1
            if self.counts.renamed <= _MAX_DUPLICATE_NOTES:
                first = self._ids.used[s.id][1]
                new_id = result.id if isinstance(result, Sample) else s.id
                note = f"{self.source}:{row} repeats the content of {self.source}:{first}; read as id '{new_id}'"
                self._notes[note] = None
        return result

    def _record(self, raw: Mapping[str, Any], row: int, layout: Layout | None) -> Sample | RowError:
        try:
            sample, soft_key = self._sample_of(raw, row, layout)
            self._check_labels(sample, row)
        except SampleError as e:
            # a trace's record carries the trace id, as its other row errors do (assemble)
            sid = raw.get("id") if self.trace is not None else None
            return RowError(self.source, row, e.field, e.reason, sample_id=sid if isinstance(sid, str) else None)
        except (TypeError, ValueError) as e:  # odd cell types a framework may hand us
            return RowError(self.source, row, None, f"{type(e).__name__}: {e}")
        return self._final_id(sample, row, soft_key)

    def _check_labels(self, sample: Sample, row: int) -> None:
        problem = self._labels_problem(sample, row)
        if problem is not None:
            raise SampleError(*problem)

    def _labels_problem(self, sample: Sample, row: int) -> tuple[str, str] | None:
        """The sample's human labels read by ``--label``'s rule (``row_labels_problem``):
        (field, reason) for an unreadable one; a key that names no metric, which no
        comparison would read, is noted once (a misspelt ``fathfulness``)."""
        labels = sample.metadata.get("labels") if sample.metadata else None
        if labels is None:
            return None
        problem = row_labels_problem(labels)
        if not isinstance(labels, Mapping):
            self._notes[
                f"labels: a {type(labels).__name__}, not an object of metric: label (first at {self.source}:{row}); "
                "kept in metadata, and no comparison reads it"
            ] = None
            return None
        for key in labels if problem is None else ():
            if key not in self._label_keys:
                self._label_keys.add(key)
                if label_metric(str(key)) is None:
                    self._notes[
                        f"labels: '{key}' names no metric, so no comparison reads it (first at {self.source}:{row})"
                    ] = None
        return problem

    def _sample_of(self, raw: Mapping[str, Any], row: int, layout: Layout | None) -> tuple[Sample, str | None]:
        """(the row's Sample, its soft id's key or None); raises ``SampleError``. A plain
        row (``_plain``) skips the cell, layout and validation machinery, whose rules
        could only copy its values."""
        fast = self._plain(raw) if layout is None and self.layout is None else None
        if fast is not None:
            return Sample.trusted(fast), None
        if layout is None and self._detect and self._src.columns is None:
            self.layout = detect_layout(raw) or self.layout  # a row without the layout's keys keeps it
        lay = layout or self.layout
        rec, soft, renames = self._canonical(raw, row, lay)
        sample = Sample.from_record(
            rec, {k: v for k, v in renames.items() if v != "metadata"}, warn_unknown=False
        )  # the reader notes it once, with its row
        return sample, (lay.id_field if soft and lay is not None else None)

    def _plain(self, raw: Mapping[str, Any]) -> dict[str, Any] | None:
        """The row's fields for ``Sample.trusted`` when nothing this reader does to a row
        (labels, cell cleaning, a layout, ``--map``, unknown fields) applies to it and
        every value already has its field's type (``plain_fields``); else None."""
        if type(raw) is not dict or self._src.tabular:
            return None
        keys = tuple(raw)
        targets = self._targets.get(keys, _UNPLANNED)
        if targets is _UNPLANNED:
            targets = self._plan(raw)
            if len(self._targets) < _MAX_PLANS:  # a file of ever-new key sets plans each row
                self._targets[keys] = targets
        if targets is None:
            return None
        meta = raw.get("metadata")
        if type(meta) is dict and EXTRA_KEY in meta:
            return None  # fields a framework layout kept there: apply_layout restores them
        return plain_fields(raw, targets)

    def _plan(self, raw: Mapping[str, Any]) -> dict[str, str] | None:
        """Each key's canonical field, or None when a key is mapped, a label, unknown,
        not a string, a layout's signature, or two keys fill one field."""
        if self.labels or (self._detect and self._src.columns is None and detect_layout(raw) is not None):
            return None
        targets: dict[str, str] = {}
        for key in raw:
            target = "metadata" if key == "metadata" else target_of(key, raw, {})
            if type(key) is not str or key in self.mapping or target is None:
                return None
            targets[key] = target
        return targets if len(set(targets.values())) == len(targets) else None

    def _canonical(
        self, raw: Mapping[str, Any], row: int, lay: Layout | None
    ) -> tuple[dict[str, Any], bool, dict[str, str]]:
        """(record, soft id?, renames): the row with labels taken out, cells cleaned and
        the layout applied."""
        renames = renames_for(lay, raw, self.mapping)
        labels = self._take_labels(raw)
        seps = lay.list_seps if lay is not None else ("|",)
        cleaned: dict[str, Any] = {}
        for key, value in raw.items():
            key = str(key)
            if key in self.mapping:
                self._mapped_seen.add(key)
            if key in self._label_columns:
                continue
            if self._src.tabular and (is_missing(value) or (self._src.empty_is_missing and value == "")):
                continue
            target = target_of(key, raw, renames)
            self._note_unknown(key, target, row, lay)
            cleaned[key] = clean_value(
                value,
                key,
                target,
                tabular=self._src.tabular,
                mapped=key in self.mapping,
                sep=self.list_sep,
                auto_seps=seps,
            )
            if isinstance(value, str):  # a cell read as a list, not a list as given
                self._note_joined_id(key, target, cleaned[key], row)
        rec, soft = apply_layout(cleaned, lay, renames)
        if labels and isinstance(rec.get("labels"), Mapping):  # the row's own labels object
            rec["labels"] = merged_once(rec["labels"], labels, "labels", "labels", "its --label column")
        elif labels:
            rec["metadata"] = _with_labels(rec.get("metadata"), labels)
        return rec, soft, renames

    def _take_labels(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for metric, column in self.labels.items():
            if column not in raw:
                continue
            self._label_seen.add(column)
            try:
                value = label_value(raw[column])
            except ValueError as e:
                shown = str(raw[column])[:80]
                raise SampleError(f"labels.{metric}", f"column '{column}': cannot read label '{shown}': {e}") from None
            if value is not None:
                out[metric] = value
        return out

    def _note_joined_id(self, key: str, target: str | None, value: Any, row: int) -> None:
        """Note once per column a table cell read as one id that holds a comma ("d1,d2"):
        the list separators are ``|`` (and ``--list-sep``), so such a cell is one id that
        matches no other, and precision, recall and MRR read 0 without a word."""
        if target not in _ID_FIELDS or self.list_sep is not None or key in self._joined_noted:
            return
        if type(value) is list and len(value) == 1 and isinstance(value[0], str) and "," in value[0]:
            self._joined_noted.add(key)
            self._notes[
                f"column '{key}' holds {value[0][:40]!r} (first at {self.source}:{row}), read as one id; "
                f"if it lists ids, pass --list-sep ','"
            ] = None

    def _note_unknown(self, key: str, target: str | None, row: int, lay: Layout | None) -> None:
        if target is None and key != "metadata" and key not in self._unknown:
            if lay is not None and key == lay.id_field:
                return  # a row's name beside a real id: kept in metadata, not unknown
            if key in METADATA_KEYS:  # read from metadata (the human labels), not unknown
                return
            self._unknown.add(key)
            self._notes[f"unknown field '{key}' kept in metadata (first at {self.source}:{row})"] = None


_ID_FIELDS = ("retrieved_ids", "relevant_ids")
_NO_LAYOUT = ("unified", "ours", "jsonl")  # --from unified: our names and aliases only
_UNPLANNED: Any = object()
_MAX_PLANS = 4_096  # distinct key sets remembered by one reader


def _with_labels(meta: Any, labels: Mapping[str, Any]) -> dict[str, Any]:
    meta = dict(meta or {})
    have = meta.get("labels")
    if have is not None and not isinstance(have, Mapping):
        raise SampleError("metadata.labels", f"expected an object, got {type(have).__name__}")
    meta["labels"] = merged_once(have or {}, labels, "labels", "metadata.labels", "its --label column")
    return meta


def read_samples(
    source: Any,
    mapping: Mapping[str, str] | list[str] | str | None = None,
    *,
    fmt: str | None = None,
    split: str | None = None,
    layout: str | None = None,
    labels: Mapping[str, str] | list[str] | str | None = None,
    list_sep: str | None = None,
) -> SampleReader:
    """Yield a ``Sample`` or a ``RowError`` per row of ``source``, lazily, in order.

    ``source``: a path (``.jsonl``, ``.json``, ``.csv``, ``.tsv``, ``.parquet``; or
    ``fmt=``), a pandas DataFrame, a ``datasets.Dataset`` / ``DatasetDict`` (with
    ``split=`` when it has several), an iterable of dicts / Samples / RowErrors /
    framework objects, one dict or Sample, or a framework's dataset object.
    ``mapping`` renames source fields first (``{"q": "user_input"}`` or the CLI form
    ``"q=user_input"``); ``layout`` forces a framework layout (``"deepeval"``, …;
    ``"unified"`` = none) or a trace format (``"otlp"``, ``"openinference"``,
    ``"mlflow-traces"``, ``"langfuse"``: one Sample per trace, ``unified.data.traces``);
    ``labels`` (``{metric: column}`` or ``"metric=column"``) reads
    human labels from columns; ``list_sep`` splits list cells (``"none"``: never).
    Problems with the source itself (missing file, unknown format, split or layout)
    raise at once; bad rows do not. The returned reader has ``counts`` and ``notes``.
    ``load_samples``' own ``(samples, row_errors)`` pair is refused with the fix: read
    as an iterable it was two rows, each a list, two row errors instead of the samples.
    """
    if _is_loaded_pair(source):
        raise ValueError(
            "got load_samples()'s (samples, row_errors) pair: pass the samples alone "
            "(samples, row_errors = load_samples(path); evaluate(samples, ...)) or the path itself"
        )
    return SampleReader(source, mapping, fmt=fmt, split=split, layout=layout, labels=labels, list_sep=list_sep)


def _is_loaded_pair(source: Any) -> bool:
    """True for the ``(list of Sample, list of RowError)`` tuple ``load_samples`` returns."""
    return (
        type(source) is tuple
        and len(source) == 2
        and all(type(part) is list for part in source)
        and all(isinstance(s, Sample) for s in source[0])
        and all(isinstance(e, RowError) for e in source[1])
    )


def load_samples(
    source: Any, mapping: Mapping[str, str] | list[str] | str | None = None, **options: Any
) -> tuple[list[Sample], list[RowError]]:
    """All good samples and all row errors of ``source`` (options as ``read_samples``)."""
    good: list[Sample] = []
    bad: list[RowError] = []
    for item in read_samples(source, mapping, **options):
        (bad if isinstance(item, RowError) else good).append(item)
    return good, bad


def validate_source(
    source: Any, mapping: Mapping[str, str] | list[str] | str | None = None, **options: Any
) -> tuple[int, list[RowError], list[str]]:
    """Check every row exactly as a run reads it: (number of good rows, row errors,
    warnings). Warnings (``SampleReader.notes``) are listed once each; ``Sample``'s own
    UserWarnings (once per process) are captured so they do not print twice."""
    reader = read_samples(source, mapping, **options)
    errors: list[RowError] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for item in reader:
            if isinstance(item, RowError):
                errors.append(item)
    return reader.counts.samples, errors, reader.notes


# ---------------------------------------------------------------- writing


def _json_record(s: Sample) -> dict[str, Any]:
    return s.model_dump(mode="json", exclude_none=True)


def _table_row(s: Sample, *, lists_as_json: bool) -> dict[str, Any]:
    d = s.model_dump(mode="json")
    for f in _OBJECT_FIELDS:
        if d[f] is not None:
            d[f] = json.dumps(d[f], ensure_ascii=False, sort_keys=True)
    if lists_as_json:
        for f in LIST_FIELDS:
            if d[f] is not None:
                d[f] = json.dumps(d[f], ensure_ascii=False)
    return d


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(f, pa.list_(pa.string()) if f in LIST_FIELDS else pa.string()) for f in _FIELDS])


def _write_delimited(samples: Iterable[Sample], path: Path, delimiter: str) -> int:
    n = 0
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as out:
        w = csv.DictWriter(out, fieldnames=list(_FIELDS), delimiter=delimiter)
        w.writeheader()
        for s in samples:
            w.writerow(
                {k: ("" if v is None else neutralise_formula(v)) for k, v in _table_row(s, lists_as_json=True).items()}
            )
            n += 1
    return n


def _write_parquet(samples: Iterable[Sample], path: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema()
    n = 0
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
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


def write_samples(samples: Iterable[Sample], path: str | Path, fmt: str | None = None) -> int:
    """Write samples to ``path`` (format from the suffix or ``fmt``); returns the count.
    Formats as in the module docstring. The file is whole or not written at all
    (``unified.data.files``); a write error is an ``OutputError`` naming it."""
    path = Path(path)
    f = format_of(path, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    if f == "jsonl":
        n = 0
        with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as out:
            for s in samples:
                out.write(json.dumps(_json_record(s), ensure_ascii=False) + "\n")
                n += 1
        return n
    if f == "json":
        rows = [_json_record(s) for s in samples]
        write_text(path, json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return len(rows)
    if f in ("csv", "tsv"):
        return _write_delimited(samples, path, "\t" if f == "tsv" else ",")
    return _write_parquet(samples, path)


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

    features = datasets.Features(
        {f: datasets.List(datasets.Value("string")) if f in LIST_FIELDS else datasets.Value("string") for f in _FIELDS}
    )
    rows = [_table_row(s, lists_as_json=False) for s in samples]
    return datasets.Dataset.from_dict({f: [r[f] for r in rows] for f in _FIELDS}, features=features)
