"""ARES (Saad-Falcon et al., NAACL 2024; Apache-2.0), as its authors publish it: a TSV of
(question, document, answer) triples with human labels — the human-annotated test sets
(``Question``, ``Document``, ``Answer``, ``Context_Relevance_Label``,
``Answer_Faithfulness_Label``, ``Answer_Relevance_Label``; a leading unnamed pandas index
column) and the few-shot files (``Query`` instead of ``Question``, labels written
``[[Yes]]`` / ``[[No]]``).

Every label column present is kept under ARES's names (``faithfulness``,
``context_relevance``, ``answer_relevance``; the run maps them to its metrics), read by
the one label rule (1/0, ``[[Yes]]``/``[[No]]``; an empty cell is no label). A row's id
is its index column when the file has one, else its line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from unified.data.labels import label_value
from unified.data.readers import read_file
from unified.data.rowerror import RowError
from unified.data.sets.common import Item, labelled, row_or_error, text_of

#: ARES's label column -> the label key (ARES's own names, known to the label rule)
LABELS = {
    "Answer_Faithfulness_Label": "faithfulness",
    "Context_Relevance_Label": "context_relevance",
    "Answer_Relevance_Label": "answer_relevance",
}


def read(path: Path, name: str) -> Iterator[Item]:
    for row, rec in read_file(path, "tsv"):
        if isinstance(rec, RowError):
            yield rec
        else:
            yield row_or_error(path.name, row, lambda rec=rec, row=row: _sample(rec, row, name))


def _sample(rec: dict[str, Any], row: int, name: str) -> Any:
    labels = {}
    for column, key in LABELS.items():
        try:
            value = label_value(rec.get(column))
        except ValueError as e:
            raise ValueError(f"{column}: {e}") from None
        if value is not None:
            labels[key] = value
    question = rec["Question"] if "Question" in rec else rec["Query"]
    index = (rec.get("") or "").strip()
    return labelled(
        name,
        index or str(row),
        question=text_of(question, "Question"),
        response=text_of(rec["Answer"], "Answer"),
        contexts=[text_of(rec["Document"], "Document")],
        labels=labels,
    )
