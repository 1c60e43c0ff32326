"""Migration between our files and other frameworks' dataset formats.

Each framework format is a *layout* (``unified.data.layouts``): which of its keys holds which
Sample field, its id slot and its metadata slot. Writing a sample in a layout puts every
field the format names in its place, and a field it has no key for under
``metadata["unified"]`` of its metadata slot, with one log line per such field and the
number of rows concerned. Reading restores them, so ours -> format -> ours is lossless,
ids included, for every format below — and the file reads back with ``run``, ``compare``
or ``validate`` without flags: the layout is recognised from its keys.

Formats (``convert_file(..., to=...)``):

- ``jsonl``/``json``/``csv``/``tsv``/``parquet``: ours, via ``unified.data.io``.
- ``ragas``: RAGAS 0.4 ``SingleTurnSample`` fields (``EvaluationDataset.from_jsonl`` reads
  the file; it ignores our ``id`` and ``metadata`` keys).
- ``ragas_v1``: RAGAS 0.1 HF columns question/answer/contexts/ground_truth (+ ``id``,
  ``metadata``).
- ``deepeval``: DeepEval goldens JSON (input, actual_output, expected_output,
  retrieval_context, context, name, additional_metadata), as
  ``EvaluationDataset.add_goldens_from_json_file`` reads it. DeepEval's ``context`` is the
  *ideal* context, so it holds our ``reference_contexts`` (not the retrieved ones); ``name``
  holds our id.
- ``dingo``: Dingo's data_id/prompt/content/context/reference (+ ``metadata``).
- ``patronus``: the current Patronus SDK's sid/task_input/task_output/task_context/
  gold_answer/task_metadata (the legacy evaluated_model_* names are read too).
- ``embedchain``: Embedchain ``EvalData``: question/contexts/answer (+ ``id``, ``metadata``).

The frameworks' *objects* (RAGAS ``EvaluationDataset``, DeepEval ``LLMTestCase``) are built
and read in ``unified.adapters.ragas.objects`` / ``unified.adapters.deepeval.objects``: no
module of ``unified`` imports a framework.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from unified.data.layouts import EXTRA_KEY, FRAMEWORK_FORMATS, LAYOUTS, SAMPLE_FIELDS, Layout, get_layout
from unified.sample import Sample, SampleError

__all__ = [
    "OUR_FORMATS",
    "FRAMEWORK_FORMATS",
    "FORMATS",
    "EXTRA_KEY",
    "LAYOUTS",
    "Layout",
    "export_records",
    "import_records",
    "to_ragas_v1",
    "from_ragas_v1",
    "to_deepeval_goldens",
    "to_pandas",
    "from_pandas",
    "convert_file",
]

log = logging.getLogger(__name__)

OUR_FORMATS = ("jsonl", "csv", "tsv", "parquet", "json")
FORMATS = OUR_FORMATS + FRAMEWORK_FORMATS


# ---------------------------------------------------------------- records


def _export_one(s: Sample, lay: Layout, moved: Counter[str]) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for f in SAMPLE_FIELDS:
        v = getattr(s, f)
        if v is None:
            continue
        if f in lay.fields:
            rec[lay.fields[f]] = v
        else:
            extra[f] = v
            moved[f] += 1
    rec[lay.id_field] = s.id
    meta = dict(s.metadata)
    if extra:
        meta[EXTRA_KEY] = extra
    if meta:
        rec[lay.metadata_field] = meta
    return rec


def export_records(samples: Iterable[Sample], fmt: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Samples as ``fmt``'s records, plus one note per field that was moved to the
    format's metadata slot (with the number of rows concerned)."""
    lay = get_layout(fmt)
    moved: Counter[str] = Counter()
    records = [_export_one(s, lay, moved) for s in samples]
    notes = [
        f"{lay.title}: field '{f}' has no column; kept in {lay.metadata_field}['{EXTRA_KEY}'] ({n} rows)"
        for f, n in moved.items()
    ]
    return records, notes


