"""Shared fixtures. Keep small: every test module imports from here.

``judge_server``: a fresh loopback OpenAI-compatible server (tests/judge_server.py) per
test; build a custom one with ``JudgeServer(latency=..., fault_rate=...)`` as a context
manager. It is a plumbing and fault fixture, never evidence of judgment quality.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# frameworks must be quiet and offline before anything imports them
for _k, _v in {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OPIK_ANALYTICS_ENABLE": "false",
    "OPIK_SENTRY_ENABLE": "false",
    "OPIK_TRACK_DISABLE": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_MODEL_CATALOG_URI": "",
}.items():
    os.environ.setdefault(_k, _v)

# the isolated backends' environments are the machine's (``make install-test`` builds them into
# the user cache; a test that finds none builds it from uv's cache): read before the next line
if not os.environ.get("UNIFIED_ENVS_DIR"):
    import platformdirs

    os.environ["UNIFIED_ENVS_DIR"] = str(platformdirs.user_cache_path("unified-rag-eval", appauthor=False) / "envs")

# the shared judge cache lives in the user cache folder: a session of its own (module-scoped
# fixtures run before any per-test folder is set) and never the machine's ~/.cache
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="unified-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

sys.path.insert(0, str(Path(__file__).parent))
from judge_server import JudgeServer  # noqa: E402


@pytest.fixture
def judge_server():
    """A started loopback judge server (no latency, no faults); stopped after the test."""
    with JudgeServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _private_judge_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own user cache folder: the shared judge cache must neither leak
    answers between tests (call counts would lie) nor touch the machine's ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    # the pytest plugin's default judge cache is a file in the checkout, shared by every test
    # of the session and kept between runs: this suite's tests use the per-test folder above
    plugin = sys.modules.get("unified.integrations.pytest_plugin")
    if plugin is not None:
        monkeypatch.setattr(plugin, "session_cache", None)
