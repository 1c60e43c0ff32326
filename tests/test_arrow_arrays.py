"""Arrow arrays built from buffers equal ``pyarrow.array`` on the same lists, and building
them imports no pandas (the reason they exist: ``unified.run.arrow_arrays``)."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest

from unified.run.arrow_arrays import array

CASES = [
    ([0.5, None, 10.0, -0.0, float("inf"), float("nan"), 1e-300], float, pa.float64()),
    ([], float, pa.float64()),
    ([None, None], float, pa.float64()),
    ([1, None, -(2**63), 2**63 - 1, 0], int, pa.int64()),
    ([True, False, None, True, True, False, False, True, False], bool, pa.bool_()),
    ([True] * 17, bool, pa.bool_()),
    (["a", None, "", "café", "日本", "x" * 1000, None], str, pa.string()),
    (["plain", "ascii", ""], str, pa.string()),
    ([None], str, pa.string()),
]


@pytest.mark.parametrize("values,kind,arrow_type", CASES)
def test_the_same_array_as_pyarrow(values: list, kind: type, arrow_type: pa.DataType) -> None:
    ours = array(values, kind)
    ours.validate(full=True)
    want = pa.array(values, type=arrow_type)
    assert ours.type == want.type and ours.null_count == want.null_count
    # equals() treats NaN as unequal to itself: compare the Python values, NaN by identity of kind
    assert [repr(v) for v in ours.to_pylist()] == [repr(v) for v in want.to_pylist()]


def test_a_string_arrow_refuses_is_refused() -> None:
    with pytest.raises(UnicodeEncodeError):
        array(["ok", "\ud800"], str)


def test_no_pandas_is_imported() -> None:
    code = (
        "import sys\nfrom unified.run.arrow_arrays import array\n"
        "array([1.0, None], float); array(['a', None], str).dictionary_encode(); array([True], bool)\n"
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("values,kind,arrow_type", CASES)
def test_to_list_reads_back_what_pyarrow_reads(values: list, kind: type, arrow_type: pa.DataType) -> None:
    from unified.run.arrow_arrays import to_list

    col = pa.array(values, type=arrow_type)
    for part in (col, col.slice(1), col.slice(2, 3)):  # an offset into shared buffers
        assert [repr(v) for v in to_list(part)] == [repr(v) for v in part.to_pylist()]
    encoded = pa.array(values, type=arrow_type).dictionary_encode()
    assert [repr(v) for v in to_list(encoded.slice(1))] == [repr(v) for v in encoded.slice(1).to_pylist()]


def test_a_chunked_column_reads_chunk_by_chunk() -> None:
    from unified.run.arrow_arrays import to_list

    col = pa.chunked_array([pa.array([1.0, None]), pa.array([3.0])])
    assert to_list(col) == [1.0, None, 3.0]


def test_a_string_array_past_int32_offsets_is_refused_not_wrapped(monkeypatch) -> None:
    import unified.run.arrow_arrays as module

    monkeypatch.setattr(module, "_MAX_STRING_BYTES", 10)
    assert array(["12345", "67890"], str).to_pylist() == ["12345", "67890"]
    with pytest.raises(ValueError, match="11 bytes of text"):
        array(["12345", "678901"], str)
