"""The run folder: file names, the one-writer lock, the manifest, the done-set, repair
and compaction — everything that makes ``scores.jsonl`` hold exactly one line per task.

A run folder holds::

    scores.jsonl        one Score a line, appended as tasks finish
    samples.jsonl       each sample as read (the last line per id wins), for the report
    summary.json        aggregates, counts, errors, config, timings (written at the end)
    report.html         the self-contained report
    crosscheck.json     agreement between backends (compare)
    migration.json      what flips between two backends (migrate)
    repeats.jsonl       with --repeats: each repeat of a task until all are in (then folded)
    run.json            the manifest: each task configuration by hash, every invocation
    index.json          what a finished run proves: a rerun with nothing to do reads no
                        row and no line (unified.run.runindex)
    scores.parquet      a columnar copy of scores.jsonl written at the end of a run, read
                        only while its fingerprint matches the lines (unified.run.columnar)
    .lock               held (flock) by the one process writing the folder

Invariants, and where each is kept:

* **One writer.** ``lock()`` takes an exclusive ``flock`` on ``.lock`` (released by the
  OS on any exit, kill -9 included); a second process gets ``RunFolderBusy`` at once.
* **A line is whole or absent.** Each line is one ``write`` + ``flush`` (``fsync`` at
  most once a second); ``repair()`` truncates a torn last line left by kill -9.
* **A line belongs to what produced it.** Lines carry ``sample_hash`` and
  ``config_hash`` (``unified.run.fingerprint``). ``scan()`` counts a task done only when
  both match this run; a line of the same (metric, backend) made under another
  configuration is a ``RunConfigChanged`` (unless the caller starts ``fresh``).
* **Exactly one line per task.** The key of a line is ``(row_error, sample_id, metric,
  backend)``; the last line of a key wins. ``compact()`` rewrites the file (temp file,
  fsync, rename: a kill leaves the old or the new file whole) keeping only the last line
  of each key and dropping lines that are stale — of a sample seen in this run with other
  content — or orphaned — of a sample no longer in an input read to its end — whichever
  metric wrote them, asked for in this run or not.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # the C string scanner json.loads uses; not in typeshed
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping

from unified.analysis.configdiff import diff_configs
from unified.data.files import OutputError, atomic_path, os_error, write_json
from unified.scores import Cost, line_problem

SCORES_FILE = "scores.jsonl"
SAMPLES_FILE = "samples.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"
CROSSCHECK_FILE = "crosscheck.json"
MIGRATION_FILE = "migration.json"
BENCHMARK_FILE = "benchmark.json"  # agreement with people per set (unified.benchmarking)
BENCHMARK_INPUT = "benchmark_input.jsonl"  # the sets' chosen rows, written before the run reads them
REPEATS_FILE = "repeats.jsonl"  # test–retest repeats not yet folded (unified.run.repeats)
MANIFEST_FILE = "run.json"
LOCK_FILE = ".lock"
INDEX_FILE = "index.json"  # what a finished run proves (unified.run.runindex)
PARQUET_FILE = "scores.parquet"  # a derived columnar copy of scores.jsonl (unified.run.columnar)
FSYNC_EVERY_S = 1.0
_SET_CALIBRATED = re.compile(rb'"calibrated"\s*:\s*(?!null)')


def _mentions(f: BinaryIO, needle: bytes, chunk: int = 1 << 20) -> bool:
    """True when the rest of ``f`` contains ``needle``: a search a megabyte at a time,
    keeping the last ``len(needle) - 1`` bytes so a match across two reads is found."""
    keep, tail = len(needle) - 1, b""
    while block := f.read(chunk):
        window = tail + block
        if needle in window:
            return True
        tail = window[-keep:] if keep else b""
    return False


Key = tuple[bool, str]  # (row_error, sample_id): row errors live in a namespace of their own


# one error for every output file (``unified.data.files``); the run folder's name for it stays
RunFolderError = OutputError


class RunFolderBusy(RunFolderError):
    """Another process is writing this run folder."""


class ForeignFolder(RunFolderError):
    """``--out`` names a folder that holds files and is no run folder: refused, untouched."""


class RunConfigChanged(ValueError):
    """The folder holds scores made under another configuration of the same task."""


def _os_error(path: Path, e: OSError, doing: str) -> RunFolderError:
    return os_error(path, e, doing)


def is_score_line(d: Mapping[str, Any]) -> bool:
    """A line the run folder can key: a foreign or hand-edited line without the task's
    fields is dropped on compaction rather than crash the run's end."""
    return all(k in d for k in ("sample_id", "metric", "backend"))


