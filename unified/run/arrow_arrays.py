"""Arrow arrays from Python lists, built from their buffers.

``pyarrow.array(list)`` first asks whether the list is a pandas object, and that
question imports pandas (about 50 MB of memory and 0.2 s of CPU, once per process) — in a
run that never uses pandas. ``scores.parquet`` is written at the end of every run, so a
100k-sample run paid it at its peak of memory (``docs/scale.md``). Here the same arrays
are made with ``Array.from_buffers`` from numpy buffers, which asks nothing of pandas.

Arrow's layouts (one validity bit per value, least significant bit first; 1 = present):

* ``float64`` / ``int64``: the values, a null slot holding 0;
* ``bool``: one bit per value, then the validity bits;
* ``string``: int32 offsets (n + 1 of them: offset[i + 1] − offset[i] = the UTF-8 length of
  value i), then the UTF-8 bytes of all values back to back.

``tests/test_arrow_arrays.py`` checks every kind against ``pyarrow.array`` on the same list.
"""

from __future__ import annotations

from typing import Any, Sequence

# a string column's offsets are int32: past this many bytes in one batch they would wrap
_MAX_STRING_BYTES = 2**31 - 1


def array(values: Sequence[Any], kind: type) -> Any:
    """``pyarrow.array(values, type=T)`` for ``kind`` ``float`` (float64), ``int``
    (int64), ``bool`` or ``str`` (string), each value of that Python type or None (a
    null). Raises ``UnicodeEncodeError`` for a string that is not UTF-8 (a lone
    surrogate), as ``pyarrow.array`` refuses it."""
    import numpy as np
    import pyarrow as pa

    n = len(values)
    nulls = values.count(None)
    if nulls == n:  # a field no row of the batch has (most of a deterministic run's)
        return pa.nulls(n, arrow_type(kind))
    present = None if nulls == 0 else np.fromiter((v is not None for v in values), dtype=bool, count=n)
    validity = None if present is None else pa.py_buffer(np.packbits(present, bitorder="little"))
    filled = values if present is None else [_ZERO[kind] if v is None else v for v in values]
    if kind is str:
        data = "".join(filled).encode("utf-8")
        if len(data) > _MAX_STRING_BYTES:  # the caller's batch is too big for one array: refused, never wrapped
            raise ValueError(f"{len(data):,} bytes of text in one string array (at most {_MAX_STRING_BYTES:,})")
        offsets = np.zeros(n + 1, dtype=np.int32)
        lengths = map(len, filled) if len(data) == sum(map(len, filled)) else (len(s.encode()) for s in filled)
        np.cumsum(np.fromiter(lengths, dtype=np.int64, count=n), out=offsets[1:])
        buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
    elif kind is bool:
        bits = np.packbits(np.fromiter(filled, dtype=bool, count=n), bitorder="little")
        buffers = [validity, pa.py_buffer(bits)]
    else:
        dtype = np.float64 if kind is float else np.int64
        buffers = [validity, pa.py_buffer(np.fromiter(filled, dtype=dtype, count=n))]
    return pa.Array.from_buffers(arrow_type(kind), n, buffers, null_count=nulls)


def arrow_type(kind: type) -> Any:
    """The Arrow type ``array`` builds for the Python type ``kind`` (one table for the
    arrays and for a schema of them)."""
    import pyarrow as pa

    return {float: pa.float64, int: pa.int64, bool: pa.bool_, str: pa.string}[kind]()


_ZERO: dict[type, Any] = {float: 0.0, int: 0, bool: False, str: ""}


_NUMPY_OF = {"double": "float64", "float": "float32", "int64": "int64", "int32": "int32", "int16": "int16"}
_NUMPY_OF.update(int8="int8", uint64="uint64", uint32="uint32", uint16="uint16", uint8="uint8")


def to_list(col: Any) -> list[Any]:
    """``col.to_pylist()`` for one Arrow array (or a chunked one): faster for numbers, bools and dictionary
    columns (read from their buffers through NumPy), and without pandas, which every
    ``Array.to_numpy`` imports. Any other type is ``to_pylist()``."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):  # a table's column: its chunks in turn
        return [v for chunk in col.chunks for v in to_list(chunk)]
    kind = col.type
    if pa.types.is_dictionary(kind):
        words = col.dictionary.to_pylist()
        return [None if i is None else words[i] for i in to_list(col.indices)]
    if str(kind) in _NUMPY_OF or pa.types.is_boolean(kind):
        return _plain(col)
    return list(col.to_pylist())


def _plain(col: Any) -> list[Any]:
    import numpy as np
    import pyarrow as pa

    n, start = len(col), col.offset
    validity, data = col.buffers()[:2]
    if n == 0:
        return []
    if pa.types.is_boolean(col.type):
        values = _bits(data, start, n).astype(bool).tolist()
    else:
        dtype = _NUMPY_OF[str(col.type)]
        values = np.frombuffer(data, dtype=dtype, count=start + n)[start:].tolist()
    if col.null_count:
        for i in np.flatnonzero(_bits(validity, start, n) == 0).tolist():
            values[i] = None
    return values


def _bits(buffer: Any, start: int, n: int) -> Any:
    import numpy as np

    return np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), count=start + n, bitorder="little")[start:]
