"""Regenerate docs/pytest.md's example output from a real run of the page's own example:
``python tools/docs_pytest_example.py`` (``--check``: write nothing, exit 1 when the page
differs from what the example prints now).

The page's first ```` ```python ```` block that starts with ``# tests/test_rag.py`` is written
to a scratch project and run with ``pytest tests/test_rag.py --unified-backend embedding``
(offline: the packaged MiniLM, no judge, deterministic on the CPU) at 80 columns. The lines
from pytest's first ``E`` line to the end of the plugin's summary table replace the block
between ``<!-- pytest-example:start -->`` and ``<!-- pytest-example:end -->``, so the output
a reader sees is the output the code gives (it said "3 of 4 checks failed" long after the
embedding backend's faithfulness changed). Needs the ``local`` extra.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "pytest.md"
START, END = "<!-- pytest-example:start -->\n", "<!-- pytest-example:end -->"
_EXAMPLE = re.compile(r"```python\n(# tests/test_rag\.py\n.*?)```", re.S)
COMMAND = ("tests/test_rag.py", "--unified-backend", "embedding")


def example_code(page: str) -> str:
    m = _EXAMPLE.search(page)
    if m is None:
        raise SystemExit(f"{PAGE}: no ```python block starting with '# tests/test_rag.py'")
    return m.group(1)


def run_example(code: str) -> str:
    """What ``pytest tests/test_rag.py --unified-backend embedding`` prints for ``code``,
    from its first ``E`` line to the end of the plugin's summary."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "UNIFIED_JUDGE", "UNIFIED_EMBEDDING"))}
    env["COLUMNS"] = "80"
    with tempfile.TemporaryDirectory(prefix="pytest-example-") as where:
        (Path(where) / "tests").mkdir()
        (Path(where) / "tests" / "test_rag.py").write_text(code, encoding="utf-8")
        args = ["-p", "no:deepeval", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", where]
        r = subprocess.run(
            [sys.executable, "-m", "pytest", *args, *COMMAND],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    lines = r.stdout.splitlines()
    first = next((i for i, x in enumerate(lines) if x.startswith("E ")), None)
    if first is None:
        raise SystemExit(f"the example printed no failure (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    last = next(i for i in range(first, len(lines)) if lines[i].startswith("====="))
    block = [x for x in lines[first:last] if x.strip() and not x.startswith("tests/test_rag.py:")]
    return "\n".join(block) + "\n"


def regenerate(page: str) -> str:
    """``page`` with the example's output block made anew."""
    head, _, rest = page.partition(START)
    if not rest:
        raise SystemExit(f"{PAGE}: no {START.strip()} marker")
    _, _, tail = rest.partition(END)
    return head + START + "```\n" + run_example(example_code(page)) + "```\n" + END + tail


def main(argv: list[str]) -> int:
    old = PAGE.read_text(encoding="utf-8")
    new = regenerate(old)
    if new == old:
        print("docs/pytest.md's example output is current")
        return 0
    if "--check" in argv:
        print("docs/pytest.md's example output is stale: run python tools/docs_pytest_example.py")
        return 1
    PAGE.write_text(new, encoding="utf-8")
    print("rewrote docs/pytest.md's example output")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
