"""Isolated backends: a framework version in an environment of its own, behind one worker.

``--backend ragas@0.3.9`` (any room in ``RECIPES``, at any version its indexes offer) and
``--backend embedchain`` (always isolated: its pins cannot live beside the others) run that
framework in a uv-built environment (``envs.py``) and drive it through one worker process
per backend per run (``worker.py``, a stdlib-only script; ``client.py`` is our side of its
JSON-lines protocol). Every judge call the framework makes comes back to this process
through the loopback bridge (``unified.judge.bridge``), so cache, retries, breaker, cost
and secrets are the judge layer's as for any backend, and the worker never holds a key.

A versioned name keeps its room's facts — the same metric table, scales, bounds and
0–10 rule (``isolated_facts``) — only the class that runs ``evaluate()`` differs
(``backend.IsolatedBackend``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from unified.adapters.facts import BackendFacts

#: the class every isolated backend is an instance of (a subclass per name, made on use)
ISOLATED_CLASS = "unified.adapters.isolated.backend:IsolatedBackend"
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!-]*$")


@dataclass(frozen=True)
class Recipe:
    """How a room's framework is installed on its own: its distribution, the pins it
    needs beside it (the same as the room's pip extra, for the same reasons), and the
    version used when none is named (``embedchain``)."""

    distribution: str
    pins: tuple[str, ...] = ()
    default_version: str | None = None


#: room -> how to install its framework in an isolated environment
RECIPES: dict[str, Recipe] = {
    # langchain-community 0.4.2 removed a module `import ragas` needs; without a floor on
    # instructor the resolver picks 1.3.2 (docs/backends/ragas.md)
    "ragas": Recipe("ragas", ("langchain-community<0.4.2", "instructor>=1.11")),
    "deepeval": Recipe("deepeval"),
    # embedchain 0.1.128 (the last release) needs posthog<4 where deepeval needs >=7
    "embedchain": Recipe("embedchain", default_version="0.1.128"),
}


def split_name(name: str) -> tuple[str, str | None] | None:
    """``"ragas@0.3.9"`` -> ``("ragas", "0.3.9")``; ``"embedchain"`` -> ``("embedchain",
    None)``; None for a name that is no isolated backend (``"ragas"``, ``"x@"``)."""
    base, at, version = name.partition("@")
    if base not in RECIPES:
        return None
    if not at:
        return (base, None) if RECIPES[base].default_version else None
    return (base, version) if _VERSION.match(version) else None


def isolated_facts(name: str, room: BackendFacts) -> BackendFacts:
    """The facts of isolated backend ``name``: its room's, with the isolated class, no
    package to find in this environment, and no names or object readers of its own (the
    room already gave them to the registries)."""
    split = split_name(name)
    assert split is not None
    base, version = split
    version = version or RECIPES[base].default_version
    return dataclasses.replace(
        room,
        name=name,
        backend=ISOLATED_CLASS,
        title=f"{room.title or base} {version} (isolated)",
        order=room.order + 1,
        package=None,
        extra="isolated",
        hint=f"the {name} backend needs uv: pip install 'unified-rag-eval[isolated]'",
        more_names={},
        objects=(),
        quiet_env={},
        doc=room.doc,
    )
