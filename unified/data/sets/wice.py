"""WiCE (Kamoi et al., EMNLP 2023), as its authors publish it:
``data/entailment_retrieval/claim/{dev,test}.jsonl``, one claim a line — ``label``
(supported, partially_supported, not_supported), ``claim`` (a Wikipedia sentence),
``evidence`` (the sentences of the cited web page(s), one flat list), ``supporting_sentences``
and ``meta`` (``id``, ``claim_title``, ``claim_section``, ``claim_context``).

supported → 1, not_supported → 0; partially_supported is left out (neither verdict holds
for the whole claim) and counted. The claim is the response; the evidence is split into
one context per cited page, at each sentence that opens a page (``(meta data) TITLE:``),
its sentences joined by newlines. There is no question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from unified.data.readers import read_file
from unified.data.rowerror import RowError
from unified.data.sets.common import Item, labelled, row_or_error, text_of

LABELS = {"supported": 1, "not_supported": 0}
LEFT_OUT = "partially_supported"
PAGE_START = "(meta data) TITLE:"


def read(path: Path, name: str) -> Iterator[Item]:
    for row, rec in read_file(path, "jsonl"):
        if isinstance(rec, RowError):
            yield rec
        elif isinstance(rec, dict) and rec.get("label") == LEFT_OUT:
            continue
        else:
            yield row_or_error(path.name, row, lambda rec=rec, row=row: _sample(rec, row, name))


def pages(evidence: list[Any]) -> list[str]:
    """The flat evidence list as one text per cited page (module docstring)."""
    out: list[list[str]] = []
    for s in evidence:
        sentence = text_of(s, "evidence")
        if sentence.startswith(PAGE_START) or not out:
            out.append([])
        out[-1].append(sentence)
    return ["\n".join(p) for p in out]


def _sample(rec: dict[str, Any], row: int, name: str) -> Any:
    if rec["label"] not in LABELS:
        raise ValueError(f"label {rec['label']!r} is none of {', '.join([*LABELS, LEFT_OUT])}")
    meta = rec.get("meta") or {}
    return labelled(
        name,
        str(meta.get("id") or row),
        response=text_of(rec["claim"], "claim"),
        contexts=pages(list(rec["evidence"])),
        label=LABELS[rec["label"]],
        extra={"claim_context": meta.get("claim_context"), "claim_title": meta.get("claim_title")},
    )
