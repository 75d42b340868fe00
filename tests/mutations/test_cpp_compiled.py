"""A C, C++ or CUDA mutation counts only where the build it was graded on compiled it: a header
mutation in a worker seeded with another worker's depfiles is rebuilt (KILLED, not a stale
SURVIVED), byte-identical outputs are EQUIVALENT, a file no build compiles is DISCARDED "not
built", and a link failure reads as its `undefined reference` line. Real cc, g++, make, doctest."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, require_git, write

from redfirst.mutations.builds import BuildStep, run_build, seed
from redfirst.verdict import EXIT_NO_DECISION, MutationOutcome, exit_code

HEADER = """\
#ifndef CALC_H
#define CALC_H
#ifdef __cplusplus
extern "C" {
#endif
static inline int scale(int x) { return x * 2; }
int add(int a, int b);
int twice_add(int a, int b);
#ifdef __cplusplus
}
#endif
#endif
"""
CALC = """\
#include "calc.h"
int add(int a, int b) {
    return a + b; /* the sum */
}
int twice_add(int a, int b) { return scale(add(a, b)); }
"""
UNUSED = "int unused(int x) { return x + 1; }\n"
MAIN = "#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n"
TESTS = """\
#include <doctest/doctest.h>
#include "calc.h"
TEST_CASE("add") { CHECK(add(2, 3) == 5); }
TEST_CASE("twice_add") { CHECK(twice_add(2, 3) == 10); }
"""
# Absolute include paths and depfiles, as real Makefiles have them: a copy of build/ in another
# worktree names the first worktree's header.
MAKEFILE = """\
CFLAGS = -O2 -I$(CURDIR)/include -MMD -MP
CXXFLAGS = -O0 -I$(CURDIR)/include -MMD -MP
OBJS = build/calc.o build/test_calc.o build/main.o
build/test_calc: $(OBJS)
\t$(CXX) -o $@ $(OBJS)
build/%.o: src/%.c
\t@mkdir -p build
\t$(CC) $(CFLAGS) -c $< -o $@
build/%.o: tests/%.cpp
\t@mkdir -p build
\t$(CXX) $(CXXFLAGS) -c $< -o $@
-include $(OBJS:.o=.d)
"""
GATE = ("gate: calc\nbuild: [make, -s]\nbuild_dir: build\ndriver:\n  type: command\n  run: [./build/test_calc]\n"
        "  format: doctest\n  timeout: 60\n")


def require_c() -> None:
    missing = [what for what, ok in (("cc", shutil.which("cc")), ("g++", shutil.which("g++")),
                                     ("make", shutil.which("make")),
                                     ("doctest", Path("/usr/include/doctest/doctest.h").is_file())) if not ok]
    if missing:
        message = f"not installed: {', '.join(missing)}"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


def mutation(mid: str, file: str, anchor: str, replace: str) -> str:
    return (f"- mutation: {mid}\n  file: {file}\n  anchor: {json.dumps(anchor)}\n  replace: {json.dumps(replace)}\n"
            "  expect: {red: [calc]}\n")


def c_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutations: str, makefile: str = MAKEFILE,
           gate: str = GATE) -> Path:
    require_git()
    require_c()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    for rel, text in (("include/calc.h", HEADER), ("src/calc.c", CALC), ("src/unused.c", UNUSED),
                      ("tests/main.cpp", MAIN), ("tests/test_calc.cpp", TESTS), ("Makefile", makefile),
                      (".gitignore", "build/\n"), ("gates/calc.yaml", gate), ("mutations/m.yaml", mutations)):
        write(root, rel, text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    return root


def items(proc) -> dict[str, dict]:  # type: ignore[no-untyped-def,type-arg]
    assert proc.stdout.strip(), proc.stderr
    return {i["id"]: i for i in json.loads(proc.stdout)["items"]}


def test_a_header_mutation_in_a_seeded_worker_is_rebuilt_and_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Two workers, one mutation each (the second worker's is the header's): its build directory may
    not be a copy of the first's (the depfiles name the first worktree's include/calc.h, so make
    would never see the second worktree's mutated header and run the baseline's objects: a false
    SURVIVED in no time)."""
    root = c_repo(tmp_path, monkeypatch, mutation("add-minus", "src/calc.c", "a + b", "a - b")
                  + mutation("scale-3", "include/calc.h", "x * 2", "x * 3"))
    proc = mutate(root, "--json", "--jobs", "2", "--no-cache")
    found = items(proc)
    assert {k: v["verdict"] for k, v in found.items()} == {"add-minus": "KILLED", "scale-3": "KILLED"}, proc.stderr


