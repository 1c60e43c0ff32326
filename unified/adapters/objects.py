"""Framework objects as sample records: a small registry of converters.

``unified.data.io`` hands any object it does not know (not a dict, Sample, path, DataFrame or
dataset) to ``object_records``; the registry finds the converter by the object's module
and class name — without importing the framework — and the converter module (which may
import its framework) turns it into ``(layout, record)`` pairs that ``unified.data.io`` reads
like any row of that layout.

A converter is ``"module:function"``; the function takes the object and returns a list of
``(layout name, record dict)`` — one pair for a single sample or test case, one per row
for a dataset — or raises ``ValueError`` with a one-line reason (e.g. a multi-turn sample,
which has no single-turn reading). Add one with ``register_object_converter`` (or, in
tests, the ``object_converter`` context manager).
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


_CONVERTERS: list[ObjectConverter] = [
    ObjectConverter(
        "ragas",
        frozenset({"EvaluationDataset", "SingleTurnSample", "MultiTurnSample"}),
        "unified.adapters.ragas_objects:records",
    ),
    ObjectConverter(
        "deepeval",
        frozenset({"EvaluationDataset", "LLMTestCase", "Golden", "ConversationalTestCase", "ConversationalGolden"}),
        "unified.adapters.deepeval_objects:records",
    ),
]


def register_object_converter(module: str, classes: set[str] | frozenset[str], target: str) -> ObjectConverter:
    """Add a converter (tried before the built-in ones); returns it for ``unregister``."""
    conv = ObjectConverter(module, frozenset(classes), target)
    _CONVERTERS.insert(0, conv)
    return conv


def unregister_object_converter(conv: ObjectConverter) -> None:
    _CONVERTERS.remove(conv)


@contextlib.contextmanager
def object_converter(module: str, classes: set[str] | frozenset[str], target: str) -> Iterator[ObjectConverter]:
    """A converter registered for the ``with`` block only."""
    conv = register_object_converter(module, classes, target)
    try:
        yield conv
    finally:
        unregister_object_converter(conv)


def object_records(obj: Any) -> list[tuple[str, dict[str, Any] | str]] | None:
    """``obj`` as (layout, record) pairs, or None when no converter knows its class.
    Raises ``ValueError`` (one line) when the converter refuses the object."""
    conv = next((c for c in _CONVERTERS if c.matches(obj)), None)
    if conv is None:
        return None
    module, _, func = conv.target.partition(":")
    return getattr(importlib.import_module(module), func)(obj)
