"""What every ``unified-eval`` command shares: the two consoles, the one-line user error
(exit code 2), our warnings as plain lines, plugin loading, and the input flags' options.

``app`` (the commands) and ``run`` (the run/compare/migrate flag table) both import this
module; it imports neither, so the CLI's modules point one way.
"""

from __future__ import annotations

import contextlib
import errno
import sys
from pathlib import Path
from typing import Any, Iterator

import typer
import typer.core
from rich.console import Console

from unified.console import console_width

# the unified package: our own warnings and plugin frames are told apart by this path
PACKAGE_DIR = Path(__file__).resolve().parents[1]

# a pipe or CI log is not 80 columns wide: give tables room instead of truncating names
# markup off: user text (errors, ids) may contain [brackets]
out_console = Console(width=console_width(sys.stdout), markup=False)
err_console = Console(stderr=True, width=console_width(sys.stderr), markup=False)


class UserError(Exception):
    """Shown as one line, exit code 2."""


# OS errors of a write the user can act on: full, too large, read-only, no permission, quota
_DISK_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EIO}


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Usage and setup errors, and any write error, as one ``error:`` line and exit 2."""
    from unified.adapters import BackendUnavailableError
    from unified.metrics import UnknownMetricError
    from unified.run.runfolder import RunFolderError
    from unified.sample import SampleError

    try:
        yield
    except (
        UserError,
        UnknownMetricError,
        BackendUnavailableError,
        FileNotFoundError,
        SampleError,
        ValueError,
        KeyError,
        ImportError,
        RunFolderError,
    ) as e:
        msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        err_console.print(f"error: {msg}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except OSError as e:  # a write the files module did not make (a library's): still one line
        if e.errno not in _DISK_ERRNOS:
            raise
        from unified.data.files import os_error

        line = f"error: {os_error(e.filename or '?', e, 'write')}"
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


@contextlib.contextmanager
def plain_warnings() -> Iterator[None]:
    """Our own warnings (unknown field kept in metadata, ...) as one ``warning: ...`` line,
    not Python's ``file:line: UserWarning`` plus a source line; others unchanged."""
    import warnings

    here = str(PACKAGE_DIR)
    shown = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if str(Path(filename).resolve()).startswith(here):
            err_console.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def read_options(
    map_: list[str] | None, src_format: str | None, label: list[str] | None, list_sep: str | None
) -> dict[str, Any]:
    """read_samples' keyword options from the shared --map/--from/--label/--list-sep flags."""
    from unified.data.convert import split_from

    fmt, layout = split_from(src_format)
    return {
        "mapping": parse_mapping_flags(map_),
        "fmt": fmt,
        "layout": layout,
        "labels": label or None,
        "list_sep": list_sep,
    }


