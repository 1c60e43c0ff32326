"""Migration between our JSONL and other frameworks' dataset formats.

Each framework format is a *layout*: which of its field names holds which Sample field,
where the record id goes, and whether it has a metadata slot. Writing a sample in a
layout puts every field the format names in its place; a field it has no column for goes
to its metadata slot (under ``metadata["unified"]``, so reading it back restores the
field) when it has one, and is dropped otherwise — never silently: one log line per
field, with how many rows carried it.

Formats (``convert_file(..., to=...)``):

- ``jsonl``/``json``/``csv``/``parquet``: ours, via ``unified.io``.
- ``ragas``: RAGAS 0.4 ``SingleTurnSample`` fields (``EvaluationDataset.to_jsonl`` layout).
- ``ragas_v1``: RAGAS 0.1 HF column names question/answer/contexts/ground_truth (+ ``id``).
- ``deepeval``: DeepEval goldens JSON (input, actual_output, expected_output,
  retrieval_context, context, name, additional_metadata), as
  ``EvaluationDataset.add_goldens_from_json_file`` reads it. DeepEval's ``context`` is the
  *ideal* context, so it holds our ``reference_contexts`` (not the retrieved ones).
- ``dingo``: Dingo's data_id/prompt/content/context/reference (+ ``metadata``).
- ``patronus``: evaluated_model_input/_output/_retrieved_context/_gold_answer + ``sid``.
- ``embedchain``: Embedchain ``EvalData``: question/contexts/answer only.

ragas and deepeval are imported only inside the functions that build their objects, with
their telemetry and file writing switched off first.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from unified.sample import FRAMEWORK_FIELDS, Sample, SampleError

log = logging.getLogger(__name__)

OUR_FORMATS = ("jsonl", "csv", "parquet", "json")
FRAMEWORK_FORMATS = ("ragas", "ragas_v1", "deepeval", "dingo", "patronus", "embedchain")
FORMATS = OUR_FORMATS + FRAMEWORK_FORMATS
EXTRA_KEY = "unified"  # metadata key carrying Sample fields the format has no column for

_SAMPLE_FIELDS = tuple(f for f in Sample.model_fields if f not in ("id", "metadata"))


@dataclass(frozen=True)
class Layout:
    """How one framework writes a sample: ``fields`` canonical -> its name; ``id_field``
    and ``metadata_field`` (None when the format has no such slot)."""

    name: str
    title: str
    fields: dict[str, str]
    id_field: str | None = None
    metadata_field: str | None = None


LAYOUTS: dict[str, Layout] = {
    "ragas": Layout("ragas", "RAGAS EvaluationDataset", dict(FRAMEWORK_FIELDS["ragas"])),
    "ragas_v1": Layout("ragas_v1", "RAGAS v1 columns", dict(FRAMEWORK_FIELDS["ragas_v1"]),
                       # ragas 0.1 carried extra columns through to its result table
                       id_field="id"),
    "deepeval": Layout("deepeval", "DeepEval goldens",
                       {**FRAMEWORK_FIELDS["deepeval"], "reference_contexts": "context"},
                       id_field="name", metadata_field="additional_metadata"),
    "dingo": Layout("dingo", "Dingo JSONL", dict(FRAMEWORK_FIELDS["dingo"]),
                    id_field="data_id", metadata_field="metadata"),
    "patronus": Layout("patronus", "Patronus dataset", dict(FRAMEWORK_FIELDS["patronus"]),
                       id_field="sid"),
    "embedchain": Layout("embedchain", "Embedchain EvalData", dict(FRAMEWORK_FIELDS["embedchain"])),
}


def _layout(fmt: str) -> Layout:
    if fmt not in LAYOUTS:
        raise ValueError(f"unknown framework format '{fmt}'; choose one of {', '.join(FRAMEWORK_FORMATS)}")
    return LAYOUTS[fmt]


# ---------------------------------------------------------------- records

def export_records(samples: Iterable[Sample], fmt: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Samples as ``fmt``'s records, plus one note per field that was moved to the
    format's metadata slot or dropped (with the number of rows concerned)."""
    lay = _layout(fmt)
    moved: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    records = []
    for s in samples:
        rec: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for f in _SAMPLE_FIELDS:
            v = getattr(s, f)
            if v is None:
                continue
            if f in lay.fields:
                rec[lay.fields[f]] = v
            elif lay.metadata_field:
                extra[f] = v
                moved[f] += 1
            else:
                dropped[f] += 1
        if lay.id_field:
            rec[lay.id_field] = s.id
        elif s.id != s.content_hash():
            # a content-hash id is recomputed on reading back: nothing is lost
            dropped["id"] += 1
        meta = dict(s.metadata)
        if lay.metadata_field:
            if extra:
                meta[EXTRA_KEY] = extra
            if meta:
                rec[lay.metadata_field] = meta
        elif meta:
            dropped["metadata"] += 1
        records.append(rec)
    notes = [f"{lay.title}: field '{f}' has no column; kept in {lay.metadata_field}['{EXTRA_KEY}'] "
             f"({n} rows)" for f, n in moved.items()]
    notes += [f"{lay.title}: field '{f}' has no place in this format and was dropped ({n} rows)"
              for f, n in dropped.items()]
    return records, notes


