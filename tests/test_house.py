"""The house rules of docs/architecture.md, checked on the source itself (issue 13).

Each test names what breaks the rule, so a failure says where to look.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (ROOT / "unified",)
MAX_FUNCTION_LINES = 80


def _modules(*dirs: Path):
    for d in dirs:
        for p in sorted(d.rglob("*.py")):
            yield p, ast.parse(p.read_text(encoding="utf-8"))


def test_no_function_is_longer_than_80_lines():
    long = [
        f"{p.relative_to(ROOT)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for p, tree in _modules(*PACKAGES)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, "split these functions:\n" + "\n".join(long)


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            names.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            names.add(n.module.split(".")[0])
    return names


def _frameworks() -> set[str]:
    """The top-level package of every registered backend's framework, and the platforms'."""
    from unified.adapters import backend_info, backend_names

    packages = {backend_info(n).package for n in backend_names()} - {None}
    return {p.split(".")[0] for p in packages if p} | {"mlflow", "ray"}


FRAMEWORKS = _frameworks()


def test_the_core_imports_no_framework_not_even_lazily():
    """Only where we meet a tool may import one: ``unified/integrations/`` (our metrics in
    their runners), ``unified/platforms/`` (MLflow, Ray) and ``unified/adapters/`` (the backends)."""
    core = [
        (p, t)
        for p, t in _modules(ROOT / "unified")
        if not {"integrations", "platforms", "adapters"} & set(p.relative_to(ROOT).parts)
    ]
    offenders = [
        f"{p.relative_to(ROOT)} imports {', '.join(sorted(_imported(t) & FRAMEWORKS))}"
        for p, t in core
        if _imported(t) & FRAMEWORKS
    ]
    assert not offenders, "\n".join(offenders)


def test_light_modules_import_without_openai():
    code = (
        "import sys; sys.modules['openai'] = None; "
        "import unified.adapters.native.retrieval, unified.metrics, unified.sample, unified.data.io"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]


def _module_name(path: Path) -> str:
    """``unified/adapters/x.py`` is ``unified.adapters.x``; a package is its ``__init__``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.AST):
    """Every import statement that can run: module level and inside functions (lazy imports
    count: a cycle through a function body is still a cycle), but not ``if TYPE_CHECKING:``
    blocks, which never execute."""
    skip = {
        id(s)
        for n in ast.walk(tree)
        if isinstance(n, ast.If) and getattr(n.test, "id", getattr(n.test, "attr", None)) == "TYPE_CHECKING"
        for b in n.body
        for s in ast.walk(b)
    }
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of unified/ and unified/adapters/ it imports (``from pkg import mod``
    is an edge to ``pkg.mod``; ``from pkg import name`` to ``pkg``)."""
    trees = {_module_name(p): (p, t) for p, t in _modules(*PACKAGES)}

    def owner(name: str) -> str | None:
        while name and name not in trees:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in trees}
    for mod, (path, tree) in trees.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for n in _runtime_imports(tree):
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            else:
                base = n.module or ""
                if n.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                    base = ".".join(up + ([n.module] if n.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in trees else base for a in n.names]
            graph[mod].update(t for t in map(owner, targets) if t and t != mod)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycles_lazy_imports_included():
    graph = import_graph()
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(
        " ; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in cycles
    )


def test_the_cycle_check_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: The layers of the house, top to bottom (docs/architecture.md, "What each module may
#: import"): a module imports only from its own layer or below. A module belongs to the
#: layer of the longest name below that it is or lies under.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("unified.cli", "unified.integrations", "unified.testing"),  # where people and other tools call us
    ("unified.api",),  # evaluate(): the run, its end, the places it goes
    ("unified.platforms",),  # where a run can go: MLflow, Ray
    ("unified.report",),  # the Report, the end of a run, run-to-run diffs
    ("unified.run",),  # the run path: scoring into the folder
    ("unified.analysis",),  # reading scores: statistics, agreement, gates
    ("unified.adapters",),  # the backends
    ("unified.judge", "unified.data"),  # judge calls; data in and out
    (  # the shared vocabulary
        "unified.sample",
        "unified.metrics",
        "unified.scores",
        "unified.bounds",
        "unified.redact",
        "unified.text",
        "unified.console",
    ),
)
#: ``unified/__init__.py``, the lazy public face, may point anywhere (it names, loads on use)
ANYWHERE = {"unified"}
#: Arrows that point up anyway, each with its reason; as few as possible. A lookup by name
#: (an import path as a string, like ``run.executor.NAMED_EXECUTORS``) is no import.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int | None:
    """The index in ``LAYERS`` of ``module`` (0 is the top), None for ``ANYWHERE``."""
    if module in ANYWHERE:
        return None
    best = max(
        (
            (i, name)
            for i, names in enumerate(LAYERS)
            for name in names
            if module == name or module.startswith(name + ".")
        ),
        key=lambda hit: len(hit[1]),
        default=None,
    )
    if best is None:
        raise LookupError(f"{module} is in no layer: add its folder to LAYERS in tests/test_house.py")
    return best[0]


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every arrow from a module to one in a higher layer, but the ``EXCEPTIONS``."""
    up = []
    for m, targets in graph.items():
        for t in targets:
            lm, lt = layer_of(m), layer_of(t)
            if lm is not None and lt is not None and lt < lm and (m, t) not in EXCEPTIONS:
                up.append(f"{m} (layer {lm + 1}) -> {t} (layer {lt + 1})")
    return sorted(up)


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between folders (``unified.run``, ``unified.report``, ...; a module
    of the package root is its own node), the ``EXCEPTIONS`` left out."""

    def folder(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 and (ROOT / "unified" / parts[1]).is_dir() else m

    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        node = out.setdefault(folder(m), set())
        node.update(folder(t) for t in targets if (m, t) not in EXCEPTIONS and folder(t) != folder(m))
    return out


def test_every_module_has_a_layer():
    graph = import_graph()
    for m in graph:
        layer_of(m)  # raises naming the module


def test_no_arrow_points_up():
    """A folder imports only from its own layer or below, lazy imports included."""
    up = upward(import_graph())
    assert not up, "imports that point up (move the code to where it belongs):\n" + "\n".join(up)


def test_no_folder_level_cycles():
    graph = folder_graph(import_graph())
    cycles = _cycles(graph)
    assert not cycles, "folder-level import cycles:\n" + "\n".join(
        " ; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in cycles
    )


def test_each_exception_is_still_needed():
    """An exception whose arrow is gone is removed from the list, not kept 'just in case'."""
    graph = import_graph()
    stale = [f"{m} -> {t}" for m, t in EXCEPTIONS if t not in graph.get(m, set())]
    assert not stale, "no longer imported; remove from EXCEPTIONS: " + ", ".join(stale)


def test_the_layer_checks_can_fail():
    assert upward({"unified.run.runner": {"unified.report.core", "unified.analysis.jury"}}) == [
        "unified.run.runner (layer 5) -> unified.report.core (layer 4)"
    ]
    assert upward({"unified.api": {"unified.cli.app"}, "unified.judge.cache": {"unified.data.files"}}) == [
        "unified.api (layer 2) -> unified.cli.app (layer 1)"
    ]
    loop = folder_graph({"unified.run.a": {"unified.analysis.b"}, "unified.analysis.b": {"unified.run.c"}})
    assert _cycles(loop) == [["unified.analysis", "unified.run"]]


def test_few_modules_in_the_package_root():
    """The root holds the public API and the vocabulary; jobs live in folders named for them."""
    root = sorted(p.name for p in (ROOT / "unified").glob("*.py"))
    assert len(root) <= 12, root


def test_one_row_error_class():
    classes = [
        f"{p.relative_to(ROOT)}:{n.lineno} {n.name}"
        for p, t in _modules(*PACKAGES)
        for n in ast.walk(t)
        if isinstance(n, ast.ClassDef) and (n.name.endswith("RowError") or n.name == "PipelineError")
    ]
    assert len(classes) == 1, classes


def test_the_repo_does_not_point_outside_itself():
    texts = [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *(p for p, _ in _modules(*PACKAGES)),
    ]
    bad = [str(p.relative_to(ROOT)) for p in texts if p.exists() and "../shared" in p.read_text(encoding="utf-8")]
    assert not bad, bad
    for doc in ("docs/architecture.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        assert (ROOT / doc).exists(), doc