def import_records(records: Iterable[Any], fmt: str, source: str = "<records>") -> tuple[list[Sample], list[Any]]:
    """``fmt``'s records back to Samples (the inverse of ``export_records``). Bad rows
    become ``RowError``s (1-based row numbers, the field under the format's own name);
    keys the layout does not know go to metadata, as on any input."""
    from unified.data.io import RowError, read_samples

    lay = get_layout(fmt)
    good: list[Sample] = []
    bad: list[RowError] = []
    for item in read_samples(list(records), layout=fmt):
        if isinstance(item, RowError):
            bad.append(dataclasses.replace(item, source=source, field=_own_name(lay, item.field)))
        else:
            good.append(item)
    return good, bad


def _own_name(lay: Layout, field: str | None) -> str | None:
    if field is None:
        return None
    head, sep, rest = field.partition(".")
    base, bracket, index = head.partition("[")
    name = {**lay.fields, "id": lay.id_field}.get(base, base)
    return name + bracket + index + sep + rest


def _log_notes(notes: Sequence[str]) -> None:
    for n in notes:
        log.warning(n)


# ---------------------------------------------------------------- RAGAS v1 / DeepEval records


def to_ragas_v1(samples: Iterable[Sample], *, as_dataset: bool = False) -> Any:
    """RAGAS v1 records (question/answer/contexts/ground_truth, plus ``id`` and
    ``metadata``) — a list of dicts, or a ``datasets.Dataset`` with those columns when
    ``as_dataset`` (metadata as JSON strings: their keys vary per row)."""
    records, notes = export_records(samples, "ragas_v1")
    _log_notes(notes)
    if not as_dataset:
        return records
    import datasets

    cols = ["id", "question", "answer", "contexts", "ground_truth", "metadata"]
    present = [c for c in cols if any(c in r for r in records)]
    data = {c: [r.get(c) for r in records] for c in present}
    if "metadata" in data:
        data["metadata"] = [None if m is None else json.dumps(m, ensure_ascii=False) for m in data["metadata"]]
    return datasets.Dataset.from_dict(data)


def from_ragas_v1(data: Any) -> list[Sample]:
    """Samples from RAGAS v1 records: a ``datasets.Dataset``, a DataFrame or a list of
    dicts. Raises ``SampleError`` naming the row and field of the first bad record."""
    from unified.data.io import load_samples

    good, bad = load_samples(data if hasattr(data, "columns") else list(data), layout="ragas_v1")
    if bad:
        raise SampleError(bad[0].field, f"row {bad[0].row}: {bad[0].reason}")
    return good


def to_deepeval_goldens(samples: Iterable[Sample]) -> list[dict[str, Any]]:
    """Goldens as DeepEval's dataset JSON writes them (a list of objects with input,
    actual_output, expected_output, retrieval_context, context, name,
    additional_metadata)."""
    records, notes = export_records(samples, "deepeval")
    _log_notes(notes)
    return records


# ---------------------------------------------------------------- pandas


def to_pandas(samples: Iterable[Sample], fmt: str = "jsonl") -> Any:
    """A DataFrame in our columns (``fmt`` one of ours) or in a framework's layout."""
    import pandas as pd

    if fmt in OUR_FORMATS:
        from unified.data.io import samples_to_pandas

        return samples_to_pandas(samples)
    records, notes = export_records(samples, fmt)
    _log_notes(notes)
    return pd.DataFrame(records)


def from_pandas(
    df: Any, fmt: str | None = None, mapping: Mapping[str, str] | None = None
) -> tuple[list[Sample], list[Any]]:
    """Samples and row errors from a DataFrame in our columns (any alias; ``mapping``
    renames first) or, with ``fmt``, in that framework's layout (NaN = absent)."""
    from unified.data.io import load_samples

    layout = fmt if fmt in FRAMEWORK_FORMATS else None
    return load_samples(df, mapping, layout=layout)


# ---------------------------------------------------------------- files


