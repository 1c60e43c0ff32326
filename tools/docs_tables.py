"""Regenerate the docs' tables that are made from the code: ``python tools/docs_tables.py``.

Three tables are generated (``unified.adapters.catalog``), and tests fail when a page
differs from what the code says:

- the metric table (✓ per backend, needed fields, pass bounds), between the markers
  ``<!-- metric-table:start -->`` / ``<!-- metric-table:end -->`` of ``docs/metrics.md``
  and ``docs/readme-snippets/native.md``;
- the metric-name table (each framework's names for each metric), the table headed
  ``| canonical |`` in ``docs/metric_names.md`` and ``docs/metrics.md``;
- the backends table, headed ``| backend | install |`` in ``docs/backends.md`` (its
  hand-written ``jury`` row is kept).

``--check`` writes nothing and exits 1 when a page is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from unified.adapters.catalog import backend_table_markdown, metric_name_table, metric_table_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"
START, END = "<!-- metric-table:start -->\n", "<!-- metric-table:end -->"
_NAME_TABLE = re.compile(r"\| canonical \|.*?\n(?:\|.*\n)+")
_BACKEND_TABLE = re.compile(r"\| backend \| install \|.*?\n(?:\|(?! `jury`).*\n)+")


def _between_markers(text: str, table: str) -> str:
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return head + START + table + END + tail if rest else text


def regenerate(text: str, page: str) -> str:
    """``text`` of ``page`` with every generated table it holds made anew."""
    text = _between_markers(text, metric_table_markdown())
    if page in ("metric_names.md", "metrics.md"):
        text = _NAME_TABLE.sub(lambda _: metric_name_table(), text, count=1)
    if page == "backends.md":
        text = _BACKEND_TABLE.sub(lambda _: backend_table_markdown(), text, count=1)
    return text


def main(argv: list[str]) -> int:
    stale = []
    for path in (
        DOCS / "metrics.md",
        DOCS / "readme-snippets" / "native.md",
        DOCS / "metric_names.md",
        DOCS / "backends.md",
    ):
        old = path.read_text(encoding="utf-8")
        new = regenerate(old, path.name)
        if new != old:
            stale.append(str(path.relative_to(DOCS.parent)))
            if "--check" not in argv:
                path.write_text(new, encoding="utf-8")
    verb = "stale" if "--check" in argv else "regenerated"
    print(f"{verb}: {', '.join(stale)}" if stale else "every generated table is current")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
