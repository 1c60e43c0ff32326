"""People's labels as MLflow assessments on the traces the samples came from (the
``mlflow`` extra).

A run scored from MLflow traces (``unified.data.traces.mlflow_traces``) names each sample
by its trace id (``tr-…``). ``push_labels`` turns each person's last label of such a
sample that is not stale (``unified.data.labelfile``) into a *feedback* assessment on that
trace::

    name      = the metric              value  = True / False for 1 / 0, the grade for 0–10
    source    = HUMAN, the annotator    rationale = the note
    metadata  = {"unified.time": the label's time, "unified.run": the run's fingerprint,
                 "unified.sample_hash": the content hash the person judged}

A label whose (annotator, metric, time) is already on the trace is not logged again, so a
second push adds only what is new. ``read_labels`` reads the human feedback of traces back
as label lines, so labels made in MLflow's own UI count too. Samples whose ids are not
trace ids are skipped and counted: they have no trace to hold a label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from unified.data.labelfile import LabelHistory, LabelLine, is_stale, parse_line
from unified.redact import one_line, url_secrets

_TIME, _RUN, _HASH = "unified.time", "unified.run", "unified.sample_hash"


@dataclass
class PushResult:
    """What ``push_labels`` did: labels logged, labels already there, samples without a
    trace, and one line per trace MLflow refused (the push goes on)."""

    logged: int = 0
    present: int = 0
    no_trace: int = 0
    errors: list[str] = field(default_factory=list)


def _client(tracking_uri: str) -> Any:
    from mlflow.tracing.client import TracingClient

    return TracingClient(tracking_uri)


def _human_feedback(trace: Any) -> list[Any]:
    return [
        a
        for a in (trace.info.assessments or ())
        if getattr(a, "feedback", None) is not None and str(a.source.source_type).upper() == "HUMAN"
    ]


def _value(label: int | float) -> bool | float:
    """1 / 0 as True / False (how MLflow's UI shows pass / fail); a grade as a number."""
    return bool(label) if label in (0, 1) and float(label).is_integer() else float(label)


def push_labels(history: LabelHistory, tracking_uri: str, current: Mapping[str, str] | None = None) -> PushResult:
    """Log ``history``'s labels (module docstring) to the traces at ``tracking_uri``;
    ``current``: sample id -> the sample's content hash now (stale labels stay home)."""
    from mlflow.entities import AssessmentSource, Feedback

    client, out = _client(tracking_uri), PushResult()
    by_trace: dict[str, list[LabelLine]] = {}
    for line in history.latest().values():
        if is_stale(line, current):
            continue
        if not line.sample_id.startswith("tr-"):
            out.no_trace += 1
            continue
        by_trace.setdefault(line.sample_id, []).append(line)
    for trace_id, lines in by_trace.items():
        try:
            there = {
                (a.source.source_id, a.name, (a.metadata or {}).get(_TIME))
                for a in _human_feedback(client.get_trace(trace_id))
            }
            for line in lines:
                if (line.annotator, line.metric, line.time) in there:
                    out.present += 1
                    continue
                meta = {_TIME: line.time, _RUN: line.run or "", _HASH: line.sample_hash or ""}
                feedback = Feedback(
                    name=str(line.metric),
                    value=_value(line.label),  # type: ignore[arg-type]
                    source=AssessmentSource(source_type="HUMAN", source_id=line.annotator),
                    rationale=line.note,
                    metadata=meta,
                )
                client.log_assessment(trace_id, feedback)
                out.logged += 1
        except Exception as e:  # one trace MLflow refuses (deleted, no access) must not stop the rest
            # scrubbed: a store's error can quote its URI, credentials and all
            out.errors.append(f"trace {trace_id}: {type(e).__name__}: {one_line(e, 200, url_secrets(tracking_uri))}")
    return out


def read_labels(tracking_uri: str, trace_ids: Iterable[str]) -> LabelHistory:
    """The human feedback on ``trace_ids`` as a labels file's history (oldest first); a
    feedback whose value is no label (text, a list) is counted as unreadable."""
    client, rows = _client(tracking_uri), []
    history = LabelHistory()
    for trace_id in trace_ids:
        for a in _human_feedback(client.get_trace(trace_id)):
            meta = a.metadata or {}
            value = a.feedback.value
            d = {
                "sample_id": trace_id,
                "metric": a.name,
                "label": int(value) if isinstance(value, bool) else value,
                "annotator": a.source.source_id,
                "time": meta.get(_TIME) or str(a.create_time_ms),
                "run": meta.get(_RUN) or None,
                "sample_hash": meta.get(_HASH) or None,
                "note": a.rationale,
            }
            rows.append((a.create_time_ms or 0, d))
    for _, d in sorted(rows, key=lambda r: r[0]):
        line = parse_line(d)
        if line is None:
            history.unreadable += 1
        else:
            history.lines.append(line)
    return history


__all__ = ["PushResult", "push_labels", "read_labels"]
