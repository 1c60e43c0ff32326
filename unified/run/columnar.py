"""``scores.parquet``: a columnar copy of ``scores.jsonl``, written at the end of a run,
read instead of the lines only while it provably describes them.

``scores.jsonl`` stays the one source of truth (appended, flushed, repaired, resumed).
The Parquet file is derived from it and is never believed on its own word:

* **Built from the bytes it vouches for.** ``write_parquet`` reads ``scores.jsonl`` once,
  hashing the very bytes it parses, and stores in the file's key-value metadata
  (``unified.scores``) the JSONL's fingerprint ``{"stat", "sha256"}`` — the same record
  and the same rule ``index.json`` uses (``unified.run.runindex.same_file``: by stat when
  it is unchanged, by sha256 when it is not). If the JSONL's stat moved while it was read,
  no Parquet is written.
* **Used only while fresh.** ``fresh_parquet`` answers the metadata only when
  ``same_file(scores.jsonl, stored)`` holds; a line added, removed or edited by hand since
  (any write changes the file's ctime; a copied folder is checked by content) makes every
  reader fall back to the lines, with one debug log line and nothing on the console.
* **Removed before a run changes the folder** (``remove_parquet``, beside
  ``remove_index``), and written atomically (temp file, fsync, rename) after the run's
  last change to the lines; an interrupted run writes none.

One row per line of the JSONL that a reader would parse (a JSON object whose
``metric``, ``backend`` and ``sample_id`` are strings; other lines are counted in the
metadata as ``unreadable``, as ``FileSource`` counts them), in file order, superseded
lines included: a reader applies last-wins itself, as it does to the lines. Columns:

====================================  =====================================================
``metric``, ``backend``, ``sample_id``  dictionary-encoded strings (the task key)
``value``, ``raw``, ``threshold``       float64, null when the line leaves the field out
``passed``, ``degraded``, ``row_error`` bool, null when left out
``reason``, ``error``, the two hashes   string, null when left out
``row``                                 int64, null when left out
``details``, ``cost``                   the field's JSON text, null when left out
``extra``                               JSON object of every other field, in line order
====================================  =====================================================

Nothing is lost: a value whose Python type is not the column's (an int ``value`` of a
hand-written line, a ``passed`` of null, an integer beyond int64) goes into ``extra``
instead, and ``extra`` wins on read. For a field whose default is null, an explicit null
and a missing key read the same (``unified.scores.full_line`` fills both with None), so
both are stored as a null cell. ``raw_line(row)`` therefore equals ``json.loads(line)``
for every line up to that equivalence; ``tests/test_columnar.py`` checks it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from pydantic_core import to_json

from unified.data.files import atomic_path
from unified.run.arrow_arrays import array, arrow_type, to_list
from unified.run.runfolder import PARQUET_FILE, SCORES_FILE, parse_line
from unified.run.runindex import file_digest, file_stat, same_file

FORMAT = 1
META_KEY = b"unified.scores"
# one row group per batch: memory stays bounded at a million lines. 4,096, not 16,384: with
# 16k-row batches a 20k-sample run (40k rows) peaked 36 MB above a 5k-sample one (10k rows,
# one part-filled batch), 2.4 KB a sample in tests/test_run_memory.py; the batch is the peak
BATCH_ROWS = 4_096
_LOG = logging.getLogger(__name__)

KEY = ("metric", "backend", "sample_id")
FLOATS = ("value", "raw", "threshold", "calibrated")
BOOLS = ("passed", "degraded", "row_error", "higher_is_better")
STRINGS = ("reason", "error", "sample_hash", "config_hash")
INTS = ("row", "input_index")
JSONS = ("details", "cost", "raw_range")
TYPED = FLOATS + BOOLS + STRINGS + INTS
# fields whose Score default is None: an explicit null reads as a missing key
_NULL_IS_DEFAULT = frozenset(FLOATS + STRINGS + INTS + ("passed",))
_KNOWN = frozenset((*KEY, *TYPED, *JSONS))  # every Score field: ``extra`` is empty for our own lines
_INT64 = 2**63
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
_ENCODE_ASCII = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def raw_line(raw: bytes | str) -> dict[str, Any] | None:
    """One line of ``scores.jsonl`` as its JSON object, or None when a reader cannot key
    it (torn, not JSON, not an object, ``metric``/``backend``/``sample_id`` not strings)."""
    if not raw.strip():
        return None
    d = parse_line(raw)
    if isinstance(d, dict) and all(isinstance(d.get(k), str) for k in KEY):
        return d
    return None


def _fits(kind: type, v: Any) -> bool:
    """True when ``v`` is stored in a typed column of ``kind`` and reads back as itself."""
    if type(v) is not kind:
        return False
    value: Any = v  # a line's value, of any JSON type (the check above narrows it to object)
    if kind is int:
        return bool(-_INT64 <= value < _INT64)
    return kind is not str or value.isascii() or _utf8(value)


def _utf8(s: str) -> bool:
    """False for a string Arrow cannot store (a lone surrogate from a ``\\ud800`` escape)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json(v: Any) -> str:
    """A JSON cell's text. pydantic's encoder first (about four times faster than the
    standard library's on a score's ``details``, at 200k rows a run); it refuses a lone
    surrogate and nesting deeper than its limit, which the standard library writes
    (escaped to ASCII when the text would not be UTF-8). Either way the text is a function
    of the value alone, so a row built from a line's object and one parsed from the line
    store the same cell; a reader only ``json.loads`` it."""
    try:
        return to_json(v).decode()
    except ValueError:  # PydanticSerializationError is one
        s = _ENCODE(v)
        return s if s.isascii() or _utf8(s) else _ENCODE_ASCII(v)


