"""The run index: what a finished run proves, so that the same command over the same
input and folder does nothing — without reading a row or a score line again.

A run that ends with its input file read to its end (not interrupted, no
``--max-samples`` cut, no input it had to copy) writes ``index.json`` last::

    {"version": 1,
     "key": "…",                 # digest of what decides the tasks and their scores
     "input":  {"path", "stat", "sha256"},
     "scores": {"stat", "sha256"},
     "summary": {"stat", "sha256"},   # the summary.json the run wrote
     "samples": {"stat"},        # samples.jsonl as the run left it
     "aggregates": {"written": [...], "stable": [...]},   # Report.summary() both ways
     "report": true}             # report.html was written

``key`` is the sha256 of the canonical JSON of: every (metric, backend) pair's
configuration hash (``unified.run.fingerprint``), the options that decide how rows
become samples (``--map``, ``--format``, ``--layout``, ``--label``, ``--list-sep``),
``--jury``, ``--repeats`` and the input file's name (a row error's text names it).

A later run into the folder takes the **no-op path** — no row read, no line scanned,
nothing rewritten but the manifest's invocation list — only when all of these hold:

* its key equals the index's (same pairs, same configurations, same read options);
* the input file is the same bytes: its stat (device, inode, size, mtime and ctime, in
  ns) equals the stored one — any write to a file changes its ctime, and no user tool
  sets a ctime back — or, when the stat differs (a copy, a ``touch``), its sha256 equals
  the stored digest;
* ``scores.jsonl`` is the same bytes by the same rule, so a line edited, added or removed
  since is seen and the normal path runs (which re-reads, repairs and rescores);
* ``summary.json`` is the same bytes by the same rule (the no-op path prints its table),
  and ``report.html`` exists when the run writes one;
* ``samples.jsonl`` has the stat the run left (by stat alone: hashing it would cost every
  run a pass over the file; a changed stat runs the normal path, which writes a done
  sample's line again when the file lacks it — deleted, cut or edited by hand);
* no ``--fresh``, ``--calibration`` or ``--retry-errors`` with failures on record.

Anything else runs the normal path, which removes ``index.json`` before it touches the
folder: a kill -9 in the middle leaves no index behind that could vouch for a half-written
folder. This is git's index rule (stat data first, content when the stat differs).
``Report`` uses the same proof to answer ``summary()`` from the stored aggregates.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from unified.data.files import write_json
from unified.run.runfolder import INDEX_FILE, SAMPLES_FILE, SCORES_FILE, SUMMARY_FILE

VERSION = 1


def run_key(pairs: Mapping[str, str], options: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the pairs' configuration hashes and the options
    that decide which tasks exist and how each is scored (module docstring)."""
    blob = json.dumps({"pairs": dict(pairs), "options": dict(options)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def file_stat(path: Path) -> list[int] | None:
    """(device, inode, size, mtime ns, ctime ns) of ``path``, or None when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def file_digest(path: Path) -> str | None:
    """sha256 of the file's bytes (hashlib's C loop), or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def fingerprint(path: Path) -> dict[str, Any] | None:
    """What the index stores of a file: its stat and its sha256."""
    stat, digest = file_stat(path), file_digest(path)
    return None if stat is None or digest is None else {"stat": stat, "sha256": digest}


def same_file(path: Path, stored: Any) -> bool:
    """True when ``path`` holds the bytes ``stored`` (a ``fingerprint``) describes: by
    stat when it is unchanged, else by content."""
    if not isinstance(stored, Mapping):
        return False
    stat = file_stat(path)
    if stat is None:
        return False
    if stat == stored.get("stat"):
        return True
    return stored.get("sha256") is not None and file_digest(path) == stored.get("sha256")


def stamp_lines(folder: Path, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a file derived from the folder's score lines: ``crosscheck.json``,
    ``migration.json``) with the fingerprint of ``scores.jsonl`` it was computed from,
    under ``"scores"``."""
    return {**data, "scores": fingerprint(Path(folder) / SCORES_FILE)}


def describes_lines(folder: Path, data: Mapping[str, Any]) -> bool:
    """True when ``data`` (``stamp_lines``) was computed from ``scores.jsonl`` as it is
    now (``same_file``). A later run into the folder, a hand edit or a file written by
    a version that stamped nothing: False, and the reader must not show it as current."""
    return same_file(Path(folder) / SCORES_FILE, data.get("scores"))


def read_index(folder: Path) -> dict[str, Any]:
    """The folder's index, or {} when it has none or it is unreadable."""
    try:
        data = json.loads((folder / INDEX_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == VERSION else {}


def remove_index(folder: Path) -> None:
    """Drop the index before the folder is changed (an absent index proves nothing)."""
    try:
        (folder / INDEX_FILE).unlink(missing_ok=True)
    except OSError:
        pass  # a read-only folder: the run's own writes will say so


def write_index(
    folder: Path,
    key: str,
    source: Path,
    scores: Path,
    aggregates: Mapping[str, Any],
    report: bool,
    known: Mapping[str, Any] | None = None,
) -> bool:
    """Write ``index.json`` for a run that just finished; False (and no index) when a
    file cannot be fingerprinted. ``known``: the ``{stat, sha256}`` of ``scores`` taken
    earlier in the run (``scores.parquet``'s); used while the stat is unchanged
    (``same_file``'s rule), so the lines are not hashed twice. ``summary.json`` is
    fingerprinted too: the no-op path prints its table and failure groups."""
    inp, out = fingerprint(source), _known_or_fingerprint(scores, known)
    summary, samples = fingerprint(folder / SUMMARY_FILE), file_stat(folder / SAMPLES_FILE)
    if inp is None or out is None or summary is None or samples is None:
        return False
    entry = {
        "version": VERSION,
        "key": key,
        "input": {"path": str(source.resolve()), **inp},
        "scores": out,
        "summary": summary,
        "samples": {"stat": samples},
        "aggregates": dict(aggregates),
        "report": report,
    }
    write_json(folder / INDEX_FILE, entry)
    return True


def _known_or_fingerprint(path: Path, known: Mapping[str, Any] | None) -> dict[str, Any] | None:
    stat = file_stat(path)
    if known is not None and stat is not None and known.get("stat") == stat and known.get("sha256"):
        return {"stat": stat, "sha256": known["sha256"]}
    return fingerprint(path)


def proves_unchanged(index: Mapping[str, Any], key: str, source: Path, scores: Path) -> bool:
    """True when ``index`` proves the folder already holds every task of this run's
    input and configuration (module docstring), and that its ``summary.json`` is the one
    the run wrote (a summary copied from another folder printed its table beside this
    folder's gate) and ``samples.jsonl`` the one it left (the report's questions)."""
    if not index or index.get("key") != key:
        return False
    return (
        same_file(source, index.get("input"))
        and same_file(scores, index.get("scores"))
        and same_file(scores.parent / SUMMARY_FILE, index.get("summary"))
        and same_file(scores.parent / SAMPLES_FILE, index.get("samples"))
    )


def stored_aggregates(folder: Path, scores: Path, stable: bool) -> list[dict[str, Any]] | None:
    """The aggregates the index stored, when ``scores.jsonl`` is still the file they were
    computed from; None otherwise (the caller reads the lines)."""
    index = read_index(folder)
    if not index or not same_file(scores, index.get("scores")):
        return None
    aggs = (index.get("aggregates") or {}).get("stable" if stable else "written")
    return aggs if isinstance(aggs, list) else None


def stat_now(path: Path) -> list[int] | None:
    """The stat the input had when reading began: a file changed while it was read gets
    no index (its digest would vouch for rows the run never saw)."""
    return file_stat(path) if os.path.isfile(path) else None
