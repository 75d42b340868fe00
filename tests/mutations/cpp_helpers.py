"""A tiny C++ project in a tmp git repository for the C++ mutation tests: doctest from the
Debian package, a Makefile with one object per source under `build/`, and wrappers that
log every compiler and build invocation (so a test counts what was rebuilt, not seconds)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mutate_helpers import git, require_git, write

ADD = "int add(int a, int b) { return a + b; }\n"
MUL = "int mul(int a, int b) { return a * b; }\n"
MAIN = "#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n"
TESTS = """\
#include <doctest/doctest.h>
int add(int a, int b);
int mul(int a, int b);
TEST_CASE("add") { CHECK(add(2, 3) == 5); CHECK(add(-1, 1) == 0); }
TEST_CASE("mul") { CHECK(mul(2, 3) == 6); }
"""
MAKEFILE = """\
CXX = sh tools/cxx
OBJS = build/add.o build/mul.o build/test_calc.o build/main.o
build/test_calc: $(OBJS)
\t$(CXX) -o $@ $(OBJS)
build/%.o: src/%.cpp
\t@mkdir -p build
\t$(CXX) -O0 -c $< -o $@
build/%.o: tests/%.cpp
\t@mkdir -p build
\t$(CXX) -O0 -c $< -o $@
"""
# Every compile (`-c SRC`) is logged as "worktree SRC" to $CPPMUT_COMPILES.
CXX = """\
prev=
for a in "$@"; do
  if [ "$prev" = "-c" ]; then echo "$PWD $a" >> "$CPPMUT_COMPILES"; fi
  prev=$a
done
exec g++ "$@"
"""
# Every build is logged as its worktree to $CPPMUT_BUILDS.
BUILD = 'echo "$PWD" >> "$CPPMUT_BUILDS"\nexec make -s\n'


def require_cpp() -> None:
    missing = [what for what, ok in (("g++", shutil.which("g++")), ("make", shutil.which("make")),
                                     ("doctest", Path("/usr/include/doctest/doctest.h").is_file())) if not ok]
    if missing:
        message = f"not installed: {', '.join(missing)}"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


def cpp_gate(gate_id: str, *args: str, build_dir: bool = True) -> str:
    text = f"gate: {gate_id}\nbuild: [sh, tools/build.sh]\n" + ("build_dir: build\n" if build_dir else "")
    return text + f"driver:\n  type: command\n  run: [./build/test_calc{''.join(', ' + a for a in args)}]\n" \
                  "  format: doctest\n  timeout: 60\n"


def make_cpp_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, build_dir: bool = True) -> Path:
    """A committed C++ repository with gate `calc` (all cases); the logs are
    `tmp_path/compiles.log` and `tmp_path/builds.log`."""
    require_git()
    require_cpp()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CPPMUT_COMPILES", str(tmp_path / "compiles.log"))
    monkeypatch.setenv("CPPMUT_BUILDS", str(tmp_path / "builds.log"))
    root = tmp_path / "repo"
    root.mkdir()
    for rel, text in (("src/add.cpp", ADD), ("src/mul.cpp", MUL), ("tests/main.cpp", MAIN),
                      ("tests/test_calc.cpp", TESTS), ("Makefile", MAKEFILE), ("tools/cxx", CXX),
                      ("tools/build.sh", BUILD), (".gitignore", "build/\n"),
                      ("gates/calc.yaml", cpp_gate("calc", build_dir=build_dir))):
        write(root, rel, text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    return root


def compiles(tmp_path: Path) -> list[tuple[str, str]]:
    """(worktree, source) of every compile so far, in order."""
    log = tmp_path / "compiles.log"
    return [tuple(line.rsplit(" ", 1)) for line in log.read_text().splitlines()] if log.is_file() else []  # type: ignore[misc]


def builds(tmp_path: Path) -> list[str]:
    log = tmp_path / "builds.log"
    return log.read_text().splitlines() if log.is_file() else []