_KINDS: list[tuple[str, type]] = [
    *((k, float) for k in FLOATS),
    *((k, bool) for k in BOOLS),
    *((k, str) for k in STRINGS),
    *((k, int) for k in INTS),
]


class _Columns:
    """Rows being gathered into one record batch (one list per column)."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {k: [] for k in (*KEY, *TYPED, *JSONS, "extra")}
        # per key set of a row (a run's lines share a handful): which columns the row fills
        self._layouts: dict[tuple[str, ...], _Layout] = {}

    def __len__(self) -> int:
        return len(self.cols["metric"])

    def add(self, d: Mapping[str, Any]) -> None:
        keys = tuple(d)
        layout = self._layouts.get(keys) or self._layout(keys)
        cols: dict[str, list[Any]] = self.cols
        extra: dict[str, Any] = {}
        for k in KEY:
            cols[k].append(d[k])
        for col in layout.absent:  # a field the line leaves out: a null cell
            col.append(None)
        for k, kind, col in layout.typed:
            v = d[k]
            if type(v) is kind and (kind is float or kind is bool or _fits(kind, v)):
                col.append(v)
            elif v is None and k in _NULL_IS_DEFAULT:
                col.append(None)
            else:  # a type the column cannot hold as itself: kept whole in ``extra``
                col.append(None)
                extra[k] = v
        for k, col in layout.jsons:
            col.append(_json(d[k]))
        if layout.foreign:  # a foreign field: kept, in the line's order
            extra.update((k, v) for k, v in d.items() if k not in _KNOWN)
        cols["extra"].append(_json(extra) if extra else None)

    def batch(self) -> Any:
        import pyarrow as pa

        arrays = [array(self.cols[k], str).dictionary_encode() for k in KEY]
        arrays += [array(self.cols[k], kind) for k, kind in _KINDS]
        arrays += [array(self.cols[k], str) for k in (*JSONS, "extra")]
        return pa.RecordBatch.from_arrays(arrays, schema=schema())

    def _layout(self, keys: tuple[str, ...]) -> "_Layout":
        present, cols = set(keys), self.cols
        layout = _Layout(
            absent=[cols[k] for k, _ in _KINDS if k not in present] + [cols[k] for k in JSONS if k not in present],
            typed=[(k, kind, cols[k]) for k, kind in _KINDS if k in present],
            jsons=[(k, cols[k]) for k in JSONS if k in present],
            foreign=not present <= _KNOWN,
        )
        if len(self._layouts) < 256:  # hand-written lines may each have their own keys
            self._layouts[keys] = layout
        return layout


@dataclass(frozen=True)
class _Layout:
    """The columns one key set of a row fills (``_Columns.add``)."""

    absent: list[list[Any]]
    typed: list[tuple[str, type, list[Any]]]
    jsons: list[tuple[str, list[Any]]]
    foreign: bool


def _arrow_type(name: str) -> Any:
    # a typed column's Arrow type is the one its arrays are built with (``_KINDS``)
    return arrow_type(dict(_KINDS).get(name, str))


def schema() -> Any:
    """The Arrow schema of ``scores.parquet`` (module docstring)."""
    import pyarrow as pa

    fields = [pa.field(k, pa.dictionary(pa.int32(), pa.string()), nullable=False) for k in KEY]
    fields += [pa.field(k, _arrow_type(k)) for k in (*TYPED, *JSONS, "extra")]
    return pa.schema(fields)


def remove_parquet(folder: Path) -> None:
    """Drop ``scores.parquet`` before the folder's lines change (an absent copy is never stale)."""
    try:
        (Path(folder) / PARQUET_FILE).unlink(missing_ok=True)
    except OSError:
        pass  # a read-only folder: the run's own writes will say so


