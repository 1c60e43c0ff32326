"""A Score's ``details`` and a sample's contexts as a reader wants them: claims, verdicts and
per-context ratings as small tables, not JSON; contexts with their doc id and a
relevant / not-relevant mark; a one-line "why" for a backend that gave no reason text."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Mapping

from unified.report.html_base import e, mark, num, table

# bookkeeping keys a reader does not need beside the score
_HIDDEN = {"framework", "ragas_version", "deepeval_version", "ragas_metric", "deepeval_metric", "deepeval_success"}
_VERDICT_WORDS = ("verdict", "useful", "relevant", "supported", "attributed")


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def cell(v: Any, key: str = "", doc_ids: list[str] | None = None) -> str:
    """One table cell: ✓/✗ for booleans, 2 digits for floats, lists joined, deeper
    structures as compact JSON; a 1-based ``context`` index gets its doc id."""
    if isinstance(v, bool):
        return mark(v)
    if key == "context" and isinstance(v, int) and doc_ids and 0 < v <= len(doc_ids):
        return f"{v} <span class='docid'>{e(doc_ids[v - 1])}</span>"
    if _is_scalar(v):
        return num(v)
    if isinstance(v, list) and all(_is_scalar(x) for x in v):
        return e("; ".join("—" if x is None else str(x) for x in v))
    return f"<code>{e(json.dumps(v, ensure_ascii=False, default=str))}</code>"


def _records_table(name: str, rows: list[Mapping[str, Any]], doc_ids: list[str] | None) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    body = [[cell(r.get(c), c, doc_ids) for c in cols] for r in rows]
    return f"<div class='cap'>{e(name)}</div>" + table([e(c) for c in cols], body, cls="det")


def details_html(details: Mapping[str, Any], doc_ids: list[str] | None = None) -> str:
    """``details`` as one line of scalars plus a small table per structured entry:
    a list of objects -> one row each; an object of objects or lists -> one row per key."""
    scalars, blocks = [], []
    for k, v in details.items():
        if k in _HIDDEN:
            continue
        if _is_scalar(v) or (isinstance(v, list) and all(_is_scalar(x) for x in v)):
            scalars.append(f"{e(k)}: {cell(v, k)}")
        elif isinstance(v, list) and all(isinstance(x, Mapping) for x in v):
            if v:
                blocks.append(_records_table(k, list(v), doc_ids))
        elif isinstance(v, Mapping) and all(_is_scalar(x) for x in v.values()):
            scalars.append(f"{e(k)}: " + ", ".join(f"{e(sk)}={cell(sv, sk)}" for sk, sv in v.items()))
        elif isinstance(v, Mapping):
            rows: list[Mapping[str, Any]] = [
                {"": sk, **(sv if isinstance(sv, Mapping) else {"value": sv})} for sk, sv in v.items()
            ]
            blocks.append(_records_table(k, rows, doc_ids))
        else:
            scalars.append(f"{e(k)}: {cell(v, k)}")
    line = f"<div class='cap'>{' · '.join(scalars)}</div>" if scalars else ""
    return line + "".join(blocks)


def verdict_summary(details: Mapping[str, Any]) -> str | None:
    """Counts of the verdicts in ``details`` ("claims: 2 supported, 1 not_found"), for a
    backend whose Score has no reason text; None when it holds none."""
    parts = []
    for k, v in details.items():
        if not (isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v)):
            continue
        counts: Counter[str] = Counter()
        for item in v:
            for field, val in item.items():
                if not any(w in field for w in _VERDICT_WORDS) or field.endswith(("_a", "_b")):
                    continue
                if isinstance(val, bool):
                    counts[field if val else f"not {field}"] += 1
                elif isinstance(val, str):
                    counts[val] += 1
                elif isinstance(val, (int, float)):
                    counts[f"{field}={val:g}"] += 1
        if counts:
            parts.append(f"{k}: " + ", ".join(f"{n} {what}" for what, n in counts.most_common()))
    return "; ".join(parts) or None


def why(d: Mapping[str, Any] | None) -> str:
    """The escaped "why" of one task: its error, its reason, else the verdicts its details
    hold, else a note that the backend returned a number only."""
    if d is None:
        return ""
    if d.get("error"):
        return f"<span class='err'>{e(d['error'])}</span>"
    if d.get("reason"):
        return e(d["reason"])
    details = d.get("details") or {}
    summary = verdict_summary(details)
    if summary:
        return e(summary)
    framework = details.get("framework") or d.get("backend")
    text = f"no reason text: {framework} returned a number only"
    if "clipped_from" in details:
        text += f" ({details['clipped_from']!r}, below its scale: shown clipped)"
    if "raw_out_of_range" in details:
        text += f" ({details['raw_out_of_range']!r}, outside its range: no score)"
    return f"<span class='note'>{e(text)}</span>"


def relevant_ids(sample: Mapping[str, Any]) -> set[str] | None:
    """The sample's relevant doc ids (``relevant_ids``, else graded ids with grade > 0), or
    None when relevance is unknown."""
    if sample.get("relevant_ids") is not None:
        return set(sample["relevant_ids"])
    graded = sample.get("graded_relevance")
    if isinstance(graded, Mapping):
        return {k for k, g in graded.items() if isinstance(g, (int, float)) and g > 0}
    return None


def _rel_mark(doc_id: str, rel: set[str] | None) -> str:
    if rel is None:
        return ""
    return " <span class='rel'>✓ relevant</span>" if doc_id in rel else " <span class='nrel'>✗ not relevant</span>"


def contexts_html(sample: Mapping[str, Any]) -> str:
    """The retrieved contexts, each labelled with its doc id (when ``retrieved_ids`` has one
    per context) and a relevance mark (when relevant ids are known); then the id lists."""
    ctx = sample.get("retrieved_contexts")
    ids = sample.get("retrieved_ids")
    rel = relevant_ids(sample)
    out = []
    if ctx is not None:
        labelled = ids is not None and len(ids) == len(ctx)
        ids = ids or []
        items = []
        for i, c in enumerate(ctx):
            label = f"<span class='docid'>{e(ids[i])}</span>{_rel_mark(ids[i], rel)} " if labelled else ""
            items.append(f"<li class='ctx'>{label}{e(c)}</li>")
        out.append("<div class='label'>retrieved contexts</div><ol>" + "".join(items) + "</ol>")
    if ids is not None:
        shown = ", ".join(f"<span class='docid'>{e(i)}</span>{_rel_mark(i, rel)}" for i in ids)
        out.append(f"<div class='label'>retrieved ids</div><div>{shown or '—'}</div>")
    if rel is not None:
        out.append(f"<div class='label'>relevant ids</div><div>{e(', '.join(sorted(rel))) or '—'}</div>")
    return "".join(out)
