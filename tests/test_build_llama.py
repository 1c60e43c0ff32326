"""tools/build_llama.py: llama.cpp is built for the CPU's vector instructions, never for AMX,
and the installed build is the one this CPU asks for (an AVX2 build on an AVX-512 CPU reads
prompts at 0.6× the speed: docs/local-judge.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("build_llama", ROOT / "tools" / "build_llama.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_llama"] = module
    spec.loader.exec_module(module)
    return module


build = _tool()

AVX2_HOST = "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 bmi2 fma f16c\n"
AVX512_AMX_HOST = (
    "flags\t\t: sse4_2 avx avx2 bmi2 fma f16c avx_vnni avx512f avx512cd avx512vl avx512dq avx512bw"
    " avx512vbmi avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16\n"
    "processor\t: 1\nflags\t\t: fpu\n"  # only the first flags line counts
)


def _options(cpuinfo: str) -> dict[str, str]:
    return dict(a[2:].split("=") for a in build.cmake_args(build.cpu_flags(cpuinfo)))


def test_an_avx512_cpu_gets_avx512_and_never_amx():
    opts = _options(AVX512_AMX_HOST)
    assert opts["GGML_NATIVE"] == "OFF"  # -march=native would turn AMX on
    assert {opts[o] for o in ("GGML_AVX512", "GGML_AVX512_VNNI", "GGML_AVX512_BF16", "GGML_AVX_VNNI")} == {"ON"}
    assert {opts[o] for o in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")} == {"OFF"}


def test_an_avx2_cpu_gets_no_instruction_it_lacks():
    opts = _options(AVX2_HOST)
    assert opts["GGML_AVX2"] == opts["GGML_FMA"] == "ON"
    assert opts["GGML_AVX512"] == opts["GGML_AVX_VNNI"] == "OFF"


def test_avx512_needs_every_flag_its_compiler_switches_need():
    opts = _options(AVX512_AMX_HOST.replace(" avx512dq", ""))
    assert opts["GGML_AVX512"] == "OFF"


def test_no_x86_flags_leaves_llama_cpp_its_own_defaults():
    assert build.cmake_args(build.cpu_flags("processor\t: 0\nFeatures\t: fp asimd\n")) == []


def test_the_cache_key_changes_with_the_flags(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    a = build.cache_dir("llama_cpp_python==0.3.36", ["-DGGML_AVX512=ON"])
    b = build.cache_dir("llama_cpp_python==0.3.36", ["-DGGML_AVX512=OFF"])
    assert a != b and a.parent == b.parent == tmp_path / "unified-rag-eval" / "llama-cpp-python"
    assert a.name.startswith("0.3.36-")


def test_a_build_missing_an_asked_instruction_set_is_named():
    args = ["-DGGML_AVX2=ON", "-DGGML_AVX512=ON"]
    assert build.check_build(args, "CPU : AVX = 1 | AVX2 = 1 | FMA = 1 |") == ["GGML_AVX512"]
    assert build.check_build(args, "CPU : AVX2 = 1 | AVX512 = 1 |") == []
    # a user's later -DGGML_AVX512=OFF (CMAKE_ARGS appended after ours) is what CMake builds
    assert build.check_build([*args, "-DGGML_AVX512=OFF"], "CPU : AVX2 = 1 |") == []


@pytest.mark.llama
def test_the_installed_llama_cpp_is_built_for_this_cpu():
    """The test environment's llama.cpp reports every checked instruction set this CPU has."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="needs the extra `local-llm`")
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo")
    args = build.cmake_args(build.cpu_flags(cpuinfo.read_text()))
    assert build.check_build(args, llama_cpp.llama_print_system_info().decode()) == []
