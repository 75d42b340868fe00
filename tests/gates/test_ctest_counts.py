"""`format: ctest` keeps the assertion counts of the doctest binaries CTest runs (their per-test
output under `ctest -V`, or `--output-on-failure` for the failed ones), so an assertion floor
works through CTest: met is GREEN, missed is RED, no count at all or 0 assertions is
NO_DECISION. Real cmake, ctest and doctest (Debian packages), run by `gates run`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]

SUITE = textwrap.dedent("""
    #define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
    #include <doctest/doctest.h>
    #include <cstdlib>
    TEST_CASE("add") { CHECK(1 + 1 == 2); CHECK(2 + 2 == 4); }
    TEST_CASE("mul") { CHECK(2 * 3 == 6); }
    TEST_CASE("nothing") {}
    TEST_CASE("broken") { CHECK(std::getenv("NEVER_SET_ANYWHERE") != nullptr); CHECK(1 == 1); }
""")
CMAKE = textwrap.dedent("""
    cmake_minimum_required(VERSION 3.16)
    project(counts CXX)
    enable_testing()
    add_executable(suite suite.cpp)
    add_test(NAME unit COMMAND suite -tce=broken)
    add_test(NAME unit_add COMMAND suite -tc=add)
    add_test(NAME hollow COMMAND suite -tc=nothing)
    add_test(NAME broken COMMAND suite -tc=broken)
    add_test(NAME plain COMMAND sh -c "echo no framework here")
""")


@pytest.fixture(scope="module")
def build_dir() -> Path:
    """The CMake project built once per machine (tests/gates/builds.py); cmake rebuilds what a
    changed header touches."""
    from tests.gates import builds
    from tests.gates.parsers.conftest import missing

    absent = [t for t in ("g++", "cmake", "ctest") if shutil.which(t) is None]
    if absent or not Path("/usr/include/doctest/doctest.h").is_file():
        missing(f"g++, cmake, ctest and doctest-dev (missing: {absent or ['doctest']})")

    def make(folder: Path) -> list[str]:
        (folder / "suite.cpp").write_text(SUITE)
        (folder / "CMakeLists.txt").write_text(CMAKE)
        subprocess.run(["cmake", "-S", str(folder), "-B", str(folder / "b")], check=True, capture_output=True)
        return [str(shutil.which("cmake"))]

    folder = builds.built("ctest-counts", [SUITE.encode(), CMAKE.encode()], make)
    with builds.locked(folder.with_name(folder.name + ".lock")):
        subprocess.run(["cmake", "--build", str(folder / "b")], check=True, capture_output=True)
    return folder / "b"


def run(tmp_path: Path, build: Path, select: str, floor: int | None, *flags: str) -> tuple[int, dict[str, Any]]:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True, exist_ok=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    argv = ", ".join(["ctest", "--test-dir", str(build), *flags, "-R", select])
    text = f"gate: through-ctest\ndriver: {{type: command, run: [{argv}], format: ctest}}\n"
    if floor is not None:
        text += f"assert: {{assertions: {{min: {floor}}}}}\n"
    (root / "gates" / "g.yaml").write_text(text)
    proc = subprocess.run([*GATES, "run", "--json", "-q", "--root", str(root)], capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    assert doc["items"], proc.stdout + proc.stderr
    (item,) = doc["items"]
    return proc.returncode, item


def test_a_floor_met_through_ctest_is_green(tmp_path: Path, build_dir: Path) -> None:
    code, item = run(tmp_path, build_dir, "^unit", 5, "-V")
    assert (code, item["verdict"]) == (0, "GREEN"), item
    # 3 assertions in `unit` (add, mul; nothing checks none), 2 in `unit_add`: doctest's own counts
    assert item["counts"]["assertions"] == 5 and item["counts"]["cases"] == 2, item


def test_a_floor_missed_through_ctest_is_red(tmp_path: Path, build_dir: Path) -> None:
    code, item = run(tmp_path, build_dir, "^unit", 6, "-V")
    assert (code, item["verdict"], item["cause"]) == (1, "RED", "assertion"), item
    assert item["counts"]["assertions"] == 5, item


def test_no_per_test_output_is_no_decision(tmp_path: Path, build_dir: Path) -> None:
    # Without -V CTest prints no output of a passing test: the assertion count is missing evidence.
    code, item = run(tmp_path, build_dir, "^unit", 1)
    assert (code, item["verdict"]) == (3, "NO_DECISION"), item
    assert "assertion" in item["reason"], item


def test_zero_assertions_through_ctest_is_no_decision(tmp_path: Path, build_dir: Path) -> None:
    code, item = run(tmp_path, build_dir, "^hollow$", 1, "-V")
    assert (code, item["verdict"]) == (3, "NO_DECISION") and "0 assertions" in item["reason"], item


def test_a_test_without_a_framework_adds_no_assertions(tmp_path: Path, build_dir: Path) -> None:
    code, item = run(tmp_path, build_dir, "^(unit_add|plain)$", 3, "-V")
    assert (code, item["verdict"]) == (1, "RED") and item["counts"]["assertions"] == 2, item


def test_failed_assertions_are_read_from_output_on_failure(tmp_path: Path, build_dir: Path) -> None:
    code, item = run(tmp_path, build_dir, "^(unit_add|broken)$", 1, "--output-on-failure")
    assert (code, item["verdict"]) == (1, "RED"), item
    # the failed test's output is shown (2 assertions, 1 failed); the passing one's is not
    assert item["counts"]["assertions"] == 2, item


def test_a_repeated_test_counts_its_assertions_once(tmp_path: Path, build_dir: Path) -> None:
    """`--repeat until-fail:3` runs `unit_add` (2 assertions) three times: each run prints its
    summary, and the floor is about the test's assertions, not how often CTest ran it."""
    code, item = run(tmp_path, build_dir, "^unit_add$", 3, "-V", "--repeat", "until-fail:3")
    assert (code, item["verdict"]) == (1, "RED") and item["counts"]["assertions"] == 2, item