def import_records(records: Iterable[Mapping[str, Any]], fmt: str, source: str = "<records>"
                   ) -> tuple[list[Sample], list[Any]]:
    """``fmt``'s records back to Samples (the inverse of ``export_records``). Bad rows
    become ``RowError``s (1-based row numbers); keys the layout does not know go to
    metadata, as on any input."""
    from unified.io import RowError

    lay = _layout(fmt)
    back = {name: canonical for canonical, name in lay.fields.items()}
    good: list[Sample] = []
    bad: list[RowError] = []
    for row, rec in enumerate(records, 1):
        if not isinstance(rec, Mapping):
            bad.append(RowError(source, row, None, f"expected an object, got {type(rec).__name__}"))
            continue
        out: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        for key, v in rec.items():
            if v is None:  # goldens JSON and ragas to_list write null for absent fields
                continue
            if key in back:
                out[back[key]] = v
            elif key == lay.id_field:
                out["id"] = v
            elif key == lay.metadata_field:
                if isinstance(v, str):  # HF datasets store objects as JSON strings
                    v = json.loads(v)
                if not isinstance(v, Mapping):
                    bad.append(RowError(source, row, key, f"expected an object, got {type(v).__name__}"))
                    break
                meta.update(v)
            else:
                meta[key] = v
        else:
            extra = meta.pop(EXTRA_KEY, None)
            if isinstance(extra, Mapping):
                out.update({k: v for k, v in extra.items() if k in _SAMPLE_FIELDS and k not in out})
            if meta:
                out["metadata"] = meta
            try:
                # canonical keys only: the framework's own names were translated above, so
                # deepeval's `context` cannot be mistaken for Dingo's (= retrieved contexts)
                good.append(Sample.from_record(out, warn_unknown=False))
            except SampleError as e:
                bad.append(RowError(source, row, lay.fields.get(e.field or "", e.field), e.reason))
    return good, bad


def _log_notes(notes: Sequence[str]) -> None:
    for n in notes:
        log.warning(n)


# ---------------------------------------------------------------- RAGAS

def _quiet_ragas() -> None:
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"


def to_ragas_dataset(samples: Iterable[Sample]) -> Any:
    """A ragas ``EvaluationDataset`` of ``SingleTurnSample``s (ragas 0.4 field names;
    retrieved/relevant ids as ``retrieved_context_ids``/``reference_context_ids``).
    RAGAS samples have no id or metadata: those are dropped, with a log line."""
    _quiet_ragas()
    from ragas import EvaluationDataset, SingleTurnSample

    records, notes = export_records(samples, "ragas")
    _log_notes(notes)
    return EvaluationDataset(samples=[SingleTurnSample(**r) for r in records])


def from_ragas_dataset(ds: Any) -> list[Sample]:
    """Samples from a ragas ``EvaluationDataset`` (single-turn). Raises ``SampleError``
    naming the row and field of the first bad sample."""
    _quiet_ragas()
    good, bad = import_records(ds.to_list(), "ragas", "ragas EvaluationDataset")
    if bad:
        raise SampleError(bad[0].field, f"row {bad[0].row}: {bad[0].reason}")
    return good


