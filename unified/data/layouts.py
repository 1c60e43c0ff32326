"""Framework layouts: which of a framework's field names holds which Sample field.

A layout names, per canonical field, the framework's own key; its id slot and its
metadata slot. Writing (``unified.data.convert``) puts every Sample field in its place, and a
field the framework has no key for under ``metadata["unified"]`` (``EXTRA_KEY``), which
every reader restores, so ours -> layout -> ours is lossless, ids included.

On read a layout is recognised from its keys (``signature``), or forced with
``layout=`` (the CLI's ``--from``). Only layouts whose keys mean something the aliases
in ``unified.sample`` cannot express need a signature:

- ``deepeval``: ``context`` is the *ideal* context (our ``reference_contexts``), ``name``
  the row's name (our id when unique, see ``Layout.soft_id``), ``additional_metadata`` the
  metadata slot;
- ``dingo``: ``data_id`` is the id;
- ``patronus``: ``sid`` is the id, ``task_metadata`` the metadata slot.

The others (``ragas``, ``ragas_v1``, ``embedchain``) use aliases, ``id`` and ``metadata``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from unified.sample import ALIAS_TO_CANONICAL, CONTENT_FIELDS, FRAMEWORK_FIELDS, SampleError, target_of

EXTRA_KEY = "unified"  # metadata key carrying Sample fields the format has no key for
SAMPLE_FIELDS = CONTENT_FIELDS  # every Sample field but id and metadata


@dataclass(frozen=True)
class Layout:
    """How one framework writes a sample: ``fields`` canonical -> its key; ``id_field``
    and ``metadata_field``. ``soft_id``: the id slot names a row but may repeat (DeepEval's
    ``name``): it is the id only while no earlier row used it for other content.
    ``signature``: keys whose presence in a record identifies the layout; ``list_seps``: the
    list separators of its CSV files."""

    name: str
    title: str
    fields: dict[str, str]
    id_field: str = "id"
    metadata_field: str = "metadata"
    soft_id: bool = False
    signature: frozenset[str] = field(default_factory=frozenset)
    #: separators tried, in order, on a list cell of a tabular source (``unified.data.cells``)
    list_seps: tuple[str, ...] = ("|",)

    def renames(self) -> dict[str, str]:
        """Its keys -> canonical names (``metadata`` for the metadata slot)."""
        out = {name: canonical for canonical, name in self.fields.items()}
        out[self.id_field] = "id"
        out[self.metadata_field] = "metadata"
        return out


LAYOUTS: dict[str, Layout] = {
    "ragas": Layout("ragas", "RAGAS EvaluationDataset", dict(FRAMEWORK_FIELDS["ragas"])),
    "ragas_v1": Layout("ragas_v1", "RAGAS v1 columns", dict(FRAMEWORK_FIELDS["ragas_v1"])),
    "deepeval": Layout(
        "deepeval",
        "DeepEval goldens",
        {**FRAMEWORK_FIELDS["deepeval"], "reference_contexts": "context"},
        id_field="name",
        metadata_field="additional_metadata",
        soft_id=True,
        signature=frozenset({"actual_output", "expected_output", "retrieval_context", "additional_metadata"}),
        # `|` in the CSVs DeepEval writes, `;` its CSV loader's default
        list_seps=("|", ";"),
    ),
    "dingo": Layout(
        "dingo", "Dingo JSONL", dict(FRAMEWORK_FIELDS["dingo"]), id_field="data_id", signature=frozenset({"data_id"})
    ),
    "patronus": Layout(
        "patronus",
        "Patronus dataset",
        dict(FRAMEWORK_FIELDS["patronus"]),
        id_field="sid",
        metadata_field="task_metadata",
        signature=frozenset({"sid", "task_metadata", "task_input", "evaluated_model_input"}),
    ),
    "embedchain": Layout("embedchain", "Embedchain EvalData", dict(FRAMEWORK_FIELDS["embedchain"])),
}
FRAMEWORK_FORMATS = tuple(LAYOUTS)


def get_layout(name: str) -> Layout:
    if name not in LAYOUTS:
        raise ValueError(f"unknown framework layout '{name}'; choose one of {', '.join(LAYOUTS)}")
    return LAYOUTS[name]


def detect_layout(keys: Iterable[str]) -> Layout | None:
    """The first layout whose signature meets ``keys`` (table order), or None."""
    ks = set(keys)
    return next((lay for lay in LAYOUTS.values() if lay.signature & ks), None)


def spelled_as(keys: Iterable[Any], layout: Layout | None, mapping: Mapping[str, str]) -> dict[str, str]:
    """How a row with ``keys`` spells each Sample field: canonical -> its own name, for
    messages in the user's words ("field 'expected_output' is missing", not 'reference').

    The row's own keys first (``--map``, the layout, the aliases: ``target_of``); a field
    the row lacks gets the name of the vocabulary its keys belong to — the layout's, else
    the framework in ``FRAMEWORK_FIELDS`` that owns most of the row's non-canonical keys
    (``input`` + ``actual_output``: DeepEval's, so a missing reference is
    ``expected_output``). Fields spelled as ours are left out."""
    names = [k for k in keys if isinstance(k, str)]
    renames = renames_for(layout, names, mapping)
    own: dict[str, str] = {}
    for key in names:
        target = target_of(key, dict.fromkeys(names), renames)
        if target is not None and target not in ("id", "metadata"):
            own.setdefault(target, key)
    base = layout.fields if layout is not None else _closest_vocabulary(names)
    return {c: n for c, n in {**base, **own}.items() if c != n}


def _closest_vocabulary(keys: list[str]) -> dict[str, str]:
    """The ``FRAMEWORK_FIELDS`` entry owning most of ``keys`` that are not our own names
    (the first in table order on a tie); {} when none owns any."""
    ours = set(CONTENT_FIELDS)
    best, count = {}, 0
    for names in FRAMEWORK_FIELDS.values():
        n = sum(1 for k in keys if k not in ours and k in names.values())
        if n > count:
            best, count = names, n
    return dict(best)


def renames_for(layout: Layout | None, keys: Iterable[str], mapping: Mapping[str, str]) -> dict[str, str]:
    """Source key -> canonical name for one record: ``mapping`` (the user's ``--map``)
    first, then the layout's own keys. Keys left out go through the aliases."""
    out: dict[str, str] = {}
    if layout is not None:
        own = layout.renames()
        out = {k: own[k] for k in keys if k in own}
        if layout.soft_id and any(k in keys for k in ("id", "sample_id")):
            out.pop(layout.id_field, None)  # a real id wins over a row's name
    out.update(mapping)
    return out


def apply_layout(
    record: Mapping[str, Any], layout: Layout | None, renames: Mapping[str, str]
) -> tuple[dict[str, Any], bool]:
    """``record`` with its metadata slot merged into ``metadata``, the fields kept under
    ``metadata["unified"]`` restored, and the layout's keys renamed to canonical names.
    Returns (record, soft): ``soft`` when its id came from a soft id slot. Raises
    ``SampleError`` for a metadata slot that is not an object."""
    out: dict[str, Any] = {}
    meta = dict(_as_object(record.get("metadata"), "metadata"))
    soft = False
    for key, value in record.items():
        target = renames.get(key)
        if key == "metadata" and target is None:
            continue
        if target == "metadata":
            meta.update(_as_object(value, key))
            continue
        if layout is not None and key == layout.id_field and not target:
            meta[key] = value  # a row's name beside a real id: kept, not an unknown field
            continue
        if target == "id" and layout is not None and layout.soft_id and key == layout.id_field:
            soft = value is not None
        out[key] = value
    extra = meta.pop(EXTRA_KEY, None)
    if isinstance(extra, Mapping) and set(extra) <= set(SAMPLE_FIELDS):
        present = {renames.get(k) or ALIAS_TO_CANONICAL.get(k) for k in out}
        out.update({k: v for k, v in extra.items() if k not in present})
    elif extra is not None:
        meta[EXTRA_KEY] = extra  # not ours: the user's own key
    if meta:
        out["metadata"] = meta
    return out, soft


def _as_object(value: Any, key: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):  # HF datasets and CSV cells hold objects as JSON strings
        try:
            value = json.loads(value) if value.strip() else {}
        except (ValueError, RecursionError):
            raise SampleError(key, "expected a JSON object") from None
    if not isinstance(value, Mapping):
        raise SampleError(key, f"expected an object, got {type(value).__name__}")
    return value
