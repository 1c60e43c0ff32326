"""SummaC benchmark rows (Laban et al., TACL 2022), as its benchmark code builds them
(``SummaCBenchmark(...).get_dataset(name)``): ``document``, ``claim`` (the summary),
``label`` (1 consistent, 0 inconsistent) and per-dataset keys (``model_name``,
``cnndm_id``, ``bbcid``, ``annotations``, ``cut``, ``dataset``). Read from JSON: a list
of such rows, or an object keyed by row name (the shape the repository's
``data/summeval.json``, ``xsumfaith.json`` and ``factcc.json`` hold).

The summary is the response, the document its one context, and the question the
instruction a summary answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from unified.data.labels import label_value
from unified.data.readers import loads
from unified.data.sets.common import SUMMARISE, Item, labelled, row_or_error, text_of

KEPT = ("model_name", "cnndm_id", "bbcid", "dataset", "cut", "annotations", "error_type")


def read(path: Path, name: str) -> Iterator[Item]:
    try:
        doc = loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not SummaC benchmark rows (a JSON list or object of rows): {e}") from None
    if isinstance(doc, dict):
        rows = list(doc.items())
    elif isinstance(doc, list):
        rows = [(str(i), rec) for i, rec in enumerate(doc, start=1)]
    else:
        raise ValueError(f"{path}: not SummaC benchmark rows (a JSON list or object of rows)")
    for i, (key, rec) in enumerate(rows, start=1):
        yield row_or_error(path.name, i, lambda key=key, rec=rec: _sample(key, rec, name))


def _sample(key: str, rec: dict[str, Any], name: str) -> Any:
    label = label_value(rec["label"])
    if label not in (0, 1):
        raise ValueError(f"label {rec['label']!r} is not 0 or 1")
    return labelled(
        name,
        key,
        question=SUMMARISE,
        response=text_of(rec["claim"], "claim"),
        contexts=[text_of(rec["document"], "document")],
        label=int(label),
        extra={k: rec[k] for k in KEPT if k in rec},
    )
