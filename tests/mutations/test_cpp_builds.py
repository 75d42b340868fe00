"""C++ mutations in worktree mode: incremental builds in each worker's worktree (`build_dir:`),
one run of identical gate builds per mutation, correct rebuilds after a byte-for-byte restore,
and the compiler's first `error:` line as a compile failure's reason. Real g++, make, doctest."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from cpp_helpers import builds, compiles, cpp_gate, make_cpp_repo
from mutate_helpers import git, mutate, write

KILL_ADD = ('- mutation: add-minus\n  file: src/add.cpp\n  anchor: "a + b"\n  replace: "a - b"\n'
            "  expect: {red: [calc]}\n")
KILL_MUL = ('- mutation: mul-plus\n  file: src/mul.cpp\n  anchor: "a * b"\n  replace: "a + b"\n'
            "  expect: {red: [calc]}\n")


def outcomes(proc) -> dict[str, str]:  # type: ignore[no-untyped-def]
    doc = json.loads(proc.stdout)
    return {i["id"]: i["verdict"] for i in doc["items"]}


def items(proc) -> dict[str, dict]:  # type: ignore[no-untyped-def,type-arg]
    return {i["id"]: i for i in json.loads(proc.stdout)["items"]}


def test_each_worker_rebuilds_only_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = make_cpp_repo(tmp_path, monkeypatch)
    write(root, "mutations/m.yaml", KILL_ADD + KILL_MUL + KILL_ADD.replace("add-minus", "add-times")
          .replace('"a - b"', '"a * b"') + KILL_MUL.replace("mul-plus", "mul-minus").replace('"a + b"', '"a - b"'))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "mutations")
    proc = mutate(root, "--json", "--jobs", "2", "--no-cache")
    assert outcomes(proc) == {"add-minus": "KILLED", "mul-plus": "KILLED", "add-times": "KILLED",
                              "mul-minus": "KILLED"}, proc.stderr
    seen = compiles(tmp_path)
    per_source = Counter(src for _, src in seen)
    # The sources no mutation touches are compiled once in the whole run: by the baseline,
    # whose build directory seeds the other worker's worktree.
    assert per_source["tests/test_calc.cpp"] == 1, seen
    assert per_source["tests/main.cpp"] == 1, seen
    # Each mutation rebuilds its own file, and the file restored before it (its mtime is new).
    assert 4 <= len(seen) - 4 <= 6, seen
    assert per_source["src/add.cpp"] >= 3 and per_source["src/mul.cpp"] >= 3, seen


def test_identical_gate_builds_run_once_per_mutation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = make_cpp_repo(tmp_path, monkeypatch)
    write(root, "gates/calc-add.yaml", cpp_gate("calc-add", "-tc=add"))
    write(root, "gates/calc-mul.yaml", cpp_gate("calc-mul", "-tc=mul"))
    write(root, "mutations/m.yaml", KILL_ADD.replace("[calc]", "[calc, calc-add], green: [calc-mul]"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "gates")
    proc = mutate(root, "--json", "--no-cache")
    assert outcomes(proc) == {"add-minus": "KILLED"}, proc.stderr
    # One worker: one build for the baseline, one rebuild of its untouched tree (what a build
    # rewrites anyway proves nothing: compiled.volatile) and one for the mutation, not one per gate
    # (3 each).
    assert len(builds(tmp_path)) == 3, builds(tmp_path)


@pytest.mark.parametrize("build_dir", [True, False], ids=["build-dir", "no-build-dir"])
def test_a_restored_file_is_rebuilt_even_when_outputs_look_newer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 build_dir: bool):
    """A build whose outputs carry mtimes at or after the restore (a filesystem with coarse
    timestamps, a clock ahead, a tool that stamps its outputs): the next mutation's build must
    still compile the restored source, never link the previous mutation's stale object; with no
    `build_dir:` declared too (the objects are then wherever the build put them in the worktree)."""
    root = make_cpp_repo(tmp_path, monkeypatch, build_dir=build_dir)
    # Outputs stamped a minute ahead, as a coarse or skewed clock would leave them.
    write(root, "Makefile", (root / "Makefile").read_text().replace(
        "\t$(CXX) -O0 -c $< -o $@\n", "\t$(CXX) -O0 -c $< -o $@\n\ttouch -d @$$(( $$(date +%s) + 60 )) $@\n"))
    # The second mutation changes nothing the tests see: with add.o stale it would be "KILLED".
    write(root, "mutations/m.yaml", KILL_ADD + '- mutation: mul-same\n  file: src/mul.cpp\n  anchor: "a * b"\n'
                                               '  replace: "b * a"\n  expect: {red: [calc]}\n')
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "stamped")
    proc = mutate(root, "--json", "--jobs", "1", "--no-cache")
    assert outcomes(proc) == {"add-minus": "KILLED", "mul-same": "SURVIVED"}, proc.stderr


@pytest.mark.parametrize("own_build", [True, False], ids=["mutation-build", "gate-build"])
def test_a_compile_failure_is_reported_by_its_first_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               own_build: bool):
    root = make_cpp_repo(tmp_path, monkeypatch)
    write(root, "mutations/m.yaml", '- mutation: add-broken\n  file: src/add.cpp\n  anchor: "return a + b;"\n'
                                    '  replace: "return a + undeclared_name;"\n  expect: {build: fails, red: [calc]}\n'
          + ("  build: [make, -s]\n" if own_build else ""))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "broken")
    proc = mutate(root, "--json", "--no-cache")
    found = items(proc)["add-broken"]
    assert found["verdict"] == "KILLED", proc.stderr
    # make's closing "*** [Makefile:7: build/add.o] Error 1" is not why it failed.
    assert "src/add.cpp:1:" in found["reason"] and "error:" in found["reason"], found["reason"]
    assert "undeclared_name" in found["reason"], found["reason"]


def test_a_cmake_build_directory_is_built_per_worker_not_copied(tmp_path: Path):
    """CMake records the absolute source and build paths in its build directory: a copy in
    another worktree would build the first one's tree. It is never seeded by copying."""
    import shutil
    import subprocess

    from redfirst.mutations.builds import BuildStep, seed

    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    first, other = tmp_path / "w0", tmp_path / "w1"
    for root in (first, other):
        write(root, "CMakeLists.txt", "cmake_minimum_required(VERSION 3.16)\nproject(p NONE)\n")
        write(root, "Makefile", "all:\n\ttrue\n")
    subprocess.run(["cmake", "-S", str(first), "-B", str(first / "build")], check=True, capture_output=True)
    assert not seed(BuildStep(("cmake", "--build", "build"), build_dirs=("build",)), first, other)
    assert not (other / "build").exists()
    # A plain build directory (relative paths) is copied with its mtimes.
    write(first, "out/x.o", "object")
    assert seed(BuildStep(("make",), build_dirs=("out",)), first, other)
    assert (other / "out/x.o").stat().st_mtime_ns == (first / "out/x.o").stat().st_mtime_ns


