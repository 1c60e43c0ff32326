"""Report: a run's Scores as a table, JSONL/Parquet, summary, cross-check and an HTML page.

A ``Report`` reads a run folder lazily (``scores.jsonl`` is streamed for ``summary()``, so
a 100k-sample run is summarised without holding its Scores), or wraps Scores in memory.

The HTML page is one self-contained offline file: static SVG plots rendered by
matplotlib (Agg backend; text drawn as paths, so not even a font is fetched), tables,
``<details>`` drill-downs and a few lines of inline script. No CDN, no network. Every
piece of user text goes through ``html.escape``.
"""

from __future__ import annotations

import html
import io
import json
import math
import statistics
from datetime import datetime, timezone
from itertools import combinations
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from unified.scores import Aggregate, Cost, Score

from unified.runfolder import SAMPLES_FILE, SCORES_FILE, SUMMARY_FILE


class RunningAggregates:
    """Streaming twin of ``unified.scores.aggregate_by``: keeps only the successful
    values of each (metric, backend) (floats, for the median), never the Scores.

    mean = Σ v / n over successful scores; pass rate = passed / scores with a verdict;
    errors = scores with ``error`` or no value. Same rules as ``aggregate``.
    """

    def __init__(self) -> None:
        self._g: dict[tuple[str, str], dict[str, Any]] = {}

    def _slot(self, metric: str, backend: str) -> dict[str, Any]:
        key = (metric, backend)
        if key not in self._g:
            self._g[key] = {"values": [], "passes": 0, "verdicts": 0, "count": 0, "errors": 0, "cost": Cost()}
        return self._g[key]

    def add(self, s: Score) -> None:
        self._add(s.metric, s.backend, s.value if s.ok else None, s.passed, s.cost)

    def add_dict(self, d: Mapping[str, Any]) -> None:
        """Add a Score given as its JSON dict (faster than building the model)."""
        ok = d.get("error") is None and d.get("value") is not None
        self._add(d["metric"], d["backend"], d.get("value") if ok else None, d.get("passed"),
                  Cost(**(d.get("cost") or {})))

    def _add(self, metric: str, backend: str, value: float | None, passed: bool | None, cost: Cost) -> None:
        g = self._slot(metric, backend)
        g["count"] += 1
        g["cost"] = g["cost"].add(cost)
        if value is not None and math.isfinite(value):
            g["values"].append(float(value))
            if passed is not None:
                g["verdicts"] += 1
                g["passes"] += bool(passed)
        else:
            g["errors"] += 1

    def results(self) -> list[Aggregate]:
        out = []
        for (metric, backend), g in self._g.items():
            v = g["values"]
            out.append(Aggregate(
                metric=metric, backend=backend, count=g["count"], scored=len(v), errors=g["errors"],
                mean=statistics.fmean(v) if v else None, median=statistics.median(v) if v else None,
                stdev=statistics.stdev(v) if len(v) > 1 else None,
                pass_rate=g["passes"] / g["verdicts"] if g["verdicts"] else None, cost=g["cost"]))
        return out


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed run; the runner repairs it on resume