def split_list(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def load_plugins(load: Any, plugins: str | None) -> None:
    """A plugin that fails to import is the user's error: one line naming the plugin and
    where it failed, not a traceback (nor a bare "No module named x")."""
    import traceback

    ours = str(PACKAGE_DIR)
    for mod in split_list(plugins):
        try:
            load(mod)
        except Exception as e:
            tb = traceback.extract_tb(e.__traceback__)
            where = next(
                (
                    f" at {Path(fr.filename).name}:{fr.lineno}"
                    for fr in reversed(tb)
                    if not fr.filename.startswith(("<", ours)) and "importlib" not in fr.filename
                ),
                "",
            )
            if isinstance(e, SyntaxError) and e.filename and e.lineno:
                where = f" at {Path(e.filename).name}:{e.lineno}"
            raise UserError(f"--plugins {mod}: {type(e).__name__}: {e}{where}") from None


def parse_mapping_flags(map_: list[str] | None) -> dict[str, str] | None:
    if not map_:
        return None
    from unified.data.io import parse_mapping

    return parse_mapping(map_)


def _one_help_style(params: list[Any]) -> list[Any]:
    """A switch shows no ``<bool>`` (it takes no value); an argument shows its NAME like the
    options' metavars (FILE, DIR), not ``<path>``."""
    for p in params:
        if getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""
        elif isinstance(p, typer.core.TyperArgument) and p.metavar is None:
            p.metavar = (p.name or "").upper()
    return params


def _takes_value(p: Any) -> bool:
    return not (p.is_flag or p.count)


def given_twice(params: list[Any], args: list[str]) -> str | None:
    """The refusal of an option that keeps one value given twice with two values — click
    would keep the last without a word (``--out a --out b`` wrote b alone; ``--fail-under``
    gated on its last value before it repeated) — or of an on/off pair given both ways
    (``--resume --no-resume``); None when
    there is none. Options that repeat (``multiple``: lists, merged) and counters are
    left alone, and so is the same value given twice. ``args`` are read as click reads
    them: ``--opt VALUE``, ``--opt=VALUE``, ``-o VALUE``, ``-oVALUE``, combined short
    flags (``-qv``), nothing after ``--``; an unknown option is left for click to name."""
    # typer builds its options on its own copy of click: an option is told by its kind
    options = [p for p in params if p.param_type_name == "option" and not p.multiple and not p.count]
    by_opt = {o: p for p in options for o in (*p.opts, *p.secondary_opts)}
    seen: dict[str, tuple[str, Any]] = {}  # parameter -> (the option as written, its value)
    for opt, given in _given(by_opt, args):
        p = by_opt[opt]
        value: Any = given if _takes_value(p) else opt not in p.secondary_opts  # a flag: which way it was set
        if p.name in seen and seen[p.name][1] != value:
            first, before = seen[p.name]
            if _takes_value(p):
                return f"{opt} is given twice, {before!r} and {value!r}: it keeps one value; give it once"
            return f"{first} and {opt} are both given; give one"
        seen.setdefault(str(p.name), (opt, value))
    return None


def _given(by_opt: dict[str, Any], args: list[str]) -> Iterator[tuple[str, str | None]]:
    """(option as written, its value or None) for each known option in ``args``."""
    i = 0
    while i < len(args):
        tok, i = args[i], i + 1
        if tok == "--":
            return
        if tok.startswith("--"):
            opt, eq, value = tok.partition("=")
            p = by_opt.get(opt)
            if p is None:
                continue  # unknown: click names it
            if not _takes_value(p):
                yield opt, None
                continue
            if not eq:  # --opt VALUE: the next token is the value, whatever it looks like
                value, i = (args[i] if i < len(args) else ""), i + 1
            yield opt, value
        elif tok.startswith("-") and len(tok) > 1:
            for j in range(1, len(tok)):  # -qv: two flags; -oDIR: -o with DIR
                p = by_opt.get("-" + tok[j])
                if p is None:
                    break
                if not _takes_value(p):
                    yield "-" + tok[j], None
                    continue
                rest = tok[j + 1 :]
                if not rest:
                    rest, i = (args[i] if i < len(args) else ""), i + 1
                yield "-" + tok[j], rest
                break


class Command(typer.core.TyperCommand):
    """A command in the one help style (``_one_help_style``) that refuses an option given
    twice when it keeps one value (``given_twice``): one ``error:`` line, exit 2."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _one_help_style(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing and (why := given_twice(self.get_params(ctx), args)):
            err_console.print(f"error: {why}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(2)
        return super().parse_args(ctx, args)


def label_cuts(specs: list[str] | None) -> dict[str, float]:
    """``--label-cut`` (repeatable) as {canonical metric: cut}: the same metric cut twice
    at two places is refused (``UserError`` naming both), at one place is one cut."""
    from unified.analysis.verdict import parse_label_cuts

    cuts: dict[str, float] = {}
    written: dict[str, str] = {}
    try:
        for spec in specs or []:
            ((name, cut),) = parse_label_cuts([spec]).items()
            if name in cuts and cuts[name] != cut:
                raise UserError(f"--label-cut: {name} is cut twice, '{written[name]}' and '{spec}'; give one cut")
            cuts[name] = cut
            written.setdefault(name, spec)
    except ValueError as e:
        raise UserError(str(e)) from None
    return cuts


class Group(typer.core.TyperGroup):
    """A command group (``unified-eval``, ``cache``) in the one help style."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _one_help_style(super().get_params(ctx))


class App(typer.Typer):
    """``typer.Typer`` whose groups and commands use the one help style."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)
