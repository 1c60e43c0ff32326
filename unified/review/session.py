"""One person reviewing one run folder: the queue in their order, their labels, the screen.

The run folder is read once (``unified.report.Report``); ``labels.jsonl`` is read again on
every request, so two servers on one folder — two people — see each other's labels, and a
second ``review`` starts where the first stopped: nothing lives in the browser or in the
server's memory that the file does not hold.

A person's order of the samples (what ``←``/``→`` walk)::

    [samples they finished, by the time of their last label]
  + [open samples they never skipped, most disputed first (unified.review.queue)]
  + [open samples they skipped, most disputed first]

A sample is *finished* when every metric the filters keep for it holds a label of this
person that is not stale (``unified.data.labelfile``); finished samples have left the
queue. The first open sample is where a review resumes.

The run's fingerprint, written with each label: the first 16 hex digits of sha256 of the
sorted configuration hashes in ``run.json`` — what scored the values the person saw.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unified.analysis.annotators import annotator_agreement
from unified.data.labelfile import (
    LABELS_FILE,
    MAX_NOTE,
    LabelHistory,
    LabelLine,
    append_label,
    is_stale,
    now,
    read_history,
)
from unified.review.queue import Filters, Item, build_items, disagreement_order
from unified.review.spans import segments, unsupported_claims
from unified.run.runfolder import MANIFEST_FILE


def run_fingerprint(run_dir: Path) -> str | None:
    """The run's fingerprint (module docstring), None without a readable ``run.json``."""
    try:
        configs = json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8")).get("configs") or {}
    except (OSError, ValueError, AttributeError):
        return None
    blob = json.dumps(sorted(configs), separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def graded_metric(metric: str) -> bool:
    """True when people grade ``metric`` on 0–10 (a rubric metric asks for a grade on its
    scale); every other metric is labelled pass / fail."""
    from unified.metrics import UnknownMetricError, parse_metric

    try:
        return parse_metric(metric).spec.rubric is not None
    except UnknownMetricError:
        return False


@dataclass(frozen=True)
class Position:
    """Where a sample stands in a person's order: its index, the order's length, the
    samples before and after it, and how many are still open."""

    index: int
    total: int
    prev_id: str | None
    next_id: str | None
    open: int


class ReviewSession:
    """The review of the run folder ``run_dir`` by ``annotator`` (module docstring)."""

    def __init__(self, run_dir: str | Path, annotator: str) -> None:
        from unified.report import Report

        self.run_dir = Path(run_dir)
        if not annotator.strip() or any(c in annotator for c in "\r\n"):
            raise ValueError(f"--annotator {annotator!r}: a name on one line is needed")
        self.annotator = annotator.strip()
        report = Report.from_dir(self.run_dir)
        self.lines: dict[str, list[dict[str, Any]]] = {}  # sample id -> its score lines
        for d in report.iter_score_dicts():
            self.lines.setdefault(str(d.get("sample_id")), []).append(d)
        self.items = build_items(d for lines in self.lines.values() for d in lines)
        self.samples = report.samples()
        self.hashes = {sid: s.content_hash() for sid, s in report.sample_objects().items()}
        self._sample_order = {sid: i for i, sid in enumerate(self.samples)}
        self.metrics = sorted({m for _, m in self.items})
        self.backends = sorted({v.backend for it in self.items.values() for v in it.verdicts})
        self.fingerprint = run_fingerprint(self.run_dir)
        self.labels_path = self.run_dir / LABELS_FILE
        self._write = threading.Lock()  # one label line at a time from this server

    # ------------------------------------------------------------------ reading

    def history(self) -> LabelHistory:
        return read_history(self.labels_path)

    def my_labels(self, history: LabelHistory) -> dict[tuple[str, str], LabelLine]:
        """(sample id, metric) -> this person's last label that is not stale."""
        return {
            (sid, metric): line
            for (who, sid, metric), line in history.latest().items()
            if who == self.annotator and not is_stale(line, self.hashes)
        }

    def kept(self, filters: Filters) -> dict[str, list[Item]]:
        """Sample id -> the items ``filters`` keep, in metric order."""
        out: dict[str, list[Item]] = {}
        for (sid, _), item in sorted(self.items.items(), key=lambda kv: kv[0][1]):
            if filters.keeps(item):
                out.setdefault(sid, []).append(item)
        return out

    def order(self, filters: Filters, history: LabelHistory) -> tuple[list[str], int]:
        """(this person's order of the samples the filters keep, how many are finished):
        the module docstring's three blocks."""
        kept = self.kept(filters)
        mine = self.my_labels(history)
        finished = {sid: max(mine[(sid, it.metric)].time for it in its) for sid, its in kept.items()
                    if all((sid, it.metric) in mine for it in its)}  # fmt: skip
        skipped = history.skipped(self.annotator)
        ranked = disagreement_order([it for its in kept.values() for it in its], self._sample_order)
        done = sorted(finished, key=lambda sid: (finished[sid], self._sample_order.get(sid, 0)))
        fresh = [sid for sid in ranked if sid not in finished and sid not in skipped]
        later = [sid for sid in ranked if sid not in finished and sid in skipped]
        return done + fresh + later, len(done)

    def position(self, sid: str, order: list[str], finished: int) -> Position:
        i = order.index(sid)
        return Position(
            index=i,
            total=len(order),
            prev_id=order[i - 1] if i > 0 else None,
            next_id=order[i + 1] if i + 1 < len(order) else None,
            open=len(order) - finished,
        )

    def screen(self, sid: str, filters: Filters, history: LabelHistory) -> dict[str, Any]:
        """What the sample's page shows (``unified.review.web`` renders it)."""
        sample = self.samples.get(sid, {"id": sid})
        claims = unsupported_claims(self.lines.get(sid, ()))
        answer = str(sample.get("response") or "")
        mine = self.my_labels(history)
        items = self.kept(filters).get(sid) or [it for (s, _), it in sorted(self.items.items()) if s == sid]
        return {
            "sample": sample,
            "answer": segments(answer, claims),
            "claims": claims,
            "contexts": [str(c) for c in sample.get("retrieved_contexts") or ()],
            "items": [
                {"item": it, "graded": graded_metric(it.metric), "mine": mine.get((sid, it.metric))} for it in items
            ],
        }

    def agreement(self, history: LabelHistory) -> list[dict[str, Any]]:
        """Per metric that two or more people labelled: their agreement
        (``unified.analysis.annotators``)."""
        out = []
        for metric in sorted({line.metric for line in history.lines if line.metric}):
            per = history.by_annotator(metric, self.hashes)
            if len(per) >= 2:
                out.append(annotator_agreement(metric, per))
        return out

    # ------------------------------------------------------------------ writing

    def label(self, sid: str, metric: str, value: float, note: str = "") -> LabelLine:
        """Append this person's label of (``sid``, ``metric``): 1 / 0, or a grade on 0–10
        for a graded metric; a one-line ``ValueError`` for anything else."""
        if (sid, metric) not in self.items:
            raise ValueError(f"no scores of metric {metric!r} for sample {sid!r} in {self.run_dir}")
        if graded_metric(metric):
            if not 0 <= value <= 10:
                raise ValueError(f"label {value}: {metric} is graded on 0–10")
        elif value not in (0, 1):
            raise ValueError(f"label {value}: {metric} is labelled 1 (pass) or 0 (fail)")
        label: int | float = int(value) if float(value).is_integer() else float(value)
        line = LabelLine(
            sample_id=sid,
            annotator=self.annotator,
            time=now(),
            metric=metric,
            label=label,
            run=self.fingerprint,
            sample_hash=self.hashes.get(sid),
            note=note.strip()[:MAX_NOTE] or None,
        )
        with self._write:
            return append_label(self.labels_path, line)

    def skip(self, sid: str) -> LabelLine:
        """Append a skip of ``sid``: it goes to the back of this person's queue."""
        if sid not in self.samples and sid not in self.lines:
            raise ValueError(f"no sample {sid!r} in {self.run_dir}")
        line = LabelLine(
            sid, self.annotator, now(), run=self.fingerprint, sample_hash=self.hashes.get(sid), skipped=True
        )
        with self._write:
            return append_label(self.labels_path, line)


__all__ = ["Position", "ReviewSession", "graded_metric", "run_fingerprint"]
