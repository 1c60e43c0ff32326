"""Helpers several test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path


def cli_env() -> dict[str, str]:
    """The environment for a `unified-eval` subprocess: no judge from this machine's
    environment, a dummy key (the loopback judge ignores it)."""
    env = dict(os.environ)
    for k in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL", "UNIFIED_EMBEDDING"):
        env.pop(k, None)
    env["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
    return env


def import_in_clean_env(module: str, names: list[str], extra: str = "") -> dict:
    """Import ``module`` in a fresh interpreter whose environment has none of ``names``
    (and contrary values where a user might have set them: conftest.py sets the quiet
    switches for this process, so checking os.environ here could never fail); returns
    the values of ``names`` after the import."""
    env = {k: v for k, v in os.environ.items() if k not in names}
    env.update({"RAGAS_DO_NOT_TRACK": "false", "DEEPEVAL_TELEMETRY_OPT_OUT": "0"})
    code = f"import json, os, {module}\n{extra}\nprint(json.dumps({{k: os.environ.get(k) for k in {sorted(names)!r}}}))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def as_read(d: dict) -> dict:
    """A parsed JSONL line as the project's readers see it: a score line (it has a metric,
    a backend and a sample id) with the fields it leaves at their default filled in
    (``unified.scores.full_line``); any other line as it is."""
    from unified.scores import full_line

    return full_line(d) if all(k in d for k in ("metric", "backend", "sample_id")) else d


def load_benchmark(name: str):
    """The module ``benchmarks/<name>.py`` (benchmarks are scripts, not a package; their
    folder goes on ``sys.path`` so they can import each other)."""
    import importlib.util
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "benchmarks"
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hostile_retrieval_rows(path: Path, n: int, graded: bool = False) -> Path:
    """``n`` retrieval rows written to ``path`` (JSONL): odd and NFD ids, ids that look like
    row errors, missing fields, unicode, rows that are not JSON, repeated rows and repeated
    ids with other content; with ``graded``, graded relevance with tiny and negative grades."""
    lines = []
    for i in range(n):
        row: dict = {
            "id": f"s{i}",
            "user_input": f"Ü {i} 東京 🚀",
            "retrieved_ids": [f"d{(i * 7 + j) % 13}" for j in range(i % 9)],
        }
        if i % 5:
            row["relevant_ids"] = [f"d{i % 13}", f"d{(i + 3) % 13}"]
        elif graded and i % 10 == 0:
            row["graded_relevance"] = {f"d{i % 13}": 0.00001, "d1": 50.0, "z": -2}
        if i % 17 == 0:
            row["id"] = unicodedata.normalize("NFD", f"café {i}")
        if i % 23 == 0:
            row["id"] = f"row:{i}"
        lines.append(json.dumps(row, ensure_ascii=False))
        if i % 41 == 0:
            lines.append("{not json")
        if i % 53 == 0:
            lines.append(lines[-1])  # a repeated row: '#2'
        if i % 61 == 0:
            lines.append(json.dumps({**row, "retrieved_ids": ["other"]}))  # a repeated id, other content
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