def test_byte_identical_outputs_are_equivalent_never_survived(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A comment-only edit and `+ 0` (folded by cc -O2) compile to the same object and binary: the
    tests cannot tell, and that says nothing about them. EQUIVALENT, exit 3 (no decision)."""
    root = c_repo(tmp_path, monkeypatch, mutation("comment", "src/calc.c", "/* the sum */", "/* a total */")
                  + mutation("plus-zero", "src/calc.c", "return a + b;", "return a + b + 0;"))
    proc = mutate(root, "--json", "--jobs", "1", "--no-cache")
    found = items(proc)
    for mid in ("comment", "plus-zero"):
        assert found[mid]["verdict"] == "EQUIVALENT", found[mid]
        assert "identical" in found[mid]["reason"], found[mid]
    assert proc.returncode == EXIT_NO_DECISION, proc.stderr
    assert exit_code([MutationOutcome.EQUIVALENT, MutationOutcome.KILLED]) == EXIT_NO_DECISION
    assert exit_code([MutationOutcome.EQUIVALENT], allow_no_decision=True) == 0


@pytest.mark.parametrize("after_a_kill", [False, True], ids=["first", "after-a-kill"])
def test_a_file_no_build_compiles_is_discarded_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        after_a_kill: bool):
    """src/unused.c is in no rule of the Makefile: its mutation cannot be graded by the gate's build.
    After a kill in the same worker the build does recompile (the restored src/calc.c), yet nothing
    it wrote differs from the baseline or names src/unused.c: still not built."""
    first = mutation("add-minus", "src/calc.c", "a + b", "a - b") if after_a_kill else ""
    root = c_repo(tmp_path, monkeypatch, first + mutation("unused", "src/unused.c", "x + 1", "x + 2"))
    proc = mutate(root, "--json", "--jobs", "1", "--no-cache")
    found = items(proc)
    if after_a_kill:
        assert found["add-minus"]["verdict"] == "KILLED", found["add-minus"]
    assert found["unused"]["verdict"] == "DISCARDED", found["unused"]
    assert "not built" in found["unused"]["reason"] and "src/unused.c" in found["unused"]["reason"], found["unused"]
    if not after_a_kill:     # where it looked: the gate's build_dir
        assert "(build/)" in found["unused"]["reason"], found["unused"]


def test_a_removed_definition_names_its_undefined_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = c_repo(tmp_path, monkeypatch, mutation(
        "no-twice", "src/calc.c", "int twice_add(int a, int b) { return scale(add(a, b)); }", ""))
    proc = mutate(root, "--json", "--no-cache")
    found = items(proc)["no-twice"]
    assert found["verdict"] == "DISCARDED", found
    assert "undefined reference to `twice_add'" in found["reason"], found["reason"]
    assert "collect2" not in found["reason"], found["reason"]


def test_a_build_directory_naming_its_worktree_is_not_copied(tmp_path: Path):
    """Any file of the build directory holding the source worktree's absolute path (a depfile,
    a generated Makefile, CMakeCache.txt) keeps the directory from seeding another worktree."""
    require_c()
    first, other = tmp_path / "w0", tmp_path / "w1"
    for root in (first, other):
        write(root, "include/h.h", "static inline int h(void) { return 1; }\n")
        write(root, "a.c", '#include "h.h"\nint a(void) { return h(); }\n')
    status = run_build(("sh", "-c", f"mkdir -p out && cc -I{first}/include -MMD -c a.c -o out/a.o"), first)
    assert status.state == "ok", status
    assert str(first) in (first / "out/a.d").read_text()
    assert not seed(BuildStep(("make",), build_dirs=("out",)), first, other)
    assert not (other / "out").exists()
    # The same build with relative paths is copied.
    shutil.rmtree(first / "out")
    assert run_build(("sh", "-c", "mkdir -p out && cc -Iinclude -MMD -c a.c -o out/a.o"), first).state == "ok"
    assert seed(BuildStep(("make",), build_dirs=("out",)), first, other)
    assert (other / "out/a.o").read_bytes() == (first / "out/a.o").read_bytes()


def stamped(makefile: str, stamp: str) -> str:
    """`makefile` that also writes build/BUILD_INFO with `stamp`'s output on every build (phony)."""
    return ("all: build/test_calc build/BUILD_INFO\n" + makefile
            + f".PHONY: build/BUILD_INFO\nbuild/BUILD_INFO:\n\t@mkdir -p build; {stamp} > $@\n")


# A hand-written Makefile with no header dependencies: a header mutation never recompiles anything.
NO_HEADER_DEPS = MAKEFILE.replace(" -MMD -MP", "").replace("-include $(OBJS:.o=.d)\n", "")


@pytest.mark.parametrize(("mode", "stamp"), [("worktree", "date +%s%N"), ("in-place", "date +%s%N"),
                                             ("worktree", "git describe --always --dirty")],
                         ids=["worktree-date", "in-place-date", "worktree-git-dirty"])
