"""Your own labelled file (``--set jsonl:FILE``, ``--labels FILE``): anything this project
reads as samples (JSONL, JSON, CSV, TSV, Parquet; any framework's field names), each row
with a ``labels`` object (``{"faithfulness": 1}``; graded labels are binarised by the
cross-check's rule, ``--label-cut`` where their scale is not clear). A row's id is its
own (``id``), else its content hash, as every run reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from unified.data.io import read_samples
from unified.data.rowerror import RowError
from unified.data.sets.common import SET_KEY, Item


def read(path: Path, name: str) -> Iterator[Item]:
    for item in read_samples(path):
        if isinstance(item, RowError):
            yield item
            continue
        item.metadata = {**item.metadata, SET_KEY: name}
        item.id = f"{name}/{item.id}"
        yield item
