"""Adversarial round 2 of issue 33 on `red-first`'s assertion rule for GoogleTest
(parsers.gtest.not_an_assertion): a failure is a check's only inside a test gtest reports
`[  FAILED  ]`; a `file:line: Failure` block a passing test printed (a test tool's tests print
them) is not one, beside a test that threw."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from redfirst.gates.parsers import get

PARSER = get("gtest")

PROGRAM = r'''
#include <gtest/gtest.h>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

TEST(Echo, PrintsWhatItChecks) {
    std::printf("calc.cc:12: Failure\nExpected equality of these values:\n  add(2, 3)\n  6\n");
}

TEST(Calc, Mul) {
    throw std::runtime_error("no mul yet");
}

TEST(Calc, Add) {
    EXPECT_EQ(2 + 3, std::atoi(std::getenv("WANT")));
}
'''


def _missing(what: str) -> None:
    """A required tool is absent: a failure under CI, a skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"required for CI but missing: {what}")
    pytest.skip(f"missing: {what}")


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cxx = shutil.which("g++")
    if cxx is None:
        _missing("g++")
        raise AssertionError("unreachable")
    folder = tmp_path_factory.mktemp("gtest")
    (folder / "t.cc").write_text(PROGRAM)
    built = subprocess.run([cxx, "-O0", "-std=c++17", "-o", str(folder / "t"), str(folder / "t.cc"), "-lgtest",
                            "-lgtest_main", "-pthread"], capture_output=True, text=True)
    if built.returncode != 0:
        _missing(f"GoogleTest ({built.stderr[-500:]})")
    return folder / "t"


def _run(program: Path, want: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program)], capture_output=True, text=True, timeout=60, env={**os.environ, "WANT": str(want)})


def test_a_printed_failure_block_beside_a_throw_is_no_assertion(program: Path):
    ran = _run(program, 5)
    assert ran.returncode == 1 and "[  FAILED  ] Calc.Mul" in ran.stdout and "[       OK ] Echo" in ran.stdout
    why = PARSER.not_an_assertion(ran.stdout, ran.stderr)
    assert why is not None and "no mul yet" in why, why


def test_a_failed_check_is_an_assertion(program: Path):
    ran = _run(program, 6)
    assert ran.returncode == 1 and "[  FAILED  ] Calc.Add" in ran.stdout
    assert PARSER.not_an_assertion(ran.stdout, ran.stderr) is None
