"""The JUnit XML parser against reports written by real pytest, GoogleTest, Catch2, doctest and CTest."""

from __future__ import annotations

import re
import textwrap

from redfirst.gates.parsers import get

PARSER = get("junit")

MIXED = textwrap.dedent(
    """
    import pytest

    def test_pass(): assert True
    def test_fails(): assert False

    @pytest.mark.skip(reason="not on this box")
    def test_skipped(): pass

    @pytest.mark.xfail(reason="known bug")
    def test_xfail(): assert False

    @pytest.mark.xfail(reason="fixed since")
    def test_xpass(): assert True

    @pytest.fixture
    def broken(): raise RuntimeError("setup breaks")

    def test_setup_error(broken): pass
    """
)


def pytest_report(tmp_path, real_pytest, source: str) -> str:
    (tmp_path / "test_gen.py").write_text(source)
    report = tmp_path / "report.xml"
    real_pytest(tmp_path, f"--junitxml={report}")
    return report.read_text()


def test_pytest_report_counts_from_testcases(tmp_path, real_pytest):
    counts = PARSER.parse("", "", pytest_report(tmp_path, real_pytest, MIXED))
    # passed: pass + xpass; failed: fails + setup error; skipped: skip + xfail
    assert (counts.passed, counts.failed, counts.skipped) == (2, 2, 2) and counts.summary_seen
    assert "test_gen.test_fails" in counts.notes


def test_aggregate_attributes_are_not_trusted(tmp_path, real_pytest):
    xml = pytest_report(tmp_path, real_pytest, MIXED)
    forged = re.sub(r'(errors|failures|skipped)="\d+"', r'\1="0"', xml).replace('tests="6"', 'tests="600"')
    assert forged != xml
    assert PARSER.parse("", "", forged) == PARSER.parse("", "", xml)


def test_pytest_report_with_nothing_collected_has_no_cases(tmp_path, real_pytest):
    report = tmp_path / "report.xml"
    real_pytest(tmp_path, f"--junitxml={report}")
    counts = PARSER.parse("", "", report.read_text())
    assert counts.executed == 0 and counts.skipped == 0 and counts.summary_seen


def test_gtest_report_disabled_and_skipped_are_skipped(gtest_bin, run_program, tmp_path):
    report = tmp_path / "gtest.xml"
    run_program([gtest_bin, "--gtest_filter=-Crash.*", f"--gtest_output=xml:{report}"])
    counts = PARSER.parse("", "", report.read_text())
    # the DISABLED_ case is written with status="notrun" and no child element
    assert (counts.passed, counts.failed, counts.skipped) == (2, 1, 3) and counts.summary_seen


def test_ctest_report_disabled_test_without_child_is_skipped(ctest_build, run_program, tmp_path):
    report = tmp_path / "ctest.xml"
    run_program(["ctest", "--output-junit", str(report)], cwd=ctest_build)
    text = report.read_text()
    counts = PARSER.parse("", "", text)
    assert 'status="disabled"' in text
    # CTest's JUnit writes the not-runnable test as skipped, unlike its console (failed)
    assert (counts.passed, counts.failed, counts.skipped) == (2, 2, 3) and counts.summary_seen


def test_catch2_and_doctest_reports(catch2_bin, doctest_bin, run_program):
    catch2 = PARSER.parse("", "", run_program([catch2_bin, "-r", "junit", "[pass],[fail]"]).stdout)
    doctest = PARSER.parse("", "", run_program([doctest_bin, "-r=junit", "-tce=crash*"]).stdout)
    assert (catch2.passed, catch2.failed) == (2, 1) and catch2.summary_seen
    assert (doctest.passed, doctest.failed) == (3, 1) and doctest.summary_seen


def test_expected_failure_with_a_failure_child_is_failed(catch2_bin, run_program):
    # Catch2 writes a [!shouldfail] case with both <skipped> and <failure>: failure wins
    counts = PARSER.parse("", "", run_program([catch2_bin, "-r", "junit", "[xfail]"]).stdout)
    assert (counts.passed, counts.failed, counts.skipped) == (0, 1, 0)


def test_malformed_or_missing_xml_is_no_summary(tmp_path, real_pytest):
    xml = pytest_report(tmp_path, real_pytest, MIXED)
    for broken in (None, "", "   ", xml[: len(xml) // 2], "<html><body>502</body></html>", "\x00\xff<"):
        counts = PARSER.parse("", "", broken)
        assert not counts.summary_seen and counts.executed == 0


def test_streams_are_not_read():
    assert not PARSER.parse("3 passed, 0 failed", "<testsuite/>", None).summary_seen


def test_recorded_generic_nested_suites_with_namespace():
    # Recorded shape (generic JUnit, e.g. Maven Surefire): nested suites, a default namespace
    xml = """<?xml version="1.0"?>
    <testsuites xmlns="urn:example"><testsuite name="outer"><testsuite name="inner">
      <testcase name="a" time="0.5"/><testcase name="b"><error message="boom"/></testcase>
      <testcase name="c"><skipped/></testcase>
    </testsuite></testsuite></testsuites>"""
    counts = PARSER.parse("", "", xml)
    assert (counts.passed, counts.failed, counts.skipped) == (1, 1, 1) and counts.summary_seen


# --- a skip that reads as a pass is not executed (issue #11), through the real `gates run` ----

def test_gtest_report_of_tests_an_environment_skip_never_started_is_no_decision(
        gtest_bin, run_program, gates_run, tmp_path):
    # GoogleTest 1.12 writes them `status="run" result="completed"`, with its zero start time
    report = tmp_path / "never.xml"
    run_program([gtest_bin, "--gtest_filter=Pass.*", f"--gtest_output=xml:{report}"],
                env={"SKIP_IN_ENVIRONMENT": "1"})
    text = report.read_text()
    assert 'result="completed"' in text and 'timestamp="1970-01-01T00:00:00' in text
    counts = PARSER.parse("", "", text)
    assert (counts.passed, counts.skipped) == (0, 3)  # Pass.DISABLED_NeverRuns is the third
    item = gates_run(tmp_path, f"""
        gate: g
        driver:
          type: command
          run: ["{gtest_bin}", "--gtest_filter=Pass.*", "--gtest_output=xml:report.xml"]
          format: junit
          junit: report.xml
          env: {{SKIP_IN_ENVIRONMENT: "1"}}
        assert: {{cases: {{min: 1}}}}
    """)
    assert item["verdict"] == "NO_DECISION" and "0 cases executed" in item["reason"], item
    ran = gates_run(tmp_path / "ran", f"""
        gate: g
        driver:
          type: command
          run: ["{gtest_bin}", "--gtest_filter=Pass.*", "--gtest_output=xml:report.xml"]
          format: junit
          junit: report.xml
        assert: {{cases: {{equals: 2}}}}
    """)
    assert ran["verdict"] == "GREEN", ran
