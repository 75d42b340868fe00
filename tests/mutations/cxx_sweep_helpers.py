"""Small C++ projects for `mutate sweep`'s C/C++ tests, each built once per session and copied
per test (the build folder with it, so the workers seed from it): a Makefile project with
depfiles and a CMake project with compile_commands.json, both with a doctest suite."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cpp_helpers import require_cpp
from mutate_helpers import git, require_git, write

HEADER = "int scale(int x);\nbool is_big(int x);\nint untouched(int a);\n"
# The change the sweep is asked about turns BEFORE into AFTER (lines 2 and 3).
BEFORE = '#include "calc.h"\nint scale(int x) { return x; }\nbool is_big(int x) { return x > 100; }\n' \
         "int untouched(int a) { return a + 1; }\n"
AFTER = '#include "calc.h"\nint scale(int x) { return x * 1; }\nbool is_big(int x) { return x >= 10; }\n' \
        "int untouched(int a) { return a + 1; }\n"
MAIN = "#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n"
TESTS = """\
#include <doctest/doctest.h>
#include "calc.h"
TEST_CASE("scale") { CHECK(scale(3) == 3); }
TEST_CASE("is_big") { CHECK(is_big(100)); CHECK(!is_big(1)); }
TEST_CASE("untouched") { CHECK(untouched(1) == 2); }
"""
MAKEFILE = """\
OBJS = build/calc.o build/test_calc.o lib/doctest_main.o
build/tests: $(OBJS)
\t$(CXX) -o $@ $(OBJS)
build/calc.o: src/calc.cpp
\t@mkdir -p build
\t$(CXX) -O2 -Isrc -MMD -MP -c src/calc.cpp -o build/calc.o
build/%.o: tests/%.cpp
\t@mkdir -p build
\t$(CXX) -O0 -Isrc -c $< -o $@
-include build/calc.d
"""
# Each run of the gate logs the line of src/calc.cpp it ran on, then runs the suite.
RUN = 'sed -n "$CXXSWEEP_LINE"p src/calc.cpp >> "$CXXSWEEP_RUNS"\nexec ./build/tests "$@"\n'
GATE = """\
gate: calc
build: [make, -s]
build_dir: build
driver:
  type: command
  run: [sh, tools/run.sh]
  format: doctest
  timeout: 60
"""
CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(calc CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
add_executable(tests tests/main.cpp tests/test_calc.cpp src/calc.cpp)
target_include_directories(tests PRIVATE src)
"""
CMAKE_GATE = """\
gate: calc
build: [sh, -c, "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build >/dev/null"]
build_dir: build
driver:
  type: command
  run: [./build/tests]
  format: doctest
  timeout: 60
"""


def _template(base: Path, cmake: bool) -> Path:
    root = base / "repo"
    files = {"src/calc.h": HEADER, "src/calc.cpp": BEFORE, "tests/main.cpp": MAIN, "tests/test_calc.cpp": TESTS,
             ".gitignore": "build/\n"}
    files.update({"CMakeLists.txt": CMAKE, "gates/calc.yaml": CMAKE_GATE} if cmake else
                 {"Makefile": MAKEFILE, "tools/run.sh": RUN, "gates/calc.yaml": GATE,
                  "src/k.cu": "__global__ void k(int* x, int n) { if (threadIdx.x < n) x[threadIdx.x] += 1; }\n"})
    for rel, text in files.items():
        write(root, rel, text)
    if not cmake:   # doctest's main, compiled once per session and committed: no worker compiles it again
        (root / "lib").mkdir()
        subprocess.run(["g++", "-O0", "-c", "tests/main.cpp", "-o", "lib/doctest_main.o"], cwd=root, check=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    write(root, "src/calc.cpp", AFTER)
    git(root, "commit", "-q", "-am", "scale and is_big")
    build = (["sh", "-c", "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build"]
             if cmake else ["make", "-s"])
    subprocess.run(build, cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture(scope="session")
def make_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_git()
    require_cpp()
    return _template(tmp_path_factory.mktemp("cxx-make"), cmake=False)


@pytest.fixture(scope="session")
def cmake_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_git()
    require_cpp()
    if shutil.which("cmake") is None:
        message = "cmake is not installed"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    return _template(tmp_path_factory.mktemp("cxx-cmake"), cmake=True)


def copy(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The template's repository (its build with it) in this test's own folder; gate runs logged
    to `tmp_path/runs.log`, each as the line of src/calc.cpp `line` it ran on."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CXXSWEEP_RUNS", str(tmp_path / "runs.log"))
    monkeypatch.setenv("CXXSWEEP_LINE", "2,3")
    root = tmp_path / "repo"
    shutil.copytree(template, root, symlinks=True)
    return root


def runs(tmp_path: Path) -> list[str]:
    log = tmp_path / "runs.log"
    return log.read_text().splitlines() if log.is_file() else []
