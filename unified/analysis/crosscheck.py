"""Agreement between backends, and between each backend and human labels.

Run the same metric on several backends and this module says where they agree: per
metric, each backend's summary; per pair of backends the correlation, the mean absolute
difference on the 0–10 scale, the pass/fail agreement, Cohen's kappa and, both ways, the
translation of one backend's threshold onto the other's scale (``unified.analysis.translate``);
the samples on which they disagree most, reasons side by side; and, when the samples
carry human labels (``metadata.labels.<name>``), each backend's calibration against the
people (``unified.analysis.calibration``: AUC, balanced accuracy, the best threshold, the
prediction-powered pass rate) — so a user can see which evaluator to trust. A jury
(``unified.analysis.jury``) is a backend like the others here: pass its lines in the scores, or
``jury="median"`` to pool the members on the fly.

The statistics live in ``unified.analysis.stats`` (re-exported here); a statistic that cannot be
computed is ``"undefined"`` with its reason in the ``notes`` of the object that holds it
(the convention is written there).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from unified.analysis.calibration import human_calibration
from unified.analysis.jury import JURY, jury_members, jury_scores, jury_section
from unified.analysis.reliability import backends_alpha
from unified.analysis.stats import (  # noqa: F401 - re-exported: the statistics' public home was here
    MIN_N,
    UNDEFINED,
    Stat,
    Undefined,
    auc,
    balanced_accuracy,
    bootstrap_ci,
    cohen_kappa,
    is_undefined,
    pearson,
    rankdata,
    rounded,
    spearman,
    undefined_reason,
)
from unified.analysis.translate import threshold_translation
from unified.analysis.verdict import backend_threshold, canonical, cut_for, label_for  # noqa: F401
from unified.sample import Sample
from unified.scores import Score, aggregate
from unified.text import cut_at_word

_r = rounded


def pair_stats(a: Sequence[float], b: Sequence[float], threshold_a: float, threshold_b: float) -> dict[str, Any]:
    """Agreement of two backends' 0–10 values on the same samples (``a[i]``, ``b[i]`` score
    sample i). Pass means value ≥ that backend's threshold.

    Returns n, pearson, spearman, mean_abs_diff (= mean |aᵢ − bᵢ|, on 0–10),
    pass_agreement (share of samples with the same verdict), cohen_kappa, and ``notes``
    explaining every ``"undefined"``."""
    if len(a) != len(b):
        raise ValueError(f"pair_stats needs equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    notes: list[str] = []
    pass_a = [v >= threshold_a for v in a]
    pass_b = [v >= threshold_b for v in b]
    out: dict[str, Any] = {"n": n}
    if n < MIN_N:
        notes.append(f"every statistic undefined: n={n} < {MIN_N} samples scored by both")
        short = Undefined(f"n={n} < {MIN_N}")
        out.update(
            pearson=short, spearman=short, mean_abs_diff=short, pass_agreement=short, cohen_kappa=short, notes=notes
        )
        return out
    why = undefined_reason(a, b)
    if why:
        notes.append(f"pearson/spearman undefined: {why}")
    out["pearson"] = pearson(a, b)
    out["spearman"] = spearman(a, b)
    out["mean_abs_diff"] = float(np.mean(np.abs(np.asarray(a, float) - np.asarray(b, float))))
    out["pass_agreement"] = sum(x == y for x, y in zip(pass_a, pass_b)) / n
    why = undefined_reason(pass_a, pass_b)
    if why:
        notes.append(f"cohen_kappa undefined: pass/fail of {why} (threshold a={threshold_a}, b={threshold_b})")
    out["cohen_kappa"] = cohen_kappa(pass_a, pass_b)
    out["notes"] = notes
    return out


# ---------------------------------------------------------------- cross-check


def crosscheck(
    scores: Iterable[Score],
    samples: Mapping[str, Sample] | None = None,
    top_n: int = 10,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    jury: str | None = None,
    label_cuts: Mapping[str, float] | None = None,
    on: str = "value",
) -> dict[str, Any]:
    """Cross-check several backends' Scores of the same samples (JSON-serialisable result).

    Per metric (as the user named it): ``backends`` — each backend's count, scored,
    errors, mean, median, stdev, pass_rate (from ``unified.scores.aggregate``);
    ``pairs`` — ``pair_stats`` on the samples both backends scored without error, with
    ``excluded`` counting the samples dropped because either side failed, and
    ``threshold_translation``: a list of two ``unified.analysis.translate.threshold_translation``
    entries, a → b and b → a; ``agreement_matrix`` — backend × backend Spearman and mean
    absolute difference; ``alpha`` — Krippendorff's alpha over all backends (interval on
    the values, nominal on pass/fail; ``unified.analysis.reliability.backends_alpha``);
    ``disagreements`` — the ``top_n`` samples with the largest
    |difference| between any two backends, each backend's value and reason side by side
    (and the question, when ``samples`` are given); ``human`` — when samples carry
    ``metadata.labels``, ``unified.analysis.calibration.human_calibration`` (per backend AUC and
    balanced accuracy with seeded bootstrap 95 % intervals, ``best_threshold``, ``ppi``,
    Spearman against the raw labels, Brier score, ECE with the reliability diagram's bins,
    and the ``collapse`` flag).

    The jury in its place: it is made of its members, so it is never paired with them
    (pairs, translations, agreement matrix) and never counted in alpha; it gets its own
    ``jury`` entry (``unified.analysis.jury.jury_section``: members, dissent rate, who
    dissents most) and is judged against people like any backend.

    ``jury``: a pooling method (median|mean|majority) to add ``unified.analysis.jury`` lines when
    the scores hold none. ``label_cuts``: {metric: cut} binarising graded labels where the
    default cut (``unified.analysis.verdict``) does not fit their scale. ``on="calibrated"``:
    every statistic on ``Score.calibrated`` (the value mapped through a calibration file)
    instead of ``value``; a Score without one is left out and counted. Lines of input rows that
    never became samples (``row_error``) are left out and counted in ``notes``.
    """
    if on not in ("value", "calibrated"):
        raise ValueError(f"on must be 'value' or 'calibrated', not {on!r}")
    by_metric, notes = _by_metric(_on_calibrated(scores) if on == "calibrated" else scores, jury)
    if on == "calibrated":
        notes.insert(0, "computed on the calibrated values (Score.calibrated), not the raw 0–10 values")
    result: dict[str, Any] = {
        "backends": sorted({b for m in by_metric.values() for b in m}),
        "metrics": {},
        "notes": notes,
    }
    for metric, per_backend in by_metric.items():
        cut = cut_for(metric, label_cuts)
        result["metrics"][metric] = _crosscheck_metric(metric, per_backend, samples, top_n, bootstrap, seed, cut)
    return result


def _on_calibrated(scores: Iterable[Score]) -> Iterator[Score]:
    """Each Score that has a calibrated value, with that value as its value (a failure
    stays a failure); Scores of uncalibrated pairs are left out."""
    for s in scores:
        if not s.ok:
            yield s
        elif s.calibrated is not None:
            yield s.model_copy(update={"value": s.calibrated, "passed": None})


def _by_metric(scores: Iterable[Score], jury: str | None) -> tuple[dict[str, dict[str, dict[str, Score]]], list[str]]:
    """{metric: {backend: {sample_id: Score}}}, the last line per key winning, and notes."""
    lines = list(scores)
    if jury and not any(s.backend == JURY for s in lines):
        lines += jury_scores(lines, jury)
    by_metric: dict[str, dict[str, dict[str, Score]]] = defaultdict(lambda: defaultdict(dict))
    duplicates = row_errors = 0
    for s in lines:
        if s.row_error:
            row_errors += 1
            continue
        slot = by_metric[s.metric][s.backend]
        if s.sample_id in slot:
            duplicates += 1  # a resumed run can repeat a task; the latest result wins
        slot[s.sample_id] = s
    notes: list[str] = []
    if duplicates:
        notes.append(f"{duplicates} repeated (metric, backend, sample) scores: the last one was used")
    if row_errors:
        notes.append(f"{row_errors} input-row error lines are no samples: left out of the cross-check")
    return by_metric, notes


def _summary(metric: str, scores: dict[str, Score], threshold: float) -> dict[str, Any]:
    agg = aggregate(scores.values(), metric)
    pass_rate = agg.pass_rate
    if pass_rate is None and agg.scored:
        # Scores written without a threshold carry no verdict: judge them at the same
        # bound the pair statistics use, so the two tables agree
        ok = [s.value for s in scores.values() if s.ok]
        pass_rate = sum(v >= threshold for v in ok) / len(ok)  # type: ignore[operator]
    return {
        "count": agg.count,
        "scored": agg.scored,
        "errors": agg.errors,
        "mean": _r(agg.mean),
        "median": _r(agg.median),
        "stdev": _r(agg.stdev),
        "pass_rate": _r(pass_rate),
        "threshold": threshold,
    }


def _pair(per_backend: dict[str, dict[str, Score]], a: str, b: str, thresholds: dict[str, float]) -> dict[str, Any]:
    """``pair_stats`` and both threshold translations on the samples a and b both scored."""
    common = sorted(set(per_backend[a]) & set(per_backend[b]))
    ok = [sid for sid in common if per_backend[a][sid].ok and per_backend[b][sid].ok]
    va = [float(per_backend[a][sid].value) for sid in ok]  # type: ignore[arg-type]
    vb = [float(per_backend[b][sid].value) for sid in ok]  # type: ignore[arg-type]
    st = {k: _r(v) for k, v in pair_stats(va, vb, thresholds[a], thresholds[b]).items()}
    st.update(a=a, b=b, excluded=len(common) - len(ok), only_one_backend=len(set(per_backend[a]) ^ set(per_backend[b])))
    st["threshold_translation"] = [
        threshold_translation(va, vb, thresholds[a], thresholds[b], a, b),
        threshold_translation(vb, va, thresholds[b], thresholds[a], b, a),
    ]
    return st


def _crosscheck_metric(
    metric: str,
    per_backend: dict[str, dict[str, Score]],
    samples: Mapping[str, Sample] | None,
    top_n: int,
    bootstrap: int,
    seed: int,
    cut: float | None = None,
) -> dict[str, Any]:
    backends = sorted(per_backend)
    thresholds = {b: backend_threshold(metric, per_backend[b].values()) for b in backends}
    members = jury_members(per_backend.get(JURY, {}).values())
    # the jury is made of its members: its agreement with them says nothing new
    table = [b for b in backends if not (b == JURY and members & set(backends))]
    pairs = []
    spearman_m = {b: {c: (1.0 if b == c else UNDEFINED) for c in table} for b in table}
    mad_m = {b: {c: (0.0 if b == c else UNDEFINED) for c in table} for b in table}
    for a, b in combinations(backends, 2):
        if JURY in (a, b) and ({a, b} - {JURY}) <= members:
            continue
        st = _pair(per_backend, a, b, thresholds)
        pairs.append(st)
        if a in table and b in table:
            spearman_m[a][b] = spearman_m[b][a] = st["spearman"]
            mad_m[a][b] = mad_m[b][a] = st["mean_abs_diff"]
    raters = [b for b in backends if b != JURY]
    out: dict[str, Any] = {
        "canonical": canonical(metric),
        "backends": {b: _summary(metric, per_backend[b], thresholds[b]) for b in backends},
        "pairs": pairs,
        "agreement_matrix": {"backends": table, "spearman": spearman_m, "mean_abs_diff": mad_m},
        "disagreements": _top_disagreements(per_backend, backends, samples, top_n),
    }
    if len(raters) >= 2:
        out["alpha"] = backends_alpha({b: per_backend[b] for b in raters}, thresholds)
    if JURY in per_backend:
        out["jury"] = jury_section(per_backend[JURY].values())
    if samples:
        human = human_calibration(
            metric, {b: per_backend[b] for b in backends}, thresholds, samples, bootstrap=bootstrap, seed=seed, cut=cut
        )
        if human:
            out["human"] = human
    return out


def _top_disagreements(
    per_backend: dict[str, dict[str, Score]], backends: list[str], samples: Mapping[str, Sample] | None, top_n: int
) -> list[dict[str, Any]]:
    """Samples ordered by the largest |value_a − value_b| over backend pairs that both
    scored them (ties broken by sample id, so the report is stable). The jury is left out:
    it is made of the others, so its distance from them says nothing new."""
    rows = []
    members = [b for b in backends if b != JURY]
    all_ids = sorted({sid for b in members for sid in per_backend[b]})
    for sid in all_ids:
        ok = {b: per_backend[b][sid] for b in members if sid in per_backend[b] and per_backend[b][sid].ok}
        best: tuple[float, str, str] | None = None
        for a, b in combinations(sorted(ok), 2):
            d = abs(float(ok[a].value) - float(ok[b].value))  # type: ignore[arg-type]
            if best is None or d > best[0]:
                best = (d, a, b)
        if best is None:
            continue
        row: dict[str, Any] = {
            "sample_id": sid,
            "diff": round(best[0], 4),
            "between": [best[1], best[2]],
            "values": {b: (_r(per_backend[b][sid].value) if sid in per_backend[b] else None) for b in backends},
            "reasons": {
                b: (per_backend[b][sid].reason or per_backend[b][sid].error) if sid in per_backend[b] else None
                for b in backends
            },
        }
        if samples and sid in samples:
            row["question"] = samples[sid].user_input
        rows.append(row)
    rows.sort(key=lambda r: (-r["diff"], r["sample_id"]))
    return rows[:top_n]


# ---------------------------------------------------------------- terminal output


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, float) for x in v):
        return f"[{v[0]:.2f}, {v[1]:.2f}]"
    return str(v)


def _table(title: str, columns: Sequence[str]) -> Any:
    """A rich Table whose first column is left-aligned and the rest right-aligned."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i == 0 else "right")
    return t


