"""Silence the frameworks before they are imported: no telemetry, no stray files.

The frameworks read their switches once, at import or first use, so these must be set
before ``import ragas`` / ``import deepeval`` / ``import opik`` / ``import mlflow``:

- ``RAGAS_DO_NOT_TRACK=true`` — ragas caches it with ``lru_cache`` on first use; the
  value must be the string "true".
- ``DEEPEVAL_TELEMETRY_OPT_OUT=1`` — no PostHog/OpenTelemetry (offline, it also adds
  seconds at exit).
- ``DEEPEVAL_DISABLE_DOTENV=1`` — otherwise deepeval loads ``.env*`` from the cwd into
  ``os.environ`` (it could pick up unrelated keys).
- ``DEEPEVAL_DISABLE_LEGACY_KEYFILE=1`` and ``DEEPEVAL_FILE_SYSTEM=READ_ONLY`` — otherwise
  deepeval creates a ``.deepeval/`` folder in the user's working directory.
- ``OPIK_ANALYTICS_ENABLE=false``, ``OPIK_SENTRY_ENABLE=false`` — opik's usage events
  and error reports (both to comet.com); ``OPIK_TRACK_DISABLE=true`` — no trace or span
  is sent to an Opik server (our metrics are built with ``track=False`` as well).
- ``LITELLM_LOCAL_MODEL_COST_MAP=True`` — litellm, which opik imports, otherwise fetches
  its price list from GitHub at import (about 10 s of retries offline).
- ``MLFLOW_DISABLE_TELEMETRY=true`` — MLflow's usage telemetry;
  ``MLFLOW_MODEL_CATALOG_URI=""`` — MLflow's judge adapter otherwise downloads its model
  catalog from GitHub on the first judge call (empty disables the fetch).

``arize-phoenix-evals`` reads no switch and sends nothing (its spans go to the caller's
OpenTelemetry provider, a no-op unless the caller set one).

ragas also writes ``uuid.json`` under ``appdirs.user_data_dir("ragas")``
(``$XDG_DATA_HOME/ragas`` on Linux) even with tracking off: ``ragas._analytics.get_userid``
computes the folder through the name ``user_data_dir`` bound in that module. We rebind
that one name (and clear ``get_userid``'s cache), so the file lands in the run folder or a
private temp folder while ``XDG_DATA_HOME`` stays untouched for the rest of the process.

arize-phoenix-evals 3.9 and trulens-feedback 2.16, used as their backends use them (our own
LLM provider, no session, no tracer), need no switch: they send nothing and write nothing
(checked by tests/test_phoenix_backend.py and tests/test_trulens_backend.py, which record
every socket connect and DNS lookup while scoring). What would reach the network —
TruLens's ``nltk.download`` in groundedness — is avoided by configuration in
``unified/adapters/trulens.py``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

QUIET_ENV: dict[str, str] = {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
    "OPIK_ANALYTICS_ENABLE": "false",
    "OPIK_SENTRY_ENABLE": "false",
    "OPIK_TRACK_DISABLE": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_MODEL_CATALOG_URI": "",
}

_ragas_dir: Path | None = None


def quiet_frameworks(run_dir: Path | str | None = None) -> Path:
    """Set the frameworks' telemetry/file switches and choose where ragas's uuid file goes.

    ``run_dir``: the run's output folder; ragas's file goes to ``run_dir/.ragas``. Without
    it a private temp folder is used (created once per process). Safe to call many times;
    a later call with a ``run_dir`` moves the file there. Returns the folder chosen.
    """
    global _ragas_dir
    # overwrite, not setdefault: a user's RAGAS_DO_NOT_TRACK=false or a missing opt-out
    # would make the frameworks phone home or write into the cwd
    os.environ.update(QUIET_ENV)
    if run_dir is not None:
        _ragas_dir = Path(run_dir) / ".ragas"
    elif _ragas_dir is None:
        # a folder that does not exist yet: get_userid() creates it without exist_ok
        tmp = tempfile.mkdtemp(prefix="unified-ragas-")
        # removed at exit: every import of the ragas/deepeval backend used to leave one in /tmp
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        _ragas_dir = Path(tmp) / "ragas"
    if "ragas._analytics" in sys.modules:
        redirect_ragas_user_dir()
    return _ragas_dir


def ragas_user_dir() -> Path:
    """Where ragas's ``uuid.json`` goes (set by ``quiet_frameworks``)."""
    return _ragas_dir if _ragas_dir is not None else quiet_frameworks()


def redirect_ragas_user_dir() -> None:
    """Point the already-imported ``ragas._analytics`` at ``ragas_user_dir()``.

    ``get_userid`` calls ``os.makedirs(path)`` (no ``exist_ok``) and then writes
    ``path/uuid.json``; we return a folder that does not need to exist yet.
    """
    import ragas._analytics as analytics

    target = str(ragas_user_dir())

    def user_data_dir(appname: str | None = None, *args: object, **kwargs: object) -> str:
        return target

    analytics.user_data_dir = user_data_dir
    # both are lru_cached: a value computed before we got here must not stick
    analytics.get_userid.cache_clear()
    analytics.do_not_track.cache_clear()