def write_parquet(folder: Path) -> dict[str, Any] | None:
    """Write ``folder/scores.parquet`` from ``folder/scores.jsonl`` (module docstring);
    its metadata, or None (and no file) when the lines changed while they were read.
    An ``OSError`` is the ``OutputError`` of ``atomic_path`` naming the file."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    scores, target = folder / SCORES_FILE, folder / PARQUET_FILE
    before = file_stat(scores)
    if before is None:
        remove_parquet(folder)
        return None
    with atomic_path(target) as tmp:
        with pq.ParquetWriter(tmp, schema(), compression="zstd", write_page_checksum=True) as writer:
            meta = _write_rows(scores, writer)
            meta["scores"]["stat"] = before
            if file_stat(scores) != before:
                raise _Moved()
            writer.add_key_value_metadata({META_KEY: json.dumps(meta)})
    return meta


class _Moved(Exception):
    """``scores.jsonl`` changed while the Parquet copy was built from it."""


def _write_rows(scores: Path, writer: Any) -> dict[str, Any]:
    """Stream the lines into ``writer`` a batch at a time; the metadata (sha256 of the
    bytes read, row and unreadable counts)."""
    digest, cols = hashlib.sha256(), _Columns()
    rows = unreadable = 0
    with open(scores, "rb") as f:
        for raw in f:
            digest.update(raw)
            d = raw_line(raw)
            if d is None:
                unreadable += bool(raw.strip())
                continue
            cols.add(d)
            rows += 1
            if len(cols) >= BATCH_ROWS:
                writer.write_batch(cols.batch())
                cols = _Columns()
    if len(cols) or rows == 0:
        writer.write_batch(cols.batch())
    return {"format": FORMAT, "scores": {"sha256": digest.hexdigest()}, "rows": rows, "unreadable": unreadable}


def build_parquet(folder: Path) -> dict[str, Any] | None:
    """``write_parquet``, None when the lines moved under it (the folder keeps no copy)."""
    try:
        return write_parquet(folder)
    except _Moved:
        _LOG.debug("%s changed while scores.parquet was built; none written", Path(folder) / SCORES_FILE)
        return None


class StreamCopy:
    """``scores.parquet`` built while a fresh run writes ``scores.jsonl``, so the end of
    the run does not parse every line it has just written.

    The runner's ``AppendLog`` hands over each block it appended: its text, its lines and,
    for a line written from a field dict (``unified.scores.line_and_object``), the
    object that line serialises — the line's ``json.loads``, without the parse; any
    other line is parsed here (``raw_line``). Rows are gathered and written in batches of
    ``BATCH_ROWS`` exactly as ``write_parquet`` gathers the file's lines, into an
    in-memory Parquet file (a few MB at 100k samples; nothing on disk until it is proven).

    **Proven, or not used.** The copy also hashes every byte handed over. ``finish``
    hashes ``scores.jsonl`` as it is at the end (the one hash of the file the run makes:
    the same fingerprint goes into ``index.json``) and keeps the copy only when the two
    digests are equal and the file's stat did not move meanwhile: then the file holds
    exactly the lines handed over, in order, and nothing else (the log was empty when the
    copy began). A compaction, a calibration, a jury, a line added by hand, a block that
    failed to write: the digests differ and the run builds the copy from the file, as
    before. The digest proves the lines, not the objects: an object must be exactly its
    line's ``json.loads`` (``line_and_object`` makes both from one dict of JSON types; a
    dict with non-string keys or a numpy number would make the two differ). The one
    producer today is the built-in block path; ``tests/test_columnar.py`` compares the
    streamed copy with the one built from the file."""

    def __init__(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._sink: Any = pa.BufferOutputStream()
        self._writer = pq.ParquetWriter(self._sink, schema(), compression="zstd", write_page_checksum=True)
        self._digest = hashlib.sha256()
        self._cols = _Columns()
        self.rows = self.unreadable = 0
        self.broken = False

    def wrote(self, data: str, lines: list[str], objects: list[dict[str, Any] | None]) -> None:
        """``data`` (``lines``, each ended by a newline) was appended to the file; ``objects``:
        each line's object, or None where the line must be parsed. Never raises: a row
        Arrow refuses leaves the copy unused (the end of the run builds it from the file)."""
        self._digest.update(data.encode("utf-8"))
        if self.broken:
            return
        try:
            for line, d in zip(lines, objects):
                if d is not None:
                    self._add(d)
                    continue
                for raw in line.split("\n"):  # the file's lines, as ``for raw in f`` splits them
                    parsed = raw_line(raw)
                    if parsed is None:
                        self.unreadable += bool(raw.strip())
                    else:
                        self._add(parsed)
        except Exception:  # Arrow's errors, a line too deep to parse, memory: never the run's problem
            self.broken = True

    def _add(self, d: Mapping[str, Any]) -> None:
        self._cols.add(d)
        self.rows += 1
        if len(self._cols) >= BATCH_ROWS:
            self._writer.write_batch(self._cols.batch())
            self._cols = _Columns()

    def finish(self, folder: Path) -> dict[str, Any] | None:
        """Write ``folder/scores.parquet`` from the copy when it is proven (class
        docstring); its metadata, or None (nothing written: the caller builds it from
        the file). An ``OSError`` is the ``OutputError`` of ``atomic_path``."""
        scores = Path(folder) / SCORES_FILE
        before = file_stat(scores)
        digest = None if before is None or self.broken else file_digest(scores)
        if digest is None or digest != self._digest.hexdigest() or file_stat(scores) != before:
            self._writer.close()
            self._sink, self._cols = None, _Columns()  # the buffers go at once
            return None
        if len(self._cols) or self.rows == 0:
            self._writer.write_batch(self._cols.batch())
        meta = {"format": FORMAT, "scores": {"sha256": digest, "stat": before}, "rows": self.rows}
        meta["unreadable"] = self.unreadable
        self._writer.add_key_value_metadata({META_KEY: json.dumps(meta)})
        self._writer.close()
        data, self._sink, self._cols = self._sink.getvalue(), None, _Columns()
        with atomic_path(Path(folder) / PARQUET_FILE) as tmp:
            with open(tmp, "wb") as f:
                f.write(data)
        return meta


def read_meta(path: Path) -> dict[str, Any] | None:
    """The ``unified.scores`` metadata of a Parquet file, or None (absent, unreadable, other format)."""
    import pyarrow.parquet as pq

    try:
        kv = pq.ParquetFile(path, page_checksum_verification=True).metadata.metadata or {}
        meta = json.loads(kv.get(META_KEY, b"null"))
    except Exception:  # a torn, foreign or unreadable file is simply not used
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT else None


def fresh_parquet(folder: Path) -> dict[str, Any] | None:
    """The metadata of ``folder/scores.parquet`` when it describes ``scores.jsonl`` as it
    is now (``runindex.same_file``); None otherwise — the caller reads the lines."""
    path = Path(folder) / PARQUET_FILE
    if not path.is_file():
        return None
    meta = read_meta(path)
    if meta is None or not same_file(Path(folder) / SCORES_FILE, meta.get("scores")):
        _LOG.debug("%s does not describe the current %s; reading the lines", path, SCORES_FILE)
        return None
    return meta


def iter_columns(path: Path, names: Iterable[str] | None = None) -> Iterator[tuple[int, dict[str, list[Any]]]]:
    """(row number of the batch's first row, column name -> Python values) a batch at a
    time; only the columns ``names`` when given."""
    import pyarrow.parquet as pq

    pos = 0
    cols = None if names is None else list(names)
    for batch in pq.ParquetFile(path, page_checksum_verification=True).iter_batches(
        batch_size=BATCH_ROWS, columns=cols
    ):
        yield pos, {name: to_list(batch.column(name)) for name in batch.schema.names}
        pos += batch.num_rows


_ORDER = (*KEY, *TYPED, *JSONS, "extra")


def _rows(cols: Mapping[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """Each row of a batch's columns as the line's JSON object (module docstring)."""
    loads = json.loads
    for values in zip(*(cols[k] for k in _ORDER)):
        d = {k: v for k, v in zip(_ORDER, values) if v is not None}
        for k in JSONS:
            if k in d:
                d[k] = loads(d[k])
        extra = d.pop("extra", None)
        if extra is not None:
            d.update(loads(extra))
        yield d


# what the report model keeps of a line (``unified.report.model.task_of``): no other
# column is read, and ``details`` is parsed only for a degraded line (its reason is there)
MODEL_FIELDS = (*KEY, "value", "passed", "error", "threshold", "degraded", "reason", "row_error", "cost", "details")


def iter_model_columns(path: Path) -> Iterator[tuple[int, dict[str, list[Any]]]]:
    """(row number of the batch's first row, ``MODEL_FIELDS`` and ``extra`` as Python
    values) a batch at a time: the columns the report model reads (``iter_columns``)."""
    return iter_columns(path, (*MODEL_FIELDS, "extra"))


def model_row(cols: Mapping[str, list[Any]], i: int) -> dict[str, Any]:
    """Row ``i`` of a batch of ``iter_model_columns`` as the line's ``MODEL_FIELDS``: the
    line's JSON object cut to those fields (``details`` left as its JSON text unless the
    line is degraded), ``extra`` applied."""
    loads = json.loads
    d = {k: v for k in (*MODEL_FIELDS, "extra") if (v := cols[k][i]) is not None}
    if "cost" in d:
        d["cost"] = loads(d["cost"])
    extra = d.pop("extra", None)
    if extra is not None:
        d.update(loads(extra))
    if d.get("degraded") and isinstance(d.get("details"), str):
        d["details"] = loads(d["details"])
    return d


def iter_model_fields(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, ``model_row``) of every row, in file order — the report model's pass
    without building each line."""
    for start, cols in iter_model_columns(path):
        for i in range(len(cols["metric"])):
            yield start + i, model_row(cols, i)


