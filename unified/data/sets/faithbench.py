"""FaithBench (Bao et al., NAACL 2025), as its authors publish it: ``FaithBench.csv``
(``source``, ``summary``, ``LLM``, ``worst-label``, ``best-label``) or the annotated
batches ``data_for_release/batch_N.json`` (``{"samples": [{"sample_id", "source",
"summary", "annotations": [{"label": [...], ...}], "metadata": {...}}]}``), one file or
their folder.

Binarised as the authors' ``scripts/binarize.py`` configures it: the worst label of a
sample (``worst-label``; in a batch, the most severe label of any annotation) decides;
``Questionable`` and ``Unwanted`` (intrinsic or extrinsic) are hallucinations (label 0),
``Benign`` and a sample without annotations (``Consistent``) are faithful (1). (That
script returns 0 for a sample without annotations too; its own comment calls such a
sample consistent, which is what is read here.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from unified.data.readers import read_file
from unified.data.rowerror import RowError
from unified.data.sets.common import SUMMARISE, Item, labelled, row_or_error, text_of

#: severity of each FaithBench label; the worst of a sample decides (binarize.py)
SEVERITY = {"Consistent": 0, "Benign": 1, "Questionable": 2, "Unwanted": 3}
HALLUCINATED_FROM = 2  # Questionable and worse


def read(path: Path, name: str) -> Iterator[Item]:
    if path.is_dir():
        batches = sorted(path.glob("batch_*.json"), key=lambda p: (len(p.name), p.name))
        if not batches:
            raise ValueError(f"{path}: no FaithBench batch_N.json in this folder")
        for batch in batches:
            yield from _batch(batch, name)
    elif path.suffix.lower() == ".csv":
        yield from _csv(path, name)
    else:
        yield from _batch(path, name)


def label_of(worst: str) -> int:
    """1 (faithful) or 0 from a FaithBench label (``Unwanted.Intrinsic`` is ``Unwanted``)."""
    kind = worst.strip().split(".")[0]
    if kind not in SEVERITY:
        raise ValueError(f"unknown FaithBench label {worst!r}")
    return 0 if SEVERITY[kind] >= HALLUCINATED_FROM else 1


def _csv(path: Path, name: str) -> Iterator[Item]:
    for row, rec in read_file(path, "csv"):
        if isinstance(rec, RowError):
            yield rec
            continue
        yield row_or_error(
            path.name,
            row,
            lambda rec=rec, row=row: labelled(
                name,
                str(row),
                question=SUMMARISE,
                response=text_of(rec["summary"], "summary"),
                contexts=[text_of(rec["source"], "source")],
                label=label_of(rec["worst-label"]),
                extra={"model": rec.get("LLM")},
            ),
        )


def _batch(path: Path, name: str) -> Iterator[Item]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a FaithBench batch: {e}") from None
    samples = doc.get("samples") if isinstance(doc, dict) else None
    if not isinstance(samples, list):
        raise ValueError(f"{path}: not a FaithBench batch (no 'samples' list)")
    for i, rec in enumerate(samples, start=1):
        yield row_or_error(path.name, i, lambda rec=rec: _annotated(rec, path, name))


def _annotated(rec: dict[str, Any], path: Path, name: str) -> Any:
    labels = [str(lab) for a in rec.get("annotations") or [] for lab in a["label"]]
    worst = max(labels, key=lambda lab: SEVERITY.get(lab.split(".")[0], 99), default="Consistent")
    return labelled(
        name,
        f"{path.stem}:{rec['sample_id']}",
        question=SUMMARISE,
        response=text_of(rec["summary"], "summary"),
        contexts=[text_of(rec["source"], "source")],
        label=label_of(worst),
        extra={"model": (rec.get("metadata") or {}).get("summarizer")},
    )
