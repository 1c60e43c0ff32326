"""The run folder before the first task: refused, locked, proven unchanged, or made ready.

The rules, in the order they apply:

* A folder that is not ours (files and no ``run.json``) is refused before anything is
  written into it, unless ``fresh``.
* One writer: the folder is locked (``RunFolder.lock``) for the whole run.
* A rerun with nothing to do does nothing: when ``index.json`` proves the folder holds
  every task of this input and configuration (``IndexRule``), no row or line is read.
* Otherwise no derived file vouches for lines about to change (``index.json`` and
  ``scores.parquet`` are removed first); ``fresh``/``resume=False`` clear the folder; a
  torn last line is repaired; a changed configuration is refused; ``retry_errors`` drops
  the failed lines (their cost kept in ``run.json`` at once); and the done-set is indexed.
"""

from __future__ import annotations

from typing import Any

from unified.run.columnar import remove_parquet
from unified.run.manifest import write_manifest
from unified.run.runfolder import listed_sample_ids
from unified.run.runindex import proves_unchanged, read_index, remove_index, run_key, stat_now, write_index
from unified.run.state import RunState


class IndexRule:
    """``index.json``: what a finished run proves, and when a rerun may trust it
    (``unified.run.runindex``). Only a complete run over a file read in place, into a
    folder of the user's, without ``--calibration``, whose input did not change while it
    was read, writes one; a rerun with the same key, input and lines does nothing."""

    def __init__(self, state: RunState):
        self.state = state
        self.input_stat: list[int] | None = None  # the input file's stat when reading began

    def key(self) -> str:
        o, src = self.state.opts, self.state.source.file_in_place()
        read = {"mapping": dict(o.mapping or {}), "fmt": o.fmt, "layout": o.layout, "labels": o.labels}
        # the file's name too: a row error's text names it (``in.jsonl:4: ...``)
        name = src.name if src is not None else None
        return run_key(
            self.state.plan.hashes,
            {**read, "list_sep": o.list_sep, "jury": o.jury, "repeats": o.repeats, "name": name},
        )

    def proves_nothing_to_do(self) -> bool:
        """True when ``index.json`` proves this run has nothing to do."""
        s, o = self.state, self.state.opts
        src = s.source.file_in_place()
        if src is None or s.temporary or o.fresh or not o.resume or o.calibration is not None:
            return False
        if o.max_samples is not None:
            return False
        index = read_index(s.out)
        if not index or (o.write_report and not (index.get("report") and s.folder.report.exists())):
            return False
        summary = s.folder.read_summary()
        if not summary or (o.retry_errors and (summary.get("n_errors") or summary.get("n_degraded"))):
            return False
        return proves_unchanged(index, self.key(), src, s.folder.scores)

    def note_input(self) -> None:
        """The input's stat as reading begins: a file changed while it was read is no proof."""
        src = self.state.source.file_in_place()
        self.input_stat = stat_now(src) if src is not None else None

    def write(self, written: list[Any], stable: list[Any], scores_print: Any) -> None:
        """After a complete run over a file read in place: ``index.json``, last.
        ``written``/``stable``: the aggregates as summary.json has them and in the stable
        order; ``scores_print``: scores.jsonl's fingerprint as scores.parquet proved it."""
        s = self.state
        src = s.source.file_in_place()
        if (
            src is None
            or s.temporary
            or s.stop.interrupted
            or not s.complete
            or s.calibration is not None
            or self.input_stat is None
            or stat_now(src) != self.input_stat  # the input changed while it was read
        ):
            return
        aggs = {"written": [a.model_dump() for a in written], "stable": [a.model_dump() for a in stable]}
        write_index(s.out, self.key(), src, s.folder.scores, aggs, s.opts.write_report, scores_print)


class FolderPrep:
    """Makes the folder ready for the scoring (module docstring); ``listed``: on a resume,
    the sample ids ``samples.jsonl`` holds a line for — a done sample without one (the
    file deleted or cut since) has it written again, for the report's questions."""

    def __init__(self, state: RunState, index: IndexRule):
        self.state, self.index = state, index
        self.listed: set[str] | None = None

    def prepare(self) -> bool:
        """Refuse, lock, then either prove there is nothing to do (True) or make the
        folder ready and index what is done (False)."""
        s = self.state
        if not s.opts.fresh:
            s.folder.refuse_foreign()  # before the lock: nothing is added to a user's folder
        s.folder.lock()
        if self.index.proves_nothing_to_do():
            return True
        remove_index(s.out)  # before anything changes: no index vouches for a half-written folder
        remove_parquet(s.out)  # nor a columnar copy of lines about to change (unified.run.columnar)
        self.index.note_input()
        if s.opts.fresh or not s.opts.resume:
            s.folder.clear()
        manifest = s.folder.read_manifest()
        if s.folder.repair():
            s.say(f"note: truncated a torn last line in {s.folder.scores} (a killed run)")
        s.folder.check_configs(s.plan.hashes, s.plan.configs, manifest.get("configs", {}))
        if s.opts.retry_errors:
            self._drop_errors(manifest)
        self._index_done()
        write_manifest(s, manifest, running=True)
        return False

    def _drop_errors(self, manifest: dict[str, Any]) -> None:
        """``retry_errors``: the failed lines go; what they cost is on record at once,
        before a kill can lose it."""
        s = self.state
        dropped = s.folder.drop_errors(s.plan.hashes)
        if dropped.lines:
            s.say(f"note: retrying {dropped.lines} failed task(s) from {s.folder.scores}")
        if dropped.spent:
            manifest["retried_spend"] = dropped.merged_into(manifest.get("retried_spend"))
            write_manifest(s, manifest, running=True)

    def _index_done(self) -> None:
        """The done-set (``RunFolder.scan``), the repeats on disk, and what they say."""
        s = self.state
        s.scan = s.folder.scan(s.plan.bits, s.plan.hashes)
        if any(not row_error for row_error, _ in s.scan.done):
            self.listed = listed_sample_ids(s.folder.samples)
        if s.book.pairs and (held := s.book.load()):
            s.say(f"resuming {s.out}: {held} repeat(s) of unfinished tasks already on disk")
        if s.scan.lines and s.opts.show_summary:  # information, not a warning: `run -q` shows only errors and gates
            s.say(f"resuming {s.out}: {s.scan.lines} score(s) of this run already on disk")
        if s.scan.unfingerprinted:
            s.say(
                f"note: {s.scan.unfingerprinted} score line(s) carry no fingerprint (an older "
                "version wrote them): their tasks are scored again"
            )
