"""Output files, whole or not at all: every file the project writes goes through a temp
file beside it and a rename, and every OS error on the way is one line naming the file.

The rule (``atomic_path``)::

    write  →  .NAME.<pid>.tmp   (same folder, so the rename stays on one file system)
    fsync  →  os.replace(tmp, NAME)        on success: NAME is the new file, whole
    unlink(tmp)                            on any failure: NAME is the old file, untouched

A full disk, a file-size limit (``ulimit -f``), a read-only or vanished folder therefore
never leave a torn ``report.html`` or ``summary.json`` behind, nor a stray temp file;
the caller gets an ``OutputError`` (an ``OSError``) whose message is the one line to
show: ``cannot write DIR/report.html: no space left on the device``. The CLI turns it
into exit code 2.

Append-only files (``scores.jsonl`` while a run streams) cannot be renamed into place:
``unified.run.runfolder.AppendLog`` keeps their own rule (a line is whole or the next run
repairs it) and reports errors with the same ``os_error`` wording.

A file that several writers append to — processes that know nothing of each other, such
as two ``unified-eval review`` servers on one run folder, or two threads of one — takes
``append_line``'s rule: under an exclusive ``flock`` on the file itself, a line that does
not yet end the file with a newline (a torn last line, left by a writer killed mid-write)
is first closed with one, then the new line goes out in one ``write`` of an ``O_APPEND``
descriptor and is fsynced before the lock is released. Two writers' lines therefore never
interleave, and a line is on disk when the call returns.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from pathlib import Path
from typing import Any, Iterator

_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (the file-size limit, ulimit -f, or the file system's)",
    errno.ENOENT: "no such folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
}


class OutputError(OSError):
    """A file cannot be written (disk full, read-only, too large, ...): one line naming it."""


def os_error(path: Path | str, e: OSError, doing: str, cls: type[OutputError] = OutputError) -> OutputError:
    """``e`` as one line: ``cannot DOING PATH: REASON`` (the reason in words for the errors a
    user can act on, else the OS's own text)."""
    reason = _REASONS.get(e.errno or 0, e.strerror or str(e))
    return cls(f"cannot {doing} {path}: {reason}")


def temp_path(path: Path) -> Path:
    """The temp file ``atomic_path`` writes before renaming: hidden, beside ``path``."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path to write ``path``'s new content to; when the block ends without
    an error the temp file is synced and renamed over ``path``, otherwise it is removed
    (module docstring). An ``OSError`` becomes an ``OutputError`` naming ``path``."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(e, OutputError):
            raise
        raise os_error(path, e, "write") from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text(path: str | Path, text: str) -> Path:
    """``text`` (UTF-8) as ``path``, whole or not at all."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def write_json(path: str | Path, data: Any) -> Path:
    """``data`` as indented JSON in ``path``, whole or not at all."""
    return write_text(path, json.dumps(data, indent=2, default=str))


def append_line(path: str | Path, line: str) -> Path:
    """Append ``line`` (one JSONL line, no newline inside) to ``path`` by the rule in the
    module docstring; an ``OSError`` becomes an ``OutputError`` naming ``path``."""
    if "\n" in line or "\r" in line:
        raise ValueError("append_line writes one line: the text holds a line break")
    path = Path(path)
    data = (line + "\n").encode("utf-8")
    try:
        # each call opens its own descriptor: flock is per open file description, so two
        # threads of one process exclude each other as two processes do
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # close a torn last line: the new line stays whole
            if os.write(fd, data) != len(data):  # a short write: the disk filled mid-line
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(fd)
        finally:
            os.close(fd)  # closing releases the flock
    except OSError as e:
        raise os_error(path, e, "write") from None
    return path


__all__ = ["OutputError", "append_line", "atomic_path", "os_error", "temp_path", "write_json", "write_text"]