def test_a_build_that_ran_out_of_disk_is_no_kill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`expect: {build: fails}` is about a compile error the mutation causes. A build whose
    compiler could not write its output (ENOSPC, here the real assembler writing to /dev/full
    once the disk is "full", i.e. under the mutation only) failed for the machine's reason:
    never KILLED. The same build with a real compile error still is."""
    root = make_cpp_repo(tmp_path, monkeypatch)
    full = ("if grep -q MUTATED src/add.cpp; then out=/dev/full; else out=build/add.o; fi; "
            "mkdir -p build && g++ -c src/add.cpp -o $out")
    write(root, "mutations/m.yaml",
          f'- mutation: disk-full\n  file: src/add.cpp\n  anchor: "a + b"\n  replace: "a + b /*MUTATED*/"\n'
          f"  build: [sh, -c, '{full}']\n  expect: {{build: fails, red: [calc]}}\n"
          f'- mutation: compile-error\n  file: src/add.cpp\n  anchor: "a + b"\n  replace: "a + MUTATED"\n'
          f"  build: [sh, -c, '{full.replace('/dev/full', 'build/add.o')}']\n  expect: {{build: fails, red: [calc]}}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "disk")
    proc = mutate(root, "--json", "--no-cache")
    found = items(proc)
    assert found["compile-error"]["verdict"] == "KILLED", proc.stderr
    assert found["disk-full"]["verdict"] != "KILLED", found["disk-full"]
    assert "No space left on device" in found["disk-full"]["reason"], found["disk-full"]


def test_an_error_quoted_inside_a_warning_is_not_the_reason(tmp_path: Path):
    """The real g++ prints a `#warning` whose text holds `file:N: error:` before the real error:
    the reason is the compiler's error line, not the warning that quotes one."""
    import shutil

    from redfirst.mutations.builds import run_build

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    write(tmp_path, "w.cpp", '#warning "see old.cpp:9: error: this used to fail"\nint f() { return undeclared; }\n')
    status = run_build(("g++", "-c", "w.cpp", "-o", "w.o"), tmp_path)
    assert status.state == "failed", status
    assert "w.cpp:2:" in status.reason and "undeclared" in status.reason and "warning" not in status.reason, status


def test_a_build_directory_holding_a_cmake_build_below_its_top_is_not_copied(tmp_path: Path):
    """`build_dir: out` whose CMake build is `out/cmake`: a copy would still build the first
    worktree's sources (CMake's absolute paths), so it is built per worker like a top-level one."""
    import shutil
    import subprocess

    from redfirst.mutations.builds import BuildStep, seed

    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    first, other = tmp_path / "w0", tmp_path / "w1"
    for root in (first, other):
        write(root, "CMakeLists.txt", "cmake_minimum_required(VERSION 3.16)\nproject(p NONE)\n")
    subprocess.run(["cmake", "-S", str(first), "-B", str(first / "out" / "cmake")], check=True, capture_output=True)
    assert not seed(BuildStep(("cmake", "--build", "out/cmake"), build_dirs=("out",)), first, other)
    assert not (other / "out").exists()


def test_a_link_failure_is_not_reported_by_a_warning_that_says_error(tmp_path: Path):
    """A link error (no `file:N: error:` line) after a warning whose text holds the word error:
    the reason is the linker's `undefined reference` line, not the warning (real g++ and ld)."""
    import shutil

    from redfirst.mutations.builds import run_build

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    write(tmp_path, "l.cpp", '#warning "error handling is todo"\nint g();\nint main() { return g(); }\n')
    status = run_build(("g++", "l.cpp", "-o", "l"), tmp_path)
    assert status.state == "failed", status
    assert "warning" not in status.reason and "undefined reference to `g()'" in status.reason, status
