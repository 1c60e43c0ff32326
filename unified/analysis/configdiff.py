"""What changed between two task configurations, one short phrase per leaf.

The one rule every reader of two configurations uses to say how they differ: a run
folder refusing a changed configuration (``unified.run.runfolder``), a calibration file
fitted under another one (``unified.analysis.calibrated``) and the diff of two runs
(``unified.report.diff``). It lives at the lowest of them.
"""

from __future__ import annotations

import json
from typing import Any, Mapping


def diff_configs(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    """What changed between two task configurations, one short phrase per leaf:
    ``["judge.model: judge-A → judge-B", "single_judge: False → True"]``."""
    changes: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        name = f"{prefix}{key}"
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            changes.extend(diff_configs(a, b, prefix=name + "."))
        elif a != b:
            changes.append(f"{name}: {_short(a)} → {_short(b)}")
    return changes


def _short(v: Any) -> str:
    text = json.dumps(v, sort_keys=True, default=str, ensure_ascii=False) if isinstance(v, (dict, list)) else str(v)
    return text if len(text) <= 60 else text[:59] + "…"
