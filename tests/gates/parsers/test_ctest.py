"""The CTest parser and `enumerated` against real ctest runs of programs/ctest_project."""

from __future__ import annotations

import pytest

from redfirst.gates.parsers import get
from redfirst.gates.parsers.ctest import enumerated

PARSER = get("ctest")


def test_full_pass_counts_per_test_lines(ctest_build, run_program):
    ran = run_program(["ctest", "-R", "^pass"], cwd=ctest_build)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0 and "100% tests passed, 0 tests failed out of 2" in ran.stdout
    assert (counts.passed, counts.failed, counts.skipped) == (2, 0, 0) and counts.summary_seen
    assert counts.assertions is None and not PARSER.reports_assertions


def test_segfault_failure_and_not_run_are_failed_and_skips_are_skipped(ctest_build, run_program):
    ran = run_program(["ctest"], cwd=ctest_build)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert "***Exception: SegFault" in ran.stdout and "***Not Run" in ran.stdout
    assert (counts.passed, counts.failed, counts.skipped) == (2, 3, 2) and counts.summary_seen
    assert {"fail_exit", "crash_segv", "notrun_missing"} <= set(counts.notes)


def test_skipped_tests_are_not_passes_though_ctest_says_100_percent(ctest_build, run_program):
    ran = run_program(["ctest", "-R", "^skip"], cwd=ctest_build)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert "100% tests passed, 0 tests failed out of 1" in ran.stdout
    assert counts.executed == 0 and counts.skipped == 2 and counts.summary_seen


@pytest.mark.parametrize("policy", [[], ["--no-tests=error"]])
def test_selection_matching_nothing_says_nothing_ran(ctest_build, run_program, policy):
    ran = run_program(["ctest", "-R", "nomatch", *policy], cwd=ctest_build)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == (8 if policy else 0)
    assert "No tests were found!!!" in ran.stderr  # CTest writes it to stderr
    assert counts.nothing_ran and counts.executed == 0 and counts.summary_seen


def test_parallel_run_with_test_output_counts_the_same(ctest_build, run_program):
    ran = run_program(["ctest", "-j2", "--output-on-failure", "-R", "pass|fail"], cwd=ctest_build)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert (counts.passed, counts.failed) == (2, 1) and counts.summary_seen


@pytest.mark.parametrize(
    ("selection", "expected"),
    [(["-R", "^pass"], 2), (["-R", "^skip"], 2), (["-R", "nomatch"], 0), ([], 7)],
)
def test_enumerated_reads_total_tests_of_ctest_n(ctest_build, run_program, selection, expected):
    ran = run_program(["ctest", "-N", *selection], cwd=ctest_build)
    assert enumerated(ran.stdout) == expected


def test_enumerated_is_none_without_a_total(ctest_build, run_program):
    assert enumerated(run_program(["ctest"], cwd=ctest_build).stdout) is None
    assert enumerated("") is None and enumerated("\x00\xff garbage Total Tests: x") is None


def test_run_cut_before_its_summary_is_not_complete(ctest_build, run_program):
    out = run_program(["ctest", "-R", "^pass"], cwd=ctest_build).stdout
    cut = out[: out.index("100% tests passed")]
    counts = PARSER.parse(cut, "")
    assert counts.passed == 2 and not counts.summary_seen


def test_summary_counting_more_tests_than_lines_counts_the_rest_failed(ctest_build, run_program):
    out = run_program(["ctest", "-R", "^pass"], cwd=ctest_build).stdout
    # drop one per-test line: the summary still says 2, one has no result line
    first_line = next(line for line in out.splitlines() if "Test #1:" in line)
    counts = PARSER.parse(out.replace(first_line, ""), "")
    assert (counts.passed, counts.failed) == (1, 1)


def test_crlf_output_parses_the_same(ctest_build, run_program):
    ran = run_program(["ctest"], cwd=ctest_build)
    assert PARSER.parse(ran.stdout.replace("\n", "\r\n"), "") == PARSER.parse(ran.stdout, ran.stderr)


def test_no_test_configuration_is_no_summary(tmp_path, run_program):
    ran = run_program(["ctest"], cwd=tmp_path)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert "No test configuration file found!" in ran.stdout + ran.stderr
    assert not counts.summary_seen and not counts.nothing_ran


def test_selection_matching_nothing_with_no_tests_ignore_prints_no_summary(ctest_build, run_program):
    # --no-tests=ignore prints only the project line: nothing says what ran
    ran = run_program(["ctest", "-R", "nomatch", "--no-tests=ignore"], cwd=ctest_build)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0 and not counts.summary_seen and counts.executed == 0


def test_summary_without_any_per_test_line_is_doubted(ctest_build, run_program):
    # Derived from real output, per-test lines removed: CTest's summary alone counts a skip as passed
    out = run_program(["ctest", "-R", "pass|skip"], cwd=ctest_build).stdout
    assert "100% tests passed, 0 tests failed out of 3" in out
    kept = "\n".join(line for line in out.splitlines() if " Test #" not in line)
    counts = PARSER.parse(kept, "")
    assert counts.per_case is None and counts.doubt and "no per-test line" in counts.doubt
    whole = PARSER.parse(out, "")
    assert (whole.per_case, whole.passed, whole.skipped, whole.doubt) == (2, 2, 2, None)


def test_each_failed_test_is_named_with_its_status(ctest_build, run_program):
    ran = run_program(["ctest", "--output-on-failure", "-R", "fail_exit|crash_segv|notrun"], cwd=ctest_build)
    failures = PARSER.parse(ran.stdout, ran.stderr).failures
    assert [(f.id, f.message) for f in failures] == [
        ("fail_exit", "Failed"), ("crash_segv", "Exception: SegFault"), ("notrun_missing", "Not Run")]