def _backends_table(metric: str, m: Mapping[str, Any]) -> Any:
    t = _table(f"{metric} — per backend", ("backend", "mean", "median", "pass rate", "scored", "errors"))
    for b, s in m["backends"].items():
        t.add_row(b, _fmt(s["mean"]), _fmt(s["median"]), _fmt(s["pass_rate"]), str(s["scored"]), str(s["errors"]))
    return t


def _pairs_table(metric: str, m: Mapping[str, Any]) -> Any:
    p = _table(
        f"{metric} — agreement between backends",
        ("pair", "n", "excluded", "pearson", "spearman", "mean |diff|", "pass agree", "kappa"),
    )
    for st in m["pairs"]:
        p.add_row(
            f"{st['a']} × {st['b']}",
            str(st["n"]),
            str(st["excluded"]),
            _fmt(st["pearson"]),
            _fmt(st["spearman"]),
            _fmt(st["mean_abs_diff"]),
            _fmt(st["pass_agreement"]),
            _fmt(st["cohen_kappa"]),
        )
    return p


def _translation_table(metric: str, m: Mapping[str, Any]) -> Any:
    """One row per ordered pair: A's threshold, its translation onto B's scale, B's own,
    and the pass agreement at each."""
    t = _table(
        f"{metric} — thresholds translated (quantile matching)",
        ("from → to", "n", "threshold", "→ on to's scale", "to's own", "agree @translated", "agree @own"),
    )
    for st in m["pairs"]:
        for tr in st.get("threshold_translation", []):
            t.add_row(
                f"{tr['from']} → {tr['to']}",
                str(tr["n"]),
                _fmt(tr["threshold_from"]),
                _fmt(tr["threshold_to"]),
                _fmt(tr["threshold_default"]),
                _fmt(tr["pass_agreement_at_translated"]),
                _fmt(tr["pass_agreement_at_default"]),
            )
    return t


