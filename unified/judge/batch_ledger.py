"""``batches.jsonl``: what a run folder knows about the Batch API jobs it started.

One JSON object per line, appended, flushed and fsynced before the next step is taken,
so a process killed at any moment leaves a record of every job it may have paid for:

- ``{"event": "upload", "file_id", "endpoint", "custom_ids": [...], "time"}`` — written
  after ``POST /v1/files`` answered and **before** ``POST /v1/batches`` is sent;
- ``{"event": "batch", "batch_id", "file_id", "endpoint", "requests", "time"}`` — the
  job was created;
- ``{"event": "end", "batch_id", "status", "counts", "failed": [...], "usage", "time"}`` —
  the job reached a final state and its files were read (or was given up: its result
  files are gone, or it did not end after this run cancelled it); ``failed`` are the
  custom ids that got no usable answer (an error line, a malformed line, a custom id
  written twice, or no line at all); ``usage`` is what its
  answers were billed for, ``{model: [prompt tokens, completion tokens]}`` — the
  folder's record of what it paid, whichever process read the answers (``paid_tokens``).

Resume rule (``find``): a request whose custom id appears in an upload of the same
endpoint belongs to the *latest* such upload, unless that upload's job ended without a
usable answer for it (its id is in the job's ``failed`` list). Its answer is then
fetched from that job — polled while it runs, read again from its output file once it
has ended — and never sent again. An upload with no ``batch`` line (killed between the
two POSTs) is looked up by its input file id among the endpoint's jobs before anything
is resubmitted (``unified.judge.batch``).

What is never written: keys, URLs with credentials, request bodies. ``endpoint`` is the
judge's URL without userinfo or query but a model-choosing parameter (``unified.redact.endpoint_of``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCHES_FILE = "batches.jsonl"
#: states after which a job changes no more (OpenAI's ``Batch.status``)
FINAL_STATES = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass
class _Upload:
    file_id: str
    endpoint: str
    custom_ids: list[str] = field(default_factory=list)
    batch_id: str | None = None


@dataclass
class _End:
    status: str
    failed: set[str] = field(default_factory=set)
    usage: dict[str, list[int]] = field(default_factory=dict)


class BatchLedger:
    """The ``batches.jsonl`` of one run folder (``path``); ``None`` path: kept in memory
    only (a run without a folder has nothing to resume)."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self._uploads: dict[str, _Upload] = {}  # file_id -> upload
        self._latest: dict[tuple[str, str], str] = {}  # (endpoint, custom_id) -> file_id
        self._ends: dict[str, _End] = {}  # batch_id -> how it ended
        self.skipped_lines = 0
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        with self.path.open("r", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    self._apply(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    self.skipped_lines += 1  # a torn last line after a kill -9

    def _apply(self, rec: dict[str, Any]) -> None:
        event = rec["event"]
        if event == "upload":
            self._uploads[rec["file_id"]] = _Upload(rec["file_id"], rec["endpoint"], list(rec["custom_ids"]))
            for cid in rec["custom_ids"]:
                self._latest[(rec["endpoint"], cid)] = rec["file_id"]
        elif event == "batch":
            self._uploads.setdefault(rec["file_id"], _Upload(rec["file_id"], rec["endpoint"])).batch_id = rec[
                "batch_id"
            ]
        elif event == "end":
            usage = rec.get("usage")
            usage = usage if isinstance(usage, dict) else {}
            self._ends[rec["batch_id"]] = _End(rec["status"], set(rec.get("failed") or ()), usage)

    def _append(self, rec: dict[str, Any]) -> None:
        self._apply(rec)
        if self.path is None:
            return
        line = json.dumps({**rec, "time": round(time.time(), 3)}, separators=(",", ":")) + "\n"
        # O_APPEND + fsync: the record is on disk before the next POST is sent
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------ writing
    def uploaded(self, file_id: str, endpoint: str, custom_ids: list[str]) -> None:
        self._append({"event": "upload", "file_id": file_id, "endpoint": endpoint, "custom_ids": custom_ids})

    def created(self, batch_id: str, file_id: str, endpoint: str, requests: int) -> None:
        self._append(
            {"event": "batch", "batch_id": batch_id, "file_id": file_id, "endpoint": endpoint, "requests": requests}
        )

    def ended(
        self,
        batch_id: str,
        status: str,
        counts: dict[str, int],
        failed: list[str],
        usage: dict[str, list[int]] | None = None,
    ) -> None:
        self._append(
            {
                "event": "end",
                "batch_id": batch_id,
                "status": status,
                "counts": counts,
                "failed": failed,
                "usage": usage or {},
            }
        )

    # ------------------------------------------------------------ reading
    def find(self, endpoint: str, custom_id: str) -> tuple[str, str | None] | None:
        """``(file_id, batch_id or None)`` of the upload that holds this request's answer
        (or will), or None when it must be sent (never sent, or its job failed it)."""
        file_id = self._latest.get((endpoint, custom_id))
        if file_id is None:
            return None
        up = self._uploads[file_id]
        end = self._ends.get(up.batch_id) if up.batch_id else None
        if end is not None and custom_id in end.failed:
            return None
        return file_id, up.batch_id

    def paid_tokens(self) -> dict[str, list[int]]:
        """{model: [prompt, completion]} over every ended job of the folder, each once."""
        out: dict[str, list[int]] = {}
        for end in self._ends.values():
            for model, (tin, tout) in end.usage.items():
                total = out.setdefault(model, [0, 0])
                total[0] += int(tin)
                total[1] += int(tout)
        return out

    def jobs(self) -> int:
        """The jobs recorded as ended."""
        return len(self._ends)

    def ended_status(self, batch_id: str) -> str | None:
        end = self._ends.get(batch_id)
        return end.status if end else None

    def ended_jobs(self) -> frozenset[str]:
        """The ids of the jobs recorded as ended."""
        return frozenset(self._ends)

    def custom_ids_of_file(self, file_id: str) -> set[str]:
        up = self._uploads.get(file_id)
        return set(up.custom_ids) if up else set()

    def custom_ids_of(self, batch_id: str) -> set[str]:
        """Every custom id of the uploads sent as ``batch_id`` (for the ``failed`` list)."""
        return {cid for up in self._uploads.values() if up.batch_id == batch_id for cid in up.custom_ids}


@dataclass(frozen=True)
class _Billed:
    """A model's tokens over the folder's jobs, as ``usd_cost`` reads a call record."""

    model: str
    input_tokens: int
    output_tokens: int
    batch: bool = True


def paid_summary(path: Path, prices: Any) -> dict[str, Any]:
    """What the folder's batch jobs were billed for (``paid_tokens``), priced by the one
    rule of ``unified.judge.prices.usd_cost`` at the batch price::

        usd = Σ_model (prompt_tokens · in + completion_tokens · out) / 10⁶

    ``usd`` is None without a price table or when a model that used tokens has no price.
    Unlike the score lines' costs, it counts the answers a killed process read into the
    judge cache and a resumed run then found there (cache hits at $0 in its lines)."""
    from unified.judge.prices import usd_cost

    ledger = BatchLedger(path)
    billed = [_Billed(model, int(tin), int(tout)) for model, (tin, tout) in ledger.paid_tokens().items()]
    return {
        "jobs": ledger.jobs(),
        "input_tokens": sum(b.input_tokens for b in billed),
        "output_tokens": sum(b.output_tokens for b in billed),
        "usd": usd_cost(billed, prices),
    }


__all__ = ["BATCHES_FILE", "FINAL_STATES", "BatchLedger", "paid_summary"]
