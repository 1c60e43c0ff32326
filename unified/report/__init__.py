"""Report: a run's Scores as tables, JSONL/Parquet, summary, cross-check, the frameworks'
own result shapes and a self-contained HTML page.

Modules: ``model`` (the one pass over the score lines; last line per task wins),
``core`` (the ``Report`` object), ``run_end`` (the end of a run: summary.json,
report.html, index.json, the end lines), ``diff`` (run-to-run differences of two folders),
``frameworks`` (``to_ragas``/``to_deepeval`` shapes),
``analysis`` (agreement, disagreements, the odd one out), ``view`` (what the page shows),
``html``/``html_samples``/``details``/``plots``/``html_base`` (the page, one function per
section), ``notebook`` (``repr`` and Jupyter's ``_repr_html_``).
"""

from unified.report.core import Report
from unified.scores import RunningAggregates


def render_html(report: Report, *, max_drilldown: int = 200) -> str:
    """The whole HTML page as a string (``unified.report.html.render_html``)."""
    from unified.report.html import render_html as _render

    return _render(report, max_drilldown=max_drilldown)


__all__ = ["Report", "RunningAggregates", "render_html"]