def _human_tables(metric: str, h: Mapping[str, Any]) -> list[Any]:
    """Agreement with the labels, then the calibration: best threshold and PPI pass rate."""
    cut = f", pass ≥ {_fmt(h['binarised_at'])}" if "binarised_at" in h else ""
    ht = _table(
        f"{metric} — agreement with human labels '{h['label']}' ({h['kind']}{cut})",
        ("backend", "n", "AUC", "AUC 95% CI", "spearman", "balanced acc", "BA 95% CI"),
    )
    ct = _table(
        f"{metric} — calibration against people (labelled pass rate "
        f"{_fmt(h['labelled_pass_rate']['estimate'])} of {h['labelled_pass_rate']['n']})",
        (
            "backend",
            "best threshold",
            "its 95% CI",
            "BA there",
            "PPI pass rate",
            "PPI 95% CI",
            "labelled / total",
            "Brier",
            "ECE",
            "collapse",
        ),
    )
    for b, e in h["backends"].items():
        ht.add_row(
            b,
            str(e["n"]),
            _fmt(e.get("auc")),
            _fmt(e.get("auc_ci95")),
            _fmt(e["spearman"]),
            _fmt(e.get("balanced_accuracy")),
            _fmt(e.get("balanced_accuracy_ci95")),
        )
        if "best_threshold" not in e:
            continue
        bt, ppi = e["best_threshold"], e["ppi"]
        ci = ppi["ci_low"] if is_undefined(ppi["ci_low"]) else f"[{ppi['ci_low']:.3f}, {ppi['ci_high']:.3f}]"
        ct.add_row(
            b,
            _fmt(bt["threshold"]),
            _fmt(bt["ci95"]),
            _fmt(bt["balanced_accuracy"]),
            _fmt(ppi["estimate"]),
            ci,
            f"{ppi['n_labelled']} / {ppi['n_total']}",
            _fmt(e.get("brier")),
            _fmt(e.get("ece")),
            _collapse_text(e.get("collapse")),
        )
    return [ht, ct] if ct.row_count else [ht]