def iter_fields(path: Path, fields: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, the line's JSON object cut to the task key and ``fields``) of every
    row, in file order, reading only those columns (and ``extra``, where a value its
    column cannot hold is kept): ``diff`` needs four fields of 200k lines, not their
    ``details``."""
    wanted = tuple(f for f in fields if f not in KEY and f in _ORDER)
    loads, keep = json.loads, set(wanted)
    for start, cols in iter_columns(path, (*KEY, *wanted, "extra")):
        columns = [(k, cols[k]) for k in (*KEY, *wanted)]
        extras = cols["extra"]
        for i in range(len(extras)):
            d = {k: v for k, col in columns if (v := col[i]) is not None}
            for k in JSONS:
                if k in d:
                    d[k] = loads(d[k])
            if extras[i] is not None:
                d.update((k, v) for k, v in loads(extras[i]).items() if k in keep)
            yield start + i, d


def iter_raw(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, the line's JSON object) of every row, in file order."""
    for start, cols in iter_columns(path):
        for i, d in enumerate(_rows(cols)):
            yield start + i, d


def fetch_raw(path: Path, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The rows at ``positions`` (row numbers), as ``iter_raw`` gives them."""
    import pyarrow.parquet as pq

    want = sorted(set(positions))
    pf, start = pq.ParquetFile(path, page_checksum_verification=True), 0
    out: dict[int, dict[str, Any]] = {}
    for g in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(g).num_rows
        here = [p - start for p in want if start <= p < start + n]
        if here:  # only the row groups that hold a wanted row are read
            table = pf.read_row_group(g).take(array(here, int))  # an Arrow array: a list would import pandas
            cols = {name: table.column(name).to_pylist() for name in table.schema.names}
            out.update(zip((start + p for p in here), _rows(cols)))
        start += n
    return out
