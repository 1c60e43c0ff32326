"""The report's sections that come from a comparison's own files: threshold translations
and calibration against people (``crosscheck.json``, written by ``compare``) and what
flips in a migration (``migration.json``, written by ``migrate``).

Each section renders what the file says, with the same names the JSON uses; a value that
could not be computed shows as ``—`` with its reason in the notes column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from unified.analysis.migrate import bound_text, num_text, used_bound, value_text
from unified.report.html_agreement import section_alpha, section_jury, section_probability, section_retest
from unified.report.html_base import e, num, table
from unified.report.html_benchmark import section_benchmark
from unified.run.runfolder import BENCHMARK_FILE, CROSSCHECK_FILE, MIGRATION_FILE, SUMMARY_FILE
from unified.run.runindex import describes_lines


def read_json(folder: Path | None, name: str) -> dict[str, Any] | None:
    """A comparison file of the run folder, or None (absent or unreadable)."""
    if folder is None:
        return None
    try:
        data = json.loads((folder / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _cell(v: Any) -> str:
    return "—" if isinstance(v, str) else num(v, 3)


def section_thresholds(cc: Mapping[str, Any]) -> str:
    """One row per metric and direction: A's threshold on B's scale (quantile matching)
    and the pass agreement there and at B's own threshold."""
    head = [
        "metric",
        "from → to",
        "n",
        "threshold",
        "on to's scale",
        "to's own",
        "agree @translated",
        "agree @own",
        "notes",
    ]
    rows = []
    for metric, m in (cc.get("metrics") or {}).items():
        for p in m.get("pairs", []):
            for tr in p.get("threshold_translation", []):
                rows.append(
                    [
                        e(metric),
                        f"{e(tr['from'])} → {e(tr['to'])}",
                        str(tr.get("n", "")),
                        _cell(tr.get("threshold_from")),
                        _cell(tr.get("threshold_to")),
                        _cell(tr.get("threshold_default")),
                        _cell(tr.get("pass_agreement_at_translated")),
                        _cell(tr.get("pass_agreement_at_default")),
                        e("; ".join(tr.get("notes", []))),
                    ]
                )
    if not rows:
        return ""
    return (
        "<section id='thresholds'><h2>Thresholds across backends</h2><p class='note'>What one "
        "backend's pass threshold is on another's scale, by quantile matching (the threshold under "
        "which the other backend passes as many samples). Agreement much better at the translated "
        "threshold than at the other's own means the scales differ; no better means the backends "
        "pass different samples.</p>" + table(head, rows, num_cols=range(2, 8)) + "</section>"
    )


def section_people(cc: Mapping[str, Any]) -> str:
    """Per metric with human labels, per backend (and the jury): AUC, balanced accuracy,
    the best threshold, and the prediction-powered pass rate with its interval."""
    head = [
        "metric",
        "backend",
        "n",
        "AUC",
        "balanced acc (own threshold)",
        "best threshold",
        "BA there",
        "PPI pass rate",
        "PPI 95% CI",
        "labelled / total",
        "notes",
    ]
    rows = []
    for metric, m in (cc.get("metrics") or {}).items():
        human = m.get("human")
        for b, h in ((human or {}).get("backends") or {}).items():
            best, ppi = h.get("best_threshold") or {}, h.get("ppi") or {}
            ci = (
                f"[{num(ppi.get('ci_low'), 3)}, {num(ppi.get('ci_high'), 3)}]"
                if not isinstance(ppi.get("ci_low"), str) and ppi.get("ci_low") is not None
                else "—"
            )
            rows.append(
                [
                    e(metric),
                    e(b),
                    str(h.get("n", "")),
                    _cell(h.get("auc")),
                    _cell(h.get("balanced_accuracy")),
                    _cell(best.get("threshold")),
                    _cell(best.get("balanced_accuracy")),
                    _cell(ppi.get("estimate")),
                    ci,
                    f"{ppi.get('n_labelled', '—')} / {ppi.get('n_total', '—')}",
                    e("; ".join(h.get("notes", []))) if isinstance(h.get("notes"), list) else "",
                ]
            )
    if not rows:
        return ""
    return (
        "<section id='people'><h2>Agreement with people</h2><p class='note'>Against the human "
        "labels in the samples' metadata: ROC AUC and balanced accuracy, the threshold that "
        "maximises balanced accuracy (in-sample, so optimistic), and the prediction-powered "
        "estimate of the true pass rate from the labelled subset (Angelopoulos et al. 2023).</p>"
        + table(head, rows, num_cols=range(2, 9))
        + "</section>"
    )


def section_migration(m: Mapping[str, Any]) -> str:
    """The migration's own section, heading and anchor (``render_migration_html``)."""
    return render_migration_html(m)


