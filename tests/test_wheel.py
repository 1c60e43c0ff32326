"""The package you install is the one you test (issue 45, item 4).

The wheel is built from this checkout and must hold every file of ``unified/`` that git
tracks (a hand-written package list once left ``unified/data/traces/`` out). Then it is
installed — not editable, core dependencies only, from the tested pins — into a fresh
virtual environment, where every module imports, or fails only for want of a package an
optional extra brings; the console script and the pytest plugin's entry point resolve;
and the command line reads samples and traces and scores a judge-free run.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIST = "unified-rag-eval"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out)]
    r = subprocess.run([*build, str(ROOT)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (found,) = out.glob("unified_rag_eval-*.whl")
    return found


@pytest.fixture(scope="module")
def fresh(wheel, tmp_path_factory) -> Path:
    """A new venv with the wheel and the core dependencies at their tested pins."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt")]
    r = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    return venv / "bin"


def test_the_wheel_holds_every_tracked_file_of_the_package(wheel):
    tracked = subprocess.run(["git", "ls-files", "unified"], cwd=ROOT, capture_output=True, text=True, check=True)
    wanted = {p for p in tracked.stdout.splitlines() if not p.endswith(".pyc")}
    assert wanted, "git lists no file under unified/"
    inside = set(zipfile.ZipFile(wheel).namelist())
    assert not wanted - inside, sorted(wanted - inside)


def _extra_packages() -> dict[str, str]:
    """Top-level import name -> the extra that brings it (read from this install's metadata)."""
    by_dist: dict[str, set[str]] = {}
    for top, dists in md.packages_distributions().items():
        for d in dists:
            by_dist.setdefault(_norm(d), set()).add(top)
    extras: dict[str, str] = {}
    for req in md.requires(DIST) or []:
        marker = re.search(r'extra\s*==\s*"([^"]+)"', req)
        name = re.match(r"[A-Za-z0-9_.-]+", req)
        if marker and name:
            for top in by_dist.get(_norm(name.group(0)), ()):
                extras.setdefault(top, marker.group(1))
    return extras


def _norm(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


SMOKE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    import unified
    failed = {}
    for m in pkgutil.walk_packages(unified.__path__, "unified."):
        try:
            importlib.import_module(m.name)
        except ModuleNotFoundError as e:
            failed[m.name] = (e.name or "").split(".")[0]
        except BaseException as e:
            failed[m.name] = f"{type(e).__name__}: {e}"
    print(json.dumps({"file": unified.__file__, "version": unified.__version__, "failed": failed}))
    """
)


def test_every_module_imports_or_names_the_extra_it_needs(fresh):
    r = subprocess.run([str(fresh / "python"), "-c", SMOKE], capture_output=True, text=True, timeout=600, cwd="/")
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert "site-packages" in got["file"] and str(ROOT) not in got["file"], got["file"]  # the wheel, not this tree
    assert got["version"] == md.version(DIST)
    extras = _extra_packages()
    # the plugin is loaded by pytest, which brings pytest along; every other module that
    # cannot import must be missing only a package one of our extras installs
    allowed = {"unified.integrations.pytest_plugin": "pytest"}
    wrong = {m: why for m, why in got["failed"].items() if why not in extras and allowed.get(m) != why}
    assert not wrong, wrong
    assert any(m.startswith("unified.data.traces") for m in _modules(fresh)), "the trace readers are installed"


def _modules(bin_dir: Path) -> list[str]:
    code = "import pkgutil, unified; print('\\n'.join(m.name for m in pkgutil.walk_packages(unified.__path__, 'unified.')))"
    return subprocess.run([str(bin_dir / "python"), "-c", code], capture_output=True, text=True, cwd="/").stdout.split()


def test_the_entry_points_resolve(fresh):
    code = textwrap.dedent(
        """
        import importlib.metadata as md, importlib.util, json
        eps = {(e.group, e.name): e.value for e in md.distribution("unified-rag-eval").entry_points}
        plugin = eps[("pytest11", "unified")]
        print(json.dumps({"eps": [list(k) for k in eps], "plugin_found": importlib.util.find_spec(plugin) is not None}))
        """
    )
    r = subprocess.run([str(fresh / "python"), "-c", code], capture_output=True, text=True, cwd="/", timeout=120)
    got = json.loads(r.stdout)
    assert ["console_scripts", "unified-eval"] in got["eps"] and got["plugin_found"], got
    help_ = subprocess.run([str(fresh / "unified-eval"), "--help"], capture_output=True, text=True, timeout=120)
    assert help_.returncode == 0 and "run" in help_.stdout, help_.stderr[-2000:]


def test_the_installed_command_reads_traces_and_scores_a_judge_free_run(fresh, tmp_path):
    cli = str(fresh / "unified-eval")
    traces = ROOT / "tests" / "fixtures" / "traces"
    want = json.loads((traces / "expected.json").read_text())["files"]["sdk/llamaindex-otlp.json"]["samples"]
    checked = subprocess.run(
        [cli, "validate", str(traces / "sdk" / "llamaindex-otlp.json")], capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 0 and f"{len(want)} ok" in checked.stdout, checked.stdout[-2000:] + checked.stderr
    data = ROOT / "examples" / "data" / "rag_examples.jsonl"
    run = [cli, "run", str(data), "--backend", "native", "--metrics", "precision@3,mrr", "--out", str(tmp_path / "r")]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(x) for x in (tmp_path / "r" / "scores.jsonl").read_text().splitlines()]
    assert lines and all(x["value"] is not None and 0 <= x["value"] <= 10 for x in lines), lines[:3]
