"""``labels.jsonl``: people's labels of a run's samples, one decision a line, history kept.

``unified-eval review`` writes it in the run folder; ``compare --labels FILE`` and
``calibrate --labels FILE`` read it. A label line::

    {"sample_id": "q01", "metric": "faithfulness", "label": 1, "annotator": "ana",
     "time": "2025-05-01T09:30:12.345Z", "run": "3f1c…", "sample_hash": "9ab0…",
     "note": "the date is not in the contexts"}

- ``label``: 1 = pass / supported, 0 = fail / not supported, or a grade on 0–10 (a number)
  for a metric that asks for one; read by the one ``--label`` rule
  (``unified.data.labels.label_value``). ``metric``: the metric as the run names it.
- ``run``: the run's fingerprint (what scored the values the person saw: a digest of
  ``run.json``'s task configurations, ``unified.review``); ``sample_hash``: the content
  hash of the sample the person judged (``Sample.content_hash``). ``note`` is optional.

A skip (the person passed a sample over) is a line with ``"skipped": true`` and no metric
or label; only the review queue reads it (a skipped sample goes to the back of that
person's queue).

The rules:

- **Append only.** A line is appended whole (``unified.data.files.append_line``: one
  write under a lock, so two browser tabs or two people never interleave a line); a label
  changed later is a new line. Per (annotator, sample, metric) the last line in the file
  wins; the earlier ones are its history.
- **A label belongs to what was judged.** A line whose ``sample_hash`` differs from the
  content hash of the sample as the run holds it now is stale — the person judged other
  content — and is not read as a label (counted, said).
- **Several people.** The label a reader takes for (sample, metric) is the median of the
  annotators' last labels; for pass/fail labels a median of ½ — as many pass as fail —
  is a tie and no label (counted, said). One person's label is their label.
- **Bad lines.** A line that is not JSON (torn by a kill), lacks its fields or holds a
  label the ``--label`` rule cannot read is skipped and counted.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from unified.data.files import append_line
from unified.data.labels import label_value

LABELS_FILE = "labels.jsonl"
#: the longest note kept (a note is a remark, not a document; the review page says so)
MAX_NOTE = 2000


@dataclass(frozen=True)
class LabelLine:
    """One line of a labels file: a label (``metric`` and ``label`` set) or a skip."""

    sample_id: str
    annotator: str
    time: str
    metric: str | None = None
    label: int | float | None = None
    run: str | None = None
    sample_hash: str | None = None
    note: str | None = None
    skipped: bool = False

    def to_json(self) -> str:
        """The line as written: fields that hold nothing are left out."""
        d: dict[str, Any] = {"sample_id": self.sample_id}
        if self.skipped:
            d["skipped"] = True
        else:
            d.update(metric=self.metric, label=self.label)
        d.update(annotator=self.annotator, time=self.time, run=self.run, sample_hash=self.sample_hash)
        if self.note:
            d["note"] = self.note
        return json.dumps(d, ensure_ascii=False, allow_nan=False)


def now() -> str:
    """UTC now as ISO 8601 with milliseconds and a ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_label(path: str | Path, line: LabelLine) -> LabelLine:
    """Append ``line`` to the labels file at ``path`` (module docstring: whole, locked)."""
    append_line(path, line.to_json())
    return line


def _text(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) and v.strip() else None


def parse_line(d: Any) -> LabelLine | None:
    """A parsed JSON value as a ``LabelLine``, or None when it is not one (module docstring)."""
    if not isinstance(d, dict):
        return None
    sid, annotator = _text(d, "sample_id"), _text(d, "annotator")
    if sid is None or annotator is None:
        return None
    common: dict[str, Any] = {
        "sample_id": sid,
        "annotator": annotator,
        "time": str(d.get("time") or ""),
        "run": _text(d, "run"),
        "sample_hash": _text(d, "sample_hash"),
        "note": _text(d, "note"),
    }
    if d.get("skipped") is True:
        return LabelLine(**common, skipped=True)
    metric = _text(d, "metric")
    try:
        value = label_value(d.get("label"))
    except ValueError:
        return None
    if metric is None or value is None:
        return None
    return LabelLine(**common, metric=metric, label=value)


