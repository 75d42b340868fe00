"""Grading step 4: a failed assertion is RED even where the framework calls the run a
success. doctest's `may_fail` counts a case with a failing CHECK as passed and exits 0;
only the assertion count shows the failure."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

GATES = [sys.executable, "-P", "-m", "gates.cli"]

DOCTEST_SUITE = textwrap.dedent("""
    #define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
    #include <doctest/doctest.h>

    TEST_CASE("allowed to fail" * doctest::may_fail()) { CHECK(1 + 1 == 3); }
    TEST_CASE("holds") { CHECK(2 * 2 == 4); }
""")

def build(tmp_path: Path, need_tool: Any, header: str, source: str) -> Path:
    cxx = need_tool("g++", "apt-get install g++")
    if not Path(header).is_file():
        need_tool(f"{Path(header).name}-missing", "apt-get install doctest-dev")
    (tmp_path / "main.cpp").write_text(source)
    subprocess.run([cxx, "-O0", "-std=c++17", "main.cpp", "-o", "suite"], cwd=tmp_path, check=True)
    return tmp_path / "suite"


def test_a_failed_assertion_in_a_case_allowed_to_fail_is_red(tmp_path: Path, need_tool: Any) -> None:
    suite = build(tmp_path, need_tool, "/usr/include/doctest/doctest.h", DOCTEST_SUITE)
    framework = subprocess.run([suite], capture_output=True, text=True)
    # The framework's own verdict: success, every case passed.
    assert framework.returncode == 0, framework.stdout
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(f"gate: lenient\ndriver: {{type: command, run: [{suite}], format: doctest}}\n")
    proc = subprocess.run([*GATES, "run", "--json", "-q", "--root", str(root)], capture_output=True, text=True,
                          timeout=120)
    (item,) = json.loads(proc.stdout)["items"]
    assert proc.returncode == 1 and item["verdict"] == "RED", item
    assert item["cause"] == "assertion" and "1 assertions failed" in item["reason"], item