def _collapse_text(c: Mapping[str, Any] | None) -> str:
    """``COLLAPSED (2 distinct values)``, ``COLLAPSED (95% at 10)``, ``no``, or ``—`` when
    undefined (labels not mixed)."""
    if not c or is_undefined(c.get("flag")):
        return "—"
    if not c["flag"]:
        return "no"
    if c["distinct_values"] <= 2:
        return f"COLLAPSED ({c['distinct_values']} distinct value{'s' if c['distinct_values'] > 1 else ''})"
    return f"COLLAPSED ({c['share_at_end']:.0%} at {c['end']})"


def _alpha_line(metric: str, a: Mapping[str, Any]) -> Any:
    """One line: Krippendorff's alpha over the backends (the jury is not a rater)."""
    from rich.text import Text

    return Text(
        f"{metric} — Krippendorff's alpha over {', '.join(a['backends'])} ({a['n']} samples): "
        f"interval {_fmt(a['interval'])}, nominal (pass/fail) {_fmt(a['nominal'])}"
    )


def _jury_table(metric: str, j: Mapping[str, Any]) -> list[Any]:
    """The jury's own section: a line saying who sits on it, how often it splits and who
    dissents most (a line: a table title would wrap to the narrow table), then each member."""
    from rich.text import Text

    rate = "—" if j["dissent_rate"] is None else f"{j['dissent_rate']:.0%}"
    head = Text(
        f"{metric} — jury ({j['method']} of {', '.join(j['members'])}; {j['n']} samples, "
        f"split on {rate}; dissents most: {j['most_dissent'] or 'nobody'})"
    )
    t = _table("", ("member", "voted", "dissents", "dissent rate"))
    for m, d in j["members_dissent"].items():
        t.add_row(m, str(d["voted"]), str(d["dissents"]), "—" if d["rate"] is None else f"{d['rate']:.0%}")
    return [head, t]


