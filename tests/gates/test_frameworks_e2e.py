"""`gates run` over binaries built from the real frameworks (Debian doctest-dev, cmake/CTest):
the lies DESIGN section 1 was written against, graded end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]

DOCTEST_MAIN = textwrap.dedent("""
    #define DOCTEST_CONFIG_IMPLEMENT
    #include <doctest/doctest.h>
    #include <csignal>
    #include <cstdlib>

    TEST_CASE("checks nothing") {}
    TEST_CASE("checks something") { CHECK(1 + 1 == 2); CHECK(2 * 2 == 4); }

    int main(int argc, char** argv) {
        doctest::Context context(argc, argv);
        int result = context.run();
        if (std::getenv("CRASH_AFTER_SUMMARY")) std::raise(SIGSEGV);
        return result;
    }
""")


@pytest.fixture(scope="module")
def doctest_binary(need_tool: Any) -> Path:
    """Built once per machine (tests/gates/builds.py), again when a header it read changed."""
    from tests.gates import builds

    cxx = need_tool("g++", "apt-get install g++")
    if not Path("/usr/include/doctest/doctest.h").is_file():
        need_tool("doctest-header-missing", "apt-get install doctest-dev")

    def make(folder: Path) -> list[str]:
        (folder / "main.cpp").write_text(DOCTEST_MAIN)
        subprocess.run([cxx, "-O0", "-std=c++17", "-MD", "-MF", "deps", "main.cpp", "-o", "suite"], cwd=folder,
                       check=True)
        return builds.depfile_paths(folder / "deps")

    return builds.built("e2e-doctest", [DOCTEST_MAIN.encode(), builds.compiler_id(cxx)], make) / "suite"


def run(tmp_path: Path, gate_yaml: str) -> tuple[int, dict[str, Any]]:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True, exist_ok=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(textwrap.dedent(gate_yaml))
    proc = subprocess.run([*GATES, "run", "--json", "-q", "--root", str(root)], capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    (item,) = doc["items"]
    return proc.returncode, item


def test_doctest_success_over_zero_assertions_is_no_decision(tmp_path: Path, doctest_binary: Path) -> None:
    code, item = run(tmp_path, f"""
        gate: hollow
        driver: {{type: command, run: [{doctest_binary}, --test-case=checks nothing], format: doctest}}
    """)
    assert code == 3
    assert item["verdict"] == "NO_DECISION" and "0 assertions" in item["reason"]
    assert item["counts"]["cases"] == 1 and item["counts"]["assertions"] == 0


def test_doctest_real_assertions_are_green(tmp_path: Path, doctest_binary: Path) -> None:
    code, item = run(tmp_path, f"""
        gate: solid
        driver: {{type: command, run: [{doctest_binary}, --test-case=checks something], format: doctest}}
        assert: {{assertions: {{min: 2}}}}
    """)
    assert code == 0 and item["verdict"] == "GREEN" and item["counts"]["assertions"] == 2


def test_doctest_full_pass_then_sigsegv_is_red_naming_the_signal(tmp_path: Path, doctest_binary: Path) -> None:
    code, item = run(tmp_path, f"""
        gate: crashy
        driver:
          type: command
          run: [{doctest_binary}, --test-case=checks something]
          format: doctest
          env: {{CRASH_AFTER_SUMMARY: "1"}}
    """)
    assert code == 1
    assert item["verdict"] == "RED" and item["cause"] == "signal" and "SIGSEGV" in item["reason"]
    assert item["counts"]["passed"] == 1  # the summary was printed: the signal outranks it


@pytest.fixture(scope="module")
def ctest_build(tmp_path_factory: pytest.TempPathFactory, need_tool: Any) -> Path:
    cmake = need_tool("cmake", "apt-get install cmake")
    need_tool("ctest", "apt-get install cmake")
    src = tmp_path_factory.mktemp("ctest")
    (src / "CMakeLists.txt").write_text(textwrap.dedent("""
        cmake_minimum_required(VERSION 3.16)
        project(selection NONE)
        enable_testing()
        add_test(NAME unit_alpha COMMAND true)
        add_test(NAME unit_beta COMMAND true)
    """))
    subprocess.run([cmake, "-S", str(src), "-B", str(src / "build")], check=True, capture_output=True)
    return src / "build"


def test_ctest_selection_matching_nothing_is_no_decision(tmp_path: Path, ctest_build: Path) -> None:
    code, item = run(tmp_path, f"""
        gate: empty-selection
        driver: {{type: command, run: [ctest, --test-dir, {ctest_build}, -R, no_such_test], format: ctest}}
    """)
    assert code == 3 and item["verdict"] == "NO_DECISION"


def test_ctest_selection_is_enumerated_and_green(tmp_path: Path, ctest_build: Path) -> None:
    code, item = run(tmp_path, f"""
        gate: units
        driver: {{type: command, run: [ctest, --test-dir, {ctest_build}, -R, unit_], format: ctest}}
        assert: {{cases: {{equals: 2}}}}
    """)
    assert code == 0 and item["verdict"] == "GREEN" and item["counts"]["cases"] == 2
