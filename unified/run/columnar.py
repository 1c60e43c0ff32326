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
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from unified.data.files import atomic_path
from unified.run.runfolder import PARQUET_FILE, SCORES_FILE
from unified.run.runindex import file_stat, same_file

FORMAT = 1
META_KEY = b"unified.scores"
BATCH_ROWS = 65_536  # one row group per batch: memory stays bounded at a million lines
_LOG = logging.getLogger(__name__)

KEY = ("metric", "backend", "sample_id")
FLOATS = ("value", "raw", "threshold")
BOOLS = ("passed", "degraded", "row_error")
STRINGS = ("reason", "error", "sample_hash", "config_hash")
INTS = ("row",)
JSONS = ("details", "cost")
TYPED = FLOATS + BOOLS + STRINGS + INTS
_NULL_IS_DEFAULT = frozenset(FLOATS + STRINGS + INTS + ("passed",))  # Score defaults None
_INT64 = 2**63


def raw_line(raw: bytes | str) -> dict[str, Any] | None:
    """One line of ``scores.jsonl`` as its JSON object, or None when a reader cannot key
    it (torn, not JSON, not an object, ``metric``/``backend``/``sample_id`` not strings)."""
    if not raw.strip():
        return None
    try:
        d = json.loads(raw)
    except ValueError:
        return None
    if isinstance(d, dict) and all(isinstance(d.get(k), str) for k in KEY):
        return d
    return None


def _fits(name: str, v: Any) -> bool:
    """True when ``v`` is stored in ``name``'s typed column and reads back as itself."""
    if name in FLOATS:
        return type(v) is float
    if name in BOOLS:
        return type(v) is bool
    if name in INTS:
        return type(v) is int and -_INT64 <= v < _INT64
    return type(v) is str and (v.isascii() or _utf8(v))


def _utf8(s: str) -> bool:
    """False for a string Arrow cannot store (a lone surrogate from a ``\\ud800`` escape)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json(v: Any) -> str:
    s = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return s if s.isascii() or _utf8(s) else json.dumps(v, separators=(",", ":"))


class _Columns:
    """Rows being gathered into one record batch (one list per column)."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {k: [] for k in (*KEY, *TYPED, *JSONS, "extra")}

    def __len__(self) -> int:
        return len(self.cols["metric"])

    def add(self, d: Mapping[str, Any]) -> None:
        cols, extra = self.cols, {}
        for k in KEY:
            cols[k].append(d[k])
        for k in TYPED:
            v = d.get(k)
            fits = _fits(k, v) or (v is None and k in _NULL_IS_DEFAULT)
            cols[k].append(v if fits else None)
            if not fits and k in d:
                extra[k] = v
        for k in JSONS:
            cols[k].append(_json(d[k]) if k in d else None)
        for k, v in d.items():
            if k not in _KNOWN:
                extra[k] = v
        cols["extra"].append(_json(extra) if extra else None)

    def batch(self) -> Any:
        import pyarrow as pa

        arrays = [pa.array(self.cols[k], type=pa.string()).dictionary_encode() for k in KEY]
        arrays += [pa.array(self.cols[k], type=_arrow_type(k)) for k in (*TYPED, *JSONS, "extra")]
        return pa.RecordBatch.from_arrays(arrays, schema=schema())


_KNOWN = frozenset((*KEY, *TYPED, *JSONS))


def _arrow_type(name: str) -> Any:
    import pyarrow as pa

    if name in FLOATS:
        return pa.float64()
    if name in BOOLS:
        return pa.bool_()
    if name in INTS:
        return pa.int64()
    return pa.string()


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
        with pq.ParquetWriter(tmp, schema(), compression="zstd") as writer:
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


def read_meta(path: Path) -> dict[str, Any] | None:
    """The ``unified.scores`` metadata of a Parquet file, or None (absent, unreadable, other format)."""
    import pyarrow.parquet as pq

    try:
        kv = pq.ParquetFile(path).metadata.metadata or {}
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


def _row(cols: Mapping[str, list[Any]], i: int) -> dict[str, Any]:
    """Row ``i`` of a batch's columns as the line's JSON object (module docstring)."""
    d = {k: cols[k][i] for k in KEY}
    for k in TYPED:
        v = cols[k][i]
        if v is not None:
            d[k] = v
    for k in JSONS:
        text = cols[k][i]
        if text is not None:
            d[k] = json.loads(text)
    extra = cols["extra"][i]
    if extra is not None:
        d.update(json.loads(extra))
    return d


def iter_raw(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, the line's JSON object) of every row, in file order."""
    import pyarrow.parquet as pq

    pos = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
        cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        for i in range(batch.num_rows):
            yield pos + i, _row(cols, i)
        pos += batch.num_rows


def fetch_raw(path: Path, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The rows at ``positions`` (row numbers), as ``iter_raw`` gives them."""
    import pyarrow.parquet as pq

    want = sorted(set(positions))
    pf, out, start = pq.ParquetFile(path), {}, 0
    for g in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(g).num_rows
        here = [p - start for p in want if start <= p < start + n]
        if here:  # only the row groups that hold a wanted row are read
            table = pf.read_row_group(g).take(here)
            cols = {name: table.column(name).to_pylist() for name in table.schema.names}
            out.update({start + p: _row(cols, i) for i, p in enumerate(here)})
        start += n
    return out
