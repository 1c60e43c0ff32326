"""RowError: an input row that never became a Sample — the one class for every source.

File readers, in-memory records, framework objects and ``unified.data.pipeline`` (a question
whose retriever or generator failed) all report a bad row with it; the runner writes one
error Score per task for it, filed under ``row:<row>`` or, when the error knows the
sample it was meant to be, under ``sample_id``.
"""

from __future__ import annotations

from dataclasses import dataclass


def _one_line(text: str) -> str:
    # a reason may quote user text: no newline (one-line errors) and no lone surrogate
    # (the error itself must be writable as UTF-8 JSON)
    flat = " ".join(str(text).split())
    return flat.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass
class RowError:
    """A row that could not become a Sample. ``source`` is the file name (or ``DataFrame``,
    ``Dataset``, ``records``, ``pipeline``); ``row`` the 1-based line number for JSONL,
    CSV and TSV, the 1-based position otherwise; ``field`` the offending field (a path
    such as ``metadata.a[2]``) or None; ``sample_id`` the id the row would have had, when
    known (a pipeline question's id), else None."""

    source: str
    row: int
    field: str | None
    reason: str
    sample_id: str | None = None

    def __post_init__(self) -> None:
        self.reason = _one_line(self.reason)
        if self.field is not None:
            self.field = _one_line(self.field)
        if self.sample_id is not None:
            self.sample_id = _one_line(self.sample_id)

    def __str__(self) -> str:
        where = f"{self.source}:{self.row}"
        if self.sample_id:
            where += f" (id {self.sample_id})"
        return f"{where}: field '{self.field}': {self.reason}" if self.field else f"{where}: {self.reason}"