def compare_sections(folder: Path | None) -> tuple[list[tuple[str, str]], list[str]]:
    """(nav links, section html) for the comparison files the run folder holds."""
    links: list[tuple[str, str]] = []
    parts: list[str] = []
    retest = section_retest(read_json(folder, SUMMARY_FILE))
    if retest:
        links.append(("retest", "Test–retest"))
        parts.append(retest)
    cc = _current(folder, CROSSCHECK_FILE, "compare", links, parts)
    if cc:
        for anchor, title, html in (
            ("alpha", "Alpha", section_alpha(cc)),
            ("jury", "Jury", section_jury(cc)),
            ("thresholds", "Thresholds", section_thresholds(cc)),
            ("people", "People", section_people(cc)),
            ("probability", "Calibration", section_probability(cc)),
        ):
            if html:
                links.append((anchor, title))
                parts.append(html)
    bench = _current(folder, BENCHMARK_FILE, "benchmark", links, parts)
    if bench:
        links.append(("benchmark", "Benchmark"))
        parts.append(section_benchmark(bench))
    mig = _current(folder, MIGRATION_FILE, "migrate", links, parts)
    if mig:
        links.append(("migration", "Migration"))
        parts.append(section_migration(mig))
    return links, parts


def _current(
    folder: Path | None, name: str, command: str, links: list[tuple[str, str]], parts: list[str]
) -> dict[str, Any] | None:
    """The comparison file ``name`` when it describes the folder's score lines as they
    are now (``runindex.describes_lines``); else None, and a note in its place: a run
    into the folder since, or a hand edit, changed the lines it was computed from, and
    its alpha, thresholds or flips would stand beside fresh numbers as if current."""
    data = read_json(folder, name)
    if data is None or folder is None or describes_lines(folder, data):
        return data
    anchor = name.split(".")[0]
    links.append((anchor, f"{anchor.title()} (stale)"))
    parts.append(
        f"<section id='{anchor}'><h2>{e(name)}: not shown</h2><p class='note'>{e(name)} was computed "
        f"from other score lines than the folder holds now (a run into the folder or an edit since "
        f"<code>{command}</code> wrote it, or a version that did not record them). Run "
        f"<code>unified-eval {command}</code> on this folder again to see it.</p></section>"
    )
    return None


def render_migration_html(m: Mapping[str, Any], *, max_listed: int = 50) -> str:
    """A self-contained HTML fragment (``<section id='migration'>``, no script, every
    value escaped) of a migration report: the summary table and the flipped samples."""
    src, dst = m["from"], m["to"]
    rows = []
    for metric, r in m["metrics"].items():
        rows.append(
            f"<tr><td>{e(metric)}</td><td>{e(r['names'][src])}</td><td>{e(r['names'][dst])}</td>"
            f"<td class='num'>{r['n']}</td><td class='num'>{e(format(r['threshold_from'], 'g'))}"
            f"{' (gate)' if r['threshold_source'] == 'gate' else ''}</td>"
            f"<td class='num'>{e(bound_text(r['threshold_to']))}</td>"
            f"<td class='num'>{e(num_text(r['pass_agreement_at_translated']))}</td>"
            f"<td class='num'>{r['n_flips']}</td><td class='num'>{r['flips_at_same_threshold']}</td>"
            f"<td>{e('; '.join(r['notes']))}</td></tr>"
        )
    parts = [
        f"<section id='migration'><h2>Migration {e(src)} → {e(dst)}</h2>",
        "<table><tr><th>metric</th>"
        f"<th>{e(src)} name</th><th>{e(dst)} name</th><th>n</th><th>threshold</th>"
        f"<th>on {e(dst)}</th><th>pass agreement</th><th>flips</th><th>flips at the same "
        "threshold</th><th>notes</th></tr>",
        *rows,
        "</table>",
    ]
    for metric, r in m["metrics"].items():
        if not r["flips"]:
            continue
        parts.append(
            f"<h3>{e(metric)}: samples that flip ({r['n_flips']})</h3><table><tr>"
            f"<th>sample</th><th>direction</th><th>{e(src)}</th><th>{e(dst)}</th></tr>"
        )
        # each value printed on the same side of its bound as it is (value_text)
        t_a, used = r["threshold_from"], used_bound(r)
        for f in r["flips"][:max_listed]:
            cell = lambda side, t: (
                f"{e(value_text(side['value'], t))} <span class='note'>{e(side['reason'] or '')}</span>"
            )
            q = f"<div class='note'>{e(f['question'])}</div>" if f.get("question") else ""
            parts.append(
                f"<tr><td>{e(f['sample_id'])}{q}</td><td>{e(f['direction'])}</td>"
                f"<td>{cell(f['from'], t_a)}</td><td>{cell(f['to'], used)}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</section>")
    return "\n".join(parts)
