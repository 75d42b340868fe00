"""A RED's `failures` list tells the truth (review of issue 35): it names only cases the framework
reported failed, never a line a passing test printed that looks like a failure report, and a
place it gives lies inside the project (relative to its root), never in the standard library or a
file outside the tree. Real unittest and GoogleTest output, through the real `gates` CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.gates.conftest import git
from tests.gates.test_failures_explained import gates

UNITTEST_MODULE = '''import json
import unittest


class T(unittest.TestCase):
    def test_a_passes_but_prints(self):
        print("FAIL: test_fake (test_t.T.test_fake)")
        print("-" * 70)
        print("AssertionError: this test passed")
        print("=" * 70)

    def test_b_parses(self):
        json.loads("not json")

    def test_c_adds(self):
        self.assertEqual(1 + 1, 3, "sum")
'''


def commit(root: Path) -> Path:
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        git(root, *args)
    return root


@pytest.fixture(scope="module")
def unittest_red(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("ut") / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "test_t.py").write_text(UNITTEST_MODULE)
    (root / "gates" / "ut.yaml").write_text(
        "gate: ut\ndriver: {type: command, run: [python3, -m, unittest, -v, test_t], format: unittest}\n")
    proc = gates(commit(root), "run", "-q", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (item,) = json.loads(proc.stdout)["items"]
    return item


def test_a_failure_report_a_passing_test_printed_is_not_listed(unittest_red):
    ids = [f["id"] for f in unittest_red["failures"]]
    assert ids == ["test_t.T.test_b_parses", "test_t.T.test_c_adds"], unittest_red["failures"]
    assert unittest_red["more_failures"] == 0


def test_an_exception_raised_in_the_standard_library_is_placed_at_the_tests_own_line(unittest_red):
    parses = next(f for f in unittest_red["failures"] if f["id"] == "test_t.T.test_b_parses")
    assert parses["message"].startswith("json.decoder.JSONDecodeError: Expecting value"), parses
    assert (parses["file"], parses["line"]) == ("test_t.py", 13), parses
    adds = next(f for f in unittest_red["failures"] if f["id"] == "test_t.T.test_c_adds")
    assert (adds["file"], adds["line"], adds["message"]) == ("test_t.py", 16, "AssertionError: 2 != 3 : sum")


GTEST_PROGRAM = r'''#include <gtest/gtest.h>
#include <cstdio>

TEST(Math, PrintsLikeAFailure) {
  std::printf("[  FAILED  ] Math.Imposter (0 ms)\n");
  std::printf("[  FAILED  ] Math.PrintsLikeAFailure (0 ms)\n");
  EXPECT_EQ(2, 1 + 1);
}

TEST(Math, Adds) {
  EXPECT_EQ(3, 1 + 1) << "sum";
}
'''


@pytest.fixture(scope="module")
def gtest_red(tmp_path_factory: pytest.TempPathFactory) -> dict:
    compiler = shutil.which("g++")
    if compiler is None or not Path("/usr/include/gtest/gtest.h").exists():
        pytest.fail("g++ and GoogleTest (libgtest-dev) are required: run .ci/setup")
    root = tmp_path_factory.mktemp("gt") / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "t.cc").write_text(GTEST_PROGRAM)
    subprocess.run([compiler, "-o", str(root / "t"), str(root / "t.cc"), "-lgtest", "-lgtest_main", "-pthread"],
                   check=True, capture_output=True, timeout=300)
    (root / "gates" / "gt.yaml").write_text("gate: gt\ndriver: {type: command, run: [./t], format: gtest}\n")
    proc = gates(commit(root), "run", "-q", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (item,) = json.loads(proc.stdout)["items"]
    return item


def test_a_gtest_failed_line_a_passing_test_printed_names_no_case(gtest_red):
    assert [f["id"] for f in gtest_red["failures"]] == ["Math.Adds"], gtest_red["failures"]
    assert gtest_red["more_failures"] == 0 and gtest_red["counts"]["failed"] == 1, gtest_red
    (adds,) = gtest_red["failures"]
    assert (adds["file"], adds["line"]) == ("t.cc", 11) and "sum" in adds["message"], adds


def test_junit_of_a_run_whose_output_holds_colour_codes_and_control_bytes_is_well_formed_xml(tmp_path: Path):
    """pytest --color=yes, GoogleTest's colours, a bell: bytes XML 1.0 forbids must not make the
    JUnit file unreadable (a CI that cannot parse it shows no failure at all)."""
    import xml.etree.ElementTree as ET

    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "t.sh").write_text("printf 'not ok 1 - adds \\033[31mred\\033[0m\\n#   got \\001\\007 bytes\\n1..1\\n'\n"
                               "printf '\\033[1m\\013 colour at the end\\033[0m\\n' >&2\nexit 1\n")
    (root / "gates" / "tap.yaml").write_text("gate: tap\ndriver: {type: command, run: [sh, t.sh], format: tap}\n")
    junit = tmp_path / "out" / "junit.xml"
    proc = gates(commit(root), "run", "-q", "--junit", str(junit))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    case = ET.parse(junit).getroot().find("testsuite/testcase")        # parses: no forbidden byte left
    assert case is not None and case.find("failure") is not None
    assert "1 - adds" in (case.find("failure").get("message") or "")
    out = case.find("system-out")
    assert out is not None and "colour at the end" in (out.text or "")


def test_an_exception_message_with_html_cannot_hide_or_restyle_the_step_summary(tmp_path: Path):
    """The Markdown step summary is rendered as HTML by GitHub: a reason quoting a test's own text
    (here an import error's message) is text, never markup (`<!--` would hide what follows)."""
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "gates").mkdir()
    (root / "tests" / "test_x.py").write_text('raise ImportError("<!-- <details><summary>ok</summary> & more")\n')
    (root / "gates" / "g.yaml").write_text("gate: g\ndriver: {type: pytest, run: tests}\n")
    summary = tmp_path / "summary.md"
    proc = gates(commit(root), "run", "-q", env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(root),
                                                "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = summary.read_text()
    assert "ImportError: &lt;!-- &lt;details&gt;&lt;summary&gt;ok&lt;/summary&gt; &amp; more" in text, text
    assert "<!--" not in text and "<details>" not in text
