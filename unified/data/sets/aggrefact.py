"""LLM-AggreFact (Tang, Laban and Durrett 2024), as its authors publish it: rows with
``dataset`` (which of the aggregated datasets the row comes from), ``doc`` (the grounding
document), ``claim`` and ``label`` (1 when the document supports the claim, else 0) — the
Hugging Face dataset's columns, read from a CSV, JSONL or Parquet export of it.

The benchmark reports each ``dataset`` as a set of its own, ``<name>:<dataset>``, as the
leaderboard does; a file without the column is one set. The claim is the response and
the document its one context; there is no question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from unified.data.labels import label_value
from unified.data.readers import format_of, read_file
from unified.data.rowerror import RowError
from unified.data.sets.common import Item, labelled, row_or_error, text_of


def read(path: Path, name: str) -> Iterator[Item]:
    for row, rec in read_file(path, format_of(path, None)):
        if isinstance(rec, RowError):
            yield rec
        elif not isinstance(rec, dict):
            yield RowError(path.name, row, None, "not a row of doc, claim and label")
        else:
            yield row_or_error(path.name, row, lambda rec=rec, row=row: _sample(rec, row, name))


def _sample(rec: dict[str, Any], row: int, name: str) -> Any:
    label = label_value(rec["label"])
    if label not in (0, 1):
        raise ValueError(f"label {rec['label']!r} is not 0 or 1")
    dataset = rec.get("dataset")
    # a set name holds no '/': the sample id is <set>/<row>
    set_name = f"{name}:{dataset.strip().replace('/', '-')}" if isinstance(dataset, str) and dataset.strip() else name
    return labelled(
        set_name,
        str(row),
        response=text_of(rec["claim"], "claim"),
        contexts=[text_of(rec["doc"], "doc")],
        label=int(label),
    )