def _write_records(records: list[dict[str, Any]], dst: Path, as_list: bool) -> None:
    from unified.data.files import atomic_path, write_text

    dst.parent.mkdir(parents=True, exist_ok=True)
    if as_list:
        write_text(dst, json.dumps(records, ensure_ascii=False, indent=2) + "\n")
        return
    with atomic_path(dst) as tmp, tmp.open("w", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")


def _check_suffix(dst: Path, to: str) -> None:
    # a suffix naming another data format would mislabel the file (JSONL in out.csv)
    fits = {"jsonl": (".jsonl",), "json": (".json",), "csv": (".csv",), "tsv": (".tsv",), "parquet": (".parquet",)}.get(
        to, (".jsonl", ".json")
    )
    if dst.suffix.lower() in (".jsonl", ".json", ".csv", ".tsv", ".parquet") and dst.suffix.lower() not in fits:
        raise ValueError(
            f"{dst.name}: --to {to} writes {' or '.join(f[1:] for f in fits)}, not "
            f"{dst.suffix[1:]}; name the output {dst.stem}{fits[0]}"
        )


def split_from(src_format: str | None) -> tuple[str | None, str | None]:
    """``--from X`` as (file format, layout): X names a file format, a framework layout or a
    trace format (``otlp``, ``openinference``, ``mlflow-traces``, ``langfuse``)."""
    from unified.data.readers import FORMATS as FILE_FORMATS
    from unified.data.readers import SUFFIXES
    from unified.data.traces import TRACE_FORMATS

    if not src_format:
        return None, None
    if src_format in FRAMEWORK_FORMATS or src_format in ("unified", "ours") or src_format in TRACE_FORMATS:
        return None, src_format
    if src_format.lower().lstrip(".") in FILE_FORMATS or "." + src_format.lower().lstrip(".") in SUFFIXES:
        return src_format, None
    raise ValueError(
        f"--from {src_format}: not a layout ({', '.join(FRAMEWORK_FORMATS)}), a trace format "
        f"({', '.join(TRACE_FORMATS)}) nor a file format ({', '.join(FILE_FORMATS)})"
    )


def convert_file(
    src: Any,
    dst: str | Path,
    to: str,
    mapping: Mapping[str, str] | None = None,
    *,
    src_format: str | None = None,
    labels: Any = None,
    list_sep: str | None = None,
) -> tuple[int, list[Any]]:
    """Convert ``src`` to ``dst`` in format ``to``; returns (samples written, row errors).

    ``src`` is anything ``unified.data.io.read_samples`` reads — a path in any of our formats
    with any framework's field names and layouts, a DataFrame, a framework's dataset
    object, ... (``mapping``, ``labels`` and ``list_sep`` applied) —
    ``src_format`` forces a file format or a framework layout (``--from``). Bad rows are
    skipped and returned; the rest are written. Framework formats are written as JSONL,
    except DeepEval goldens (a JSON list, as DeepEval saves them) — a ``.json`` or
    ``.jsonl`` suffix on ``dst`` chooses either. Fields moved to a metadata slot are
    logged, one warning line per field.
    """
    from unified.data.io import load_samples, write_samples

    src = Path(src) if isinstance(src, str) else src
    dst = Path(dst)
    if to not in FORMATS:
        raise ValueError(f"unknown target format '{to}'; choose one of {', '.join(FORMATS)}")
    _check_suffix(dst, to)
    fmt, layout = split_from(src_format)
    samples, errors = load_samples(src, mapping, fmt=fmt, layout=layout, labels=labels, list_sep=list_sep)
    if layout in LAYOUTS:  # name the field as the user's file does
        errors = [dataclasses.replace(e, field=_own_name(LAYOUTS[layout], e.field)) for e in errors]
    if to in OUR_FORMATS:
        return write_samples(samples, dst, fmt=to), errors
    records, notes = export_records(samples, to)
    _log_notes(notes)
    as_list = dst.suffix == ".json" or (to == "deepeval" and dst.suffix != ".jsonl")
    _write_records(records, dst, as_list)
    return len(records), errors
