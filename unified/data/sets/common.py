"""What every set reader shares: the ``--set`` value, the registry of formats, the one way
a labelled row becomes a Sample, and the one way a row that cannot is said.

A set's sample: ``id`` is ``<set>/<the row's own id>`` (ids of two sets never meet in one
run folder), ``metadata.labels`` holds the people's verdict — ``faithfulness`` 1 when the
response is supported by its contexts, 0 when not, unless a format says more (ARES) —
and ``metadata.benchmark_set`` the set it belongs to (a file may hold several:
LLM-AggreFact's ``dataset`` column).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from unified.data.rowerror import RowError
from unified.sample import Sample, SampleError

#: metadata key naming the set a sample belongs to
SET_KEY = "benchmark_set"
#: FORMAT -> the module whose ``read(path, name)`` reads it (imported on first use)
READERS: dict[str, str] = {
    "ragtruth": "unified.data.sets.ragtruth",
    "halueval": "unified.data.sets.halueval",
    "aggrefact": "unified.data.sets.aggrefact",
    "faithbench": "unified.data.sets.faithbench",
    "summac": "unified.data.sets.summac",
    "wice": "unified.data.sets.wice",
    "begin": "unified.data.sets.begin",
    "ares": "unified.data.sets.ares",
    "jsonl": "unified.data.sets.ownfile",
}
#: FORMAT -> the small subset that ships in the package (``--set FORMAT:shipped``; where the
#: licence allows it: shipped/NOTICE.md)
SHIPPED = {"ares": "ares_20.tsv", "ragtruth": "ragtruth_summary_4.jsonl"}
#: what a summary answered, for frameworks that need a question (RAGAS's faithfulness)
SUMMARISE = "Summarize the document."

Item = Sample | RowError


@dataclass(frozen=True)
class SetSpec:
    """One ``--set``: its format, its path and the name its rows are reported under."""

    fmt: str
    path: Path
    name: str


def parse_set(text: str) -> SetSpec:
    """``FORMAT:PATH`` or ``NAME=FORMAT:PATH`` -> a ``SetSpec`` (the name defaults to the
    file's stem, or the folder's name); PATH ``shipped`` is the package's own subset. Raises ``ValueError`` naming the formats."""
    given, sep, rest = text.partition("=")
    if not sep or ":" in given:  # an "=" inside PATH, not a NAME
        named, spec = None, text
    else:
        named, spec = given.strip(), rest
    fmt, colon, path = spec.partition(":")
    fmt = fmt.strip().lower()
    if not colon or not path.strip():
        raise ValueError(f"--set '{text}': expected FORMAT:PATH, e.g. ragtruth:data/RAGTruth/dataset")
    if fmt not in READERS:
        raise ValueError(f"--set '{text}': unknown format '{fmt}'; one of {', '.join(READERS)}")
    p = Path(path.strip()).expanduser()
    if path.strip() == "shipped":
        if fmt not in SHIPPED:
            raise ValueError(f"--set '{text}': no {fmt} subset ships with the package; shipped: {', '.join(SHIPPED)}")
        p = Path(__file__).parent / "shipped" / SHIPPED[fmt]
    name = named or (p.name if p.is_dir() else p.stem)
    if not name or "/" in name:
        raise ValueError(f"--set '{text}': a set name must be non-empty and hold no '/'")
    return SetSpec(fmt, p, name)


def read_set(spec: SetSpec) -> Iterator[Item]:
    """Every row of the set as a Sample or a RowError. Raises ``FileNotFoundError`` /
    ``ValueError`` (one line) when the path itself is not a set of that format."""
    if not spec.path.exists():
        raise FileNotFoundError(f"--set {spec.fmt}:{spec.path}: no such file or folder")
    module = importlib.import_module(READERS[spec.fmt])
    return module.read(spec.path, spec.name)


def labelled(
    name: str,
    row_id: str,
    *,
    response: Any,
    contexts: list[str],
    label: int | None = None,
    question: str | None = None,
    labels: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Sample:
    """The Sample of one labelled row (module docstring); raises ``SampleError``."""
    metadata: dict[str, Any] = {
        "labels": dict(labels) if labels is not None else {"faithfulness": label},
        SET_KEY: name,
        **(extra or {}),
    }
    return Sample(
        id=f"{name}/{row_id}",
        user_input=question,
        response=response,
        retrieved_contexts=contexts,
        metadata=metadata,
    )


def row_or_error(source: str, row: int, build: Any) -> Item:
    """``build()``'s Sample, or the RowError saying why the row is none (a missing key,
    a value of the wrong kind, a field the Sample refuses)."""
    try:
        return build()
    except KeyError as e:
        return RowError(source, row, str(e.args[0]), "missing")
    except SampleError as e:
        return RowError(source, row, e.field, e.reason)
    except (TypeError, ValueError, AttributeError) as e:
        return RowError(source, row, None, f"not a row of this format: {e}")


def text_of(value: Any, key: str) -> str:
    """A text field of a row: a string, else ``TypeError`` naming the key."""
    if not isinstance(value, str):
        raise TypeError(f"'{key}' is {type(value).__name__}, not text")
    return value