class Report:
    """The results of a run: ``Report.from_dir(DIR)`` or ``Report(scores, samples)``."""

    def __init__(self, scores: Iterable[Score] | None = None,
                 samples: Iterable[Any] | Mapping[str, Any] | None = None, *, run_dir: str | Path | None = None):
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self._scores = list(scores) if scores is not None else None
        self._samples_in = samples

    @classmethod
    def from_dir(cls, path: str | Path) -> "Report":
        p = Path(path)
        if not (p / SCORES_FILE).exists():
            raise FileNotFoundError(f"{p} is not a run folder: it has no {SCORES_FILE}")
        return cls(run_dir=p)

    # ------------------------------------------------------------ access

    def iter_score_dicts(self) -> Iterator[dict[str, Any]]:
        if self._scores is not None:
            for s in self._scores:
                yield s.model_dump(mode="json")
        else:
            assert self.run_dir is not None
            yield from _iter_jsonl(self.run_dir / SCORES_FILE)

    def iter_scores(self) -> Iterator[Score]:
        if self._scores is not None:
            yield from self._scores
        else:
            for d in self.iter_score_dicts():
                yield Score.model_validate(d)

    @property
    def scores(self) -> list[Score]:
        """All Scores (loads them; prefer ``iter_scores``/``summary`` for huge runs)."""
        return list(self.iter_scores())

    def iter_samples(self) -> Iterator[dict[str, Any]]:
        """Each sample as a dict, in run order (``samples.jsonl`` for a run folder)."""
        src = self._samples_in
        if src is None and self.run_dir is not None:
            yield from (d for d in _iter_jsonl(self.run_dir / SAMPLES_FILE) if "id" in d)
            return
        items = [] if src is None else (src.values() if isinstance(src, Mapping) else src)
        for s in items:
            d = s.model_dump(exclude_none=True) if hasattr(s, "model_dump") else dict(s)
            d["id"] = str(d.get("id"))
            yield d

    def samples(self, ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """Sample id -> the sample as a dict; only ``ids`` when given (a big run's
        samples are not all loaded to show a few)."""
        want = None if ids is None else set(ids)
        return {d["id"]: d for d in self.iter_samples() if want is None or d["id"] in want}

    def run_summary(self) -> dict[str, Any]:
        if self.run_dir is not None and (self.run_dir / SUMMARY_FILE).exists():
            return json.loads((self.run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
        return {}

    def backends(self) -> list[str]:
        return sorted({d["backend"] for d in self.iter_score_dicts()})

    # ------------------------------------------------------------ tables

    def to_pandas(self) -> Any:
        """One row per Score: metric, backend, sample_id, value, raw, raw_lo, raw_hi,
        threshold, passed, reason, error, degraded, details (dict), cost_* columns."""
        import pandas as pd

        rows = []
        for d in self.iter_score_dicts():
            rr = d.get("raw_range") or (None, None)
            row = {k: d.get(k) for k in ("metric", "backend", "sample_id", "value", "raw", "higher_is_better",
                                        "threshold", "passed", "reason", "error", "degraded")}
            row["raw_lo"], row["raw_hi"] = rr[0], rr[1]
            row["details"] = d.get("details") or {}
            for k, v in (d.get("cost") or {}).items():
                row[f"cost_{k}"] = v
            rows.append(row)
        cols = ["metric", "backend", "sample_id", "value", "raw", "raw_lo", "raw_hi", "higher_is_better",
                "threshold", "passed", "reason", "error", "degraded", "details"]
        df = pd.DataFrame(rows)
        if df.empty:
            return pd.DataFrame(columns=cols)
        return df

    def wide(self, values: str = "value") -> Any:
        """Samples × ``backend:metric`` pivot of ``values`` (the last score wins)."""
        df = self.to_pandas()
        if df.empty:
            return df
        df = df.assign(column=df["backend"] + ":" + df["metric"])
        return df.pivot_table(index="sample_id", columns="column", values=values, aggfunc="last")

    def summary(self) -> list[Aggregate]:
        """One Aggregate per (metric, backend), streamed (``aggregate_by`` semantics)."""
        agg = RunningAggregates()
        for d in self.iter_score_dicts():
            agg.add_dict(d)
        return agg.results()

    def error_list(self, limit: int = 50) -> list[dict[str, Any]]:
        """The first ``limit`` failed scores: sample id, metric, backend, error."""
        out = []
        for d in self.iter_score_dicts():
            if d.get("error") is not None or d.get("value") is None:
                out.append({"sample_id": d["sample_id"], "metric": d["metric"], "backend": d["backend"],
                            "error": d.get("error") or "no value"})
                if len(out) >= limit:
                    break
        return out

    def to_jsonl(self, path: str | Path) -> Path:
        p = Path(path)
        with open(p, "w", encoding="utf-8") as f:
            for d in self.iter_score_dicts():
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
        return p

    def to_parquet(self, path: str | Path) -> Path:
        """Parquet of ``to_pandas()``; ``details`` is stored as a JSON string because its
        keys differ between metrics (Parquet needs one struct type per column)."""
        df = self.to_pandas()
        if not df.empty:
            df["details"] = df["details"].map(lambda d: json.dumps(d, ensure_ascii=False, default=str))
        df.to_parquet(path, index=False)
        return Path(path)

    def crosscheck(self, top_n: int = 10) -> dict[str, Any] | None:
        """``unified.crosscheck.crosscheck`` over this run, or None with fewer than 2 backends."""
        if len(self.backends()) < 2:
            return None
        from unified.crosscheck import crosscheck
        from unified.sample import Sample

        samples = {}
        for sid, d in self.samples().items():
            try:
                samples[sid] = Sample.model_validate(d)
            except Exception:  # a sample that no longer validates only loses its question
                continue
        return crosscheck(self.iter_scores(), samples, top_n=top_n)

    def write_html(self, path: str | Path, *, max_drilldown: int = 200) -> Path:
        """Write the self-contained HTML report (see module docstring)."""
        p = Path(path)
        p.write_text(render_html(self, max_drilldown=max_drilldown), encoding="utf-8")
        return p


# ================================================================ HTML

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1f3a5f;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}
header .meta{opacity:.85;font-size:13px}nav{padding:8px 28px;background:#e8edf4}nav a{margin-right:14px;color:#1f3a5f}
main{padding:10px 28px 40px}section{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:18px;margin:4px 0 10px}table{border-collapse:collapse;margin:6px 0}
th,td{border-bottom:1px solid #e3e7ee;padding:4px 9px;text-align:left;vertical-align:top}th{background:#f0f3f8}
td.num{text-align:right;font-variant-numeric:tabular-nums}.err{color:#b42318}.ok{color:#067647}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plot{border:1px solid #e3e7ee;border-radius:6px;padding:4px}
.plot svg{width:380px;height:auto}.plot.heat svg{width:auto;max-width:100%;height:auto}details{margin:4px 0;border:1px solid #e3e7ee;border-radius:6px;padding:4px 10px;background:#fff}
details[open]{background:#fbfcfe}summary{cursor:pointer;font-weight:600}pre{white-space:pre-wrap;word-break:break-word;background:#f3f5f8;padding:6px;border-radius:4px;font-size:12px}
.label{color:#5a6474;font-size:12px;text-transform:uppercase;letter-spacing:.04em;margin-top:8px}
.ctx{margin:2px 0 2px 18px}pre.det{max-height:14em;overflow:auto;margin:0;max-width:48em}.note{color:#5a6474;font-size:13px}
"""

_JS = """
function openSample(id){var d=document.getElementById(id);if(!d)return;d.open=true;d.scrollIntoView();}
document.addEventListener('click',function(e){var a=e.target.closest('a[data-open]');if(a){e.preventDefault();openSample(a.getAttribute('data-open'));}});
function setAll(open){document.querySelectorAll('details.sample').forEach(function(d){d.open=open;});}
"""

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"]


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


class _Svg:
    """Render matplotlib figures to inline SVG strings (Agg, text as paths)."""

    def __init__(self) -> None:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        self.plt = plt
        self.n = 0

    def __call__(self, fig: Any) -> str:
        self.n += 1
        # a fixed salt per figure: deterministic output, and element ids that do not
        # collide between the SVGs inlined into one page
        with self.plt.rc_context({"svg.hashsalt": f"unified-fig-{self.n}", "svg.fonttype": "path"}):
            buf = io.StringIO()
            fig.savefig(buf, format="svg", bbox_inches="tight")
        self.plt.close(fig)
        text = buf.getvalue()
        return text[text.find("<svg"):]


def _light_scores(report: Report) -> tuple[dict[tuple[str, str], dict[str, float]], list[str], list[str]]:
    """(metric, backend) -> {sample_id: value} for successful scores, metric and backend order."""
    vals: dict[tuple[str, str], dict[str, float]] = {}
    metrics: list[str] = []
    backends: list[str] = []
    for d in report.iter_score_dicts():
        m, b = d["metric"], d["backend"]
        if m not in metrics:
            metrics.append(m)
        if b not in backends:
            backends.append(b)
        slot = vals.setdefault((m, b), {})
        if d.get("error") is None and d.get("value") is not None:
            slot[d["sample_id"]] = float(d["value"])
    return vals, metrics, backends


def _dist_plot(svg: _Svg, metric: str, backends: list[str], vals: dict[tuple[str, str], dict[str, float]]) -> str:
    plt = svg.plt
    fig, ax = plt.subplots(figsize=(4.2, 2.6))
    bins = [i * 0.5 for i in range(21)]
    for i, b in enumerate(backends):
        v = list(vals.get((metric, b), {}).values())
        if v:
            ax.hist(v, bins=bins, histtype="stepfilled", alpha=0.35, color=_COLORS[i % len(_COLORS)],
                    label=f"{b} (n={len(v)})", edgecolor=_COLORS[i % len(_COLORS)])
    ax.set_xlim(0, 10)
    ax.set_title(metric, fontsize=10)
    ax.set_xlabel("score (0–10)", fontsize=8)
    ax.set_ylabel("samples", fontsize=8)
    ax.tick_params(labelsize=7)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    return svg(fig)


def _scatter_plot(svg: _Svg, metric: str, a: str, b: str, xa: list[float], xb: list[float], stats: Mapping[str, Any]) -> str:
    plt = svg.plt
    fig, ax = plt.subplots(figsize=(3.6, 3.4))
    ax.plot([0, 10], [0, 10], color="#999", lw=0.8, ls="--")
    ax.scatter(xa, xb, s=14, alpha=0.6, color="#1f77b4")
    ax.set_xlim(-0.3, 10.3)
    ax.set_ylim(-0.3, 10.3)
    ax.set_xlabel(a, fontsize=8)
    ax.set_ylabel(b, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.set_title(f"{metric}\nn={stats.get('n')} ρ={_fmt(stats.get('spearman'))} "
                 f"r={_fmt(stats.get('pearson'))} |Δ|={_fmt(stats.get('mean_abs_diff'))}", fontsize=8)
    return svg(fig)


def _heatmap(svg: _Svg, metrics: list[str], pairs: list[str], matrix: list[list[float | None]]) -> str:
    import numpy as np
    plt = svg.plt
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(pairs), 0.9 + 0.42 * len(metrics)))
    data = np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)
    im = ax.imshow(np.ma.masked_invalid(data), cmap="RdYlGn", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(pairs)))
    ax.set_xticklabels(pairs, fontsize=7, rotation=20, ha="right")
    ax.set_yticks(range(len(metrics)))
    ax.set_yticklabels(metrics, fontsize=7)
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            ax.text(j, i, "n/a" if v is None else f"{v:.2f}", ha="center", va="center", fontsize=7)
    ax.set_title("Spearman ρ between backends", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.05)
    return svg(fig)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def render_html(report: Report, *, max_drilldown: int = 200) -> str:
    """The whole page as a string."""
    svg = _Svg()
    summary = report.summary()
    run = report.run_summary()
    vals, metrics, backends = _light_scores(report)
    title = f"unified-eval report — {report.run_dir.name if report.run_dir else 'in-memory run'}"
    parts: list[str] = []
    add = parts.append
    add(f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<link rel='icon' href='data:,'><style>{_CSS}</style></head><body>")
    n_scores = sum(a.count for a in summary)
    n_err = sum(a.errors for a in summary)
    timings = run.get("timings", {})
    add(f"<header><h1>{_e(title)}</h1><div class='meta'>{n_scores} scores · {n_err} errors · "
        f"backends: {_e(', '.join(backends) or '—')} · metrics: {_e(', '.join(metrics) or '—')}"
        + (f" · {timings.get('seconds')} s" if timings.get("seconds") is not None else "")
        + f" · generated {datetime.now(timezone.utc).isoformat(timespec='seconds')}</div></header>")
    multi = len(backends) >= 2
    add("<nav><a href='#summary'>Summary</a><a href='#cost'>Cost</a><a href='#dist'>Distributions</a>"
        + ("<a href='#agreement'>Agreement</a><a href='#disagree'>Disagreements</a>" if multi else "")
        + "<a href='#errors'>Errors</a><a href='#samples'>Samples</a></nav><main>")

    # summary
    add("<section id='summary'><h2>Summary (0–10, higher is better)</h2><table><tr><th>metric</th>"
        "<th>backend</th><th>n</th><th>mean</th><th>median</th><th>stdev</th><th>pass rate</th><th>errors</th></tr>")
    for a in summary:
        add(f"<tr><td>{_e(a.metric)}</td><td>{_e(a.backend)}</td><td class='num'>{a.count}</td>"
            f"<td class='num'>{_fmt(a.mean)}</td><td class='num'>{_fmt(a.median)}</td><td class='num'>{_fmt(a.stdev)}</td>"
            f"<td class='num'>{'—' if a.pass_rate is None else f'{a.pass_rate:.0%}'}</td>"
            f"<td class='num{' err' if a.errors else ''}'>{a.errors}</td></tr>")
    add("</table></section>")

    # cost per backend
    per_b: dict[str, Cost] = {}
    for a in summary:
        per_b[a.backend] = per_b.get(a.backend, Cost()).add(a.cost)
    add("<section id='cost'><h2>Cost per backend</h2><table><tr><th>backend</th><th>judge calls</th>"
        "<th>embedding calls</th><th>cache hits</th><th>input tokens</th><th>output tokens</th><th>retries</th>"
        "<th>task seconds</th></tr>")
    for b, c in per_b.items():
        add(f"<tr><td>{_e(b)}</td><td class='num'>{c.calls}</td><td class='num'>{c.embedding_calls}</td>"
            f"<td class='num'>{c.cache_hits}</td><td class='num'>{c.input_tokens}</td><td class='num'>{c.output_tokens}"
            f"{'*' if c.tokens_estimated else ''}</td><td class='num'>{c.retries}</td><td class='num'>{c.seconds:.1f}</td></tr>")
    add("</table><p class='note'>* tokens estimated from text length where the server gave no usage. "
        "Cache hits cost nothing.</p></section>")

    # distributions
    add("<section id='dist'><h2>Score distributions</h2><div class='plots'>")
    for m in metrics:
        add(f"<div class='plot'>{_dist_plot(svg, m, backends, vals)}</div>")
    add("</div></section>")

    # the drill-down shows the first `max_drilldown` samples (plus the disagreeing ones):
    # read their ids, and count the rest, without loading every sample of a big run
    first_ids: list[str] = []
    n_samples = 0
    for d in report.iter_samples():
        n_samples += 1
        if len(first_ids) < max_drilldown:
            first_ids.append(d["id"])
    anchors: dict[str, str] = {}

    def anchor(sid: str) -> str:
        if sid not in anchors:
            anchors[sid] = f"s{len(anchors)}"
        return anchors[sid]

    disagreeing: list[str] = []
    if multi:
        cc = None
        try:
            cc = report.crosscheck(top_n=10) if n_scores <= 60000 else None
        except Exception as e:  # the page must still render; say why the section is short
            add(f"<section><p class='err'>cross-check failed: {_e(e)}</p></section>")
        add("<section id='agreement'><h2>Agreement between backends</h2>")
        if cc is None:
            add("<p class='note'>too many scores for a cross-check in the page; run "
                "<code>unified-eval compare</code> on a sample.</p>")
        else:
            pair_names = [f"{a} vs {b}" for a, b in combinations(sorted(backends), 2)]
            matrix = []
            for m in metrics:
                pm = {f"{p['a']} vs {p['b']}": p for p in cc["metrics"].get(m, {}).get("pairs", [])}
                matrix.append([_num(pm.get(pn, {}).get("spearman")) for pn in pair_names])
            add(f"<div class='plot heat'>{_heatmap(svg, metrics, pair_names, matrix)}</div>")
            add("<table><tr><th>metric</th><th>pair</th><th>n</th><th>pearson</th><th>spearman</th>"
                "<th>mean |Δ|</th><th>pass agreement</th><th>kappa</th><th>notes</th></tr>")
            for m in metrics:
                for p in cc["metrics"].get(m, {}).get("pairs", []):
                    add(f"<tr><td>{_e(m)}</td><td>{_e(p['a'])} vs {_e(p['b'])}</td><td class='num'>{p.get('n')}</td>"
                        f"<td class='num'>{_e(_fmt(p.get('pearson')))}</td><td class='num'>{_e(_fmt(p.get('spearman')))}</td>"
                        f"<td class='num'>{_e(_fmt(p.get('mean_abs_diff')))}</td><td class='num'>{_e(_fmt(p.get('pass_agreement')))}</td>"
                        f"<td class='num'>{_e(_fmt(p.get('cohen_kappa')))}</td><td>{_e('; '.join(p.get('notes') or []))}</td></tr>")
            add("</table><div class='plots'>")
            for m in metrics:
                for a, b in combinations(sorted(backends), 2):
                    va, vb = vals.get((m, a), {}), vals.get((m, b), {})
                    common = sorted(set(va) & set(vb))
                    if not common:
                        continue
                    st = next((p for p in cc["metrics"].get(m, {}).get("pairs", []) if p["a"] == a and p["b"] == b), {})
                    add(f"<div class='plot'>{_scatter_plot(svg, m, a, b, [va[s] for s in common], [vb[s] for s in common], st)}</div>")
            add("</div></section>")
            add("<section id='disagree'><h2>Most-disagreeing samples</h2><table><tr><th>metric</th><th>sample</th>"
                "<th>|Δ|</th><th>values</th><th>reasons</th></tr>")
            rows = []
            for m in metrics:
                for r in cc["metrics"].get(m, {}).get("disagreements", []):
                    rows.append((r["diff"], m, r))
            rows.sort(key=lambda t: -t[0])
            for diff, m, r in rows[:20]:
                sid = r["sample_id"]
                disagreeing.append(sid)
                values = "<br>".join(f"{_e(b)}: {_e(_fmt(v))}" for b, v in r["values"].items())
                reasons = "".join(f"<div><b>{_e(b)}</b>: {_e(v)}</div>" for b, v in r["reasons"].items() if v)
                add(f"<tr><td>{_e(m)}</td><td><a href='#{anchor(sid)}' data-open='{anchor(sid)}'>{_e(sid)}</a>"
                    f"<div class='note'>{_e((r.get('question') or '')[:140])}</div></td><td class='num'>{diff:.2f}</td>"
                    f"<td>{values}</td><td>{reasons}</td></tr>")
            add("</table></section>")

    # errors
    errors = report.error_list(limit=50)
    add(f"<section id='errors'><h2>Errors ({n_err})</h2>")
    if errors:
        add("<table><tr><th>sample</th><th>metric</th><th>backend</th><th>error</th></tr>")
        for e in errors:
            add(f"<tr><td>{_e(e['sample_id'])}</td><td>{_e(e['metric'])}</td><td>{_e(e['backend'])}</td>"
                f"<td class='err'>{_e(e['error'])}</td></tr>")
        add("</table>" + (f"<p class='note'>first 50 of {n_err}</p>" if n_err > 50 else ""))
    else:
        add("<p class='ok'>no errors</p>")
    add("</section>")

    # per-sample drill-down: the disagreeing samples first, then in file order
    chosen = list(dict.fromkeys(disagreeing + first_ids))
    chosen_set = set(chosen)
    samples = report.samples(chosen_set)
    by_sample: dict[str, list[dict[str, Any]]] = {sid: [] for sid in chosen}
    for d in report.iter_score_dicts():
        if d["sample_id"] in chosen_set:
            by_sample[d["sample_id"]].append(d)
    add(f"<section id='samples'><h2>Samples</h2><p class='note'>{len(chosen)} of {n_samples} samples shown. "
        "<button type='button' onclick='setAll(true)'>expand all</button> "
        "<button type='button' onclick='setAll(false)'>collapse all</button></p>")
    for sid in chosen:
        s = samples.get(sid, {})
        sc = by_sample.get(sid, [])
        marks = " ".join(f"{_e(d['metric'])}/{_e(d['backend'])}={'err' if d.get('value') is None else _fmt(d['value'], 1)}"
                         for d in sc[:6])
        add(f"<details class='sample' id='{anchor(sid)}'><summary>{_e(sid)} — {_e((s.get('user_input') or '')[:120])}"
            f" <span class='note'>{marks}</span></summary>")
        add(f"<div class='label'>question</div><div>{_e(s.get('user_input'))}</div>")
        if s.get("retrieved_contexts") is not None:
            add("<div class='label'>retrieved contexts</div><ol>"
                + "".join(f"<li class='ctx'>{_e(c)}</li>" for c in s["retrieved_contexts"]) + "</ol>")
        for label, key in (("response", "response"), ("reference", "reference")):
            if s.get(key) is not None:
                add(f"<div class='label'>{label}</div><div>{_e(s.get(key))}</div>")
        if s.get("retrieved_ids") is not None:
            add(f"<div class='label'>retrieved ids / relevant ids</div><div>{_e(', '.join(s['retrieved_ids']))} / "
                f"{_e(', '.join(s.get('relevant_ids') or []))}</div>")
        add("<div class='label'>scores</div><table><tr><th>metric</th><th>backend</th><th>value</th><th>passed</th>"
            "<th>reason / error</th><th>judges' ratings and details</th></tr>")
        for d in sc:
            det = d.get("details") or {}
            # visible, scrollable: the judges' ratings are what a reader opens a sample for
            det_html = (f"<pre class='det'>{_e(json.dumps(det, indent=1, ensure_ascii=False, default=str))}</pre>"
                        if det else "")
            reason = (f"<span class='err'>{_e(d.get('error'))}</span>" if d.get("error") else _e(d.get("reason")))
            add(f"<tr><td>{_e(d['metric'])}</td><td>{_e(d['backend'])}</td><td class='num'>{_e(_fmt(d.get('value')))}</td>"
                f"<td>{_e(_fmt(d.get('passed')))}</td><td>{reason}</td><td>{det_html}</td></tr>")
        add("</table></details>")
    add("</section></main>")
    add(f"<script>{_JS}</script></body></html>")
    return "".join(parts)
