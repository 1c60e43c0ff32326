"""Old module paths, kept importable: ``unified.runner`` is ``unified.run.runner``.

The house moved modules into folders named for their jobs (``data/``, ``run/``,
``analysis/``, ``integrations/``, ``cli/``). Code written against the flat layout —
``from unified.crosscheck import crosscheck``, ``import unified.ray_executor`` — keeps
working: a meta-path finder answers each old name with the module at its new path (the
same module object, so ``monkeypatch.setattr`` on either name patches both). New code
imports the new paths; this table is the one list of what moved.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

MOVED: dict[str, str] = {
    "rowerror": "data.rowerror",
    "readers": "data.readers",
    "cells": "data.cells",
    "layouts": "data.layouts",
    "labels": "data.labels",
    "io": "data.io",
    "convert": "data.convert",
    "options": "run.options",
    "runplan": "run.runplan",
    "runfolder": "run.runfolder",
    "fingerprint": "run.fingerprint",
    "executor": "run.executor",
    "progress": "run.progress",
    "runsummary": "run.runsummary",
    "runner": "run.runner",
    "pipeline": "run.pipeline",
    "stats": "analysis.stats",
    "crosscheck": "analysis.crosscheck",
    "translate": "analysis.translate",
    "calibration": "analysis.calibration",
    "verdict": "analysis.verdict",
    "jury": "analysis.jury",
    "migrate": "analysis.migrate",
    "diff": "analysis.diff",
    "errorgroups": "analysis.errorgroups",
    "pytest_plugin": "integrations.pytest_plugin",
    "mlflow_log": "integrations.mlflow_log",
    "ray_executor": "integrations.ray_executor",
    "cli_run": "cli.run",
}


def new_name(old: str) -> str | None:
    """``unified.runner.x`` → ``unified.run.runner.x``; None when ``old`` did not move."""
    parts = old.split(".")
    if len(parts) < 2 or parts[0] != "unified" or parts[1] not in MOVED:
        return None
    return ".".join(["unified", MOVED[parts[1]], *parts[2:]])


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at its new path is already imported."""


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds ``unified.<old>`` (and its submodules) at the path it moved to."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        target_name = new_name(fullname)
        if target_name is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (``unified/__init__`` calls it)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
