"""`mutate sweep` over a C++ file grades each mutant against every gate whose build compiles the
file (issue 33, adversarial round 4): a gate whose build script compiles it without a depfile and
without naming it in its `build:` (`sh tools/plain.sh`) was not counted, so a mutant only its
tests kill read SURVIVED and a mutant in its #else branch EQUIVALENT. Which gates build a file is
what their builds do with it: run once with a witness appended, a gate builds the file where an
output it writes holds the witness. And a mutant one gate's build makes the same code of while
another gate compiles it and stays GREEN survived: it read EQUIVALENT. Real g++, make, doctest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cpp_helpers import require_cpp
from mutate_helpers import git, mutate, require_git, write

BEFORE = "int base(int x) { return x; }\nint pick(int x) {\n#ifdef FAST\n  return x > 1;\n#else\n  return x;\n#endif\n}\n"
AFTER = ("int base(int x) { return x + 1; }\nint pick(int x) {\n#ifdef FAST\n  return x > 1;\n#else\n"
         "  return x > 2;\n#endif\n}\n")
TESTS = """\
#include <doctest/doctest.h>
int base(int x);
int pick(int x);
#ifdef FAST
TEST_CASE("pick") { CHECK(pick(2)); CHECK(!pick(1)); }
#else
TEST_CASE("pick") { CHECK(pick(3)); }
TEST_CASE("base") { CHECK(base(1) == 2); }
#endif
"""
MAKEFILE = """\
build/t_fast: src/lib.cpp tests/t.cpp
\t@mkdir -p build
\tg++ -O0 -DFAST -MMD -c src/lib.cpp -o build/lib.o
\tg++ -O0 -DFAST -o build/t_fast build/lib.o tests/t.cpp lib/main.o
"""
PLAIN = "mkdir -p out\ng++ -O0 -c src/lib.cpp -o out/lib.o\ng++ -O0 -o out/t_plain out/lib.o tests/t.cpp lib/main.o\n"


def _gate(name: str, build: str, build_dir: str, run: str) -> str:
    return (f"gate: {name}\nbuild: {build}\nbuild_dir: {build_dir}\ndriver:\n  type: command\n  run: [{run}]\n"
            "  format: doctest\n  timeout: 60\n")


def test_a_gate_whose_build_script_compiles_the_file_unnamed_grades_its_mutants(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch):
    require_git()
    require_cpp()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    for rel, text in (("src/lib.cpp", BEFORE), ("tests/t.cpp", TESTS), ("Makefile", MAKEFILE),
                      ("tools/plain.sh", PLAIN), (".gitignore", "build/\nout/\n"),
                      ("tests/main.cpp", "#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n"),
                      ("gates/fast.yaml", _gate("fast", "[make, -s]", "build", "./build/t_fast")),
                      ("gates/plain.yaml", _gate("plain", "[sh, tools/plain.sh]", "out", "./out/t_plain"))):
        write(root, rel, text)
    (root / "lib").mkdir()
    subprocess.run(["g++", "-O0", "-c", "tests/main.cpp", "-o", "lib/main.o"], cwd=root, check=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "lib")
    write(root, "src/lib.cpp", AFTER)
    git(root, "commit", "-q", "-am", "base adds one, pick above two")
    proc = mutate(root, "sweep", "--since", "HEAD~1", "--json")
    doc = json.loads(proc.stdout)
    said = {i["id"]: (i["verdict"], i["reason"]) for i in doc["cxx"]["items"]}
    # base's `x + 1`: only plain's tests check base; pick's `x > 2`: only plain's build compiles it
    line1 = {k: v for k, v in said.items() if k.startswith("src-lib.cpp-1-")}
    line6 = {k: v for k, v in said.items() if k.startswith("src-lib.cpp-6-")}
    assert line1 and line6, said
    assert all(v[0] == "KILLED" for v in line1.values()), line1
    assert any(v[0] == "KILLED" for v in line6.values()), line6
    # `x >= 2`: fast's build makes the same code (EQUIVALENT there), plain's compiles it and its
    # tests stay GREEN: a survivor, never EQUIVALENT overall ("no test can tell it apart" is false)
    assert said["src-lib.cpp-6-12-cxx_gt_to_ge"][0] == "SURVIVED", said["src-lib.cpp-6-12-cxx_gt_to_ge"]
    assert "plain: SURVIVED" in said["src-lib.cpp-6-12-cxx_gt_to_ge"][1], said["src-lib.cpp-6-12-cxx_gt_to_ge"]
    assert not [v for v in line6.values() if v[0] == "EQUIVALENT"], line6