def to_ragas_v1(samples: Iterable[Sample], *, as_dataset: bool = False) -> Any:
    """RAGAS v1 records (question/answer/contexts/ground_truth, plus ``id``) — a list of
    dicts, or a ``datasets.Dataset`` with those columns when ``as_dataset``."""
    records, notes = export_records(samples, "ragas_v1")
    _log_notes(notes)
    if not as_dataset:
        return records
    import datasets

    cols = ["id", "question", "answer", "contexts", "ground_truth"]
    present = [c for c in cols if any(c in r for r in records)]
    return datasets.Dataset.from_dict({c: [r.get(c) for r in records] for c in present})


def from_ragas_v1(data: Any) -> list[Sample]:
    """Samples from RAGAS v1 records: a ``datasets.Dataset``, a DataFrame or a list of
    dicts. Raises ``SampleError`` naming the row and field of the first bad record."""
    rows = data.to_dict(orient="records") if hasattr(data, "to_dict") and hasattr(data, "columns") \
        else list(data)
    good, bad = import_records(rows, "ragas_v1", "ragas v1 records")
    if bad:
        raise SampleError(bad[0].field, f"row {bad[0].row}: {bad[0].reason}")
    return good


# ---------------------------------------------------------------- DeepEval

def _quiet_deepeval() -> None:
    os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "1"
    os.environ["DEEPEVAL_DISABLE_DOTENV"] = "1"
    os.environ["DEEPEVAL_DISABLE_LEGACY_KEYFILE"] = "1"
    os.environ["DEEPEVAL_FILE_SYSTEM"] = "READ_ONLY"


def to_deepeval_test_cases(samples: Iterable[Sample]) -> list[Any]:
    """``LLMTestCase``s: input, actual_output, expected_output, retrieval_context,
    context (= our reference_contexts), name (= our id) and metadata (ours, plus the
    fields DeepEval has no column for under ``metadata["unified"]``)."""
    _quiet_deepeval()
    from deepeval.test_case import LLMTestCase

    records, notes = export_records(samples, "deepeval")
    _log_notes(notes)
    cases = []
    for r in records:
        r = dict(r)
        # LLMTestCase calls the goldens' `additional_metadata` plain `metadata`
        meta = r.pop("additional_metadata", None)
        cases.append(LLMTestCase(**r, metadata=meta))
    return cases


def from_deepeval_test_cases(cases: Iterable[Any]) -> list[Sample]:
    """Samples from ``LLMTestCase``s (or ``Golden``s). Raises ``SampleError`` naming the
    row and field of the first bad case."""
    rows = []
    for tc in cases:
        # Golden calls it `additional_metadata`, LLMTestCase `metadata` (reading the other
        # name on a test case is deprecated and warns)
        fields = getattr(type(tc), "model_fields", {})
        meta = getattr(tc, "additional_metadata" if "additional_metadata" in fields else "metadata", None)
        rows.append({"input": tc.input, "actual_output": tc.actual_output,
                     "expected_output": tc.expected_output,
                     "retrieval_context": tc.retrieval_context, "context": tc.context,
                     "name": tc.name, "additional_metadata": meta})
    good, bad = import_records(rows, "deepeval", "deepeval test cases")
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
        from unified.io import samples_to_pandas

        return samples_to_pandas(samples)
    records, notes = export_records(samples, fmt)
    _log_notes(notes)
    return pd.DataFrame(records)


def from_pandas(df: Any, fmt: str | None = None, mapping: Mapping[str, str] | None = None
                ) -> tuple[list[Sample], list[Any]]:
    """Samples and row errors from a DataFrame in our columns (any alias; ``mapping``
    renames first) or, with ``fmt``, in that framework's layout (NaN = absent)."""
    if fmt is None or fmt in OUR_FORMATS:
        from unified.io import load_samples

        return load_samples(df, mapping)
    rows = [{k: (None if _is_nan(v) else v) for k, v in r.items()}
            for r in df.to_dict(orient="records")]
    return import_records(rows, fmt, "DataFrame")


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


# ---------------------------------------------------------------- files

def _read_framework_file(path: Path, fmt: str) -> tuple[list[Sample], list[Any]]:
    from unified.io import RowError

    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        return import_records(json.loads(text), fmt, str(path))
    rows: list[Any] = []
    errors: list[RowError] = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            errors.append(RowError(str(path), i, None, f"invalid JSON: {e.msg}"))
    good, bad = import_records(rows, fmt, str(path))
    return good, errors + bad


