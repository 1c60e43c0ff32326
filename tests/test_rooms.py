"""A backend is one room (issue 39): ``unified/adapters/<name>/`` declares its facts and
holds its translation; everything the core, the CLI and the docs say about a backend is
derived from those facts. These checks run over every room the registry finds, so a new
room is held to them without an edit here."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from unified.adapters import available, backend_info, builtin_backends, get_backend_class
from unified.adapters.catalog import backend_table_markdown
from unified.adapters.registry import quiet_env
from unified.metrics import get_metric, parse_metric

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = ROOT / "unified" / "adapters"
ROOMS = builtin_backends()
FRAMEWORK_ROOMS = [b for b in ROOMS if backend_info(b).table]


def test_every_folder_with_facts_is_a_room_and_every_room_is_a_folder():
    folders = {p.parent.name for p in ADAPTERS.glob("*/__init__.py")}
    assert set(ROOMS) <= folders
    assert {backend_info(b).name for b in ROOMS} == set(ROOMS)
    for name in ROOMS:  # the room's folder is its name; its class is in its backend module
        assert backend_info(name).backend.startswith(f"unified.adapters.{name}.backend:")


@pytest.mark.parametrize("name", ROOMS)
def test_a_rooms_facts_import_no_framework(name):
    """``__init__.py`` is read by ``unified-eval metrics`` and ``--dry-run``: it may import
    nothing but the project (its ``backend.py`` imports the framework)."""
    tree = ast.parse((ADAPTERS / name / "__init__.py").read_text(encoding="utf-8"))
    tops = {
        (a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)
        for a in (n.names if isinstance(n, ast.Import) else [n])
    }
    assert tops <= {"__future__", "dataclasses", "typing", "re", "unified"}, tops


def test_importing_unified_imports_no_framework_and_knows_every_rooms_names():
    code = (
        "import sys, unified\n"
        "from unified.metrics import parse_metric\n"
        "print(parse_metric('FaithfulnessMetric').name, parse_metric('RetrievalGroundedness').name,"
        " [m for m in ('ragas', 'deepeval', 'opik', 'mlflow', 'phoenix', 'trulens', 'torch') if m in sys.modules])"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["faithfulness", "faithfulness", "[]"]


@pytest.mark.parametrize("name", FRAMEWORK_ROOMS)
def test_every_row_is_a_canonical_metric_named_by_its_framework(name):
    for canonical, row in backend_info(name).table.items():
        assert get_metric(canonical).name == canonical
        if row.name_users_write and row.name_users_write.lower() not in {
            m.lower() for m in (canonical, "hallucination")
        }:
            assert parse_metric(row.name_users_write).canonical == canonical, row


@pytest.mark.parametrize("name", FRAMEWORK_ROOMS)
def test_the_class_serves_exactly_its_table_and_each_row_exists_in_the_framework(name):
    info = backend_info(name)
    if not available(info):
        pytest.skip(f"{info.package} not installed")
    cls = get_backend_class(name)
    assert set(cls.metrics) == set(info.table) and cls.name == name
    assert cls.FACTS is info


@pytest.mark.parametrize("name", [b for b in ROOMS if backend_info(b).doc])
def test_every_rooms_page_exists_and_names_each_of_its_metrics(name):
    info = backend_info(name)
    page = (ROOT / "docs" / "backends" / str(info.doc)).read_text(encoding="utf-8")
    for canonical, row in info.table.items():
        assert f"`{canonical}`" in page and row.cls.split(".")[-1] in page, (name, canonical)


def test_every_framework_room_has_a_page():
    assert [b for b in FRAMEWORK_ROOMS if not backend_info(b).doc] == []


def test_the_backends_page_is_the_generated_table():
    assert backend_table_markdown() in (ROOT / "docs" / "backends.md").read_text(encoding="utf-8")


def test_the_docs_menu_lists_every_room_with_a_page():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        hook = importlib.import_module("mkdocs_backends")
    finally:
        sys.path.remove(str(ROOT / "tools"))
    assert [list(p.values())[0] for p in hook.backend_pages()] == [
        f"backends/{backend_info(b).doc}" for b in ROOMS if backend_info(b).doc
    ]


def test_quiet_switches_are_the_union_of_the_rooms():
    union: dict[str, str] = {}
    for b in ROOMS:
        union.update(backend_info(b).quiet_env)
    assert quiet_env() == union and "RAGAS_DO_NOT_TRACK" in union and "DEEPEVAL_TELEMETRY_OPT_OUT" in union


def test_the_version_is_one_version():
    import tomllib

    import unified

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = changelog.split("## Unreleased (", 1)[1].split(")", 1)[0]
    assert unified.__version__ == declared
    assert declared.startswith(unreleased + ".dev") or declared == unreleased
