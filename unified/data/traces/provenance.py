"""Where a trace's Sample came from, said in one line per trace shape: what ``validate``
prints so that a person can check, before a run, that the question, the answer and the
contexts were taken from the spans they would have chosen.

A trace's *shape* is the source's name for each field: the span names and the fields
read (document indices aside), so that a file of a thousand traces of one pipeline gives
one line, and a file mixing two pipelines (or one trace read another way: below an HTTP
root, under a remote parent) gives one line per way. The line describes the first sample
of its shape, and counts the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: a document's index in a field's name: ``retrieval.documents.3.…``, ``spanOutputs[3]``
_INDEX = re.compile(r"(?<=\.)\d+(?=\.)|\[\d+\]")


def _unindexed(field: Any) -> str:
    return _INDEX.sub(lambda m: "[N]" if m.group().startswith("[") else "N", str(field))


def _part(prov: Any) -> str:
    """One field's provenance: ``span 'name' field[key]``."""
    if not isinstance(prov, dict):
        return "(none)"
    key = f" key {prov['key']}" if prov.get("key") else ""
    return f"span '{prov.get('span')}' {prov.get('field')}{key}"


def _contexts(provs: list[Any]) -> str:
    """The contexts' provenance, documents of one span and field together:
    ``span 'retrieve' retrieval.documents.N.document.content ×3``."""
    groups: dict[str, int] = {}
    for p in provs:
        if isinstance(p, dict):
            text = f"span '{p.get('span')}' {_unindexed(p.get('field'))}"
            groups[text] = groups.get(text, 0) + 1
    return "; ".join(f"{text} ×{n}" for text, n in groups.items()) or "(none: the retriever returned nothing)"


def shape_lines(samples: Iterable[tuple[int, Any]], source: str) -> list[str]:
    """One line per trace shape among ``samples`` ((row, Sample) pairs): the provenance
    of its first sample, and how many samples share that shape. Samples that are not
    read from traces (no ``metadata["provenance"]``) give none."""
    shapes: dict[tuple[str, ...], list[Any]] = {}
    for row, sample in samples:
        prov = sample.metadata.get("provenance") if isinstance(sample.metadata, dict) else None
        if not isinstance(prov, dict):
            continue
        ctx = _contexts(prov.get("retrieved_contexts") or [])
        key = (str(prov.get("format")), _part(prov.get("user_input")), _part(prov.get("response")), ctx)
        shapes.setdefault(key, [row, sample, 0])[2] += 1
    lines = []
    for (fmt, question, answer, ctx), (row, sample, n) in shapes.items():
        more = f"; {n - 1} more trace(s) of this shape" if n > 1 else ""
        lines.append(
            f"provenance ({fmt}) of {source}:{row} (id {sample.id}){more}: user_input ← {question}; "
            f"response ← {answer}; retrieved_contexts ← {ctx}"
        )
    return lines
