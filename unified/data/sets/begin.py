"""BEGIN (Dziri et al., TACL 2022), as its authors publish it: ``begin_{split}_{source}.tsv``
(``wow/begin_dev_wow.tsv``, ``cmu-dog/begin_dev_cmu.tsv``, …), one dialogue response a
row — ``model_name``, ``data_source``, ``knowledge`` (the snippet the response should be
grounded in), ``message`` (the previous turn), ``response``, ``begin_label``.

``Fully attributable`` → 1, ``Not fully attributable`` → 0; ``Generic`` is left out (a
generic reply makes no claim to attribute) and counted. The previous turn is the
question and the knowledge the one context. The files have no id column: a row's id is
``begin-<data_source>-<split>-<row>``, the row being its 1-based data row (header
excluded), stable for one version of the file.

The files quote nothing: a cell may open with ``"`` and hold more of them (``"Hourglass" is
a song …``), so a row is read as its line split at tabs (``csv.QUOTE_NONE``), never as
a quoted CSV field that would run on into the next rows.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Iterator

from unified.data.rowerror import RowError
from unified.data.sets.common import Item, labelled, row_or_error, text_of

LABELS = {"fully attributable": 1, "not fully attributable": 0}
LEFT_OUT = "generic"
_SPLIT = re.compile(r"begin_([a-z]+)_", re.IGNORECASE)


def read(path: Path, name: str) -> Iterator[Item]:
    m = _SPLIT.match(path.name)
    split = m.group(1).lower() if m else "all"
    for data_row, (line, rec) in enumerate(rows(path), start=1):
        if isinstance(rec, RowError):
            yield rec
        elif isinstance(rec, dict) and str(rec.get("begin_label", "")).strip().lower() == LEFT_OUT:
            continue
        else:
            yield row_or_error(path.name, line, lambda rec=rec, r=data_row: _sample(rec, r, split, name))


def _sample(rec: dict[str, Any], data_row: int, split: str, name: str) -> Any:
    verdict = text_of(rec["begin_label"], "begin_label").strip().lower()
    if verdict not in LABELS:
        raise ValueError(f"begin_label {rec['begin_label']!r} is none of Fully / Not fully attributable, Generic")
    source = text_of(rec["data_source"], "data_source").strip()
    return labelled(
        name,
        f"begin-{source}-{split}-{data_row:05d}",
        question=text_of(rec["message"], "message"),
        response=text_of(rec["response"], "response"),
        contexts=[text_of(rec["knowledge"], "knowledge")],
        label=LABELS[verdict],
        extra={"model": rec.get("model_name")},
    )


def rows(path: Path) -> Iterator[tuple[int, dict[str, str] | RowError]]:
    """(line, the row as a dict by header | RowError) for every data row of the TSV."""
    with path.open("rb") as f:
        header: list[str] | None = None
        for line_no, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8-sig" if line_no == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                yield line_no, RowError(path.name, line_no, None, f"byte at {e.start + 1} is not UTF-8")
                continue
            cells = next(csv.reader([text], delimiter="\t", quoting=csv.QUOTE_NONE))
            if header is None:
                header = cells
            elif any(c.strip() for c in cells):
                if len(cells) != len(header):
                    yield (
                        line_no,
                        RowError(path.name, line_no, None, f"{len(cells)} cells, the header has {len(header)}"),
                    )
                else:
                    yield line_no, dict(zip(header, cells))
