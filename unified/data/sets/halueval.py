"""HaluEval (Li et al., EMNLP 2023; MIT), as its authors publish it: ``qa_data.json`` — one
JSON object a line, despite the suffix — each with the ``knowledge`` (from Wikipedia), the
``question``, the ground-truth ``right_answer`` and a generated ``hallucinated_answer``.
``dialogue_data.json`` (``knowledge``, ``dialogue_history``, ``right_response``,
``hallucinated_response``) and ``summarization_data.json`` (``document``,
``right_summary``, ``hallucinated_summary``) are read the same way.

Each row gives two samples on the same context: ``<row>:right`` (label 1) and
``<row>:hallucinated`` (label 0). The authors' own evaluation draws one of the two at
random per row; scoring both keeps the classes balanced and every row's pair together,
and ``--limit`` draws its balanced subset from both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from unified.data.readers import read_file
from unified.data.rowerror import RowError
from unified.data.sets.common import SUMMARISE, Item, labelled, row_or_error, text_of

#: task -> (context key, question key or None, right key, hallucinated key)
TASKS = {
    "qa": ("knowledge", "question", "right_answer", "hallucinated_answer"),
    "dialogue": ("knowledge", "dialogue_history", "right_response", "hallucinated_response"),
    "summarization": ("document", None, "right_summary", "hallucinated_summary"),
}


def read(path: Path, name: str) -> Iterator[Item]:
    fmt = "jsonl" if path.suffix.lower() in (".json", ".jsonl") else None
    if fmt is None:
        raise ValueError(f"{path}: HaluEval's files are JSON lines (qa_data.json, …)")
    for row, rec in read_file(path, fmt):
        if isinstance(rec, RowError):
            yield rec
            continue
        task = _task_of(rec)
        if task is None:
            yield RowError(path.name, row, None, "not a HaluEval row: expected the keys " + _expected())
            continue
        for which, label in (("right", 1), ("hallucinated", 0)):
            yield row_or_error(path.name, row, lambda rec=rec, w=which, y=label: _sample(rec, task, w, y, row, name))


def _task_of(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return None
    return next((t for t, keys in TASKS.items() if keys[2] in rec and keys[3] in rec), None)


def _expected() -> str:
    return " or ".join(f"{k[2]}/{k[3]}" for k in TASKS.values())


def _sample(rec: dict[str, Any], task: str, which: str, label: int, row: int, name: str) -> Any:
    context_key, question_key, right, hallucinated = TASKS[task]
    answer = rec[right if which == "right" else hallucinated]
    question = text_of(rec[question_key], question_key) if question_key else SUMMARISE
    return labelled(
        name,
        f"{row}:{which}",
        question=question,
        response=text_of(answer, "answer"),
        contexts=[text_of(rec[context_key], context_key)],
        label=label,
        extra={"task": task},
    )
