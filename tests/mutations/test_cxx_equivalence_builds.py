"""Compiler equivalence judged over every object the gates' builds make of a file (issue 33,
adversarial round 4): the commands equivalence compiles must be the builds' own, every one of
them. A second gate building the file with other flags, a test unit that #includes the source
under CMake with Ninja (no depfile left to read), and a compile database of another
configuration each made a mutant the gates kill EQUIVALENT before any gate ran. Real g++, make,
cmake and ninja."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from cpp_helpers import require_cpp
from mutate_helpers import write
from test_cxx_sweep import InPlace

from redfirst.mutations.cxx_equivalence import Equivalence, find_commands

LIB = "int pick(int x) {\n#ifdef FAST\n  return x > 1;\n#else\n  return x > 2;\n#endif\n}\n"
FAST_MAKEFILE = """\
build/fast.o: src/lib.cpp
\t@mkdir -p build
\tg++ -O2 -DFAST -MMD -c src/lib.cpp -o build/fast.o
"""
PLAIN_BUILD = "mkdir -p out && g++ -O2 -MMD -c src/lib.cpp -o out/plain.o\n"


def _gate(build: tuple[str, ...], build_dir: str) -> SimpleNamespace:
    """What find_commands reads of a Gate: its build, where it writes, its environment."""
    return SimpleNamespace(id=build_dir, build=build, build_dir=build_dir, build_timeout=60.0,
                           driver=SimpleNamespace(env={}))


def _said(root: Path, gates: list[SimpleNamespace], mutant: bytes, original: bytes) -> tuple[object, object]:
    commands = find_commands(root, "src/lib.cpp", gates, space=InPlace(root))  # type: ignore[arg-type]
    tce = Equivalence(InPlace(root), "src/lib.cpp", commands)
    source = (root / "src/lib.cpp").read_bytes()
    said = tce.judge("mutant", source.replace(original, mutant))
    assert (root / "src/lib.cpp").read_bytes() == source          # the tree as it was
    return commands, said


def test_a_mutant_only_another_gates_build_compiles_is_not_equivalent(tmp_path: Path):
    # gate fast builds with -DFAST through make; gate plain compiles the #else branch by a script
    require_cpp()
    write(tmp_path, "src/lib.cpp", LIB)
    write(tmp_path, "Makefile", FAST_MAKEFILE)
    write(tmp_path, "build.sh", PLAIN_BUILD)
    subprocess.run(["make", "-s"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["sh", "build.sh"], cwd=tmp_path, check=True, capture_output=True)
    gates = [_gate(("make", "-s"), "build"), _gate(("sh", "build.sh"), "out")]
    commands, said = _said(tmp_path, gates, b"x >= 2", b"x > 2")
    assert said is None, said                        # the plain build's object changes: the gates decide
    assert isinstance(commands, str) and "out/plain.o" in commands, commands
    # the fast gate alone: its one compile is every object, and the #else branch is not in it
    commands, said = _said(tmp_path, gates[:1], b"x >= 2", b"x > 2")
    assert not isinstance(commands, str), commands
    assert said is not None and said[0] == "EQUIVALENT", said


def test_a_compile_database_of_another_configuration_is_not_the_builds_command(tmp_path: Path):
    # compile_commands.json says -DFAST (another configuration's, kept for an editor); the gate's
    # build compiles without it into the same object path
    require_cpp()
    write(tmp_path, "src/lib.cpp", LIB)
    write(tmp_path, "build.sh", "mkdir -p build && g++ -O2 -c src/lib.cpp -o build/lib.o\n")
    write(tmp_path, "compile_commands.json", json.dumps([{
        "directory": str(tmp_path), "file": "src/lib.cpp",
        "arguments": ["g++", "-O2", "-DFAST", "-c", "src/lib.cpp", "-o", "build/lib.o"]}]))
    subprocess.run(["sh", "build.sh"], cwd=tmp_path, check=True, capture_output=True)
    commands, said = _said(tmp_path, [_gate(("sh", "build.sh"), "build")], b"x >= 2", b"x > 2")
    assert said is None, said
    assert isinstance(commands, str) and "build/lib.o" in commands, commands


LIB_TESTED = "int pick(int x) { return x; }\n#ifdef TESTING\nint helper(int x) { return x > 1; }\n#endif\n"
INCLUDER = '#define TESTING\n#include "../src/lib.cpp"\nint main() { return helper(1); }\n'
CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(p CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
add_library(lib STATIC src/lib.cpp)
add_executable(t tests/t.cpp)
"""


def test_a_source_a_test_unit_includes_under_ninja_is_not_equivalent(tmp_path: Path):
    # Ninja keeps the compiler's depfiles in .ninja_deps: no .d file says tests/t.cpp includes src/lib.cpp
    require_cpp()
    missing = [t for t in ("cmake", "ninja") if shutil.which(t) is None]
    if missing:
        message = f"not installed: {', '.join(missing)}"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    write(tmp_path, "src/lib.cpp", LIB_TESTED)
    write(tmp_path, "tests/t.cpp", INCLUDER)
    write(tmp_path, "CMakeLists.txt", CMAKE)
    build = ("sh", "-c", "cmake -G Ninja -S . -B build >/dev/null && cmake --build build >/dev/null")
    subprocess.run(build, cwd=tmp_path, check=True, capture_output=True)
    assert not list((tmp_path / "build").rglob("*.d"))
    commands, said = _said(tmp_path, [_gate(build, "build")], b"x >= 1", b"x > 1")
    assert said is None, said
    assert isinstance(commands, str) and "t.cpp.o" in commands, commands


def test_a_source_a_test_compiled_and_linked_in_one_step_includes_is_not_equivalent(tmp_path: Path):
    # `g++ -o out/t tests/t.cpp` compiles and links the includer at once: no object of its own, no depfile
    require_cpp()
    write(tmp_path, "src/lib.cpp", LIB_TESTED)
    write(tmp_path, "tests/t.cpp", INCLUDER)
    build = ("sh", "-c", "mkdir -p out && g++ -O0 -c src/lib.cpp -o out/lib.o && g++ -O0 -o out/t tests/t.cpp")
    write(tmp_path, "compile_commands.json", json.dumps([{
        "directory": str(tmp_path), "file": "src/lib.cpp",
        "arguments": ["g++", "-O0", "-c", "src/lib.cpp", "-o", "out/lib.o"]}]))
    subprocess.run(build, cwd=tmp_path, check=True, capture_output=True)
    commands, said = _said(tmp_path, [_gate(build, "out")], b"x >= 1", b"x > 1")
    assert said is None, said
    assert isinstance(commands, str) and "out/t" in commands and "tests/t.cpp" in commands, commands