#: the terminal's disagreement table without --verbose: at most this many samples, each
#: more than ``SHOWN_DIFF`` apart (a fifth of the scale: two judges a couple of points apart
#: is ordinary noise, not the place to start reading); crosscheck.json keeps them all
SHOWN_DISAGREEMENTS = 5
SHOWN_DIFF = 2.0


def _disagreements_table(metric: str, m: Mapping[str, Any], reason_width: int, verbose: bool = False) -> Any:
    """The samples the backends disagree on most; reasons and questions as plain text (a
    judge's "[[Yes]]" is no rich markup). Without ``verbose`` only the few that matter
    (``SHOWN_DISAGREEMENTS`` with |diff| > ``SHOWN_DIFF``), and a caption says what is left
    out; None when none matters."""
    from rich.text import Text

    rows = _real_disagreements(m)
    shown = rows if verbose else [r for r in rows if abs(r["diff"]) > SHOWN_DIFF][:SHOWN_DISAGREEMENTS]
    if not shown:
        return None
    d = _table(f"{metric} — largest disagreements", ("sample", "|diff|", *m["backends"]))
    if len(shown) < len(rows):
        d.caption = (
            f"the {len(shown)} largest of {len(rows)} listed (|diff| > {SHOWN_DIFF:g}); "
            "--verbose shows them all, crosscheck.json has them"
        )
    for row in shown:
        cells = []
        for b in m["backends"]:
            reason = cut_at_word(row["reasons"].get(b) or "", reason_width)
            cells.append(Text(f"{_fmt(row['values'].get(b))} {reason}".strip()))
        label = row["sample_id"] + (f"\n{cut_at_word(row['question'], reason_width)}" if row.get("question") else "")
        d.add_row(Text(label), _fmt(row["diff"]), *cells)
    return d


