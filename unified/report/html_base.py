"""What every section of the HTML page shares: escaping, number and verdict formats, the
sample anchors, the page's CSS and its few lines of script."""

from __future__ import annotations

import html
from typing import Any, Iterable
from urllib.parse import quote

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1f3a5f;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}
header .meta{opacity:.85;font-size:13px}nav{padding:8px 28px;background:#e8edf4}nav a{margin-right:14px;color:#1f3a5f}
main{padding:10px 28px 40px}section{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:18px;margin:4px 0 10px}h3{font-size:15px;margin:12px 0 4px}table{border-collapse:collapse;margin:6px 0}
th,td{border-bottom:1px solid #e3e7ee;padding:4px 9px;text-align:left;vertical-align:top}th{background:#f0f3f8}
td.num{text-align:right;font-variant-numeric:tabular-nums}.err{color:#b42318}.ok{color:#067647}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plot{border:1px solid #e3e7ee;border-radius:6px;padding:4px}
.plot svg{width:380px;height:auto}.plot.heat svg{width:auto;max-width:100%;height:auto}
details{margin:4px 0;border:1px solid #e3e7ee;border-radius:6px;padding:4px 10px;background:#fff}
details[open]{background:#fbfcfe}summary{cursor:pointer;font-weight:600}
.label{color:#5a6474;font-size:12px;text-transform:uppercase;letter-spacing:.04em;margin-top:8px}
.ctx{margin:2px 0 2px 18px}.note{color:#5a6474;font-size:13px}.odd{background:#fff3cd}
.oddmark{background:#b54708;color:#fff;border-radius:3px;padding:0 4px;font-size:11px;font-weight:600;margin-left:4px;white-space:nowrap}
table.det{font-size:12px;margin:2px 0 6px}table.det th,table.det td{padding:1px 6px}.cap{font-size:12px;color:#5a6474}
.docid{font-family:ui-monospace,Menlo,monospace;font-size:12px;background:#eef1f6;border-radius:3px;padding:0 4px}
.rel{color:#067647;font-size:12px}.nrel{color:#b42318;font-size:12px}code{font-size:12px}
"""

# The sample drill-downs are <details class='sample' data-sid='ID'>: a link #ID (any
# characters, percent-encoded or not) or #sample-… opens and scrolls to its sample.
JS = """
function findSample(key){var ds=document.querySelectorAll('details.sample');
for(var i=0;i<ds.length;i++){if(ds[i].getAttribute('data-sid')===key||ds[i].id===key)return ds[i];}return null;}
function openSample(key){var d=findSample(key);if(!d)return false;d.open=true;d.scrollIntoView();return true;}
function openHash(){var h=location.hash.slice(1);if(!h)return;var keys=[];
try{keys.push(decodeURIComponent(h));}catch(e){}keys.push(h);
for(var i=0;i<keys.length;i++){if(openSample(keys[i]))return;}
if(document.getElementById(h))return;var n=document.getElementById('missing-sample');
if(n){n.textContent='sample '+keys[0]+' is not among the samples shown on this page';n.hidden=false;}}
document.addEventListener('click',function(e){var a=e.target.closest('a[data-open]');if(a){openSample(a.getAttribute('data-open'));}});
window.addEventListener('hashchange',openHash);
function setAll(open){document.querySelectorAll('details.sample').forEach(function(d){d.open=open;});}
openHash();
"""


def e(x: Any) -> str:
    """HTML-escaped text (None -> empty)."""
    return html.escape("" if x is None else str(x))


def num(v: Any, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return mark(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return e(v)


def mark(passed: bool | None) -> str:
    """✓ / ✗ for a verdict, — for none."""
    if passed is None:
        return "—"
    return "<span class='ok'>✓</span>" if passed else "<span class='err'>✗</span>"


def pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0%}"


def anchor(sample_id: str) -> str:
    """The element id of a sample's drill-down: ``sample-`` + the percent-encoded id, so
    it holds no whitespace and never collides with a section id."""
    return "sample-" + quote(sample_id, safe="-_.~")


def sample_link(sample_id: str, shown: bool = True) -> str:
    """A link that opens the sample's drill-down (plain text when it is not on the page)."""
    if not shown:
        return e(sample_id)
    a = anchor(sample_id)
    return f"<a href='#{e(a)}' data-open='{e(a)}'>{e(sample_id)}</a>"


def table(head: Iterable[str], rows: Iterable[Iterable[Any]], cls: str = "", num_cols: Iterable[int] = ()) -> str:
    """A table of already-escaped cells; ``num_cols`` are right-aligned, and a cell given
    as ``(css_class, html)`` gets that class."""
    nums = set(num_cols)
    out = [f"<table{f' class={cls!r}' if cls else ''}><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(_td(c, i in nums) for i, c in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _td(c: Any, numeric: bool) -> str:
    classes = ["num"] if numeric else []
    if isinstance(c, tuple):
        classes.append(c[0])
        c = c[1]
    return f"<td class='{' '.join(classes)}'>{c}</td>" if classes else f"<td>{c}</td>"


def usd(v: float | None) -> str:
    if v is None:
        return "—"
    return f"${v:,.4f}" if v < 1 else f"${v:,.2f}"
