"""The lines a run writes without calling a backend: an input row that never became a
sample, and a sample that lacks a field a metric needs.

The rules:

* A row error gets one failed line per task still to do, filed in the row-error
  namespace (``row_error=True``, id ``row:N`` or the sample id it names), so it never
  matches a real sample's line; two errors of one id get two ids (``#2``); the line's
  ``sample_hash`` is the error text's, so a row that fails differently is written again.
* A missing field fails only the tasks of the metrics that need it (the backend's own
  rule, ``unified.adapters.missing_field_error``); the sample's other tasks are scored.
"""

from __future__ import annotations

from typing import Any

from unified.run.executor import Pair
from unified.run.fingerprint import text_hash
from unified.run.runfolder import Key, ScanResult, SeenKeys
from unified.scores import Score


def row_error_key(err: Any, seen: SeenKeys) -> Key:
    """The key of a row error's lines: its sample's id (a pipeline question with an id)
    or ``row:N``, in the row-error namespace; ``#2``, ``#3``, … for a second error of one id."""
    sid = getattr(err, "sample_id", None) or f"row:{getattr(err, 'row', '?')}"
    n = 1
    while (True, sid if n == 1 else f"{sid}#{n}") in seen:
        n += 1
    return (True, sid if n == 1 else f"{sid}#{n}")


def row_error_scores(
    err: Any, seen: SeenKeys, scan: ScanResult, pairs: list[Pair]
) -> tuple[int, dict[str, list[Score]]]:
    """(tasks already done, backend -> the failed Scores to write) for row error ``err``;
    its key is added to ``seen``."""
    key = row_error_key(err, seen)
    text = str(err)
    h = text_hash(text)
    seen[key] = h
    done = scan.mask(key, h)
    todo = [p for p in pairs if not done >> p.bit & 1]
    by_backend: dict[str, list[Score]] = {}
    for p in todo:
        by_backend.setdefault(p.backend.name, []).append(
            Score.failure(
                p.metric.name,
                p.backend.name,
                key[1],
                text,
                threshold=p.task_bound,
                row_error=True,
                sample_hash=h,
                config_hash=p.config_hash,
            )
        )
    return len(pairs) - len(todo), by_backend


def missing_field_score(sample_id: str, pair: Pair, why: str, sample_hash: str) -> Score:
    """The failed Score of a task whose sample lacks a field its metric needs."""
    return Score.failure(
        pair.metric.name,
        pair.backend.name,
        sample_id,
        why,
        threshold=pair.task_bound,
        sample_hash=sample_hash,
        config_hash=pair.config_hash,
    )