def _real_disagreements(m: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Disagreement rows whose |diff| shows as more than 0.00 (a row of equal values pads
    the table and says nothing)."""
    return [r for r in m["disagreements"] if r.get("diff") is not None and abs(r["diff"]) >= 0.005]


def format_crosscheck(result: Mapping[str, Any], *, reason_width: int = 60, verbose: bool = False) -> Any:
    """A rich renderable (``Group`` of tables) of a ``crosscheck`` result, for the CLI:
    per metric a summary table, the pair agreement, Krippendorff's alpha, the jury's section,
    and the few largest disagreements (reasons cut at word boundaries); ``verbose`` lists
    every disagreement crosscheck.json holds, and adds the threshold translations and, when labels were present, the human-agreement and
    calibration tables (Brier, ECE, collapse). ``render_crosscheck`` gives it as plain text."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    more = False
    for metric, m in result.get("metrics", {}).items():
        parts.append(_backends_table(metric, m))
        if m["pairs"]:
            parts += [_pairs_table(metric, m)] + ([_translation_table(metric, m)] if verbose else [])
        if "alpha" in m:
            parts.append(_alpha_line(metric, m["alpha"]))
        if "jury" in m:
            parts += _jury_table(metric, m["jury"])
        if "human" in m and verbose:
            parts += _human_tables(metric, m["human"])
        if _real_disagreements(m) and len(m["backends"]) > 1:
            table = _disagreements_table(metric, m, reason_width, verbose)
            parts += [table] if table is not None else []
        more = more or bool(m["pairs"]) or "human" in m
    for note in result.get("notes", []):
        parts.append(Text(f"note: {note}"))
    if more and not verbose:
        parts.append(Text("threshold translations and agreement with people: --verbose (all in crosscheck.json)"))
    return Group(*parts)


def render_crosscheck(result: Mapping[str, Any], width: int = 120, verbose: bool = True) -> str:
    """``format_crosscheck`` rendered to plain text (no colour), e.g. for a log or a test."""
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False).print(
        format_crosscheck(result, verbose=verbose)
    )
    return buf.getvalue()
