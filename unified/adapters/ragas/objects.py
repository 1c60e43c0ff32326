"""RAGAS objects <-> samples: ``EvaluationDataset`` / ``SingleTurnSample`` in and out.

In: ``records(obj)`` gives the ``(layout, record)`` pairs ``unified.data.io`` reads (layout
``ragas``: ``user_input``, ``retrieved_contexts``, ``reference_contexts``,
``retrieved_context_ids``, ``reference_context_ids``, ``response``, ``reference``; other
fields such as ``rubrics`` or ``persona_name`` land in metadata). A ``MultiTurnSample`` is
a conversation with no single-turn reading: a row error.

Out: ``to_ragas_dataset`` builds an ``EvaluationDataset`` of ``SingleTurnSample``s. RAGAS
samples have no id or metadata slot (ragas drops unknown keys), so those are dropped, with
a log line; a ``convert --to ragas`` *file* keeps them (ragas ignores the extra keys).
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from unified.adapters.ragas.quiet import quiet_ragas
from unified.data.convert import export_records
from unified.sample import Sample, SampleError

log = logging.getLogger(__name__)
_NO_SLOT = ("id", "metadata")  # keys of our ragas files that SingleTurnSample has no field for


def _sample_record(s: Any) -> tuple[str, dict[str, Any] | str]:
    if type(s).__name__ == "MultiTurnSample":
        return "ragas", (
            "a RAGAS MultiTurnSample is a conversation, which has no single-turn "
            "reading; score its turns as single-turn samples"
        )
    return "ragas", s.model_dump(mode="json", exclude_none=True)


def records(obj: Any) -> list[tuple[str, dict[str, Any] | str]]:
    """An ``EvaluationDataset`` (one pair per sample) or one sample as (layout, record);
    a record that is a string is the reason the row cannot be read."""
    if hasattr(obj, "samples") and not hasattr(obj, "user_input"):
        return [_sample_record(s) for s in obj.samples]
    return [_sample_record(obj)]


def to_ragas_dataset(samples: Iterable[Sample]) -> Any:
    """A ragas ``EvaluationDataset`` of ``SingleTurnSample``s (ragas 0.4 field names;
    retrieved/relevant ids as ``retrieved_context_ids``/``reference_context_ids``)."""
    quiet_ragas()
    from ragas import EvaluationDataset, SingleTurnSample

    recs, notes = export_records(samples, "ragas")
    for note in notes:
        log.warning(note)
    lost = {k: sum(1 for r in recs if k in r) for k in _NO_SLOT}
    for k, n in lost.items():
        if n:
            log.warning(f"RAGAS SingleTurnSample has no '{k}' field; dropped ({n} rows)")
    return EvaluationDataset(
        samples=[SingleTurnSample(**{k: v for k, v in r.items() if k not in _NO_SLOT}) for r in recs]
    )


def from_ragas_dataset(ds: Any) -> list[Sample]:
    """Samples from a ragas ``EvaluationDataset`` (single-turn). Strict: raises
    ``SampleError`` naming the row and field of the first bad sample (use
    ``unified.data.io.read_samples(ds)`` to skip bad rows instead)."""
    from unified.data.io import load_samples

    good, bad = load_samples(ds)
    if bad:
        raise SampleError(bad[0].field, f"row {bad[0].row}: {bad[0].reason}")
    return good
