"""The environments of isolated backends: one per (framework, version, Python), built with uv.

Where. ``$UNIFIED_ENVS_DIR`` if set, else ``<user cache>/unified-rag-eval/envs``
(``platformdirs.user_cache_path``). An environment's folder is named by its key,
``<framework>-<version>-py<major.minor>``, and holds ``unified-env.json`` (what was asked,
what was installed, when, how long it took). A folder without that file is no environment.

How. On first use: ``uv venv`` with the running Python, then ``uv pip install`` of the
framework's requirement, both into ``.building-<key>-<random>`` beside the final folder;
only a complete build is renamed to its key (one ``rename``), so a failed, interrupted or
killed build never leaves a half-built environment that looks usable. A lock file per key
(``flock``) keeps two runs from building the same one at once; the second then reuses it.
uv's own cache (``~/.cache/uv``) makes a rebuild take seconds.

Indexes. The same package indexes as the user's pip: ``pip config list`` and the
``PIP_INDEX_URL`` / ``PIP_EXTRA_INDEX_URL`` / ``PIP_FIND_LINKS`` variables become uv's
``--index-url`` / ``--extra-index-url`` / ``--find-links``, with
``--index-strategy unsafe-best-match`` — pip's rule (the best version across all indexes),
where uv's default would take a package only from the first index that has it. pip's
``constraint`` files are *not* applied: an isolated environment exists to hold versions
the main environment's constraints exclude.

Failures. uv's error becomes one line naming the requirement and the indexes
(``EnvBuildError``); uv's progress lines go to the ``progress`` callback as they come.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

ENV_FILE = "unified-env.json"
_KEY_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


class EnvBuildError(RuntimeError):
    """An environment could not be built; the message is one line for the user."""


@dataclass(frozen=True)
class EnvSpec:
    """What one isolated environment holds: ``framework`` at ``version`` (``None``: the
    newest the indexes offer, pinned in the key as ``latest``), with ``pins`` beside it,
    for the Python ``python`` (major.minor of the running interpreter)."""

    framework: str
    version: str | None
    pins: tuple[str, ...] = ()
    python: str = f"{sys.version_info.major}.{sys.version_info.minor}"

    @property
    def key(self) -> str:
        return _KEY_SAFE.sub("_", f"{self.framework}-{self.version or 'latest'}-py{self.python}")

    @property
    def requirements(self) -> list[str]:
        main = self.framework if self.version is None else f"{self.framework}=={self.version}"
        return [main, *self.pins]


def envs_root() -> Path:
    """Where the environments live (the module docstring)."""
    if os.environ.get("UNIFIED_ENVS_DIR"):
        return Path(os.environ["UNIFIED_ENVS_DIR"])
    import platformdirs

    return platformdirs.user_cache_path("unified-rag-eval", appauthor=False) / "envs"


def env_python(folder: Path) -> Path:
    return folder / "bin" / "python"


def uv_binary() -> str:
    """uv beside the running Python (it is a dependency of the package), else on PATH."""
    here = Path(sys.executable).parent / "uv"
    found = str(here) if here.exists() else shutil.which("uv")
    if found is None:
        raise EnvBuildError("isolated backends need uv: pip install uv")
    return found


# ---------------------------------------------------------------- pip's indexes


def pip_indexes() -> dict[str, list[str]]:
    """``{"index-url": [...], "extra-index-url": [...], "find-links": [...]}`` as the user's
    pip would use them (configuration files, then environment variables)."""
    out: dict[str, list[str]] = {"index-url": [], "extra-index-url": [], "find-links": []}
    try:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        option = key.rpartition(".")[2]
        if option in out:
            for v in value.strip().strip("'\"").split():
                if v not in out[option]:
                    out[option].append(v)
    return out


def uv_index_args(indexes: dict[str, list[str]]) -> list[str]:
    args = ["--index-strategy", "unsafe-best-match"]
    for url in indexes["index-url"][-1:]:  # pip keeps one index-url: the last setting wins
        args += ["--index-url", url]
    for option in ("extra-index-url", "find-links"):
        for url in indexes[option]:
            args += [f"--{option}", url]
    return args


def describe_indexes(indexes: dict[str, list[str]]) -> str:
    urls = (indexes["index-url"][-1:] or ["https://pypi.org/simple"]) + indexes["extra-index-url"]
    return ", ".join(urls + [f"find-links {u}" for u in indexes["find-links"]])


# ---------------------------------------------------------------- build, find, list, remove


def find_env(spec: EnvSpec) -> Path | None:
    """The complete environment for ``spec``, or None."""
    folder = envs_root() / spec.key
    return folder if (folder / ENV_FILE).is_file() and env_python(folder).exists() else None


def ensure_env(spec: EnvSpec, progress: Callable[[str], None] | None = None) -> Path:
    """The environment for ``spec``, built first if there is none (the module docstring)."""
    found = find_env(spec)
    if found is not None:
        return found
    root = envs_root()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".{spec.key}.lock"):
        found = find_env(spec)  # another run built it while we waited
        if found is not None:
            return found
        for leftover in root.glob(f".building-{spec.key}-*"):  # a build killed (-9) mid-way; we hold its lock
            shutil.rmtree(leftover, ignore_errors=True)
        return _build(spec, root, progress or _to_stderr)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build(spec: EnvSpec, root: Path, progress: Callable[[str], None]) -> Path:
    """Build into a temporary folder, then rename it to the key (never half-built)."""
    tmp = root / f".building-{spec.key}-{secrets.token_hex(4)}"
    indexes = pip_indexes()
    started = time.monotonic()
    label = f"[env {spec.framework} {spec.version or 'latest'}]"
    progress(f"{label} building an isolated environment in {root / spec.key} (once; reused after)")
    try:
        _uv(["venv", "--quiet", "--python", sys.executable, str(tmp)], spec, indexes, progress, label)
        _uv(
            ["pip", "install", "--compile-bytecode", "--python", str(env_python(tmp)), *uv_index_args(indexes)]
            + spec.requirements,
            spec,
            indexes,
            progress,
            label,
        )
        record = {
            "framework": spec.framework,
            "version": spec.version,
            "installed": _installed_version(tmp, spec.framework),
            "requirements": spec.requirements,
            "python": spec.python,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.monotonic() - started, 1),
        }
        (tmp / ENV_FILE).write_text(json.dumps(record, indent=2) + "\n")
        os.rename(tmp, root / spec.key)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    progress(f"{label} ready in {record['build_seconds']} s")
    return root / spec.key


def _uv(
    args: list[str], spec: EnvSpec, indexes: dict[str, list[str]], progress: Callable[[str], None], label: str
) -> None:
    """Run uv, passing its progress lines on; its failure as one ``EnvBuildError`` line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    proc = subprocess.Popen([uv_binary(), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if line.strip():
            progress(f"{label} {line.rstrip()}")
    if proc.wait() != 0:
        raise EnvBuildError(
            f"could not install {' '.join(spec.requirements)} from {describe_indexes(indexes)}: {_reason(lines)}"
        )


def _reason(lines: list[str]) -> str:
    """uv's own words, cut to the lines that say why (its "error:", "cause:", "Caused by:"
    and "hint:" lines: "not found in the cache", "the network was disabled")."""
    said = [ln.strip() for ln in lines if ln.strip()]
    errors = [ln for ln in said if ln.startswith(("error:", "cause:", "Caused by:", "hint:", "×", "╰─▶"))]
    picked = errors or said[-2:] or ["uv failed without a message"]
    text = " ".join(picked)
    return text if len(text) <= 600 else text[:597] + "..."


def _installed_version(folder: Path, framework: str) -> str | None:
    code = f"from importlib.metadata import version; print(version({framework!r}))"
    done = subprocess.run([str(env_python(folder)), "-I", "-c", code], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or None if done.returncode == 0 else None


def list_envs() -> list[dict[str, Any]]:
    """Every complete environment: its record, its key, its folder and its size on disk."""
    root = envs_root()
    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        record_file = folder / ENV_FILE
        if folder.name.startswith(".") or not record_file.is_file():
            continue
        try:
            record = json.loads(record_file.read_text())
        except (OSError, ValueError):
            record = {}
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
        out.append({**record, "key": folder.name, "path": str(folder), "bytes": size})
    return out


def remove_env(key: str) -> Path:
    """Remove the environment named ``key`` (as ``list_envs`` shows it); KeyError if none."""
    folder = envs_root() / key
    if key.startswith(".") or "/" in key or not (folder / ENV_FILE).is_file():
        raise KeyError(f"no isolated environment '{key}' in {envs_root()}")
    with _locked(envs_root() / f".{key}.lock"):
        doomed = folder.with_name(f".removing-{key}-{secrets.token_hex(4)}")
        os.rename(folder, doomed)  # gone as one step; the files after
        shutil.rmtree(doomed, ignore_errors=True)
    return folder