@dataclass
class LabelHistory:
    """Every readable line of a labels file in file order, and how many were not."""

    lines: list[LabelLine] = field(default_factory=list)
    unreadable: int = 0

    def latest(self) -> dict[tuple[str, str, str], LabelLine]:
        """(annotator, sample_id, metric) -> its last label line (module docstring)."""
        out: dict[tuple[str, str, str], LabelLine] = {}
        for line in self.lines:
            if not line.skipped:
                assert line.metric is not None
                out[(line.annotator, line.sample_id, line.metric)] = line
        return out

    def skipped(self, annotator: str) -> set[str]:
        """The samples ``annotator`` skipped at least once."""
        return {x.sample_id for x in self.lines if x.skipped and x.annotator == annotator}

    def annotators(self) -> list[str]:
        """Everyone with a label in the file, in the order they first labelled."""
        return list(dict.fromkeys(x.annotator for x in self.lines if not x.skipped))

    def by_annotator(self, metric: str, current: Mapping[str, str] | None = None) -> dict[str, dict[str, float]]:
        """{annotator: {sample_id: label}} of ``metric``, the last label of each, stale
        labels (``current``: sample id -> content hash now) left out."""
        out: dict[str, dict[str, float]] = {}
        for (annotator, sid, m), line in self.latest().items():
            if m == metric and not is_stale(line, current):
                out.setdefault(annotator, {})[sid] = float(line.label)  # type: ignore[arg-type]
        return out


def is_stale(line: LabelLine, current: Mapping[str, str] | None) -> bool:
    """True when the line judged other content than the sample holds now."""
    if current is None or line.sample_hash is None:
        return False
    now_hash = current.get(line.sample_id)
    return now_hash is not None and now_hash != line.sample_hash


def read_history(path: str | Path) -> LabelHistory:
    """Every line of the labels file at ``path`` (none when it does not exist)."""
    history = LabelHistory()
    p = Path(path)
    if not p.exists():
        return history
    with open(p, encoding="utf-8", errors="replace") as f:
        for raw in f:
            if not raw.strip():
                continue
            try:
                line = parse_line(json.loads(raw))
            except (ValueError, RecursionError):
                line = None
            if line is None:
                history.unreadable += 1
            else:
                history.lines.append(line)
    return history


@dataclass
class PeopleLabels:
    """The labels a reader takes from a labels file: ``labels[sample_id][metric]``, and
    what it left out (``notes``)."""

    labels: dict[str, dict[str, int | float]]
    notes: list[str]


def consensus(values: Iterable[float]) -> int | float | None:
    """The label of several annotators' labels: their median; pass/fail labels that tie
    (median ½) give None. One label is itself."""
    vals = [float(v) for v in values]
    if not vals:
        return None
    mid = statistics.median(vals)
    binary = all(v in (0.0, 1.0) for v in vals)
    if binary and mid == 0.5:
        return None
    return int(mid) if binary or (mid.is_integer() and all(v.is_integer() for v in vals)) else mid


def people_labels(history: LabelHistory, current: Mapping[str, str] | None = None) -> PeopleLabels:
    """``history`` as one label per (sample, metric) by the module docstring's rules;
    ``current``: sample id -> the sample's content hash now (stale labels are left out)."""
    per: dict[tuple[str, str], list[float]] = {}
    stale = 0
    for (_annotator, sid, metric), line in history.latest().items():
        if is_stale(line, current):
            stale += 1
            continue
        per.setdefault((sid, metric), []).append(float(line.label))  # type: ignore[arg-type]
    labels: dict[str, dict[str, int | float]] = {}
    ties = 0
    for (sid, metric), values in per.items():
        value = consensus(values)
        if value is None:
            ties += 1
        elif math.isfinite(value):
            labels.setdefault(sid, {})[metric] = value
    notes = []
    if stale:
        notes.append(f"{stale} label(s) judged a sample whose content has changed since: left out")
    if ties:
        notes.append(f"{ties} (sample, metric) pair(s) have as many pass as fail labels from people: no label")
    if history.unreadable:
        notes.append(f"{history.unreadable} line(s) of the labels file are not label lines: skipped")
    return PeopleLabels(labels, notes)


def read_people_labels(path: str | Path) -> LabelHistory:
    """The labels file ``--labels FILE`` names: its history; one-line errors when it does
    not exist or holds no label line."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--labels {p}: no such file")
    history = read_history(p)
    if not any(not x.skipped for x in history.lines):
        why = f" ({history.unreadable} line(s) that are not label lines)" if history.unreadable else ""
        raise ValueError(f"--labels {p}: no label line in it{why}; it is written by `unified-eval review`")
    return history


__all__ = [
    "LABELS_FILE",
    "MAX_NOTE",
    "LabelHistory",
    "LabelLine",
    "PeopleLabels",
    "append_label",
    "consensus",
    "is_stale",
    "now",
    "parse_line",
    "people_labels",
    "read_history",
    "read_people_labels",
]
