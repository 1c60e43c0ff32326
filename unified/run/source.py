"""The input of a run: read in place, or from a copy when the run itself writes it.

The rule: a run never reads what it writes. An input file inside the run folder (its own
``samples.jsonl``) or one of the folder's files under another name (a hard link, a
symlink) is copied before the folder is touched, and the copy is read: the run appends
to, compacts and (``--fresh``) removes those files while it reads, and reading what it
appends would never end. Any other input is read in place — and only an input read in
place can be vouched for by ``index.json`` (``unified.run.runindex``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from unified.run.runfolder import RunFolderError


class RunSource:
    """The samples a run was given (a path, a DataFrame, an iterable, ...) and, when the
    run writes that file, the copy it reads instead (``snapshot``)."""

    def __init__(self, samples: Any):
        self.samples = samples
        self.snapshot: Path | None = None  # the copy of an input the run itself writes

    @property
    def readable(self) -> Any:
        """What the reader reads: the copy when there is one, else the input."""
        return self.snapshot or self.samples

    def take_snapshot(self, out: Path, say: Callable[[str], None]) -> None:
        """Copy the input now when the run folder ``out`` writes it (module docstring)."""
        if not isinstance(self.samples, (str, Path)) or not written_by_run(Path(self.samples), out):
            return
        src = Path(self.samples)
        folder = Path(tempfile.mkdtemp(prefix="unified-input-"))
        self.snapshot = folder / src.name  # the same name: row errors still say samples.jsonl:3
        try:
            shutil.copyfile(src, self.snapshot)
        except OSError as e:
            shutil.rmtree(folder, ignore_errors=True)
            raise RunFolderError(
                f"cannot copy {src} (an input inside the run folder {out}) before the run: {e.strerror or e}"
            ) from None
        say(f"note: {src} is a file this run writes; reading a copy taken before the run")

    def file_in_place(self) -> Path | None:
        """The input as a file read in place (the index can vouch only for that)."""
        if self.snapshot is not None or not isinstance(self.samples, (str, Path)):
            return None
        p = Path(self.samples)
        return p if p.is_file() else None

    def rows(self) -> int | None:
        """Rows when cheap to know (``count_rows``), for the progress total."""
        return count_rows(self.readable)

    def describe(self) -> str:
        """The input as ``summary.json``'s ``config.source`` names it."""
        return str(self.samples) if isinstance(self.samples, (str, Path)) else type(self.samples).__name__

    def remove_snapshot(self) -> None:
        if self.snapshot is not None:
            shutil.rmtree(self.snapshot.parent, ignore_errors=True)


def count_rows(samples: Any) -> int | None:
    """Rows when cheap to know (a JSONL file's non-blank lines, a sized collection) — for
    the progress total; None otherwise."""
    if isinstance(samples, (str, Path)):
        p = Path(samples)
        if p.suffix in (".jsonl", ".ndjson") and p.is_file():
            with open(p, "rb") as f:
                return sum(1 for line in f if line.strip())
        return None
    try:
        return len(samples)
    except TypeError:
        return None


def written_by_run(src: Path, out: Path) -> bool:
    """True when ``src`` is inside the run folder ``out`` or is one of its files under
    another name (same device and inode: a hard link, a symlink)."""
    try:
        if not src.is_file() or not out.is_dir():
            return False
        if src.resolve().is_relative_to(out.resolve()):
            return True
        st = src.stat()
        return any(p.is_file() and (p.stat().st_dev, p.stat().st_ino) == (st.st_dev, st.st_ino) for p in out.iterdir())
    except OSError:
        return False
