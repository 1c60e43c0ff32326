"""Human labels from any column: ``--label METRIC=COLUMN`` / ``labels={METRIC: COLUMN}``.

The column's value moves to ``metadata["labels"][METRIC]`` (METRIC as its canonical name),
where the cross-check finds it. Values read:

- 1 / 0, true / false, yes / no, y / n, pass / fail, positive / negative, correct /
  incorrect (any case; ARES's ``[[Yes]]`` / ``[[No]]`` brackets are dropped) -> 1 / 0;
- numbers (and numeric strings) -> kept as numbers: a grade such as TruLens'
  ``expected_score`` 0.4 stays 0.4, and the cross-check binarises graded labels itself;
- an empty cell, a missing-value marker (``N/A``, ``NA``, ``NaN``, ``null``, ``none``, ``-``)
  or an absent column -> no label for that row (the row is scored, unlabelled).

Anything else is a row error naming the row, the column and the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from unified.data.cells import is_missing

_TRUE = frozenset({"1", "true", "yes", "y", "pass", "passed", "positive", "correct"})
_FALSE = frozenset({"0", "false", "no", "n", "fail", "failed", "negative", "incorrect"})
# what spreadsheets and pandas write for "no value": an unlabelled row, never a row error
_MISSING = frozenset({"n/a", "na", "nan", "null", "none", "-", "#n/a"})
#: human label names as datasets write them -> canonical metric (ARES uses these three)
LABEL_TO_METRIC: dict[str, str] = {
    "context_relevance": "context_relevancy",
    "answer_relevance": "answer_relevancy",
    "faithfulness": "faithfulness",
}
_BRACKETS = re.compile(r"^\[\[\s*(.*?)\s*\]\]$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_labels(labels: Mapping[str, str] | list[str] | str | None) -> dict[str, str]:
    """``["faithfulness=Answer_Faithfulness_Label"]`` (the CLI's repeatable ``--label``,
    each item may hold a comma list) or a mapping -> ``{canonical metric: column}``.
    Raises ``ValueError`` / ``UnknownMetricError`` (one line)."""
    from unified.metrics import get_metric

    if not labels:
        return {}
    pairs: list[tuple[str, str]]
    if isinstance(labels, Mapping):
        pairs = [(str(k), str(v)) for k, v in labels.items()]
    else:
        pairs = []
        for item in [labels] if isinstance(labels, str) else labels:
            for part in (p.strip() for p in item.split(",")):
                if not part:
                    continue
                metric, sep, column = (s.strip() for s in part.partition("="))
                if not sep or not metric or not column:
                    raise ValueError(
                        f"--label '{part}': expected METRIC=COLUMN, like faithfulness=Answer_Faithfulness_Label"
                    )
                pairs.append((metric, column))
    out: dict[str, str] = {}
    for metric, column in pairs:
        name = get_metric(metric).name
        if name in out and out[name] != column:
            raise ValueError(f"--label: metric '{name}' labelled by two columns, '{out[name]}' and '{column}'")
        out[name] = column
    return out


def label_value(value: Any) -> int | float | None:
    """One label as a number (None: no label). Raises ``ValueError`` with the reason."""
    if is_missing(value):
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite number")
        return value
    if not isinstance(value, str):
        raise ValueError(f"a {type(value).__name__} is not a label")
    text = value.strip()
    m = _BRACKETS.match(text)
    if m:
        text = m.group(1)
    if not text:
        return None
    word = text.lower()
    if word in _MISSING:
        return None
    if word in _TRUE or word in _FALSE:
        return 1 if word in _TRUE else 0
    if _NUMBER.match(text):
        number = float(text)
        if not math.isfinite(number):  # a long run of digits overflows: shown short
            shown = text if len(text) <= 24 else f"{text[:8]}… (a number of {len(text)} characters)"
            raise ValueError(f"{shown} is not a finite number")
        return int(number) if number.is_integer() and "." not in text and "e" not in word else number
    raise ValueError("expected 1/0, true/false, yes/no, pass/fail, [[Yes]]/[[No]] or a number")


def label_metric(key: str) -> str | None:
    """The canonical metric a labels key names (a dataset's name such as ARES's
    ``context_relevance``, or any spelling the registry knows), or None."""
    from unified.metrics import UnknownMetricError, parse_metric

    if key in LABEL_TO_METRIC:
        return LABEL_TO_METRIC[key]
    try:
        return parse_metric(key).canonical
    except UnknownMetricError:
        return None


def row_labels_problem(labels: Any) -> tuple[str, str] | None:
    """(field, reason) when a row's own ``labels`` object holds a label for a metric
    (``label_metric``) that ``label_value``'s rule cannot read (the rule ``--label``
    applies to a column), else None. Read later without a word, an unreadable label
    ("maybe", ``[1]``) left its row unlabelled. Keys that name no metric, and a ``labels``
    that is no object (RAGTruth's list of spans), are another dataset's and not read here."""
    if not isinstance(labels, Mapping):
        return None
    for key, value in labels.items():
        if label_metric(str(key)) is None:
            continue
        try:
            label_value(value)
        except ValueError as e:
            return f"labels.{key}", f"cannot read label '{str(value)[:80]}': {e}"
    return None
