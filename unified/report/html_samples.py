"""The page's per-sample parts: the most-disagreeing samples (who stands apart, and each
backend's why) and the per-sample drill-down."""

from __future__ import annotations

from typing import Any

from unified.report.details import contexts_html, details_html, why
from unified.report.html_base import anchor, e, mark, num, sample_link, table
from unified.report.view import View


def _backend_cell(view: View, row: dict[str, Any], backend: str) -> Any:
    t = row["tasks"].get(backend)
    if t is None:
        return ""
    d = view.line(row["metric"], backend, row["sample_id"])
    odd = (
        " <span class='oddmark' title='stands against all the other backends'>odd one out</span>"
        if row["odd"] == backend
        else ""
    )
    value = "error" if not t.ok else f"{num(t.value)} {mark(t.passed)}"
    html = f"<b>{value}</b>{odd}<div class='note'>{why(d)}</div>"
    return ("odd", html) if odd else html


def section_disagree(view: View) -> str:
    backends = view.model.backends
    shown = set(view.drill)
    head = ["metric", "sample", "|Δ|"] + [e(b) for b in backends]
    rows = []
    for r in view.disagreements:
        question = (view.samples.get(r["sample_id"]) or {}).get("user_input") or ""
        rows.append(
            [
                e(r["metric"]),
                sample_link(r["sample_id"], r["sample_id"] in shown) + f"<div class='note'>{e(question[:140])}</div>",
                f"{r['diff']:.2f}",
            ]
            + [_backend_cell(view, r, b) for b in backends]
        )
    intro = (
        "<p class='note'>Per metric, the samples whose backends differ most (|Δ| = highest − lowest "
        "value). <span class='oddmark'>odd one out</span> marks a backend that stands apart from all "
        "the others by more than they differ among themselves (three or more backends). Each cell: "
        "value, ✓ pass / ✗ fail, and the backend's reason.</p>"
    )
    body = (
        table(head, rows, num_cols=[2])
        if rows
        else "<p class='note'>the backends agree on every sample they all scored</p>"
    )
    return f"<section id='disagree'><h2>Most-disagreeing samples</h2>{intro}{body}</section>"


def _scores_table(view: View, sid: str, doc_ids: list[str] | None) -> str:
    rows = []
    for m in view.model.metrics:
        for b in view.model.backends:
            t = view.model.task(m, b, sid)
            if t is None:
                continue
            d = view.line(m, b, sid) or {}
            rows.append(
                [e(m), e(b), num(t.value), mark(t.passed), why(d), details_html(d.get("details") or {}, doc_ids)]
            )
    return table(["metric", "backend", "value", "pass", "reason / error", "details"], rows, num_cols=[2])


def _summary_marks(view: View, sid: str, limit: int = 8) -> str:
    marks = []
    for m in view.model.metrics:
        for b in view.model.backends:
            t = view.model.task(m, b, sid)
            if t is not None:
                marks.append(f"{e(m)}/{e(b)}={'err' if not t.ok else num(t.value, 1)}")
    more = f" … +{len(marks) - limit}" if len(marks) > limit else ""
    return " ".join(marks[:limit]) + more


def _sample_block(view: View, sid: str) -> str:
    s = view.samples.get(sid, {})
    ids = s.get("retrieved_ids")
    # a details "context" index names its doc only when there is one id per context
    doc_ids = ids if ids is not None and len(ids) == len(s.get("retrieved_contexts") or []) else None
    parts = [
        f"<details class='sample' id='{e(anchor(sid))}' data-sid='{e(sid)}'>"
        f"<summary>{e(sid)} — {e((s.get('user_input') or '')[:120])} "
        f"<span class='note'>{_summary_marks(view, sid)}</span></summary>",
        # a summary or data-to-text sample has no question: no empty "question" block
        f"<div class='label'>question</div><div>{e(s['user_input'])}</div>" if s.get("user_input") else "",
        contexts_html(s),
    ]
    for key in ("response", "reference"):
        if s.get(key) is not None:
            parts.append(f"<div class='label'>{key}</div><div>{e(s[key])}</div>")
    parts += ["<div class='label'>scores</div>", _scores_table(view, sid, doc_ids), "</details>"]
    return "".join(parts)


def section_samples(view: View) -> str:
    head = (
        f"<section id='samples'><h2>Samples</h2><p class='note'>{len(view.drill)} of {view.n_samples} "
        "samples shown (the most-disagreeing first). Link to one with <code>report.html#SAMPLE-ID</code>. "
        "<button type='button' onclick='setAll(true)'>expand all</button> "
        "<button type='button' onclick='setAll(false)'>collapse all</button></p>"
        "<p class='note err' id='missing-sample' hidden></p>"
    )
    return head + "".join(_sample_block(view, sid) for sid in view.drill) + "</section>"
