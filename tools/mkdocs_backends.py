"""mkdocs hook: the menu's "Backends" section, one page per backend room, from the registry.

A new backend room with a page (``BackendFacts.doc``, a file in ``docs/backends/``) appears
in the menu without an edit to ``mkdocs.yml``; the order is the registry's display order.
"""

from __future__ import annotations

from typing import Any


def backend_pages() -> list[dict[str, str]]:
    """``[{title: "backends/<page>"}]`` for every built-in backend that has a page."""
    from unified.adapters.registry import backend_info, builtin_backends

    rooms = (backend_info(name) for name in builtin_backends())
    return [{room.title or room.name: f"backends/{room.doc}"} for room in rooms if room.doc]


def on_config(config: Any, **kwargs: Any) -> Any:
    """Fill the nav's "Backends" section: its overview page, then each backend's page."""
    for item in config["nav"] or []:
        if isinstance(item, dict) and "Backends" in item:
            item["Backends"] = [{"Overview": "backends.md"}, *backend_pages()]
    return config