def line_key(d: Mapping[str, Any]) -> tuple[bool, str, str, str]:
    """The task key of a score line (see the module docstring)."""
    return (bool(d.get("row_error")), str(d["sample_id"]), str(d["metric"]), str(d["backend"]))


def parse_line(line: str | bytes) -> Any:
    """One JSONL line's JSON value, or None when it is not one: torn (a kill -9), not
    JSON, or nested past Python's recursion limit (a hand-written line; ``json.loads``
    raises RecursionError there, which no reader of a run folder should let through)."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def iter_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Parsed lines of a JSONL file; unreadable lines (only a torn last line can be) skipped."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = parse_line(line)
                if isinstance(d, dict):
                    yield d


# where a line ``Sample.model_dump_json`` wrote holds its id: after the content fields
# (strings, lists of strings, grades that are numbers: none of them holds this byte
# sequence outside a string, where a quote is escaped) and before ``metadata``
_ID_FIELD = b',"id":"'


def listed_sample_ids(path: Path) -> set[str]:
    """The ids of the samples ``samples.jsonl`` holds a line for. A line the run wrote
    is read from its id field on (``_ID_FIELD``; a resume of a 1M-sample folder reads
    every line); a line without one is parsed. A hand-written line whose id comes after
    a metadata object with an "id" of its own may read as that id: its sample's line is
    then written again (the same content; the last line per id wins)."""
    ids: set[str] = set()
    if not path.exists():
        return ids
    with open(path, "rb") as f:
        for raw in f:
            at = raw.find(_ID_FIELD)
            if at > 0:
                try:
                    ids.add(scanstring(raw[at + len(_ID_FIELD) :].decode("utf-8"), 0)[0])
                    continue
                except (UnicodeDecodeError, ValueError):  # torn or hand-made: parsed below
                    pass
            d = parse_line(raw) if raw.strip() else None
            if isinstance(d, dict) and "id" in d:
                ids.add(str(d["id"]))
    return ids


def repair_jsonl(path: Path) -> int:
    """Truncate a torn last line (a write cut by kill -9) so the file ends with a
    newline. Returns the number of bytes removed."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    size = path.stat().st_size
    with open(path, "rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        pos, keep = size, 0
        while pos > 0:  # walk back to the last newline in 64 KiB steps
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            i = f.read(step).rfind(b"\n")
            if i >= 0:
                keep = pos + i + 1
                break
        f.truncate(keep)
        return size - keep


def rewrite_jsonl(path: Path, keep: Callable[[int, dict[str, Any] | None], bool]) -> int:
    """Rewrite ``path`` keeping the lines for which ``keep(index, parsed_or_None)`` is true;
    atomic (temp file, fsync, rename). Returns the number of lines dropped."""
    if not path.exists():
        return 0
    dropped = 0
    with atomic_path(path) as tmp, open(path, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            d = parse_line(line)
            if keep(i, d if isinstance(d, dict) else None):
                dst.write(line)
            else:
                dropped += 1
    return dropped


class AppendLog:
    """Append-only JSONL: a line is written and flushed at once, or — ``write(line,
    flush=False)`` — held until the next ``flush`` (or the next flushed line, or
    ``close``), which writes every held line in one ``write`` call: the file only ever
    grows by whole lines in order (a kill -9 in between loses held lines, never part of
    one; the next run scores their tasks again). ``first``: a log whose held lines go to
    disk before any line of this one (a sample's ``samples.jsonl`` line before its score
    lines). fsync at most every second. A write that fails (disk full, folder made
    read-only) is a ``RunFolderError`` naming the file."""

    def __init__(self, path: Path, first: "AppendLog | None" = None):
        self.path = path
        self.first = first
        try:
            self._f = open(path, "a", encoding="utf-8")
        except OSError as e:
            raise _os_error(path, e, "write") from None
        self._last_sync = time.monotonic()
        self._held: list[str] = []
        self.lines = 0
        # ``tap``: told of every block once it is written (``unified.run.columnar.StreamCopy``),
        # with each line's object where the writer gave one (``_objects``, kept only then)
        self.tap: Any = None
        self._objects: list[dict[str, Any] | None] = []

    @property
    def empty(self) -> bool:
        """True while nothing is in the file (a fresh run's log, before its first block)."""
        return self.lines == 0 and not self._held and self._f.tell() == 0

    def write(self, line: str, flush: bool = True, obj: dict[str, Any] | None = None) -> None:
        """Append ``line`` (held until the next flush unless ``flush``); ``obj``: the JSON
        object it serialises, for the ``tap``."""
        self._held.append(line)
        if self.tap is not None:
            self._objects.append(obj)
        if flush:
            self.flush()

    def flush(self) -> None:
        """Write the held lines (one call), flush; fsync when the last was a second ago."""
        if self.first is not None:
            self.first.flush()
        if not self._held:
            return
        held, objects = self._held, self._objects
        data = "\n".join(held) + "\n"
        self._held, self._objects = [], []
        try:
            self._f.write(data)
            self._f.flush()
            now = time.monotonic()
            if now - self._last_sync >= FSYNC_EVERY_S:
                os.fsync(self._f.fileno())
                self._last_sync = now
        except OSError as e:
            raise _os_error(self.path, e, "write") from None
        self.lines += len(held)
        if self.tap is not None:
            self.tap.wrote(data, held, objects)

    def close(self) -> None:
        if self._f.closed:
            return
        try:
            self.flush()  # the lines still held (a write error here is one line, as any)
        finally:
            try:
                self._f.flush()
                os.fsync(self._f.fileno())
            except OSError:
                pass  # the write that failed has already been reported
            finally:
                try:
                    self._f.close()
                except OSError:
                    pass


class SeenKeys:
    """Task keys seen in this run -> their sample hash: ``Mapping[Key, str]`` kept as two
    dicts by sample id (samples, row errors), so a key costs one dict entry and no
    ``(row_error, sample_id)`` tuple of its own (56 bytes a sample in a 1M-row run); the
    id and hash strings are the ones the reader already holds."""

    __slots__ = ("_by",)

    def __init__(self) -> None:
        self._by: tuple[dict[str, str], dict[str, str]] = ({}, {})

    def __setitem__(self, key: Key, shash: str) -> None:
        self._by[key[0]][key[1]] = shash

    def __getitem__(self, key: Key) -> str:
        return self._by[key[0]][key[1]]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and key[1] in self._by[bool(key[0])]

    def __len__(self) -> int:
        return len(self._by[0]) + len(self._by[1])


@dataclass
class ScanResult:
    """What ``RunFolder.scan`` found: ``done[key][sample_hash]`` = bitmask of the pairs
    whose line carries this run's configuration and that sample hash; ``lines`` per key
    counts how many lines the file has of this run's pairs (for staleness accounting)."""

    done: dict[Key, dict[str, int]] = field(default_factory=dict)
    lines: int = 0
    all_lines: int = 0  # of every pair, this run's or not
    unfingerprinted: int = 0

    def mask(self, key: Key, shash: str) -> int:
        return self.done.get(key, {}).get(shash, 0)

    def has_other(self, key: Key, shash: str) -> bool:
        """True when the file holds lines of ``key`` made from other content (a line with
        no fingerprint, ``""``, is not known to differ: it is counted as unfingerprinted)."""
        return any(h not in (shash, "") for h in self.done.get(key, {}))


class RunFolder:
    """One run folder (module docstring). Use as ``with RunFolder(path) as f: ...``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.scores = self.path / SCORES_FILE
        self.samples = self.path / SAMPLES_FILE
        self.summary = self.path / SUMMARY_FILE
        self.report = self.path / REPORT_FILE
        self.crosscheck = self.path / CROSSCHECK_FILE
        self.repeats = self.path / REPEATS_FILE
        self.manifest_path = self.path / MANIFEST_FILE
        self._lock_fd: int | None = None

    # ------------------------------------------------------------ lifecycle
    def create(self) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise RunFolderError(f"{self.path}: is a file, not a run folder")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _os_error(self.path, e, "create the run folder") from None

    def foreign_entries(self) -> list[str]:
        """What makes this folder not ours: every entry of a folder that has no manifest
        (``run.json``, written before the first score line), except what a run puts there
        before it (the lock, a judge cache, framework stray files, temp files). Empty for a
        new or empty folder and for a run folder."""
        if not self.path.is_dir() or self.manifest_path.exists():
            return []
        # the cache owns its name; imported here, so readers of a folder load no judge layer
        from unified.judge.cache import CACHE_FILE

        ours = (LOCK_FILE, ".ragas", BENCHMARK_INPUT)
        return sorted(
            p.name
            for p in self.path.iterdir()
            if p.name not in ours and not p.name.startswith(CACHE_FILE) and not p.name.endswith(".tmp")
        )

    def refuse_foreign(self) -> None:
        """Raise ``ForeignFolder`` (one line naming the folder and what is in it) when the
        folder is not ours: a run must not append to, compact or replace a user's own
        ``scores.jsonl``, ``summary.json`` or ``report.html``."""
        found = self.foreign_entries()
        if found:
            shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
            raise ForeignFolder(
                f"{self.path} is not a run folder (it holds {shown} and no {MANIFEST_FILE}); "
                "choose a new or empty --out, or pass --fresh to use it anyway (its "
                f"{SCORES_FILE}, {SUMMARY_FILE}, {REPORT_FILE}, ... are then replaced)"
            )

    def lock(self) -> None:
        """Take the folder's exclusive lock, or raise ``RunFolderBusy`` naming the holder."""
        self.create()
        lock_path = self.path / LOCK_FILE
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise _os_error(lock_path, e, "lock") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunFolderBusy(f"{self.path} is in use by pid {holder}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = None

    def __enter__(self) -> "RunFolder":
        self.lock()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unlock()

    def clear(self) -> None:
        """``--fresh``: remove every result file (the judge cache and the lock stay)."""
        for p in (
            self.scores,
            self.samples,
            self.summary,
            self.report,
            self.crosscheck,
            self.repeats,
            self.manifest_path,
            self.path / INDEX_FILE,
            self.path / PARQUET_FILE,
        ):
            try:
                p.unlink(missing_ok=True)
            except OSError as e:
                raise _os_error(p, e, "remove") from None

    def repair(self) -> int:
        """Truncate torn last lines; returns the bytes removed from ``scores.jsonl``."""
        repair_jsonl(self.samples)
        repair_jsonl(self.repeats)
        return repair_jsonl(self.scores)

    # ------------------------------------------------------------ manifest
    def read_manifest(self) -> dict[str, Any]:
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def read_summary(self) -> dict[str, Any]:
        """``summary.json``, or {} when it is absent or unreadable."""
        try:
            data = json.loads(self.summary.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_manifest(self, data: Mapping[str, Any]) -> None:
        write_json(self.manifest_path, data)

    # ------------------------------------------------------------ resume
    def drop_errors(self, pairs: Iterable[str]) -> "Dropped":
        """``--retry-errors``: remove the failed lines of this run's ``pairs``
        ("metric|backend") — and degraded ones (a value from fewer judges than asked) — so
        their tasks are scored again (failed repeats of an unfinished task too). Another
        pair's lines stay: this run does not score it, so dropping them lost its failures
        (the folder then read as if they had never happened).

        What the dropped attempts cost is kept in ``Dropped.spent`` per pair (their lines
        go, their calls were paid): a folded line's cost sums its repeats, so when the
        task's repeats are still on disk the failed repeats are counted, not the fold
        (the repeats that scored stay and are folded, and counted, again)."""
        asked, dropped = set(pairs), Dropped()
        # tasks whose repeats are still on disk (a kill before compaction): the retry folds
        # again from the repeats that scored, so only the failed repeats are spent and gone
        on_disk = {_task(d) for d in iter_lines(self.repeats) if is_score_line(d)}

        def keep_repeat(_i: int, d: dict[str, Any] | None) -> bool:
            if d is None or not _drops(d, asked):
                return True
            dropped.add(d)
            return False

        def keep_line(_i: int, d: dict[str, Any] | None) -> bool:
            if d is None or not _drops(d, asked):
                return True
            if not (is_score_line(d) and _task(d) in on_disk):
                dropped.add(d)
            dropped.lines += 1
            return False

        rewrite_jsonl(self.repeats, keep_repeat)
        rewrite_jsonl(self.scores, keep_line)
        return dropped

    def check_configs(
        self,
        current: Mapping[str, str],
        configs: Mapping[str, Mapping[str, Any]],
        known: Mapping[str, Mapping[str, Any]],
    ) -> None:
        """Raise ``RunConfigChanged`` when a line of a pair in ``current`` (pair -> config
        hash) carries another configuration hash. ``configs``: this run's configs by pair;
        ``known``: configs by hash from the manifest, to name what changed."""
        for d in iter_lines(self.scores):
            pair = f"{d.get('metric')}|{d.get('backend')}"
            old = d.get("config_hash")
            if pair not in current or old is None or old == current[pair]:
                continue
            what = diff_configs(known[old], configs[pair]) if old in known else ["configuration"]
            metric, backend = pair.split("|", 1)
            raise RunConfigChanged(
                f"{self.path} holds {metric} ({backend}) scores made with another configuration "
                f"({'; '.join(what[:4])}); pass --fresh to start over in that folder, or use another --out"
            )

    def scan(self, bits: Mapping[str, int], hashes: Mapping[str, str]) -> ScanResult:
        """Index the lines of this run's pairs (``bits``: pair -> bit, ``hashes``: pair ->
        config hash) by task key and sample hash. Lines without a fingerprint (an older
        version wrote them) index under no hash, so their tasks are scored again."""
        res = ScanResult()
        for d in iter_lines(self.scores):
            res.all_lines += 1
            try:
                key: Key = (bool(d.get("row_error")), str(d["sample_id"]))
                pair = f"{d['metric']}|{d['backend']}"
            except KeyError:
                continue
            bit = bits.get(pair)
            if bit is None:
                continue
            res.lines += 1
            shash = d.get("sample_hash")
            if line_problem(d) is not None:  # a value off the 0–10 scale: not done, scored again
                res.done.setdefault(key, {}).setdefault("", 0)
                continue
            if shash is None or d.get("config_hash") != hashes[pair]:
                res.unfingerprinted += shash is None
                res.done.setdefault(key, {}).setdefault("", 0)
                continue
            slot = res.done.setdefault(key, {})
            slot[shash] = slot.get(shash, 0) | (1 << bit)
        return res

    def any_calibrated(self) -> bool:
        """True when a score line carries a calibrated value. Only lines that name the
        field with a non-null value are parsed (a short line leaves it out when unset, an
        old full line writes ``"calibrated": null``), so a 1M-line file costs a byte search."""
        if not self.scores.exists():
            return False
        with open(self.scores, "rb") as f:
            if not _mentions(f, b'"calibrated"'):  # nearly every run: no line is split or parsed
                return False
            f.seek(0)
            for raw in f:
                if b'"calibrated"' not in raw or not _SET_CALIBRATED.search(raw):
                    continue
                d = parse_line(raw)
                if isinstance(d, dict) and d.get("calibrated") is not None:
                    return True
        return False

    def replace_backend_lines(self, backend: str, lines: list[str]) -> int:
        """Drop every line of ``backend`` and append ``lines`` (a derived backend such as
        the jury, recomputed whole at the end of a run). Returns the lines dropped."""
        dropped = rewrite_jsonl(self.scores, lambda _i, d: d is not None and d.get("backend") != backend)
        log = AppendLog(self.scores)
        try:
            for line in lines:
                log.write(line)
        finally:
            log.close()
        return dropped

    def map_lines(self, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Rewrite every score line through ``fn`` (atomic, as compaction); unreadable
        lines are dropped, as compaction would."""
        if not self.scores.exists():
            return
        tmp = self.scores.with_name(self.scores.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as dst:
            for d in iter_lines(self.scores):
                dst.write(json.dumps(fn(d), ensure_ascii=False) + "\n")
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(tmp, self.scores)

    # ------------------------------------------------------------ compaction
    def compact(self, seen: Mapping[Key, str] | SeenKeys, pairs: set[str], *, complete: bool) -> Compaction:
        """Rewrite ``scores.jsonl`` to one line per task key (the last), dropping lines
        whose sample was seen with another hash (stale) and, when the input was read to
        its end (``complete``), of samples not in it (orphans).

        The rule holds for the lines of every pair, not only this run's ``pairs``: a
        ``precision@2`` score of content that has since changed is stale even when this run
        asked only for ``mrr`` (before, such a line stayed and was reported as current).
        Two exceptions for the pairs this run did not ask for, which it will not score
        again: a row-error line of a row that is still an error is kept (its text may have
        changed; it still counts the failure), and so is a line without a sample hash (an
        older format: nothing shows it stale). ``Compaction.unasked`` counts, per such
        pair, the lines dropped and not replaced."""
        last: dict[tuple[bool, str, str, str], int] = {}
        for i, d in enumerate(iter_lines_indexed(self.scores)):
            if d is not None and is_score_line(d):
                last[line_key(d)] = i
        unasked: dict[str, int] = {}

        def fresh(d: dict[str, Any], pair: str) -> bool:
            key = (bool(d.get("row_error")), str(d["sample_id"]))
            if key not in seen:
                return not complete
            if pair not in pairs and (key[0] or d.get("sample_hash") is None):
                return True
            return d.get("sample_hash") == seen[key]

        def keep(i: int, d: dict[str, Any] | None) -> bool:
            if d is None or not is_score_line(d) or last.get(line_key(d)) != i:
                return False
            pair = f"{d['metric']}|{d['backend']}"
            if fresh(d, pair):
                return True
            if pair not in pairs:
                unasked[pair] = unasked.get(pair, 0) + 1
            return False

        dropped = rewrite_jsonl(self.scores, keep)
        self._compact_samples(seen, complete)
        return Compaction(dropped, unasked)

    def _compact_samples(self, seen: Mapping[Key, str] | SeenKeys, complete: bool) -> None:
        last: dict[str, int] = {}
        for i, d in enumerate(iter_lines_indexed(self.samples)):
            if d is not None and "id" in d:
                last[str(d["id"])] = i
        rewrite_jsonl(
            self.samples,
            lambda i, d: (
                d is not None
                and last.get(str(d.get("id"))) == i
                and (not complete or (False, str(d.get("id"))) in seen)
            ),
        )


def _task(d: Mapping[str, Any]) -> tuple[tuple[bool, str, str, str], Any]:
    """A line's task key with the sample content it scored (``sample_hash``)."""
    return line_key(d), d.get("sample_hash")


def retried(d: Mapping[str, Any]) -> bool:
    """A line ``--retry-errors`` scores again: failed, or degraded (fewer judges than asked)."""
    return bool(d.get("error") or d.get("degraded"))


def _drops(d: Mapping[str, Any], asked: set[str]) -> bool:
    """``drop_errors``'s rule: a ``retried`` line of an asked pair."""
    return f"{d.get('metric')}|{d.get('backend')}" in asked and retried(d)


@dataclass
class Dropped:
    """What ``drop_errors`` removed: ``lines`` of ``scores.jsonl`` (repeat lines are not
    counted), and per pair the summed cost of every dropped attempt."""

    lines: int = 0
    spent: dict[str, Cost] = field(default_factory=dict)

    def add(self, d: Mapping[str, Any]) -> None:
        cost = line_cost(d)
        if cost.paid_for_something:
            pair = f"{d.get('metric')}|{d.get('backend')}"
            self.spent[pair] = self.spent.get(pair, Cost()).add(cost)

    def merged_into(self, earlier: Any) -> dict[str, dict[str, Any]]:
        """``run.json``'s ``retried_spend`` (pair -> summed Cost of every attempt that
        ``--retry-errors`` dropped in this folder) with this drop's added."""
        merged = {str(p): Cost.lenient(c) for p, c in earlier.items()} if isinstance(earlier, dict) else {}
        for pair, cost in self.spent.items():
            merged[pair] = merged.get(pair, Cost()).add(cost)
        return {p: c.model_dump() for p, c in sorted(merged.items())}


def line_cost(d: Mapping[str, Any]) -> Cost:
    """A parsed line's ``cost`` (``Cost.lenient``: a hand-edited field counts as absent)."""
    return Cost.lenient(d.get("cost"))


@dataclass
class Compaction:
    """What ``RunFolder.compact`` dropped: ``lines`` in all, and per (metric|backend) pair
    this run did not ask for, the lines of changed or removed samples (not scored again)."""

    lines: int
    unasked: dict[str, int] = field(default_factory=dict)


def iter_lines_indexed(path: Path) -> Iterator[dict[str, Any] | None]:
    """Every line of ``path`` in order, parsed (None for an unreadable line), so that line
    indices match ``rewrite_jsonl``'s."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = parse_line(line)
            yield d if isinstance(d, dict) else None
