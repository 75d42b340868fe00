"""Compiler equivalence over every translation unit a build makes of a file (review of issue
37): a source compiled twice with different flags (one target with -DFAST, one without) is
EQUIVALENT only where every one of its objects is the original's. Real g++ and make."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from cpp_helpers import require_cpp
from mutate_helpers import write
from test_cxx_sweep import InPlace

from redfirst.mutations.cxx_equivalence import Equivalence, find_commands

LIB = "int pick(int x) {\n#ifdef FAST\n  return x > 1;\n#else\n  return 0;\n#endif\n}\n"
MAKEFILE = """\
all: build/plain.o build/fast.o
build/plain.o: src/lib.cpp
\t@mkdir -p build
\tg++ -O2 -c src/lib.cpp -o build/plain.o
build/fast.o: src/lib.cpp
\t@mkdir -p build
\tg++ -O2 -DFAST -c src/lib.cpp -o build/fast.o
"""


def _judged(root: Path, commands: object) -> tuple[str, str] | None:
    assert not isinstance(commands, str), commands
    tce = Equivalence(InPlace(root), "src/lib.cpp", commands)  # type: ignore[arg-type]
    assert tce.off is None, tce.off
    source = (root / "src/lib.cpp").read_bytes()
    return tce.judge("3:12:cxx_gt_to_ge", source.replace(b"x > 1", b"x >= 1"))


def test_a_mutant_only_one_compile_of_its_file_sees_is_not_equivalent_compile_commands(tmp_path: Path):
    require_cpp()
    write(tmp_path, "src/lib.cpp", LIB)
    entry = {"directory": str(tmp_path), "file": "src/lib.cpp"}
    write(tmp_path, "compile_commands.json", json.dumps([
        {**entry, "arguments": ["g++", "-O2", "-c", "src/lib.cpp", "-o", "build/plain.o"]},
        {**entry, "arguments": ["g++", "-O2", "-DFAST", "-c", "src/lib.cpp", "-o", "build/fast.o"]}]))
    commands = find_commands(tmp_path, "src/lib.cpp", [])
    assert not isinstance(commands, str) and len(commands) == 2, commands
    assert _judged(tmp_path, commands) is None       # a new object for the -DFAST unit: the gates decide


def test_a_mutant_only_one_compile_of_its_file_sees_is_not_equivalent_make(tmp_path: Path):
    require_cpp()
    write(tmp_path, "src/lib.cpp", LIB)
    write(tmp_path, "Makefile", MAKEFILE)
    subprocess.run(["make", "-s"], cwd=tmp_path, check=True, capture_output=True)
    gate = SimpleNamespace(id="g", build=("make", "-s"), build_dir="build", build_timeout=60.0,
                           driver=SimpleNamespace(env={}))   # what find_commands reads of a Gate
    commands = find_commands(tmp_path, "src/lib.cpp", [gate])  # type: ignore[list-item]
    assert not isinstance(commands, str) and len(commands) == 2, commands
    assert _judged(tmp_path, commands) is None


LIB_TESTED = "int pick(int x) { return x; }\n#ifdef TESTING\nint helper(int x) { return x > 1; }\n#endif\n"
INCLUDER = '#define TESTING\n#include "../src/lib.cpp"\nint main() { return helper(1); }\n'
INCLUDING = """\
all: build/lib.o build/t.o
build/lib.o: src/lib.cpp
\t@mkdir -p build
\tg++ -O2 -MMD -c src/lib.cpp -o build/lib.o
build/t.o: tests/t.cpp
\t@mkdir -p build
\tg++ -O2 -MMD -c tests/t.cpp -o build/t.o
-include build/lib.d build/t.d
"""


def test_a_source_another_unit_includes_has_equivalence_off_and_says_which(tmp_path: Path):
    # tests/t.cpp includes src/lib.cpp with TESTING defined: lib.o alone never sees helper's mutants
    require_cpp()
    write(tmp_path, "src/lib.cpp", LIB_TESTED)
    write(tmp_path, "tests/t.cpp", INCLUDER)
    write(tmp_path, "Makefile", INCLUDING)
    subprocess.run(["make", "-s"], cwd=tmp_path, check=True, capture_output=True)
    gate = SimpleNamespace(id="g", build=("make", "-s"), build_dir="build", build_timeout=60.0,
                           driver=SimpleNamespace(env={}))
    said = find_commands(tmp_path, "src/lib.cpp", [gate])  # type: ignore[list-item]
    assert isinstance(said, str) and "build/t.o" in said and "build/t.d" in said, said
    entry = {"directory": str(tmp_path), "file": "src/lib.cpp",
             "arguments": ["g++", "-O2", "-c", "src/lib.cpp", "-o", "build/lib.o"]}
    write(tmp_path, "build/compile_commands.json", json.dumps([entry]))     # CMake's way: the same answer
    other = SimpleNamespace(id="g", build=("true",), build_dir="build", build_timeout=60.0,
                            driver=SimpleNamespace(env={}))
    said = find_commands(tmp_path, "src/lib.cpp", [other])  # type: ignore[list-item]
    assert isinstance(said, str) and "build/t.o" in said, said
    own = find_commands(tmp_path, "tests/t.cpp", [gate])  # type: ignore[list-item]
    assert not isinstance(own, str), own          # the includer's own unit keeps equivalence


# nvcc names its intermediate file after its process id (tmpxft_<pid>_<n>-<k>_NAME.cudafe1.cpp) and
# keeps that name in the object's symbol table: the same source compiled twice differs there alone.
NVCC_LIKE = """\
g++ "$@" || exit $?
while [ "$1" != "-o" ]; do shift; done
printf 'tmpxft_%08x_00000000-6_lib.cudafe1.cpp' $$ >> "$2"
"""


def test_nvccs_process_named_temporary_file_does_not_turn_equivalence_off(tmp_path: Path):
    require_cpp()
    write(tmp_path, "src/lib.cpp", LIB)
    write(tmp_path, "tools/nvcc-like.sh", NVCC_LIKE)
    write(tmp_path, "compile_commands.json", json.dumps([{
        "directory": str(tmp_path), "file": "src/lib.cpp",
        "arguments": ["sh", "tools/nvcc-like.sh", "-O2", "-DFAST", "-c", "src/lib.cpp", "-o", "build/lib.o"]}]))
    commands = find_commands(tmp_path, "src/lib.cpp", [])
    tce = Equivalence(InPlace(tmp_path), "src/lib.cpp", commands)
    assert tce.off is None, tce.off
    source = (tmp_path / "src/lib.cpp").read_bytes()
    assert tce.judge("ge", source.replace(b"x > 1", b"x >= 1")) is None               # a new object
    said = tce.judge("lt", source.replace(b"x > 1", b"1 < x"))                         # the same code
    assert said is not None and said[0] == "EQUIVALENT", said
