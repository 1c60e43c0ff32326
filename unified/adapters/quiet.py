"""Silence the frameworks before they are imported: no telemetry, no stray files.

The frameworks read their switches once, at import or first use, so they must be set
before ``import ragas`` / ``import deepeval`` / ``import opik`` / ...: every room declares
its own (``BackendFacts.quiet_env``, with the reason beside each switch) and
``quiet_frameworks`` sets all of them at once — a framework may import another (opik
imports litellm), and a switch set late is a switch not read. They overwrite, never
``setdefault``: a user's ``RAGAS_DO_NOT_TRACK=false`` or a missing opt-out would make a
framework phone home or write into the working directory.

Some frameworks write files even with tracking off (ragas's ``uuid.json``). Those go to
``stray_dir(framework)``: ``<run folder>/.<framework>`` when a run names its folder, else a
private temporary folder removed at exit — never the user's home or working directory.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from unified.adapters.registry import quiet_env

_run_dir: Path | None = None
_temp_dir: Path | None = None


def quiet_frameworks(run_dir: Path | str | None = None) -> None:
    """Set every room's telemetry/file switches; ``run_dir``: the run's output folder,
    where the frameworks' stray files then go (``stray_dir``). Safe to call many times."""
    global _run_dir
    os.environ.update(quiet_env())
    if run_dir is not None:
        _run_dir = Path(run_dir)


def stray_dir(framework: str) -> Path:
    """Where ``framework``'s stray files go: a folder that does not exist yet (some
    frameworks create it without ``exist_ok``), under the run folder or a private temp
    folder removed at exit."""
    global _temp_dir
    if _run_dir is not None:
        return _run_dir / f".{framework}"
    if _temp_dir is None:
        _temp_dir = Path(tempfile.mkdtemp(prefix="unified-frameworks-"))
        # removed at exit: every import of a framework backend used to leave one in /tmp
        atexit.register(shutil.rmtree, _temp_dir, ignore_errors=True)
    return _temp_dir / framework
