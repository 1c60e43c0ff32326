"""Install llama-cpp-python built for this CPU's vector instructions, and cache the build.

Why not pip's plain source build:

* ``GGML_NATIVE=ON`` (llama.cpp's default) compiles with ``-march=native``, which turns on
  AMX where the CPU advertises it. A virtual machine can advertise AMX while its kernel does
  not grant the tile state: on the machine this project is developed on, such a build dies
  with SIGILL (``tilezero``) on the first prompt. AMX is therefore never turned on here.
* ``GGML_NATIVE=OFF`` alone gives an AVX2 build: on a CPU with AVX-512 it reads prompts at
  about 40 tokens/s on 2 cores where the AVX-512 build reads about 67 (the same Q4_K_M model,
  ``docs/local-judge.md``). Reading prompts is half of a local judge's time.
* pip caches a wheel it built from a source archive under the archive's name, not under
  ``CMAKE_ARGS``: once any build is cached, a later install with other flags silently gets the
  cached build. So the wheel is built with ``--no-cache-dir`` into a cache of our own, keyed
  by the version and the flags, and installed from there.

The flags: llama.cpp's instruction-set options, each ON exactly when ``/proc/cpuinfo`` lists
every CPU flag it compiles for (``GGML_AVX512`` needs avx512f, cd, vl, dq and bw). Anywhere
without ``/proc/cpuinfo`` x86 flags (macOS, ARM) no options are passed: llama.cpp's own
defaults apply. A ``CMAKE_ARGS`` already set (``-DGGML_CUDA=on``) is appended: a later
``-D`` wins in CMake, and it is part of the cache key.

    python tools/build_llama.py            # build if needed, install, check what was built
    python tools/build_llama.py --flags    # print the CMAKE_ARGS for this CPU and exit
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# llama.cpp option → the /proc/cpuinfo flags its compiler switches need (ggml-cpu/CMakeLists.txt).
ISA_OPTIONS: dict[str, tuple[str, ...]] = {
    "GGML_SSE42": ("sse4_2",),
    "GGML_AVX": ("avx",),
    "GGML_AVX2": ("avx2",),
    "GGML_BMI2": ("bmi2",),
    "GGML_FMA": ("fma",),
    "GGML_F16C": ("f16c",),
    "GGML_AVX_VNNI": ("avx_vnni",),
    "GGML_AVX512": ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
    "GGML_AVX512_VBMI": ("avx512f", "avx512vbmi"),
    "GGML_AVX512_VNNI": ("avx512f", "avx512_vnni"),
    "GGML_AVX512_BF16": ("avx512f", "avx512_bf16"),
}
NEVER_ON = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")  # see the module docstring

# What llama_print_system_info() names for the options whose presence we check after install.
SYSTEM_INFO_NAMES = {"GGML_AVX2": "AVX2", "GGML_AVX512": "AVX512", "GGML_AVX512_VNNI": "AVX512_VNNI"}


def cpu_flags(cpuinfo: str) -> set[str]:
    """The x86 feature flags of the first ``flags`` line of a /proc/cpuinfo text (empty if none)."""
    match = re.search(r"^flags\s*:(.*)$", cpuinfo, re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def cmake_args(flags: set[str]) -> list[str]:
    """CMAKE_ARGS for these CPU flags: every ISA option ON iff all its flags are present, AMX off.

    No flags (not x86 Linux) → no arguments, so llama.cpp's own defaults apply.
    """
    if not flags:
        return []
    isa = [f"-D{opt}={'ON' if set(needs) <= flags else 'OFF'}" for opt, needs in ISA_OPTIONS.items()]
    return ["-DGGML_NATIVE=OFF", *isa, *(f"-D{opt}=OFF" for opt in NEVER_ON)]


def pinned_requirement() -> str:
    """The llama-cpp-python pin from constraints.txt (the one place versions are fixed)."""
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if re.match(r"llama[-_]cpp[-_]python==", line.strip()):
            return line.strip()
    raise SystemExit("constraints.txt has no llama_cpp_python== pin")


def cache_dir(requirement: str, args: list[str]) -> Path:
    """``$XDG_CACHE_HOME/unified-rag-eval/llama-cpp-python/<version>-<sha256(args)[:12]>``."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(" ".join(args).encode()).hexdigest()[:12]
    version = requirement.split("==", 1)[1]
    return base / "unified-rag-eval" / "llama-cpp-python" / f"{version}-{key}"


def build_wheel(requirement: str, args: list[str], target: Path) -> Path:
    """Build the wheel from source with these flags into ``target`` (moved there when whole)."""
    print(
        f"building {requirement} from source for this CPU (about 5–8 minutes on 2 cores): {' '.join(args)}", flush=True
    )
    env = {**os.environ, "CMAKE_ARGS": " ".join(args)}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-cache-dir"]
        subprocess.run([*cmd, "--no-binary", "llama-cpp-python", requirement, "-w", tmp], env=env, check=True)
        (wheel,) = Path(tmp).glob("*.whl")
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent))
        shutil.move(str(wheel), staging / wheel.name)
        try:
            staging.rename(target)  # atomic: a killed build leaves no half-filled cache entry
        except OSError:  # another build of the same key finished first: use its wheel
            shutil.rmtree(staging, ignore_errors=True)
    return next(target.glob("*.whl"))


def installed_system_info() -> str:
    """llama.cpp's own account of the instruction sets the installed build uses."""
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def check_build(args: list[str], system_info: str) -> list[str]:
    """The checked options the build was asked for but llama.cpp does not report (empty = fine).
    An option given twice counts as its last value, as CMake takes it (a user's ``-D…=OFF``)."""
    last = dict(a[2:].split("=", 1) for a in args if a.startswith("-D") and "=" in a)
    asked = {opt for opt, value in last.items() if value.upper() == "ON"}
    return [opt for opt, name in SYSTEM_INFO_NAMES.items() if opt in asked and f"{name} = 1" not in system_info]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flags", action="store_true", help="print the CMAKE_ARGS for this CPU and exit")
    opts = parser.parse_args()
    cpuinfo = Path("/proc/cpuinfo")
    args = cmake_args(cpu_flags(cpuinfo.read_text()) if cpuinfo.exists() else set())
    args += os.environ.get("CMAKE_ARGS", "").split()  # a user's own (-DGGML_CUDA=on): later -D wins, and keys the cache
    if opts.flags:
        print(" ".join(args))
        return 0
    requirement = pinned_requirement()
    target = cache_dir(requirement, args)
    wheels = sorted(target.glob("*.whl")) if target.is_dir() else []
    wheel = wheels[0] if wheels else build_wheel(requirement, args, target)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--no-deps", "--force-reinstall", str(wheel)], check=True)  # this build, not another
    subprocess.run([*pip, "-c", str(ROOT / "constraints.txt"), str(wheel)], check=True)  # its dependencies
    info = installed_system_info()
    missing = check_build(args, info)
    print(f"llama-cpp-python installed from {wheel}: {info.strip()}")
    if missing:
        print(f"error: the build lacks {', '.join(missing)} although this CPU has it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
