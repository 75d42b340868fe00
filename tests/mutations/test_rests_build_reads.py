"""A C/C++ result rests on the files its build read outside the root (issue 33, adversarial round
4): a test including a header from a vendored folder beside the project (`-I` outside the root)
decided SURVIVED; the header changed, and the cached SURVIVED was replayed where a fresh run
KILLED. The build's depfiles are its read report: every file they name outside the root is keyed
by content. Real g++, make and doctest."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write
from test_cpp_compiled import MAKEFILE, c_repo, items, mutation

LIMITED = '#include <doctest/doctest.h>\n#include "calc.h"\n#include <limit.h>\n' \
          'TEST_CASE("add") { CHECK(add(LIMIT, LIMIT) == 2 * LIMIT); }\n'


def test_a_header_outside_the_root_the_build_read_changed_is_no_cache_hit(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    outside = tmp_path / "vendor"
    write(outside, "include/limit.h", "#define LIMIT 2\n")     # 2 + 2 == 2 * 2: a * b survives
    root = c_repo(tmp_path, monkeypatch, mutation("add-times", "src/calc.c", "a + b", "a * b"),
                  makefile=MAKEFILE.replace("CXXFLAGS = -O0", f"CXXFLAGS = -O0 -I{outside}/include"))
    write(root, "tests/test_calc.cpp", LIMITED)
    git(root, "commit", "-qam", "a limit from the vendored folder")
    first = items(mutate(root, "--json"))["add-times"]
    assert first["verdict"] == "SURVIVED" and not first["cached"], first
    again = items(mutate(root, "--json"))["add-times"]
    assert again["verdict"] == "SURVIVED" and again["cached"], again      # nothing changed: a hit
    write(outside, "include/limit.h", "#define LIMIT 3\n")     # 3 * 3 != 6: a fresh run kills it
    after = items(mutate(root, "--json"))["add-times"]
    assert (after["verdict"], after["cached"]) == ("KILLED", False), after



NINJA_CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(calc CXX)
add_executable(t tests/t.cpp src/calc.cpp)
target_include_directories(t PRIVATE {outside}/include)
"""
NINJA_TEST = '#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n#include <limit.h>\n' \
             'int add(int a, int b);\nTEST_CASE("add") { CHECK(add(LIMIT, LIMIT) == 2 * LIMIT); }\n'
NINJA_GATE = ('gate: calc\nbuild: [sh, -c, "cmake -G Ninja -S . -B build >/dev/null && cmake --build build >/dev/null"]\n'
              'build_dir: build\ndriver:\n  type: command\n  run: [./build/t]\n  format: doctest\n  timeout: 60\n')


def test_a_header_outside_the_root_a_ninja_build_read_changed_is_no_cache_hit(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    # Ninja keeps the compiler's depfiles in build/.ninja_deps (`ninja -t deps` lists them), no .d file
    missing = [t for t in ("cmake", "ninja") if shutil.which(t) is None]
    if missing:
        message = f"not installed: {', '.join(missing)}"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    outside = tmp_path / "vendor"
    write(outside, "include/limit.h", "#define LIMIT 2\n")
    root = c_repo(tmp_path, monkeypatch, mutation("add-times", "src/calc.cpp", "a + b", "a * b"),
                  gate=NINJA_GATE)
    write(root, "src/calc.cpp", "int add(int a, int b) { return a + b; }\n")
    write(root, "tests/t.cpp", NINJA_TEST)
    write(root, "CMakeLists.txt", NINJA_CMAKE.format(outside=outside))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "cmake with ninja")
    first = items(mutate(root, "--json"))["add-times"]
    assert first["verdict"] == "SURVIVED" and not first["cached"], first
    write(outside, "include/limit.h", "#define LIMIT 3\n")
    after = items(mutate(root, "--json"))["add-times"]
    assert (after["verdict"], after["cached"]) == ("KILLED", False), after
