"""Framework objects as sample records: the readers the backend rooms declare.

``unified.data.io`` hands any object it does not know (not a dict, Sample, path, DataFrame
or dataset) to ``object_records``; the reader is found by the object's module and class
name — without importing the framework — and its function (in the framework's backend
room, ``unified.adapters.<name>.objects``, which may import the framework) turns the
object into ``(layout, record)`` pairs that ``unified.data.io`` reads like any row of that
layout. The rooms declare their readers (``BackendFacts.objects``) and the registry
gives them to this table when ``unified`` is imported; nothing here imports a room.

A reader is ``"module:function"``; the function takes the object and returns a list of
``(layout name, record dict)`` — one pair for a single sample or test case, one per row
for a dataset; a record that is a string is the reason that row cannot be read (e.g. a
multi-turn sample, which has no single-turn reading). Add one with
``register_object_reader`` (or, in tests, the ``object_reader`` context manager).
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass
from typing import Any, Iterator


@dataclass(frozen=True)
class ObjectConverter:
    """Objects whose class is one of ``classes``, defined in a module under ``module``,
    are converted by ``target`` (``"package.module:function"``)."""

    module: str
    classes: frozenset[str]
    target: str

    def matches(self, obj: Any) -> bool:
        for cls in type(obj).__mro__:
            top = cls.__module__.split(".")[0]
            if cls.__name__ in self.classes and top == self.module:
                return True
        return False


#: tried in order: readers a user registers first, then the rooms' own
_CONVERTERS: list[ObjectConverter] = []


def register_object_reader(
    module: str, classes: set[str] | frozenset[str], target: str, *, builtin: bool = False
) -> ObjectConverter:
    """Add a reader (a user's is tried before the rooms' own, ``builtin``); returns it for
    ``unregister_object_reader``. A reader already in the table is not added twice."""
    conv = ObjectConverter(module, frozenset(classes), target)
    if conv not in _CONVERTERS:
        _CONVERTERS.append(conv) if builtin else _CONVERTERS.insert(0, conv)
    return conv


def unregister_object_reader(conv: ObjectConverter) -> None:
    _CONVERTERS.remove(conv)


@contextlib.contextmanager
def object_reader(module: str, classes: set[str] | frozenset[str], target: str) -> Iterator[ObjectConverter]:
    """A reader registered for the ``with`` block only."""
    conv = register_object_reader(module, classes, target)
    try:
        yield conv
    finally:
        unregister_object_reader(conv)


def object_records(obj: Any) -> list[tuple[str, dict[str, Any] | str]] | None:
    """``obj`` as (layout, record) pairs, or None when no reader knows its class.
    Raises ``ValueError`` (one line) when the reader refuses the object."""
    conv = next((c for c in _CONVERTERS if c.matches(obj)), None)
    if conv is None:
        return None
    module, _, func = conv.target.partition(":")
    return getattr(importlib.import_module(module), func)(obj)
