"""RAGTruth (Niu et al., ACL 2024; MIT), as its authors publish it: ``response.jsonl`` (one
model response a line: ``id``, ``source_id``, ``model``, ``labels`` — the hallucination
spans annotators marked — ``split``, ``quality``, ``response``) beside
``source_info.jsonl`` (one source a line: ``source_id``, ``task_type`` QA / Summary /
Data2txt, ``source_info`` — a QA row's ``question`` and ``passages``, a news text, or a
business record — and ``prompt``). PATH is their folder or either file.

Kept as the authors' baseline evaluates (``baseline/prepare_dataset.py``): the ``test``
split, responses of ``quality`` good (not an incorrect refusal, not truncated). A
response is faithful (label 1) when annotators marked no span, else 0 — a response
level verdict, as the paper's response-level detection task.

The sample: the QA question as ``user_input`` (a summary or a data-to-text response
answered a task instruction, which becomes the question so frameworks that need one can
run); the passages, the news text, or the record as JSON as the one context.

Also read: the redistribution of one line per source (``source_id``, ``source``,
``responses``: ``response``, ``model``, ``labels``) found in evaluation repositories;
its task is told by the source's shape, its spans may be a JSON string, it has no split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from unified.data.readers import read_file
from unified.data.rowerror import RowError
from unified.data.sets.common import Item, labelled, row_or_error, text_of

TASK = {
    "Summary": "Summarize the following news article.",
    "Data2txt": "Write an objective overview of the business described by the structured "
    "data (JSON) below, based only on that data.",
}
RESPONSES, SOURCES = "response.jsonl", "source_info.jsonl"


def read(path: Path, name: str) -> Iterator[Item]:
    folder = path if path.is_dir() else path.parent
    if (folder / RESPONSES).is_file() and (folder / SOURCES).is_file():
        yield from _original(folder, name)
    elif path.is_file() and path.name not in (RESPONSES, SOURCES):
        yield from _per_source(path, name)
    else:
        raise ValueError(f"{path}: RAGTruth needs {RESPONSES} and {SOURCES} side by side")


def spans(labels: Any) -> list[Any]:
    """The hallucination spans of a response (a list, or that list as a JSON string)."""
    if isinstance(labels, str):
        labels = json.loads(labels or "[]")
    if not isinstance(labels, list):
        raise TypeError(f"'labels' is {type(labels).__name__}, not a list of spans")
    return labels


def task_and_context(task: str, info: Any) -> tuple[str | None, str]:
    """(question, context) of a source: QA's question and passages; a summary's text; a
    record as JSON."""
    if task == "QA":
        return text_of(info["question"], "question"), text_of(info["passages"], "passages")
    if task == "Summary":
        return TASK["Summary"], text_of(info, "source_info")
    if task == "Data2txt":
        return TASK["Data2txt"], json.dumps(info, ensure_ascii=False)
    raise ValueError(f"unknown task_type {task!r}")


def _original(folder: Path, name: str) -> Iterator[Item]:
    sources: dict[str, tuple[str, Any]] = {}
    for row, rec in read_file(folder / SOURCES, "jsonl"):
        if isinstance(rec, RowError):
            yield rec
        elif isinstance(rec, dict) and "source_id" in rec:
            sources[str(rec["source_id"])] = (str(rec.get("task_type")), rec.get("source_info"))
        else:
            yield RowError(SOURCES, row, "source_id", "missing")
    for row, rec in read_file(folder / RESPONSES, "jsonl"):
        if isinstance(rec, RowError):
            yield rec
        elif isinstance(rec, dict) and rec.get("split", "test") == "test" and rec.get("quality", "good") == "good":
            yield row_or_error(RESPONSES, row, lambda rec=rec: _response(rec, sources, name))


def _response(rec: dict[str, Any], sources: dict[str, tuple[str, Any]], name: str) -> Any:
    source_id = str(rec["source_id"])
    if source_id not in sources:
        raise ValueError(f"source_id {source_id} is not in {SOURCES}")
    question, context = task_and_context(*sources[source_id])
    return labelled(
        name,
        str(rec["id"]),
        question=question,
        response=text_of(rec["response"], "response"),
        contexts=[context],
        label=0 if spans(rec["labels"]) else 1,
        extra={"model": rec.get("model"), "source_id": source_id, "task_type": sources[source_id][0]},
    )


def _per_source(path: Path, name: str) -> Iterator[Item]:
    for row, rec in read_file(path, "jsonl"):
        if isinstance(rec, RowError):
            yield rec
            continue
        responses = rec.get("responses") if isinstance(rec, dict) else None
        if not isinstance(responses, list):
            yield RowError(path.name, row, "responses", "missing: not a RAGTruth line of one source and its responses")
            continue
        for i, resp in enumerate(responses):
            yield row_or_error(path.name, row, lambda rec=rec, resp=resp, i=i: _from_source(rec, resp, i, name))


def _from_source(src: dict[str, Any], resp: dict[str, Any], i: int, name: str) -> Any:
    info = src["source"]
    task = (
        "QA"
        if isinstance(info, dict) and {"question", "passages"} <= set(info)
        else ("Data2txt" if isinstance(info, dict) else "Summary")
    )
    question, context = task_and_context(task, info)
    model = resp.get("model") or f"response{i + 1}"
    return labelled(
        name,
        f"{src['source_id']}:{model}",
        question=question,
        response=text_of(resp["response"], "response"),
        contexts=[context],
        label=0 if spans(resp["labels"]) else 1,
        extra={"model": model, "source_id": str(src["source_id"]), "task_type": task},
    )
