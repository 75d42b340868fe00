"""`gates red-first`: a gate proves it can fail on the base's sources, then passes at HEAD."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


GATE = """
    gate: calc-unit
    driver: {type: pytest, run: [tests/test_calc.py]}
"""


def repo(tmp_path: Path, need_tool: object) -> Path:
    need_tool("git")  # type: ignore[operator]
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    write(root, "pytest.ini", "[pytest]\n")
    write(root, "calc.py", "def add(a, b):\n    return a - b\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base: add is wrong")
    return root


def state(root: Path) -> tuple[str, str, str, str]:
    return (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"),
            git(root, "worktree", "list", "--porcelain"), git(root, "for-each-ref"))


def test_red_at_base_green_at_head_is_proven_and_stored(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/test_calc.py", "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    write(root, "gates/calc.yaml", GATE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "fix add, with its gate")
    before = state(root)
    proc = subprocess.run([*GATES, "red-first", "calc-unit", "--base", base, "--root", str(root), "--json"],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc = json.loads(proc.stdout)
    at_base, at_head = doc["items"]
    assert at_base["verdict"] == "RED" and at_base["cause"] in ("exit", "assertion")
    assert at_head["verdict"] == "GREEN"
    assert state(root) == before
    proofs = subprocess.run([*GATES, "proofs", "--root", str(root)], capture_output=True, text=True, cwd=root)
    assert "calc-unit" in proofs.stdout and f"red-first:{base}" in proofs.stdout


def test_gate_green_on_the_base_is_not_a_proof(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    # A test that does not exercise the change (add fixed): it passes on the base too.
    write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/test_calc.py", "def test_nothing():\n    assert True\n")
    write(root, "gates/calc.yaml", GATE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "vacuous gate")
    proc = subprocess.run([*GATES, "red-first", "calc-unit", "--base", base, "--root", str(root)],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode == 1 and "cannot tell them apart" in proc.stdout
    proofs = subprocess.run([*GATES, "proofs", "--root", str(root)], capture_output=True, text=True, cwd=root)
    assert "UNPROVEN" in proofs.stdout


def test_missing_file_at_base_is_not_a_red(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    # The test imports a module that does not exist at the base: pytest cannot collect (not an assertion).
    write(root, "newmod.py", "def f():\n    return 1\n")
    write(root, "tests/test_calc.py", "from newmod import f\n\ndef test_f():\n    assert f() == 1\n")
    write(root, "gates/calc.yaml", GATE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "new module")
    proc = subprocess.run([*GATES, "red-first", "calc-unit", "--base", base, "--root", str(root)],
                          capture_output=True, text=True, cwd=root)
    # pytest exits 2 (collection error) with 0 cases run: that proves only that a module is missing.
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "missing file or import is not a red" in proc.stdout


def test_unresolvable_base_exits_3(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    write(root, "tests/test_calc.py", "def test_nothing():\n    assert True\n")
    write(root, "gates/calc.yaml", GATE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "gate")
    proc = subprocess.run([*GATES, "red-first", "calc-unit", "--base", "no-such-rev", "--root", str(root)],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode == 3 and "no-such-rev" in proc.stderr


def test_exit_only_gate_red_from_a_missing_import_is_not_a_proof(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    write(root, "lib.py", "def go():\n    pass\n")
    write(root, "check.py", "import lib\nlib.go()\n")
    write(root, "gates/g.yaml", 'gate: g\nexit_only: "smoke"\ndriver: {type: command, run: [python3, check.py]}\n')
    git(root, "add", "-A")
    git(root, "commit", "-qm", "exit-only gate")
    proc = subprocess.run([*GATES, "red-first", "g", "--base", base, "--root", str(root)],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode == 3 and "not a red" in proc.stdout


def red_first(root: Path, gate_id: str, base: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATES, "red-first", gate_id, "--base", base, "--root", str(root)],
                          capture_output=True, text=True, cwd=root)


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def test_a_fixture_missing_at_the_base_is_a_setup_error_not_a_red(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    # HEAD's conftest (laid over the base too) defines the fixture only where the sources hold FOUR:
    # at the base the test errors in setup.
    write(root, "calc.py", "FOUR = 4\n\ndef add(a, b):\n    return a + b\n")
    write(root, "tests/conftest.py", "import pytest\nimport calc\n\nif hasattr(calc, 'FOUR'):\n"
          "    @pytest.fixture\n    def four():\n        return calc.FOUR\n")
    write(root, "tests/test_calc.py", "from calc import add\n\ndef test_add(four):\n    assert add(2, 2) == four\n")
    write(root, "gates/calc.yaml", GATE)
    commit_all(root, "fixture")
    proc = red_first(root, "calc-unit", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "setup" in proc.stdout and "not a red" in proc.stdout
    assert "UNPROVEN" in subprocess.run([*GATES, "proofs", "--root", str(root)], capture_output=True,
                                        text=True, cwd=root).stdout


def test_an_attribute_missing_at_the_base_in_the_test_body_is_not_a_red(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    # The test imports the module (present at the base) and calls a function only HEAD has: AttributeError.
    write(root, "calc.py", "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n")
    write(root, "tests/test_calc.py", "import calc\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n")
    write(root, "gates/calc.yaml", GATE)
    commit_all(root, "mul")
    proc = red_first(root, "calc-unit", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "AttributeError" in proc.stdout and "not an assertion" in proc.stdout


def test_a_data_file_missing_at_the_base_is_not_a_red(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    write(root, "data/cases.txt", "2 2 4\n")
    write(root, "tests/test_calc.py", "from calc import add\n\ndef test_cases():\n"
          "    a, b, c = map(int, open('data/cases.txt').read().split())\n    assert add(a, b) == c\n")
    write(root, "gates/calc.yaml", GATE)
    commit_all(root, "data")
    proc = red_first(root, "calc-unit", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "FileNotFoundError" in proc.stdout


def test_pytest_fail_and_assertion_error_are_reds(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/test_calc.py", "import pytest\nfrom calc import add\n\ndef test_add():\n"
          "    if add(2, 2) != 4:\n        pytest.fail('add is wrong')\n\ndef test_raise():\n"
          "    if add(1, 1) != 2:\n        raise AssertionError('add is wrong')\n")
    write(root, "gates/calc.yaml", GATE)
    commit_all(root, "fail")
    proc = red_first(root, "calc-unit", base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "proven" in proc.stdout


def test_a_native_run_exiting_non_zero_with_no_failed_case_is_not_a_red(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    # A TAP program whose one case passes, then dies on a helper only HEAD has: a crash, not an assertion.
    write(root, "helper.py", "def teardown():\n    pass\n")
    write(root, "tap_check.py", "print('1..1')\nprint('ok 1 - adds')\nimport helper\nhelper.teardown()\n")
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, run: [python3, tap_check.py], format: tap}\n")
    commit_all(root, "tap gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no failed case" in proc.stdout


def test_a_declared_counter_failing_after_a_passing_run_is_a_red(tmp_path: Path, need_tool: object) -> None:
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/test_calc.py", "from calc import add\n\ndef test_add(gates_evidence):\n"
          "    gates_evidence.counter('sums_right', int(add(2, 2) == 4))\n")
    write(root, "gates/calc.yaml", GATE + "    assert: {counters: {sums_right: {equals: 1}}}\n")
    commit_all(root, "counter gate")
    proc = red_first(root, "calc-unit", base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "RED (assertion)" in proc.stdout


DOCTEST_DATA = """\
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fstream>
#include <stdexcept>
TEST_CASE("reads data") {
    std::ifstream f("data.txt");
    if (!f) throw std::runtime_error("cannot open data.txt");
    int x = 0;
    f >> x;
    CHECK(x == 42);
}
"""


GTEST_DATA = """\
#include <gtest/gtest.h>
#include <fstream>
#include <stdexcept>
TEST(Data, Reads) {
    std::ifstream f("data.txt");
    if (!f) throw std::runtime_error("cannot open data.txt");
    int x = 0;
    f >> x;
    EXPECT_EQ(x, 42);
}
"""

# framework -> (its program, the gate's command, its header, what the base's output must name)
NATIVE = {
    "doctest": (DOCTEST_DATA, "g++ -std=c++17 -o t test.cpp && ./t", "/usr/include/doctest/doctest.h",
                "no assertion failed"),
    "gtest": (GTEST_DATA, "g++ -std=c++17 -o t test.cpp -lgtest -lgtest_main -pthread && ./t",
              "/usr/include/gtest/gtest.h", "C++ exception"),
}


@pytest.mark.parametrize("framework", sorted(NATIVE))
@pytest.mark.parametrize("base_data, code", [(None, 3), ("41\n", 0)])
def test_a_native_case_that_threw_for_a_missing_file_is_not_a_red(
        tmp_path: Path, need_tool: object, framework: str, base_data: str | None, code: int) -> None:
    # rev11: doctest's "test case THREW exception: cannot open data.txt" at the base was stored as a proof;
    # helper-2 (stop 31): gtest reports no assertion counts, so its "C++ exception ... thrown in the test body" was too
    source, command, header, named = NATIVE[framework]
    need_tool("g++")  # type: ignore[operator]
    if not Path(header).is_file():
        need_tool(f"{framework}-header")  # type: ignore[operator]
    root = repo(tmp_path, need_tool)
    write(root, ".gitignore", "t\n.redfirst/\n")
    if base_data is not None:
        write(root, "data.txt", base_data)
    commit_all(root, "base")
    base = git(root, "rev-parse", "HEAD")
    write(root, "data.txt", "42\n")
    write(root, "test.cpp", source)
    write(root, "gates/g.yaml", f'gate: g\ndriver: {{type: command, run: "{command}", format: {framework}}}\n')
    commit_all(root, "data and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == code, proc.stdout + proc.stderr
    if base_data is None:
        assert "no assertion failed" in proc.stdout and named in proc.stdout, proc.stdout


@pytest.mark.parametrize("base_helper, code", [(None, 3), ("def scale(x):\n    return x\n", 0)])
def test_a_unittest_error_at_the_base_is_not_a_red_and_a_failure_is(
        tmp_path: Path, need_tool: object, base_helper: str | None, code: int) -> None:
    # issue 33: unittest's ERROR (an ImportError at the base) was taken for an assertion failing
    root = repo(tmp_path, need_tool)
    if base_helper is not None:
        write(root, "helper.py", base_helper)
        commit_all(root, "base")
    base = git(root, "rev-parse", "HEAD")
    write(root, "helper.py", "def scale(x):\n    return 2 * x\n")
    write(root, "test_scale.py", "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_scale(self):\n"
          "        from helper import scale\n        self.assertEqual(scale(2), 4)\n")
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, run: [python3, -m, unittest, -v, test_scale], "
          "format: unittest}\n")
    commit_all(root, "helper and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == code, proc.stdout + proc.stderr
    if base_helper is None:
        assert "no assertion failed" in proc.stdout and "ERROR" in proc.stdout, proc.stdout


def test_a_tap_bail_out_before_any_test_is_not_a_red(tmp_path: Path, need_tool: object) -> None:
    # issue 33: a TAP `Bail out!` before any test (a helper the base lacks) was taken for an assertion failing
    root = repo(tmp_path, need_tool)
    base = git(root, "rev-parse", "HEAD")
    write(root, "helper.py", "READY = True\n")
    write(root, "tap_check.py", "try:\n    import helper\nexcept ImportError:\n    print('1..1')\n"
          "    print('not ok 1 - setup')\n    print('Bail out! no helper')\n    raise SystemExit(1)\n"
          "print('1..1')\nprint('ok 1 - ready' if helper.READY else 'not ok 1 - ready')\n")
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, run: [python3, tap_check.py], format: tap}\n")
    commit_all(root, "tap gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Bail out" in proc.stdout, proc.stdout


JUNIT_ERROR = '<testsuite tests="1"><testcase name="t"><error message="ImportError"/></testcase></testsuite>'
JUNIT_PASS = '<testsuite tests="1"><testcase name="t" time="0.01"/></testsuite>'


@pytest.mark.parametrize("fmt, base_output, head_output, named", [
    ("plain", "0 passed, 1 failed", "1 passed, 0 failed", "cannot tell a failed check from a test that threw"),
    ("junit", JUNIT_ERROR, JUNIT_PASS, "holds errors but no <failure>"),
])
def test_a_format_that_cannot_show_a_failed_check_proves_nothing(
        tmp_path: Path, need_tool: object, fmt: str, base_output: str, head_output: str, named: str) -> None:
    # issue 33: any failed case of a format without assertion counts was taken for an assertion failing
    root = repo(tmp_path, need_tool)
    out = "open('report.xml', 'w').write(OUT)" if fmt == "junit" else "print(OUT)"
    write(root, "impl.py", f"OUT = {base_output!r}\nFAILED = True\n")
    write(root, ".gitignore", "report.xml\n.redfirst/\n")
    commit_all(root, "base: the check fails")
    base = git(root, "rev-parse", "HEAD")
    write(root, "impl.py", f"OUT = {head_output!r}\nFAILED = False\n")
    write(root, "check.py", f"import sys\nfrom impl import FAILED, OUT\n{out}\nsys.exit(1 if FAILED else 0)\n")
    junit = ", junit: report.xml" if fmt == "junit" else ""
    write(root, "gates/g.yaml", f"gate: g\ndriver: {{type: command, run: [python3, check.py], format: {fmt}{junit}}}\n")
    commit_all(root, "the check passes, and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 3 and named in proc.stdout, proc.stdout + proc.stderr