def _write_records(records: list[dict[str, Any]], dst: Path, as_list: bool) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if as_list:
        dst.write_text(json.dumps(records, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    else:
        with dst.open("w", encoding="utf-8") as out:
            for r in records:
                out.write(json.dumps(r, ensure_ascii=False) + "\n")


def convert_file(src: str | Path, dst: str | Path, to: str, mapping: Mapping[str, str] | None = None,
                 *, src_format: str | None = None) -> tuple[int, list[Any]]:
    """Convert ``src`` to ``dst`` in format ``to``; returns (samples written, row errors).

    ``src`` is read with ``unified.io.read_samples`` (any of our formats, any framework's
    field names, ``mapping`` applied first) — or, with ``src_format`` set to a framework
    format, with that layout (needed for DeepEval, whose ``context`` means the ideal
    context, not the retrieved one). Bad rows are skipped and returned; the rest are
    written. Framework formats are written as JSONL, except DeepEval goldens (a JSON list,
    as DeepEval saves them) — a ``.json`` or ``.jsonl`` suffix on ``dst`` chooses either.
    Fields the target cannot hold are logged, one warning line per field.
    """
    src, dst = Path(src), Path(dst)
    if to not in FORMATS:
        raise ValueError(f"unknown target format '{to}'; choose one of {', '.join(FORMATS)}")
    # a suffix naming another data format would mislabel the file (JSONL in out.csv)
    fits = {"jsonl": (".jsonl",), "json": (".json",), "csv": (".csv",), "parquet": (".parquet",)}.get(
        to, (".jsonl", ".json"))
    if dst.suffix.lower() in (".jsonl", ".json", ".csv", ".parquet") and dst.suffix.lower() not in fits:
        raise ValueError(f"{dst.name}: --to {to} writes {' or '.join(f[1:] for f in fits)}, not "
                         f"{dst.suffix[1:]}; name the output {dst.stem}{fits[0]}")
    if src_format and src_format in FRAMEWORK_FORMATS:
        samples, errors = _read_framework_file(src, src_format)
    else:
        from unified.io import load_samples

        samples, errors = load_samples(src, mapping, fmt=src_format)
    if to in OUR_FORMATS:
        from unified.io import write_samples

        return write_samples(samples, dst, fmt=to), errors
    records, notes = export_records(samples, to)
    _log_notes(notes)
    as_list = dst.suffix == ".json" or (to == "deepeval" and dst.suffix != ".jsonl")
    _write_records(records, dst, as_list)
    return len(records), errors


# ---------------------------------------------------------------- metric names

# RAGAS 0.1 (v1) metric names, where the registry's aliases do not give one
_RAGAS_V1_NAMES = {"faithfulness": "faithfulness", "context_recall": "context_recall",
                   "context_precision": "context_precision",
                   "answer_correctness": "answer_correctness"}
_COLUMNS = [("RAGAS 0.4 (collections)", "ragas"), ("RAGAS v1", "ragas_v1"),
            ("DeepEval", "deepeval"), ("Dingo", "dingo"), ("Patronus", "patronus"),
            ("Embedchain", "embedchain")]


def metric_name_table() -> str:
    """The canonical ↔ framework metric-name map as one markdown table, generated from the
    registry's aliases (``MetricSpec.aliases``), so the docs cannot drift from the code.
    Aliases under other keys (``ragas_short``, ``ragas_factual``) are listed after the
    main name; ``—`` means the framework has no such metric."""
    from unified.metrics import all_metrics

    header = "| canonical | " + " | ".join(t for t, _ in _COLUMNS) + " | also accepted |"
    lines = [header, "|" + "---|" * (len(_COLUMNS) + 2)]
    for spec in all_metrics():
        if spec.custom:
            continue
        cells = []
        for _, key in _COLUMNS:
            names = []
            main = spec.aliases.get(key) or (_RAGAS_V1_NAMES.get(spec.name) if key == "ragas_v1" else None)
            if main:
                names.append(f"`{main}`")
            names += [f"`{v}`" for k, v in sorted(spec.aliases.items())
                      if k.startswith(key + "_") and k != "ragas_v1" and v != main]
            cells.append(", ".join(names) or "—")
        others = [f"`{v}`" for k, v in sorted(spec.aliases.items())
                  if not any(k == fw or k.startswith(fw + "_") for _, fw in _COLUMNS)]
        cells.append(", ".join(others) or "—")
        lines.append(f"| `{spec.name}`{' (`@k`)' if spec.takes_k else ''} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
