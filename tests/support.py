"""Helpers several test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


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
