"""The house rules of docs/architecture.md, checked on the source itself (issue 13).

Each test names what breaks the rule, so a failure says where to look.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (ROOT / "unified", ROOT / "adapters")
MAX_FUNCTION_LINES = 80


def _modules(*dirs: Path):
    for d in dirs:
        for p in sorted(d.rglob("*.py")):
            yield p, ast.parse(p.read_text(encoding="utf-8"))


def test_no_function_is_longer_than_80_lines():
    long = [f"{p.relative_to(ROOT)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for p, tree in _modules(*PACKAGES) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, "split these functions:\n" + "\n".join(long)


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            names.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            names.add(n.module.split(".")[0])
    return names


def test_the_core_imports_no_framework_not_even_lazily():
    offenders = [f"{p.relative_to(ROOT)} imports {', '.join(sorted(_imported(t) & {'ragas', 'deepeval'}))}"
                 for p, t in _modules(ROOT / "unified") if _imported(t) & {"ragas", "deepeval"}]
    assert not offenders, "\n".join(offenders)


def test_light_modules_import_without_openai():
    code = ("import sys; sys.modules['openai'] = None; "
            "import unified.adapters.native.retrieval, unified.metrics, unified.sample, unified.io")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]


def test_one_row_error_class():
    classes = [f"{p.relative_to(ROOT)}:{n.lineno} {n.name}" for p, t in _modules(*PACKAGES)
               for n in ast.walk(t) if isinstance(n, ast.ClassDef)
               and (n.name.endswith("RowError") or n.name == "PipelineError")]
    assert len(classes) == 1, classes


def test_the_repo_does_not_point_outside_itself():
    texts = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
             *sorted((ROOT / "docs").rglob("*.md")), *(p for p, _ in _modules(*PACKAGES))]
    bad = [str(p.relative_to(ROOT)) for p in texts if p.exists() and "../shared" in p.read_text(encoding="utf-8")]
    assert not bad, bad
    for doc in ("docs/architecture.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        assert (ROOT / doc).exists(), doc