def test_a_header_the_build_never_recompiled_is_not_built_whatever_else_it_rewrites(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, stamp: str):
    """make never recompiles calc.o for include/calc.h (no depfiles), so the gate would run the
    baseline's binary; build/BUILD_INFO, rewritten by every build (a date, `--dirty` of the mutated
    tree), differs from the baseline's yet proves nothing: DISCARDED "not built", never SURVIVED."""
    root = c_repo(tmp_path, monkeypatch, mutation("scale-3", "include/calc.h", "x * 2", "x * 3"),
                  makefile=stamped(NO_HEADER_DEPS, stamp))
    proc = mutate(root, "--json", "--no-cache", "--mode", mode)
    found = items(proc)["scale-3"]
    assert found["verdict"] == "DISCARDED", found
    assert "not built" in found["reason"] and "include/calc.h" in found["reason"], found["reason"]
    assert "build/BUILD_INFO" in found["reason"], found["reason"]     # why: what it rewrote proves nothing


def test_a_header_the_build_recompiles_is_killed_beside_a_volatile_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The control: with depfiles make recompiles calc.o for the header, and the rewritten
    BUILD_INFO neither hides that nor makes an identical build count."""
    root = c_repo(tmp_path, monkeypatch, mutation("scale-3", "include/calc.h", "x * 2", "x * 3")
                  + mutation("comment", "src/calc.c", "/* the sum */", "/* a total */"),
                  makefile=stamped(MAKEFILE, "date +%s%N"))
    proc = mutate(root, "--json", "--jobs", "1", "--no-cache")
    found = items(proc)
    assert found["scale-3"]["verdict"] == "KILLED", found["scale-3"]
    assert found["comment"]["verdict"] == "EQUIVALENT", found["comment"]


TAP = """\
#include <stdio.h>
#include "calc.h"
int main(void) { printf("1..1\\n%s 1 - twice_add\\n", twice_add(2, 3) == 10 ? "ok" : "not ok"); return 0; }
"""
# Not incremental: every build compiles everything and stamps the time (whole seconds).
REBUILD_ALL = "mkdir -p build && cc -O2 -Iinclude src/calc.c tests/tap.c -o build/tap && date +%s > build/BUILD_INFO\n"
TAP_GATE = ("gate: calc\nbuild: [sh, tools/build.sh]\nbuild_dir: build\ndriver:\n  type: command\n  run: [./build/tap]\n"
            "  format: tap\n  timeout: 60\n")


def test_a_build_that_rewrites_everything_counts_what_changed_with_the_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A build script that recompiles every time: its binary, rewritten alike by every build of
    the same tree, counts when a mutation changes it (KILLED); its time stamp, which differs from
    one build to the next (seconds apart), does not: src/unused.c is still not built."""
    root = c_repo(tmp_path, monkeypatch, mutation("scale-3", "include/calc.h", "x * 2", "x * 3")
                  + mutation("unused", "src/unused.c", "x + 1", "x + 2"), gate=TAP_GATE)
    write(root, "tests/tap.c", TAP)
    write(root, "tools/build.sh", REBUILD_ALL)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a build that compiles everything")
    proc = mutate(root, "--json", "--jobs", "1", "--no-cache")
    found = items(proc)
    assert found["scale-3"]["verdict"] == "KILLED", found["scale-3"]
    assert found["unused"]["verdict"] == "DISCARDED", found["unused"]
    assert "not built" in found["unused"]["reason"] and "src/unused.c" in found["unused"]["reason"], found["unused"]


# The objects and the test binary in obj/, the depfiles alone in the declared build_dir (build/).
OBJECTS_ELSEWHERE = MAKEFILE.replace("OBJS = build/", "OBJS = obj/").replace(" build/test_calc.o build/main.o",
                                                                           " obj/test_calc.o obj/main.o") \
    .replace("build/test_calc: $(OBJS)", "obj/test_calc: $(OBJS)").replace("build/%.o", "obj/%.o") \
    .replace("\t@mkdir -p build\n", "\t@mkdir -p obj build\n").replace("-MMD -MP", "-MMD -MP -MF build/$(*F).d") \
    .replace("-include $(OBJS:.o=.d)", "-include $(wildcard build/*.d)")


def test_outputs_written_outside_the_declared_build_dir_are_judged_too(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    """build_dir: build holds only depfiles, rewritten byte for byte and naming src/calc.c; the
    objects and the binary the gate runs are in obj/ (ignored, undeclared). `a - b` changes them
    and fails the test: KILLED, never EQUIVALENT from the depfile alone."""
    root = c_repo(tmp_path, monkeypatch, mutation("add-minus", "src/calc.c", "a + b", "a - b")
                  + mutation("comment", "src/calc.c", "/* the sum */", "/* a total */"),
                  makefile=OBJECTS_ELSEWHERE, gate=GATE.replace("./build/test_calc", "./obj/test_calc"))
    write(root, ".gitignore", "build/\nobj/\n")
    git(root, "commit", "-qam", "objects in obj/")
    found = items(mutate(root, "--json", "--jobs", "1", "--no-cache"))
    assert found["add-minus"]["verdict"] == "KILLED", found["add-minus"]
    assert found["comment"]["verdict"] == "EQUIVALENT", found["comment"]      # obj/ judged too: the same bytes
